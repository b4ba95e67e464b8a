"""Charts for the pages: a light anywidget that draws a ``go.Figure`` with plotly.js's basic bundle.

plotly's own ``go.FigureWidget`` syncs its whole 5 MB JavaScript bundle as widget state for every chart
instance (on every page load and every rebuild), and loses updates made before it is shown in Voila
(plotly #4998); plotly's JupyterLab renderer evaluates the full 4.8 MB plotly.js, about 2.3 s in Chromium
on a 2-core machine. Here plotly.js (basic: scatter, bar, pie; about 0.5 s) loads once per page (see
:class:`PlotlyLibrary`), and each :class:`Chart` syncs only its figure's JSON, which its view draws with
``Plotly.react``. The figure is set the same way before and after display.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import anywidget
import plotly.graph_objects as go
import plotly.io as pio
import traitlets

from gpucost.ui import TEMPLATE_DIR

STATIC = Path(__file__).with_name("static")
#: plotly.js basic, served by the Voila template as a static file and read from here for other front ends
PLOTLY_JS = TEMPLATE_DIR / "static" / "plotly-basic.min.js"

#: the parts of plotly's "plotly_white" template the pages use (its layout without the 3-D, map, polar and
#: ternary defaults, and no per-trace defaults): a figure copies its template, so a small one keeps every
#: chart's JSON and construction small
_WHITE = pio.templates["plotly_white"].layout.to_plotly_json()
pio.templates["gpucost"] = go.layout.Template(layout={k: _WHITE[k] for k in (
    "autotypenumbers", "colorway", "font", "hoverlabel", "hovermode", "paper_bgcolor", "plot_bgcolor",
    "title", "xaxis", "yaxis", "shapedefaults", "annotationdefaults") if k in _WHITE})
TEMPLATE = "gpucost"


@cache
def _library_esm() -> str:
    """plotly.js's UMD bundle as an ES module whose default export is ``Plotly``."""
    src = PLOTLY_JS.read_text(encoding="utf-8")
    return ("const module = { exports: {} };\n(function (module, exports) {\n" + src
            + "\n}).call(globalThis, module, module.exports);\nexport default module.exports;\n")


class PlotlyLibrary(anywidget.AnyWidget):
    """Makes plotly.js available to every :class:`Chart` of the page; put one in the page (it shows nothing).

    Under gpucost's Voila template the page loads plotly.js itself, as a cacheable script; elsewhere
    (JupyterLab, another template) the view asks for the bundle once and this sends it.
    """

    _esm = STATIC / "plotly_library.js"

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.on_msg(self._on_msg)

    def _on_msg(self, _widget, content, _buffers) -> None:
        if isinstance(content, dict) and content.get("type") == "need-plotly":
            self.send({"type": "plotly-source", "esm": _library_esm()})


class Chart(anywidget.AnyWidget):
    """One chart: ``figure`` is a figure's JSON (``{"data": [...], "layout": {...}}``).

    ``revision`` counts the figures shown. A page whose kernel ran before it was opened (Voila's preheated
    kernels) fetches every widget's state at once and creates the models afterwards; an update sent in
    between (an input changed at once, on a busy machine) reaches no model and is lost, so the chart would
    keep its first figure while the text beside it moved on. Each chart's model therefore tells the kernel
    which revision it got, and the kernel sends the current one if they differ.
    """

    _esm = STATIC / "chart.js"
    figure = traitlets.Dict().tag(sync=True)
    revision = traitlets.Int(0).tag(sync=True)

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.on_msg(self._on_msg)

    def _on_msg(self, _widget, content, _buffers) -> None:
        if isinstance(content, dict) and content.get("type") == "revision" \
                and content.get("revision") != self.revision:
            self.send_state(["figure", "revision"])

    def show(self, fig: go.Figure) -> go.Figure:
        """Draw ``fig`` (replacing what was drawn); returns ``fig``."""
        with self.hold_sync():
            self.figure = json.loads(fig.to_json())
            self.revision += 1
        return fig

    def clear(self) -> None:
        with self.hold_sync():
            self.figure = {}
            self.revision += 1
