"""Page 05 — sharing & scaling: several workloads on one card (time-slicing, MIG, MPS), the fewest GPUs for
a training run (DeepSpeed), and a fleet that follows its queue (autoscaling, spot, commitments).

Three tabs, one per planner of :mod:`gpucost.plan`; every emitted config is shown and downloadable.
"""

from __future__ import annotations

import base64
import html
import io

import ipywidgets as w

from gpucost import plan
from gpucost.errors import GpucostError
from gpucost.specs import DEFAULTS, SPECS, Spec
from gpucost.ui.chart import TEMPLATE
from gpucost.ui.shell import Page

_STYLE = {"description_width": "initial"}
_WIDE = w.Layout(width="95%")
_FULL = w.Layout(width="100%")
#: autoscaler start-up and cool-down times [h]
_HOURS = Spec("float", None, ge=0, le=24, unit="h", step=0.05)
DEFAULT_WORKLOADS = "10:30\n8:20:latency\n16:40\n4:10"


def download_link(text: str, filename: str, mime: str, label: str) -> str:
    """An HTML link that downloads ``text`` as ``filename`` (a data: URI; nothing is stored on a server)."""
    b64 = base64.b64encode(text.encode("utf-8")).decode("ascii")
    return (f'<a class="gc-download" download="{html.escape(filename)}" href="data:{mime};base64,{b64}">'
            f"{html.escape(label)}</a>")


def _pre(text: str) -> str:
    return f'<pre class="gc-config" style="max-height:22em;overflow:auto;font-size:0.85em">{html.escape(text)}</pre>'


class SharingScalingPage(Page):
    page_id = "plan"

    def __init__(self, tab: int = 0, share_gpu: str = "a100-80gb-sxm", workloads: str = DEFAULT_WORKLOADS,
                 share_mode: str = "mig", model: str = "llama-3.1-8b", train_gpu: str = "h100-sxm",
                 train_mode: str = "full", tokens: str = "1B", trace: str = "sample", policy: str = "autoscale",
                 max_gpus: int = 0, scale_gpu: str = "h100-sxm", lang: str = "en", currency: str | None = None,
                 catalog=None):
        self._init = dict(tab=tab, share_gpu=share_gpu, workloads=workloads, share_mode=share_mode, model=model,
                          train_gpu=train_gpu, train_mode=train_mode, tokens=tokens, trace=trace, policy=policy,
                          max_gpus=max_gpus, scale_gpu=scale_gpu)
        self.share_result: plan.SharePlan | None = None
        self.train_result: plan.TrainPlan | None = None
        self.scale_result: plan.ScalePlan | None = None
        self._uploaded_trace: plan.Trace | None = None
        self._errors: dict[str, str | None] = {"share": None, "train": None, "scale": None}
        self._tab_fields: dict[str, list[str]] = {}
        self.tab_out: dict[str, w.VBox] = {}
        super().__init__(lang=lang, currency=currency, catalog=catalog)

    # -- build -----------------------------------------------------------------------------------
    def _gpu_options(self, only_mig: bool = False) -> list[tuple[str, str]]:
        g = self.catalog.gpus
        if only_mig:
            ids = set(self.catalog.table("mig_profiles")["gpu_id"])
            g = g[g["id"].isin(ids)]
        return [(f"{n} ({v:g} GiB)", i) for i, n, v in zip(g["id"], g["name"], g["vram_gib"], strict=True)]

    def _pick(self, options, value, fallback):
        ids = [o[1] if isinstance(o, tuple) else o for o in options]
        try:
            value = self.catalog.gpu_id(value) if value not in ids else value
        except GpucostError:
            pass
        return value if value in ids else fallback

    def build(self) -> None:
        i = self._init
        gpus = self._gpu_options()
        ids = [g[1] for g in gpus]
        # ---- share
        self.share_gpu = w.Dropdown(options=gpus, value=self._pick(gpus, i["share_gpu"], ids[0]), style=_STYLE,
                                    layout=_WIDE)
        self.share_gpu.add_class("gc-plan-share-gpu")
        self.share_mode = w.ToggleButtons(options=list(plan.SHARE_MODES), value=i["share_mode"]
                                          if i["share_mode"] in plan.SHARE_MODES else "time-slicing",
                                          style={"button_width": "110px", "description_width": "initial"})
        self.share_mode.add_class("gc-plan-share-mode")
        self.workloads = w.Textarea(value=i["workloads"], continuous_update=False, rows=5, style=_STYLE,
                                    layout=_WIDE)
        self.workloads.add_class("gc-plan-workloads")
        self.workloads_msg = self.message_box()
        self.latency_alone = w.Checkbox(value=True, style=_STYLE, indent=False)
        self.share_summary = w.HTML()
        self.share_summary.add_class("gc-plan-share-summary")
        share_box = self.chart("share_fig", "gc-plan-share-chart", height=300, barmode="stack",
                               margin=dict(l=50, r=20, t=40, b=40), template=TEMPLATE,
                               legend=dict(orientation="h", y=-0.2))
        self.share_table = w.HTML()
        self.share_table.add_class("gc-table")
        self.share_configs = w.HTML()
        self.share_configs.add_class("gc-plan-share-configs")
        share_in = w.VBox([self.field("plan_gpu", self.share_gpu),
                           self.field("plan_share_mode", self.share_mode, "plan_share_mode_help"),
                           self.field("plan_workloads", self.workloads, "plan_workloads_help"), self.workloads_msg,
                           self.label(self.latency_alone, "plan_latency_alone")])
        share_out = self.tab_out["share"] = w.VBox([self.share_summary, share_box, self.share_table,
                                                    self.share_configs], layout=_FULL)
        # ---- train
        models = self.catalog.table("models")
        llms = [m for m, k in zip(models["id"], models["kind"], strict=True) if k == "llm"]
        self.model = w.Dropdown(options=llms, value=i["model"] if i["model"] in llms else llms[0], style=_STYLE,
                                layout=_WIDE)
        self.model.add_class("gc-plan-model")
        self.train_gpu = w.Dropdown(options=gpus, value=self._pick(gpus, i["train_gpu"], ids[0]), style=_STYLE,
                                    layout=_WIDE)
        self.train_gpu.add_class("gc-plan-train-gpu")
        self.train_mode = w.ToggleButtons(options=list(plan.TRAIN_MODES), value=i["train_mode"]
                                          if i["train_mode"] in plan.TRAIN_MODES else "full",
                                          style={"button_width": "110px", "description_width": "initial"})
        self.train_mode.add_class("gc-plan-train-mode")
        tokens_box = self.tab_field("train", "tokens", SPECS["train_tokens"], None, "plan_tokens")
        self.fields["tokens"].widget.value = str(i["tokens"])
        seq_box = self.tab_field("train", "seq_len", SPECS["context"], DEFAULTS.context, "plan_seq_len")
        mb_box = self.tab_field("train", "micro_batch", SPECS["batch"], 1, "plan_micro_batch")
        self.tokens, self.seq_len, self.micro_batch = (self.fields[k].widget for k in ("tokens", "seq_len",
                                                                                     "micro_batch"))
        self.tokens_msg = self.fields["tokens"].message
        self.strategy = w.Dropdown(options=["auto", *(st.name for st in plan.STRATEGIES)], value="auto",
                                   layout=_WIDE)
        self.strategy.add_class("gc-plan-strategy")
        self.train_summary = w.HTML()
        self.train_summary.add_class("gc-plan-train-summary")
        train_box = self.chart("train_fig", "gc-plan-train-chart", height=300, margin=dict(l=50, r=20, t=40, b=80),
                               template=TEMPLATE)
        self.train_table = w.HTML()
        self.train_table.add_class("gc-table")
        self.train_config = w.HTML()
        self.train_config.add_class("gc-plan-deepspeed")
        train_in = w.VBox([self.field("plan_model", self.model), self.field("plan_gpu", self.train_gpu),
                           self.field("plan_train_mode", self.train_mode), tokens_box, seq_box, mb_box,
                           self.field("plan_strategy", self.strategy, "plan_strategy_help")])
        train_out = self.tab_out["train"] = w.VBox([self.train_summary, train_box, self.train_table,
                                                    self.train_config], layout=_FULL)
        # ---- scale
        self.trace_upload = w.FileUpload(accept=".csv", multiple=False)
        self.trace_upload.add_class("gc-plan-trace-upload")
        self.trace_msg = self.message_box()
        self.policy = w.ToggleButtons(options=list(plan.POLICIES), value=i["policy"]
                                      if i["policy"] in plan.POLICIES else "autoscale",
                                      style={"button_width": "110px", "description_width": "initial"})
        self.policy.add_class("gc-plan-policy")
        max_box = self.tab_field("scale", "max_gpus", SPECS["max_gpus"].with_default(None, optional=True),
                                 int(i["max_gpus"]) or None, "plan_max_gpus", "plan_max_gpus_help")
        self.max_gpus = self.fields["max_gpus"].widget
        self.scale_gpu = w.Dropdown(options=gpus, value=self._pick(gpus, i["scale_gpu"], ids[0]), style=_STYLE,
                                    layout=_WIDE)
        self.scale_gpu.add_class("gc-plan-scale-gpu")
        try:
            disc, self._disc_src = plan.default_commit_discount(self.catalog)
        except GpucostError:
            disc, self._disc_src = 0.0, ""
        self.discount = w.FloatSlider(value=round(disc * 100, 1), min=0, max=80, step=0.5, continuous_update=False,
                                      readout_format=".1f", style=_STYLE, layout=_WIDE)
        self.discount.add_class("gc-plan-discount")
        self.spot_bucket = w.Dropdown(options=list(plan.SPOT_BUCKETS), value=">20%", style=_STYLE)
        startup_box = self.tab_field("scale", "startup", _HOURS, 0.05, "plan_startup")
        cooldown_box = self.tab_field("scale", "cooldown", _HOURS, 0.25, "plan_cooldown")
        self.startup, self.cooldown = self.fields["startup"].widget, self.fields["cooldown"].widget
        self.scale_summary = w.HTML()
        self.scale_summary.add_class("gc-plan-scale-summary")
        scale_box = self.chart("scale_fig", "gc-plan-scale-chart", height=320, margin=dict(l=50, r=20, t=40, b=40),
                               template=TEMPLATE, legend=dict(orientation="h", y=-0.2))
        commit_box = self.chart("commit_fig", "gc-plan-commit-chart", height=260,
                                margin=dict(l=50, r=20, t=40, b=40), template=TEMPLATE)
        self.scale_table = w.HTML()
        self.scale_table.add_class("gc-table")
        scale_in = w.VBox([self.label(w.HTML(), "plan_trace", "value"), self.trace_upload,
                           self.help_line("plan_trace_help"), self.trace_msg,
                           self.field("plan_policy", self.policy), max_box,
                           self.field("plan_price_gpu", self.scale_gpu),
                           self.field("plan_discount", self.discount, "plan_discount_help"),
                           self.field("plan_spot_bucket", self.spot_bucket), startup_box, cooldown_box])
        scale_out = self.tab_out["scale"] = w.VBox([self.scale_summary, self.scale_table, scale_box, commit_box],
                                                   layout=_FULL)

        self.tabs = w.Tab(children=[w.VBox([share_in, share_out]), w.VBox([train_in, train_out]),
                                    w.VBox([scale_in, scale_out])])
        self.tabs.add_class("gc-plan-tabs")
        self.tabs.selected_index = int(i["tab"]) if int(i["tab"]) in (0, 1, 2) else 0
        self.intro = w.HTML()
        self.inputs.children = [self.intro, *self.shell_inputs()]
        self.results.children = [self.tabs]
        for wid in (self.share_gpu, self.share_mode, self.workloads, self.latency_alone):
            wid.observe(lambda _: self._run("share"), names="value")
        for wid in (self.model, self.train_gpu, self.train_mode, self.strategy):
            wid.observe(lambda _: self._run("train"), names="value")
        for wid in (self.policy, self.scale_gpu, self.discount, self.spot_bucket):
            wid.observe(lambda _: self._run("scale"), names="value")
        self.trace_upload.observe(self._on_trace, names="value")
        self._trace_name = i["trace"]

    def url_widgets(self) -> dict:
        return {"share_gpu": self.share_gpu, "share_mode": self.share_mode, "model": self.model,
                "train_gpu": self.train_gpu, "train_mode": self.train_mode, "strategy": self.strategy,
                "policy": self.policy, "scale_gpu": self.scale_gpu}

    def apply_params(self, params: dict) -> None:
        super().apply_params(params)
        if str(params.get("tab", "")) in ("0", "1", "2"):
            self.tabs.selected_index = int(params["tab"])

    def relabel(self) -> None:
        for k, key in enumerate(("plan_tab_share", "plan_tab_train", "plan_tab_scale")):
            self.tabs.set_title(k, self.t(key))
        with self.refresh_once():  # new labels, same values
            self.options(self.share_mode, plan.SHARE_MODES)
            self.options(self.train_mode, plan.TRAIN_MODES)
            self.options(self.policy, plan.POLICIES)
            self.options(self.strategy, ["auto", *(st.name for st in plan.STRATEGIES)])
        self.intro.value = f"<p class='gc-help'>{html.escape(self.t('plan_intro'))}</p>"

    # -- compute -----------------------------------------------------------------------------------
    def tab_field(self, tab: str, name: str, spec, value, label_key: str, help_key: str | None = None) -> w.VBox:
        """A checked text field of one tab: a change recomputes that tab only."""
        self._tab_fields.setdefault(tab, []).append(name)
        return self.spec_field(name, spec, value, label_key, help_key, css=f"gc-plan-{name.replace('_', '-')}",
                               on_change=lambda _: self._run(tab))

    def _run(self, which: str) -> None:
        """Recompute one tab; a bad input becomes a message in the page, never a traceback, and that tab's
        results are marked out of date until it is fixed (the other tabs stay current)."""
        if self.refresh_pending():  # building, or changing several inputs at once: one refresh at the end
            return
        for name in self._tab_fields.get(which, ()):
            self.invalid.pop(name, None)
        try:
            with self.compute_budget():
                getattr(self, f"_refresh_{which}")()
            self._errors[which] = None
        except GpucostError as exc:
            self._errors[which] = str(exc)
        errs = [e for e in self._errors.values() if e]
        self.error = errs[0] if errs else None
        self.show_validity()

    def show_validity(self) -> None:
        """Per tab: its results greyed with a banner while an input of the tab is invalid or rejected."""
        super().show_validity()
        self.results.remove_class("gc-stale")
        for tab, box in self.tab_out.items():
            bad = self._errors.get(tab) or any(n in self.invalid for n in self._tab_fields.get(tab, ()))
            (box.add_class if bad else box.remove_class)("gc-stale")

    def refresh(self) -> None:
        for which in ("share", "train", "scale"):
            self._run(which)
        if self.error:
            raise GpucostError(self.error)

    # share ------------------------------------------------------------------------------------
    def _workload_list(self) -> list[plan.Workload]:
        lines = [ln.strip() for ln in self.workloads.value.replace(",", "\n").splitlines() if ln.strip()]
        try:
            ws = plan.parse_workloads(lines)
            if not ws:
                raise GpucostError(self.t("plan_workloads_empty"))
        except GpucostError as exc:
            self.show_error(self.workloads_msg, str(exc))
            raise
        self.show_error(self.workloads_msg, None)
        return ws

    def _refresh_share(self) -> None:
        ws = self._workload_list()
        self.share_result = None
        if self.share_mode.value == "mig":
            mig = self._gpu_options(only_mig=True)
            if self.share_gpu.value not in {i for _, i in mig}:
                raise GpucostError(self.t("plan_no_mig", gpu=self.catalog.gpu(self.share_gpu.value)["name"],
                                          cards=", ".join(n.split(" (")[0] for n, _ in mig)))
        r = plan.plan_share(ws, self.share_gpu.value, self.share_mode.value, self.catalog,
                            latency_alone=self.latency_alone.value)
        self.share_result = r
        self.share_summary.value = "<p>" + html.escape(self.t(
            "plan_share_summary", mode=self.opt(r.mode), n=r.cards_needed, without=r.cards_without_sharing,
            saved=r.cards_saved, before=f"{r.utilization_without_sharing_pct:.0f}",
            after=f"{r.utilization_shared_pct:.0f}")) + "</p>" + "".join(
            f"<p class='gc-warn'>{self.prose(x)}</p>" for x in r.warnings
        ) + "<ul class='gc-help'>" + "".join(f"<li>{self.prose(x)}</li>" for x in r.notes) + "</ul>"
        with self.redraw("share_fig") as fig_:
            fig_.data = []
            for p in r.placements:
                fig_.add_bar(x=[f"#{p.card}"], y=[p.mem_gib], name=p.name,
                                       text=[p.profile or p.name], hovertext=[f"{p.name}: {p.mem_gib:g} GiB, "
                                                                              f"{p.util_pct:g} %"])
            fig_.layout.title = self.t("plan_share_chart", vram=f"{r.vram_gib:g}")
            fig_.layout.yaxis.title = "GiB"
            fig_.layout.shapes = [dict(type="line", xref="paper", x0=0, x1=1, y0=r.vram_gib, y1=r.vram_gib,
                                                 line=dict(color="#d62728", dash="dot"))]
        heads = ("plan_col_workload", "plan_col_card", "plan_col_mem", "plan_col_util", "plan_col_latency",
                 "plan_col_profile")
        rows = "".join(
            f"<tr><td class='gc-l'>{html.escape(p.name)}</td><td>{p.card}</td><td>{p.mem_gib:g}</td>"
            f"<td>{p.util_pct:g}</td><td>{'✓' if p.latency_sensitive else ''}</td>"
            f"<td class='gc-l'>{html.escape(p.profile or '')}{'' if p.start is None else f' @ {p.start}'}</td></tr>"
            for p in r.placements)
        self.share_table.value = ("<table><thead><tr>" + "".join(f"<th>{html.escape(self.t(h))}</th>" for h in heads)
                                  + f"</tr></thead><tbody>{rows}</tbody></table>")
        parts = []
        for name, text in r.configs:
            fn = {"k8s_configmap": "gpucost-sharing-configmap.yaml", "mig_parted": "mig-parted-config.yaml"}[name]
            parts.append(f"<h4>{html.escape(self.t('plan_config_' + name))}</h4>" + _pre(text)
                         + download_link(text, fn, "text/yaml", self.t("plan_download", file=fn)))
        self.share_configs.value = "".join(parts) or f"<p class='gc-help'>{html.escape(self.t('plan_no_config'))}</p>"

    # train ------------------------------------------------------------------------------------
    def _refresh_train(self) -> None:
        tokens = self.val("tokens")
        self.train_result = None
        strategy = None if self.strategy.value == "auto" else self.strategy.value
        r = plan.plan_train(self.model.value, self.train_gpu.value, self.catalog, mode=self.train_mode.value,
                            tokens=tokens, seq_len=self.val("seq_len"), micro_batch=self.val("micro_batch"),
                            currency=self.state.currency, strategy=strategy)
        self.train_result = r
        c = r.chosen
        if c is None:
            self.train_summary.value = f"<p class='gc-warn'>{html.escape(self.t('plan_train_none'))}</p>"
        else:
            self.train_summary.value = "<p>" + html.escape(self.t(
                "plan_train_summary", model=r.model, n=c.min_gpus, gpu=r.gpu_name, strategy=c.strategy,
                tps=f"{c.tokens_per_s:,.0f}", hours=f"{c.time_to_train_hours:,.1f}",
                cost="—" if c.cost is None else f"{c.cost:,.0f}", cur=r.currency)) + "</p>"
        self.train_summary.value += "<ul class='gc-help'>" + "".join(
            f"<li>{self.prose(x)}</li>" for x in r.notes) + "</ul>"
        self.train_summary.value = self.gloss(self.train_summary.value)
        fits = [o for o in r.options if o.min_gpus is not None]
        with self.redraw("train_fig") as fig_:
            fig_.data = []
            fig_.add_bar(x=[o.strategy for o in fits], y=[o.min_gpus for o in fits],
                                   marker=dict(color=["#d62728" if c and o.strategy == c.strategy else "#1f77b4"
                                                      for o in fits]))
            fig_.layout.title = self.t("plan_train_chart")
            fig_.layout.yaxis.title = self.t("plan_col_gpus")
        heads = ("plan_col_strategy", "plan_col_gpus", "plan_col_gib", "plan_col_tps", "plan_col_hours",
                 "plan_col_cost")

        def fmt(v, nd):
            return "—" if v is None else f"{v:,.{nd}f}"

        rows = "".join(
            f"<tr data-strategy='{html.escape(o.strategy)}'><td class='gc-l'>{html.escape(o.strategy)}</td>"
            f"<td>{o.min_gpus or '—'}</td><td>{fmt(o.per_gpu_gib, 1)}</td><td>{fmt(o.tokens_per_s, 0)}</td>"
            f"<td>{fmt(o.time_to_train_hours, 1)}</td><td>{fmt(o.cost, 0)}</td></tr>" for o in r.options)
        self.train_table.value = ("<table><thead><tr>" + "".join(f"<th>{html.escape(self.t(h))}</th>" for h in heads)
                                  + f"</tr></thead><tbody>{rows}</tbody></table>")
        if r.deepspeed_config:
            text = plan.config_json(r.deepspeed_config) + "\n"
            self.train_config.value = (f"<h4>{html.escape(self.t('plan_config_deepspeed'))}</h4>" + _pre(text)
                                       + download_link(text, "ds_config.json", "application/json",
                                                       self.t("plan_download", file="ds_config.json")))
        else:
            self.train_config.value = ""

    # scale ------------------------------------------------------------------------------------
    def _on_trace(self, change) -> None:
        name = "trace.csv"
        try:
            upload = self.read_upload(change, name)
            if upload is None:
                return
            name, content = upload
            text = content.decode("utf-8-sig")
            with self.compute_budget():
                tr = plan.read_trace(io.StringIO(text), label=name)
        except (GpucostError, UnicodeDecodeError) as exc:
            self.show_error(self.trace_msg, str(exc) if isinstance(exc, GpucostError) else f"{name}: not UTF-8 text")
            return
        self._uploaded_trace = tr
        self.trace_msg.value = (f'<span class="gc-msg-ok">{html.escape(self.t("plan_trace_ok", file=name, n=len(tr)))}'
                                "</span>")
        self._run("scale")

    def _refresh_scale(self) -> None:
        tr = self._uploaded_trace or plan.read_trace(self._trace_name)
        self.scale_result = None
        r = plan.plan_scale(tr, self.policy.value, gpu=self.scale_gpu.value, catalog=self.catalog,
                            currency=self.state.currency, max_gpus=self.val("max_gpus"),
                            commit_discount=float(self.discount.value) / 100, spot_bucket=self.spot_bucket.value,
                            startup_hours=self.val("startup"), cooldown_hours=self.val("cooldown"))
        self.scale_result = r
        res = r.result
        com = r.commitment
        self.scale_summary.value = "<p>" + html.escape(self.t(
            "plan_scale_summary", policy=self.opt(res.policy), cost=f"{res.cost:,.0f}", cur=r.currency,
            wait=f"{res.wait_mean_hours:.2f}", p95=f"{res.wait_p95_hours:.2f}", util=f"{res.utilization * 100:.0f}",
            jobs=res.jobs, gpus=res.gpus_max)) + "</p>" + ("<p>" + html.escape(self.t(
                "plan_commit_summary", level=com.level_gpus, disc=f"{com.discount * 100:.1f}", cost=f"{com.cost:,.0f}",
                od=f"{com.cost_on_demand_only:,.0f}", cur=r.currency)) + "</p>" if com else "") + "".join(
            f"<p class='gc-warn'>{self.prose(x)}</p>" for x in r.warnings) + (
            f"<p class='gc-asof'>{html.escape(self.t('plan_prices', od=f'{r.price_per_gpu_hour:.2f}', src=r.price_source, spot='—' if r.spot_price_per_gpu_hour is None else f'{r.spot_price_per_gpu_hour:.2f}', ssrc=r.spot_source, disc=self._disc_src))}</p>")
        heads = ("plan_col_policy", "plan_col_cost", "plan_col_wait", "plan_col_p95", "plan_col_utilization",
                 "plan_col_interruptions")
        rows = "".join(
            f"<tr data-policy='{p.policy}'><td class='gc-l'>{html.escape(self.opt(p.policy))}</td><td>{p.cost:,.0f}</td>"
            f"<td>{p.wait_mean_hours:.2f}</td><td>{p.wait_p95_hours:.2f}</td><td>{p.utilization * 100:.1f} %</td>"
            f"<td>{p.interruptions}</td></tr>" for p in (res, *r.others))
        self.scale_table.value = ("<table><thead><tr>" + "".join(f"<th>{html.escape(self.t(h))}</th>" for h in heads)
                                  + f"</tr></thead><tbody>{rows}</tbody></table>")
        with self.redraw("scale_fig") as fig_:
            fig_.data = []
            times, levels = plan.demand_profile(tr)
            fig_.add_scatter(x=list(times[:-1]), y=list(levels), mode="lines", line_shape="hv",
                                       name=self.t("plan_demand"), line=dict(color="#999"))
            for p in (res, *r.others):
                if p.policy == "fixed":
                    fig_.add_scatter(x=[0, p.makespan_hours], y=[p.gpus_max, p.gpus_max], mode="lines",
                                               name=self.opt(p.policy), line=dict(dash="dot"))
                elif p.fleet_times:
                    fig_.add_scatter(x=list(p.fleet_times), y=list(p.fleet_sizes), mode="lines",
                                               line_shape="hv", name=self.opt(p.policy))
            fig_.layout.title = self.t("plan_scale_chart")
            fig_.layout.xaxis.title = self.t("plan_hours")
            fig_.layout.yaxis.title = self.t("plan_col_gpus")
        with self.redraw("commit_fig") as fig_:
            fig_.data = []
            if com:
                full = plan.commitment_level(tr, com.discount, price_per_gpu_hour=r.price_per_gpu_hour)
                fig_.add_scatter(x=list(full.levels), y=list(full.costs), mode="lines+markers",
                                            name=self.t("plan_commit_curve"))
                fig_.add_scatter(x=[com.level_gpus], y=[com.cost], mode="markers",
                                            marker=dict(size=12, color="#d62728"), name=self.t("plan_commit_best"))
            fig_.layout.title = self.t("plan_commit_chart", cur=r.currency)
            fig_.layout.xaxis.title = self.t("plan_commit_level")

    # -- record ------------------------------------------------------------------------------------
    def results_record(self) -> dict:
        rec = super().results_record()
        rec["tab"] = self.tabs.selected_index
        rec["errors"] = dict(self._errors)
        s = self.share_result
        if s is not None:
            d = s.to_dict()
            rec["share"] = {k: d[k] for k in ("gpu", "mode", "cards_needed", "cards_without_sharing", "cards_saved",
                                              "utilization_gained_pct", "placements", "configs", "warnings")}
            rec["share"]["download_links"] = self.share_configs.value.count('class="gc-download"')
            rec["share"]["summary"] = self.share_summary.value
        t = self.train_result
        if t is not None:
            d = t.to_dict()
            rec["train"] = {k: d[k] for k in ("model", "gpu", "mode", "min_gpus", "zero_stage", "offload", "strategy",
                                              "tokens_per_s", "time_to_train_hours", "cost", "currency",
                                              "deepspeed_config", "engines")}
            rec["train"]["download_links"] = self.train_config.value.count('class="gc-download"')
            rec["train"]["chart_bars"] = len(self.train_fig.data[0].x) if self.train_fig.data else 0
        r = self.scale_result
        if r is not None:
            d = r.to_dict()
            rec["scale"] = {k: d[k] for k in ("policy", "cost", "wait_mean_hours", "wait_p95_hours", "utilization",
                                              "currency", "commitment", "max_gpus", "jobs")}
            rec["scale"]["policies"] = {k: {x: v[x] for x in ("cost", "wait_mean_hours", "utilization")}
                                        for k, v in d["policies"].items()}
            rec["scale"]["summary"] = self.scale_summary.value
        return rec
