"""Page 06 — rules of thumb, tested: one card per claim with its verdict, the numbers behind it, a small
chart, and the inputs to change to see when the verdict flips. Every number comes from
:mod:`gpucost.claims`, which computes it with the engine that owns the quantity."""

from __future__ import annotations

import html
import math
import re
from dataclasses import replace

import ipywidgets as w
import plotly.graph_objects as go

from gpucost import claims, tco
from gpucost.catalog import derived
from gpucost.errors import GpucostError
from gpucost.ui.shell import Page, spec_text

VERDICT_COLORS = {"holds": "#1d6b2a", "overstated": "#a40000", "understated": "#1f5fa8", "depends": "#8a5300",
                  "unsupported": "#666666"}
CARD_CSS = """
<style>
.gc-claim-card {border:1px solid #d5dbe3; border-radius:6px; padding:0.5em 0.8em; margin:0 0 0.9em 0;
  background:#fcfdff}
.gc-claim-head {font-size:1.02em; line-height:1.4}
.gc-badge {display:inline-block; color:#fff; border-radius:4px; padding:0 0.5em; margin-right:0.5em;
  font-size:0.85em; font-weight:700; text-transform:uppercase; letter-spacing:0.02em}
.gc-claim-quote {color:#666; font-size:0.85em; margin:0.1em 0 0.3em 0}
.gc-claim-condition {margin:0.3em 0; line-height:1.4}
.gc-claim-inputs {display:flex; flex-wrap:wrap; gap:0.2em 0.8em}
.gc-claim-numbers table {border-collapse:collapse; font-size:0.9em}
.gc-claim-numbers td {padding:1px 8px; border-bottom:1px solid #eee}
.gc-claim-numbers td.gc-v {text-align:right; font-variant-numeric:tabular-nums}
</style>
"""
_IN_LAYOUT = w.Layout(width="280px")
_STYLE = {"description_width": "150px"}
_SPLIT = re.compile(r"[;\n]+|,(?=\s*[A-Za-z_][\w.]*\s*=)")


def parse_settings(text: str) -> dict[str, str]:
    """``"spot_discount.provider=azure; currency=USD"`` (``;``, newline or ``,`` between settings)."""
    out: dict[str, str] = {}
    for part in _SPLIT.split(str(text or "")):
        if part.strip():
            k, v = claims.parse_setting(part)
            out[k] = v
    return out


def _fmt(v, unit: str = "") -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "—"
    if isinstance(v, bool):
        return "✓" if v else "✗"
    if isinstance(v, (int, float)):
        a = abs(v)
        s = f"{v:,.0f}" if a >= 100 or (isinstance(v, int)) else (f"{v:.1f}" if a >= 10 else f"{v:.2f}")
    else:
        s = str(v)
    return f"{s} {unit}".strip() if unit else s


class RulesOfThumbPage(Page):
    page_id = "claims"

    def __init__(self, settings: str = "", only: str = "", lang: str = "en", currency: str | None = None,
                 catalog=None):
        self._settings = parse_settings(settings)
        ids = [i.strip() for i in str(only or "").split(",") if i.strip()]
        for i in ids:
            claims.get_claim(i)
        self._ids = ids or claims.claim_ids()
        self.results_by_id: dict[str, claims.ClaimResult] = {}
        self.card_errors: dict[str, str] = {}
        self.cards: dict[str, dict] = {}
        self.figs: dict[str, object] = {}
        self._card_fields: dict[str, list[str]] = {}
        super().__init__(lang=lang, currency=currency, catalog=catalog)

    # -- build -----------------------------------------------------------------------------------
    def _initial(self) -> dict[str, dict]:
        per = claims.split_overrides(self._settings)
        out = {}
        for cid in self._ids:
            vals = claims.default_inputs(cid, self.catalog)
            vals.update(per[cid])
            out[cid] = vals
        return out

    def _widget_for(self, cid: str, spec: claims.InputSpec, value) -> w.Widget:
        """The input's box (label above, as every page's fields), its widget in :attr:`cards`."""
        k = spec.kind
        if k == "bool":
            wid = w.Checkbox(value=bool(str(value).lower() in ("1", "true", "yes") if isinstance(value, str)
                                        else value), indent=False, layout=_IN_LAYOUT)
            self.label(wid, f"claims_in_{spec.name}")
        elif k in ("float", "int", "optfloat"):
            name = f"{cid}.{spec.name}"
            number = spec.spec if k != "optfloat" else replace(spec.spec, optional=True)
            box = self.spec_field(name, number, None, f"claims_in_{spec.name}", css=f"gc-in-{spec.name.replace('_', '-')}",
                                  on_change=lambda _ch, cid=cid: self._on_input(cid))
            self.fields[name].widget.value = "" if value is None else spec_text(number, value)
            self.fields[name].last = self._checked(number, value)
            box.layout = w.Layout(width="280px", margin="0 0 0.2em 0")
            self._card_fields.setdefault(cid, []).append(name)
            return box
        elif k == "str":
            wid = w.Text(value="" if value is None else str(value), continuous_update=False,
                         layout=w.Layout(width="95%"))
        else:
            choices = claims.input_choices(spec, self.catalog)
            if k in ("gpu", "gpu_or_any") and str(value):
                try:
                    value = claims.gpu_id(self.catalog, str(value))
                except GpucostError:
                    pass
            val = str(value) if value is not None else ""
            opts = list(choices)
            if val not in opts:
                opts.append(val)  # a value set by the notebook; the engine says what is wrong with it
            wid = w.Dropdown(options=self._options(spec, opts), value=val, layout=w.Layout(width="95%"))
        wid.add_class(f"gc-in-{spec.name.replace('_', '-')}")
        wid.observe(lambda _ch, cid=cid: self._on_input(cid), names="value")
        self._widget = wid
        if k == "bool":
            return wid
        box = self.field(f"claims_in_{spec.name}", wid)
        box.layout = w.Layout(width="280px", margin="0 0 0.2em 0")
        return box

    @staticmethod
    def _checked(spec, value):
        try:
            return spec.check(value)
        except GpucostError:
            return None

    def _options(self, spec: claims.InputSpec, values) -> list[tuple[str, str]]:
        if spec.kind in ("gpu", "gpu_or_any"):
            names = derived(self.catalog.gpus, "option_names", lambda g: {
                i: f"{n} ({v:g} GiB)" for i, n, v in zip(g["id"], g["name"], g["vram_gib"], strict=True)})
            return [(self.t("any") if v == "" else names.get(v, v), v) for v in values]
        if spec.kind == "scenario":
            titles = {s["name"]: (s.get("title_zh") if self.state.lang == "zh" and s.get("title_zh") else s["title"])
                      for s in tco.list_scenarios()}
            return [(titles.get(v, v).split(" — ")[0].split("——")[0], v) for v in values]
        return [(self.t("any") if v == "" else self.opt(v), v) for v in values]

    def build(self) -> None:
        init = self._initial()
        self.filter = w.ToggleButtons(options=[("all", "all")] + [(v, v) for v in claims.VERDICTS], value="all",
                                      style={"button_width": "104px"})
        self.filter.add_class("gc-claims-filter")
        self.filter.observe(lambda _: self._apply_filter(), names="value")
        self.reset = w.Button(icon="undo")
        self.reset.add_class("gc-claims-reset")
        self.label(self.reset, "claims_reset")
        self.reset.on_click(lambda _b: self._reset())
        self.summary = w.HTML()
        self.summary.add_class("gc-claims-summary")
        self.legend = w.HTML()
        self.inputs.children = [self.help_line("claims_intro"), self.label(w.HTML(), "claims_filter", "value"),
                                self.filter, self.summary, self.legend, self.reset, *self.shell_inputs()]
        boxes = [w.HTML(CARD_CSS)]
        for cid in self._ids:
            d = claims.get_claim(cid)
            # one HTML widget above the chart (verdict, claim, quote, condition, numbers) and one under the
            # inputs (an input error, the sources): 18 cards of few widgets keep the page quick to load
            text, foot = w.HTML(), w.HTML()
            text.add_class("gc-claim-text")
            foot.add_class("gc-claim-msg")
            widgets, shown = {}, []
            for spec in d.inputs:
                if spec.kind == "currency":
                    continue  # the page's currency drives every claim
                shown.append(self._widget_for(cid, spec, init[cid][spec.name]))
                field = self.fields.get(f"{cid}.{spec.name}")
                widgets[spec.name] = field.widget if field is not None else self._widget
            in_box = w.Box(shown, layout=w.Layout(display="flex", flex_flow="row wrap", width="100%"))
            in_box.add_class("gc-claim-inputs")
            in_title = self.label(w.HTML(), "claims_inputs", "value")
            chart = self.figure_box("gc-claim-chart")
            box = w.VBox([text, chart, in_title, in_box, foot], layout=w.Layout(width="100%"))
            box.add_class("gc-claim-card")
            box.add_class(f"gc-claim-{cid.replace('_', '-')}")
            self.cards[cid] = {"box": box, "head": text, "msg": foot, "details": "", "error": None,
                               "widgets": widgets, "chart": chart}
            boxes.append(box)
        self.results.children = boxes

    def relabel(self) -> None:
        fv = self.filter.value
        self.filter.options = [(self.t("claims_all"), "all")] + [(self.t(f"claims_verdict_{v}"), v)
                                                                 for v in claims.VERDICTS]
        self.filter.value = fv
        for cid, card in self.cards.items():
            specs = {s.name: s for s in claims.get_claim(cid).inputs}
            for name, wid in card["widgets"].items():
                if isinstance(wid, w.Dropdown):
                    val = wid.value
                    wid.options = self._options(specs[name], [o[1] for o in wid.options])
                    wid.value = val
        self.legend.value = "<ul class='gc-help'>" + "".join(
            f"<li><b style='color:{VERDICT_COLORS[v]}'>{html.escape(self.t(f'claims_verdict_{v}'))}</b>: "
            f"{html.escape(self.t(f'claims_verdict_{v}_help'))}</li>" for v in claims.VERDICTS) + "</ul>"

    # -- compute -----------------------------------------------------------------------------------
    def _values(self, cid: str) -> dict:
        d = claims.get_claim(cid)
        card = self.cards[cid]
        vals = {}
        for spec in d.inputs:
            if spec.kind == "currency":
                vals[spec.name] = self.state.currency
            elif f"{cid}.{spec.name}" in self.fields:
                vals[spec.name] = self.val(f"{cid}.{spec.name}")
            else:
                vals[spec.name] = card["widgets"][spec.name].value
        return vals

    def _compute(self, cid: str) -> None:
        card = self.cards[cid]
        for name in self._card_fields.get(cid, ()):
            self.invalid.pop(name, None)
        try:
            res = claims.evaluate(cid, self.catalog, **self._values(cid))
        except GpucostError as exc:
            self.card_errors[cid] = card["error"] = str(exc)
            self._draw_foot(cid)
            self._mark(cid)
            raise
        self.card_errors.pop(cid, None)
        card["error"] = None
        self.results_by_id[cid] = res
        self._draw(cid, res)
        self._mark(cid)

    def _mark(self, cid: str) -> None:
        """Grey a card whose verdict is not that of the inputs shown (an invalid input, a rejected value)."""
        card = self.cards[cid]
        bad = cid in self.card_errors or any(n in self.invalid for n in self._card_fields.get(cid, ()))
        for part in (card["head"], card["chart"]):
            (part.add_class if bad else part.remove_class)("gc-stale")

    def show_validity(self) -> None:
        """Cards are marked one by one (see :meth:`_mark`); the banner names what to fix."""
        super().show_validity()
        self.results.remove_class("gc-stale")

    def refresh(self) -> None:
        first = None
        for cid in self._ids:
            try:
                self._compute(cid)
            except GpucostError as exc:
                first = first or exc
        self._summarize()
        if first is not None:
            raise first

    def _on_input(self, cid: str) -> None:
        if self.refresh_pending():  # relabelling or a reset: every card is recomputed once, after it
            return
        try:
            self._compute(cid)
        except GpucostError:
            pass
        self._summarize()
        self.error = next(iter(self.card_errors.values())) if self.card_errors else None
        self.show_validity()

    def _reset(self) -> None:
        self._settings = {}
        init = self._initial()
        with self.refresh_once():
            for cid, card in self.cards.items():
                for name, wid in card["widgets"].items():
                    if f"{cid}.{name}" in self.fields:
                        continue
                    v = init[cid][name]
                    wid.value = ("" if v is None else str(v)) if isinstance(wid, w.Text) else v
                for fname in self._card_fields.get(cid, ()):
                    f = self.fields[fname]
                    v = init[cid][fname.split(".", 1)[1]]
                    f.widget.value = spec_text(f.spec, v)
            self.safe_refresh()

    def _summarize(self) -> None:
        counts = {v: 0 for v in claims.VERDICTS}
        for cid in self._ids:
            r = self.results_by_id.get(cid)
            if r is not None:
                counts[r.verdict] += 1
        self.summary.value = "<p>" + html.escape(self.t("claims_summary", n=len(self._ids), **counts)) + "</p>"
        self._apply_filter()

    def _apply_filter(self) -> None:
        want = self.filter.value
        for cid, card in self.cards.items():
            r = self.results_by_id.get(cid)
            show = want == "all" or (r is not None and r.verdict == want)
            card["box"].layout.display = None if show else "none"

    # -- draw ------------------------------------------------------------------------------------
    def _draw(self, cid: str, r: claims.ClaimResult) -> None:
        zh = self.state.lang == "zh"
        card = self.cards[cid]
        color = VERDICT_COLORS[r.verdict]
        rows = "".join(f"<tr><td>{html.escape(n['label_zh'] if zh else n['label'])}</td>"
                       f"<td class='gc-v'>{html.escape(_fmt(n['value'], n['unit']))}</td></tr>" for n in r.numbers)
        card["head"].value = (
            f'<div class="gc-claim-head"><span class="gc-badge gc-verdict-{r.verdict}" '
            f'style="background:{color}">{html.escape(self.t(f"claims_verdict_{r.verdict}"))}'
            f'</span><b>{html.escape(r.claim_zh if zh else r.claim)}</b></div>'
            f'<div class="gc-claim-quote">{html.escape(self.t("claims_quote"))} 「{html.escape(r.quote_zh)}」</div>'
            f'<p class="gc-claim-condition">{html.escape(r.condition_zh if zh else r.condition)}</p>'
            f'<div class="gc-claim-numbers"><table>{rows}</table></div>')
        src = "".join(f"<li>{html.escape(s)}</li>" for s in r.sources)
        eng = ", ".join(html.escape(e) for e in r.engines)
        card["details"] = (f"<details><summary>{html.escape(self.t('claims_details'))}</summary>"
                           f"<p class='gc-help'>{html.escape(self.t('claims_engines'))}: {eng}</p>"
                           f"<ul class='gc-help'>{src}</ul></details>")
        self._draw_foot(cid)
        if r.chart:
            self.figs[cid] = self.show_figure(card["chart"], self._figure(r.chart, zh))
        else:
            self.clear_figure(card["chart"])
            self.figs.pop(cid, None)

    def _draw_foot(self, cid: str) -> None:
        """The card's last line: its input error, if any (as :meth:`show_error` words it), then its sources."""
        card = self.cards[cid]
        err = card["error"]
        msg = (f'<span class="gc-msg-error">{html.escape(self.t("error_input", error=err))}</span>'
               if err else "")
        card["msg"].value = msg + card["details"]

    @staticmethod
    def _figure(ch: dict, zh: bool) -> go.Figure:
        x = ch.get("x_zh") if zh and ch.get("x_zh") else ch.get("x", [])
        # template "none" with a light grid: a full template is deep-copied per figure (~50 ms each, and a
        # page of 16 small charts is rebuilt on every language or currency change)
        axis = dict(showgrid=True, gridcolor="#e8e8e8", zerolinecolor="#bbbbbb", linecolor="#999999")
        fig = go.Figure(layout=dict(
            height=240, margin=dict(l=55, r=15, t=10, b=40), template="none", paper_bgcolor="white",
            plot_bgcolor="white", font=dict(size=11), showlegend=ch["kind"] == "stack",
            legend=dict(orientation="h", y=-0.25),
            xaxis=dict(axis, title=(ch.get("x_title_zh") if zh else ch.get("x_title")) or None,
                       type="category" if ch["kind"] != "line" else None),
            yaxis=dict(axis, title=(ch.get("y_title_zh") if zh else ch.get("y_title")) or None)))
        if ch["kind"] == "bar":
            fig.add_bar(x=x, y=ch["y"], marker_color="#3b6ea8", hovertemplate="%{x}: %{y:,.3g}<extra></extra>")
        elif ch["kind"] == "stack":
            fig.update_layout(barmode="stack")
            for s in ch["series"]:
                fig.add_bar(x=x, y=s["y"], name=(s.get("name_zh") if zh and s.get("name_zh") else s["name"]))
        elif ch["kind"] == "line":
            fig.add_scatter(x=ch["x"], y=ch["y"], mode="lines", line=dict(color="#3b6ea8"), showlegend=False)
            if ch.get("marker"):
                fig.add_scatter(x=[ch["marker"][0]], y=[ch["marker"][1]], mode="markers",
                                marker=dict(size=11, color="#d62728"), showlegend=False)
        if ch.get("ref") is not None:
            fig.add_hline(y=ch["ref"], line_dash="dot", line_color="#d62728",
                          annotation_text=ch.get("ref_label", ""), annotation_position="top left")
        if ch.get("band"):
            lo, hi = ch["band"]
            fig.add_hrect(y0=lo, y1=hi, fillcolor="#1d6b2a", opacity=0.12, line_width=0)
        return fig

    # -- record ------------------------------------------------------------------------------------
    def results_record(self) -> dict:
        rec = super().results_record()
        rec.update({
            "ids": list(self._ids),
            "verdicts": {cid: r.verdict for cid, r in self.results_by_id.items()},
            "claims": [r.to_dict() for r in self.results_by_id.values()],
            "card_errors": dict(self.card_errors),
            "charts": {cid: len(f.data) for cid, f in self.figs.items()},
            "shown": [cid for cid, c in self.cards.items() if c["box"].layout.display != "none"],
            "summary": self.summary.value,
        })
        return rec
