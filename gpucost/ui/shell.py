"""The app shell every page shares: header (title, navigation, language, currency), price upload,
as-of line, and a two-column layout (inputs left, results right; stacked on a narrow screen).

A page subclasses :class:`Page`, builds its inputs and results, and implements ``refresh()`` (compute
with the engines, show) and ``record()`` (the numbers a test or papermill reads back). State lives on
widget instances and the traitlets of :class:`AppState`.
"""

from __future__ import annotations

import html
import json
from contextlib import contextmanager
from datetime import date, timedelta

import ipywidgets as w
import traitlets
from IPython.display import display

from gpucost.catalog import Catalog
from gpucost.errors import GpucostError
from gpucost.i18n import DEFAULT_CURRENCY, LANGUAGES, t
from gpucost.ui.chart import Chart, PlotlyLibrary

#: page id → (notebook file, nav string key)
PAGES = {
    "start": ("00_start.ipynb", "nav_start"),
    "cards": ("01_card_choice.ipynb", "nav_cards"),
    "fit": ("02_quantization_fit.ipynb", "nav_fit"),
    "tco": ("03_scenario_tco.ipynb", "nav_tco"),
    "probe": ("04_gpu_probe.ipynb", "nav_probe"),
    "plan": ("05_sharing_and_scaling.ipynb", "nav_plan"),
    "claims": ("06_rules_of_thumb.ipynb", "nav_claims"),
}
RECORD_MIME = "application/vnd.gpucost+json"

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
  .gc-body {flex-direction:column}
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
</style>
"""


def uploaded_file(change, default_name: str) -> tuple[str, bytes] | None:
    """(name, bytes) of the first file of a FileUpload ``value`` change, or None when it is empty."""
    files = change["new"]
    if not files:
        return None
    f = files[0]
    name = f.get("name", default_name) if isinstance(f, dict) else getattr(f, "name", default_name)
    content = f["content"] if isinstance(f, dict) else f.content
    return name, bytes(content)


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


class AppState(traitlets.HasTraits):
    """What every page shares: language and display currency."""

    lang = traitlets.Unicode("en")
    currency = traitlets.Unicode("USD")


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
        header = w.HBox([self.title, self.nav, self.label(w.HTML(), "language", "value"), self.lang_toggle,
                         self.currency_dd])
        header.add_class("gc-header")
        self.header = header
        self.asof = w.HTML()
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
        return [self.label(w.HTML(), "upload_prices", "value"), self.upload,
                self.help_line("upload_help"), self.upload_msg, self.asof]

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
        links = []
        for pid, (nb, key) in PAGES.items():
            cls = ' class="gc-here"' if pid == self.page_id else ""
            links.append(f'<a href="{nb}"{cls}>{html.escape(t(key, lang))}</a>')
        self.nav.value = f'<span class="gc-nav">{"".join(links)}</span>'
        for widget, attr, key in self._labels:
            setattr(widget, attr, t(key, lang))
        self.relabel()
        self._show_asof()

    def _show_asof(self) -> None:
        if not self.uses_prices:
            return
        try:
            newest, oldest = self.catalog.as_of("prices"), self.catalog.oldest_as_of("prices")
        except GpucostError:
            return
        text = self.t("prices_as_of", date=newest, oldest=oldest)
        if date.fromisoformat(oldest) < date.today() - timedelta(days=365):
            text += f' <span class="gc-warn">{html.escape(self.t("prices_old"))}</span>'
        self.asof.value = f'<span class="gc-asof">{text}</span>'

    def _on_upload(self, change) -> None:
        from gpucost.catalog import validate_bytes

        upload = uploaded_file(change, "upload.csv")
        if upload is None:
            return
        name, content = upload
        try:
            frame = validate_bytes("prices", content, filename=name, catalog=self.catalog)
        except GpucostError as exc:
            self.upload_msg.value = (f'<span class="gc-msg-error">'
                                     f'{html.escape(self.t("upload_error", error=str(exc)))}</span>')
            return
        self.catalog = self.catalog.with_table("prices", frame)
        self.upload_msg.value = (f'<span class="gc-msg-ok">'
                                 f'{html.escape(self.t("upload_ok", file=name, rows=len(frame)))}</span>')
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
        """Recompute; a bad input or data problem becomes a message in the page, never a traceback."""
        if self.refresh_pending():
            return
        try:
            self.refresh()
            self.error = None
            self.status.value = ""
        except GpucostError as exc:
            self.error = str(exc)
            self.status.value = f'<span class="gc-msg-error">{html.escape(self.t("error_input", error=str(exc)))}</span>'

    def widget(self) -> w.Widget:
        body = w.HBox([self.inputs, self.results], layout=w.Layout(width="100%"))
        body.add_class("gc-body")
        extra = [self._plotly] if self._plotly is not None else []
        return w.VBox([w.HTML(CSS), *extra, self.heading, self.header, self.status, body],
                      layout=w.Layout(width="100%"))

    def display(self) -> None:
        root = self.widget()
        share_styles(root)
        display(root)

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
        return {"page": self.page_id, "lang": self.state.lang, "currency": self.state.currency,
                "error": self.error}
