"""The serving step model (gpucost.serving_step.step_seconds / StepCost), the engines' scheduling defaults
(gpucost.scheduling) and the benchmark replay (gpucost.replay), each checked against numbers worked out by hand in
the comments — from the model's and card's published figures and round efficiency factors chosen here, not from
the code under test."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gpucost.catalog import Catalog
from gpucost.models import catalog_spec
from gpucost.quant import get_format
from gpucost.records import gpu
from gpucost.replay import Request, bench_serving_requests, replay
from gpucost.scheduling import Scheduler, parse_version, scheduler, trtllm_bench_settings, with_settings
from gpucost.serving import kv_capacity, operating_point, saturated
from gpucost.serving_step import step_cost, step_seconds
from gpucost.speed import EngineEfficiency, _weights_read, speed


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return Catalog()


#: round factors for hand arithmetic: 80 % of the bandwidth, 50 % of the dense peak, 0.1 ms per layer, 10 µs per
#: all-reduce
EFF = EngineEfficiency("hand", 0.8, 0.1, 0.0, 0.5, 0.01, math.nan, (), "", "", "")


def test_a_prefill_chunk_rides_along_a_decode_step_by_hand(cat):
    s, bf16, h100 = catalog_spec("llama-3.1-8b", cat), get_format("bf16", cat), gpu(cat, "h100-sxm")
    # Llama 3.1 8B in BF16 reads every weight but the embedding table: 32 blocks 13,958,643,712 B + output head
    # 1,050,673,152 B + norms 532,480 B = 15,009,849,344 B; its KV cache is 2 × 32 layers × 8 heads × 128 × 2 B
    # = 131,072 B per token. 64 sequences at 1,000 tokens read 64 × 1000 × 131,072 = 8,388,608,000 B more:
    # at 3,350 GB/s × 0.8 = 2.68 TB/s: weights 5.6007 ms, the cache 3.1301 ms.
    # FLOP per token: 2 × (8.03e9 − 128,256 × 4,096 embedding) = 15,009,326,848 in the products over the weights +
    # attention 4 × 32 layers × 32 heads × 128 × context = 524,288 × context. The products, for 64 + 512 tokens:
    # 8,645.37 GFLOP at 989.4 TFLOPS × 0.5 = 17.4760 ms, compute-bound (> 5.6007 ms of weights). Attention: 64 × 1000
    # + 512 × 256 attended tokens × 524,288 = 102.27 GFLOP = 0.2067 ms, memory-bound (< 3.1301 ms of cache). The two
    # kernels run one after the other: step = 17.4760 + 3.1301 + 32 × 0.1 ms = 23.8061 ms.
    mixed = step_seconds(s, bf16, h100, decode=64, context=1000, prefill=512, prefill_context=256, eff=EFF)
    assert mixed == pytest.approx(0.0238061, rel=1e-5)
    # the decode alone is memory-bound: 5.6007 + 3.1301 + 3.2 = 11.9308 ms; the prompt alone: max(5.6007 ms,
    # 512 × 15,009,326,848 FLOP = 15.5342 ms) + 512 × 256 × 524,288 FLOP = 0.1389 ms + 3.2 = 18.8731 ms. Together
    # 23.81 ms, not 11.93 + 18.87 = 30.80
    decode = step_seconds(s, bf16, h100, decode=64, context=1000, eff=EFF)
    prompt = step_seconds(s, bf16, h100, decode=0, context=0, prefill=512, prefill_context=256, eff=EFF)
    assert decode == pytest.approx(0.0119308, rel=1e-5) and prompt == pytest.approx(0.0188731, rel=1e-5)
    assert mixed < decode + prompt


def test_a_large_batch_pays_for_the_cache_read_after_its_compute_bound_products(cat):
    """The products over the weights and attention over the cache are separate kernels, each on its own roofline:
    at 512 sequences the products are compute-bound and the cache read still takes its whole time after them."""
    s, bf16, h100 = catalog_spec("llama-3.1-8b", cat), get_format("bf16", cat), gpu(cat, "h100-sxm")
    sp = speed(s, bf16, h100, batch=512, context=4096, engine="vllm", eff=EFF, catalog=cat)
    # products: 512 × 15,009,326,848 FLOP at 494.7 TFLOPS = 15.5342 ms (> 15,009,849,344 B of weights at 2.68 TB/s
    # = 5.6007 ms); cache: 512 × 4096 × 131,072 B = 274,877,906,944 B = 102.5664 ms (> 512 × 4096 × 524,288 FLOP of
    # attention = 2.2226 ms). Step = 15.5342 + 102.5664 + 32 × 0.1 = 121.3006 ms, not max(108.1671, 17.7568) + 3.2
    assert sp.step_ms == pytest.approx(121.3006, rel=1e-5)
    assert sp.decode_tokens_per_s == pytest.approx(512 / 0.1213006, rel=1e-5)


@pytest.mark.parametrize("model,fmt,card,n", [("llama-3.1-8b", "bf16", "h100-sxm", 1),
                                              ("qwen3-30b-a3b", "bf16", "h100-sxm", 2),
                                              ("deepseek-r1", "fp8-block128", "h200", 8),
                                              ("gemma-3-27b", "bf16", "h100-sxm", 2),
                                              ("qwen3-next-80b-a3b", "bf16", "h100-sxm", 4)])
def test_the_step_model_decodes_like_speed(cat, model, fmt, card, n):
    """One home for a decode step: without prompt tokens the serving step is speed()'s decode step (dense, MoE,
    MLA, sliding-window and hybrid models; one card and tensor parallel)."""
    s, f, g = catalog_spec(model, cat), get_format(fmt, cat), gpu(cat, card)
    cost = step_cost(s, f, g, gpus=n, engine="vllm", catalog=cat)
    for batch, ctx in ((1, 500), (64, 3000), (256, 9000)):
        sp = speed(s, f, g, gpus=n, batch=batch, context=ctx, engine="vllm", catalog=cat)
        assert cost.seconds(batch, ctx) * 1e3 == pytest.approx(sp.step_ms, rel=1e-9)


def test_a_schedule_priced_at_once_is_priced_step_by_step(cat):
    """A replay prices all its steps in one call: each step's time is the one StepCost gives that step alone (a
    pipeline-parallel MoE model, mixed steps, a decode-only step and a prompt-only step)."""
    s, f, g = catalog_spec("qwen3-30b-a3b", cat), get_format("bf16", cat), gpu(cat, "h100-sxm")
    cost = step_cost(s, f, g, gpus=4, pp=2, engine="vllm", catalog=cat)
    steps = [(64, 3000.0, 512, 256.0), (1, 10.0, 0, 0.0), (0, 0.0, 8192, 4096.0), (300, 9000.5, 7, 1.5)]
    d, c, p, pc = (np.array(col, dtype=float) for col in zip(*steps, strict=True))
    one_by_one = [cost.seconds(*step) for step in steps]
    assert cost.seconds(d, c, p, pc) == pytest.approx(one_by_one, rel=1e-12)
    assert len(set(one_by_one)) == 4


@pytest.mark.parametrize("engine,fmt,card", [("transformers", "bnb-nf4-dq", "h200"),
                                             ("transformers", "bnb-int8", "h200"),
                                             ("llama.cpp", "q4_k_m", "h200")])
def test_one_sequences_step_is_speeds_on_every_kernel_path(cat, engine, fmt, card):
    """The same at one sequence where speed() takes a kernel path's own bytes and per-layer operators
    (gpucost.kernel_paths: bitsandbytes in transformers) or a card-class factor (llama.cpp on an HBM card)."""
    s, f, g = catalog_spec("llama-3.1-8b", cat), get_format(fmt, cat), gpu(cat, card)
    sp = speed(s, f, g, batch=1, context=1024, engine=engine, catalog=cat)
    assert step_cost(s, f, g, engine=engine, catalog=cat).seconds(1, 1024) * 1e3 == pytest.approx(sp.step_ms,
                                                                                                  rel=1e-9)


def test_a_step_reads_the_experts_its_tokens_touch(cat):
    q, bf16 = catalog_spec("qwen3-30b-a3b", cat), get_format("bf16", cat)
    # Qwen3-30B-A3B routes each token to 8 of 128 experts: 16 tokens leave an expert untouched with probability
    # (120/128)^16 = 0.35607, so 64.39 % of the 57,982,058,496 B of expert weights are read, on top of the
    # 1,811,939,328 B of attention and router blocks, the 622,329,856 B output head and 25,587,712 B of norms
    dense = 1_811_939_328 + 622_329_856 + 25_587_712
    assert _weights_read(q, bf16, 16) == pytest.approx(dense + 57_982_058_496 * (1 - (15 / 16) ** 16))
    assert _weights_read(q, bf16, 1) == pytest.approx(dense + 57_982_058_496 * 8 / 128)
    # a prompt's prefill reads what its tokens touch too: a 512-token prompt touches nearly every expert, so its
    # weight-read time is far above the one decode token's
    h100 = gpu(cat, "h100-sxm")
    long = speed(q, bf16, h100, context=512, engine="vllm", catalog=cat).prefill_tokens_per_s
    assert _weights_read(q, bf16, 512) > 0.99 * (dense + 57_982_058_496)
    eff = EngineEfficiency("hand", 0.8, 0.0, 0.0, 1e9, 0.0, math.nan, (), "", "", "")   # no compute time
    only_reads = speed(q, bf16, h100, context=512, engine="vllm", eff=eff).prefill_tokens_per_s
    assert only_reads == pytest.approx(512 / (_weights_read(q, bf16, 512) / (3350e9 * 0.8)), rel=1e-3)
    assert long is not None


def test_pipeline_stages_by_hand(cat):
    s, bf16, h100 = catalog_spec("llama-3.1-8b", cat), get_format("bf16", cat), gpu(cat, "h100-sxm")
    # two stages of 16 layers, 64 sequences in two micro-batches of 32: a stage reads half the weights
    # 7,504,924,672 B and half the layers' KV of its 32 sequences 32 × 1000 × 65,536 = 2,097,152,000 B:
    # 9,602,076,672 B / 2.68 TB/s = 3.58286 ms (compute 32 × 15,533,614,848 / 2 FLOP = 0.50 ms, less), + 16 layers
    # × 0.1 ms, + the hand-over of 32 hidden vectors of 4,096 × 2 B over NVLink at 450 GB/s (0.58 µs) and 10 µs
    # latency = 5.19344 ms; the whole batch takes two stage times, 10.38689 ms
    cost = step_cost(s, bf16, h100, gpus=2, pp=2, eff=EFF)
    assert cost.seconds(64, 1000) == pytest.approx(2 * (0.00358286 + 0.0016 + 0.00001 + 32 * 8192 / 450e9), rel=1e-5)


def test_engine_scheduling_defaults(cat):
    h100, a100, l40s, b200 = (gpu(cat, g) for g in ("h100-sxm", "a100-80gb-sxm", "l40s", "b200"))
    # vLLM V1 (from 0.8.0): chunked prefill in every step; 8192 tokens and 1024 sequences on >= 70 GiB cards other
    # than A100 (16,384 tokens for the offline LLM class), 2048 / 256 elsewhere
    v1 = scheduler("vllm", h100)
    assert (v1.mixed, v1.token_budget, v1.max_running) == (True, 8192, 1024)
    assert scheduler("vllm", h100, usage="offline").token_budget == 16384
    assert (scheduler("vllm", a100).token_budget, scheduler("vllm", a100).max_running) == (2048, 256)
    assert scheduler("vllm", l40s).token_budget == 2048
    # vLLM V0 (before 0.8.0): prefill steps of whole prompts up to max(max_model_len, 2048), 256 sequences; chunked
    # prefill only past 32K of context
    v0 = scheduler("vllm", h100, version="0.7.3.dev138+g21f6ca217", max_model_len=32768)
    assert (v0.mixed, v0.chunked, v0.token_budget, v0.max_running) == (False, False, 32768, 256)
    assert scheduler("vllm", h100, version="v0.6.3", max_model_len=131072).mixed
    # … not for an MLA model (DeepSeek), nor on a ROCm card
    r1 = catalog_spec("deepseek-r1", cat)
    assert not scheduler("vllm", h100, version="0.7.4", max_model_len=163840, spec=r1).mixed
    assert not scheduler("vllm", gpu(cat, "mi300x"), version="0.7.3", max_model_len=131072).mixed
    # SGLang prefills first, in chunks of 2048 under 35 GiB, 8192 under 160 GiB, 16384 above
    assert [scheduler("sglang", g).token_budget for g in (l40s, h100, b200)] == [8192, 8192, 16384]
    assert scheduler("sglang", gpu(cat, "rtx-4090")).token_budget == 2048
    assert not scheduler("sglang", h100).mixed
    trt = scheduler("tensorrt-llm", h100)
    assert (trt.mixed, trt.chunked, trt.token_budget, trt.max_running) == (True, False, 8192, 2048)
    assert scheduler("llama.cpp", h100) is None
    assert parse_version("0.5.7") == (0, 5, 7) and parse_version("not stated") is None
    assert with_settings(v1, max_running=512, token_budget=16384).max_running == 512


def test_trtllm_bench_sizing_by_hand():
    # 515 requests fit: max_batch_size 128 × ceil(515 / 128) = 640; tokens 515 × (1 + 128 / 2048) = 547.2, under
    # 4096, so max(2048, 256 × ceil(547.2 / 256)) = 2048
    assert trtllm_bench_settings(515, 128, 2048) == (640, 2048)
    # 300 requests of 2048 / 128: 128 × 3 = 384; 300 × 17 = 5100 tokens: 512 × ceil(5100 / 512) = 5120
    assert trtllm_bench_settings(300, 2048, 128) == (384, 5120)
    # 5000 requests: capped at 4096 → 256 × 16; 4096 × 2 = 8192 tokens: 1024 × 8; two stages halve both
    assert trtllm_bench_settings(5000, 1000, 1000) == (4096, 8192)
    assert trtllm_bench_settings(5000, 1000, 1000, pp=2) == (2048, 4096)
    # a small run: at least 64 sequences
    assert trtllm_bench_settings(10, 1000, 1000) == (64, 2048)


def test_mixed_operating_point_keeps_the_budget(cat):
    s, f, h100 = catalog_spec("llama-3.1-8b", cat), get_format("bf16", cat), gpu(cat, "h100-sxm")
    v1 = scheduler("vllm", h100)
    # 8,000-token prompts and 100-token answers: b decoding sequences need 80 b prompt tokens a step, and
    # b + 80 b <= 8192 allows b = 101 at most
    pt = operating_point(s, f, h100, 256, 8000, 100, None, sched=v1, catalog=cat)
    assert pt.batch == 101
    step = step_seconds(s, f, h100, decode=101, context=8050, prefill=8080, prefill_context=4000, catalog=cat)
    assert pt.tpot_ms == pytest.approx(step * 1e3) and pt.requests_per_s == pytest.approx(101 / (100 * step))
    # a lone prompt is prefilled in what the decodes leave of the budget: 8192 − 101 = 8091 ≥ 8000, one step, and the
    # server's own latency per request (vLLM's in data/engine_efficiency.csv) comes on top
    latency = float(cat.table("engine_efficiency").set_index("engine").at["vllm", "request_latency_ms"])
    assert pt.latency_ms == latency > 0
    assert pt.ttft_ms == pytest.approx(step_seconds(s, f, h100, decode=101, context=8050, prefill=8000,
                                                    prefill_context=4000, catalog=cat) * 1e3 + latency)
    # the prompts' queue is served by the GPU: its service time leaves the latency out
    assert pt.prefill_ms == pytest.approx(8000 / 8091 * step * 1e3)


def _const(ms: float):
    """Every step ``ms`` long (a step function prices the schedule's steps at once)."""
    return lambda decode, ctx, prefill, pctx: np.full(len(decode), ms / 1e3)


def test_replay_of_two_clients_by_hand():
    reqs = [Request(100, 3)] * 4
    mixed = Scheduler("t", True, 1000, True, None, "", "")
    # every step 10 ms. Mixed steps: step 1 prefills both prompts (first tokens at 10 ms), steps 2 and 3 decode
    # tokens 2 and 3: both finish at 30 ms; the clients send the next two, which finish at 60 ms.
    # 12 tokens / 60 ms = 200 tokens/s; TTFT 10 ms; TPOT (30 − 10) / 2 = 10 ms
    r = replay(reqs, _const(10), mixed, clients=2, kv_tokens=1e6)
    assert (r.output_tokens_per_s, r.mean_ttft_ms, r.mean_tpot_ms, r.steps) == pytest.approx((200, 10, 10, 6))
    # prefill first, 150 tokens a step: step 1 takes 100 + 50 (the first prompt's first token at 10 ms), step 2 the
    # other 50 (20 ms), steps 3-4 decode: both finish at 40 ms; again for the next two, done at 80 ms.
    # 12 / 80 ms = 150 tokens/s; TTFT (10 + 20) / 2 = 15 ms; TPOT ((40 − 10) / 2 + (40 − 20) / 2) / 2 = 12.5 ms
    first = Scheduler("t", False, 150, True, None, "", "")
    r = replay(reqs, _const(10), first, clients=2, kv_tokens=1e6)
    assert (r.output_tokens_per_s, r.mean_ttft_ms, r.mean_tpot_ms, r.steps) == pytest.approx((150, 15, 12.5, 8))
    # offline, one sequence at a time (the cap): 4 × 3 steps, each request waiting for those before it:
    # TTFT (10 + 40 + 70 + 100) / 4 = 55 ms
    one = Scheduler("t", True, 1000, True, 1, "", "")
    r = replay(reqs, _const(10), one, clients=None, kv_tokens=1e6)
    assert (r.duration_s, r.mean_ttft_ms, r.peak_running) == pytest.approx((0.12, 55, 1))
    # a KV cache of 250 tokens holds two 103-token requests at once, not three
    r = replay([Request(100, 3)] * 6, _const(10), mixed, clients=None, kv_tokens=250)
    assert r.peak_running == 2


def test_a_schedules_throughput_alone_is_the_replays(cat):
    """Two answers to one question: Schedule.output_tokens_per_s (what the MoE share is fitted on) and the replay's
    throughput (what a row is judged on) agree, closed loop and offline, on a real step model."""
    from gpucost.replay import schedule

    s, f, h100 = catalog_spec("qwen3-30b-a3b", cat), get_format("bf16", cat), gpu(cat, "h100-sxm")
    step = step_cost(s, f, h100, engine="vllm", catalog=cat).seconds
    reqs = bench_serving_requests(200, 1000, 300, range_ratio=0.5)
    for clients in (8, None):
        sch = schedule(reqs, scheduler("vllm", h100), clients=clients, kv_tokens=400_000)
        assert sch.output_tokens_per_s(step) == pytest.approx(sch.price(step).output_tokens_per_s, rel=1e-12)
        assert sch.price(step).output_tokens_per_s == pytest.approx(
            replay(reqs, step, scheduler("vllm", h100), clients=clients, kv_tokens=400_000).output_tokens_per_s,
            rel=1e-12)


def test_bench_serving_lengths_are_the_scripts_own():
    # bench_serving --dataset-name random --random-input-len 1000 --random-output-len 1000 --num-prompts 10, seed
    # 1, range ratio 0: the SGLang cookbook printed 6,101 input and 4,210 output tokens over the 10 requests (the
    # input one more per request: the tokenizer's BOS), the drawn lengths sum to 6,091 and 4,210
    reqs = bench_serving_requests(10, 1000, 1000)
    assert sum(r.prompt for r in reqs) == 6091 and sum(r.output for r in reqs) == 4210
    # 80 prompts of up to 1000 / 8000 tokens: printed 39,668 input (+ 80 BOS) and 318,226 output
    reqs = bench_serving_requests(80, 1000, 8000)
    assert sum(r.prompt for r in reqs) == 39668 - 80 and sum(r.output for r in reqs) == 318226


def test_a_long_replay_settles_on_the_operating_point(cat):
    """A run long enough for its start and end not to matter lands where the steady state says, for an engine
    that prefills first; with mixed steps a run of equal requests, all sent at once, keeps its first wave's bunching
    (prompts arrive in bursts as a wave finishes), so it stays below the evenly mixed steady state."""
    s, f, h100 = catalog_spec("llama-3.1-8b", cat), get_format("bf16", cat), gpu(cat, "h100-sxm")
    reqs = [Request(1000, 200)] * 6000
    for engine in ("sglang", "vllm"):
        sat = saturated(s, f, h100, 1000, 200, catalog=cat, engine=engine)
        per_seq, pool = kv_capacity(s, f, h100, context=1200, prompt=1000, engine=engine)
        run = replay(reqs, step_cost(s, f, h100, engine=engine, catalog=cat).seconds, scheduler(engine, h100),
                     clients=None, kv_tokens=pool / per_seq * 1200)
        assert run.peak_running == sat.batch
        if engine == "sglang":
            assert run.output_tokens_per_s == pytest.approx(sat.requests_per_s * 200, rel=0.03)
        else:
            assert 0.8 * sat.requests_per_s * 200 < run.output_tokens_per_s <= sat.requests_per_s * 200
