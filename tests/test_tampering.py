"""Every page against a tampered client (issue 19): each input widget of each page receives the messages a
hand-edited websocket can send — indices out of range, wrong types, 100 KB strings, non-finite numbers, markup,
malformed uploads with a path in their name, button clicks. The public kernel's guard is on, as in the app.

What a visitor may not cause: an error of the page's own code (a refused value is the widget library's
validation, logged on the server and nothing else), a traceback or server path in what the page shows, or a
file written or changed anywhere — the repository, the installed package, the home and data folders. And
the page still answers the next honest input."""

from __future__ import annotations

import io
import logging
import os
from pathlib import Path

import ipywidgets as w
import pytest

from gpucost.ui import budget
from gpucost.ui.card_choice import CardChoicePage
from gpucost.ui.gpu_probe import GpuProbePage
from gpucost.ui.quant_fit import QuantFitPage
from gpucost.ui.rules_of_thumb import RulesOfThumbPage
from gpucost.ui.scenario_tco import ScenarioTcoPage
from gpucost.ui.serving import ServingPage
from gpucost.ui.sharing_scaling import SharingScalingPage
from gpucost.ui.start import StartPage

from .conftest import files_on_disk

pytestmark = pytest.mark.timeout(600)

ROOT = Path(__file__).resolve().parents[1]
PAGES = [StartPage, CardChoicePage, QuantFitPage, ScenarioTcoPage, GpuProbePage, SharingScalingPage,
         RulesOfThumbPage, ServingPage]

TEXTS = ["1e999", "x" * 100_000, "<img src=x onerror=alert(1)>", 5]
NUMBERS = ["abc", None]
CHOICES = [999, "x", None]
FLAGS = ["yes", None]
UPLOADS = ["not a list", [{"name": 3}], [{"name": "../../../gpucost/data/x.yaml", "type": "", "size": 12,
                                          "last_modified": 0, "content": "raw"}]]


def _widgets(root: w.Widget) -> list[w.Widget]:
    out, todo = [], [root]
    while todo:
        x = todo.pop()
        out.append(x)
        todo.extend(getattr(x, "children", ()) or ())
    return out


def _messages(x: w.Widget) -> list[dict]:
    """The tampered messages for one widget (its kind decides which state a client can send)."""
    def update(state: dict, buffers: list | None = None, paths: list | None = None) -> dict:
        return {"content": {"data": {"method": "update", "state": state, "buffer_paths": paths or []}},
                "buffers": buffers or []}

    if isinstance(x, w.Button):
        return [{"content": {"data": {"method": "custom", "content": {"event": "click"}}}, "buffers": []}] * 2
    if isinstance(x, w.FileUpload):
        shaped = update({"value": [{"name": "../../../gpucost/data/scenarios/startup.yaml", "type": "text/yaml",
                                    "size": 4, "last_modified": 0}]}, [memoryview(b"\xff\xfe\x00!")],
                        [["value", 0, "content"]])
        return [update({"value": v}) for v in UPLOADS] + [shaped]
    if isinstance(x, (w.Dropdown, w.Select, w.RadioButtons, w.ToggleButtons, w.SelectionSlider)):
        return [update({"index": v}) for v in CHOICES]
    if isinstance(x, (w.Text, w.Textarea)):
        return [update({"value": v}) for v in TEXTS]
    if isinstance(x, (w.Checkbox, w.ToggleButton)):
        return [update({"value": v}) for v in FLAGS]
    if isinstance(x, (w.FloatText, w.IntText, w.BoundedFloatText, w.BoundedIntText, w.FloatSlider, w.IntSlider)):
        return [update({"value": v}) for v in NUMBERS]
    return []


PKG = Path(budget.__file__).resolve().parents[1]
SKIP = ("/.git", "/__pycache__", "/.venv", "/.pytest_cache")


def _gpucost_frame(tb) -> str | None:
    """The innermost frame of gpucost's own code in a traceback (None: the error never passed through it,
    apart from the guard that logged it)."""
    found = None
    while tb is not None:
        path = Path(tb.tb_frame.f_code.co_filename).resolve()
        if PKG in path.parents and path.name != "budget.py":
            found = f"{path.relative_to(PKG)}:{tb.tb_lineno} {tb.tb_frame.f_code.co_name}"
        tb = tb.tb_next
    return found


def _raised_in_gpucost(tb) -> bool:
    return _gpucost_frame(tb) is not None


@pytest.fixture
def public_kernel(monkeypatch):
    """The app's kernel: the guard on, its log captured, and what a kernel would show on the page's stream."""
    import sys

    import ipywidgets.widgets.widget as ww

    monkeypatch.setattr(ww.Widget, "_handle_msg", ww.Widget._handle_msg)  # restored after the test
    monkeypatch.setenv(budget.PUBLIC_KERNEL_ENV, "1")
    assert budget.guard_widget_messages()
    refused: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record):
            refused.append(record)

    handler = Keep()
    logging.getLogger("gpucost.kernel").addHandler(handler)
    wire = io.StringIO()
    monkeypatch.setattr(sys, "stderr", wire)
    monkeypatch.setattr(budget._SERVER_LOG, "stream", io.StringIO())
    yield refused, wire
    logging.getLogger("gpucost.kernel").removeHandler(handler)


@pytest.mark.parametrize("page_cls", PAGES, ids=lambda c: c.__name__)
def test_a_tampered_page_refuses_quietly_writes_nothing_and_still_answers(page_cls, public_kernel):
    refused, wire = public_kernel
    page = page_cls()
    watched = (ROOT, Path(os.environ["HOME"]), Path(os.environ["XDG_DATA_HOME"]))
    before = files_on_disk(watched, SKIP)
    inputs = [x for x in _widgets(page.widget()) if _messages(x)]
    assert len(inputs) >= 2, "the page has inputs to tamper with"
    typed = [(x, x.value) for x in inputs if isinstance(x, (w.Text, w.Textarea))]
    sent = 0
    for x in inputs:
        for msg in _messages(x):
            x._handle_msg(msg)
            sent += 1
    # every error was the widget library refusing a value (its validation or its upload decoder), never the
    # page's own code failing on a value the library let in
    ours = [r for r in refused if r.exc_info and _raised_in_gpucost(r.exc_info[2])]
    assert not ours, [f"{r.exc_info[1]!r} at {_gpucost_frame(r.exc_info[2])}" for r in ours][:5]
    assert wire.getvalue() == ""
    shown = " ".join(str(getattr(x, "value", "")) for x in _widgets(page.widget()) if isinstance(x, w.HTML))
    assert "Traceback" not in shown and "site-packages" not in shown and str(ROOT) not in shown
    assert "<img src=x" not in shown   # markup typed into a field is shown as text, if at all
    assert files_on_disk(watched, SKIP) == before, "a visitor's input wrote on the server's disk"
    assert sent >= 2 * len(inputs)
    # the page still answers: every text typed back as it was, the results are current again
    for x, value in typed:
        x.value = value
    page.safe_refresh()
    assert not page.stale, (page.error, page.invalid)
