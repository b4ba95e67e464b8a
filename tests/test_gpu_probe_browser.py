"""Page 04 in a real browser (Voila + headless Debian Chromium): on this machine without a GPU it says so,
the labelled demo samples live (progress bar, chart, verdicts, waste) from a background thread, and the
measured utilization is handed to page 03. Screenshots go to test-artifacts/."""

from __future__ import annotations

import pytest

from .browser import ARTIFACTS, assert_no_traceback, wait_ready
from .test_probe import has_real_gpu

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]


@pytest.fixture
def server(voila_server):
    return voila_server


@pytest.fixture
def page(browser_page):
    return browser_page


def test_probe_page_no_gpu_message_then_a_live_demo(server, page):
    page.goto(server.page("04_gpu_probe.ipynb"), timeout=180000)  # the kernel may still be starting
    wait_ready(page)
    assert_no_traceback(page)
    if not has_real_gpu():
        page.wait_for_selector(".gc-probe-nogpu")
        text = page.inner_text(".gc-probe-banner")
        assert "This server has no NVIDIA GPU" in text and "On a machine with an NVIDIA GPU" in text
    # tick the demo: a labelled banner, two simulated GPUs in the table
    page.click(".gc-probe-demo-toggle input")
    page.wait_for_selector(".gc-probe-demo")
    assert "DEMO" in page.inner_text(".gc-probe-banner")
    page.wait_for_function("() => document.querySelector('.gc-probe-gpus').innerText.includes('RTX 4090')")
    # one hour of simulated time, every minute: the chart grows while the progress bar fills
    page.select_option(".gc-probe-duration select", label="60.0 min")
    page.select_option(".gc-probe-interval select", label="60 s")
    page.click(".gc-probe-start")
    page.wait_for_selector(".gc-probe-chart .main-svg", timeout=30000)
    page.wait_for_function(
        "() => document.querySelector('.gc-probe-progress-label').innerText.includes('Done: 60 samples')",
        timeout=60000)
    assert page.locator(".gc-probe-chart .scatterlayer .trace").count() == 6
    verdicts = page.inner_text(".gc-probe-verdicts")
    assert "GPU 0 is IDLE" in verdicts and "GPU 1 is under MEMORY PRESSURE" in verdicts
    assert "idle GPU-hours" in page.inner_text(".gc-probe-waste")
    # a bad electricity price is shown next to the input
    page.fill(".gc-probe-kwh input", "cheap")
    page.press(".gc-probe-kwh input", "Enter")
    page.wait_for_function("() => document.querySelector('.gc-inputs').innerText.includes(\"'cheap' is not a number\")")
    page.fill(".gc-probe-kwh input", "0.25")
    page.press(".gc-probe-kwh input", "Enter")
    page.wait_for_function("() => document.querySelector('.gc-probe-summary').innerText.includes('USD')")
    # hand the utilization to the TCO page
    page.click(".gc-probe-to-tco")
    page.wait_for_selector(".gc-probe-to-tco-msg .gc-msg-ok")
    assert "38.8" in page.inner_text(".gc-probe-to-tco-msg")  # (32.67 + 45) / 2
    href = page.get_attribute(".gc-to-tco-link", "href")
    assert "utilization=0.3883" in href and "gpu=rtx-4090" in href
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "04_gpu_probe-demo.png"), full_page=True)
    assert_no_traceback(page)


@pytest.mark.parametrize("lang, head, total, download", [
    ("en", "Who used the GPUs, and what it cost (showback)", "Total", "Download the bill (gpu-bill.csv)"),
    ("zh", "谁用了 GPU，花了多少钱（成本分摊）", "合计", "下载账单（gpu-bill.csv）")])
def test_the_demo_watch_bills_each_user_in_both_languages(server, page, lang, head, total, download):
    """Issue 27: after a demo watch, page 04 shows who used the cards and what each owes — a table with the idle
    line and the total, a stacked chart per user, and the bill as a CSV download made in the browser."""
    page.goto(server.page("04_gpu_probe.ipynb", f"?lang={lang}"), timeout=180000)
    wait_ready(page)
    assert_no_traceback(page)
    page.click(".gc-probe-demo-toggle input")
    page.wait_for_selector(".gc-probe-demo")
    # an hour of simulated time every minute (the choices in gpucost.ui.gpu_probe DURATIONS_S / INTERVALS_S)
    page.select_option(".gc-probe-duration select", index=5)
    page.select_option(".gc-probe-interval select", index=4)
    page.click(".gc-probe-start")
    page.wait_for_function(f"() => document.querySelector('.gc-probe-showback').innerText.includes({total!r})",
                           timeout=90000)
    bill = page.inner_text(".gc-probe-showback")
    assert head in bill and total in bill
    assert page.locator(".gc-probe-showback table tr").count() >= 4   # several users, the idle line, the total
    link = page.locator(".gc-probe-showback a[download]")
    assert link.count() == 1 and download in link.inner_text()
    assert link.get_attribute("href").startswith("data:text/csv")
    page.wait_for_selector(".gc-probe-sb-chart .main-svg", timeout=30000)
    ARTIFACTS.mkdir(exist_ok=True)
    page.locator(".gc-probe-showback").scroll_into_view_if_needed()
    page.locator(".gc-probe-showback").screenshot(path=str(ARTIFACTS / f"04_gpu_probe-showback-{lang}.png"))
    page.locator(".gc-probe-sb-chart").screenshot(path=str(ARTIFACTS / f"04_gpu_probe-showback-chart-{lang}.png"))
    assert_no_traceback(page)
