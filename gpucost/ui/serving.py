"""Page 07 — serving: what does it cost to serve our traffic, how many cards, and is an API cheaper?"""

from __future__ import annotations

import html

import ipywidgets as w
import plotly.graph_objects as go

from gpucost.errors import GpucostError
from gpucost.fmt import fmt_money
from gpucost.i18n import localize
from gpucost.memory import ENGINE_PROFILES
from gpucost.models import catalog_spec
from gpucost.quant import formats
from gpucost.records import gpu_records
from gpucost.serving import Load, cost_curve, fit_table, plan_serving
from gpucost.specs import SPECS
from gpucost.ui.chart import TEMPLATE
from gpucost.ui.shell import Page

BASES = ("cloud", "new", "used")


class ServingPage(Page):
    page_id = "serve"

    def __init__(self, model: str = "llama-3.1-8b", quant: str = "bf16", engine: str = "vllm",
                 gpu: str = "h100-sxm", gpus: int = 1, requests_per_s: float = 2.0, input_tokens: int = 1000,
                 output_tokens: int = 200, prefix_hit: float = 0.0, peak_ratio: float = 1.0,
                 ttft_ms: float | None = None, tpot_ms: float | None = 50.0, ttft_stat: str = "mean", lang: str = "en",
                 currency: str | None = None, catalog=None):
        self._init = dict(model=model, quant=quant, engine=engine, gpu=gpu, gpus=gpus, requests_per_s=requests_per_s,
                          input_tokens=input_tokens, output_tokens=output_tokens, prefix_hit=prefix_hit,
                          peak_ratio=peak_ratio, ttft_ms=ttft_ms, tpot_ms=tpot_ms, ttft_stat=ttft_stat)
        self.plan = None
        self.fits = None
        super().__init__(lang=lang, currency=currency, catalog=catalog)

    def build(self) -> None:
        i, cat = self._init, self.catalog
        models = [m for m, k in zip(cat.table("models")["id"], cat.table("models")["kind"], strict=True) if k == "llm"]
        self.model = w.Dropdown(options=models, value=i["model"] if i["model"] in models else models[0],
                                layout=w.Layout(width="95%"))
        self.model.add_class("gc-serve-model")
        fmts = list(formats(cat))
        self.quant = w.Dropdown(options=fmts, value=i["quant"] if i["quant"] in fmts else "bf16",
                                layout=w.Layout(width="95%"))
        self.quant.add_class("gc-serve-quant")
        engines = list(ENGINE_PROFILES)
        self.engine = w.Dropdown(options=engines, value=i["engine"] if i["engine"] in engines else "vllm",
                                 layout=w.Layout(width="95%"))
        self.engine.add_class("gc-serve-engine")
        gpus = cat.gpus
        options = list(zip(gpus["name"], gpus["id"], strict=True))
        try:
            gid = cat.gpu_id(i["gpu"])
        except GpucostError:
            gid = "h100-sxm"
        self.card = w.Dropdown(options=options, value=gid, layout=w.Layout(width="95%"))
        self.card.add_class("gc-serve-card")
        stats = SPECS["ttft_stat"].choices
        self.ttft_stat = w.Dropdown(options=[(self.t(f"sv_stat_{x}"), x) for x in stats],
                                    value=i["ttft_stat"] if i["ttft_stat"] in stats else "mean", layout=w.Layout(width="95%"))
        self.ttft_stat.add_class("gc-serve-ttft-stat")
        fields = [self.spec_field(k, SPECS[k], i[k], f"sv_{k}", css=f"gc-serve-{k.replace('_', '-')}")
                  for k in ("gpus", "requests_per_s", "input_tokens", "output_tokens", "prefix_hit", "peak_ratio",
                            "ttft_ms", "tpot_ms")]
        self.inputs.children = [self.field("sv_model", self.model), self.field("sv_quant", self.quant),
                                self.field("sv_engine", self.engine), self.field("sv_card", self.card), *fields,
                                self.field("sv_ttft_stat", self.ttft_stat), *self.shell_inputs()]
        self.summary = w.HTML()
        self.summary.add_class("gc-summary")
        self.details = w.HTML()
        self.details.add_class("gc-table")
        self.apis_html = w.HTML()
        self.apis_html.add_class("gc-table")
        self.fits_html = w.HTML()
        self.fits_html.add_class("gc-table")
        self.fits_html.add_class("gc-serve-fits")
        self.curve_chart = self.figure_box()
        self.results.children = [self.summary, self.curve_chart, self.details, self.apis_html, self.fits_html]
        for wid in (self.model, self.quant, self.engine, self.card, self.ttft_stat):
            wid.observe(lambda _: self.safe_refresh(), names="value")

    def relabel(self) -> None:
        keep = self.ttft_stat.value  # the choice's labels in the page's language, the choice kept
        self.ttft_stat.options = [(self.t(f"sv_stat_{x}"), x) for x in SPECS["ttft_stat"].choices]
        self.ttft_stat.value = keep

    def url_widgets(self) -> dict:
        return {"model": self.model, "quant": self.quant, "engine": self.engine, "gpu": self.card,
                "ttft_stat": self.ttft_stat}

    def refresh(self) -> None:
        cat = self.catalog
        spec = catalog_spec(self.model.value, cat)
        fmt = formats(cat)[self.quant.value]
        load = Load(self.val("requests_per_s"), self.val("input_tokens"), self.val("output_tokens"),
                    self.val("prefix_hit"), self.val("peak_ratio"))
        self.plan = plan_serving(spec, fmt, gpu_records(cat)[self.card.value], load, gpus=self.val("gpus"),
                                 engine=self.engine.value, ttft_ms=self.val("ttft_ms"), tpot_ms=self.val("tpot_ms"),
                                 catalog=cat, currency=self.state.currency, ttft_stat=self.ttft_stat.value)
        self.fits = fit_table(spec, fmt, gpu_records(cat)[self.card.value], gpus=self.val("gpus"),
                              engine=self.engine.value)
        self._draw()
        self._draw_fits()

    def _money(self, v) -> str:
        return "—" if v is None else fmt_money(v, self.state.currency)

    def _draw(self) -> None:
        p, t = self.plan, self.t
        notes = "".join(f"<br>{html.escape(localize(n, self.state.lang))}" for n in p.notes)
        if p.point is None:
            self.summary.value = (f"<p class='gc-answer'><b>{html.escape(t('sv_none', card=p.gpu, n=p.gpus_per_replica))}"
                                  f"</b></p><p class='gc-help'>{notes}</p>")
            self.details.value = self.apis_html.value = ""
            self.clear_figure(self.curve_chart)
            return
        pt = p.point
        best = next((b for b in BASES if p.cost_per_1m_output.get(b) is not None), None)
        answer = t("sv_answer", cards=p.cards, replicas=p.replicas, n=p.gpus_per_replica, card=self.card.label,
                   util=f"{p.utilization * 100:.0f}", tpot=f"{pt.tpot_ms:.0f}",
                   ttft_phrase=t(f"sv_ttft_{p.ttft_stat}", ttft=f"{p.ttft_queued_ms:,.0f}"))
        if best:
            answer += " " + t("sv_answer_cost", basis=t(f"sv_basis_{best}"),
                              cin=self._money(p.cost_per_1m_input[best]), cout=self._money(p.cost_per_1m_output[best]),
                              month=self._money(p.monthly_cost[best]))
        if p.apis:
            a = p.apis[0]
            answer += " " + t("sv_answer_api", api=f"{a['provider']} {a['api_model']}", month=self._money(a["monthly_cost"]))
            even = p.break_even.get(best) if best else None
            if even:
                key = "sv_break_even" if even["utilization"] <= 1 else "sv_break_even_never"
                answer += " " + t(key, basis=t(f"sv_basis_{best}"), rps=f"{even['requests_per_s']:.2f}",
                                  util=f"{even['utilization'] * 100:.0f}",
                                  tokens=f"{even['tokens_per_month'] / 1e6:,.0f}M")
        band = p.capacity_band
        self.summary.value = (f"<p class='gc-answer'><b>{html.escape(answer)}</b></p><p class='gc-help'>"
                              + html.escape(t("sv_capacity", batch=pt.batch, rps=f"{pt.requests_per_s:.2f}",
                                              low=f"{band.get('low', 0):.2f}", high=f"{band.get('high', 0):.2f}",
                                              conc=p.max_concurrency, kv=f"{p.kv_per_sequence_gib:.3f}"))
                              + notes + "</p>")
        self._draw_curve()
        heads = [t("sv_col_basis"), t("sv_col_in"), t("sv_col_out"), t("sv_col_month")]
        rows = "".join(f"<tr><td class='gc-l'>{html.escape(t(f'sv_basis_{b}'))}</td>"
                       f"<td>{self._money(p.cost_per_1m_input.get(b))}</td><td>{self._money(p.cost_per_1m_output.get(b))}</td>"
                       f"<td>{self._money(p.monthly_cost.get(b))}</td></tr>" for b in BASES)
        self.details.value = ("<table><thead><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in heads)
                              + f"</tr></thead><tbody>{rows}</tbody></table>")
        aheads = [t("sv_col_api"), t("sv_col_in"), t("sv_col_out"), t("sv_col_month"), t("sv_col_asof")]
        arows = "".join(f"<tr><td class='gc-l'>{html.escape(a['provider'] + ' ' + a['api_model'])}</td>"
                        f"<td>{self._money(a['input_per_1m'])}</td><td>{self._money(a['output_per_1m'])}</td>"
                        f"<td>{self._money(a['monthly_cost'])}</td><td>{html.escape(a['as_of'])}</td></tr>"
                        for a in p.apis[:12])
        self.apis_html.value = (f"<p class='gc-help'>{html.escape(t('sv_apis_help'))}</p>" if not p.apis else
                                "<div class='gc-wide'><table><thead><tr>"
                                + "".join(f"<th>{html.escape(h)}</th>" for h in aheads)
                                + f"</tr></thead><tbody>{arows}</tbody></table></div>")

    def _draw_curve(self) -> None:
        """Monthly cost against the average load: each way of getting the cards, and the cheapest API."""
        p, t = self.plan, self.t
        rows = cost_curve(p)
        cur = p.currency
        fig = go.Figure(layout=dict(
            height=360, margin=dict(l=70, r=20, t=50, b=50), template=TEMPLATE,
            legend=dict(orientation="h", y=-0.25), title=t("sv_chart_title"),
            xaxis=dict(title=t("sv_chart_x"), type="log"), yaxis=dict(title=t("sv_chart_y", cur=cur), type="log")))
        x = [r["requests_per_s"] for r in rows]
        for basis, color in (("cloud", "#1f77b4"), ("new", "#2ca02c"), ("used", "#9467bd")):
            if rows and rows[0].get(basis) is not None:
                fig.add_scatter(x=x, y=[r[basis] for r in rows], mode="lines", line=dict(shape="hv", color=color),
                                name=t(f"sv_basis_{basis}"))
        if p.apis:
            a = p.apis[0]
            fig.add_scatter(x=x, y=[r["api"] for r in rows], mode="lines", line=dict(color="#d62728", dash="dash"),
                            name=f"{a['provider']} {a['api_model']}")
        fig.add_vline(x=p.load.requests_per_s, line=dict(color="#7f7f7f", dash="dot"))
        self.show_figure(self.curve_chart, fig)

    def _draw_fits(self) -> None:
        f, t = self.fits, self.t
        ctx_rows = "".join(f"<tr><td>{r.context:,}</td><td>{r.kv_per_sequence_gib:.3f}</td>"
                           f"<td>{r.max_concurrency:,}</td></tr>" for r in f.by_context)
        conc_rows = "".join(f"<tr><td>{r.concurrency:,}</td><td>{r.longest_context:,}</td></tr>"
                            for r in f.by_concurrency)
        head = (f"<p class='gc-help'><b>{html.escape(t('sv_fits_title', n=f.gpus_per_replica, card=self.card.label))}"
                f"</b> {html.escape(t('sv_fits_help', pool=f'{f.by_context[0].kv_pool_gib:.1f}', top=f'{f.max_context:,}'))}"
                "</p>")
        self.fits_html.value = (
            head + "<div class='gc-wide' style='display:flex;gap:2em;flex-wrap:wrap'>"
            + "<table><thead><tr>" + "".join(f"<th>{html.escape(t(k))}</th>" for k in
                                             ("sv_fits_ctx", "sv_fits_kv", "sv_fits_conc"))
            + f"</tr></thead><tbody>{ctx_rows}</tbody></table>"
            + "<table><thead><tr>" + "".join(f"<th>{html.escape(t(k))}</th>" for k in
                                             ("sv_fits_users", "sv_fits_longest"))
            + f"</tr></thead><tbody>{conc_rows}</tbody></table></div>")

    def results_record(self) -> dict:
        rec = super().results_record()
        if self.plan is not None:
            rec.update({"plan": self.plan.to_dict(), "summary": self.summary.value})
        if self.fits is not None:
            rec["fits"] = self.fits.to_dict()
        return rec
