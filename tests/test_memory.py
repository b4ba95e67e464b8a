"""Memory estimates, each expected figure computed by hand here (arithmetic in the comments) or taken from
a source (the ZeRO paper's Figure 1, llama.cpp's printed buffers)."""

from __future__ import annotations

import csv
from dataclasses import replace

import numpy as np
import pytest

from gpucost.cards import card_table
from gpucost.catalog import Catalog, bundled_data_dir
from gpucost.errors import GpucostError, UnknownNameError
from gpucost.fit_matrix import fit_matrix
from gpucost.memory import (
    CardFit,
    Setup,
    _per_gpu_totals,
    card_fits,
    cheapest_cards,
    estimate,
    max_batch,
    max_context,
)
from gpucost.models import catalog_spec
from gpucost.quant import get_format, weights_file_gib

GIB = 2**30


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return Catalog()


def spec(cat, mid):
    return catalog_spec(mid, cat)


def fmt(cat, fid):
    return get_format(fid, cat)


# -- KV cache ---------------------------------------------------------------------------------------

def test_kv_cache_gqa_mha_batch_and_dtypes(cat):
    l3 = spec(cat, "llama-3-8b")
    q4 = fmt(cat, "q4_k_m")
    # 2 (K,V) × 32 layers × 8 KV heads × 128 × 8192 tokens × 2 bytes = 1,073,741,824 B = 1 GiB
    assert estimate(l3, q4, Setup(context=8192, engine="llama.cpp")).per_gpu.kv_cache == pytest.approx(1.0)
    assert estimate(l3, q4, Setup(context=8192, batch=4, engine="llama.cpp")).per_gpu.kv_cache == pytest.approx(4.0)
    # q8_0 blocks: 34 bytes per 32 values instead of 64 → × 34/64; q4_0: 18 bytes per 32 → × 18/64
    assert estimate(l3, q4, Setup(context=8192, engine="llama.cpp", kv_dtype="q8_0")).per_gpu.kv_cache == \
        pytest.approx(34 / 64)
    assert estimate(l3, q4, Setup(context=8192, engine="llama.cpp", kv_dtype="q4_0")).per_gpu.kv_cache == \
        pytest.approx(18 / 64)
    # Llama 2 7B has no GQA: 2 × 32 × 32 × 128 × 4096 × 2 B = 2 GiB
    l2 = spec(cat, "llama-2-7b")
    assert estimate(l2, fmt(cat, "fp16"), Setup(context=4096, engine="transformers")).per_gpu.kv_cache == pytest.approx(2.0)


def test_kv_cache_mla_compressed_or_expanded(cat):
    ds = spec(cat, "deepseek-v3")
    bf = fmt(cat, "bf16")
    # vLLM caches the latent: (512 + 64) × 61 layers × 4096 tokens × 2 B = 287,834,112 B
    assert estimate(ds, bf, Setup(context=4096, engine="vllm")).per_gpu.kv_cache == pytest.approx(287_834_112 / GIB)
    # transformers caches K (128 nope + 64 rope) and V (128) for all 128 heads: 40,960 values × 61 × 4096 × 2 B
    assert estimate(ds, bf, Setup(context=4096, engine="transformers")).per_gpu.kv_cache == \
        pytest.approx(40_960 * 61 * 4096 * 2 / GIB)


def test_kv_cache_sliding_windows(cat):
    m = spec(cat, "mistral-7b-v0.1")
    bf = fmt(cat, "bf16")
    # 32 layers all with a 4096-token window: 2 × 8 × 128 × 2 B = 4096 B per token per layer
    # vLLM keeps the window: 4096 × 32 × 4096 = 0.5 GiB; transformers keeps all 32768 tokens: 4 GiB
    assert estimate(m, bf, Setup(context=32768, engine="vllm")).per_gpu.kv_cache == pytest.approx(0.5)
    assert estimate(m, bf, Setup(context=32768, engine="transformers")).per_gpu.kv_cache == pytest.approx(4.0)
    g = spec(cat, "gemma-2-9b")
    # 2 × 8 × 256 × 2 B = 8192 B per token per layer; 21 global layers × 8192 tokens + 21 local × 4096
    want = (21 * 8192 + 21 * 4096) * 8192 / GIB  # = 1.96875 GiB
    assert estimate(g, bf, Setup(context=8192, engine="vllm")).per_gpu.kv_cache == pytest.approx(want)


def test_kv_cache_of_a_hybrid_linear_attention_model(cat):
    # Qwen3-Next-80B-A3B (config.json): 48 layers, full_attention_interval 4 → 12 full-attention layers
    # with 2 KV heads × head_dim 256; the other 36 are Gated DeltaNet layers (16 key heads, 32 value heads,
    # head dims 128, conv kernel 4) that keep per sequence a 32 × 128 × 128 recurrent state and the last 3
    # steps of the conv input (2 × 16 × 128 + 32 × 128 = 8,192 channels), whatever the context
    m = spec(cat, "qwen3-next-80b-a3b")
    kv_per_token = 2 * 12 * 2 * 256 * 2                    # bytes: K and V, 12 layers, bf16
    state_values = 36 * (32 * 128 * 128 + 3 * 8192)        # per sequence
    bf = fmt(cat, "bf16")
    for ctx, batch in ((4096, 1), (32768, 1), (32768, 4)):
        got = estimate(m, bf, Setup(context=ctx, batch=batch, engine="vllm")).per_gpu.kv_cache
        assert got == pytest.approx((kv_per_token * ctx + state_values * 2) * batch / GIB)
    # llama.cpp keeps recurrent states in F32
    q4 = fmt(cat, "q4_k_m")
    got = estimate(m, q4, Setup(context=32768, engine="llama.cpp")).per_gpu.kv_cache
    assert got == pytest.approx((kv_per_token * 32768 + state_values * 4) / GIB)
    # a quarter of a dense model's KV cache per token: Llama 3.1 70B (80 layers × 8 KV heads × 128) holds
    # 320 KiB per token, Qwen3-Next 24 KiB
    assert estimate(m, bf, Setup(context=131072, engine="vllm")).per_gpu.kv_cache < 3.1


def test_tensor_parallel_splits_kv_heads_then_replicates(cat):
    l70 = spec(cat, "llama-3-70b")
    bf = fmt(cat, "bf16")
    # whole cache: 2 × 80 × 8 × 128 × 8192 × 2 B = 2.5 GiB; 8 KV heads: /4 on 4 GPUs, /8 on 8, still /8 on 16
    kv = {n: estimate(l70, bf, Setup(context=8192, gpus=n, engine="vllm")).per_gpu.kv_cache for n in (1, 4, 8, 16)}
    assert kv[1] == pytest.approx(2.5) and kv[4] == pytest.approx(0.625)
    assert kv[8] == pytest.approx(0.3125) and kv[16] == pytest.approx(0.3125)


# -- weights --------------------------------------------------------------------------------------

# Llama 3.1 8B, counted by hand: embedding 128256 × 4096 = 525,336,576 (and the same again for the output
# head); per layer q, o 4096² = 16,777,216 each, k, v 4096 × 1024 = 4,194,304 each, MLP 3 × 4096 × 14336
# = 176,160,768, two norms 8,192 → 218,112,000; × 32 = 6,979,584,000; final norm 4,096.
EMBED = 525_336_576
BLOCK_MATS = 32 * (218_112_000 - 8_192)   # 6,979,321,856 matrix values in the decoder blocks
VECTORS = 32 * 8_192 + 4_096              # 266,240 norm values
TOTAL_31_8B = 2 * EMBED + BLOCK_MATS + VECTORS   # 8,030,261,248


def test_weights_float_and_tensor_parallel(cat):
    s = spec(cat, "llama-3.1-8b")
    bf = fmt(cat, "bf16")
    assert estimate(s, bf, Setup(engine="transformers")).per_gpu.weights == pytest.approx(TOTAL_31_8B * 2 / GIB)
    # 14.96 GiB is the F16 GGUF size llama.cpp's quantize README lists for Llama-3.1-8B
    assert weights_file_gib(s, fmt(cat, "fp16")) == pytest.approx(14.96, abs=0.005)
    # vLLM tensor parallel 2: matrices and embedding/head split, norms replicated
    tp2 = estimate(s, bf, Setup(gpus=2, engine="vllm")).per_gpu.weights
    assert tp2 == pytest.approx(((BLOCK_MATS + 2 * EMBED) / 2 + VECTORS) * 2 / GIB)


def test_weights_nf4_keeps_embeddings_and_head_in_16_bit(cat):
    s = spec(cat, "llama-3.1-8b")
    nf4 = fmt(cat, "bnb-nf4-dq")
    # decoder matrices at 4.127 bits (QLoRA double quantization), embedding + head + norms at 2 bytes
    want = (BLOCK_MATS * 4.127 / 8 + (2 * EMBED + VECTORS) * 2) / GIB
    assert estimate(s, nf4, Setup(engine="transformers")).per_gpu.weights == pytest.approx(want)


def test_llama_cpp_keeps_token_embeddings_on_the_cpu_and_offloads_layers(cat):
    s = spec(cat, "llama-3.1-8b")
    q4 = fmt(cat, "q4_k_m")
    embd = EMBED * 4.5 / 8 / GIB  # token_embd stays Q4_K (144 bytes per 256 values) in a Q4_K_M file
    e = estimate(s, q4, Setup(context=4096, engine="llama.cpp"))
    assert e.per_gpu.weights == pytest.approx(weights_file_gib(s, q4) - embd)
    assert e.cpu_gib == pytest.approx(embd)
    # -ngl 16 of 32: half the layers' weights and KV on the GPU, the rest and the output head in CPU RAM
    half = estimate(s, q4, Setup(context=4096, engine="llama.cpp", gpu_layers=16))
    assert half.per_gpu.kv_cache == pytest.approx(e.per_gpu.kv_cache / 2)
    assert half.per_gpu.weights + half.cpu_gib == pytest.approx(e.per_gpu.weights + e.cpu_gib + e.per_gpu.kv_cache / 2)


def test_llama_cpp_compute_buffer_matches_its_log(cat):
    """benchmarks.csv im19: llama.cpp printed a 560 MiB CUDA compute buffer for Llama-3-8B, n_ctx 8192."""
    s = spec(cat, "llama-3-8b")
    e = estimate(s, fmt(cat, "q4_k_m"), Setup(context=8192, engine="llama.cpp", flash_attention=False))
    # attention scores 512 × 8192 × 32 heads × 4 B = 512 MiB (> logits 250.5 MiB, FFN 56 MiB)
    # + 3 hidden buffers 512 × 4096 × 4 B = 24 MiB → 536 MiB
    assert e.per_gpu.activations * 1024 == pytest.approx(536.0)
    assert e.per_gpu.activations * 1024 == pytest.approx(560, rel=0.05)


def test_transformers_prefill_activations(cat):
    s = spec(cat, "qwen2.5-7b")
    e = estimate(s, fmt(cat, "bf16"), Setup(context=32768, prompt=30720, engine="transformers"))
    # 30720 tokens × (3 × 18944 + 4 × 3584) values × 2 B + the last position's fp32 logits 152064 × 4 B
    want = (30720 * (3 * 18944 + 4 * 3584) * 2 + 152064 * 4) / GIB
    assert e.per_gpu.activations == pytest.approx(want)


def test_diffusion_weights_and_vae_allowance(cat):
    s = spec(cat, "sdxl")
    e = estimate(s, fmt(cat, "fp16"), Setup(engine="transformers"))
    assert e.per_gpu.weights == pytest.approx(3.469e9 * 2 / GIB)
    assert e.per_gpu.kv_cache == 0
    # 3 tensors × 1024 × 1024 pixels × 128 channels × 2 B = 0.75 GiB
    assert e.per_gpu.activations == pytest.approx(0.75)
    assert estimate(spec(cat, "sd-1.5"), fmt(cat, "fp16"), Setup(engine="transformers", image_size=512)) \
        .per_gpu.activations == pytest.approx(0.1875)


# -- training -------------------------------------------------------------------------------------

def test_zero_paper_figure_1(cat):
    """ZeRO paper (arXiv 1910.02054) Figure 1: Ψ = 7.5B, N_d = 64, K = 12: per-GPU model states
    120 GB (baseline), 31.4 GB (P_os), 16.6 GB (P_os+g), 1.9 GB (P_os+g+p)."""
    s = replace(spec(cat, "llama-2-7b"), params_total=7.5e9)
    bf = fmt(cat, "bf16")
    got = {}
    for z in (0, 1, 2, 3):
        e = estimate(s, bf, Setup(mode="full", context=512, gpus=64, zero=z, engine="transformers"))
        t = dict(e.terms)  # the model states (the optimizer's step temporaries are a term of their own)
        got[z] = (t["weights"] + t["gradients"] + t["optimizer"]) * GIB / 1e9
    assert got[0] == pytest.approx(120, rel=1e-3)
    # the paper prints one decimal: 2Ψ + 2Ψ + 12Ψ/64 = 31.41, 2Ψ + 14Ψ/64 = 16.64, 16Ψ/64 = 1.875
    assert got[1] == pytest.approx(31.4, abs=0.05)
    assert got[2] == pytest.approx(16.6, abs=0.05)
    # stage 3 also holds the 2 layers being gathered (a Llama-2-7B layer's matrices: 202,375,168 × 2 B)
    assert got[3] - 2 * 202_375_168 * 2 / 1e9 == pytest.approx(1.875, rel=1e-3)


def test_offload_to_cpu_and_nvme(cat):
    s = spec(cat, "llama-2-7b")
    psi = s.params_total
    bf = fmt(cat, "bf16")
    e = estimate(s, bf, Setup(mode="full", gpus=8, zero=3, offload="cpu", engine="transformers"))
    assert e.per_gpu.optimizer == 0
    # CPU RAM of the node: fp32 master + 2 Adam states (12Ψ), fp16 gradients (2Ψ) and weights (2Ψ)
    assert e.cpu_gib == pytest.approx(16 * psi / GIB)
    assert e.per_gpu.weights == pytest.approx(2 * 202_375_168 * 2 / GIB)  # only the gathered layers
    n = estimate(s, bf, Setup(mode="full", gpus=8, zero=3, offload="nvme", engine="transformers"))
    assert n.nvme_gib == pytest.approx(16 * psi / GIB) and n.cpu_gib == 0
    # ZeRO-1 + CPU offload moves only the optimizer states
    e1 = estimate(s, bf, Setup(mode="full", gpus=8, zero=1, offload="cpu", engine="transformers"))
    assert e1.cpu_gib == pytest.approx(12 * psi / GIB) and e1.per_gpu.gradients == pytest.approx(2 * psi / GIB)


def test_optimizers_bytes_per_parameter(cat):
    s = spec(cat, "llama-2-7b")
    psi = s.params_total
    bf = fmt(cat, "bf16")
    adam8 = estimate(s, bf, Setup(mode="full", optimizer="adamw-8bit", engine="transformers")).per_gpu.optimizer
    # fp32 master 4 B + 2 states × (1 B + one fp32 absmax per 2048 values)
    assert adam8 == pytest.approx(psi * (4 + 2 * (1 + 4 / 2048)) / GIB)
    sgd = estimate(s, bf, Setup(mode="full", optimizer="sgd", engine="transformers")).per_gpu.optimizer
    assert sgd == pytest.approx(psi * (4 + 4) / GIB)  # master + momentum
    paged = estimate(s, bf, Setup(mode="full", optimizer="paged-adamw-8bit", engine="transformers"))
    assert paged.per_gpu.optimizer == 0 and paged.cpu_gib == pytest.approx(adam8)


def test_training_activations_by_hand(cat):
    s = spec(cat, "llama-2-7b")
    bf = fmt(cat, "bf16")
    # per token per layer (transformers: LlamaRMSNorm keeps fp32 copies of both norm inputs, 8h): 8h + attention
    # Q, K, V, output 8·q (multi-head: no KV expansion to add) + gate, up, activation 6·I + Linear inputs 4h + 2·I
    # = 32768 + 32768 + 66048 + 16384 + 22016 = 169,984 B; checkpointing keeps 2h = 8192 B per layer (32 layers)
    # plus one full layer; the loss 12 B per logit (fp32 log-softmax and two fp32 gradients), 32000 logits a token
    a = estimate(s, bf, Setup(mode="full", context=2048, engine="transformers")).per_gpu.activations
    assert a == pytest.approx(2048 * (32 * 8192 + 169_984 + 32000 * 12) / GIB)
    # without checkpointing every layer's set is kept
    b = estimate(s, bf, Setup(mode="full", context=2048, engine="transformers", grad_checkpointing=False))
    assert b.per_gpu.activations == pytest.approx(2048 * (32 * 169_984 + 32000 * 12) / GIB)
    # eager attention keeps the softmax output: + 2 × 32 heads × 2048 B per token in the recomputed layer
    c = estimate(s, bf, Setup(mode="full", context=2048, engine="transformers", flash_attention=False))
    assert c.per_gpu.activations - a == pytest.approx(2048 * 2 * 32 * 2048 / GIB)


def test_lora_and_qlora_breakdowns(cat):
    s = spec(cat, "llama-2-7b")
    e = estimate(s, fmt(cat, "bf16"), Setup(mode="lora", lora_rank=8, lora_targets="qv", engine="transformers"))
    assert e.trainable_params == 4_194_304
    # frozen base 2 B/param (the tensor sum 6,738,415,616) + adapters 2 B; gradients 2 B; Adam 12 B
    assert e.per_gpu.weights == pytest.approx((6_738_415_616 + 4_194_304) * 2 / GIB)
    assert e.per_gpu.gradients == pytest.approx(4_194_304 * 2 / GIB)
    assert e.per_gpu.optimizer == pytest.approx(4_194_304 * 12 / GIB)
    q = estimate(s, fmt(cat, "bnb-nf4-dq"), Setup(mode="qlora", lora_rank=8, lora_targets="qv", engine="transformers"))
    assert q.per_gpu.optimizer == 0  # QLoRA's paged AdamW: in CPU RAM when the GPU is short
    assert q.per_gpu.weights < e.per_gpu.weights / 3


def test_bad_setups_are_one_line_errors(cat):
    s = spec(cat, "llama-3-8b")
    with pytest.raises(GpucostError, match="ZeRO stage 1, 2 or 3"):
        estimate(s, fmt(cat, "bf16"), Setup(mode="full", offload="cpu"))
    with pytest.raises(GpucostError, match="qlora"):
        estimate(s, fmt(cat, "q4_k_m"), Setup(mode="full"))
    with pytest.raises(GpucostError, match="QLoRA needs"):
        estimate(s, fmt(cat, "bf16"), Setup(mode="qlora"))
    with pytest.raises(GpucostError, match="no q8_0 KV cache"):
        estimate(s, fmt(cat, "bf16"), Setup(engine="vllm", kv_dtype="q8_0"))
    with pytest.raises(GpucostError, match="divide evenly"):
        estimate(s, fmt(cat, "bf16"), Setup(engine="vllm", gpus=3))
    with pytest.raises(UnknownNameError, match="closest: vllm"):
        estimate(s, fmt(cat, "bf16"), Setup(engine="vlm"))
    with pytest.raises(GpucostError, match="context"):
        estimate(s, fmt(cat, "bf16"), Setup(context=0))
    with pytest.raises(GpucostError, match="language models"):
        estimate(spec(cat, "flux.1-dev"), fmt(cat, "bf16"), Setup(mode="lora"))


# -- cards and inverse questions --------------------------------------------------------------------

def test_card_fits_70b_awq_on_vllm(cat):
    s = spec(cat, "llama-3.1-70b")
    awq = fmt(cat, "awq-4bit-g128")
    fits = {f.gpu: f for f in card_fits(s, awq, Setup(context=4096, engine="vllm"), cat.gpus)}
    one = estimate(s, awq, Setup(context=4096, engine="vllm")).per_gpu.total
    # about 39 GiB: more than 0.9 × 24 GiB of an RTX 4090, less than 0.9 × 80 GiB of an A100
    assert 0.9 * 24 < one < 0.9 * 80
    assert fits["a100-80gb-sxm"].min_gpus == 1 and fits["a100-80gb-sxm"].fits_on_one
    assert fits["rtx-4090"].min_gpus == 2 and not fits["rtx-4090"].fits_on_one
    assert "needs" in fits["rtx-4090"].reason


def test_cheapest_card_is_count_times_price(cat):
    s = spec(cat, "llama-3.1-8b")
    q4 = fmt(cat, "q4_k_m")
    fits = card_fits(s, q4, Setup(context=8192, engine="llama.cpp"), cat.gpus)
    table = card_table(cat, "USD").set_index("id")
    best = {c.basis: c for c in cheapest_cards(fits, table.reset_index(), "USD")}
    for basis, col in (("new", "price_new"), ("cloud", "cloud_hourly")):
        c = best[basis]
        assert c.cost == pytest.approx(c.count * table.at[c.gpu, col])
        cands = [f.min_gpus * table.at[f.gpu, col] for f in fits
                 if f.min_gpus and table.at[f.gpu, col] == table.at[f.gpu, col]]
        assert c.cost == pytest.approx(min(cands))


def test_longest_context_and_largest_batch_are_the_boundary(cat):
    s = spec(cat, "llama-3.1-8b")
    q4 = fmt(cat, "bf16")  # 15 GiB of weights leave room for about 60k tokens of 128 KiB each
    base = Setup(context=4096, engine="llama.cpp")
    vram = 24.0
    c = max_context(s, q4, base, vram)
    assert c is not None and c < s.max_context
    assert _per_gpu_totals(s, q4, replace(base, context=c), (1,))[0] <= vram * GIB
    assert _per_gpu_totals(s, q4, replace(base, context=c + 1), (1,))[0] > vram * GIB
    b = max_batch(s, q4, base, vram)
    assert _per_gpu_totals(s, q4, replace(base, batch=b), (1,))[0] <= vram * GIB
    assert _per_gpu_totals(s, q4, replace(base, batch=b + 1), (1,))[0] > vram * GIB
    assert max_context(spec(cat, "llama-3.1-405b"), fmt(cat, "bf16"), base, vram) is None


def test_fit_matrix_agrees_with_the_scalar_answer(cat):
    for setup in (Setup(context=8192, engine="vllm"), Setup(context=4096, engine="llama.cpp", batch=4),
                  Setup(mode="qlora", context=2048), Setup(mode="full", context=2048, zero=3)):
        m = fit_matrix(cat, setup)
        for mid in ("llama-3.1-8b", "mixtral-8x7b", "qwen2.5-72b", "gemma-2-9b"):
            for fid in ("bf16", "awq-4bit-g128", "q4_k_m", "bnb-nf4-dq"):
                i, j = m.models.index(mid), m.formats.index(fid)
                try:
                    fits = card_fits(spec(cat, mid), fmt(cat, fid), setup, cat.gpus)
                except GpucostError:
                    assert (m.min_gpus[i, j] == -1).all(), (mid, fid, setup.mode)
                    continue
                want = np.array([f.min_gpus or 0 for f in fits])
                assert (m.min_gpus[i, j] == want).all(), (mid, fid, setup)


def test_cardfit_record_contract():
    f = CardFit("rtx-4090", "GeForce RTX 4090", 24.0, None, False, "why", 24.0, None)
    assert set(f.to_dict()) >= {"gpu", "vram_gib", "min_gpus", "fits_on_one", "reason"}
    assert f.to_dict()["min_gpus"] is None


# --------------------------------------------------------------------------------------------------
# ZeRO by hand (the planner and the rules-of-thumb page use this one training-memory model)
# --------------------------------------------------------------------------------------------------

def _toy(params: float, layers: int = 1000):
    """A model whose parameter count is ``params`` and whose activations are negligible (sequence 1, no
    vocabulary); 1000 small layers so that ZeRO-3's two gathered layers are a small, stated term."""
    from gpucost.models import ModelSpec

    return ModelSpec(id="toy", name="toy", params_total=params, params_active=params, num_layers=layers,
                     hidden_size=256, num_attention_heads=4, num_kv_heads=4, head_dim=64, intermediate_size=1024,
                     vocab_size=1)


# one toy layer: q, k, v, o 4 × 256² + gated MLP 3 × 256 × 1024 = 1,048,576 parameters; ZeRO-3 gathers two
TOY_LAYER = 4 * 256 * 256 + 3 * 256 * 1024
TOY_GATHERED = 2 * TOY_LAYER * 2  # bytes, 16-bit


def test_zero_model_states_are_the_zero_papers_figure_1(cat):
    # ZeRO paper (arXiv 1910.02054) Figure 1: Ψ = 7.5B, N_d = 64, K = 12 (mixed-precision Adam) per GPU:
    # baseline (2+2+12)Ψ = 120 GB; P_os 2Ψ+2Ψ+12Ψ/64 = 31.4 GB; P_os+g 2Ψ+14Ψ/64 = 16.6 GB;
    # P_os+g+p 16Ψ/64 = 1.9 GB — plus, in stage 3, the two layers ZeRO-3 gathers at a time
    psi, bf = 7.5e9, fmt(cat, "bf16")
    got = []
    for stage in (0, 1, 2, 3):
        e = estimate(_toy(psi), bf, Setup(mode="full", context=1, gpus=64, zero=stage, engine="transformers"))
        t = dict(e.terms)  # the model states (without stage 0's AdamW step temporaries, a term of their own)
        got.append((t["weights"] + t["gradients"] + t["optimizer"]) * GIB / 1e9)
    assert got == pytest.approx([120.0, 31.40625, 16.640625, 1.875 + TOY_GATHERED / 1e9])


@pytest.mark.parametrize("params,vram", [(10e9, 80), (70e9, 80), (70e9, 40), (5e9, 80)])
def test_zero3_gpu_counts_by_hand(cat, params, vram):
    from gpucost.memory import min_gpus

    bf = fmt(cat, "bf16")
    s = Setup(mode="full", context=1, zero=3, engine="transformers")
    n, per = min_gpus(_toy(params), bf, s, vram)
    # per GPU: 16Ψ/N of model states (2Ψ/N weights, 2Ψ/N gradients, 12Ψ/N optimizer states), the two gathered
    # layers and the activations of one token (stored for backward: 1000 layers × 2 × 256 values + one layer's set)
    # — the allocated peak — and the CUDA context (0.25 GiB); the allocator's cache above them is data/allocator.csv's
    # ratio of what a step frees and allocates again (the gradients and the activations; the weights and optimizer
    # states are kept), in the per-GPU figure, and it may pass the card (PyTorch gives cached blocks back when the
    # card is full)
    allocator = next(csv.DictReader(open(bundled_data_dir() / "allocator.csv", encoding="utf-8")))
    ratio, floor = float(allocator["churn_reserved_over_allocated"]), float(allocator["p10"])
    act = estimate(_toy(params), bf, replace(s, gpus=1)).per_gpu.activations * GIB
    # the card holds the allocated peak, the least reserve runs keep (the pairs' p10) of the churn, and the context:
    # (16 + 2 (floor − 1)) Ψ / N + gathered + floor × activations ≤ the card less the context
    want = max(1, int(np.ceil((16 + 2 * (floor - 1)) * params
                              / ((vram - 0.25) * GIB - TOY_GATHERED - floor * act) - 1e-12)))
    allocated = (16 * params / want + TOY_GATHERED + act) / GIB
    churn = (2 * params / want + act) / GIB
    assert n == want and allocated + (floor - 1) * churn + 0.25 <= vram
    assert per == pytest.approx(allocated + (ratio - 1) * churn + 0.25, rel=1e-3)  # (one card gathers no layer)
    if n > 1:
        assert estimate(_toy(params), bf, replace(s, gpus=n - 1)).need_gib > vram


def test_zero3_cpu_offload_leaves_a_layer_window_on_the_gpu(cat):
    # Ψ = 10B on 2 GPUs, ZeRO-3 + CPU offload: the optimizer states 12Ψ, gradients 2Ψ and parameters 2Ψ
    # of the whole job go to CPU RAM (160e9 bytes); each GPU keeps the two gathered layers and the
    # reduce bucket of gradients (DeepSpeed reduce_bucket_size 5e8 values × 2 bytes)
    e = estimate(_toy(10e9), fmt(cat, "bf16"), Setup(mode="full", context=1, gpus=2, zero=3, offload="cpu",
                                                     engine="transformers"))
    assert e.cpu_gib * GIB == pytest.approx(160e9)
    assert e.per_gpu.weights * GIB == pytest.approx(TOY_GATHERED)
    assert e.per_gpu.gradients * GIB == pytest.approx(5e8 * 2)
    assert e.per_gpu.optimizer == 0


def test_experts_kept_in_cpu_ram_by_hand(cat):
    """llama.cpp --n-cpu-moe N: the expert tensors of the first N layers stay in host RAM. Which layers
    are MoE layers, counted by hand: GPT-OSS 120B all 36; DeepSeek-V3 layers 3-60 (the first three are dense:
    N = 10 keeps 7 of 58); Llama 4 Maverick every second layer (1, 3, 5…: N = 10 keeps 5 of 24)."""
    from gpucost.quant import weight_bytes

    for model, quant, n, share in (("gpt-oss-120b", "mxfp4", 36, 1.0), ("gpt-oss-120b", "mxfp4", 9, 9 / 36),
                                   ("deepseek-v3", "q4_k_m", 10, 7 / 58), ("llama-4-maverick", "q4_k_m", 10, 5 / 24)):
        spec, fmt = catalog_spec(model, cat), get_format(quant, cat)
        on_gpu = estimate(spec, fmt, Setup(context=4096, engine="llama.cpp"))
        moved = estimate(spec, fmt, Setup(context=4096, engine="llama.cpp", cpu_moe=n))
        experts = weight_bytes(spec, fmt).expert_blocks / 2**30
        assert on_gpu.per_gpu.weights - moved.per_gpu.weights == pytest.approx(experts * share, rel=1e-9), model
        assert moved.cpu_gib - on_gpu.cpu_gib == pytest.approx(experts * share, rel=1e-9), model
        assert moved.per_gpu.kv_cache == on_gpu.per_gpu.kv_cache
    # all experts of GPT-OSS 120B in RAM: the rest fits a 24 GB card
    spec, fmt = catalog_spec("gpt-oss-120b", cat), get_format("mxfp4", cat)
    assert estimate(spec, fmt, Setup(context=8192, engine="llama.cpp", cpu_moe=36)).per_gpu.total < 24
    for bad in (dict(engine="vllm", cpu_moe=4), dict(engine="llama.cpp", cpu_moe=4, gpu_layers=20)):
        with pytest.raises(GpucostError, match="--cpu-moe"):
            estimate(spec, fmt, Setup(context=4096, **bad))
    with pytest.raises(GpucostError, match="no experts"):
        estimate(catalog_spec("llama-3.1-8b", cat), fmt, Setup(context=4096, engine="llama.cpp", cpu_moe=4))


def test_images_join_the_prompt_and_the_kv_cache_by_hand(cat):
    """Qwen2.5-VL-7B: one token per 28 × 28 pixels, so a 448 × 448 image is 16 × 16 = 256 tokens (its row's
    notes); its KV cache is 2 (K, V) × 28 layers × 4 KV heads × 128 × 2 bytes = 57,344 bytes per token."""
    spec, fmt = catalog_spec("qwen2.5-vl-7b", cat), get_format("bf16", cat)
    assert spec.image_tokens == 256
    text = estimate(spec, fmt, Setup(context=4096, engine="vllm"))
    four = estimate(spec, fmt, Setup(context=4096, engine="vllm", images=4))
    assert text.per_gpu.kv_cache == pytest.approx(4096 * 57_344 / 2**30)
    assert four.per_gpu.kv_cache == pytest.approx((4096 + 4 * 256) * 57_344 / 2**30)
    assert four.per_gpu.weights == text.per_gpu.weights
    # transformers runs the whole prompt at once: the image tokens lengthen its largest forward pass (vLLM's
    # chunked prefill caps it, so there only the KV cache grows)
    hf = [estimate(spec, fmt, Setup(context=4096, engine="transformers", images=n)) for n in (0, 4)]
    assert hf[1].per_gpu.activations > hf[0].per_gpu.activations
    assert four.per_gpu.activations == text.per_gpu.activations
    assert any("4 image(s) of 256 tokens" in n for n in four.notes)
    with pytest.raises(GpucostError, match="takes no images"):
        estimate(catalog_spec("llama-3.1-8b", cat), fmt, Setup(context=4096, images=1))


#: Llama 3.2 11B Vision's config.json, the fields the memory model reads (meta-llama/Llama-3.2-11B-Vision)
MLLAMA_11B = {"model_type": "mllama",
              "text_config": {"model_type": "mllama", "hidden_size": 4096, "num_hidden_layers": 40,
                              "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
                              "vocab_size": 128256, "max_position_embeddings": 131072,
                              "cross_attention_layers": [3, 8, 13, 18, 23, 28, 33, 38]},
              "vision_config": {"image_size": 560, "patch_size": 14, "max_num_tiles": 4}}


def test_cross_attention_images_fill_only_their_layers_by_hand(cat):
    """Llama 3.2 Vision: 8 of its 40 layers attend to the image (cross-attention), the other 32 to the text.
    An image is up to 4 tiles of (560 / 14)² + 1 = 1,601 patches = 6,404 tokens, kept in the 8
    cross-attention layers only: 2 × 8 layers × 8 KV heads × 128 × 2 bytes × 6,404 = 209,846,272 bytes; a text
    token 2 × 32 × 8 × 128 × 2 = 131,072 bytes (not 40 layers' 163,840). The image is no prompt token of the
    text layers: the activations do not grow."""
    from gpucost.models import spec_from_hf_config

    spec, fmt = spec_from_hf_config(MLLAMA_11B), get_format("bf16", cat)
    assert (spec.cross_attention_layers, spec.image_tokens) == (8, 6404)
    text = estimate(spec, fmt, Setup(context=4096, engine="transformers"))
    two = estimate(spec, fmt, Setup(context=4096, engine="transformers", images=2))
    assert text.per_gpu.kv_cache * 2**30 == pytest.approx(4096 * 131_072)
    assert (two.per_gpu.kv_cache - text.per_gpu.kv_cache) * 2**30 == pytest.approx(2 * 209_846_272)
    assert two.per_gpu.activations == text.per_gpu.activations


def test_transformers_before_4_36_holds_two_kv_caches(cat):
    """transformers < 4.36 (before 2023-12-11) rebuilt the tuple KV cache each step while generate() still held the
    previous one: a decode step's peak holds two caches. Llama 2 7B, 64 sequences of 768 tokens: one cache is
    2 × 32 × 32 × 128 × 768 × 64 × 2 B = 24 GiB."""
    l2, fp16 = spec(cat, "llama-2-7b"), fmt(cat, "fp16")
    s = Setup(context=768, prompt=256, batch=64, engine="transformers")
    today = estimate(l2, fp16, s)
    old = estimate(l2, fp16, replace(s, framework_as_of="2023-11-29"))
    after = estimate(l2, fp16, replace(s, framework_as_of="2023-12-11"))
    assert today.per_gpu.kv_cache == pytest.approx(24.0)
    assert after.per_gpu.kv_cache == pytest.approx(24.0)
    assert old.per_gpu.kv_cache == pytest.approx(48.0)
    assert "mn_tuple_cache" in [n.key for n in old.notes] and "mn_tuple_cache" not in [n.key for n in today.notes]
    # optimum-benchmark's run of 2023-11-29 (transformers 4.35.2, A100 80GB) measured 65,112 MB allocated at this
    # point; one cache would leave the estimate 37 % short, two bring it within 5 %
    measured = 65112e6 / GIB
    assert abs(today.engine_gib / measured - 1) > 0.3
    assert abs(old.engine_gib / measured - 1) < 0.05
    # other engines have no such date
    vllm = replace(s, engine="vllm", framework_as_of="2023-11-29")
    assert estimate(l2, fp16, vllm).per_gpu.kv_cache == pytest.approx(24.0)


def test_llamacpp_gpt_oss_files_keep_attention_and_head_in_q8_0(cat):
    """llama-bench prints ggml-org's gpt-oss GGUFs as 'gpt-oss 20B MXFP4 MoE 11.27 GiB' and 'gpt-oss 120B MXFP4 MoE
    59.02 GiB' (corpus rows of llamacpp-benches-dgx-spark and llama.cpp discussion #15396): the MXFP4_MOE file type
    stores the experts in MXFP4 and every other tensor in Q8_0. The safetensors checkpoint (format mxfp4) keeps those
    in BF16: 13.76 GB for gpt-oss-20b on the Hub (corpus row fs028). A decode step reads about 1.1 GB less."""
    from gpucost.records import gpu
    from gpucost.speed import speed

    moe, st = fmt(cat, "mxfp4_moe"), fmt(cat, "mxfp4")
    small, big = spec(cat, "gpt-oss-20b"), spec(cat, "gpt-oss-120b")
    assert weights_file_gib(small, moe) == pytest.approx(11.27, rel=0.005)
    assert weights_file_gib(big, moe) == pytest.approx(59.02, rel=0.005)
    assert weights_file_gib(small, st) * GIB / 1e9 == pytest.approx(13.76, rel=0.01)
    g = gpu(cat, "rtx-4090")
    a = speed(small, moe, g, batch=1, context=128, engine="llama.cpp", catalog=cat).bytes_per_step
    b = speed(small, st, g, batch=1, context=128, engine="llama.cpp", catalog=cat).bytes_per_step
    assert (b - a) / 1e9 == pytest.approx(1.1, abs=0.1)
    # asked for the safetensors format in llama.cpp, the answer says which file llama.cpp users mostly have
    plain = estimate(small, st, Setup(engine="llama.cpp", context=4096))
    gguf = estimate(small, moe, Setup(engine="llama.cpp", context=4096))
    assert "choose mxfp4_moe" in " ".join(plain.notes) and "mxfp4_moe" not in " ".join(gguf.notes)
    # on the card: the file's difference less the token-embedding table's, which llama.cpp keeps in host memory
    from gpucost.quant import weight_bytes
    embd = (weight_bytes(small, st).embed - weight_bytes(small, moe).embed) / GIB
    assert plain.per_gpu.weights - gguf.per_gpu.weights == pytest.approx(
        weights_file_gib(small, st) - weights_file_gib(small, moe) - embd, rel=0.02)
