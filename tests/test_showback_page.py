"""Page 04's showback section: the demo's processes of several users billed at the cards' owned cost (the same
engine and rates as `gpucost showback`), the idle share, the CSV download of the bill, both languages.
GPU-hours worked out by hand from the demo script (gpucost.fake_nvml.DEMO_SCRIPT)."""

from __future__ import annotations

import base64
import re

import pytest

from gpucost.catalog import Catalog
from gpucost.economics import Ownership
from gpucost.showback import card_rate
from gpucost.ui.gpu_probe import GpuProbePage

from .test_gpu_probe_page import TINY, _reset, demo_page  # noqa: F401 (page 04's demo page and NVML reset)


def test_before_sampling_the_section_says_what_it_will_show():
    page = demo_page()
    rec = page.results_record()
    assert rec["showback"] is None
    assert "Start sampling to see who used the GPUs" in rec["showback_html"]


def test_demo_hour_billed_per_user_with_the_idle_share_and_a_csv():
    # an hour at 60 s: RTX 4090 alice 62 % then 1 % (20 and 40 samples), bob 28 % then 2 %; A100 carol 35 %,
    # dave 8 %, alice 2 %. GPU-hours: alice (20×0.62 + 40×0.01)/60 + 0.02 = 0.2333, bob 0.1067, carol 0.35,
    # dave 0.08; idle = 2 − 0.77 = 1.23 of the 2 card-hours (61.5 %)
    page = demo_page(watch_s=3600, interval_s=60, amortize_years=3)
    page.sb_idle.value = "separate"
    b = page.results_record()["showback"]
    hours = {ln["name"]: ln["gpu_hours"] for ln in b["lines"]}
    assert hours == pytest.approx({"alice": 0.23333, "bob": 0.10667, "carol": 0.35, "dave": 0.08, "(idle)": 1.23},
                                  abs=1e-4)
    assert b["idle_share"] == pytest.approx(1.23 / 2, abs=1e-4)
    # each card costs its owned rate for the hour (economics via showback.card_rate), to the cent
    cat = Catalog(data_dir=TINY)
    own = Ownership(years=3)
    cents = [round(card_rate(cat, g, "USD", ownership=own).per_hour * 100) for g in ("rtx-4090", "a100-80gb-sxm")]
    assert b["total_cents"] == sum(cents) == sum(ln["cost_cents"] for ln in b["lines"])
    # the CSV in the download link is the bill
    html_ = page.showback_box.value
    m = re.search(r'download="gpu-bill.csv" href="data:text/csv;base64,([^"]+)"', html_)
    assert m, html_
    text = base64.b64decode(m.group(1)).decode("utf-8")
    assert text.splitlines()[0].startswith("user,cost_usd,gpu_hours")
    assert text.splitlines()[-1].startswith(f"(total),{sum(cents) / 100:.2f},")
    assert "Idle time: 61.5 % of the card-hours" in html_


def test_by_process_and_spread():
    page = demo_page(watch_s=600, interval_s=60)
    page.sb_by.value = "pod"
    names = {ln["name"] for ln in page.results_record()["showback"]["lines"]}
    assert "4242 python train.py (demo)" in names and "(idle)" not in names  # spread: no idle line


def test_chinese_page():
    page = demo_page(watch_s=600, interval_s=60, lang="zh")
    page.sb_idle.value = "separate"
    html_ = page.showback_box.value
    assert "谁用了 GPU" in html_ and "（空闲）" in html_ and "下载账单" in html_
    assert dict(page.sb_idle.options)["单独列为一行"] == "separate"


def test_page_and_cli_give_the_same_bill():
    """The page and `gpucost showback --from probe --demo` bill the same demo hour the same, to the cent."""
    from .conftest import cli_json

    page = GpuProbePage(demo=True, frame_delay_s=0, watch_s=3600, interval_s=60)
    on_page = {ln["name"]: ln["cost_cents"] for ln in page.results_record()["showback"]["lines"]}
    out = cli_json("showback", "--from", "probe", "--demo", "--watch", "3600", "--interval", "60")
    assert {ln["name"]: ln["cost_cents"] for ln in out["lines"]} == on_page
    assert sum(on_page.values()) == out["total_cents"]


def test_stacked_chart_of_cost_per_user_over_the_watch():
    # an hour in 12 five-minute bars: alice's cost is in every bar (A100 notebook), bob's too; idle on top
    page = demo_page(watch_s=3600, interval_s=60)
    rec = page.results_record()
    assert rec["showback_chart_traces"] == ["alice", "bob", "carol", "dave", "(idle)"]
    t = page.bill_over_time
    assert len(t) == 12
    # each bar stacks up to both cards' cost over five minutes
    per_hour = sum(c["per_hour"] for c in rec["showback"]["cards"])
    assert t.sum(axis=1).to_list() == pytest.approx([per_hour * 5 / 60] * 12)
    # alice ran 62 % of the RTX 4090 in the first 20 minutes and 1 % after: her first bar is the larger
    assert t["alice"].iloc[0] > t["alice"].iloc[-1] > 0
