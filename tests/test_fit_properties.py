"""Properties that must hold for every model, format, engine and card (hypothesis)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpucost.catalog import Catalog
from gpucost.errors import GpucostError
from gpucost.memory import ENGINE_PROFILES, Setup, estimate
from gpucost.models import catalog_specs
from gpucost.quant import GGUF_FTYPES, formats, weight_bytes
from gpucost.records import gpu_records
from gpucost.speed import _flops_per_token, peak_tflops, speed

CAT = Catalog()
SPECS = catalog_specs(CAT)
LLMS = [s for s in SPECS if s.is_llm]
FMTS = list(formats(CAT).values())
GPUS = list(gpu_records(CAT).values())
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

models = st.sampled_from(SPECS)
llms = st.sampled_from(LLMS)
fmts = st.sampled_from(FMTS)
engines = st.sampled_from(list(ENGINE_PROFILES))
contexts = st.integers(1, 131072)
batches = st.integers(1, 256)


def _total(spec, fmt, setup):
    try:
        return estimate(spec, fmt, setup).per_gpu.total
    except GpucostError:
        return None


@SETTINGS
@given(models, fmts, engines, contexts, contexts, batches, batches, st.booleans())
def test_more_context_or_batch_never_lowers_inference_memory(spec, fmt, engine, c1, c2, b1, b2, flash):
    kv = "fp16"
    lo = _total(spec, fmt, Setup(context=min(c1, c2), batch=min(b1, b2), engine=engine, kv_dtype=kv,
                                 flash_attention=flash))
    hi = _total(spec, fmt, Setup(context=max(c1, c2), batch=max(b1, b2), engine=engine, kv_dtype=kv,
                                 flash_attention=flash))
    if lo is not None:
        assert hi >= lo - 1e-9


@SETTINGS
@given(llms, st.sampled_from(["full", "lora", "qlora"]), st.integers(1, 16384), st.integers(1, 16384),
       st.integers(1, 16), st.integers(1, 16), st.sampled_from([0, 1, 2, 3]), st.booleans())
def test_more_context_or_batch_never_lowers_training_memory(spec, mode, c1, c2, b1, b2, zero, ckpt):
    fid = {"full": "bf16", "lora": "bf16", "qlora": "bnb-nf4-dq"}[mode]
    f = formats(CAT)[fid]
    lo = estimate(spec, f, Setup(mode=mode, context=min(c1, c2), batch=min(b1, b2), gpus=8, zero=zero,
                                 grad_checkpointing=ckpt)).per_gpu.total
    hi = estimate(spec, f, Setup(mode=mode, context=max(c1, c2), batch=max(b1, b2), gpus=8, zero=zero,
                                 grad_checkpointing=ckpt)).per_gpu.total
    assert hi >= lo - 1e-9


@SETTINGS
@given(llms, st.sampled_from(["full", "lora", "qlora"]), st.sampled_from([1, 2, 4, 8, 64]),
       st.sampled_from(["none", "cpu", "nvme"]), st.sampled_from(["transformers", "torchtune"]),
       st.sampled_from(["adamw", "adamw-8bit", "sgd", "paged-adamw"]))
def test_higher_zero_stage_never_raises_per_gpu_memory(spec, mode, n, offload, framework, opt):
    # torchtune shards with FSDP only, so its pure bf16 stays bf16 at every stage; a pure-bf16 run that ZeRO hands to
    # DeepSpeed gains fp32 copies from stage 0 to 1 (test_training_memory.py::
    # test_deepspeed_steps_fp32_copies_of_a_model_loaded_in_bf16), which this property does not sample
    fid = {"full": "bf16", "lora": "bf16", "qlora": "bnb-nf4-dq"}[mode]
    f = formats(CAT)[fid]
    stages = (0, 1, 2, 3) if offload == "none" else (1, 2, 3)
    totals = [estimate(spec, f, Setup(mode=mode, context=1024, gpus=n, zero=z, offload=offload, engine=framework,
                                      optimizer=opt)).per_gpu.total for z in stages]
    assert all(b <= a + 1e-9 for a, b in zip(totals, totals[1:], strict=False)), totals


@SETTINGS
@given(llms, st.sampled_from(["full", "lora"]), st.sampled_from(["none", "cpu"]))
def test_more_gpus_under_zero3_lower_model_states(spec, mode, offload):
    f = formats(CAT)["bf16"]

    def states(n):
        b = estimate(spec, f, Setup(mode=mode, context=1024, gpus=n, zero=3, offload=offload)).per_gpu
        return b.weights + b.gradients + b.optimizer

    s = [states(n) for n in (1, 2, 4, 8, 16, 64)]
    assert all(b <= a + 1e-9 for a, b in zip(s, s[1:], strict=False)), s
    if offload == "none":
        assert s[-1] < s[0]


@SETTINGS
@given(models, st.sampled_from([f for f in FMTS if not f.is_gguf]), st.floats(1.0, 32.0), st.floats(1.0, 32.0))
def test_fewer_bits_never_raise_the_weights(spec, fmt, b1, b2):
    lo, hi = sorted((b1, b2))
    assert weight_bytes(spec, replace(fmt, bits_per_weight=lo)).total <= \
        weight_bytes(spec, replace(fmt, bits_per_weight=hi)).total + 1e-6


GGUF_LADDER = ["q8_0", "q6_k", "q5_k_m", "q5_k_s", "q4_k_m", "q4_k_s", "q3_k_m", "q3_k_s", "q2_k"]


@pytest.mark.parametrize("spec", [s for s in SPECS if not s.is_llm or (s.hidden_size % 256 == 0 and (
    s.moe_intermediate_size or s.intermediate_size) % 256 == 0)], ids=lambda s: s.id)
def test_gguf_types_with_fewer_bits_never_take_more_room(spec):
    """Down the K-quant ladder the file never grows — where rows are whole 256-value super-blocks. (When
    they are not, e.g. Qwen2.5-0.5B's hidden size 896, llama.cpp falls back to legacy types per tensor and
    its Q2_K mix comes out slightly larger than Q3_K_S; the estimator reproduces that.)"""
    fm = formats(CAT)
    sizes = [weight_bytes(spec, fm[f]).total for f in GGUF_LADDER if f in fm and f in GGUF_FTYPES]
    assert all(b <= a for a, b in zip(sizes, sizes[1:], strict=False)), sizes
    assert weight_bytes(spec, fm["fp32"]).total > weight_bytes(spec, fm["bf16"]).total


@SETTINGS
@given(llms, fmts, st.sampled_from(GPUS), engines, st.sampled_from([1, 2, 4, 8]), st.integers(1, 512),
       st.integers(1, 65536))
def test_speed_never_exceeds_the_rooflines(spec, fmt, gpu, engine, n, batch, context):
    try:
        sp = speed(spec, fmt, gpu, gpus=n, batch=batch, context=context, engine=engine, catalog=CAT)
    except GpucostError:
        return
    assert 0 < sp.decode_tokens_per_s <= sp.bandwidth_roofline_tokens_per_s * (1 + 1e-9)
    if sp.compute_roofline_tokens_per_s is not None:
        assert sp.decode_tokens_per_s <= sp.compute_roofline_tokens_per_s * (1 + 1e-9)
        n_par = n if sp.parallel == "tensor" else 1
        peak = peak_tflops(gpu, fmt) * 1e12 * n_par  # FLOP/s of the cards working at once
        # a prompt of ``context`` tokens attends on average to half of it
        assert sp.prefill_tokens_per_s * _flops_per_token(spec, context / 2) <= peak * (1 + 1e-9)
