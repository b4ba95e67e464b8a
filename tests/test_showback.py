"""Showback (gpucost.showback): who used a shared card and what each owes. Expected amounts are worked out
by hand in each test from the shares and the hourly price; the card's own cost comes from its one home
(gpucost.economics for an owned card, gpucost.pricing for a rented one)."""

from __future__ import annotations

from datetime import UTC, datetime

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpucost.catalog import Catalog
from gpucost.economics import calendar_ownership, card_hourly_cost
from gpucost.errors import GpucostError, UnknownNameError
from gpucost.pricing import card_price
from gpucost.showback import (
    IDLE,
    CardRate,
    allocate,
    bill_csv,
    card_rate,
    largest_remainder,
    mig_fractions,
    parse_period,
    sample_durations,
    usage_frame,
)

from .conftest import ROOT

TINY = ROOT / "tests" / "fixtures" / "tiny_catalog"
T0 = pd.Timestamp("2026-11-01", tz="UTC")
NOV = parse_period("2026-11")  # 30 days = 720 h


def given_rate(per_hour: float, gpu: str | None = "a100-80gb-sxm", mem: float | None = 81920.0) -> CardRate:
    return CardRate(gpu, per_hour, "USD", "given", mem)


def hourly_rows(card: str, hours: int, **users) -> list[dict]:
    """One row per hour per user (``users``: name → SM %)."""
    return [dict(card=card, start=T0 + pd.Timedelta(hours=h), duration_s=3600, user=u, project=f"p-{u}",
                 sm_pct=pct) for h in range(hours) for u, pct in users.items()]


# -- hand-computed allocations ----------------------------------------------------------------------

def test_a_bill_of_a_few_cents_still_says_who_used_what():
    """One minute of a card at 0.066/h is 0.0011, which rounds to no cent: every line costs 0.00, and the shares are
    still each one's part of the exact amount — 30 / 80 and 50 / 80 spread, 30 / 50 / 20 separate —, not 0 %."""
    rows = [dict(card="gpu0", start=T0, duration_s=60, user=u, sm_pct=pct) for u, pct in (("alice", 30), ("bob", 50))]
    u = usage_frame(rows)
    rates = {"gpu0": given_rate(0.066)}
    spread = allocate(u, rates, idle="spread")
    assert spread.total == 0 and all(ln.cost == 0 for ln in spread.lines)
    assert spread.line("alice").share == pytest.approx(0.375) and spread.line("bob").share == pytest.approx(0.625)
    sep = allocate(u, rates, idle="separate")
    assert [(ln.name, round(ln.share, 6)) for ln in sep.lines] == [("bob", 0.5), ("alice", 0.3), (IDLE, 0.2)]


def test_two_users_time_slicing_30_50_with_20_idle():
    # 100 h at 2.00/h = 200.00; alice 30 % and bob 50 % of SM time, 20 % idle
    u = usage_frame(hourly_rows("gpu0", 100, alice=30, bob=50))
    rates = {"gpu0": given_rate(2.0)}
    sep = allocate(u, rates, idle="separate")
    assert [(ln.name, ln.cost) for ln in sep.lines] == [("bob", 100.0), ("alice", 60.0), (IDLE, 40.0)]
    assert sep.line("alice").gpu_hours == pytest.approx(30.0)
    spread = allocate(u, rates, idle="spread")
    # 30/80 = 37.5 % and 50/80 = 62.5 % of 200.00
    assert [(ln.name, ln.cost) for ln in spread.lines] == [("bob", 125.0), ("alice", 75.0)]
    assert spread.line("alice").share == pytest.approx(0.375)
    assert spread.total == sep.total == 200.0
    assert spread.idle_cost == 40.0 and spread.idle_share == pytest.approx(0.2)


def test_the_period_counts_hours_without_samples_as_idle():
    # the same 100 h of use, billed over November (720 h at 2.00 = 1440.00): 30 GPU-h of 720 is alice's
    u = usage_frame(hourly_rows("gpu0", 100, alice=30, bob=50))
    b = allocate(u, {"gpu0": given_rate(2.0)}, period=NOV, idle="separate")
    assert b.total == 1440.0
    assert b.line("alice").cost == 60.0 and b.line("bob").cost == 100.0
    assert b.line(IDLE).cost == 1280.0 and b.line(IDLE).gpu_hours == pytest.approx(640.0)


def test_by_project_and_by_pod():
    u = usage_frame(hourly_rows("gpu0", 10, alice=30, bob=50))
    b = allocate(u, {"gpu0": given_rate(1.0)}, by="project", idle="separate")
    assert {ln.name: ln.cost for ln in b.lines} == {"p-bob": 5.0, "p-alice": 3.0, IDLE: 2.0}
    b = allocate(u, {"gpu0": given_rate(1.0)}, by="pod", idle="separate")
    assert {ln.name: ln.cost for ln in b.lines} == {"(unlabelled)": 8.0, IDLE: 2.0}


def test_mig_3g_40gb_and_4g_40gb_split_a100_80gb_by_the_table():
    # A100 80GB: 3g.40gb = 3 of 7 compute slices, 4g.40gb = 4 of 7 (data/mig_profiles.csv)
    cat = Catalog()
    t = cat.table("mig_profiles")
    row = t[(t["gpu_id"] == "a100-80gb-sxm") & (t["profile"] == "3g.40gb")].iloc[0]
    assert (row["compute_slices"], row["compute_slices_total"]) == (3, 7)
    assert mig_fractions(cat, "a100-80gb-sxm", ["3g.40gb", "4g.40gb"]) == {"3g.40gb": 3 / 7, "4g.40gb": 4 / 7}
    # 70 h at 1.00/h = 70.00 → 30.00 and 40.00, whatever their SM readings say
    rows = [dict(card="gpu0", start=T0 + pd.Timedelta(hours=h), duration_s=3600, user=u, mig_profile=p,
                 sm_pct=5) for h in range(70) for u, p in (("ana", "3g.40gb"), ("ben", "4g.40gb"))]
    b = allocate(usage_frame(rows), {"gpu0": given_rate(1.0)}, idle="separate", catalog=cat)
    assert {ln.name: ln.cost for ln in b.lines} == {"ana": 30.0, "ben": 40.0, IDLE: 0.0}


def test_mig_one_instance_leaves_the_rest_idle_and_nvml_names_are_understood():
    cat = Catalog()
    rows = [dict(card="g", start=T0 + pd.Timedelta(hours=h), duration_s=3600, user="ana",
                 mig_profile="NVIDIA A100-SXM4-80GB MIG 3g.40gb") for h in range(7)]
    b = allocate(usage_frame(rows), {"g": given_rate(1.0)}, idle="separate", catalog=cat)
    assert {ln.name: ln.cost for ln in b.lines} == {"ana": 3.0, IDLE: 4.0}
    with pytest.raises(UnknownNameError, match="3g.40gb"):
        mig_fractions(cat, "a100-80gb-sxm", ["3g.41gb"])


def test_memory_held_rule():
    # 40960 of 81920 MiB and 20480 MiB: a half and a quarter of the card, over 8 h at 1.00
    rows = [dict(card="g", start=T0 + pd.Timedelta(hours=h), duration_s=3600, user=u, memory_mib=m, sm_pct=1)
            for h in range(8) for u, m in (("ana", 40960), ("ben", 20480))]
    b = allocate(usage_frame(rows), {"g": given_rate(1.0)}, rule="memory", idle="separate")
    assert {ln.name: ln.cost for ln in b.lines} == {"ana": 4.0, "ben": 2.0, IDLE: 2.0}
    with pytest.raises(GpucostError, match="memory"):
        allocate(usage_frame(rows), {"g": given_rate(1.0, gpu=None, mem=None)}, rule="memory")


def test_overfull_instants_are_scaled_to_the_whole_card():
    # per-process readings 90 % + 60 % at once: 150 % of a card, scaled to 60 % and 40 %
    u = usage_frame(hourly_rows("g", 10, ana=90, ben=60))
    b = allocate(u, {"g": given_rate(1.0)}, idle="separate")
    assert {ln.name: ln.cost for ln in b.lines} == {"ana": 6.0, "ben": 4.0, IDLE: 0.0}


def test_rented_card_costs_the_offer_per_gpu_hour():
    # the tiny catalog's cheapest A100 80GB SXM offer: lambda 1.79 USD per GPU-hour; all of November
    cat = Catalog(data_dir=TINY)
    rate = card_rate(cat, "a100-80gb-sxm", "USD", rented=True)
    assert rate.per_hour == 1.79 == card_price(cat, "a100-80gb-sxm", "USD", "cloud")[0]
    u = usage_frame(hourly_rows("gpu0", 720, ana=25, ben=25))
    b = allocate(u, {"gpu0": rate}, period=NOV, idle="spread")
    # 1.79 × 720 = 1288.80, half each
    assert b.total == 1288.80
    assert {ln.name: ln.cost for ln in b.lines} == {"ana": 644.40, "ben": 644.40}


def test_owned_card_costs_what_economics_says_every_hour():
    cat = Catalog(data_dir=TINY)
    rate = card_rate(cat, "A100 80GB SXM", "USD")
    h = card_hourly_cost(cat, "a100-80gb-sxm", "USD", "new", calendar_ownership())
    assert rate.basis == "owned" and rate.per_hour == h.per_hour
    assert h.per_hour == pytest.approx(h.capital_per_hour + h.power_per_hour)
    b = allocate(usage_frame(hourly_rows("g", 1, ana=100)), {"g": rate}, period=NOV)
    assert b.total_cents == round(h.per_hour * 720 * 100)


def test_given_price_and_bad_rates():
    cat = Catalog(data_dir=TINY)
    assert card_rate(cat, None, "USD", hourly=3.5).per_hour == 3.5
    with pytest.raises(GpucostError, match="--gpu"):
        card_rate(cat, None, "USD")
    with pytest.raises(UnknownNameError, match="currency"):
        card_rate(cat, "a100-80gb-sxm", "XYZ")
    with pytest.raises(GpucostError, match="no hourly cost"):
        allocate(usage_frame(hourly_rows("g", 1, ana=1)), {})
    with pytest.raises(UnknownNameError, match="spread"):
        allocate(usage_frame(hourly_rows("g", 1, ana=1)), {"g": given_rate(1.0)}, idle="pro-rata")


def test_cents_add_up_to_the_card_cost_when_shares_do_not_divide():
    # 10.00 over three equal users: 3.34 + 3.33 + 3.33 (largest remainder, ties to the first)
    u = usage_frame(hourly_rows("g", 10, a=20, b=20, c=20))
    b = allocate(u, {"g": given_rate(1.0)}, idle="spread")
    assert [ln.cost for ln in b.lines] == [3.34, 3.33, 3.33]
    assert b.total == 10.0
    assert list(largest_remainder(100, [1, 1, 1])) == [34, 33, 33]
    assert list(largest_remainder(7, [0, 0])) == [0, 0]


def test_a_card_idle_all_period_stays_on_the_idle_line():
    u = usage_frame(hourly_rows("g0", 10, ana=50))
    b = allocate(u, {"g0": given_rate(1.0), "g1": given_rate(1.0)}, idle="spread")
    assert b.total == 20.0
    assert {ln.name: ln.cost for ln in b.lines} == {"ana": 10.0, IDLE: 10.0}
    assert any("g1" in n for n in b.notes)


def test_bill_csv_rows_and_total():
    u = usage_frame(hourly_rows("g", 100, alice=30, bob=50))
    text = bill_csv(allocate(u, {"g": given_rate(2.0)}, idle="separate"))
    lines = text.splitlines()
    assert lines[0].startswith("user,cost_usd,gpu_hours,share_pct")
    assert lines[1].startswith("bob,100.00,50.0000,50.00")
    assert lines[-1].startswith("(total),200.00,")


# -- periods and durations --------------------------------------------------------------------------

def test_periods():
    assert NOV.hours == 720
    assert parse_period("2026-12").end == datetime(2027, 1, 1, tzinfo=UTC)
    p = parse_period("2026-11-01..2026-11-15")
    assert p.hours == 15 * 24
    assert parse_period("2026-11-01T06:00..2026-11-01T18:00").hours == 12
    for bad in ("2026-13", "November", "2026-11-10..2026-11-01", "2026-11-01..soon"):
        with pytest.raises(GpucostError, match="period"):
            parse_period(bad)


def test_sample_durations_hold_until_the_next_sample_and_cap_gaps():
    ts = [T0, T0 + pd.Timedelta(minutes=1), T0 + pd.Timedelta(minutes=2), T0 + pd.Timedelta(minutes=30)]
    df = usage_frame([dict(card="g", start=t, user="a", sm_pct=50) for t in ts])
    assert list(sample_durations(df)) == [60, 60, 60, 60]
    assert list(sample_durations(df, interval_s=120)) == [60, 60, 120, 120]


# -- properties ---------------------------------------------------------------------------------------

usage_strategy = st.lists(st.tuples(st.sampled_from(["g0", "g1"]), st.integers(0, 23),
                                    st.sampled_from(["ana", "ben", "cy", ""]), st.floats(0, 100)),
                          min_size=1, max_size=30)


def _frame(rows) -> pd.DataFrame:
    return usage_frame([dict(card=c, start=T0 + pd.Timedelta(hours=h), duration_s=3600, user=u, sm_pct=p)
                        for c, h, u, p in rows])


RATES = {"g0": given_rate(1.37), "g1": given_rate(0.91)}
DAY = parse_period("2026-11-01..2026-11-01")


@given(usage_strategy, st.sampled_from(["spread", "separate"]))
def test_lines_add_up_to_the_cards_cost_to_the_cent(rows, idle):
    b = allocate(_frame(rows), RATES, period=DAY, idle=idle)
    # 24 h × 1.37 = 32.88 and 24 h × 0.91 = 21.84
    assert b.total_cents == 3288 + 2184 == sum(ln.cost_cents for ln in b.lines)
    for c in b.cards:
        assert sum(ln.cost_cents for ln in c.lines) == c.cost_cents


@given(usage_strategy)
def test_spread_and_separate_give_the_same_total(rows):
    a = allocate(_frame(rows), RATES, period=DAY, idle="spread")
    b = allocate(_frame(rows), RATES, period=DAY, idle="separate")
    assert a.total_cents == b.total_cents
    assert a.idle_cost == b.line(IDLE).cost


@given(usage_strategy, st.floats(0.5, 50), st.sampled_from(["spread", "separate"]))
def test_more_use_never_costs_less(rows, extra, idle):
    base = _frame(rows)
    more = base.copy()
    who = more["user"] == "ana"
    more.loc[who, "sm_pct"] = (more.loc[who, "sm_pct"] + extra).clip(upper=100)
    more = pd.concat([more, usage_frame([dict(card="g0", start=T0, duration_s=3600, user="ana", sm_pct=extra)])])

    def owed(frame):
        b = allocate(frame, RATES, period=DAY, idle=idle)
        return sum(ln.cost_cents for ln in b.lines if ln.name == "ana")
    assert owed(more) >= owed(base)


def test_cost_over_time_stacks_to_the_cards_cost_in_each_stretch():
    # 4 h at 2.00/h: ana 30 % all along, ben 50 % for the first 2 h; two 2-hour stretches of 4.00 each:
    # ana 0.3 × 2 h × 2.00 = 1.20 in both, ben 0.5 × 2 × 2 = 2.00 then 0, idle the rest
    from gpucost.showback import cost_over_time

    rows = [dict(card="g", start=T0 + pd.Timedelta(hours=h), duration_s=3600, user=u, sm_pct=p)
            for h in range(4) for u, p in (("ana", 30), ("ben", 50 if h < 2 else 0))]
    period = parse_period("2026-11-01T00:00..2026-11-01T04:00")
    t = cost_over_time(usage_frame(rows), {"g": given_rate(2.0)}, period, bins=2)
    got = t.to_dict(orient="list")
    for name, want in {"ana": [1.2, 1.2], "ben": [2.0, 0.0], IDLE: [0.8, 2.8]}.items():
        assert got[name] == pytest.approx(want), name
    assert list(t.index) == [T0, T0 + pd.Timedelta(hours=2)]
    # the columns over the period are the separate bill (before cents)
    b = allocate(usage_frame(rows), {"g": given_rate(2.0)}, period=period, idle="separate")
    assert {ln.name: ln.cost for ln in b.lines} == pytest.approx(t.sum().to_dict())


@given(st.integers(0, 10**9), st.lists(st.floats(0, 1e6), min_size=1, max_size=20))
def test_largest_remainder_adds_up_and_stays_within_a_unit_of_each_exact_share(total, weights):
    parts = largest_remainder(total, weights)
    if sum(weights) == 0:
        assert list(parts) == [0] * len(weights)
        return
    assert int(parts.sum()) == total
    exact = [total * w / sum(weights) for w in weights]
    assert all(abs(int(p) - e) < 1 + 1e-6 for p, e in zip(parts, exact, strict=True))


@given(st.lists(st.tuples(st.integers(0, 23), st.sampled_from(["ana", "ben"]), st.floats(0, 81920),
                          st.sampled_from(["", "", "3g.40gb", "4g.40gb"])), min_size=1, max_size=20),
       st.sampled_from(["sm", "memory"]), st.sampled_from(["spread", "separate"]))
def test_memory_and_mig_rows_add_up_to_the_cent_too(rows, rule, idle):
    frame = usage_frame([dict(card="g0", start=T0 + pd.Timedelta(hours=h), duration_s=3600, user=u, memory_mib=m,
                              sm_pct=50, mig_profile=p) for h, u, m, p in rows])
    b = allocate(frame, {"g0": given_rate(1.37)}, period=DAY, idle=idle, rule=rule, catalog=MIG_CATALOG)
    assert b.total_cents == 3288 == sum(ln.cost_cents for ln in b.lines)
    assert all(ln.cost_cents >= 0 for ln in b.lines)


MIG_CATALOG = Catalog()
