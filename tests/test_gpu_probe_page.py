"""Page 04 (GPU probe): the no-GPU message on this machine, the labelled demo with hand-computed numbers,
the hand-off to page 03, bad inputs; and the notebook run headless with papermill (tests/test_notebooks.py
also runs it in both languages without parameters: the no-GPU path on a machine without a driver)."""

from __future__ import annotations

import html
import time
from urllib.parse import parse_qsl, urlsplit

import pytest

from gpucost import probe
from gpucost.catalog import Catalog
from gpucost.ui.gpu_probe import GpuProbePage

from .conftest import ROOT, run_notebook
from .test_probe import has_real_gpu

TINY = ROOT / "tests" / "fixtures" / "tiny_catalog"


@pytest.fixture(autouse=True)
def _reset():
    yield
    probe.set_nvml(None)


def demo_page(**kw) -> GpuProbePage:
    kw.setdefault("catalog", Catalog(data_dir=TINY))
    return GpuProbePage(demo=True, frame_delay_s=0, **kw)


@pytest.mark.skipif(has_real_gpu(), reason="this machine has an NVIDIA GPU")
def test_without_a_gpu_the_page_says_so_and_what_it_would_show():
    page = GpuProbePage()
    rec = page.results_record()
    assert rec["error"] is None and rec["available"] is False and rec["demo"] is False
    assert "This server has no NVIDIA GPU" in rec["banner"]
    assert "On a machine with an NVIDIA GPU this page shows" in rec["banner"]
    assert "LibraryNotFound" in rec["reason"]
    assert "DEMO" not in rec["banner"]
    assert page.start_btn.disabled  # nothing to sample
    page.start_watch(duration_s=10, interval_s=1)
    assert page.samples == [] and "tick “Demo”" in page.progress_label.value


def test_demo_is_labelled_and_its_numbers_are_the_scripted_ones():
    """Demo script: RTX 4090 at 92 % and 410 W for 20 min, then 3 % and 35 W; A100 at 45 %, 250 W, 95.2 %
    memory. One hour at 60 s → 60 samples."""
    page = demo_page(watch_s=3600, interval_s=60, kwh_price=0.25)
    rec = page.results_record()
    assert rec["error"] is None and rec["available"] is True and rec["backend"] == "fake"
    assert "DEMO" in rec["banner"] and "None of these numbers come from this machine" in rec["banner"]
    assert [g["catalog_id"] for g in rec["gpus"]] == ["rtx-4090", "a100-80gb-sxm"]
    w = rec["watch"]
    assert w["samples"] == 60 and rec["progress"] == 1.0
    g0, g1 = w["gpus"]
    assert g0["util_mean_pct"] == pytest.approx((20 * 92 + 40 * 3) / 60)
    assert g0["idle_s"] == 2400
    # (20 × 410 + 40 × 35) W × 60 s = 576 000 J = 0.16 kWh; × 0.25 = 0.04
    assert g0["energy_kwh"] == pytest.approx(0.16) and g0["energy_cost"] == pytest.approx(0.04)
    assert w["totals"]["idle_fired"] == [0] and w["totals"]["memory_fired"] == [1]
    # waste: 2/3 idle GPU-hour × 0.69 USD/h (tiny catalog, runpod RTX 4090 on demand) = 0.46 USD
    assert w["waste"][0]["wasted"] == pytest.approx(0.46)
    assert "0.667 idle GPU-hours × 0.690 USD/h (cloud on-demand price) = 0.460 USD" in rec["waste_text"]
    assert "GPU 0 is IDLE" in rec["verdicts"] and "GPU 1 is under MEMORY PRESSURE" in rec["verdicts"]
    assert rec["chart_traces"] == 6 and rec["chart_points"] == 60  # 3 traces × 2 GPUs
    assert rec["chart_title"].endswith("DEMO")


def test_policy_inputs_recompute_without_sampling_again():
    page = demo_page(watch_s=3600, interval_s=60)
    page.idle_for.value = "45"  # the idle run spans 39 min (1200 s to 3540 s): not 45 → no longer fires
    assert page.report.verdict("idle", 0).status == "pending"
    page.idle_for.value = "10"
    assert page.report.verdict("idle", 0).status == "fired"
    page.mem_high.value = 96  # the A100 sits at 95.2 %
    assert page.report.verdict("memory", 1).status == "ok"
    page.amortize.value = "0"
    assert page.stale and "amortize_years" in page.invalid and "greater than 0" in page.invalid["amortize_years"]
    assert "out of date" in page.status.value.lower()
    page.amortize.value = "3"
    assert not page.stale
    page.kwh.value = "cheap"
    assert page.stale and "cheap" in page.fields["kwh"].message.value and "is not a number" in page.invalid["kwh"]


def test_hand_off_to_the_tco_page(sandbox):
    page = demo_page()
    assert page.send_to_tco() is None and "Sample first" in page.to_tco_msg.value
    page.start_watch(duration_s=3600, interval_s=60, blocking=True)
    rec = page.send_to_tco()
    # mean over the two GPUs: (32.667 + 45) / 2 = 38.83 %
    assert rec["utilization_pct"] == pytest.approx((((20 * 92 + 40 * 3) / 60) + 45) / 2, abs=0.01)
    assert rec["demo"] is True and rec["gpu_id"] == "rtx-4090" and rec["samples"] == 60
    assert "demo numbers" in page.to_tco_msg.value
    # the numbers travel in the link (the visitor's browser), not through a file on the server
    assert list(sandbox.rglob("*.json")) == []
    query = dict(parse_qsl(urlsplit(rec["url"]).query))
    assert urlsplit(rec["url"]).path == "03_scenario_tco.ipynb"
    assert float(query["utilization"]) == pytest.approx(rec["utilization_pct"] / 100, abs=1e-4)
    assert query["gpu"] == "rtx-4090" and query["measured"] == "demo" and query["lang"] == "en"
    assert f'href="{html.escape(rec["url"])}"' in page.to_tco_msg.value
    # page 03 opened with that link starts from the measured load on the measured card
    from gpucost.ui.scenario_tco import ScenarioTcoPage

    tco = ScenarioTcoPage(mc_draws=0, catalog=Catalog())
    tco.apply_url_params(query)
    sc = tco.current_scenario()
    assert sc.values["owned.gpu"] == "rtx-4090" and sc.values["owned.count"] == 2
    assert sc.values["demand.utilization"] == pytest.approx(rec["utilization_pct"] / 100, abs=1e-4)
    assert "measured on page 04" in tco.summary.value and "demo numbers" in tco.summary.value


def test_live_sampling_runs_in_the_background_and_stops():
    page = demo_page()
    page._frame_delay_s = 0.02
    page.start_watch(duration_s=7200, interval_s=15)  # 480 frames × 0.02 s ≈ 10 s unless stopped
    time.sleep(0.3)
    assert page.running and 0 < page.progress.value < 1
    page.stop_btn.click()
    page._thread.join(5)
    assert not page.running and page.report is not None
    assert "Stopped after" in page.progress_label.value
    n = len({s.t_s for s in page.samples})
    assert 0 < n < 480 and page.report.gpus[0].samples == n


def test_switching_the_demo_off_goes_back_to_the_real_nvml():
    page = demo_page()
    assert page.result.backend == "fake"
    page.demo_cb.value = False
    assert page.result.backend == "nvml" and not probe.uses_fake()


def test_chinese_page_uses_cny_and_chinese_text():
    page = demo_page(watch_s=600, interval_s=60, lang="zh")
    rec = page.results_record()
    assert rec["currency"] == "CNY" and rec["error"] is None
    assert "演示" in rec["banner"]
    assert rec["values"]["0"]["hourly_value"] == pytest.approx(0.69 * 7.1)  # tiny catalog, 7.1 CNY/USD


@pytest.mark.notebook
@pytest.mark.timeout(300)
def test_notebook_demo_run_records_the_hand_computed_numbers(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUCOST_DATA_DIR", str(TINY))
    rec = run_notebook("04_gpu_probe.ipynb", {"demo": True, "watch_s": 3600.0, "interval_s": 60.0,
                                              "idle_for_min": 30.0}, tmp_path)
    assert rec["error"] is None and rec["demo"] is True
    w = rec["watch"]
    assert w["samples"] == 60
    assert w["gpus"][0]["util_p95_pct"] == 92
    assert w["totals"]["idle_gpu_hours"] == pytest.approx(2 / 3)
    assert w["totals"]["wasted"] == pytest.approx(2 / 3 * 0.69)
