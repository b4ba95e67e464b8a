"""The chart widget's kernel side: what a page's chart receives, and the re-send that keeps a chart whose
model was created late (a preheated kernel, an input changed at once) from showing a stale figure."""

from __future__ import annotations

import plotly.graph_objects as go

from gpucost.ui.chart import Chart, PlotlyLibrary


def _fig(title: str) -> go.Figure:
    return go.Figure(go.Scatter(x=[1, 2], y=[3, 4]), layout={"title": title})


def test_show_syncs_the_figure_json_and_counts_revisions():
    c = Chart()
    c.show(_fig("BF16"))
    assert c.figure["layout"]["title"]["text"] == "BF16"
    assert list(c.figure["data"][0]["y"]) == [3, 4]
    c.show(_fig("FP8"))
    c.clear()
    assert c.figure == {}
    assert c.revision == 3


def test_a_model_created_with_an_older_figure_gets_the_current_one(monkeypatch):
    c = Chart()
    c.show(_fig("BF16"))
    c.show(_fig("FP8"))
    sent = []
    monkeypatch.setattr(c, "send_state", lambda key=None: sent.append(key))
    c._on_msg(c, {"type": "revision", "revision": 1}, [])  # its state was fetched before the FP8 figure
    assert sent == [["figure", "revision"]]
    c._on_msg(c, {"type": "revision", "revision": 2}, [])  # up to date: nothing is sent again
    c._on_msg(c, {"type": "something else"}, [])
    assert len(sent) == 1


def test_plotly_library_sends_plotly_js_as_a_module_when_asked(monkeypatch):
    lib = PlotlyLibrary()
    sent = []
    monkeypatch.setattr(lib, "send", lambda content, buffers=None: sent.append(content))
    lib._on_msg(lib, {"type": "need-plotly"}, [])
    assert len(sent) == 1 and sent[0]["type"] == "plotly-source"
    esm = sent[0]["esm"]
    assert esm.rstrip().endswith("export default module.exports;")
    assert "plotly.js (basic - minified) v4.1.1" in esm[:2000]  # the vendored basic bundle (gpucost/ui/static/README.md)
