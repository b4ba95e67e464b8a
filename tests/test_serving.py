"""Serving a load: KV capacity by hand, the latency targets, replicas, cost per 1M input/output tokens and
the API bill of the same traffic (gpucost.serving, `gpucost serve`)."""

from __future__ import annotations

import json
import math

import pytest

from gpucost.catalog import Catalog
from gpucost.models import catalog_spec
from gpucost.quant import get_format
from gpucost.records import gpu
from gpucost.serving import Load, plan_serving
from gpucost.units import HOURS_PER_MONTH
from tests.conftest import run_cli


@pytest.fixture(scope="module")
def cat():
    return Catalog()


def _plan(cat, load, **kw):
    return plan_serving(catalog_spec("llama-3.1-8b", cat), get_format("bf16", cat), gpu(cat, kw.pop("card", "h100-sxm")),
                        load, catalog=cat, **kw)


def test_kv_capacity_by_hand(cat):
    # Llama 3.1 8B: 32 layers × 8 KV heads × 128 values × (K and V) × 2 bytes per token, 1,200 tokens
    p = _plan(cat, Load(1, 1000, 200))
    assert p.kv_per_sequence_gib == pytest.approx(2 * 32 * 8 * 128 * 2 * 1200 / 2**30)
    assert p.max_concurrency == math.floor(p.kv_pool_gib / p.kv_per_sequence_gib)
    assert p.point is not None and p.point.batch <= p.max_concurrency


def test_latency_targets_set_the_operating_point(cat):
    loose = _plan(cat, Load(1, 1000, 200), tpot_ms=60)
    tight = _plan(cat, Load(1, 1000, 200), tpot_ms=12)
    assert loose.point.tpot_ms <= 60 and tight.point.tpot_ms <= 12
    assert tight.point.batch < loose.point.batch
    assert tight.point.requests_per_s < loose.point.requests_per_s
    impossible = _plan(cat, Load(1, 1000, 200), tpot_ms=0.5)
    assert impossible.point is None and impossible.replicas is None
    assert any("no batch size meets the latency targets" in n for n in impossible.notes)


def test_replicas_follow_the_peak_load(cat):
    one = _plan(cat, Load(1, 1000, 200), tpot_ms=30)
    cap = one.point.requests_per_s
    big = _plan(cat, Load(cap * 2.5, 1000, 200, peak_ratio=2.0), tpot_ms=30)
    assert big.replicas == math.ceil(cap * 2.5 * 2.0 / cap) == 5
    assert big.utilization == pytest.approx(cap * 2.5 / (5 * cap))
    assert one.capacity_band["low"] < cap <= one.capacity_band["high"] * 1.5


def test_input_and_output_costs_add_up_to_the_fleets_bill(cat):
    load = Load(3, 2000, 300)
    p = _plan(cat, load, tpot_ms=40)
    tok_in = load.requests_per_s * load.input_tokens * 3600 * HOURS_PER_MONTH
    tok_out = load.requests_per_s * load.output_tokens * 3600 * HOURS_PER_MONTH
    for basis, monthly in p.monthly_cost.items():
        if monthly is None:
            continue
        bill = (p.cost_per_1m_input[basis] * tok_in + p.cost_per_1m_output[basis] * tok_out) / 1e6
        assert bill == pytest.approx(monthly, rel=1e-9)
    assert p.cost_per_1m_output["cloud"] > p.cost_per_1m_input["cloud"]   # a decoded token costs more


def test_apis_of_the_same_model_priced_for_the_same_traffic(cat):
    load = Load(2, 1000, 200, prefix_hit=0.5)
    usd = _plan(cat, load)
    assert usd.apis and all(a["monthly_cost"] > 0 for a in usd.apis)
    assert [a["monthly_cost"] for a in usd.apis] == sorted(a["monthly_cost"] for a in usd.apis)
    groq = next(a for a in usd.apis if a["provider"] == "groq")
    tok_in = 2 * 1000 * 3600 * HOURS_PER_MONTH
    tok_out = 2 * 200 * 3600 * HOURS_PER_MONTH
    per_in = 0.5 * groq["input_per_1m"] + 0.5 * groq["cached_input_per_1m"]
    assert groq["monthly_cost"] == pytest.approx((per_in * tok_in + groq["output_per_1m"] * tok_out) / 1e6)
    cny = _plan(cat, load, currency="CNY")
    rate = cat.convert(1.0, "USD", "CNY")
    assert next(a for a in cny.apis if a["provider"] == "groq")["monthly_cost"] == pytest.approx(
        groq["monthly_cost"] * rate)


def test_cli_answers_and_refuses_bad_loads():
    p = run_cli("serve", "--model", "llama-3.1-8b", "--gpu", "rtx-4090", "--rps", "2", "--tpot-ms", "30", "--json")
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert d["point"]["tpot_ms"] <= 30 and d["cards"] >= 1 and d["apis"]
    for bad, frag in ((("--rps", "0"), "--rps"), (("--rps", "1", "--prefix-hit", "1.5"), "--prefix-hit")):
        q = run_cli("serve", "--model", "llama-3.1-8b", "--gpu", "rtx-4090", *bad)
        assert q.returncode == 2 and q.stderr.count("\n") == 1 and frag in q.stderr


@pytest.mark.notebook
@pytest.mark.timeout(300)
def test_page_07_answers_like_the_cli(tmp_path):
    from tests.conftest import run_notebook

    rec = run_notebook("07_serving.ipynb", {"gpu": "rtx-4090", "requests_per_s": 2.0, "tpot_ms": 30.0}, tmp_path)
    assert rec["error"] is None and not rec["stale"]
    p = run_cli("serve", "--model", "llama-3.1-8b", "--gpu", "rtx-4090", "--rps", "2", "--tpot-ms", "30", "--json")
    cli = json.loads(p.stdout)
    page = rec["plan"]
    assert page["cards"] == cli["cards"] and page["point"]["batch"] == cli["point"]["batch"]
    assert page["cost_per_1m_output"]["cloud"] == pytest.approx(cli["cost_per_1m_output"]["cloud"])
    assert "serve this load" in rec["summary"]
    zh = run_notebook("07_serving.ipynb", {"lang": "zh", "tpot_ms": 0.5}, tmp_path)
    assert zh["currency"] == "CNY" and "找不到可行的运行点" in zh["summary"]
