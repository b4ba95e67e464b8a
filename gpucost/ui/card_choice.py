"""Page 01 — card choice: which card gives me the most for my money?"""

from __future__ import annotations

import html

import ipywidgets as w
import pandas as pd
import plotly.graph_objects as go

from gpucost.cards import HOST_GROUPS, METRICS, PRECISION_COLUMN, Need, card_table, rank_cards
from gpucost.fmt import fmt_amount, fmt_money
from gpucost.i18n import localize
from gpucost.pricing import history_summary, price_history
from gpucost.specs import SPECS
from gpucost.ui.chart import TEMPLATE
from gpucost.ui.shell import Page

SORT_CHOICES = METRICS + ("price", "vram_gib", "mem_bandwidth_gbps")
MODULES = ("sxm", "oam", "superchip")


class CardChoicePage(Page):
    page_id = "cards"

    def __init__(self, min_vram_gib: float = 0.0, precision: str = "bf16", budget: float | None = None,
                 price_basis: str = "new", sort_by: str = "tflops_per_1k", vendor: str = "", host: str = "any",
                 lang: str = "en", currency: str | None = None, catalog=None):
        self._init = dict(min_vram_gib=min_vram_gib, precision=precision, budget=budget,
                          price_basis=price_basis, sort_by=sort_by, vendor=vendor, host=host)
        self.ranking = None
        super().__init__(lang=lang, currency=currency, catalog=catalog)

    # -- build -----------------------------------------------------------------------------------
    def build(self) -> None:
        i = self._init
        self.vram = w.FloatSlider(value=float(i["min_vram_gib"]), min=0, max=192, step=1,
                                  continuous_update=False, readout_format=".0f", layout=w.Layout(width="95%"))
        self.vram.add_class("gc-vram")
        self.host = w.ToggleButtons(options=list(HOST_GROUPS), value=i["host"] if i["host"] in HOST_GROUPS else "any",
                                    style={"button_width": "96px"})
        self.host.add_class("gc-host")
        self.precision = w.Dropdown(options=list(PRECISION_COLUMN), value=i["precision"],
                                    layout=w.Layout(width="95%"))
        self.precision.add_class("gc-precision")
        self.basis = w.ToggleButtons(options=[("new", "new"), ("used", "used"), ("cloud", "cloud")],
                                     value=i["price_basis"], style={"button_width": "72px"})
        self.basis.add_class("gc-basis")
        vendors = self._vendors = sorted(set(self.catalog.gpus["vendor"]))
        self.vendor = w.Dropdown(options=[("", "")] + [(v, v) for v in vendors],
                                 value=i["vendor"] if i["vendor"] in vendors else "", layout=w.Layout(width="95%"))
        self.vendor.add_class("gc-vendor")
        self.sort = w.Dropdown(options=list(SORT_CHOICES), value=i["sort_by"], layout=w.Layout(width="95%"))
        self.sort.add_class("gc-sort")
        budget = self.spec_field("budget", SPECS["price"], i["budget"], "cc_budget", css="gc-budget")
        self.budget = self.fields["budget"].widget
        self.budget_msg = self.fields["budget"].message
        self.inputs.children = [
            self.field("cc_vram", self.vram, "cc_vram_help"), self.field("cc_host", self.host, "cc_host_help"),
            self.field("cc_precision", self.precision, "cc_precision_help"),
            self.field("cc_basis", self.basis), budget,
            self.field("cc_vendor", self.vendor), self.field("cc_sort", self.sort), *self.shell_inputs()]

        self.summary = w.HTML()
        self.summary.add_class("gc-summary")
        self.metric_help = w.HTML()
        self.chart = self.figure_box()
        self.fig = None
        self.table = w.HTML()
        self.table.add_class("gc-table")
        self.excluded = w.HTML()
        # on the cloud basis: how the best card's rental price moved, offer by offer (snapshot and updates)
        self.history_note = w.HTML()
        self.history_note.add_class("gc-history-note")
        self.history_chart = self.figure_box("gc-history")
        self.history_fig = None
        self.history: dict | None = None
        self.results.children = [self.summary, self.chart, self.metric_help, self.history_note, self.history_chart,
                                 self.table, self.excluded]
        for wid in (self.vram, self.host, self.precision, self.basis, self.vendor, self.sort):
            wid.observe(lambda _: self.safe_refresh(), names="value")

    def relabel(self) -> None:
        vendor_val = self.vendor.value
        self.vendor.options = [(self.t("any"), "")] + [(v, v) for v in self._vendors]
        self.vendor.value = vendor_val
        basis_val = self.basis.value
        self.basis.options = [(self.t(f"cc_basis_{b}"), b) for b in ("new", "used", "cloud")]
        self.basis.value = basis_val
        host_val = self.host.value
        self.host.options = [(self.t(f"cc_host_{h}"), h) for h in HOST_GROUPS]
        self.host.value = host_val
        sort_val = self.sort.value
        self.sort.options = [(self.t(f"cc_metric_{m}"), m) for m in SORT_CHOICES]
        self.sort.value = sort_val
        self.metric_help.value = "<ul class='gc-help'>" + "".join(
            f"<li><b>{html.escape(self.t(f'cc_metric_{m}'))}</b>: {html.escape(self.t(f'cc_metric_{m}_help'))}</li>"
            for m in METRICS) + "</ul>"

    def url_widgets(self) -> dict:
        return {"min_vram_gib": self.vram, "host": self.host, "precision": self.precision, "basis": self.basis,
                "vendor": self.vendor, "sort": self.sort}

    # -- compute -----------------------------------------------------------------------------------
    def refresh(self) -> None:
        need = Need(min_vram_gib=float(self.vram.value), precision=self.precision.value,
                    budget=self.val("budget"), price_basis=self.basis.value, currency=self.state.currency,
                    vendors=(self.vendor.value,) if self.vendor.value else (), host=self.host.value)
        self.ranking = rank_cards(need, self.catalog, table=card_table(self.catalog, self.state.currency),
                                  sort_by=self.sort.value)
        self._draw()

    def _price(self, value: float) -> str:
        r = self.ranking
        text = fmt_money(value, r.need.currency)
        return self.t("cc_per_hour", price=text) if r.need.price_basis == "cloud" else text

    def _answer(self) -> str:
        r = self.ranking
        cards = r.cards
        if not cards:
            return f"<p>{html.escape(self.t('no_result'))}</p>"
        best = cards[0]
        metric = r.sort_by
        value = getattr(best, metric, None)
        shown = fmt_amount(value) if isinstance(value, float) else str(value)
        parts = [self.t("cc_answer", n=len(cards), best=best.name, metric=self.t(f"cc_metric_{metric}"),
                        value=shown, price=self._price(best.price))]
        if best.form_factor in MODULES:
            pc = next((c for c in cards if c.host_type in HOST_GROUPS["pc"]), None)
            parts.append(self.t("cc_best_module", best=best.name, form=self.t(f"form_{best.form_factor}")))
            if pc is not None:
                parts.append(self.t("cc_best_pc", pc=pc.name, price=self._price(pc.price), rank=pc.rank))
        front = [c.name for c in cards if c.on_frontier]
        return ("<p class='gc-answer'><b>" + html.escape(parts[0]) + "</b> " + html.escape(" ".join(parts[1:]))
                + "</p><p class='gc-help'>" + html.escape(self.t("cc_frontier_line", frontier=", ".join(front)))
                + "</p>")

    def _draw(self) -> None:
        r = self.ranking
        cur = r.need.currency
        unit = self.t("cc_unit_hour", cur=cur) if r.need.price_basis == "cloud" else cur
        prec = r.need.precision.upper()
        perf_unit = "TOPS" if r.need.precision == "int8" else "TFLOPS"
        cards = r.cards
        self.summary.value = self.gloss(self._answer())
        front = sorted((c for c in cards if c.on_frontier), key=lambda c: c.price)
        hover = [f"{c.name}<br>{c.vram_gib:g} GiB, {c.mem_bandwidth_gbps:,.0f} GB/s<br>"
                 f"{c.throughput:,.1f} {perf_unit} {prec}<br>{self._price(c.price)}<br>"
                 f"{fmt_amount(c.tflops_per_1k)} {perf_unit}/{'1' if r.need.price_basis == 'cloud' else '1k'}"
                 for c in cards]
        fig = go.Figure(layout=dict(
            height=430, margin=dict(l=60, r=20, t=50, b=50), template=TEMPLATE,
            legend=dict(orientation="h", y=-0.2), title=self.t("cc_chart_title", prec=prec),
            xaxis=dict(title=self.t("cc_axis_price", unit=unit), type="log"),
            yaxis=dict(title=self.t("cc_axis_perf", unit=perf_unit, prec=prec))))
        fig.add_scatter(x=[c.price for c in cards], y=[c.throughput for c in cards], mode="markers",
                        name=self.t("cc_cards"), text=[c.name for c in cards], hovertext=hover,
                        hoverinfo="text", marker=dict(size=[6 + c.vram_gib ** 0.5 * 2 for c in cards],
                                                      color=["#d62728" if c.on_frontier else "#1f77b4"
                                                             for c in cards], opacity=0.8))
        fig.add_scatter(x=[c.price for c in front], y=[c.throughput for c in front], mode="lines+text",
                        name=self.t("cc_frontier"), text=[c.name for c in front], textposition="top left",
                        line=dict(color="#d62728", dash="dot"), hoverinfo="skip")
        self.fig = self.show_figure(self.chart, fig)
        self._draw_history()
        self.table.value = self._table_html()
        lang = self.state.lang
        self.excluded.value = (f"<details><summary>{html.escape(self.t('cc_excluded', n=len(r.excluded)))}"
                               "</summary><ul class='gc-help'>" + "".join(
                                   f"<li>{html.escape(i)}: {html.escape(localize(why, lang))}</li>"
                                   for i, why in r.excluded) + "</ul></details>")

    def _draw_history(self) -> None:
        """The best card's cloud prices over time (cloud basis only): every offer at the date it held, spot
        as crosses, offers outside the user's market faded; the line says how fresh the newest is."""
        r = self.ranking
        self.history = None
        if r.need.price_basis != "cloud" or not r.cards:
            self.history_note.value = ""
            self.clear_figure(self.history_chart)
            self.history_fig = None
            return
        best = r.cards[0]
        h = price_history(self.catalog, best.id, r.need.currency)
        hs = history_summary(h)
        self.history = {"gpu": best.id, "points": hs["points"], "in_market": hs["in_market"], "newest": hs["newest"]}
        note = (self.t("cc_history_note", card=best.name, n=hs["points"], mine=hs["in_market"], newest=hs["newest"],
                       days=hs["age_days"])
                if hs["newest"] else self.t("cc_history_note_none", card=best.name, n=hs["points"]))
        self.history_note.value = f"<p class='gc-help'>{self.prose(note)}</p>"
        fig = go.Figure(layout=dict(
            height=320, margin=dict(l=60, r=20, t=50, b=50), template=TEMPLATE, legend=dict(orientation="h", y=-0.25),
            title=self.t("cc_history_title", card=best.name),
            yaxis=dict(title=self.t("cc_unit_hour", cur=r.need.currency), rangemode="tozero")))
        for provider, g in h.groupby("provider", sort=True):
            ok = (g["in_market"] & g["kind_ok"]).to_numpy()
            fig.add_scatter(x=pd.to_datetime(g["seen"].str[:10]), y=g["per_gpu"], mode="markers", name=str(provider),
                            hovertext=[f"{provider} {i}<br>{'spot' if sp else self.t('cc_history_ondemand')}"
                                       f"<br>{fmt_money(v, r.need.currency)}/h, {str(d)[:10]}"
                                       for i, sp, v, d in zip(g["InstanceType"], g["spot"], g["per_gpu"], g["seen"],
                                                              strict=True)],
                            hoverinfo="text", marker=dict(symbol=["x" if sp else "circle" for sp in g["spot"]],
                                                          opacity=[0.9 if o else 0.25 for o in ok], size=9))
        self.history_fig = self.show_figure(self.history_chart, fig)

    def _table_html(self) -> str:
        r = self.ranking
        lang = self.state.lang
        price_head = self.t("cc_col_price_cur", cur=r.need.currency + ("/h" if r.need.price_basis == "cloud" else ""))
        heads = [self.t(h) for h in ("cc_col_rank", "cc_col_card", "cc_col_vram", "cc_col_bw", "cc_col_perf")]
        heads += [price_head] + [self.t(h) for h in ("cc_metric_tflops_per_1k", "cc_metric_gbps_per_1k",
                                                     "cc_metric_vram_per_1k", "cc_metric_tflops_per_watt",
                                                     "cc_col_warnings")]
        rows = []
        for c in r.cards:
            warn = "<br>".join(html.escape(localize(x, lang)) for x in c.warnings)
            rows.append(
                f"<tr class='{'gc-frontier' if c.on_frontier else ''}' data-id='{c.id}'><td>{c.rank}</td>"
                f"<td class='gc-l'>{html.escape(c.name)}</td><td>{c.vram_gib:g}</td>"
                f"<td>{c.mem_bandwidth_gbps:,.0f}</td><td>{c.throughput:,.1f}</td><td>{fmt_amount(c.price)}</td>"
                f"<td>{fmt_amount(c.tflops_per_1k)}</td><td>{fmt_amount(c.gbps_per_1k)}</td>"
                f"<td>{fmt_amount(c.vram_per_1k)}</td><td>{c.tflops_per_watt:,.3f}</td>"
                f"<td class='gc-l gc-help'>{warn}</td></tr>")
        return ("<div class='gc-wide'><table><thead><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in heads)
                + "</tr></thead><tbody>" + "".join(rows) + "</tbody></table></div>")

    def results_record(self) -> dict:
        rec = super().results_record()
        r = self.ranking
        if r is None:
            return rec
        rec.update({
            "need": {"min_vram_gib": r.need.min_vram_gib, "precision": r.need.precision,
                     "budget": r.need.budget, "price_basis": r.need.price_basis, "host": r.need.host},
            "sort_by": r.sort_by,
            "ranked_ids": [c.id for c in r.cards],
            "cards": [c.to_dict() for c in r.cards[:10]],
            "frontier": list(r.frontier),
            "excluded_count": len(r.excluded),
            "chart_points": len(self.fig.data[0].x) if self.fig is not None and self.fig.data else 0,
            "history": self.history,
            "summary": self.summary.value,
        })
        return rec
