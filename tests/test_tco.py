"""TCO engine: every option against a hand computation, the properties the issue asks for (hypothesis),
scenario files (validation, save/load, list), the CLI and the page's notebook.

The hand cases use a scenario that states every input itself (so no catalog or default value enters)
on the tiny test catalog. Base case: 1 card, TDP 400 W, idle 10 % of TDP, host 100 W, PUE 1.5,
0.20 USD/kWh, steady load 50 % (365 GPU-hours a month), 12 months, 730 h a month.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpucost import tco
from gpucost.catalog import Catalog
from gpucost.errors import GpucostError

from .conftest import DATA, ROOT, cli_json, run_cli, run_notebook

TINY = ROOT / "tests" / "fixtures" / "tiny_catalog"
H = 730.0


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return Catalog(data_dir=TINY)


def base_dict(**over) -> dict:
    d = {
        "name": "hand", "currency": "USD", "horizon_months": 12,
        "owned": {"gpu": "rtx-4090", "count": 1, "site": "office", "tdp_w": 400, "price_new": 1000,
                  "price_used": 600, "host_cost_per_gpu": 200, "host_power_w_per_gpu": 100,
                  "idle_power_fraction": 0.1, "pue": 1.5, "electricity_per_kwh": 0.2,
                  "colocation_per_kw_month": 0, "maintenance_per_year": 0.1, "failure_rate_per_year": 0.05,
                  "resale_retention_per_year": 0.5},
        "lease": {"annual_rate": 0.12, "term_months": 12},
        "cloud": {"gpu": "rtx-4090", "relative_speed": 1.0, "on_demand_price": 1.0, "spot_price": 0.4,
                  "reserved_1y_price": 0.6, "reserved_3y_price": 0.5},
        # p = 1 − e^(−0.73) gives λ = 0.73 / 730 = 0.001 interruptions per instance-hour
        "spot": {"interruptions_per_month": 1 - math.exp(-0.73), "checkpoint_minutes": 6, "restart_minutes": 12},
        "demand": {"utilization": 0.5},
    }
    for key, val in over.items():
        node = d
        parts = key.split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = val
    return d


def run_dict(cat, d, **kw) -> tco.TcoResult:
    return tco.evaluate(tco.resolve(tco.scenario_from_dict(d, label="hand.yaml"), cat, **kw))


# ---------------------------------------------------------------------------------------------------
# Hand-computed cases, one per option
# ---------------------------------------------------------------------------------------------------

# energy: card 400 × (0.1 + 0.9 × 0.5) = 220 W + host 100 W = 320 W → 0.32 kW × 1.5 × 730 h × 0.20 = 70.08 a month
ENERGY_12 = 0.32 * 1.5 * 730 * 0.2 * 12  # 840.96


def test_buy_new_by_hand(cat):
    r = run_dict(cat, base_dict())
    o = r.option("buy-new")
    # capex 1000 + 200 host; resale after 12 months 1000 × 0.5 = 500 (host kept at 0)
    # maintenance 10 % of 1200 a year = 120; failure reserve 5 % of 1000 = 50
    expected = 1200 - 500 + ENERGY_12 + 120 + 50  # 1710.96
    assert o.total_cost == pytest.approx(expected)
    assert o.total_cost == pytest.approx(1710.96)
    assert o.cost_per_useful_gpu_hour == pytest.approx(1710.96 / (365 * 12))
    assert o.details["energy"] == pytest.approx(840.96)
    assert o.kind == "buy-new"


def test_buy_used_by_hand(cat):
    o = run_dict(cat, base_dict()).option("buy-used")
    # capex 600 + 200; resale 300; maintenance 10 % of 800 = 80; failure 5 % of 600 = 30
    assert o.total_cost == pytest.approx(800 - 300 + 840.96 + 80 + 30)  # 1450.96


def test_lease_by_hand(cat):
    o = run_dict(cat, base_dict()).option("lease")
    # 1200 financed at 1 % a month over 12 months: A·r / (1 − (1 + r)^−12) = 106.6185 a month
    pay = 1200 * 0.01 / (1 - 1.01 ** -12)
    assert pay == pytest.approx(106.6185, abs=1e-4)
    # paid in full by month 12, then the same resale and running costs as buying new
    assert o.total_cost == pytest.approx(12 * pay - 500 + 840.96 + 120 + 50)
    assert o.details["interest"] == pytest.approx(12 * pay - 1200)


def test_on_demand_by_hand(cat):
    o = run_dict(cat, base_dict()).option("on-demand")
    assert o.total_cost == pytest.approx(365 * 12 * 1.0)  # 4380


def test_spot_by_hand(cat):
    r = run_dict(cat, base_dict())
    o = r.option("spot")
    # λ = 0.001 /h → MTBF 1000 h; δ = 0.1 h, R = 0.2 h; Young: τ = √(2 × 0.1 × 1000) = 14.142 h
    tau = math.sqrt(2 * 0.1 * 1000)
    assert r.spot["checkpoint_interval_h"] == pytest.approx(tau)
    # paid hours per hour of work: (1 + δ/τ) / (1 − λ (R + τ/2)) = 1.0070711 / 0.9927289 = 1.014447
    phi = (1 + 0.1 / tau) / (1 - 0.001 * (0.2 + tau / 2))
    assert phi == pytest.approx(1.014447, abs=1e-6)
    assert o.total_cost == pytest.approx(365 * 12 * 0.4 * phi)  # 1777.31
    assert o.total_cost > 365 * 12 * 0.4


def test_reserved_by_hand(cat):
    r = run_dict(cat, base_dict())
    # 365 GPU-hours a month need ceil(365 / 730) = 1 reserved GPU, paid for every hour of the term
    assert r.option("reserved-1y").total_cost == pytest.approx(730 * 12 * 0.6)  # 5256
    # a 3-year term is owed in full even over a 12-month horizon
    assert r.option("reserved-3y").total_cost == pytest.approx(730 * 36 * 0.5)  # 13140
    # break-even utilization of a reservation: its price over the on-demand price
    assert r.reserved_break_even_utilization["reserved-1y"] == pytest.approx(0.6)


def test_hybrid_picks_the_cheapest_commitment_by_hand(cat):
    r = run_dict(cat, base_dict())
    plan = r.hybrid
    # candidates: 0 cards (all spot 1777.31 or all on-demand 4380), 1 used card (1450.96, no overflow),
    # 1 new card (1710.96), 1 reserved GPU (5256): one used card wins
    assert (plan.base, plan.base_gpus) == ("owned-used", 1)
    assert r.option("hybrid").total_cost == pytest.approx(1450.96)
    # 30 % headroom: ceil(1 × 1.3) = 2 used cards sharing 365 GPU-hours, 25 % busy each:
    # 2 × (800 − 300 + 80 + 30) = 1220, energy 2 × (400 × (0.1 + 0.9 × 0.25) + 100) W = 0.46 kW
    # × 1.5 × 730 × 0.2 × 12 = 1208.88 → 2428.88, i.e. 977.92 more than one card
    assert plan.headroom_gpus == 2
    assert plan.headroom_cost == pytest.approx(1220 + 0.46 * 1.5 * 730 * 0.2 * 12 - 1450.96)
    assert plan.headroom_cost == pytest.approx(977.92)


def test_break_even_month_and_utilization_by_hand(cat):
    r = run_dict(cat, base_dict(**{"owned.resale_fee": 0.5}))
    # buy new, sold at month m for half its value: 1200 − 500 × 0.5^(m/12) + 84.25 m
    # (70.08 energy + 10 maintenance + 4.1667 failure a month) against on-demand 365 m:
    # m = 2: 1200 − 445.45 + 168.5 = 923.0 > 730; m = 3: 1200 − 420.45 + 252.75 = 1032.3 < 1095
    assert r.option("buy-new").break_even_month == 3
    be = {(b.owned, b.rented): b for b in r.break_even}
    assert be[("buy-new", "on-demand")].month == 3
    # steady load u: buy new = 1200 − 250 + 170 + 2628 × (0.14 + 0.36 u); on-demand = 8760 u
    # (2628 = 1.5 × 730 × 0.2 × 12) → u = (1120 + 367.92) / (8760 − 946.08) = 0.190420
    assert be[("buy-new", "on-demand")].utilization == pytest.approx(1487.92 / 7813.92, abs=1e-9)


def test_cost_per_training_run_and_per_million_tokens(cat):
    d = base_dict()
    d["demand"]["jobs"] = [
        {"name": "run", "kind": "training", "gpu_hours": 10, "runs_per_month": 2},
        {"name": "chat", "kind": "serving", "tokens_per_month": 3.6e6, "tokens_per_second_per_gpu": 100}]
    r = run_dict(cat, d)
    # demand: 365 + 20 (two runs) + 3.6 M tokens / (100 tokens/s × 3600 s) = 10 h → 395 GPU-hours a month
    assert r.useful_gpu_hours == pytest.approx(395 * 12)
    o = r.option("on-demand")
    assert o.cost_per_useful_gpu_hour == pytest.approx(1.0)
    assert o.cost_per_run["run"] == pytest.approx(10.0)  # 10 GPU-hours at 1.0
    assert o.cost_per_1m_tokens["chat"] == pytest.approx(1e6 / (100 * 3600))  # 2.78 GPU-hours


def test_overflow_beyond_the_owned_cards_is_bought_on_demand(cat):
    d = base_dict(**{"demand.gpu_hours_per_month": 1000})
    del d["demand"]["utilization"]
    o = run_dict(cat, d).option("buy-used")
    # the card is busy 730 h (100 %), 270 h a month go on demand at 1.0
    full = 800 - 300 + (0.5 * 1.5 * 730 * 0.2 * 12) + 80 + 30  # card 400 W + host 100 W all month
    assert o.total_cost == pytest.approx(full + 270 * 12)
    assert o.details["overflow_hours"] == pytest.approx(270 * 12)


def test_always_off_when_idle_draws_only_busy_hours(cat):
    o = run_dict(cat, base_dict(**{"owned.always_on": False})).option("buy-new")
    # (400 + 100) W × 50 % of the hours = 0.25 kW average → 0.25 × 1.5 × 730 × 0.2 × 12 = 657
    assert o.details["energy"] == pytest.approx(0.25 * 1.5 * 730 * 0.2 * 12)


def test_relative_speed_divides_the_cloud_hours(cat):
    r = run_dict(cat, base_dict(**{"cloud.relative_speed": 2.0}))
    assert r.option("on-demand").total_cost == pytest.approx(365 * 12 / 2)


def test_young_daly_poisson_annuity_and_rate_helpers():
    assert float(tco.young_daly_interval_hours(0.1, 1000)) == pytest.approx(math.sqrt(200))
    assert tco.interruption_rate_per_hour(0.5) == pytest.approx(math.log(2) / 730)
    assert float(tco.annuity_payment(1200, 0.01, 12)) == pytest.approx(106.6185, abs=1e-4)
    assert float(tco.annuity_payment(1200, 0.0, 12)) == pytest.approx(100)
    # P(X ≤ 2) for Poisson(0.1) = e^−0.1 (1 + 0.1 + 0.005)
    assert float(tco.poisson_cdf(2, 0.1)) == pytest.approx(math.exp(-0.1) * 1.105)
    assert float(tco.poisson_cdf(-1, 3.0)) == 0.0


def test_deadline_miss_probability_by_hand():
    # no checkpoint cost: τ = 0, each interruption costs the restart R = 1 h; 10 h of work, deadline 12 h:
    # at most 2 interruptions fit; μ = 0.01 × 10 = 0.1 → miss = 1 − e^−0.1 × 1.105 = 0.000155
    p = float(tco.deadline_miss_probability(10, 12, 0.01, 0.0, 1.0))
    assert p == pytest.approx(1 - math.exp(-0.1) * 1.105)
    assert float(tco.deadline_miss_probability(10, 9, 0.01, 0.0, 1.0)) == 1.0  # no time even without one


def test_currency_display_converts_every_amount(cat):
    usd = run_dict(cat, base_dict())
    cny = run_dict(cat, base_dict(), currency="CNY")
    assert cny.currency == "CNY"
    for o in usd.options:
        assert cny.option(o.id).total_cost == pytest.approx(o.total_cost * 7.1)  # tiny fx: 7.1 CNY per USD


def test_money_written_in_another_currency(cat):
    d = base_dict(**{"owned.price_new": {"value": 7100, "currency": "CNY"}})
    assert run_dict(cat, d).option("buy-new").total_cost == pytest.approx(1710.96)  # 7100 CNY = 1000 USD


# ---------------------------------------------------------------------------------------------------
# Properties (hypothesis)
# ---------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def base_inputs(cat) -> tco.Inputs:
    return tco.resolve(tco.scenario_from_dict(base_dict(), label="hand.yaml"), cat)


PROP = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@PROP
@given(p_od=st.floats(0.2, 10), ratio=st.floats(0.05, 0.99), n=st.integers(1, 8), u=st.floats(0.01, 1.0))
def test_reserved_beats_on_demand_exactly_above_its_break_even(base_inputs, p_od, ratio, n, u):
    inp = base_inputs.updated(cloud={"on_demand_per_gpu_hour": p_od, "reserved_1y_per_gpu_hour": p_od * ratio}, owned={"count": n}, demand={"base_utilization": u})
    r = tco.evaluate(inp)
    need = u * n * H  # GPU-hours a month, steady
    k = math.ceil(need / H - 1e-9)  # reserved GPUs
    u_res = need / (k * H)  # utilization of the reserved GPUs
    assert r.reserved_break_even_utilization["reserved-1y"] == pytest.approx(ratio)
    if abs(u_res - ratio) < 1e-6:
        return
    cheaper = r.option("reserved-1y").total_cost < r.option("on-demand").total_cost
    assert cheaper == (u_res > ratio)


@PROP
@given(u1=st.floats(0.01, 0.99), du=st.floats(0.005, 0.5), cond=st.sampled_from(["buy-new", "buy-used", "lease"]))
def test_higher_utilization_lowers_cost_per_useful_hour_of_owned_cards(base_inputs, u1, du, cond):
    u2 = min(1.0, u1 + du)
    a = tco.evaluate(base_inputs.updated(demand={"base_utilization": u1})).option(cond).cost_per_useful_gpu_hour
    b = tco.evaluate(base_inputs.updated(demand={"base_utilization": u2})).option(cond).cost_per_useful_gpu_hour
    assert b < a


@PROP
@given(p=st.floats(0.0, 0.95), ckpt=st.floats(0.0, 2.0), restart=st.floats(0.0, 3.0), g=st.integers(1, 16),
       speed=st.floats(0.3, 4.0), u=st.floats(0.0, 1.0))
def test_expected_spot_cost_is_never_below_price_times_work(base_inputs, p, ckpt, restart, g, speed, u):
    inp = base_inputs.updated(spot={"interruptions_per_hour": tco.interruption_rate_per_hour(p), "checkpoint_hours": ckpt, "restart_hours": restart, "gpus_per_job": g}, cloud={"relative_speed": speed}, demand={"base_utilization": u})
    r = tco.evaluate(inp)
    work = r.useful_gpu_hours / speed
    if "spot" in {o.id for o in r.options}:
        assert r.option("spot").total_cost >= 0.4 * work * (1 - 1e-12) - 1e-9
    else:  # interruptions outpace the work: the job never finishes, which is never cheaper either
        assert any(u_id == "spot" for u_id, _k, _r in r.unavailable)


@PROP
@given(cur=st.sampled_from(["CNY", "EUR"]), u=st.floats(0.0, 1.0))
def test_currency_round_trip_is_stable(cat, cur, u):
    d = base_dict(**{"demand.utilization": u})
    sc = tco.scenario_from_dict(d, label="hand.yaml")
    usd = tco.evaluate(tco.resolve(sc, cat))
    other = tco.evaluate(tco.resolve(sc, cat, currency=cur))
    for o in usd.options:
        back = cat.convert(other.option(o.id).total_cost, cur, "USD")
        assert back == pytest.approx(o.total_cost, rel=1e-9, abs=1e-9)
        assert other.option(o.id).break_even_month == o.break_even_month


@PROP
@given(m1=st.integers(1, 59), dm=st.integers(1, 60), growth=st.floats(-0.5, 2.0), burst=st.floats(0, 3000),
       every=st.integers(1, 6), u=st.floats(0.0, 1.0))
def test_a_longer_horizon_never_lowers_the_total(base_inputs, m1, dm, growth, burst, every, u):
    inp = base_inputs.updated(demand={"growth_per_year": growth, "burst_gpu_hours": burst, "burst_every_months": every, "base_utilization": u})
    a = tco.evaluate(inp, months=m1)
    b = tco.evaluate(inp, months=min(120, m1 + dm))
    for o in a.options:
        assert b.option(o.id).total_cost >= o.total_cost - 1e-6 * max(1.0, abs(o.total_cost))


# ---------------------------------------------------------------------------------------------------
# Tornado and Monte Carlo
# ---------------------------------------------------------------------------------------------------

def test_tornado_swings_each_input_over_its_range_by_hand(base_inputs):
    r = tco.evaluate(base_inputs)
    tr = tco.tornado(base_inputs, r)
    bars = {b.input: b for b in tr.bars}
    # electricity ±30 % (DEFAULT_SWINGS) moves buy-new by 30 % of its 840.96 energy, on-demand not at all
    e = bars["electricity"]
    assert e.low_totals["buy-new"] == pytest.approx(1710.96 - 0.3 * 840.96)
    assert e.high_totals["buy-new"] == pytest.approx(1710.96 + 0.3 * 840.96)
    assert e.low_totals["on-demand"] == pytest.approx(4380)
    # cloud price ±20 % moves on-demand 4380 to 3504 and 5256
    c = bars["cloud_price"]
    assert (c.low_totals["on-demand"], c.high_totals["on-demand"]) == pytest.approx((3504, 5256))
    # utilization 0.5 ± 0.2: on-demand 0.3 × 8760 and 0.7 × 8760
    uu = bars["utilization"]
    assert (uu.low_totals["on-demand"], uu.high_totals["on-demand"]) == pytest.approx((0.3 * 8760, 0.7 * 8760))
    assert tr.base_totals["buy-new"] == pytest.approx(1710.96)
    ranked = tr.ranked("on-demand")
    assert ranked[0].input in ("utilization", "cloud_price")
    assert "fx" not in bars  # every price is in the scenario's currency: no exchange-rate exposure


def test_monte_carlo_summary_is_consistent_and_reproducible(base_inputs):
    seen = []
    mc = tco.monte_carlo(base_inputs, draws=3000, seed=7, chunk=1000, progress=seen.append)
    assert seen == pytest.approx([1 / 3, 2 / 3, 1.0])
    assert sum(mc.probability_cheapest.values()) == pytest.approx(1.0)
    for q in mc.percentiles.values():
        assert q["p10"] <= q["p50"] <= q["p90"]
    # on-demand only moves with the cloud price (±20 %) and the load (0.3-0.7): p50 near 4380
    assert 3300 < mc.percentiles["on-demand"]["p50"] < 5400
    again = tco.monte_carlo(base_inputs, draws=3000, seed=7)
    assert again.percentiles == mc.percentiles
    assert 0 <= mc.deadline_miss_probability <= 1 if mc.deadline_miss_probability is not None else True
    assert sum(mc.histogram["buy-new"][1]) == 3000


# ---------------------------------------------------------------------------------------------------
# Scenario files
# ---------------------------------------------------------------------------------------------------

def test_every_bundled_scenario_gives_a_cheapest_option_with_reasons():
    names = [s["name"] for s in tco.list_scenarios() if s["origin"] == "bundled"]
    assert {"developer", "startup", "midsize", "university-lab"} <= set(names)
    for name in names:
        r = tco.run(name)
        assert r.cheapest in {o.id for o in r.options}
        assert all(o.reason for o in r.options)
        assert r.cheapest_sentence.startswith("Cheapest over")
        assert len(r.options) >= 3


def test_defaults_come_from_sourced_rows(cat):
    d = base_dict()
    for k in ("pue", "electricity_per_kwh", "colocation_per_kw_month", "failure_rate_per_year"):
        del d["owned"][k]
    d["owned"]["site"] = "colocation"
    d["region"] = "US-VA"
    inp = tco.resolve(tco.scenario_from_dict(d, label="hand.yaml"), cat)
    assert inp.params.owned.pue == pytest.approx(1.58)  # Uptime Institute 2023 average
    assert inp.params.owned.electricity_per_kwh == pytest.approx(0.0892)  # EIA 2023, Virginia industrial
    assert inp.params.owned.colocation_per_kw_month == pytest.approx(184.06)  # CBRE H2 2024, 250-500 kW
    # Llama 3: (148 + 72) GPU interruptions / 16384 GPUs / 54 days × 365
    assert inp.params.owned.failure_rate_per_year == pytest.approx(round(220 / 16384 / 54 * 365, 4))
    srcs = {p.key: p.source for p in inp.provenance}
    assert "uptimeinstitute" in srcs["owned.pue"] and "eia.gov" in srcs["owned.electricity_per_kwh"]


def test_a_missing_default_is_a_required_input(cat):
    d = base_dict(region="ZZ")
    del d["owned"]["electricity_per_kwh"]
    with pytest.raises(GpucostError, match=r"hand.yaml: key 'owned.electricity_per_kwh' is required"):
        tco.resolve(tco.scenario_from_dict(d, label="hand.yaml"), cat)
    d = base_dict()
    del d["owned"]["host_cost_per_gpu"]
    sc = tco.scenario_from_dict(d, label="hand.yaml")
    with pytest.raises(GpucostError, match=r"hand.yaml: key 'owned.host_cost_per_gpu' is required"):
        tco.resolve(sc, cat)


@pytest.mark.parametrize("patch, message", [
    ({"demand": {"utilization": 1.7}}, "key 'demand.utilization': 1.7 must be between 0 and 1"),
    ({"owned": {"gpu": "rtx-4090", "count": 0, "host_cost_per_gpu": 0}}, "key 'owned.count': 0 must be between 1 and 100,000 GPUs"),
    ({"owned": {"gpu": "rtx-4090", "count": "two", "host_cost_per_gpu": 0}}, "key 'owned.count': 'two' is not a number"),
    ({"demand": {"utilisation": 0.5}}, "unknown key 'demand.utilisation' (did you mean 'demand.utilization'?)"),
    ({"spot": {"interruption_bucket": "12%"}}, "key 'spot.interruption_bucket': '12%' is not one of"),
    ({"owned": "rtx-4090"}, "key 'owned' must be a section"),
    ({"horizon_months": 2.5}, "key 'horizon_months': 2.5 is not a whole number"),
])
def test_bad_scenario_values_name_the_file_and_key(patch, message):
    d = {"name": "bad", "owned": {"gpu": "rtx-4090", "count": 2, "host_cost_per_gpu": 0}}
    d.update(patch)
    with pytest.raises(GpucostError) as err:
        tco.scenario_from_dict(d, label="data/scenarios/bad.yaml")
    assert str(err.value).startswith("data/scenarios/bad.yaml: ")
    assert message in str(err.value)


def test_save_and_load_round_trip_never_overwrites(tmp_path, cat):
    sc = tco.load_scenario("startup")
    changed = sc.updated({"demand.utilization": 0.8, "owned.count": 3})
    path = tco.save_scenario(changed, tmp_path / "mine.yaml")
    back = tco.read_scenario_file(path)
    assert back.values == changed.values and back.jobs == changed.jobs
    with pytest.raises(GpucostError, match="exists"):
        tco.save_scenario(changed, path)
    tco.save_scenario(sc, path, overwrite=True)
    assert tco.read_scenario_file(path).values["owned.count"] == 2


def test_list_includes_the_users_scenarios_and_unknown_names_get_closest(tmp_path, monkeypatch):
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "lab2.yaml").write_text(yaml.safe_dump(base_dict(name="lab2")))
    monkeypatch.setenv("GPUCOST_DATA_DIR", str(tmp_path))
    listed = {s["name"]: s["origin"] for s in tco.list_scenarios()}
    assert listed["lab2"] == "user" and listed["startup"] == "bundled"
    with pytest.raises(GpucostError, match="closest: startup"):
        tco.load_scenario("startu")


def test_bad_yaml_is_a_clear_error(tmp_path):
    f = tmp_path / "broken.yaml"
    f.write_text("name: broken\nowned: [gpu: 1\n")
    with pytest.raises(GpucostError, match=r"broken.yaml: not valid YAML .*line"):
        tco.read_scenario_file(f)


def test_reasons_are_rendered_from_the_locale_files(cat):
    """The engine keeps no sentences of its own: names and reasons come from the locale templates."""
    from gpucost.i18n import t

    r = run_dict(cat, base_dict())
    for o in r.options:
        assert o.reason == t(f"tco_reason_{o.id.replace('-', '_')}", "en", **o.reason_params)
        assert o.name == t(f"tco_name_{o.id.replace('-', '_')}", "en", **o.name_params)
    zh = tco.relabel(r, "zh")
    assert [o.total_cost for o in zh.options] == [o.total_cost for o in r.options]
    assert all(a.reason != b.reason for a, b in zip(zh.options, r.options, strict=True))
    assert (DATA / "tco_defaults.csv").is_file()


# ---------------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------------

def test_cli_json_contract():
    out = cli_json("tco", "--scenario", "startup", "--months", "24")
    assert out["scenario"] == "startup" and out["horizon_months"] == 24 and out["currency"] == "USD"
    kinds = {o["kind"] for o in out["options"]}
    assert kinds <= set(tco.KINDS)
    for o in out["options"]:
        assert set(o) >= {"name", "kind", "total_cost", "cost_per_useful_gpu_hour", "break_even_month"}
        assert o["break_even_month"] is None or 1 <= o["break_even_month"] <= 24
    assert out["cheapest"] in {o["name"] for o in out["options"]}
    assert out["cheapest"] in out["reasons"]
    cheapest = min(out["options"], key=lambda o: o["total_cost"])
    assert out["cheapest"] == cheapest["name"]


def test_cli_currency_and_list(tmp_path):
    from gpucost.pricing import card_price

    usd = cli_json("tco", "--scenario", "developer")
    cny = cli_json("tco", "--scenario", "developer", "--currency", "CNY")
    rate = Catalog().convert(1.0, "USD", "CNY")
    by = {o["id"]: o for o in usd["options"]}
    # renting: the same offers, converted; owning: the card at the CNY market's price (what page 01 shows)
    assert {o["id"]: o["total_cost"] for o in cny["options"]}["on-demand"] == \
        pytest.approx(by["on-demand"]["total_cost"] * rate)
    inp = tco.resolve(tco.load_scenario("developer"), Catalog(), currency="CNY")
    assert inp.params.owned.price_new == pytest.approx(card_price(Catalog(), "rtx-4090", "CNY", "new")[0])
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "mylab.yaml").write_text((DATA / "scenarios" / "university-lab.yaml").read_text("utf-8"))
    names = {s["name"]: s["origin"] for s in cli_json("tco", "--list", env={"GPUCOST_DATA_DIR": str(tmp_path)})}
    assert names["mylab"] == "user" and names["midsize"] == "bundled"


@pytest.mark.parametrize("text, needle", [
    ("name: bad\nowned: {gpu: rtx-4090, count: 2, host_cost_per_gpu: 0}\ndemand: {utilization: 1.7}\n",
     "key 'demand.utilization': 1.7 must be between 0 and 1"),
    ("name: bad\nowned: {gpu: rtx-9090, count: 2, host_cost_per_gpu: 0}\n", "key 'owned.gpu': unknown GPU 'rtx-9090'"),
    ("name: bad\nowned: {gpu: rtx-4090}\n", "key 'owned.count' is required"),
    ("name: bad\n  owned: [\n", "not valid YAML"),
])
def test_cli_bad_scenario_file_exits_2_with_one_line(tmp_path, text, needle):
    f = tmp_path / "bad.yaml"
    f.write_text(text)
    proc = run_cli("tco", "--config", str(f), "--json")
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert str(f) in lines[0] and needle in lines[0]


def test_cli_bad_arguments_exit_2():
    for args in (("--scenario", "startup", "--months", "200"), ("--scenario", "nosuch"), ()):
        proc = run_cli("tco", *args)
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1


def test_cli_tornado_and_monte_carlo_and_text():
    out = cli_json("tco", "--scenario", "midsize", "--tornado", "--monte-carlo", "500")
    assert out["monte_carlo"]["draws"] == 500
    assert sum(out["monte_carlo"]["probability_cheapest"].values()) == pytest.approx(1.0)
    assert {b["input"] for b in out["tornado"]["bars"]} >= {"utilization", "electricity", "cloud_price"}
    text = run_cli("tco", "--scenario", "midsize")
    assert text.returncode == 0 and "Cheapest over 36 months" in text.stdout


# ---------------------------------------------------------------------------------------------------
# Page (papermill)
# ---------------------------------------------------------------------------------------------------

@pytest.mark.notebook
@pytest.mark.timeout(300)
def test_page_agrees_with_the_cli_and_speaks_chinese(tmp_path):
    rec = run_notebook("03_scenario_tco.ipynb", {"scenario": "midsize", "mc_draws": 500}, tmp_path)
    cli = cli_json("tco", "--scenario", "midsize")
    assert rec["error"] is None
    assert [o["id"] for o in rec["options"]] == [o["id"] for o in cli["options"]]
    for a, b in zip(rec["options"], cli["options"], strict=True):
        assert a["total_cost"] == pytest.approx(b["total_cost"], rel=1e-9)
    assert rec["cheapest"] == cli["cheapest_id"]
    assert rec["chart_traces"] == len(cli["options"]) + 1  # one line per option + the break-even markers
    assert rec["break_even_markers"] == sum(o["break_even_month"] is not None for o in cli["options"])
    assert rec["monte_carlo"]["draws"] == 500 and rec["progress"] == 100
    assert rec["tornado_bars"] == len(rec["tornado_inputs"]) >= 5


def test_page_in_chinese_with_a_parameter_override():
    from gpucost.ui.scenario_tco import ScenarioTcoPage

    page = ScenarioTcoPage(scenario="startup", lang="zh", utilization=0.9, mc_draws=0)
    rec = page.results_record()
    assert rec["error"] is None and rec["currency"] == "CNY" and rec["result_currency"] == "CNY"
    assert "个月内，获得" in rec["summary"] and "最省的方式是" in rec["summary"]
    assert rec["monte_carlo"] is None
    # the page's utilization (0.9, above the scenario's 0.5) raised the owned cards' energy bill
    base = tco.run("startup", currency="CNY")
    assert rec["options"][0]["id"] == "buy-new"
    assert rec["options"][0]["total_cost"] > base.option("buy-new").total_cost


def test_page_shows_bad_inputs_next_to_the_widget_and_downloads_yaml(tmp_path):
    import base64

    from gpucost.ui.scenario_tco import ScenarioTcoPage

    page = ScenarioTcoPage(scenario="developer", mc_draws=0)
    assert page.error is None and not page.stale
    total = page.result.option("buy-new").total_cost
    page.pue.value = "0.5"  # below 1: said next to the field, the results marked out of date
    assert page.stale and "between 1 and 5" in page.invalid["pue"]
    assert "gc-stale" in page.results._dom_classes and "out of date" in page.status.value.lower()
    page.growth.value = 0.5  # other inputs keep working meanwhile
    assert page.result.option("buy-new").total_cost != total and page.stale
    page.pue.value = "1.2"
    assert not page.stale and page.fields["pue"].message.value == ""
    # saving is a download made in the browser: the link holds the YAML, nothing is written on the server
    link = page.download.value
    assert 'download="developer.yaml"' in link
    text = base64.b64decode(link.split("base64,", 1)[1].split('"', 1)[0]).decode("utf-8")
    saved = tco.parse_scenario_text(text, "developer.yaml")
    assert saved.values["owned.pue"] == pytest.approx(1.2)
    assert saved.values["demand.growth_per_year"] == pytest.approx(0.5)
    assert list(tmp_path.iterdir()) == []


def test_vectorized_core_matches_one_by_one(base_inputs):
    """The Monte Carlo path (many parameter rows at once) gives the same totals as single evaluations."""
    from gpucost.tco import core
    from gpucost.tco.inputs import vectorized

    us = np.array([0.1, 0.4, 0.9])
    singles = [tco.evaluate(base_inputs.updated(demand={"base_utilization": u})).option("buy-new").total_cost
               for u in us]
    P = vectorized(base_inputs.params, 3).updated(demand={"base_utilization": us[:, None]})
    D = core.demand(P, 12, np.zeros(12))
    cum, _ = core.all_options(P, D, 12, None, skip={"hybrid"})["buy-new"]
    assert cum[:, -1] == pytest.approx(singles)


def test_jobs_given_as_a_model_use_the_speed_estimator(cat):
    from gpucost import speed
    from gpucost.models import resolve_model
    from gpucost.quant import get_format

    d = base_dict()
    d["demand"]["jobs"] = [
        {"name": "lora", "kind": "training", "model": "llama-3-8b", "mode": "lora", "tokens": 1e8},
        {"name": "chat", "kind": "serving", "model": "llama-3-8b", "quant": "q4_k_m", "engine": "llama.cpp",
         "tokens_per_month": 1e6}]
    r = run_dict(cat, d)
    from gpucost.records import gpu as gpu_record

    gpu = gpu_record(cat, "rtx-4090")
    spec = resolve_model("llama-3-8b", catalog=cat)
    run_h = speed.training_time(spec, gpu, mode="lora", tokens=1e8, catalog=cat).hours
    tps = speed.speed(spec, get_format("q4_k_m", cat), gpu, engine="llama.cpp", catalog=cat).decode_tokens_per_s
    # the jobs add their GPU-hours on top of the steady 365 a month
    assert r.useful_gpu_hours == pytest.approx(12 * (365 + run_h + 1e6 / (tps * 3600)))
    od = r.option("on-demand")
    assert od.cost_per_run["lora"] == pytest.approx(run_h * 1.0)
    assert od.cost_per_1m_tokens["chat"] == pytest.approx(1e6 / (tps * 3600))
    with pytest.raises(GpucostError, match="job 'x'"):
        d["demand"]["jobs"] = [{"name": "x", "kind": "training", "model": "no-such-model", "tokens": 1e6}]
        run_dict(cat, d)
