"""The sampler, summary, policies and waste on hand-made sample series; expected values worked by hand."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpucost import monitor
from gpucost.catalog import Catalog
from gpucost.errors import GpucostError
from gpucost.fake_nvml import SimClock
from gpucost.monitor import Policy, Sample, summarize

from .conftest import ROOT

TINY = ROOT / "tests" / "fixtures" / "tiny_catalog"


def series(utils, *, interval=60.0, power=None, mem_pct=None, index=0, t0=0.0):
    """Samples at t0, t0 + interval, … with the given utilization (and power [W], memory [% of 1000 MiB])."""
    out = []
    for k, u in enumerate(utils):
        out.append(Sample(t_s=t0 + k * interval, index=index, utilization_gpu_pct=u,
                          power_w=None if power is None else power[k],
                          memory_used_mib=None if mem_pct is None else mem_pct[k] * 10.0,
                          memory_total_mib=None if mem_pct is None else 1000.0))
    return out


# -- durations --------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, seconds", [("30m", 1800), ("1h30m", 5400), ("90s", 90), ("2d", 172800),
                                           ("500ms", 0.5), ("1w", 604800), ("0s", 0)])
def test_parse_duration(text, seconds):
    assert monitor.parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "5 minutes", "m", "1.5h", "30", "-5m", "5m1h"])
def test_parse_duration_rejects(text):
    with pytest.raises(GpucostError, match="bad duration"):
        monitor.parse_duration(text)


@pytest.mark.parametrize("seconds, text", [(5400, "1h30m"), (0, "0s"), (90, "1m30s"), (1800, "30m"),
                                           (86400 + 60, "1d1m"), (0.25, "250ms")])
def test_format_duration(seconds, text):
    assert monitor.format_duration(seconds) == text


# -- the sampler ------------------------------------------------------------------------------------

def test_sampler_takes_n_samples_on_a_fixed_grid():
    clock = SimClock(start=100.0)
    slept, progress = [], []

    def sleep(dt):
        slept.append(dt)
        clock.sleep(dt)

    def probe_fn():
        clock.t += 0.3  # a slow probe: 0.3 s per call
        return [{"index": 0, "utilization_gpu_pct": 50}]

    samples = monitor.run_sampler(probe_fn, 5, 1, clock=clock, sleep=sleep,
                                  on_sample=lambda b, f: progress.append(f))
    # sample k is taken at k s (the time read before the probe call); sleeps shrink by the probe's 0.3 s
    assert [s.t_s for s in samples] == [0, 1, 2, 3, 4]
    assert slept == pytest.approx([0.7, 0.7, 0.7, 0.7])
    assert progress == pytest.approx([0.2, 0.4, 0.6, 0.8, 1.0])


def test_sampler_stops_when_asked():
    clock = SimClock()
    n = []
    samples = monitor.run_sampler(lambda: [{"index": 0}], 10, 1, clock=clock, sleep=clock.sleep,
                                  on_sample=lambda b, f: n.append(1), should_stop=lambda: len(n) >= 2)
    assert len(samples) == 2


@pytest.mark.parametrize("duration, interval, words", [
    (0, 1, "duration"), (5, 0, "interval"), (5, 10, "longer than the duration"),
    (math.nan, 1, "duration"), (10**7, 1, "too many")])
def test_sampler_rejects_bad_timing(duration, interval, words):
    with pytest.raises(GpucostError, match=words):
        monitor.run_sampler(lambda: [], duration, interval)


def test_sample_count_rounds_up_a_partial_interval():
    assert monitor.check_sampling(5, 2) == 3  # samples at 0, 2, 4
    assert monitor.check_sampling(6, 2) == 3


# -- summary --------------------------------------------------------------------------------------

def test_summary_of_a_hand_made_series():
    # six samples, 60 s apart: utilization 100, 90, 10, 10, 10, 50 %; power 400, 380, 50, 50, 50, 200 W
    s = series([100, 90, 10, 10, 10, 50], power=[400, 380, 50, 50, 50, 200])
    rep = summarize(s, 60, Policy(idle_util_pct=20, idle_for_s=120), kwh_price=0.30)
    g = rep.gpus[0]
    assert g.samples == 6 and g.covered_s == 360
    assert g.util_mean_pct == pytest.approx(270 / 6)  # 45.0
    # p95: sorted 10 10 10 50 90 100, rank 0.95 × 5 = 4.75 → 90 + 0.75 × (100 − 90) = 97.5
    assert g.util_p95_pct == pytest.approx(97.5)
    assert g.util_max_pct == 100
    assert g.idle_s == 180 and g.idle_fraction == pytest.approx(0.5)
    # (400 + 380 + 50 + 50 + 50 + 200) W × 60 s = 67 800 J = 0.018833 kWh; × 0.30 = 0.00565
    assert g.energy_kwh == pytest.approx(67800 / 3.6e6)
    assert g.energy_cost == pytest.approx(67800 / 3.6e6 * 0.30)
    assert g.power_mean_w == pytest.approx(1130 / 6)
    assert g.energy_complete


def test_irregular_intervals_weight_each_sample_by_the_time_it_stands_for():
    # t = 0, 10, 40 with 0, 100, 0 %, interval 10: weights 10, 30, 10 s
    s = [Sample(0, 0, 0), Sample(10, 0, 100), Sample(40, 0, 0)]
    g = summarize(s, 10).gpus[0]
    assert g.covered_s == 50
    assert g.util_mean_pct == pytest.approx(100 * 30 / 50)  # 60
    assert g.idle_s == 20


def test_two_gpus_are_summed_separately_and_in_totals():
    s = series([0, 0], interval=1800, power=[100, 100]) + series([100, 100], interval=1800, power=[300, 300],
                                                                 index=1)
    rep = summarize(s, 1800)
    assert [g.util_mean_pct for g in rep.gpus] == [0, 100]
    assert rep.totals["utilization_mean_pct"] == 50
    assert rep.totals["idle_gpu_hours"] == 1.0  # GPU 0: 2 × 1800 s
    # 100 W × 3600 s + 300 W × 3600 s = 1.44e6 J = 0.4 kWh
    assert rep.totals["energy_kwh"] == pytest.approx(0.4)


# -- policies ---------------------------------------------------------------------------------------

def test_idle_fires_after_the_duration_and_not_before():
    s = series([100, 90, 10, 10, 10, 50])
    fired = summarize(s, 60, Policy(idle_util_pct=20, idle_for_s=120)).verdict("idle", 0)
    # idle at t = 120, 180, 240: 240 − 120 = 120 s >= 120 s → fires at t = 240
    assert fired.status == "fired" and fired.fired_at_s == 240
    assert [(e.start_s, e.last_s, e.covered_s) for e in fired.episodes] == [(120, 240, 180)]
    not_yet = summarize(s, 60, Policy(idle_util_pct=20, idle_for_s=121)).verdict("idle", 0)
    assert not_yet.status == "ok" and not_yet.fired_at_s is None and not_yet.longest_s == 180


def test_idle_now_but_not_long_enough_is_pending():
    v = summarize(series([80, 5, 5]), 60, Policy(idle_for_s=1800)).verdict("idle", 0)
    assert v.status == "pending" and v.longest_s == 120


def test_threshold_is_strictly_below():
    v = summarize(series([20, 20, 20]), 60, Policy(idle_util_pct=20, idle_for_s=0)).verdict("idle", 0)
    assert v.status == "ok"


def test_a_missing_reading_breaks_an_idle_run():
    s = series([5, 5, None, 5, 5])
    rep = summarize(s, 60, Policy(idle_for_s=120))
    v = rep.verdict("idle", 0)
    # runs 0–60 and 180–240: each 60 s apart, under 120 s → not fired; the last sample is idle → pending
    assert v.status == "pending" and len(v.episodes) == 2
    assert rep.gpus[0].idle_s == 4 * 60  # the unknown sample counts neither way


def test_no_readings_at_all_is_unknown():
    rep = summarize(series([None, None]), 60)
    assert rep.verdict("idle", 0).status == "unknown" and rep.verdict("memory", 0).status == "unknown"
    assert rep.gpus[0].util_mean_pct is None and rep.gpus[0].util_p95_pct is None


def test_memory_pressure_fires_above_the_threshold():
    # memory 50, 95, 95, 95, 40, 92 % at 60 s; threshold 90 % for 60 s
    s = series([50] * 6, mem_pct=[50, 95, 95, 95, 40, 92])
    rep = summarize(s, 60, Policy(mem_high_pct=90, mem_for_s=60))
    v = rep.verdict("memory", 0)
    assert v.status == "fired" and v.fired_at_s == 120  # run from 60 s; 120 − 60 >= 60
    assert [(e.start_s, e.last_s) for e in v.episodes] == [(60, 180), (300, 300)]
    assert rep.gpus[0].mem_used_max_pct == 95
    at_90 = summarize(series([50], mem_pct=[90]), 60, Policy(mem_high_pct=90)).verdict("memory", 0)
    assert at_90.status == "ok"  # "above", not "at"


@pytest.mark.parametrize("policy", [Policy(idle_util_pct=0), Policy(idle_util_pct=101), Policy(idle_for_s=-1),
                                    Policy(mem_high_pct=math.nan)])
def test_bad_policy_is_a_clear_error(policy):
    with pytest.raises(GpucostError):
        summarize(series([1]), 60, policy)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(0, 100)), min_size=1, max_size=40),
       st.integers(1, 100), st.integers(0, 3000))
def test_policy_properties(utils, thr, for_s):
    rep = summarize(series(utils), 60, Policy(idle_util_pct=thr, idle_for_s=for_s))
    g, v = rep.gpus[0], rep.verdict("idle", 0)
    known = [u for u in utils if u is not None]
    if known:
        assert 0 <= g.idle_s <= g.covered_s
        assert min(known) <= g.util_mean_pct <= max(known)
        assert min(known) <= g.util_p95_pct <= max(known)
    # fired exactly when some run of idle samples spans at least for_s
    assert (v.status == "fired") == any(e.last_s - e.start_s >= for_s for e in v.episodes)
    # a stricter (longer) duration never fires where a shorter one did not
    longer = summarize(series(utils), 60, Policy(idle_util_pct=thr, idle_for_s=for_s + 60)).verdict("idle", 0)
    assert not (longer.status == "fired" and v.status != "fired")


# -- value and waste --------------------------------------------------------------------------------

def test_card_value_prefers_the_cloud_price_else_the_amortized_new_price():
    cat = Catalog(data_dir=TINY)
    a100 = monitor.card_value(cat, "a100-80gb-sxm", "USD")
    # tiny catalog: aws p4de 40.96 / 8 = 5.12 and lambda 1.79 per GPU-hour → 1.79
    assert a100.hourly_basis == "cloud-on-demand" and a100.hourly_value == pytest.approx(1.79)
    assert a100.price_new == 15000 and "lambda" in a100.cloud_offer
    r3060 = monitor.card_value(cat, "rtx-3060-12gb", "USD")
    # no cloud offer: the value a new card loses each hour it is owned. Tiny catalog: new 329, used 200 four
    # years after its mid-2021 release, so it keeps rho = (200/329)^(1/4) a year; over 3 years it loses
    # 329 × (1 − rho³), spread over 3 × 8760 h
    rho = (200 / 329) ** (1 / 4)
    assert r3060.hourly_basis == "amortized-new"
    assert r3060.hourly_value == pytest.approx(329 * (1 - rho**3) / (3 * 8760))
    two = monitor.card_value(cat, "rtx-3060-12gb", "USD", amortize_years=2)
    assert two.hourly_value == pytest.approx(329 * (1 - rho**2) / (2 * 8760))
    cny = monitor.card_value(cat, "rtx-4090", "CNY")
    assert cny.price_new == 12999  # the CNY row is used for a CNY buyer
    assert cny.hourly_value == pytest.approx(0.69 * 7.1)  # runpod 0.69 USD/h at 7.1 CNY per USD


def test_card_value_errors():
    cat = Catalog(data_dir=TINY)
    with pytest.raises(GpucostError, match="unknown GPU"):
        monitor.card_value(cat, "rtx-9999")
    with pytest.raises(GpucostError, match="amortization"):
        monitor.card_value(cat, "rtx-4090", amortize_years=0)


def test_waste_is_idle_hours_times_the_hourly_value():
    cat = Catalog(data_dir=TINY)
    values = {0: monitor.card_value(cat, "a100-80gb-sxm"), 1: monitor.card_value(cat, "rtx-3060-12gb")}
    # GPU 0: idle for 1 h of 2 h (two 30-min samples at 5 %, two at 80 %); GPU 1: idle 2 h of 2 h
    s = series([5, 5, 80, 80], interval=1800) + series([0, 0, 0, 0], interval=1800, index=1)
    rep = summarize(s, 1800, values=values)
    w0, w1 = rep.waste
    assert w0.idle_hours == 1 and w0.wasted == pytest.approx(1.79) and w0.basis == "cloud-on-demand"
    assert w0.wasted_per_month == pytest.approx(1.79 * 730 / 2)  # the same rate over 730 h
    hourly_3060 = 329 * (1 - ((200 / 329) ** (1 / 4)) ** 3) / 26280  # see test_card_value_prefers_…
    assert w1.idle_hours == 2 and w1.wasted == pytest.approx(2 * hourly_3060) and w1.basis == "amortized-new"
    assert rep.totals["wasted"] == pytest.approx(1.79 + 2 * hourly_3060)


def test_no_value_no_waste():
    rep = summarize(series([0, 0]), 60, values={0: None})
    assert rep.waste[0].wasted is None and rep.totals["wasted"] is None


# -- catalog match ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name, mib, expected", [
    ("NVIDIA GeForce RTX 4090", 24564, "rtx-4090"),
    ("NVIDIA A100-SXM4-80GB", 81920, "a100-80gb-sxm"),
    ("NVIDIA A100-PCIE-40GB", 40960, "a100-40gb-pcie"),
    ("NVIDIA H100 80GB HBM3", 81559, "h100-sxm"),
    ("NVIDIA H200", 143771, "h200"),
    ("Tesla T4", 15360, "t4"),  # 15360 of 16384 MiB: ECC reserves a part
    ("Tesla V100-SXM2-16GB", 16160, "v100-16gb"),
    ("NVIDIA L4", 23034, "l4"),
    ("NVIDIA RTX 6000 Ada Generation", 49140, "rtx-6000-ada"),
    ("NVIDIA GeForce RTX 4060 Ti", 16380, "rtx-4060-ti-16gb"),
    ("NVIDIA GeForce RTX 4060 Ti", 8188, None),  # the 8 GB variant is not in the catalog
    ("NVIDIA GeForce GTX 1080", 8192, None),
])
def test_nvml_names_map_to_catalog_cards(name, mib, expected):
    gid, note = monitor.match_gpu(Catalog(), name, mib)
    assert gid == expected
    assert (note is None) == (expected is not None)
