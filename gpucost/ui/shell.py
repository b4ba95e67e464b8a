"""The app shell every page shares: header (title, navigation, language, currency), price upload,
as-of line, and a two-column layout (inputs left, results right; stacked on a narrow screen).

A page subclasses :class:`Page`, builds its inputs and results, and implements ``refresh()`` (compute
with the engines, show) and ``record()`` (the numbers a test or papermill reads back). State lives on
widget instances and the traitlets of :class:`AppState`.
"""

from __future__ import annotations

import functools
import html
import json
import re
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

import ipywidgets as w
import traitlets
from IPython.display import display

from gpucost.catalog import Catalog
from gpucost.errors import GpucostError, SpecError
from gpucost.i18n import DEFAULT_CURRENCY, LANGUAGES, t
from gpucost.markets import MARKET_CHOICES, PROVIDER_KINDS, Market, market_for
from gpucost.pricing import STREET_STALE_DAYS
from gpucost.specs import Spec
from gpucost.ui import budget
from gpucost.ui.chart import Chart, PlotlyLibrary
from gpucost.ui.prefs import Prefs, url_params
from gpucost.ui.server import token_widget

# the pages run in a visitor's kernel: its errors are the server's, never sent to the page
budget.keep_kernel_errors_off_the_wire()
budget.guard_widget_messages()

#: page id → (notebook file, nav string key)
PAGES = {
    "start": ("00_start.ipynb", "nav_start"),
    "cards": ("01_card_choice.ipynb", "nav_cards"),
    "fit": ("02_quantization_fit.ipynb", "nav_fit"),
    "tco": ("03_scenario_tco.ipynb", "nav_tco"),
    "probe": ("04_gpu_probe.ipynb", "nav_probe"),
    "plan": ("05_sharing_and_scaling.ipynb", "nav_plan"),
    "claims": ("06_rules_of_thumb.ipynb", "nav_claims"),
    "serve": ("07_serving.ipynb", "nav_serve"),
}
RECORD_MIME = "application/vnd.gpucost+json"
_CODE = re.compile(r"`([^`]+)`")

CSS = """
<style>
.gc-heading h1 {font-size:1.7em; font-weight:400; margin:0.3em 0 0.1em 0;}
.gc-heading p {margin:0 0 0.5em 0; color:#444;}
.gc-header {display:flex; flex-wrap:wrap; align-items:center; gap:0.4em 1.2em; padding:0.4em 0.2em;
  border-bottom:2px solid #3b6ea8; margin-bottom:0.6em}
.gc-title {font-size:1.35em; font-weight:700; color:#24476f; margin-right:0.6em}
.gc-nav a {margin-right:0.9em; text-decoration:none; color:#3b6ea8}
.gc-nav a.gc-here {font-weight:700; color:#111; border-bottom:2px solid #111}
.gc-body {display:flex; flex-direction:row; gap:1.2em; align-items:flex-start; width:100%}
.gc-inputs {flex:0 0 340px; min-width:280px}
.gc-results {flex:1 1 560px; min-width:0}
@media (max-width: 900px) {
  .gc-body {flex-direction:column-reverse}  /* a narrow screen opens with the answer, the inputs follow */
  .gc-inputs, .gc-results {flex:1 1 auto; width:100%}
}
.gc-msg-error {color:#a40000; font-size:0.92em}
.gc-msg-ok {color:#1d6b2a; font-size:0.92em}
.gc-help {color:#555; font-size:0.88em; line-height:1.35; margin:0 0 0.3em 0}
.gc-label {font-weight:600; font-size:0.95em; margin-top:0.3em}
.gc-table table {border-collapse:collapse; font-size:0.9em}
.gc-table th, .gc-table td {padding:2px 8px; border-bottom:1px solid #ddd; text-align:right}
.gc-table th:first-child, .gc-table td:first-child, .gc-table td.gc-l, .gc-table th.gc-l {text-align:left}
.gc-table tr.gc-frontier td {background:#eef6ff}
.gc-asof {color:#555; font-size:0.85em}
.gc-warn {color:#8a5300}
.gc-wide {overflow-x:auto; max-width:100%}
.gc-results .lm-TabBar-tab {max-width:none !important; min-width:0 !important; flex:0 1 auto !important;
  height:auto !important; min-height:var(--jp-private-horizontal-tab-height, 32px)}
.gc-results .lm-TabBar-tabLabel {white-space:normal !important; overflow:visible !important; line-height:1.25}
.gc-results .lm-TabBar-content {flex-wrap:wrap}
.widget-radio-box label {white-space:normal}
.gc-answer {font-size:1.08em}
.gc-stale {opacity:0.4; filter:grayscale(0.8)}
.gc-stale-banner {display:block; background:#fff3cd; border:1px solid #e0b44c; padding:0.35em 0.6em;
  margin:0.2em 0 0.5em 0; color:#5c4100}
abbr.gc-term {text-decoration:underline dotted #7a8ba0; cursor:help}
.gc-field-bad input {border-color:#a40000 !important; background:#fff4f4 !important}
</style>
"""


#: text-only widgets: nothing restyles them after display, so equal layouts can be one model
_TEXT_WIDGETS = (w.HTML, w.HTMLMath, w.Label)


def share_styles(root: w.Widget) -> int:
    """Make the widgets under ``root`` share equal style models, and text widgets equal layout models.

    Every ipywidget comes with its own Layout and style model; the browser builds each one, which costs as
    much as the widget itself. Pages never change a style after display (and only boxes' layouts), so
    equal ones are merged before the page is shown: the rules-of-thumb page drops from 539 models to about
    half. Returns how many models were closed.
    """
    shared: dict[tuple, w.Widget] = {}
    closed, seen, stack = 0, set(), [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.extend(getattr(node, "children", None) or ())
        for attr in ("style", "layout"):
            sub = getattr(node, attr, None)
            if not isinstance(sub, w.Widget) or (attr == "layout" and not isinstance(node, _TEXT_WIDGETS)):
                continue
            key = (type(sub), json.dumps(sub.get_state(), sort_keys=True, default=str))
            keep = shared.setdefault(key, sub)
            if keep is not sub:
                setattr(node, attr, keep)
                sub.close()
                closed += 1
    return closed


@dataclass
class SpecField:
    """A typed-in input checked against its :class:`~gpucost.specs.Spec`: the text box, the message next
    to it, and the last value that passed (what the results use while the box holds something invalid)."""

    name: str
    spec: Spec
    widget: w.Text
    message: w.HTML
    box: w.VBox
    last: Any


def spec_text(spec: Spec, value: Any) -> str:
    """A value as the text a field shows (4096, 0.5, 1e+09 → 1e9)."""
    if value is None:
        return ""
    if isinstance(value, float) and spec.kind == "int" and value == int(value):
        value = int(value)
    return f"{value:g}" if isinstance(value, float) else str(value)


def set_choice(widget: w.Widget, raw: Any, catalog: Catalog | None = None) -> bool:
    """Set a choice widget (dropdown, toggle buttons, slider, checkbox) from URL text; False when the value
    is not one of its options (a card may be named by its catalog name)."""
    if isinstance(widget, (w.FloatSlider, w.IntSlider)):
        try:
            value = float(raw)
        except (TypeError, ValueError):
            return False
        widget.value = max(widget.min, min(widget.max, type(widget.value)(value)))
        return True
    if isinstance(widget, w.Checkbox):
        widget.value = str(raw).lower() in ("1", "true", "yes", "on")
        return True
    options = [o[1] if isinstance(o, tuple) else o for o in getattr(widget, "options", ())]
    value: Any = raw
    if value not in options and catalog is not None:
        try:
            value = catalog.gpu_id(str(raw))
        except GpucostError:
            value = raw
    if value not in options:
        match = [o for o in options if str(o) == str(raw)]
        if not match:
            return False
        value = match[0]
    widget.value = value
    return True


@functools.cache
def _glossary(lang: str) -> tuple[re.Pattern, dict[str, str]]:
    """One pattern for every glossary term of ``lang`` (longest first: "QLoRA" before "LoRA"), and the
    explanation of each."""
    from gpucost.i18n import strings

    terms = dict(v.split("|", 1) for k, v in strings(lang).items() if k.startswith("gloss_"))
    alts = "|".join(re.escape(term) for term in sorted(terms, key=len, reverse=True))
    return re.compile(r"(?<![\w-])(" + alts + r")(?![\w-])"), terms


#: elements whose text is not glossed (tooltips, code, links, choices) and tags themselves
_PROTECTED = re.compile(r"(<(abbr|code|a|pre|select|option)\b.*?</\2>|<[^>]+>)", re.S)


def gloss(text: str, lang: str) -> str:
    """See :meth:`Page.gloss`."""
    if not text:
        return text
    pattern, terms = _glossary(lang)
    done: set[str] = set()

    def tip(m: re.Match) -> str:
        term = m.group(1)
        if term in done:
            return term
        done.add(term)
        return f'<abbr class="gc-term" title="{html.escape(terms[term])}">{term}</abbr>'

    out, pos = [], 0
    for m in _PROTECTED.finditer(text):
        out.append(pattern.sub(tip, text[pos:m.start()]))
        out.append(m.group(0))
        pos = m.end()
    out.append(pattern.sub(tip, text[pos:]))
    return "".join(out)


class AppState(traitlets.HasTraits):
    """What every page shares: language and display currency."""

    lang = traitlets.Unicode("en")
    currency = traitlets.Unicode("USD")
    market = traitlets.Unicode("auto")   # where the visitor rents: a gpucost.markets.Market key


class Page:
    """Base of every page. Subclasses set ``page_id`` and implement build/relabel/refresh/record."""

    page_id = "start"
    uses_prices = True

    def __init__(self, lang: str = "en", currency: str | None = None, catalog: Catalog | None = None):
        if lang not in LANGUAGES:
            lang = "en"
        self.catalog = catalog or Catalog()
        self.state = AppState(lang=lang, currency=(currency or DEFAULT_CURRENCY[lang]).upper())
        self.error: str | None = None
        self.invalid: dict[str, str] = {}  # field name → why its text is not used (this computation)
        self.fields: dict[str, SpecField] = {}
        self._labels: list[tuple[w.Widget, str, str]] = []
        self._charts: dict[str, Chart] = {}
        self._plotly: PlotlyLibrary | None = None
        self._held = self._pending = False
        with self.refresh_once():  # what building and labelling change asks for one computation at the end
            self._build_shell()
            self.build()
            self.state.observe(self._on_lang, names="lang")
            self.state.observe(lambda _: self.safe_refresh(), names="currency")
            self.relabel_all()
            self.safe_refresh()

    # -- helpers for subclasses -----------------------------------------------------------------
    def t(self, key: str, **fmt) -> str:
        return t(key, self.state.lang, **fmt)

    def prose(self, text: Any) -> str:
        """An engine's sentence as HTML in the page's language: escaped, with `commands` as code."""
        from gpucost.i18n import localize

        return _CODE.sub(r"<code>\1</code>", html.escape(str(localize(text, self.state.lang))))

    def gloss(self, text: str) -> str:
        """HTML ``text`` with the first mention of each glossary term (locales/*/glossary.json) explained in a
        tooltip (``<abbr title=…>``); text inside tags, links, code and other tooltips is left alone."""
        return gloss(text, self.state.lang)

    def opt(self, value: Any) -> str:
        """An option value in the page's language (``opt_<value>`` in the locale files; else as it is)."""
        from gpucost.i18n import strings

        key = f"opt_{value}"
        return self.t(key) if key in strings(self.state.lang) else str(value)

    def options(self, widget: w.Widget, values) -> None:
        """Give a choice widget ``values`` labelled in the page's language, keeping its value."""
        keep = widget.value
        widget.options = [(self.opt(v), v) for v in values]
        if keep in values:
            widget.value = keep

    def label(self, widget: w.Widget, key: str, attr: str = "description") -> w.Widget:
        """Register ``widget.attr`` to show string ``key`` in the current language."""
        self._labels.append((widget, attr, key))
        return widget

    def help_line(self, key: str) -> w.HTML:
        h = w.HTML()
        h.add_class("gc-help")
        return self.label(h, key, "value")

    def figure_box(self, css_class: str = "gc-chart") -> Chart:
        """A chart widget; :meth:`show_figure` draws a ``go.Figure`` in it (see :mod:`gpucost.ui.chart`)."""
        if self._plotly is None:
            self._plotly = PlotlyLibrary()  # plotly.js, once per page that has a chart
        box = Chart(layout=w.Layout(width="100%", min_height="120px"))
        box.add_class(css_class)
        return box

    @staticmethod
    def show_figure(box: Chart, fig):
        """Draw ``fig`` (a complete ``go.Figure``) in ``box``; returns ``fig``."""
        return box.show(fig)

    @staticmethod
    def clear_figure(box: Chart) -> None:
        box.clear()

    def chart(self, attr: str, css_class: str = "gc-chart", **layout) -> Chart:
        """Create chart ``attr``: ``self.<attr>`` holds its ``go.Figure`` (``layout`` its starting layout,
        used by :meth:`redraw`); returns the widget that shows it."""
        import plotly.graph_objects as go

        box = self.figure_box(css_class)
        self._charts[attr] = box
        setattr(self, attr, go.Figure(layout=layout))
        return box

    def field(self, key: str, widget: w.Widget, help_key: str | None = None) -> w.VBox:
        """An input with its label above it (and an optional help line under it)."""
        lab = w.HTML()
        lab.add_class("gc-label")
        self.label(lab, key, "value")
        parts = [lab, widget] + ([self.help_line(help_key)] if help_key else [])
        return w.VBox(parts, layout=w.Layout(width="100%", margin="0 0 0.4em 0"))

    @staticmethod
    def message_box() -> w.HTML:
        """An empty message line to put next to an input (filled by :meth:`show_error`)."""
        return w.HTML("")

    def show_error(self, box: w.HTML, error: str | None) -> None:
        box.value = (f'<span class="gc-msg-error">{html.escape(self.t("error_input", error=error))}</span>'
                     if error else "")

    def spec_field(self, name: str, spec: Spec, value: Any, label_key: str, help_key: str | None = None,
                   css: str | None = None, on_change=None) -> w.VBox:
        """A text input for ``spec`` (bounds, units, 32k-style suffixes as the CLI), labelled, with its
        message line; :meth:`val` reads it. Changing it recomputes the page."""
        text = w.Text(value=spec_text(spec, value), continuous_update=False, layout=w.Layout(width="95%"))
        text.add_class(css or f"gc-{name.replace('_', '-')}")
        msg = w.HTML()
        msg.add_class("gc-field-msg")
        box = self.field(label_key, text, help_key)
        box.children = (*box.children, msg)
        try:
            last = spec.check(value) if value is not None else None
        except GpucostError:  # a bad starting value (a page parameter): val() says so next to the field, and
            last = spec.default  # the results use the shared default meanwhile
        self.fields[name] = SpecField(name, spec, text, msg, box, last)
        text.observe(on_change or (lambda _: self.safe_refresh()), names="value")
        return box

    def val(self, name: str) -> Any:
        """The value of field ``name``; when its text is invalid, a message next to it, the field noted in
        :attr:`invalid` (the results are marked out of date) and the last valid value returned."""
        f = self.fields[name]
        try:
            value = f.spec.check(f.widget.value, name)
        except SpecError as exc:
            why = self.spec_problem(f.spec, exc, f.widget.value)
            kept = self.t("input_kept", value=spec_text(f.spec, f.last)) if f.last is not None else ""
            self.invalid[name] = why
            f.message.value = f'<span class="gc-msg-error">{html.escape(why)}</span>' + (
                f' <span class="gc-help">{html.escape(kept)}</span>' if kept else "")
            f.box.add_class("gc-field-bad")
            return f.last
        f.message.value = ""
        f.box.remove_class("gc-field-bad")
        f.last = value
        return value

    def spec_problem(self, spec: Spec, exc: SpecError, raw: Any) -> str:
        """Why ``raw`` is not a valid value of ``spec``, in the page's language."""
        shown = str(raw).strip()
        if exc.reason in ("range", "whole", "choice"):
            return self.t(f"input_bad_{exc.reason}", value=shown, range=spec.range_text(self.state.lang))
        if exc.reason == "required":
            return self.t("input_bad_required")
        return self.t("input_bad_number", value=shown, range=spec.range_text(self.state.lang))

    # -- shell -----------------------------------------------------------------------------------
    def _build_shell(self) -> None:
        self.heading = w.HTML()  # the page's name and the question it answers, in the page's language
        self.heading.add_class("gc-heading")
        self.title = w.HTML()
        self.nav = w.HTML()
        self.lang_toggle = w.ToggleButtons(options=[(v, k) for k, v in LANGUAGES.items()],
                                           value=self.state.lang, style={"button_width": "80px"})
        self.lang_toggle.add_class("gc-lang")
        self.currency_dd = w.Dropdown(options=self.catalog.currencies(), value=self.state.currency
                                      if self.state.currency in self.catalog.currencies() else "USD",
                                      layout=w.Layout(width="170px"))
        self.currency_dd.add_class("gc-currency")
        self.state.currency = self.currency_dd.value
        self.lang_toggle.observe(self._lang_clicked, names="value")
        self.currency_dd.observe(lambda ch: setattr(self.state, "currency", ch["new"]), names="value")
        # the visitor's language and currency live in their browser (URL, localStorage), not on the server
        self.prefs = Prefs(lang=self.state.lang, currency=self.state.currency, market=self.state.market,
                           layout=w.Layout(display="none"))
        for name in ("lang", "currency", "market"):
            traitlets.dlink((self.state, name), (self.prefs, name))
        self.prefs.observe(lambda ch: self.apply_url_params(ch["new"]), names="restore")
        self.state.observe(lambda _: self._show_nav(), names="currency")
        header = w.HBox([self.title, self.nav, self.label(w.HTML(), "language", "value"), self.lang_toggle,
                         self.currency_dd])
        header.add_class("gc-header")
        self.header = header
        self.asof = w.HTML()
        # where the visitor rents (every cloud price of the page is chosen there)
        self.market_dd = w.Dropdown(options=list(MARKET_CHOICES), value="auto", layout=w.Layout(width="95%"))
        self.market_dd.add_class("gc-market")
        # … and from which kinds of provider (at least one)
        self.market_kinds = {k: w.Checkbox(value=True, indent=False, layout=w.Layout(width="95%"))
                             for k in PROVIDER_KINDS}
        for k, box in self.market_kinds.items():
            box.add_class(f"gc-kind-{k}")
            self.label(box, f"market_kind_{k}")
        self.market_msg = w.HTML()
        self.market_msg.add_class("gc-field-msg")
        self._market_problem: str | None = None
        for widget in (self.market_dd, *self.market_kinds.values()):
            widget.observe(self._market_widgets_changed, names="value")
        self.state.observe(self._on_market, names="market")
        self.upload = w.FileUpload(accept=".csv", multiple=False)
        self.upload.add_class("gc-upload")
        self.label(self.upload, "upload_button")
        self.upload_msg = w.HTML()
        self.upload.observe(self._on_upload, names="value")
        self.inputs = w.VBox(layout=w.Layout(width="100%"))
        self.inputs.add_class("gc-inputs")
        self.results = w.VBox(layout=w.Layout(width="100%"))
        self.results.add_class("gc-results")
        self.status = w.HTML()
        self.status.add_class("gc-status")

    def shell_inputs(self) -> list[w.Widget]:
        """Widgets every page puts under its own inputs (upload and as-of line)."""
        if not self.uses_prices:
            return []
        kinds = w.VBox([self.label(w.HTML(), "market_kinds_label", "value"), *self.market_kinds.values(),
                        self.market_msg], layout=w.Layout(width="100%", margin="0 0 0.4em 0"))
        kinds.add_class("gc-market-kinds")
        return [self.field("market_label", self.market_dd, "market_help"), kinds,
                self.label(w.HTML(), "upload_prices", "value"), self.upload,
                self.help_line("upload_help"), self.upload_msg, self.asof]

    def _market_widgets_changed(self, _change=None) -> None:
        """The region or a provider kind changed: the new market, or — no kind left — a message next to the
        boxes and the results marked out of date (the prices stay those of the last market)."""
        if getattr(self, "_market_sync", False):
            return   # the widgets being set to the state's market (below): not the visitor's change
        kinds = tuple(k for k, box in self.market_kinds.items() if box.value)
        if not kinds:
            self._market_problem = self.t("market_kinds_none")
            self.market_msg.value = f'<span class="gc-msg-error">{html.escape(self._market_problem)}</span>'
            self.safe_refresh()
            return
        self._market_problem, self.market_msg.value = None, ""
        key = Market(self.market_dd.value, kinds).key
        if key == self.state.market:
            self.safe_refresh()   # the kinds came back as they were: current again
        self.state.market = key

    def _on_market(self, change) -> None:
        market = Market.from_key(change["new"]) or Market()
        with self.refresh_once():
            self._market_sync = True
            try:
                self.market_dd.value = market.region
                for k, box in self.market_kinds.items():
                    box.value = k in market.kinds
            finally:
                self._market_sync = False
            self._market_problem, self.market_msg.value = None, ""
            self.catalog = self.catalog.with_market(market)
            self._show_asof()
            self.safe_refresh()

    def _lang_clicked(self, change) -> None:
        lang = change["new"]
        # the display currency follows the language (the user can change it again); one recomputation for
        # both changes
        cur = DEFAULT_CURRENCY[lang]
        with self.refresh_once():
            if cur in self.currency_dd.options:
                self.currency_dd.value = cur
            self.state.lang = lang

    def _on_lang(self, _change=None) -> None:
        with self.refresh_once():  # inputs relabelled with their values kept: one recomputation at the end
            self.relabel_all()
            self.safe_refresh()

    def relabel_all(self) -> None:
        lang = self.state.lang
        self.title.value = f'<span class="gc-title">{html.escape(t("app_title", lang))}</span>'
        start = self.page_id not in PAGES or self.page_id == "start"
        name = t("app_title" if start else PAGES[self.page_id][1], lang)
        question = t("app_tagline" if start else f"start_q_{self.page_id}", lang)
        self.heading.value = (f'<h1 class="gc-page-title">{html.escape(name)}</h1>'
                              f'<p class="gc-page-question">{html.escape(question)}</p>')
        self._show_nav()
        for widget, attr, key in self._labels:
            text = t(key, lang)
            setattr(widget, attr, gloss(text, lang) if attr == "value" and isinstance(widget, w.HTML) else text)
        keep, self._market_sync = self.market_dd.value, True   # new labels, the same choice: no new market
        try:
            self.market_dd.options = [(t(f"market_{m}", lang), m) for m in MARKET_CHOICES]
            self.market_dd.value = keep
        finally:
            self._market_sync = False
        if self._market_problem:
            self._market_problem = self.t("market_kinds_none")
            self.market_msg.value = f'<span class="gc-msg-error">{html.escape(self._market_problem)}</span>'
        self.relabel()
        self._show_asof()

    def page_link(self, page_id: str, **params: Any) -> str:
        """The URL of page ``page_id`` (relative, as Voilà serves the notebooks side by side) carrying the
        visitor's language and currency and ``params``."""
        from urllib.parse import urlencode

        query = {"lang": self.state.lang, "currency": self.state.currency,
                 **({"market": self.state.market} if self.state.market != "auto" else {}),
                 **{k: v for k, v in params.items() if v is not None}}
        return f"{PAGES[page_id][0]}?{urlencode(query)}"

    def _show_nav(self) -> None:
        lang = self.state.lang
        links = []
        for pid, (_nb, key) in PAGES.items():
            cls = ' class="gc-here"' if pid == self.page_id else ""
            links.append(f'<a href="{html.escape(self.page_link(pid))}"{cls}>{html.escape(t(key, lang))}</a>')
        self.nav.value = f'<span class="gc-nav">{"".join(links)}</span>'

    def apply_url_params(self, params: dict) -> None:
        """Take ``lang``, ``currency`` and the page's own parameters (:meth:`apply_params`) from the URL (or
        the browser's stored preferences); unknown or invalid values are ignored."""
        if not params:
            return
        with self.refresh_once():
            lang = str(params.get("lang") or "")
            if lang in LANGUAGES and lang != self.state.lang:
                self.lang_toggle.value = lang  # the currency follows the language ...
            cur = str(params.get("currency") or "").upper()
            if cur in self.currency_dd.options:
                self.currency_dd.value = cur  # ... unless the URL names one
            market = Market.from_key(str(params.get("market") or ""))
            if market is not None:
                self.state.market = market.key
            self.apply_params(params)

    def apply_params(self, params: dict) -> None:
        """Page-specific URL parameters (page 03 takes the utilization page 04 measured). By default every
        parameter named after a widget of :attr:`url_widgets` or a checked field sets it (invalid values
        are ignored for choices; a field shows why next to it)."""
        widgets = self.url_widgets()
        for key, raw in params.items():
            if key in self.fields:
                self.fields[key].widget.value = str(raw)
            elif key in widgets:
                set_choice(widgets[key], raw, self.catalog)

    def url_widgets(self) -> dict[str, w.Widget]:
        """URL parameter → the choice widget it sets (pages override)."""
        return {}

    def _show_asof(self) -> None:
        if not self.uses_prices:
            return
        try:
            newest, oldest = self.catalog.as_of("prices"), self.catalog.oldest_as_of("prices")
        except GpucostError:
            return
        text = self.t("prices_as_of", date=newest, oldest=oldest)
        if date.fromisoformat(oldest) < date.today() - timedelta(days=STREET_STALE_DAYS):
            text += f' <span class="gc-warn">{html.escape(self.t("prices_old"))}</span>'
        text += " " + self._market_text()
        self.asof.value = f'<span class="gc-asof">{text}</span>'

    def _market_text(self) -> str:
        """Which market the cloud prices come from, how many offers and how fresh (a warning past 90 days),
        and how many cards are priced outside it; that street prices follow the same market, and how many
        cards are bought outside it (:func:`gpucost.pricing.market_summary`)."""
        from gpucost.pricing import market_summary

        m = market_summary(self.catalog, self.state.currency)
        name = self.t(f"market_{m['region']}")
        if not m["offers"]:
            text = html.escape(self.t("prices_market_none", market=name))
        else:
            text = html.escape(self.t("prices_market", market=name, offers=m["offers"], newest=m["newest"]))
            if m["stale"]:
                text += f' <span class="gc-warn">{html.escape(self.t("prices_market_old", n=m["stale"]))}</span>'
            if m["cards_outside"]:
                text += " " + html.escape(self.t("prices_market_outside", n=m["cards_outside"]))
        text += " " + html.escape(self.t("prices_street_market"))
        if m["street_outside"]:
            text += " " + html.escape(self.t("prices_street_outside", n=m["street_outside"]))
        return text

    def _bundled_prices(self):
        """The prices an upload merges into: the table this page started with (a second upload replaces
        the first, it does not stack on it)."""
        if getattr(self, "_base_prices", None) is None:
            self._base_prices = self.catalog.prices
        return self._base_prices

    def _on_upload(self, change) -> None:
        from gpucost.catalog import merge_upload, validate_bytes

        try:
            upload = self.read_upload(change, "upload.csv")
            if upload is None:
                return
            name, content = upload
            with self.compute_budget():
                frame = validate_bytes("prices", content, filename=name, catalog=self.catalog)
        except GpucostError as exc:
            self.upload_msg.value = (f'<span class="gc-msg-error">'
                                     f'{html.escape(self.t("upload_error", error=str(exc)))}</span>')
            return
        merged, replaced = merge_upload("prices", self._bundled_prices(), frame)
        self.catalog = self.catalog.with_table("prices", merged)
        self.upload_msg.value = (f'<span class="gc-msg-ok">'
                                 f'{html.escape(self.t("upload_ok", file=name, rows=len(frame), replaced=replaced))}'
                                 '</span>')
        self._show_asof()
        self.safe_refresh()

    # -- lifecycle -------------------------------------------------------------------------------
    @contextmanager
    def refresh_once(self):
        """Within this block, the changes that ask for a recomputation get one, at its end."""
        if self._held:
            yield
            return
        self._held, self._pending = True, False
        try:
            yield
        finally:
            self._held = False
            if self._pending:
                self.safe_refresh()

    def refresh_pending(self) -> bool:
        """Inside :meth:`refresh_once`: ask for its recomputation at the end and return True (the caller
        need not recompute now); False elsewhere."""
        if self._held:
            self._pending = True
        return self._held

    def safe_refresh(self) -> None:
        """Recompute; a bad input or data problem becomes a message in the page, never a traceback.

        A field whose text is invalid keeps its last valid value (said next to it) and every other input,
        the language and the currency keep working; the results are marked out of date until it is fixed.
        When the engines reject the inputs, the results shown are the last ones: marked out of date."""
        if self.refresh_pending():
            return
        self.invalid = {}
        if getattr(self, "_market_problem", None):
            self.invalid["market"] = self._market_problem
        try:
            with self.compute_budget():
                self.refresh()
            self.error = None
        except GpucostError as exc:
            self.error = str(exc)
        self.show_validity()

    def compute_budget(self):
        """The shared server's limits on one computation (:mod:`gpucost.ui.budget`), said in the page's
        language when they are reached."""
        return budget.compute_budget(self.t("budget_exceeded", seconds=f"{budget.COMPUTE_CPU_S:g}",
                                            mib=f"{budget.COMPUTE_MIB:,}"))

    def read_upload(self, change, default_name: str, max_bytes: int | None = None) -> tuple[str, bytes] | None:
        """(name, bytes) of the first file of a FileUpload ``value`` change, None when it is empty; a file
        larger than ``max_bytes`` (default :data:`gpucost.ui.budget.MAX_UPLOAD_BYTES`) is a GpucostError."""
        files = change["new"]
        if not files:
            return None
        f = files[0]
        name = f.get("name", default_name) if isinstance(f, dict) else getattr(f, "name", default_name)
        content = f.get("content") if isinstance(f, dict) else getattr(f, "content", None)
        if not isinstance(content, (bytes, bytearray, memoryview)):  # not what a browser sends: a tampered message
            raise GpucostError(self.t("upload_unreadable", file=str(name)[:80]))
        limit = budget.MAX_UPLOAD_BYTES if max_bytes is None else max_bytes
        if len(content) > limit:
            raise GpucostError(self.t("upload_too_big", file=name, kb=f"{limit // 1024:,}"))
        return str(name), bytes(content)

    @property
    def stale(self) -> bool:
        """True while the results shown are not those of the inputs shown."""
        return bool(self.invalid) or self.error is not None

    def show_validity(self) -> None:
        """Mark the results out of date (greyed, with a banner naming why) or current."""
        parts = []
        if self.error is not None:
            parts.append(html.escape(self.t("error_input", error=self.error)))
        if self.invalid:
            names = ", ".join(self.field_label(n) for n in self.invalid)
            parts.append(html.escape(self.t("results_use_last", fields=names)))
        if parts:
            self.status.value = (f'<span class="gc-stale-banner"><b>{html.escape(self.t("results_stale"))}</b> '
                                 + " ".join(parts) + "</span>")
            self.results.add_class("gc-stale")
        else:
            self.status.value = ""
            self.results.remove_class("gc-stale")

    def field_label(self, name: str) -> str:
        """The label a field shows (its name when it has none)."""
        if name == "market":
            return self.t("market_kinds_label")
        f = self.fields.get(name)
        head = f.box.children[0] if f is not None and f.box.children else None
        return html.unescape(head.value) if isinstance(head, w.HTML) and head.value else name

    def widget(self) -> w.Widget:
        body = w.HBox([self.inputs, self.results], layout=w.Layout(width="100%"))
        body.add_class("gc-body")
        extra = [self._plotly] if self._plotly is not None else []
        token = token_widget()  # the public server's proof that this page may shut its kernel down
        extra += [token] if token is not None else []
        return w.VBox([w.HTML(CSS), self.prefs, *extra, self.heading, self.header, self.status, body],
                      layout=w.Layout(width="100%"))

    def display(self) -> None:
        """Show the page, then take the URL's parameters (under Voilà a preheated page waits here for its
        visitor's request: everything above is ready before anyone asks)."""
        root = self.widget()
        share_styles(root)
        display(root)
        self.apply_url_params(url_params())

    @contextmanager
    def redraw(self, attr: str):
        """Redraw chart ``attr`` (made by :meth:`chart`): yields an empty ``go.Figure`` with the chart's
        layout; on exit it becomes ``self.<attr>`` and is shown in the chart's box."""
        import plotly.graph_objects as go

        fig = go.Figure(layout=getattr(self, attr).layout)
        yield fig
        setattr(self, attr, fig)
        self.show_figure(self._charts[attr], fig)

    def record(self) -> None:
        """Display the page's numbers as a machine-readable output (read back by tests/papermill)."""
        display({RECORD_MIME: self.results_record(), "text/plain": ""}, raw=True)

    # -- to implement ------------------------------------------------------------------------------
    def build(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def relabel(self) -> None:
        """Set texts that are not simple registered labels (options of dropdowns, headers)."""

    def refresh(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def results_record(self) -> dict:
        out = {"page": self.page_id, "lang": self.state.lang, "currency": self.state.currency,
               "error": self.error, "stale": self.stale, "invalid": dict(self.invalid)}
        if self.uses_prices:  # where the cloud prices were chosen (auto resolved)
            out["market"] = market_for(self.catalog.market, self.state.currency).key
        return out
