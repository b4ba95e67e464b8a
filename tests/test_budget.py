"""The shared server protects itself (issue 19): a computation past its CPU or memory budget, or an upload
past its size, becomes a message next to the results, which are marked out of date; the kernel answers the
next input. Pages are built in-process, as the kernel builds them."""

from __future__ import annotations

import pytest

from gpucost.ui import budget
from gpucost.ui.card_choice import CardChoicePage
from gpucost.ui.sharing_scaling import SharingScalingPage

pytestmark = pytest.mark.timeout(120)  # a budget that does not hold would spin until this stops it


@pytest.fixture
def small_budget(monkeypatch):
    monkeypatch.setattr(budget, "COMPUTE_CPU_S", 0.5)
    monkeypatch.setattr(budget, "COMPUTE_MIB", 64)


def test_a_computation_past_its_cpu_budget_is_stopped_and_said(small_budget, monkeypatch):
    page = CardChoicePage()
    summary = page.summary.value
    assert not page.stale

    def spin():
        while True:
            pass

    monkeypatch.setattr(page, "refresh", spin)
    page.vram.value = 16  # an input change recomputes
    assert page.stale and "more than 0.5 s of computing" in page.error
    assert "Out of date" in page.status.value and "gc-stale" in page.results._dom_classes
    assert page.summary.value == summary  # the last results stay, marked out of date
    # the kernel answers the next input: a computation within its budget makes the page current again
    monkeypatch.undo()
    page.vram.value = 20
    assert not page.stale and page.summary.value != summary


def test_a_computation_past_its_memory_budget_is_stopped_and_said(small_budget, monkeypatch):
    page = CardChoicePage(lang="zh")
    held: list[bytes] = []

    def grow():
        for _ in range(2048):  # 2 GiB at most, should the budget not hold
            held.append(b"x" * 2**20)  # written: resident, not a lazy zero page

    monkeypatch.setattr(page, "refresh", grow)
    page.vram.value = 16
    assert page.stale and "64 MiB" in page.error and "共享服务器" in page.error
    assert len(held) < 1024  # stopped well before 1 GiB
    held.clear()


def test_an_upload_past_its_size_or_budget_is_refused_next_to_the_input(small_budget, monkeypatch):
    page = SharingScalingPage(tab=2)
    big = b"arrival_hour,gpu_hours,gpus\n" + b"0,1,1\n" * (budget.MAX_UPLOAD_BYTES // 6 + 1)
    page._on_trace({"new": [{"name": "huge.csv", "content": big}]})
    assert "huge.csv is larger than 1,024 KB" in page.trace_msg.value
    # a trace that is small but slow to read is cut off by the budget, said next to the upload
    from gpucost import plan

    def slow(*_a, **_k):
        while True:
            pass

    monkeypatch.setattr(plan, "read_trace", slow)
    page._on_trace({"new": [{"name": "slow.csv", "content": b"arrival_hour,gpu_hours,gpus\n0,1,1\n"}]})
    assert "more than 0.5 s of computing" in page.trace_msg.value


def test_a_tampered_widget_message_sends_no_traceback_to_the_page(monkeypatch):
    # a page that sends a dropdown index of 999: ipywidgets refuses it in the kernel and, by default, calls
    # IPython's showtraceback, which sends the traceback (server paths included) to the visitor. In the
    # public app's kernel (the gpucost kernelspec sets GPUCOST_PUBLIC_KERNEL=1) it goes to the server's log
    import io
    import sys

    import ipywidgets.widgets.widget as ww

    shown: list[bool] = []

    class Shell:  # what get_ipython() is in a kernel
        def showtraceback(self):
            shown.append(True)

    monkeypatch.setattr(ww, "get_ipython", lambda: Shell())
    monkeypatch.setattr(ww.Widget, "_handle_msg", ww.Widget._handle_msg)  # restored after the test
    tampered = {"content": {"data": {"method": "update", "state": {"index": 999}, "buffer_paths": []}},
                "buffers": []}
    page = CardChoicePage()
    page.precision._handle_msg(tampered)
    assert shown == [True]  # the leak, as ipywidgets does it

    wire, server = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stderr", wire)
    monkeypatch.setattr(budget._SERVER_LOG, "stream", server)
    monkeypatch.setenv(budget.PUBLIC_KERNEL_ENV, "1")
    assert budget.guard_widget_messages()
    page.precision._handle_msg(tampered)
    assert shown == [True] and wire.getvalue() == ""
    assert "refused a widget message for Dropdown" in server.getvalue() and "index out of bounds" in server.getvalue()
    assert page.precision.value == "bf16" and not page.stale  # the page's answer stands
    page.precision._handle_msg({"content": {"data": {"method": "update", "state": {"index": 3},
                                                     "buffer_paths": []}}, "buffers": []})
    assert page.precision.value == "fp8" and "FP8" in page.chart.figure["layout"]["title"]["text"]


def test_the_public_kernel_is_the_one_that_guards():
    import json

    from gpucost.ui import JUPYTER_DATA

    spec = json.loads((JUPYTER_DATA / "kernels" / "gpucost" / "kernel.json").read_text())
    assert spec["env"][budget.PUBLIC_KERNEL_ENV] == "1"


def test_a_pages_shutdown_token_is_its_kernel_id_signed_with_the_servers_secret(monkeypatch):
    # HMAC-SHA256 of the kernel id under the secret the server drew (gpucost/ui/server.py); another kernel id
    # or another server's secret gives another token, and outside the public server a page carries none
    import hashlib
    import hmac

    from gpucost.ui import server

    kid, secret = "0f6b8a2e-5d1c-4e7a-9b3f-2c8d1e0a7b64", "ab" * 32
    assert server.kernel_token(kid, secret) == hmac.new(secret.encode(), kid.encode(), hashlib.sha256).hexdigest()
    assert server.kernel_token(kid, "cd" * 32) != server.kernel_token(kid, secret)
    assert server.kernel_token(kid.replace("0f", "1f"), secret) != server.kernel_token(kid, secret)
    monkeypatch.delenv(server.SECRET_ENV, raising=False)
    assert server.page_token() is None and server.token_widget() is None
    monkeypatch.setenv(server.SECRET_ENV, secret)
    monkeypatch.setattr(server, "own_kernel_id", lambda: kid)
    box = server.token_widget()
    assert f'data-gpucost-token="{server.kernel_token(kid, secret)}"' in box.value
    assert box.layout.display == "none"
