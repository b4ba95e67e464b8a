"""Page 03 — scenario TCO: buy, lease or rent (on-demand, spot, reserved) or a hybrid, over time."""

from __future__ import annotations

import base64
import html

import ipywidgets as w

from gpucost import tco
from gpucost.errors import GpucostError
from gpucost.i18n import localize
from gpucost.specs import SPECS, Spec
from gpucost.ui.chart import TEMPLATE
from gpucost.ui.shell import Page
from gpucost.units import HOURS_PER_YEAR

COLORS = {"buy-new": "#1f77b4", "buy-used": "#17becf", "lease": "#9467bd", "on-demand": "#d62728",
          "spot": "#ff7f0e", "reserved-1y": "#8c564b", "reserved-3y": "#e377c2", "hybrid": "#2ca02c"}
#: widget → (scenario key, parameter of Inputs.params it shows, money?)
_STYLE = {"description_width": "initial"}


#: the steady load typed as a share of the owned cards' hours [%]
_SHARE_SPEC = Spec("float", None, ge=0, le=100, unit="%", optional=True)
#: the largest scenario file a visitor may upload (the bundled ones are 2–3 KB)
MAX_SCENARIO_BYTES = 256 * 1024


def _short(title: str) -> str:
    """A preset's name for the dropdown: its title up to the dash (the whole title is shown under it)."""
    return title.split(" — ")[0].split("——")[0].strip()


def _key(oid: str) -> str:
    return oid.replace("-", "_")


class ScenarioTcoPage(Page):
    page_id = "tco"

    def __init__(self, scenario: str = "your-need", months: int = 0, utilization: float = -1.0,
                 electricity_per_kwh: float = -1.0, mc_draws: int = 2000, gpu: str = "", cloud_gpu: str = "",
                 count: int = 0, gpu_hours_per_year: float = -1.0, lang: str = "en", currency: str | None = None,
                 catalog=None):
        self._init = dict(scenario=scenario, months=months, utilization=utilization,
                          electricity_per_kwh=electricity_per_kwh, mc_draws=mc_draws, gpu=gpu, cloud_gpu=cloud_gpu,
                          count=count, gpu_hours_per_year=gpu_hours_per_year)
        self.scenario: tco.Scenario | None = None
        self.inputs_resolved: tco.Inputs | None = None
        self.result: tco.TcoResult | None = None
        self.tornado_result: tco.TornadoResult | None = None
        self.mc_result: tco.MonteCarloResult | None = None
        self.upload_error: str | None = None
        self.measured: str | None = None  # "probe" / "demo": the load came from page 04's link
        self._populated: dict[str, object] = {}
        self._busy = False
        self._mc_running = False
        self._last_resolved: tuple | None = None
        self._uploaded: tco.Scenario | None = None
        super().__init__(lang=lang, currency=currency, catalog=catalog)

    # -- build -----------------------------------------------------------------------------------
    def _spec(self, key: str, **changes) -> Spec:
        return tco.FIELDS[key].spec.with_default(None, optional=True, **changes)

    def _text(self, name: str, spec: Spec, label_key: str, help_key: str | None = None) -> w.VBox:
        return self.spec_field(name, spec, None, label_key, help_key, css=f"gc-tco-{name.replace('_', '-')}",
                               on_change=lambda _: None if self._busy else self.safe_refresh())

    def build(self) -> None:
        self._scenarios = tco.list_scenarios()
        names = [s["name"] for s in self._scenarios]
        first = self._init["scenario"] if self._init["scenario"] in names else (names[0] if names else "")
        self.picker = w.Dropdown(options=names, value=first or None, layout=w.Layout(width="95%"))
        self.picker.add_class("gc-tco-scenario")
        self.about = w.HTML()
        self.about.add_class("gc-help")
        gpus = self.catalog.gpus
        self._gpu_options = list(zip(gpus["name"], gpus["id"], strict=True))
        self.owned_gpu = w.Dropdown(options=self._gpu_options, layout=w.Layout(width="95%"))
        self.owned_gpu.add_class("gc-tco-owned-gpu")
        self.cloud_gpu = w.Dropdown(options=self._gpu_options, layout=w.Layout(width="95%"))
        self.cloud_gpu.add_class("gc-tco-cloud-gpu")
        self.load_mode = w.RadioButtons(options=[("hours", "hours"), ("share", "share")], value="hours",
                                        layout=w.Layout(width="95%"))
        self.load_mode.add_class("gc-tco-load-mode")
        self.months = w.IntSlider(value=36, min=6, max=120, step=6, continuous_update=False,
                                  layout=w.Layout(width="95%"))
        self.months.add_class("gc-tco-months")
        self.growth = w.FloatSlider(value=0.0, min=-0.5, max=2, step=0.05, continuous_update=False,
                                    readout_format=".0%", layout=w.Layout(width="95%"))
        self.growth.add_class("gc-tco-growth")
        self.site = w.Dropdown(options=list(tco.SITES), layout=w.Layout(width="95%"))
        self.site.add_class("gc-tco-site")
        self.resale = w.FloatSlider(value=0.8, min=0.3, max=1.0, step=0.01, continuous_update=False,
                                    readout_format=".2f", layout=w.Layout(width="95%"))
        self.resale.add_class("gc-tco-resale")
        self.bucket = w.Dropdown(options=list(tco.SPOT_BUCKETS), layout=w.Layout(width="95%"))
        self.bucket.add_class("gc-tco-bucket")
        self.headroom = w.FloatSlider(value=0.3, min=0, max=1, step=0.05, continuous_update=False,
                                      readout_format=".0%", layout=w.Layout(width="95%"))
        self.headroom.add_class("gc-tco-headroom")
        self.progress = w.IntProgress(value=0, min=0, max=100, layout=w.Layout(width="95%"))
        self.progress.add_class("gc-tco-progress")
        self.jobs_box = w.VBox(layout=w.Layout(width="100%"))
        self.jobs_box.add_class("gc-tco-jobs")
        self._job_checks: list[w.Checkbox] = []
        need = [
            self.field("tco_scenario", self.picker), self.about,
            self.field("tco_owned_gpu", self.owned_gpu), self.field("tco_cloud_gpu", self.cloud_gpu),
            self._text("count", SPECS["gpus"].with_default(None), "tco_count"),
            self.field("tco_load_mode", self.load_mode),
            self._text("load", self._spec("demand.gpu_hours_per_year"), "tco_load_hours", "tco_load_help"),
            self.field("tco_growth", self.growth), self.field("tco_months", self.months),
            self.field("tco_site", self.site),
            self._text("burst_hours", self._spec("demand.bursts.gpu_hours"), "tco_burst_hours"),
            self._text("burst_every", self._spec("demand.bursts.every_months"), "tco_burst_every"),
            self.field("tco_jobs", self.jobs_box)]
        self.load_label = self.fields["load"].box.children[0]
        more = [
            self._text("kwh", self._spec("owned.electricity_per_kwh"), "tco_kwh"),
            self._text("pue", self._spec("owned.pue"), "tco_pue"),
            self._text("host", self._spec("owned.host_cost_per_gpu"), "tco_host"),
            self.field("tco_resale", self.resale, "tco_resale_help"),
            self._text("rate", Spec("float", None, ge=0, le=100, unit="%", optional=True), "tco_rate"),
            self.field("tco_bucket", self.bucket, "tco_bucket_help"),
            self._text("ckpt", self._spec("spot.checkpoint_minutes"), "tco_ckpt"),
            self._text("restart", self._spec("spot.restart_minutes"), "tco_restart"),
            self.field("tco_headroom", self.headroom, "tco_headroom_help"),
            self._text("mc_draws", SPECS["monte_carlo_draws"].with_default(None), "tco_mc_draws"), self.progress]
        self.more = w.Accordion(children=[w.VBox(more, layout=w.Layout(width="100%"))], selected_index=None,
                                layout=w.Layout(width="100%"))
        self.more.add_class("gc-tco-more")
        self.download = w.HTML()
        self.download.add_class("gc-tco-download")
        self.scenario_upload = w.FileUpload(accept=".yaml,.yml", multiple=False, layout=w.Layout(width="auto"))
        self.scenario_upload.add_class("gc-tco-upload")
        self.label(self.scenario_upload, "tco_upload_button")
        self.scenario_upload_msg = w.HTML()
        self.scenario_upload_msg.add_class("gc-tco-upload-msg")
        self.scenario_upload.observe(self._on_scenario_upload, names="value")
        files = [self.label(w.HTML(), "tco_file_title", "value"), self.download, self.scenario_upload,
                 self.help_line("tco_file_help"), self.scenario_upload_msg]
        self.inputs.children = [self.label(w.HTML(), "tco_need_title", "value"), *need, self.more, *files,
                                *self.shell_inputs()]
        self.count, self.load = self.fields["count"].widget, self.fields["load"].widget
        self.kwh, self.pue, self.host = (self.fields[k].widget for k in ("kwh", "pue", "host"))
        self.rate, self.ckpt, self.restart = (self.fields[k].widget for k in ("rate", "ckpt", "restart"))
        self.mc_draws = self.fields["mc_draws"].widget
        self.fields["mc_draws"].widget.value = str(int(self._init["mc_draws"]))

        self.summary = w.HTML()
        self.summary.add_class("gc-summary")
        self.fig_box = self.chart("fig", "gc-tco-chart", height=420, margin=dict(l=70, r=20, t=40, b=50),
                                  template=TEMPLATE, legend=dict(orientation="h", y=-0.2))
        self.table = w.HTML()
        self.table.add_class("gc-table")
        self.table.add_class("gc-tco-table")
        self.breakeven = w.HTML()
        self.breakeven.add_class("gc-table")
        self.tornado_option = w.Dropdown(layout=w.Layout(width="320px", max_width="95%"))
        self.tornado_option.add_class("gc-tco-tornado-option")
        tornado_box = self.chart("tornado_fig", "gc-tco-tornado-chart", height=340,
                                 margin=dict(l=170, r=20, t=40, b=40), template=TEMPLATE, barmode="overlay",
                                 showlegend=True, legend=dict(orientation="h", y=-0.15))
        mc_box = self.chart("mc_fig", "gc-tco-mc-chart", height=340, margin=dict(l=60, r=20, t=40, b=50),
                            template=TEMPLATE, barmode="overlay", legend=dict(orientation="h", y=-0.25))
        self.mc_table = w.HTML()
        self.mc_table.add_class("gc-table")
        self.details = w.HTML()
        self.results.children = [self.summary, self.fig_box, self.table, self.breakeven,
                                 self.field("tco_tornado_option", self.tornado_option), tornado_box, mc_box,
                                 self.mc_table, self.details]

        self._load_scenario(first, initial=True)
        self.picker.observe(self._picked, names="value")
        self.load_mode.observe(self._load_mode_changed, names="value")
        for wid in (self.owned_gpu, self.cloud_gpu, self.months, self.growth, self.site, self.resale,
                    self.bucket, self.headroom):
            wid.observe(lambda _: None if self._busy else self.safe_refresh(), names="value")
        self.tornado_option.observe(lambda _: None if self._busy else self._draw_tornado(), names="value")

    # -- scenario → widgets ------------------------------------------------------------------------
    def _picked(self, change) -> None:
        if self._busy or change["new"] in ("", None):
            return
        with self.refresh_once():  # the scenario sets many inputs: one computation for all of them
            try:
                self._load_scenario(change["new"])
                if self._uploaded is not None:
                    self._uploaded = None
                    self.relabel()
            except GpucostError as exc:
                self.error = str(exc)
                self.show_validity()
                return
            self.safe_refresh()

    def _set_text(self, name: str, value, fmt: str = "{:.6g}") -> None:
        f = self.fields[name]
        f.widget.value = "" if value is None or value != value else fmt.format(value)
        f.last = None if value is None or value != value else float(fmt.format(value))
        f.message.value = ""
        f.box.remove_class("gc-field-bad")

    def _load_scenario(self, name: str, initial: bool = False, scenario: tco.Scenario | None = None) -> None:
        if not name and scenario is None:
            raise GpucostError(self.t("tco_no_scenarios"))
        sc = scenario or tco.load_scenario(name)
        inp = self._resolve(sc)
        p = inp.params
        self.scenario = sc
        self._busy = True
        try:
            i = self._init if initial else {}
            months = int(i.get("months") or 0) or inp.horizon_months
            self.months.value = max(self.months.min, min(self.months.max, months))
            self.owned_gpu.value = sc.values["owned.gpu"] if sc.values["owned.gpu"] in dict(
                (v, k) for k, v in self._gpu_options) else self._gpu_options[0][1]
            cloud = sc.values.get("cloud.gpu") or sc.values["owned.gpu"]
            self.cloud_gpu.value = cloud if cloud in dict((v, k) for k, v in self._gpu_options) else self.owned_gpu.value
            self.site.value = sc.values.get("owned.site") or "office"
            self._set_text("count", int(p.owned.count), "{:.0f}")
            self._show_load(sc, p)
            self.growth.value = float(p.demand.growth_per_year)
            self._set_text("burst_hours", float(sc.values.get("demand.bursts.gpu_hours") or 0.0))
            self._set_text("burst_every", float(sc.values.get("demand.bursts.every_months") or 1), "{:.0f}")
            self._set_text("kwh", p.owned.electricity_per_kwh, "{:.4g}")
            self._set_text("pue", p.owned.pue, "{:.3g}")
            self._set_text("host", p.owned.host_cost, "{:.6g}")
            self.resale.value = min(1.0, max(0.3, float(p.owned.resale_retention_per_year)))
            self._set_text("rate", 100 * p.lease.annual_rate, "{:.3g}")
            self.bucket.value = sc.values["spot.interruption_bucket"] or "10-15%"
            self._set_text("ckpt", 60 * p.spot.checkpoint_hours, "{:.3g}")
            self._set_text("restart", 60 * p.spot.restart_hours, "{:.3g}")
            self.headroom.value = float(p.hybrid.headroom_fraction)
            self._job_checks = [w.Checkbox(value=True, indent=False, description=j.name,
                                           layout=w.Layout(width="95%")) for j in sc.jobs]
            for cb in self._job_checks:
                cb.observe(lambda _: None if self._busy else self.safe_refresh(), names="value")
            self.jobs_box.children = self._job_checks or [self.label(w.HTML(), "tco_no_jobs", "value")]
            if not self._job_checks:
                self.jobs_box.children[0].value = self.t("tco_no_jobs")
        finally:
            self._busy = False
        self._populated = self._widget_values()
        self._money_currency = self.state.currency
        if initial:
            self._apply_init()
        self._relabel_about()

    def _show_load(self, sc: tco.Scenario, p) -> None:
        """The steady load as the scenario gives it: GPU-hours a year, or a share of the owned cards."""
        hours = sc.values.get("demand.gpu_hours_per_year")
        monthly = sc.values.get("demand.gpu_hours_per_month")
        if hours is None and monthly is not None:
            hours = float(monthly) * 12
        if hours is not None:
            self.load_mode.value = "hours"
            self.fields["load"].spec = self._spec("demand.gpu_hours_per_year")
            self._set_text("load", float(hours), "{:.6g}")
        else:
            self.load_mode.value = "share"
            self.fields["load"].spec = _SHARE_SPEC
            self._set_text("load", 100 * float(p.demand.base_utilization), "{:.4g}")
        self._label_load()

    def _label_load(self) -> None:
        self.load_label.value = html.escape(self.t(f"tco_load_{self.load_mode.value}"))

    def _apply_init(self) -> None:
        """Page parameters (papermill, the URL) count as the user's edits."""
        i = self._init
        self._busy = True
        try:
            if i["utilization"] is not None and float(i["utilization"]) >= 0:
                self._set_share(float(i["utilization"]))
            if i["gpu_hours_per_year"] is not None and float(i["gpu_hours_per_year"]) >= 0:
                self.load_mode.value = "hours"
                self.fields["load"].spec = self._spec("demand.gpu_hours_per_year")
                self._set_text("load", float(i["gpu_hours_per_year"]))
                self._label_load()
            if i["electricity_per_kwh"] is not None and float(i["electricity_per_kwh"]) >= 0:
                self._set_text("kwh", float(i["electricity_per_kwh"]), "{:.4g}")
            self._set_gpu(i.get("gpu"), i.get("cloud_gpu"))
            if i.get("count"):
                self._set_text("count", int(i["count"]), "{:.0f}")
        finally:
            self._busy = False

    def _set_share(self, utilization: float) -> None:
        self.load_mode.value = "share"
        self.fields["load"].spec = _SHARE_SPEC
        self._set_text("load", 100 * utilization, "{:.4g}")
        self._label_load()

    def _set_gpu(self, gpu: str | None, cloud: str | None = None) -> None:
        for name, dd in ((gpu, self.owned_gpu), (cloud or gpu, self.cloud_gpu)):
            if not name:
                continue
            try:
                dd.value = self.catalog.gpu_id(str(name))
            except GpucostError:
                continue

    def apply_params(self, params: dict) -> None:
        """URL parameters: ``scenario``, ``gpu``, ``cloud_gpu``, ``count``, ``utilization`` (0–1, e.g. from
        page 04's link, with ``measured=probe|demo``) or ``gpu_hours_per_year``."""
        if params.get("scenario") in self.picker.options:
            self.picker.value = params["scenario"]
        self._busy = True
        try:
            self._set_gpu(params.get("gpu"), params.get("cloud_gpu"))
            for key, setter in (("count", lambda v: self._set_text("count", int(v), "{:.0f}")),
                                ("utilization", lambda v: self._set_share(min(1.0, max(0.0, float(v))))),
                                ("gpu_hours_per_year", lambda v: (setattr(self.load_mode, "value", "hours"),
                                                                  self._load_hours(float(v))))):
                if key in params:
                    try:
                        setter(params[key])
                    except (TypeError, ValueError):
                        continue
            if params.get("measured") in ("probe", "demo"):
                self.measured = params["measured"]
        finally:
            self._busy = False
        self.safe_refresh()

    def _load_hours(self, hours: float) -> None:
        self.fields["load"].spec = self._spec("demand.gpu_hours_per_year")
        self._set_text("load", hours)
        self._label_load()

    def _load_mode_changed(self, change) -> None:
        """Switch how the load is typed, converting the value (hours a year ↔ share of the owned cards)."""
        if self._busy:
            return
        cards = self.val("count") or 1
        value = self.val("load")
        year = cards * HOURS_PER_YEAR
        self._busy = True
        try:
            if change["new"] == "share":
                self._set_share(min(1.0, (value or 0) / year))
            else:
                self._load_hours(round((value or 0) / 100 * year))
        finally:
            self._busy = False
        self.safe_refresh()

    def _relabel_about(self) -> None:
        if self.scenario is None:
            return
        lang = self.state.lang
        title = self.scenario.title.get(lang) or self.scenario.title.get("en", self.scenario.name)
        desc = self.scenario.description.get(lang) or self.scenario.description.get("en", "")
        self.about.value = f"<b>{html.escape(title)}</b><br>{html.escape(desc)}"

    # -- widgets → scenario ------------------------------------------------------------------------
    def _widget_values(self) -> dict[str, object]:
        out: dict[str, object] = {
            "horizon_months": int(self.months.value), "owned.gpu": self.owned_gpu.value,
            "cloud.gpu": self.cloud_gpu.value, "owned.site": self.site.value,
            "demand.growth_per_year": float(self.growth.value),
            "owned.resale_retention_per_year": float(self.resale.value),
            "spot.interruption_bucket": self.bucket.value, "hybrid.headroom": float(self.headroom.value),
        }
        count = self.val("count")
        if count is not None:
            out["owned.count"] = int(count)
        load = self.val("load")
        if load is not None:
            if self.load_mode.value == "hours":
                out["demand.gpu_hours_per_year"] = float(load)
            else:
                out["demand.utilization"] = round(float(load) / 100, 6)
        for key, name, scale in (("demand.bursts.gpu_hours", "burst_hours", 1), ("owned.electricity_per_kwh", "kwh", 1),
                                 ("owned.pue", "pue", 1), ("owned.host_cost_per_gpu", "host", 1),
                                 ("lease.annual_rate", "rate", 0.01), ("spot.checkpoint_minutes", "ckpt", 1),
                                 ("spot.restart_minutes", "restart", 1)):
            val = self.val(name)
            if val is not None:
                out[key] = float(val) * scale
        every = self.val("burst_every")
        if every is not None:
            out["demand.bursts.every_months"] = int(every)
        out["_currency"] = self.state.currency
        return out

    def _changes(self) -> dict[str, object]:
        now = self._widget_values()
        cur = now.pop("_currency")
        self._populated.pop("_currency", None)
        changes = {}
        for key, val in now.items():
            if key in self._populated and self._populated[key] == val:
                continue
            if key in ("owned.electricity_per_kwh", "owned.host_cost_per_gpu"):
                val = (val, cur)  # typed in the display currency
            changes[key] = val
        if "owned.host_cost_per_gpu" in changes:
            changes["owned.host"] = None
        if "spot.interruption_bucket" in changes:
            changes["spot.interruptions_per_month"] = None
        if "owned.gpu" in changes and "owned.host_cost_per_gpu" not in changes:
            changes.pop("owned.price_new", None)
        return changes

    def current_scenario(self) -> tco.Scenario:
        """The picked scenario with the page's edits applied (validated like a file)."""
        if self.scenario is None:
            raise GpucostError(self.t("tco_no_scenarios"))
        changes = self._changes()
        jobs = None
        if self._job_checks and not all(cb.value for cb in self._job_checks):
            jobs = [j for j, cb in zip(self.scenario.jobs, self._job_checks, strict=True) if cb.value]
        if "owned.gpu" in changes:  # the preset's prices and host were for its own card
            changes.update({"owned.price_new": None, "owned.price_used": None, "owned.tdp_w": None})
        if "cloud.gpu" in changes:
            changes.update({k: None for k in ("cloud.on_demand_price", "cloud.spot_price", "cloud.reserved_1y_price",
                                              "cloud.reserved_3y_price", "cloud.instance", "cloud.relative_speed")})
        return self.scenario.updated(changes, jobs=jobs) if changes or jobs is not None else self.scenario

    def _resolve(self, sc: tco.Scenario, months: int | None = None) -> tco.Inputs:
        """``tco.resolve`` in the display currency; a scenario just picked is resolved once, not again for
        its first computation."""
        last = self._last_resolved
        if last is not None and last[0] is sc and last[1] is self.catalog and last[2] == self.state.currency \
                and (months == last[3] or (last[3] is None and months == last[4].horizon_months)):
            return last[4]
        inp = tco.resolve(sc, self.catalog, currency=self.state.currency, months=months)
        self._last_resolved = (sc, self.catalog, self.state.currency, months, inp)
        return inp

    # -- scenario files, in the visitor's browser ------------------------------------------------------
    def _on_scenario_upload(self, change) -> None:
        try:
            upload = self.read_upload(change, "scenario.yaml", MAX_SCENARIO_BYTES)
            if upload is None:
                return
            name, content = upload
            text = content.decode("utf-8")
            with self.compute_budget():
                sc = tco.parse_scenario_text(text, name, default_name="uploaded")
            with self.refresh_once():
                self._load_scenario("", scenario=sc)
                self._uploaded = sc
                self.relabel()
                self.safe_refresh()
        except (GpucostError, UnicodeDecodeError) as exc:
            self.upload_error = str(exc)
            self.scenario_upload_msg.value = (f'<span class="gc-msg-error">'
                                              f'{html.escape(self.t("tco_upload_error", error=str(exc)))}</span>')
            return
        self.upload_error = None
        self.scenario_upload_msg.value = (f'<span class="gc-msg-ok">'
                                          f'{html.escape(self.t("tco_upload_ok", file=name))}</span>')

    def _show_download(self, sc: tco.Scenario) -> None:
        """A link that downloads the scenario on screen as YAML (made in the browser: nothing is written)."""
        data = base64.b64encode(sc.to_yaml().encode("utf-8")).decode("ascii")
        self.download.value = (f'<a class="gc-tco-download-link" download="{html.escape(sc.name)}.yaml" '
                               f'href="data:application/yaml;base64,{data}">'
                               f'{html.escape(self.t("tco_download", file=sc.name + ".yaml"))}</a>')

    # -- compute -----------------------------------------------------------------------------------
    def _sync_money_currency(self) -> None:
        """Money widgets are typed in the display currency: convert them when it changes."""
        old, new = getattr(self, "_money_currency", None), self.state.currency
        self._money_currency = new
        if old is None or old == new:
            return
        self._busy = True
        try:
            for key, name in (("owned.electricity_per_kwh", "kwh"), ("owned.host_cost_per_gpu", "host")):
                f = self.fields[name]
                try:
                    val = float(f.widget.value.strip().replace(",", ""))
                except ValueError:
                    continue
                fmt = "{:.4g}" if key.endswith("kwh") else "{:.6g}"
                self._set_text(name, float(self.catalog.convert(val, old, new)), fmt)
                if key in self._populated:
                    was = float(self._populated[key])
                    self._populated[key] = float(fmt.format(float(self.catalog.convert(was, old, new))))
        finally:
            self._busy = False

    def refresh(self) -> None:
        self._sync_money_currency()
        sc = self.current_scenario()
        self._show_download(sc)
        inp = self._resolve(sc, months=int(self.months.value))
        self.inputs_resolved = inp
        self.result = tco.evaluate(inp)
        self.tornado_result = tco.tornado(inp, self.result)
        draws = int(self.val("mc_draws") or 0)
        self.progress.value = 0
        self.mc_result = None
        self._mc_running = draws > 0
        self._draw()  # the deterministic answer first: the Monte Carlo takes longer than the rest together
        if draws > 0:
            try:
                self.mc_result = tco.monte_carlo(inp, self.result, draws=draws, chunk=max(250, draws // 10),
                                                 progress=lambda f: setattr(self.progress, "value", int(100 * f)))
            finally:
                self._mc_running = False
            self._draw_mc({o.id: self._name(o) for o in self.result.options})

    def relabel(self) -> None:
        self._relabel_about()
        self._busy = True
        try:
            self.options(self.site, tco.SITES)
        finally:
            self._busy = False
        self.more.set_title(0, self.t("tco_more"))
        mode = self.load_mode.value
        self._busy = True
        try:
            self.load_mode.options = [(self.t("tco_load_mode_hours"), "hours"),
                                      (self.t("tco_load_mode_share"), "share")]
            self.load_mode.value = mode
        finally:
            self._busy = False
        self._label_load()
        pick = "" if self._uploaded is not None else self.picker.value
        lang = self.state.lang
        self._busy = True  # new option labels are not a new choice
        try:
            self.picker.options = [(_short(s.get("title_zh") if lang == "zh" and s.get("title_zh") else s["title"]),
                                    s["name"]) for s in self._scenarios] + (
                [(self.t("tco_uploaded"), "")] if self._uploaded is not None else [])
            self.picker.value = pick
        finally:
            self._busy = False

    def _name(self, o: tco.OptionResult) -> str:
        return tco.option_name(o.id, o.name_params, self.state.lang)

    def _reason(self, o: tco.OptionResult) -> str:
        return tco.option_reason(o.id, o.reason_params, self.state.lang)

    def _draw(self) -> None:
        r = self.result
        cur = r.currency
        names = {o.id: self._name(o) for o in r.options}
        best = r.cheapest_option
        items = "".join(f"<li><b>{html.escape(names[o.id])}</b>: {html.escape(self._reason(o))}</li>"
                        for o in r.options)
        unav = "".join(f"<li>{html.escape(self.t('tco_unavailable', option=self.t(f'tco_kind_{_key(oid)}')))}: "
                       f"{html.escape(self._unavailable_text(key, prm))}</li>" for oid, key, prm in r.unavailable_keys)
        warn = "".join(f"<li class='gc-warn'>{html.escape(localize(x, self.state.lang))}</li>" for x in r.warnings)
        answer = self.t("tco_answer", months=r.horizon_months, need=self._need_words(), name=names[best.id],
                        total=tco.fmt_money(best.total_cost, cur),
                        per_hour=tco.fmt_money(best.cost_per_useful_gpu_hour, cur))
        ranking = "".join(f"<li{' class=gc-best' if o.id == best.id else ''}>{html.escape(names[o.id])}: "
                          f"<b>{tco.fmt_money(o.total_cost, cur)}</b></li>"
                          for o in sorted(r.options, key=lambda o: o.total_cost))
        measured = ""
        if self.measured:
            measured = "<p class='gc-help'>" + html.escape(self.t(
                "tco_measured", demo=self.t("tco_measured_demo") if self.measured == "demo" else "")) + "</p>"
        self.summary.value = self.gloss(
            f"<p class='gc-answer'><b>{html.escape(answer)}</b></p>{measured}"
            f"<p class='gc-help'>{html.escape(self.t('tco_ranking'))}</p><ol class='gc-ranking'>{ranking}</ol>"
            f"<ul class='gc-help gc-warn-list'>{unav}{warn}</ul>"
            f"<details><summary>{html.escape(self.t('tco_reasons'))}</summary><ul class='gc-help'>{items}</ul></details>")
        self._draw_cumulative(names)
        self._draw_tables(names)
        self._busy = True
        try:
            keep = self.tornado_option.value
            self.tornado_option.options = [(names[o.id], o.id) for o in r.options]
            self.tornado_option.value = keep if keep in names else best.id
        finally:
            self._busy = False
        self._draw_tornado()
        self._draw_mc(names)
        self._draw_provenance()

    def _draw_cumulative(self, names: dict[str, str]) -> None:
        """The cumulative cost of each option by month, with the break-even months marked."""
        r = self.result
        cur, best = r.currency, r.cheapest_option
        months = list(range(1, r.horizon_months + 1))
        od = next((o for o in r.options if o.id == "on-demand"), None)
        n_markers = 0
        with self.redraw("fig") as fig_:
            fig_.data = []
            for o in r.options:
                fig_.add_scatter(x=months, y=list(o.cumulative_cost), mode="lines", name=names[o.id],
                                     line=dict(color=COLORS[o.id], width=3 if o.id == best.id else 1.6))
            if od is not None:
                xs, ys, txt = [], [], []
                for o in r.options:
                    if o.break_even_month:
                        xs.append(o.break_even_month)
                        ys.append(o.cumulative_cost[o.break_even_month - 1])
                        txt.append(self.t("tco_marker", name=names[o.id], month=o.break_even_month))
                n_markers = len(xs)
                fig_.add_scatter(x=xs, y=ys, mode="markers", name=self.t("tco_break_even"), hovertext=txt,
                                     hoverinfo="text", marker=dict(symbol="diamond", size=11, color="#111"))
            fig_.layout.title = self.t("tco_chart_title")
            fig_.layout.xaxis.title = self.t("tco_axis_month")
            fig_.layout.yaxis.title = self.t("tco_axis_cost", cur=cur)
        self._markers = n_markers

    def _draw_tables(self, names: dict[str, str]) -> None:
        """The options' table and the break-even table (with the spot line)."""
        r = self.result
        cur, best = r.currency, r.cheapest_option
        heads = ["tco_col_option", "tco_col_kind", "tco_col_total", "tco_col_per_hour", "tco_col_break_even",
                 "tco_col_runs", "tco_col_tokens", "tco_col_offer"]
        rows = []
        for o in r.options:
            runs = "<br>".join(f"{html.escape(k)}: {tco.fmt_money(v, cur)}" for k, v in o.cost_per_run.items())
            toks = "<br>".join(f"{html.escape(k)}: {tco.fmt_money(v, cur)}" for k, v in o.cost_per_1m_tokens.items())
            be = "—" if o.break_even_month is None else self.t("tco_month_n", month=o.break_even_month)
            cls = " class='gc-frontier'" if o.id == best.id else ""
            rows.append(f"<tr{cls} data-id='{o.id}'><td>{html.escape(names[o.id])}</td>"
                        f"<td class='gc-l'>{html.escape(self.t(f'tco_kind_{_key(o.id)}'))}</td>"
                        f"<td>{tco.fmt_money(o.total_cost, cur)}</td>"
                        f"<td>{tco.fmt_money(o.cost_per_useful_gpu_hour, cur)}</td><td>{be}</td>"
                        f"<td class='gc-l'>{runs}</td><td class='gc-l'>{toks}</td>"
                        f"<td class='gc-l gc-help'>{html.escape(o.offer)}</td></tr>")
        self.table.value = ("<table><thead><tr>" + "".join(f"<th>{html.escape(self.t(h))}</th>" for h in heads)
                            + "</tr></thead><tbody>" + "".join(rows) + "</tbody></table>")
        be_rows = []
        for b in r.break_even:
            m = "—" if b.month is None else self.t("tco_month_n", month=b.month)
            u = "—" if b.utilization is None else tco.fmt_pct(b.utilization)
            be_rows.append(f"<tr><td>{html.escape(self.t(f'tco_kind_{_key(b.owned)}'))}</td>"
                           f"<td class='gc-l'>{html.escape(self.t(f'tco_kind_{_key(b.rented)}'))}</td>"
                           f"<td>{m}</td><td>{u}</td></tr>")
        spot = ""
        if r.spot:
            dl = r.spot.get("deadline_miss_probability")
            spot = "<p class='gc-help'>" + html.escape(self.t(
                "tco_spot_line", interval=tco.fmt_hours(r.spot["checkpoint_interval_h"]),
                overhead=tco.fmt_pct(r.spot["factor"] - 1),
                deadline=tco.fmt_pct(dl) if dl is not None else "—")) + "</p>"
        self.breakeven.value = (f"<h4>{html.escape(self.t('tco_be_title'))}</h4><table><thead><tr>"
                                + "".join(f"<th>{html.escape(self.t(h))}</th>" for h in
                                          ("tco_col_owned", "tco_col_rented", "tco_col_be_month",
                                           "tco_col_be_util"))
                                + "</tr></thead><tbody>" + "".join(be_rows) + "</tbody></table>" + spot)

    def _draw_provenance(self) -> None:
        r = self.result
        prov = "".join(f"<li><b>{html.escape(p.key)}</b> = {html.escape(_fmt_value(p.value))} "
                       f"{html.escape(p.unit)} — {html.escape(p.source)}"
                       + (f" ({html.escape(p.as_of)})" if p.as_of else "")
                       + (f"; {html.escape(p.note)}" if p.note else "") + "</li>" for p in r.provenance)
        self.details.value = (f"<details><summary>{html.escape(self.t('tco_sources'))}</summary>"
                              f"<ul class='gc-help'>{prov}</ul></details>")

    def _need_words(self) -> str:
        """The need in words: "2,000 GPU-hours a year of A100 80GB PCIe" or "2 × RTX 4090 busy 50 %"."""
        inp, sc = self.inputs_resolved, self.current_scenario()
        gpu = inp.owned_name
        hours = sc.values.get("demand.gpu_hours_per_year")
        if hours is None and sc.values.get("demand.gpu_hours_per_month") is not None:
            hours = float(sc.values["demand.gpu_hours_per_month"]) * 12
        if hours is not None:
            text = self.t("tco_need_hours", hours=f"{float(hours):,.0f}", gpu=gpu)
        else:
            text = self.t("tco_need_share", n=int(inp.params.owned.count), gpu=gpu,
                          pct=tco.fmt_pct(inp.params.demand.base_utilization))
        growth = float(inp.params.demand.growth_per_year)
        return text + (self.t("tco_need_growth", growth=tco.fmt_pct(growth)) if growth else "")

    def _unavailable_text(self, key: str, prm) -> str:
        prm = dict(prm)
        what = prm.get("what", "")
        if key == "unavail_no_price" and what in ("new", "used"):
            prm["what"] = self.t(f"tco_what_{what}")
        elif key == "unavail_no_cloud" and what in tco.OPTION_KIND:
            prm["what"] = self.t(f"tco_kind_{_key(what)}")
        return self.t("tco_" + key, **prm)

    def _draw_tornado(self) -> None:
        tr = self.tornado_result
        if tr is None or self.result is None:
            return
        oid = self.tornado_option.value or self.result.cheapest
        if oid not in tr.base_totals:
            return
        base = tr.base_totals[oid]
        bars = list(reversed(tr.ranked(oid)))
        labels = [self._tornado_label(b) for b in bars]
        with self.redraw("tornado_fig") as fig_:
            fig_.data = []
            fig_.add_bar(y=labels, x=[b.low_totals[oid] - base for b in bars], base=base,
                                     orientation="h", name=self.t("tco_tornado_low"), marker_color="#4c78a8")
            fig_.add_bar(y=labels, x=[b.high_totals[oid] - base for b in bars], base=base,
                                     orientation="h", name=self.t("tco_tornado_high"), marker_color="#f58518")
            fig_.layout.title = self.t("tco_tornado_title")
            fig_.layout.xaxis.title = self.t("tco_axis_total", cur=tr.currency)

    def _tornado_label(self, b: tco.TornadoBar) -> str:
        name = self.t(f"tco_in_{b.input}")
        if b.how == "factor":
            return f"{name} ×{b.low:.2f}–{b.high:.2f}"
        return f"{name} {b.low:.2f}–{b.high:.2f}"

    def _draw_mc(self, names: dict[str, str]) -> None:
        mc = self.mc_result
        cur = self.result.currency
        with self.redraw("mc_fig") as fig_:
            fig_.data = []
            if mc is not None:
                for oid, (edges, counts) in mc.histogram.items():
                    centers = [(a + b) / 2 for a, b in zip(edges[:-1], edges[1:], strict=True)]
                    fig_.add_bar(x=centers, y=list(counts), name=names.get(oid, oid), opacity=0.55,
                                        marker_color=COLORS.get(oid))
            fig_.layout.title = (self.t("tco_mc_title", n=mc.draws) if mc is not None else
                                 self.t("tco_mc_running", n=int(self.val("mc_draws") or 0)) if self._mc_running else
                                 self.t("tco_mc_title", n=0))
            fig_.layout.xaxis.title = self.t("tco_axis_total", cur=cur)
            fig_.layout.yaxis.title = self.t("tco_axis_draws")
        if mc is None:
            key = "tco_mc_running" if self._mc_running else "tco_mc_off"
            self.mc_table.value = (f"<p class='gc-help'>{html.escape(self.t(key, n=int(self.val('mc_draws') or 0)))}"
                                   "</p>")
            return
        rows = "".join(
            f"<tr><td>{html.escape(names.get(k, k))}</td><td>{tco.fmt_money(v['p10'], cur)}</td>"
            f"<td>{tco.fmt_money(v['p50'], cur)}</td><td>{tco.fmt_money(v['p90'], cur)}</td>"
            f"<td>{tco.fmt_pct(mc.probability_cheapest.get(k, 0.0))}</td></tr>"
            for k, v in mc.percentiles.items())
        heads = ("tco_col_option", "P10", "P50", "P90", "tco_col_p_cheapest")
        extra = ""
        if mc.deadline_miss_probability is not None:
            extra = "<p class='gc-help'>" + html.escape(self.t(
                "tco_mc_deadline", p=tco.fmt_pct(mc.deadline_miss_probability))) + "</p>"
        self.mc_table.value = self.gloss("<table><thead><tr>" + "".join(
            f"<th>{html.escape(self.t(h) if h.startswith('tco_') else h)}</th>" for h in heads)
            + "</tr></thead><tbody>" + rows + "</tbody></table>" + extra)

    def results_record(self) -> dict:
        rec = super().results_record()
        r = self.result
        if r is None:
            return rec
        mc = self.mc_result
        rec.update({
            "scenario": r.scenario, "horizon_months": r.horizon_months, "result_currency": r.currency,
            "options": [{"id": o.id, "kind": o.kind, "name": self._name(o), "total_cost": o.total_cost,
                         "cost_per_useful_gpu_hour": o.cost_per_useful_gpu_hour,
                         "break_even_month": o.break_even_month} for o in r.options],
            "cheapest": r.cheapest, "summary": self.summary.value,
            "reasons": {o.id: self._reason(o) for o in r.options},
            "chart_traces": len(self.fig.data), "break_even_markers": getattr(self, "_markers", 0),
            "tornado_inputs": [b.input for b in self.tornado_result.bars] if self.tornado_result else [],
            "tornado_bars": len(self.tornado_fig.data[0].y) if self.tornado_fig.data else 0,
            "monte_carlo": None if mc is None else {
                "draws": mc.draws, "p50": {k: v["p50"] for k, v in mc.percentiles.items()},
                "probability_cheapest": dict(mc.probability_cheapest)},
            "progress": self.progress.value, "hybrid_base_gpus": r.hybrid.base_gpus if r.hybrid else None,
        })
        return rec


def _fmt_value(v) -> str:
    if isinstance(v, float):
        return f"{v:,.4g}"
    return str(v)
