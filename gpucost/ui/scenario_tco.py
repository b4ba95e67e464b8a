"""Page 03 — scenario TCO: buy, lease or rent (on-demand, spot, reserved) or a hybrid, over time."""

from __future__ import annotations

import dataclasses
import html
import math
from pathlib import Path

import ipywidgets as w

from gpucost import tco
from gpucost.errors import GpucostError
from gpucost.ui.chart import TEMPLATE
from gpucost.ui.shell import Page

COLORS = {"buy-new": "#1f77b4", "buy-used": "#17becf", "lease": "#9467bd", "on-demand": "#d62728",
          "spot": "#ff7f0e", "reserved-1y": "#8c564b", "reserved-3y": "#e377c2", "hybrid": "#2ca02c"}
#: widget → (scenario key, parameter of Inputs.params it shows, money?)
_STYLE = {"description_width": "initial"}


def _key(oid: str) -> str:
    return oid.replace("-", "_")


class ScenarioTcoPage(Page):
    page_id = "tco"

    def __init__(self, scenario: str = "startup", months: int = 0, utilization: float = -1.0,
                 electricity_per_kwh: float = -1.0, mc_draws: int = 2000, lang: str = "en",
                 currency: str | None = None, catalog=None):
        self._init = dict(scenario=scenario, months=months, utilization=utilization,
                          electricity_per_kwh=electricity_per_kwh, mc_draws=mc_draws)
        self.scenario: tco.Scenario | None = None
        self.inputs_resolved: tco.Inputs | None = None
        self.result: tco.TcoResult | None = None
        self.tornado_result: tco.TornadoResult | None = None
        self.mc_result: tco.MonteCarloResult | None = None
        self._populated: dict[str, object] = {}
        self._busy = False
        self._mc_running = False
        self._last_resolved: tuple | None = None
        super().__init__(lang=lang, currency=currency, catalog=catalog)

    # -- build -----------------------------------------------------------------------------------
    def _text(self, cls: str) -> w.Text:
        t = w.Text(continuous_update=False, style=_STYLE, layout=w.Layout(width="95%"))
        t.add_class(cls)
        return t

    def build(self) -> None:
        names = [s["name"] for s in tco.list_scenarios()]
        first = self._init["scenario"] if self._init["scenario"] in names else (names[0] if names else "")
        self.picker = w.Dropdown(options=names, value=first or None, style=_STYLE)
        self.picker.add_class("gc-tco-scenario")
        self.about = w.HTML()
        self.about.add_class("gc-help")
        self.months = w.IntSlider(value=36, min=6, max=120, step=6, continuous_update=False, style=_STYLE,
                                  layout=w.Layout(width="95%"))
        self.months.add_class("gc-tco-months")
        self.count = w.BoundedIntText(value=1, min=1, max=100000, style=_STYLE)
        self.count.add_class("gc-tco-count")
        self.util = w.FloatSlider(value=0.5, min=0, max=1, step=0.01, continuous_update=False,
                                  readout_format=".0%", style=_STYLE, layout=w.Layout(width="95%"))
        self.util.add_class("gc-tco-util")
        self.growth = w.FloatSlider(value=0.0, min=-0.5, max=2, step=0.05, continuous_update=False,
                                    readout_format=".0%", style=_STYLE, layout=w.Layout(width="95%"))
        self.growth.add_class("gc-tco-growth")
        self.kwh = self._text("gc-tco-kwh")
        self.kwh_msg = self.message_box()
        self.pue = self._text("gc-tco-pue")
        self.pue_msg = self.message_box()
        self.host = self._text("gc-tco-host")
        self.host_msg = self.message_box()
        self.resale = w.FloatSlider(value=0.8, min=0.3, max=1.0, step=0.01, continuous_update=False,
                                    readout_format=".2f", style=_STYLE, layout=w.Layout(width="95%"))
        self.resale.add_class("gc-tco-resale")
        self.rate = self._text("gc-tco-rate")
        self.rate_msg = self.message_box()
        self.bucket = w.Dropdown(options=list(tco.SPOT_BUCKETS), style=_STYLE)
        self.bucket.add_class("gc-tco-bucket")
        self.ckpt = self._text("gc-tco-ckpt")
        self.ckpt_msg = self.message_box()
        self.restart = self._text("gc-tco-restart")
        self.restart_msg = self.message_box()
        self.headroom = w.FloatSlider(value=0.3, min=0, max=1, step=0.05, continuous_update=False,
                                      readout_format=".0%", style=_STYLE, layout=w.Layout(width="95%"))
        self.headroom.add_class("gc-tco-headroom")
        self.mc_draws = w.BoundedIntText(value=int(self._init["mc_draws"]), min=0, max=100000, step=1000,
                                         style=_STYLE)
        self.mc_draws.add_class("gc-tco-mc")
        self.progress = w.IntProgress(value=0, min=0, max=100, layout=w.Layout(width="95%"))
        self.progress.add_class("gc-tco-progress")
        self.save_name = self._text("gc-tco-save-name")
        self.save_overwrite = w.Checkbox(value=False, style=_STYLE)
        self.save_button = w.Button(icon="save")
        self.save_button.add_class("gc-tco-save")
        self.save_msg = self.message_box()
        self.save_button.on_click(self._save)
        for wid, key in ((self.picker, "tco_scenario"), (self.months, "tco_months"), (self.count, "tco_count"),
                         (self.util, "tco_util"), (self.growth, "tco_growth"), (self.kwh, "tco_kwh"),
                         (self.pue, "tco_pue"), (self.host, "tco_host"), (self.resale, "tco_resale"),
                         (self.rate, "tco_rate"), (self.bucket, "tco_bucket"), (self.ckpt, "tco_ckpt"),
                         (self.restart, "tco_restart"), (self.headroom, "tco_headroom"),
                         (self.mc_draws, "tco_mc_draws"), (self.save_name, "tco_save_name"),
                         (self.save_overwrite, "tco_save_overwrite"), (self.save_button, "tco_save")):
            self.label(wid, key)
        self.inputs.children = [
            self.picker, self.about, self.months, self.count, self.util, self.help_line("tco_util_help"),
            self.growth, self.kwh, self.kwh_msg, self.pue, self.pue_msg, self.host, self.host_msg,
            self.resale, self.help_line("tco_resale_help"), self.rate, self.rate_msg, self.bucket,
            self.help_line("tco_bucket_help"), self.ckpt, self.ckpt_msg, self.restart, self.restart_msg,
            self.headroom, self.help_line("tco_headroom_help"), self.mc_draws, self.progress,
            self.label(w.HTML(), "tco_save_title", "value"), self.save_name, self.save_overwrite,
            self.save_button, self.save_msg, *self.shell_inputs()]

        self.summary = w.HTML()
        self.summary.add_class("gc-summary")
        self.fig_box = self.chart("fig", "gc-tco-chart", height=420, margin=dict(l=70, r=20, t=40, b=50),
                                  template=TEMPLATE, legend=dict(orientation="h", y=-0.2))
        self.table = w.HTML()
        self.table.add_class("gc-table")
        self.table.add_class("gc-tco-table")
        self.breakeven = w.HTML()
        self.breakeven.add_class("gc-table")
        self.tornado_option = w.Dropdown(style=_STYLE)
        self.tornado_option.add_class("gc-tco-tornado-option")
        self.label(self.tornado_option, "tco_tornado_option")
        tornado_box = self.chart("tornado_fig", "gc-tco-tornado-chart", height=340,
                                 margin=dict(l=170, r=20, t=40, b=40), template=TEMPLATE, barmode="overlay",
                                 showlegend=True, legend=dict(orientation="h", y=-0.15))
        mc_box = self.chart("mc_fig", "gc-tco-mc-chart", height=340, margin=dict(l=60, r=20, t=40, b=50),
                            template=TEMPLATE, barmode="overlay", legend=dict(orientation="h", y=-0.25))
        self.mc_table = w.HTML()
        self.mc_table.add_class("gc-table")
        self.details = w.HTML()
        self.results.children = [self.summary, self.fig_box, self.table, self.breakeven, self.tornado_option,
                                 tornado_box, mc_box, self.mc_table, self.details]

        self._load_scenario(first, initial=True)
        self.picker.observe(self._picked, names="value")
        for wid in (self.months, self.count, self.util, self.growth, self.kwh, self.pue, self.host, self.resale,
                    self.rate, self.bucket, self.ckpt, self.restart, self.headroom, self.mc_draws):
            wid.observe(lambda _: None if self._busy else self.safe_refresh(), names="value")
        self.tornado_option.observe(lambda _: None if self._busy else self._draw_tornado(), names="value")

    # -- scenario → widgets ------------------------------------------------------------------------
    def _picked(self, change) -> None:
        with self.refresh_once():  # the scenario sets many inputs: one computation for all of them
            try:
                self._load_scenario(change["new"])
            except GpucostError as exc:
                self.error = str(exc)
                self.status.value = (f'<span class="gc-msg-error">'
                                     f'{html.escape(self.t("error_input", error=str(exc)))}</span>')
                return
            self.safe_refresh()

    def _load_scenario(self, name: str, initial: bool = False) -> None:
        if not name:
            raise GpucostError(self.t("tco_no_scenarios"))
        sc = tco.load_scenario(name)
        inp = self._resolve(sc)
        p = inp.params
        self.scenario = sc
        self._busy = True
        try:
            months = int(self._init["months"]) if initial and self._init["months"] else inp.horizon_months
            self.months.value = max(self.months.min, min(self.months.max, months))
            self.count.value = int(p.owned.count)
            util = self._init["utilization"] if initial and self._init["utilization"] >= 0 else p.demand.base_utilization
            self.util.max = max(1.0, float(util))
            self.util.value = float(util)
            self.growth.value = float(p.demand.growth_per_year)
            kwh = self._init["electricity_per_kwh"] if initial and self._init["electricity_per_kwh"] >= 0 \
                else p.owned.electricity_per_kwh
            self.kwh.value = f"{kwh:.4g}"
            self.pue.value = f"{p.owned.pue:.3g}"
            self.host.value = f"{p.owned.host_cost:.6g}"
            self.resale.value = min(1.0, max(0.3, float(p.owned.resale_retention_per_year)))
            self.rate.value = "" if p.lease.annual_rate != p.lease.annual_rate else f"{100 * p.lease.annual_rate:.3g}"
            self.bucket.value = sc.values["spot.interruption_bucket"] or "10-15%"
            self.ckpt.value = f"{60 * p.spot.checkpoint_hours:.3g}"
            self.restart.value = f"{60 * p.spot.restart_hours:.3g}"
            self.headroom.value = float(p.hybrid.headroom_fraction)
            self.save_name.value = f"my-{sc.name}.yaml"
            for box in (self.kwh_msg, self.pue_msg, self.host_msg, self.rate_msg, self.ckpt_msg, self.restart_msg):
                self.show_error(box, None)
        finally:
            self._busy = False
        self._populated = self._widget_values(quiet=True)
        self._money_currency = self.state.currency
        if initial:
            # parameters given to the page count as the user's changes
            self._populated["demand.utilization"] = round(float(p.demand.base_utilization), 6)
            self._populated["owned.electricity_per_kwh"] = float(f"{p.owned.electricity_per_kwh:.4g}")
            self._populated["horizon_months"] = inp.horizon_months
        self._relabel_about()

    def _relabel_about(self) -> None:
        if self.scenario is None:
            return
        lang = self.state.lang
        title = self.scenario.title.get(lang) or self.scenario.title.get("en", self.scenario.name)
        desc = self.scenario.description.get(lang) or self.scenario.description.get("en", "")
        self.about.value = f"<b>{html.escape(title)}</b><br>{html.escape(desc)}"

    # -- widgets → scenario ------------------------------------------------------------------------
    def _number(self, text: w.Text, box: w.HTML, what: str, lo: float, hi: float, quiet: bool = False):
        raw = text.value.strip().replace(",", "")
        if raw == "":
            if not quiet:
                self.show_error(box, None)
            return None
        try:
            val = float(raw)
        except ValueError:
            val = math.nan
        if not (lo <= val <= hi):
            if quiet:
                return None
            msg = self.t("tco_bad_number", what=what, value=raw, lo=f"{lo:g}", hi=f"{hi:g}")
            self.show_error(box, msg)
            raise GpucostError(msg)
        if not quiet:
            self.show_error(box, None)
        return val

    def _widget_values(self, quiet: bool = False) -> dict[str, object]:
        cur = self.state.currency
        out: dict[str, object] = {
            "horizon_months": int(self.months.value), "owned.count": int(self.count.value),
            "demand.utilization": round(float(self.util.value), 6),
            "demand.growth_per_year": float(self.growth.value),
            "owned.resale_retention_per_year": float(self.resale.value),
            "spot.interruption_bucket": self.bucket.value, "hybrid.headroom": float(self.headroom.value),
        }
        checks = (("owned.electricity_per_kwh", self.kwh, self.kwh_msg, self.t("tco_kwh_what"), 0, 100),
                  ("owned.pue", self.pue, self.pue_msg, "PUE", 1, 5),
                  ("owned.host_cost_per_gpu", self.host, self.host_msg, self.t("tco_host_what"), 0, 1e9),
                  ("lease.annual_rate", self.rate, self.rate_msg, self.t("tco_rate_what"), 0, 100),
                  ("spot.checkpoint_minutes", self.ckpt, self.ckpt_msg, self.t("tco_ckpt_what"), 0, 10000),
                  ("spot.restart_minutes", self.restart, self.restart_msg, self.t("tco_restart_what"), 0, 10000))
        for key, text, box, what, lo, hi in checks:
            val = self._number(text, box, what, lo, hi, quiet=quiet)
            if val is None:
                continue
            if key == "lease.annual_rate":
                val = val / 100
            out[key] = val
        out["_currency"] = cur
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
        if "demand.utilization" in changes:
            changes["demand.gpu_hours_per_month"] = None
        return changes

    def current_scenario(self) -> tco.Scenario:
        """The picked scenario with the page's edits applied (validated like a file)."""
        if self.scenario is None:
            raise GpucostError(self.t("tco_no_scenarios"))
        changes = self._changes()
        return self.scenario.updated(changes) if changes else self.scenario

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

    # -- compute -----------------------------------------------------------------------------------
    def _sync_money_currency(self) -> None:
        """Money widgets are typed in the display currency: convert them when it changes."""
        old, new = getattr(self, "_money_currency", None), self.state.currency
        self._money_currency = new
        if old is None or old == new:
            return
        self._busy = True
        try:
            for key, text in (("owned.electricity_per_kwh", self.kwh), ("owned.host_cost_per_gpu", self.host)):
                try:
                    val = float(text.value.strip().replace(",", ""))
                except ValueError:
                    continue
                fmt = "{:.4g}" if key.endswith("kwh") else "{:.6g}"
                text.value = fmt.format(float(self.catalog.convert(val, old, new)))
                if key in self._populated:
                    was = float(self._populated[key])
                    self._populated[key] = float(fmt.format(float(self.catalog.convert(was, old, new))))
        finally:
            self._busy = False

    def refresh(self) -> None:
        self._sync_money_currency()
        sc = self.current_scenario()
        inp = self._resolve(sc, months=int(self.months.value))
        self.inputs_resolved = inp
        self.result = tco.evaluate(inp)
        self.tornado_result = tco.tornado(inp, self.result)
        draws = int(self.mc_draws.value)
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

    def _name(self, o: tco.OptionResult) -> str:
        params = dict(o.name_params)
        if o.id == "hybrid" and self.result is not None and self.result.hybrid is not None:
            params.update(self._hybrid_words())
        return self.t(f"tco_name_{_key(o.id)}", **params)

    def _hybrid_words(self) -> dict[str, str]:
        plan = self.result.hybrid
        inp = self.inputs_resolved
        return {"base": self.t(f"tco_base_{_key(plan.base)}", owned=inp.owned_name, cloud=inp.cloud_name),
                "burst": self.t(f"tco_burst_{_key(plan.burst)}")}

    def _reason(self, o: tco.OptionResult) -> str:
        params = dict(o.reason_params)
        if o.id == "hybrid":
            params.update(self._hybrid_words())
        return self.t(f"tco_reason_{_key(o.id)}", **params)

    def _draw(self) -> None:
        r = self.result
        cur = r.currency
        names = {o.id: self._name(o) for o in r.options}
        best = r.cheapest_option
        items = "".join(f"<li><b>{html.escape(names[o.id])}</b>: {html.escape(self._reason(o))}</li>"
                        for o in r.options)
        unav = "".join(f"<li>{html.escape(self.t('tco_unavailable', option=self.t(f'tco_kind_{_key(oid)}')))}: "
                       f"{html.escape(self._unavailable_text(key, prm))}</li>" for oid, key, prm in r.unavailable_keys)
        warn = "".join(f"<li class='gc-warn'>{html.escape(x)}</li>" for x in r.warnings)
        self.summary.value = (
            "<p><b>" + html.escape(self.t("tco_cheapest", months=r.horizon_months, name=names[best.id],
                                          total=tco.fmt_money(best.total_cost, cur),
                                          per_hour=tco.fmt_money(best.cost_per_useful_gpu_hour, cur)))
            + "</b></p><ul class='gc-help'>" + items + unav + warn + "</ul>")
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
        self._busy = True
        try:
            keep = self.tornado_option.value
            self.tornado_option.options = [(names[o.id], o.id) for o in r.options]
            self.tornado_option.value = keep if keep in names else best.id
        finally:
            self._busy = False
        self._draw_tornado()
        self._draw_mc(names)
        prov = "".join(f"<li><b>{html.escape(p.key)}</b> = {html.escape(_fmt_value(p.value))} "
                       f"{html.escape(p.unit)} — {html.escape(p.source)}"
                       + (f" ({html.escape(p.as_of)})" if p.as_of else "")
                       + (f"; {html.escape(p.note)}" if p.note else "") + "</li>" for p in r.provenance)
        self.details.value = (f"<details><summary>{html.escape(self.t('tco_sources'))}</summary>"
                              f"<ul class='gc-help'>{prov}</ul></details>")

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
                                 self.t("tco_mc_running", n=int(self.mc_draws.value)) if self._mc_running else
                                 self.t("tco_mc_title", n=0))
            fig_.layout.xaxis.title = self.t("tco_axis_total", cur=cur)
            fig_.layout.yaxis.title = self.t("tco_axis_draws")
        if mc is None:
            key = "tco_mc_running" if self._mc_running else "tco_mc_off"
            self.mc_table.value = (f"<p class='gc-help'>{html.escape(self.t(key, n=int(self.mc_draws.value)))}"
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
        self.mc_table.value = ("<table><thead><tr>" + "".join(
            f"<th>{html.escape(self.t(h) if h.startswith('tco_') else h)}</th>" for h in heads)
            + "</tr></thead><tbody>" + rows + "</tbody></table>" + extra)

    # -- save ------------------------------------------------------------------------------------------
    def _save(self, _button=None) -> None:
        from gpucost.catalog import user_data_dir

        try:
            sc = self.current_scenario()
            raw = self.save_name.value.strip() or f"my-{sc.name}.yaml"
            path = Path(raw).expanduser()
            if not path.is_absolute():
                base = user_data_dir()
                path = (base / "scenarios" / path) if base else Path.cwd() / path
            stem = path.stem.lower()
            if not tco.SCENARIO_NAME_RE.match(stem):
                raise GpucostError(self.t("tco_save_bad_name", name=path.name))
            written = tco.save_scenario(dataclasses.replace(sc, name=stem), path,
                                        overwrite=bool(self.save_overwrite.value))
        except GpucostError as exc:
            self.show_error(self.save_msg, str(exc))
            return
        self.save_msg.value = (f'<span class="gc-msg-ok">{html.escape(self.t("tco_saved", path=str(written)))}'
                               "</span>")

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
