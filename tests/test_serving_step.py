"""The serving step model (gpucost.speed.step_seconds / StepCost), checked against numbers worked out by hand in
the comments — from the model's and card's published figures and round efficiency factors chosen here, not from the
code under test."""

from __future__ import annotations

import math

import pytest

from gpucost.catalog import Catalog
from gpucost.models import catalog_spec
from gpucost.quant import get_format
from gpucost.records import gpu
from gpucost.speed import EngineEfficiency, _weights_read, speed, step_cost, step_seconds


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
    # 23,398,457,344 B at 3,350 GB/s × 0.8 = 8.7308 ms.
    # FLOP per token: 2 × (8.03e9 − 128,256 × 4,096 embedding) = 15,009,326,848 + attention 4 × 32 layers × 32
    # heads × 128 × context = 524,288 × context. 64 decode tokens at 1,000: 64 × 15,533,614,848 = 994.15 GFLOP;
    # 512 prompt tokens at 256: 512 × 15,143,544,576 = 7,753.49 GFLOP; 8,747.65 GFLOP at 989.4 TFLOPS × 0.5 =
    # 17.6827 ms: compute-bound. Step = 17.6827 + 32 × 0.1 ms = 20.8827 ms.
    mixed = step_seconds(s, bf16, h100, decode=64, context=1000, prefill=512, prefill_context=256, eff=EFF)
    assert mixed == pytest.approx(0.0208827, rel=1e-5)
    # the decode alone is memory-bound: 8.7308 + 3.2 = 11.9308 ms; the prompt alone: max(15,009,849,344 B /
    # 2.68 TB/s = 5.6007 ms, 15.6731 ms) + 3.2 = 18.8731 ms. Together 20.88 ms, not 11.93 + 18.87 = 30.80
    decode = step_seconds(s, bf16, h100, decode=64, context=1000, eff=EFF)
    prompt = step_seconds(s, bf16, h100, decode=0, context=0, prefill=512, prefill_context=256, eff=EFF)
    assert decode == pytest.approx(0.0119308, rel=1e-5) and prompt == pytest.approx(0.0188731, rel=1e-5)
    assert mixed < decode + prompt


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
