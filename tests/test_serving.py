"""Serving a load: KV capacity by hand, the latency targets, replicas, cost per 1M input/output tokens and
the API bill of the same traffic (gpucost.serving, `gpucost serve`)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from gpucost.catalog import Catalog
from gpucost.models import catalog_spec
from gpucost.quant import get_format
from gpucost.records import gpu
from gpucost.serving import (
    Load,
    closed_loop_latency,
    cost_curve,
    fit_table,
    kv_capacity,
    longest_context,
    md1_wait_cdf,
    md1_wait_quantile,
    plan_serving,
    saturated,
)
from gpucost.serving_step import step_seconds
from gpucost.speed import speed
from gpucost.units import HOURS_PER_MONTH
from tests.conftest import cli_json, run_cli


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


def test_time_to_first_token_waits_for_the_prompts_queued_ahead(cat):
    # M/D/1 (Pollaczek-Khinchine) by hand: a replica busy with prefills a share rho of the time makes a new
    # request wait rho × prefill / (2 (1 - rho)) on average before its own prefill starts. SGLang prefills before
    # it decodes (gpucost.scheduling), so a prompt waits for those queued ahead of it
    p = _plan(cat, Load(2, 1000, 200), card="rtx-4090", engine="sglang")
    prefill_ms = p.point.prefill_ms
    rho = 2 / p.replicas * prefill_ms / 1000
    assert p.prefill_utilization == pytest.approx(rho)
    assert p.ttft_queued_ms == pytest.approx(p.point.ttft_ms + rho * prefill_ms / (2 * (1 - rho)))
    assert p.ttft_queued_ms > p.point.ttft_ms
    # a TTFT target is met with queueing: tighter targets take more replicas (smaller batches, less waiting) —
    # a loose one, then 15 % and 8 % above a prompt's TTFT without queueing (the queue's share of the target shrinks)
    alone = _plan(cat, Load(20, 1000, 200), card="rtx-4090", engine="sglang").point.ttft_ms
    fleets = []
    for target in (2 * alone, 1.15 * alone, 1.08 * alone):
        q = _plan(cat, Load(20, 1000, 200), card="rtx-4090", ttft_ms=target, engine="sglang")
        assert q.ttft_queued_ms <= target * (1 + 1e-9)
        fleets.append(q.replicas)
        # and one replica fewer would not meet it (or not carry the peak)
        fewer = q.replicas - 1
        rho_fewer = 20 / fewer * q.point.prefill_ms / 1000
        too_slow = rho_fewer >= 1 or q.point.ttft_ms + rho_fewer * q.point.prefill_ms / (
            2 * (1 - rho_fewer)) > target
        assert too_slow or fewer * q.point.requests_per_s < 20
    assert fleets == sorted(fleets) and fleets[0] < fleets[-1]
    assert any("M/D/1" in n for n in p.notes)


def _simulated_md1_waits(rho: float, n: int = 300_000) -> np.ndarray:
    """Waits in an M/D/1 queue (service time 1) by Lindley's recursion, W' = max(0, W + 1 − A): an
    independent check of Erlang's formula."""
    gaps = np.random.default_rng(7).exponential(1 / rho, n)
    waits = np.empty(n)
    w = 0.0
    for i in range(n):
        waits[i] = w
        w = max(0.0, w + 1.0 - gaps[i])
    return waits[n // 20:]   # without the start-up


def test_md1_waiting_time_quantiles_match_a_simulated_queue():
    # Erlang's formula by hand below one service time: P(W <= t) = (1 - rho) e^(rho t)
    assert md1_wait_cdf(0.0, 0.5) == pytest.approx(0.5)
    assert md1_wait_cdf(0.7, 0.5) == pytest.approx(0.5 * math.exp(0.35))
    assert md1_wait_quantile(0.3, 0.5) == 0.0   # 70 % of requests find no prompt queued ahead
    for rho in (0.4, 0.7, 0.9):
        waits = _simulated_md1_waits(rho)
        assert md1_wait_cdf(2.5, rho) == pytest.approx(np.mean(waits <= 2.5), abs=0.01)
        for q in (0.5, 0.9):
            sim = float(np.percentile(waits, q * 100))
            assert md1_wait_quantile(rho, q) == pytest.approx(sim, rel=0.05, abs=0.03), (rho, q)
    # beyond the exact range: the exponential tail, continuous with it
    assert md1_wait_quantile(0.99, 0.9) > md1_wait_quantile(0.98, 0.9) > 25


def test_a_p90_ttft_target_counts_the_slowest_tenth(cat):
    # 500 ms: a lone 1,000-token prompt takes about 320 ms on SGLang on an RTX 4090 (its request latency included)
    mean = _plan(cat, Load(20, 1000, 200), card="rtx-4090", ttft_ms=500, engine="sglang")
    p90 = _plan(cat, Load(20, 1000, 200), card="rtx-4090", ttft_ms=500, ttft_stat="p90", engine="sglang")
    assert p90.ttft_stat == "p90" and p90.ttft_queued_ms <= 500 * (1 + 1e-9)
    prefill_ms = p90.point.prefill_ms
    # the plan's p90 is the no-queue TTFT plus the 90th percentile of the M/D/1 wait in prefill times
    assert p90.ttft_queued_ms == pytest.approx(
        p90.point.ttft_ms + prefill_ms * md1_wait_quantile(p90.prefill_utilization, 0.9), rel=2e-3)
    assert p90.replicas > mean.replicas    # bounding nine requests in ten takes more cards than the mean
    assert any("90th percentile" in n for n in p90.notes)
    rec = run_cli("serve", "--model", "llama-3.1-8b", "--gpu", "rtx-4090", "--rps", "20", "--ttft-ms", "500",
                  "--ttft-stat", "p90", "--engine", "sglang", "--json")
    assert rec.returncode == 0 and json.loads(rec.stdout)["replicas"] == p90.replicas
    bad = run_cli("serve", "--model", "llama-3.1-8b", "--gpu", "rtx-4090", "--ttft-stat", "p99")
    assert bad.returncode == 2 and "--ttft-stat" in bad.stderr and bad.stderr.count("\n") == 1


def test_when_no_configuration_meets_the_targets_the_closest_one_is_named(cat):
    spec, fmt = catalog_spec("llama-3.1-70b", cat), get_format("bf16", cat)
    rtx = gpu(cat, "rtx-4090")
    # 141 GB of weights: not on one 24 GB card, nor four; eight hold it with room for the KV cache
    one = plan_serving(spec, fmt, rtx, Load(1, 1000, 200), catalog=cat)
    assert one.point is None and one.closest["gpus_per_replica"] == 8
    assert plan_serving(spec, fmt, rtx, Load(1, 1000, 200), gpus=4, catalog=cat).point is None
    assert plan_serving(spec, fmt, rtx, Load(1, 1000, 200), gpus=8, catalog=cat).point is not None
    assert any("8 × rtx-4090 per replica" in n for n in one.notes)
    # a TPOT below what any number of cards does: the best one card does, one request at a time
    small, h100 = catalog_spec("llama-3.1-8b", cat), gpu(cat, "h100-sxm")
    none = plan_serving(small, fmt, h100, Load(1, 1000, 200), tpot_ms=0.5, catalog=cat)
    alone = speed(small, fmt, h100, batch=1, context=1100, catalog=cat)
    assert none.closest["gpus_per_replica"] is None
    assert none.closest["best_tpot_ms"] == pytest.approx(alone.step_ms)
    assert none.closest["best_ttft_ms"] > alone.step_ms
    rec = run_cli("serve", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--tpot-ms", "0.5")
    assert rec.returncode == 0 and "no configuration meets the targets" in rec.stdout
    assert f"TPOT {alone.step_ms:.1f} ms" in rec.stdout


def test_a_saturated_replica_and_fixed_concurrency_by_hand(cat):
    spec, fmt, h100 = catalog_spec("llama-3.1-8b", cat), get_format("bf16", cat), gpu(cat, "h100-sxm")
    full = saturated(spec, fmt, h100, 1000, 200, catalog=cat)
    per_seq, pool = kv_capacity(spec, fmt, h100, context=1200, prompt=1000)
    # vLLM V1 on an 80 GB H100 (gpucost.scheduling): 1,024 sequences at most, 8,192 tokens a step; b sequences
    # decoding take b × 1000 / 200 = 5 b prompt tokens a step to keep them fed, so b + 5 b <= 8192: b <= 1365
    assert full.batch == min(int(pool // per_seq), 1024, 1365)
    step = step_seconds(spec, fmt, h100, decode=full.batch, context=1100, prefill=5 * full.batch,
                        prefill_context=500, engine="vllm", catalog=cat)
    assert full.tpot_ms == pytest.approx(step * 1e3)
    assert full.requests_per_s == pytest.approx(full.batch / (200 * step))
    # one client: no queue, every step its own
    one = saturated(spec, fmt, h100, 1000, 200, concurrency=1, catalog=cat)
    assert closed_loop_latency(one, 200) == pytest.approx((one.ttft_ms, one.tpot_ms))
    # sixteen on vLLM V1: the prompts ride along the decode steps, whose time is the TPOT; a prompt may wait for
    # the chunks queued ahead of it
    many = saturated(spec, fmt, h100, 1000, 200, concurrency=16, catalog=cat)
    ttft, tpot = closed_loop_latency(many, 200)
    assert ttft >= many.ttft_ms and tpot == pytest.approx(many.tpot_ms)
    # sixteen on SGLang, which prefills first: Little's law — TTFT + output × TPOT is the time each request spends,
    # 16 / requests per second, and the others' prefills interrupt a request's decode steps
    many = saturated(spec, fmt, h100, 1000, 200, concurrency=16, catalog=cat, engine="sglang")
    ttft, tpot = closed_loop_latency(many, 200)
    assert ttft > many.ttft_ms and tpot > many.tpot_ms
    # (the server's own latency per request, SGLang's in data/engine_efficiency.csv, is in the TTFT but not the GPU's)
    latency = float(cat.table("engine_efficiency").set_index("engine").at["sglang", "request_latency_ms"])
    assert many.latency_ms == latency > 0
    assert ttft - latency + 200 * tpot == pytest.approx(16 / many.requests_per_s * 1e3)


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


def test_break_even_with_the_cheapest_api(cat):
    # the API bill grows with the load; one replica costs the same at any load: they cross where a replica's
    # monthly cost equals the API bill of that load — at any load in the request, the same crossing
    for rps in (0.5, 2, 4):
        p = _plan(cat, Load(rps, 1000, 200), card="rtx-4090")
        api = p.apis[0]
        rented = p.monthly_cost["cloud"] / p.cards  # one card = one replica here
        even = p.break_even["cloud"]
        assert even["api"] == f"{api['provider']} {api['api_model']}"
        assert even["requests_per_s"] == pytest.approx(rented / (api["monthly_cost"] / rps))
        assert even["utilization"] == pytest.approx(even["requests_per_s"] / p.point.requests_per_s)
    # a bought card costs less per month than a rented one: it breaks even at a lower load
    assert p.break_even["new"]["requests_per_s"] < p.break_even["cloud"]["requests_per_s"]
    rec = run_cli("serve", "--model", "llama-3.1-8b", "--gpu", "rtx-4090", "--rps", "2")
    assert rec.returncode == 0 and "break-even with groq" in rec.stdout


def test_cost_against_load_passes_through_the_plan_and_the_api_bill(cat):
    p = _plan(cat, Load(2, 1000, 200), card="rtx-4090", ttft_ms=400)
    rows = cost_curve(p)
    assert len(rows) == 25 and rows[0]["requests_per_s"] == pytest.approx(0.2)
    assert rows[-1]["requests_per_s"] == pytest.approx(20)
    mid = rows[12]  # the plan's own load: the plan's answer
    assert mid["requests_per_s"] == pytest.approx(2) and mid["replicas"] == p.replicas
    for basis in ("new", "used", "cloud"):
        assert mid[basis] == pytest.approx(p.monthly_cost[basis])
        assert [r[basis] for r in rows] == sorted(r[basis] for r in rows)  # more load never costs less
    assert mid["api"] == pytest.approx(p.apis[0]["monthly_cost"])
    assert rows[-1]["api"] == pytest.approx(p.apis[0]["monthly_cost"] * 10)
    # page 07 draws the same numbers
    from gpucost.ui.serving import ServingPage

    page = ServingPage(gpu="rtx-4090", requests_per_s=2.0, ttft_ms=400.0, tpot_ms=None, catalog=cat)
    cloud = next(d for d in page.curve_chart.figure["data"] if d["name"] == "rented (your market)")
    assert cloud["y"][12] == pytest.approx(p.monthly_cost["cloud"])


def test_what_fits_a_card_by_hand(cat):
    # Llama 3.1 8B in BF16 on an RTX 4090: the KV cache of one token is 32 × 8 × 128 × 2 × 2 B = 128 KiB,
    # so a 8,192-token sequence holds 1 GiB and a 131,072-token one 16 GiB
    spec, fmt, card = catalog_spec("llama-3.1-8b", cat), get_format("bf16", cat), gpu(cat, "rtx-4090")
    t = fit_table(spec, fmt, card)
    by_ctx = {r.context: r for r in t.by_context}
    assert t.max_context == 131072 and max(by_ctx) == 131072
    assert by_ctx[8192].kv_per_sequence_gib == pytest.approx(1.0)
    assert by_ctx[131072].kv_per_sequence_gib == pytest.approx(16.0)
    pool = by_ctx[8192].kv_pool_gib
    assert 4 < pool < 8  # 24 GiB, less vLLM's 10 % reserve, 15 GiB of weights, activations and context
    assert by_ctx[8192].max_concurrency == math.floor(pool / 1.0)
    assert by_ctx[131072].max_concurrency == 0  # one full-length sequence does not fit next to the weights
    # the inverse: n users each get the most whole tokens whose KV cache fits; one token more does not (and
    # from about 4k tokens on, where the prompt's activations stop growing, that is free memory ÷ 128 KiB ÷ n)
    assert [r.concurrency for r in t.by_concurrency][:4] == [1, 2, 4, 8]
    for row in t.by_concurrency:
        longest = row.longest_context
        if longest >= 4096:
            assert longest == math.floor(pool * 2**30 / row.concurrency / (128 * 1024)), row
        if longest:
            per, free = kv_capacity(spec, fmt, card, context=longest)
            assert row.concurrency * per <= free
        per, free = kv_capacity(spec, fmt, card, context=longest + 1)
        assert row.concurrency * per > free
    # an 8-card H100 replica holds the full context for every one of the 256 users but no more than the model's
    big = longest_context(spec, fmt, gpu(cat, "h100-sxm"), 1, gpus=8)
    assert big == 131072


def test_what_fits_matches_the_serving_plan(cat):
    # one question, one number: the table's concurrency at a context is the plan's for a load of that length
    spec, fmt, card = catalog_spec("llama-3.1-8b", cat), get_format("bf16", cat), gpu(cat, "rtx-4090")
    rows = {r.context: r.max_concurrency for r in fit_table(spec, fmt, card).by_context}
    for ctx in (4096, 8192):
        plan = plan_serving(spec, fmt, card, Load(1, ctx - 256, 256), catalog=cat)
        assert plan.max_concurrency == rows[ctx]


def test_cli_answers_and_refuses_bad_loads():
    p = run_cli("serve", "--model", "llama-3.1-8b", "--gpu", "rtx-4090", "--rps", "2", "--tpot-ms", "30", "--json")
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert d["point"]["tpot_ms"] <= 30 and d["cards"] >= 1 and d["apis"]
    # a daily volume instead of a rate: 200M tokens a day of 1,000 + 200-token requests = 1.93 requests/s
    v = run_cli("serve", "--model", "llama-3.1-8b", "--gpu", "rtx-4090", "--tokens-per-day", "200M", "--json")
    assert v.returncode == 0, v.stderr
    assert json.loads(v.stdout)["load"]["requests_per_s"] == pytest.approx(200e6 / 86_400 / 1_200)
    for extra in (("--fits",), ("--rps", "1")):  # an image model has no tokens to serve
        q = run_cli("serve", "--model", "flux.1-dev", "--gpu", "h100-sxm", *extra)
        assert q.returncode == 2 and q.stderr.count("\n") == 1 and "diffusion model" in q.stderr
    for bad, frag in ((("--rps", "0"), "--rps"), (("--rps", "1", "--prefix-hit", "1.5"), "--prefix-hit"),
                      (("--tokens-per-day", "-5"), "--tokens-per-day")):
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
    fits = json.loads(run_cli("serve", "--model", "llama-3.1-8b", "--gpu", "rtx-4090", "--fits", "--json").stdout)
    assert rec["fits"]["by_concurrency"] == fits["by_concurrency"]
    assert "serve this load" in rec["summary"]
    zh = run_notebook("07_serving.ipynb", {"lang": "zh", "tpot_ms": 0.5}, tmp_path)
    assert zh["currency"] == "CNY" and "找不到可行的运行点" in zh["summary"]


# --------------------------------------------------------------------------------------------------
# Properties (hypothesis)
# --------------------------------------------------------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

PROPS = settings(max_examples=25, deadline=None)
LOADS = st.tuples(st.floats(0.05, 40), st.integers(50, 4000), st.integers(10, 1000))


@PROPS
@given(load=LOADS, more=st.floats(1.0, 5.0))
def test_more_load_never_needs_fewer_replicas(cat, load, more):
    rps, n_in, n_out = load
    a = _plan(cat, Load(rps, n_in, n_out), card="rtx-4090", ttft_ms=2000, tpot_ms=60)
    b = _plan(cat, Load(rps * more, n_in, n_out), card="rtx-4090", ttft_ms=2000, tpot_ms=60)
    if a.replicas is not None and b.replicas is not None:
        assert b.replicas >= a.replicas


@PROPS
@given(load=LOADS, target=st.floats(100, 5000), tighter=st.floats(0.2, 1.0))
def test_a_tighter_ttft_target_never_raises_what_one_replica_holds(cat, load, target, tighter):
    rps, n_in, n_out = load
    loose = _plan(cat, Load(rps, n_in, n_out), card="rtx-4090", ttft_ms=target)
    tight = _plan(cat, Load(rps, n_in, n_out), card="rtx-4090", ttft_ms=target * tighter)
    held = [p.replica_max_rps or 0.0 for p in (loose, tight)]
    assert held[1] <= held[0] * (1 + 1e-9)


@PROPS
@given(load=LOADS, hit=st.floats(0, 0.9), more=st.floats(0, 0.09))
def test_a_higher_prefix_cache_hit_rate_never_raises_the_bill(cat, load, hit, more):
    rps, n_in, n_out = load
    low = _plan(cat, Load(rps, n_in, n_out, prefix_hit=hit), card="rtx-4090")
    high = _plan(cat, Load(rps, n_in, n_out, prefix_hit=hit + more), card="rtx-4090")
    if low.monthly_cost and high.monthly_cost:
        assert high.monthly_cost["cloud"] <= low.monthly_cost["cloud"] + 1e-9
        assert high.apis[0]["monthly_cost"] <= low.apis[0]["monthly_cost"] + 1e-9


def test_a_plan_on_an_amd_card_says_its_steps_take_the_rocm_time_factor(cat):
    """vLLM on an MI300X: every step takes the stored ROCm time factor × the CUDA-fitted time (the ROCm serving
    documents ran that much slower), and the plan says so in both languages; an NVIDIA card's plan does not."""
    import csv

    from gpucost.i18n import localize
    from tests.conftest import DATA

    with open(DATA / "engine_efficiency.csv", encoding="utf-8") as fh:
        k = float({r["engine"]: r for r in csv.DictReader(fh)}["vllm/rocm"]["time_factor"])
    amd = _plan(cat, Load(2, 512, 256), card="mi300x", engine="vllm")
    en = [localize(n, "en") for n in amd.notes]
    assert any(f"{k:.2f}×" in n and "rocm" in n for n in en), en
    assert any(f"{k:.2f}" in localize(n, "zh") and "rocm" in localize(n, "zh") for n in amd.notes)
    nv = _plan(cat, Load(2, 512, 256), card="h100-sxm", engine="vllm")
    assert not any("×" in localize(n, "en") for n in nv.notes)
    rec = run_cli("serve", "--model", "llama-3.1-8b", "--gpu", "mi300x", "--engine", "vllm", "--json")
    assert rec.returncode == 0 and any(f"{k:.2f}×" in n for n in json.loads(rec.stdout)["notes"])


def test_a_plans_ttft_includes_the_engines_request_latency(cat):
    """What the server does per request beyond the GPU steps (SGLang's 116 ms, fitted on its cookbook's runs at one
    client) is in the plan's TTFT and said in its notes, but not in the prompts' queue: the GPU serves that queue."""
    latency = float(cat.table("engine_efficiency").set_index("engine").at["sglang", "request_latency_ms"])
    p = _plan(cat, Load(2, 1000, 200), card="rtx-4090", engine="sglang")
    assert p.point.latency_ms == latency and 100 < latency < 150
    assert any(f"request latency of {latency:.0f} ms" in n for n in p.notes)
    # SGLang prefills a lone prompt of 1,000 tokens in one step, which makes its first token
    alone = step_seconds(catalog_spec("llama-3.1-8b", cat), get_format("bf16", cat), gpu(cat, "rtx-4090"), decode=0,
                         context=0, prefill=1000, prefill_context=500, engine="sglang", catalog=cat) * 1e3
    assert p.point.ttft_ms == pytest.approx(latency + alone)
    assert p.point.prefill_ms <= alone * (1 + 1e-9)    # the queue's service time: GPU time only
    rec = cli_json("serve", "--model", "llama-3.1-8b", "--gpu", "rtx-4090", "--rps", "2", "--engine", "sglang")
    assert rec["point"]["latency_ms"] == latency and rec["point"]["ttft_ms"] == pytest.approx(p.point.ttft_ms)


def test_an_engine_without_runs_at_one_client_says_whose_request_latency_it_borrows(cat):
    """TensorRT-LLM has no published runs at one client in the corpus: its plan carries vLLM's request latency and its
    notes say whose it is; SGLang's is its own."""
    vllm = float(cat.table("engine_efficiency").set_index("engine").at["vllm", "request_latency_ms"])
    p = _plan(cat, Load(2, 1000, 200), engine="tensorrt-llm")
    assert p.point.latency_ms == vllm
    assert any(f"request latency of {vllm:.0f} ms, vllm's" in n for n in p.notes)
    own = _plan(cat, Load(2, 1000, 200), card="rtx-4090", engine="sglang")
    assert not any("'s: the corpus has no published runs" in n for n in own.notes)
