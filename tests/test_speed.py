"""Speed and cost, computed by hand here from the roofline formulas and the factors in
data/engine_efficiency.csv (read from the file, not from the code under test)."""

from __future__ import annotations

import csv
import math

import pytest

from gpucost.catalog import Catalog
from gpucost.errors import GpucostError
from gpucost.models import catalog_spec
from gpucost.quant import active_weight_fraction, get_format
from gpucost.records import gpu
from gpucost.speed import decode_speed_cards, efficiency_table, speed, training_time
from gpucost.validation import calibrate

from .conftest import DATA


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return Catalog()


@pytest.fixture(scope="module")
def factors() -> dict[str, dict]:
    with open(DATA / "engine_efficiency.csv", encoding="utf-8") as fh:
        return {r["engine"]: r for r in csv.DictReader(fh)}


def test_llama_cpp_decode_by_hand(cat, factors):
    f = factors["llama.cpp"]
    eta, c_ms = float(f["bw_efficiency"]), float(f["layer_overhead_ms"])
    s = catalog_spec("llama-2-7b", cat)
    sp = speed(s, get_format("fp16", cat), gpu(cat, "rtx-4090"), context=512, engine="llama.cpp", catalog=cat)
    # read per token: the 32 layers' matrices 32 × 202,375,168 values, the output head 32000 × 4096 and the
    # norms 65 × 4096, at 2 bytes (the embedding table is looked up, not read) + the KV cache
    # 2 × 32 × 32 × 128 × 512 × 2 B = 268,435,456
    read = (32 * 202_375_168 + 32000 * 4096 + 65 * 4096) * 2 + 268_435_456
    t = read / (1008e9 * eta) + 32 * c_ms / 1e3  # RTX 4090: 1008 GB/s
    assert sp.bytes_per_step == pytest.approx(read)
    assert sp.decode_tokens_per_s == pytest.approx(1 / t, rel=1e-6)
    assert sp.bound == "memory-bandwidth"
    assert sp.bandwidth_roofline_tokens_per_s == pytest.approx(1008e9 / read)


def test_transformers_generate_is_bound_by_kernel_launches(cat, factors):
    f = factors["transformers"]
    eta, c_ms = float(f["bw_efficiency"]), float(f["layer_overhead_ms"])
    s = catalog_spec("qwen2.5-0.5b", cat)
    sp = speed(s, get_format("bf16", cat), gpu(cat, "a100-80gb-sxm"), context=1024, engine="transformers", catalog=cat)
    # 24 layers × the fixed time per layer, far above the ~1 GB / 2039 GB/s the weights take to read
    assert 24 * c_ms / 1e3 > 5 * sp.bytes_per_step / 2039e9
    assert sp.bound == "host-overhead"
    assert sp.decode_tokens_per_s == pytest.approx(1 / (sp.bytes_per_step / (2039e9 * eta) + 24 * c_ms / 1e3))


def test_transformers_copies_the_kv_cache_every_decode_step(cat):
    """transformers appends to its cache with torch.cat: each step reads the cache, writes it one token longer, and
    attention reads it — three passes where vLLM's paged cache is read once. Llama 2 7B fp16, 64 sequences of 512
    tokens: the cache is 2 × 32 layers × 4096 × 2 B × 512 × 64 = 16 GiB."""
    s, fp16, a100 = catalog_spec("llama-2-7b", cat), get_format("fp16", cat), gpu(cat, "a100-80gb-sxm")
    kv = 2 * 32 * 4096 * 2 * 512 * 64
    assert kv == 16 * 2**30
    hf = speed(s, fp16, a100, batch=64, context=512, engine="transformers", catalog=cat)
    vllm = speed(s, fp16, a100, batch=64, context=512, engine="vllm", catalog=cat)
    assert hf.bytes_per_step - vllm.bytes_per_step == pytest.approx(2 * kv, rel=1e-9)
    one = speed(s, fp16, a100, batch=1, context=512, engine="transformers", catalog=cat)
    one_vllm = speed(s, fp16, a100, batch=1, context=512, engine="vllm", catalog=cat)
    assert one.bytes_per_step - one_vllm.bytes_per_step == pytest.approx(2 * kv / 64, rel=1e-9)


def test_a_batch_of_prompts_is_one_forward_pass(cat):
    """64 prompts of 256 tokens prefilled together (transformers' forward over [64, 256]) read the weights and pay
    the per-layer times once, not 64 times; their products are 64 prompts' (each attending over its own tokens)."""
    s, fp16, a100 = catalog_spec("llama-2-7b", cat), get_format("fp16", cat), gpu(cat, "a100-80gb-sxm")
    one = speed(s, fp16, a100, context=256, engine="transformers", catalog=cat)
    batch = speed(s, fp16, a100, context=256, engine="transformers", catalog=cat, prefill_batch=64)
    eff = one.efficiency
    t1, t64 = 256 / one.prefill_tokens_per_s, 64 * 256 / batch.prefill_tokens_per_s
    # the weights as in test_llama_cpp_decode_by_hand, read at the A100's 2,039 GB/s; 32 layers' fixed time
    weights = (32 * 202_375_168 + 32000 * 4096 + 65 * 4096) * 2
    once = weights / (2039e9 * eff["bw_efficiency"]) + 32 * eff["layer_overhead_ms"] / 1e3
    assert 64 * t1 - t64 == pytest.approx(63 * once, rel=1e-6)


def test_transformers_runs_moe_experts_as_a_loop(cat, factors):
    """transformers 4.x runs a mixture-of-experts block as a Python loop over experts (gpucost.kernel_paths):
    over all of them until 4.52 (Mixtral), over those hit after; transformers 5 runs them batched."""
    from gpucost.kernel_paths import Software

    c_ms = float(factors["transformers"]["layer_overhead_ms"])
    s = catalog_spec("mixtral-8x7b", cat)
    f, g = get_format("bf16", cat), gpu(cat, "h100-sxm")
    every = speed(s, f, g, context=512, engine="transformers", catalog=cat, software=Software(transformers=(4, 46, 0)))
    hit = speed(s, f, g, context=512, engine="transformers", catalog=cat, software=Software(transformers=(4, 52, 0)))
    fused = speed(s, f, g, context=512, engine="transformers", catalog=cat)
    vl = speed(s, f, g, context=512, engine="vllm", catalog=cat)
    # 32 layers of 48 operators, the dense MLP's 5 replaced by the router (8) and 8 iterations of 10 operators:
    # 32 × (48 − 5 + 8 + 80) / 48 = 87.33 layers' time; over the 2 experts hit: router 11 + 2 × 11
    assert every.step_ms >= 32 * (48 - 5 + 8 + 8 * 10) / 48 * c_ms
    assert hit.step_ms == pytest.approx(every.step_ms - 32 * ((8 + 80) - (11 + 22)) / 48 * c_ms)
    # transformers 5: router + batched experts, 16 operators in place of the MLP's 5
    assert fused.step_ms == pytest.approx(every.step_ms - 32 * ((8 + 80) - 16) / 48 * c_ms)
    assert vl.decode_tokens_per_s > fused.decode_tokens_per_s > hit.decode_tokens_per_s > every.decode_tokens_per_s


def test_tensor_parallel_adds_all_reduces(cat, factors):
    v = factors["vllm"]
    eta, c_ms, lat = float(v["bw_efficiency"]), float(v["layer_overhead_ms"]), float(v["allreduce_latency_ms"])
    s = catalog_spec("qwen2.5-72b", cat)
    one = speed(s, get_format("bf16", cat), gpu(cat, "a100-80gb-sxm"), context=1024, engine="vllm", catalog=cat)
    sp = speed(s, get_format("bf16", cat), gpu(cat, "a100-80gb-sxm"), gpus=4, context=1024, engine="vllm", catalog=cat)
    # per GPU: a quarter of the weights and (8 KV heads / 4) of the cache; 2 all-reduces per layer over
    # NVLink (600 GB/s both ways → 300 one way) of 8192 values × 2 B, ring factor 2 × 3/4
    comm = 2 * 80 * (lat / 1e3 + 2 * 3 / 4 * 8192 * 2 / 300e9)
    t = one.bytes_per_step / 4 / (2039e9 * eta) + 80 * c_ms / 1e3 + comm
    assert sp.link == "nvlink"
    assert sp.decode_tokens_per_s == pytest.approx(1 / t, rel=1e-6)
    assert sp.decode_tokens_per_s > 2 * one.decode_tokens_per_s


def test_moe_reads_only_the_experts_in_use():
    from gpucost.models import resolve_model

    mix = resolve_model("mixtral-8x7b")
    # 2 of 8 experts per token: one token reads 1/4 of the expert weights; 4 tokens 1 − (3/4)^4
    assert active_weight_fraction(mix, 1) == pytest.approx(0.25)
    assert active_weight_fraction(mix, 4) == pytest.approx(1 - 0.75**4)


def test_training_time_by_hand(cat):
    s = catalog_spec("llama-3.1-8b", cat)
    h100 = gpu(cat, "h100-sxm")
    te = training_time(s, h100, mode="full", tokens=1e9, gpus=1, seq=2048, mfu=0.4, catalog=cat)
    # FLOP per token: 6 × (8.03e9 − 525,336,576 embedding) + 12 × 32 layers × 4096 × 2048 (PaLM appendix B)
    fpt = 6 * (8.03e9 - 525_336_576) + 12 * 32 * 4096 * 2048
    assert te.flops_per_token == pytest.approx(fpt)
    tps = 989.4e12 * 0.4 / fpt  # dense BF16 peak of the H100 SXM
    assert te.tokens_per_s == pytest.approx(tps)
    assert te.hours == pytest.approx(1e9 / tps / 3600)
    # 8 cards over PCIe gen 4 (31.5 GB/s): the 16-bit gradient all-reduce 2 × 7/8 × 8.03e9 × 2 B takes
    # 0.892 s; what the backward pass (2/3 of the step) cannot hide is added
    g = gpu(cat, "rtx-4090")
    te8 = training_time(s, g, mode="full", tokens=1e9, gpus=8, seq=512, micro_batch=1, mfu=0.4, catalog=cat)
    fpt512 = 6 * (8.03e9 - 525_336_576) + 12 * 32 * 4096 * 512
    t_c = 8 * 512 * fpt512 / (8 * 165.2e12 * 0.4)
    comm = 2 * 7 / 8 * 8.03e9 * 2 / 31.5e9
    t = t_c + max(0.0, comm - 2 / 3 * t_c)
    assert te8.link == "pcie4"
    assert te8.scaling_efficiency == pytest.approx(t_c / t)
    assert te8.tokens_per_s == pytest.approx(8 * 512 / t)
    assert te8.cost is None


def test_engines_without_calibration_say_where_their_factors_come_from(cat):
    t = efficiency_table(cat)
    assert "from vllm" in t["tensorrt-llm"].borrowed_from
    sp = speed(catalog_spec("llama-3.1-8b", cat), get_format("fp8", cat), gpu(cat, "h100-sxm"),
               engine="tensorrt-llm", catalog=cat)
    assert any("tensorrt-llm" in n for n in sp.notes)


def test_speed_rejects_what_it_cannot_answer(cat):
    with pytest.raises(GpucostError, match="diffusion"):
        speed(catalog_spec("sdxl", cat), get_format("fp16", cat), gpu(cat, "rtx-4090"), catalog=cat)
    with pytest.raises(GpucostError, match="divide evenly"):
        speed(catalog_spec("llama-3.1-8b", cat), get_format("bf16", cat), gpu(cat, "rtx-4090"), gpus=3,
              engine="vllm", catalog=cat)


def test_stored_factors_are_the_fit_on_their_calibration_rows(cat, factors):
    """data/engine_efficiency.csv holds what gpucost.validation.calibrate() fits on the rows it names."""
    fitted = calibrate(cat)
    for engine, vals in fitted.items():
        for col, v in vals.items():
            assert float(factors[engine][col]) == pytest.approx(v, abs=1e-4), (engine, col)


def test_amd_cards_use_the_factors_fitted_on_their_backend(cat):
    """llama.cpp on an AMD card runs ROCm: since the corpus holds ROCm measurements (llm-tracker's Radeon and
    Instinct runs) it uses the factors fitted on those rows, not the CUDA ones, and does not claim to have none; the
    page's vectorized speeds use the same factors."""
    from gpucost.speed import engine_efficiency

    s, f = catalog_spec("llama-3.1-8b", cat), get_format("q4_k_m", cat)
    rocm = engine_efficiency("llama.cpp", cat, f, "rocm")
    assert rocm.engine.startswith("llama.cpp/rocm") and rocm.calibration_rows
    bench = cat.table("benchmarks").set_index("id")
    assert set(bench.loc[list(rocm.calibration_rows), "backend"]) == {"rocm"}
    assert rocm.compute_efficiency != engine_efficiency("llama.cpp", cat, f, "cuda").compute_efficiency
    amd = speed(s, f, gpu(cat, "rx-7900-xtx"), engine="llama.cpp", catalog=cat)
    assert not any("no llama.cpp measurements on rocm" in n for n in amd.notes)
    nv = speed(s, f, gpu(cat, "rtx-4090"), engine="llama.cpp", catalog=cat)
    assert not any("measurements on" in n for n in nv.notes)
    cards = decode_speed_cards(s, f, [gpu(cat, "rx-7900-xtx"), gpu(cat, "rtx-4090")], [1, 1], engine="llama.cpp",
                               catalog=cat)
    assert cards == pytest.approx([amd.decode_tokens_per_s, nv.decode_tokens_per_s])


def test_vllm_on_an_amd_card_takes_the_time_factor_fitted_on_rocm_serving_runs(cat, factors):
    """The corpus has no single-GPU vLLM or SGLang rows on ROCm, but serving runs on MI300X and W7900: vLLM's
    CUDA-fitted factors with every step time × the stored ROCm factor — decode, prefill, the vectorized cards
    of page 02 and a serving step alike, on the float and the FP8 kernel paths — and the answer says so."""
    from gpucost.i18n import localize
    from gpucost.serving_step import step_seconds
    from gpucost.speed import engine_efficiency

    k = float(factors["vllm/rocm"]["time_factor"])
    assert k > 1.5   # the ROCm documents ran 2-3x slower than the CUDA-fitted model
    mi300 = gpu(cat, "mi300x")
    s = catalog_spec("llama-3.1-8b", cat)
    for fmt in (get_format("bf16", cat), get_format("fp8-e4m3", cat)):
        cuda = engine_efficiency("vllm", cat, fmt, "cuda")
        amd = speed(s, fmt, mi300, engine="vllm", context=2048, catalog=cat)
        plain = speed(s, fmt, mi300, engine="vllm", context=2048, catalog=cat, eff=cuda)
        assert amd.decode_tokens_per_s == pytest.approx(plain.decode_tokens_per_s / k, rel=1e-9)
        assert amd.prefill_tokens_per_s == pytest.approx(plain.prefill_tokens_per_s / k, rel=1e-9)
        assert any(f"× {k:.2f}" in n and "rocm" in n for n in amd.notes), amd.notes
        assert any(f"乘以 {k:.2f}" in localize(n, "zh") for n in amd.notes)   # page 02 in Chinese
        assert not any("no vllm measurements on rocm" in n for n in amd.notes)
        step = step_seconds(s, fmt, mi300, decode=32, context=2048, prefill=256, engine="vllm", catalog=cat)
        assert step == pytest.approx(k * step_seconds(s, fmt, mi300, decode=32, context=2048, prefill=256,
                                                      engine="vllm", catalog=cat, eff=cuda), rel=1e-9)
    cards = decode_speed_cards(s, get_format("bf16", cat), [mi300, gpu(cat, "h100-sxm")], [1, 1], engine="vllm",
                               catalog=cat)
    assert cards[0] == pytest.approx(speed(s, get_format("bf16", cat), mi300, engine="vllm",
                                           catalog=cat).decode_tokens_per_s)
    # NVIDIA cards keep their factors
    assert not any("×" in n for n in speed(s, get_format("bf16", cat), gpu(cat, "h100-sxm"), engine="vllm",
                                           catalog=cat).notes)


def test_experts_in_cpu_ram_cost_their_reads_at_the_hosts_bandwidth(cat):
    # GPT-OSS 120B, --n-cpu-moe 18 (half of its 36 MoE layers): one token uses 4 of 128 experts, so a decode
    # step reads 4/128 of those layers' expert bytes on the CPU; twice the host bandwidth halves that time
    from gpucost.quant import weight_bytes

    spec, fmt, rtx = catalog_spec("gpt-oss-120b", cat), get_format("mxfp4", cat), gpu(cat, "rtx-4090")
    read = weight_bytes(spec, fmt).expert_blocks * 18 / 36 * 4 / 128
    slow = speed(spec, fmt, rtx, engine="llama.cpp", cpu_moe=18, host_bw_gbps=50, catalog=cat)
    fast = speed(spec, fmt, rtx, engine="llama.cpp", cpu_moe=18, host_bw_gbps=100, catalog=cat)
    assert slow.step_ms - fast.step_ms == pytest.approx(read * (1 / 50e9 - 1 / 100e9) * 1e3, rel=1e-9)
    full = speed(spec, fmt, rtx, engine="llama.cpp", catalog=cat)
    assert full.decode_tokens_per_s > fast.decode_tokens_per_s > slow.decode_tokens_per_s
    # a prompt: each 512-token batch copies the 18 layers' experts to the card over PCIe 4.0 (32 GB/s)
    p = speed(spec, fmt, rtx, engine="llama.cpp", cpu_moe=18, context=1024, catalog=cat)
    p0 = speed(spec, fmt, rtx, engine="llama.cpp", context=1024, catalog=cat)
    copies = 2 * weight_bytes(spec, fmt).expert_blocks / 2 / (rtx.link("pcie")[1] * 1e9)
    # (less what the card no longer reads itself: the experts the CPU now reads; a 1024-token prompt is two
    # physical batches of 512, each touching 1 − (124/128)^512 of the host-resident experts, not 4/128 of them
    # as one decode token does)
    assert p0.bytes_per_step - p.bytes_per_step == pytest.approx(read, rel=1e-9)
    read_prompt = 2 * weight_bytes(spec, fmt).expert_blocks * 18 / 36 * (1 - (124 / 128) ** 512)
    assert 1024 / p.prefill_tokens_per_s - 1024 / p0.prefill_tokens_per_s == pytest.approx(
        copies - read_prompt / (rtx.mem_bandwidth_gbps * 1e9 * p.efficiency["bw_efficiency"]), rel=1e-6)
    assert any("--n-cpu-moe 18" in n for n in slow.notes)


def test_llama_cpp_reads_mxfp4_through_its_gguf_kernels_vllm_through_its_own(cat, factors):
    """In llama.cpp MXFP4 is a ggml block type (32 E2M1 values and one scale, decoded by the MMVQ/MMQ kernels of
    Q4_0): a llama.cpp run of gpt-oss takes the GGUF key's factors; vLLM's MXFP4 keeps a key of its own."""
    from gpucost.speed import factor_keys

    mx = get_format("mxfp4", cat)
    assert factor_keys("llama.cpp", mx) == ["llama.cpp/gguf", "llama.cpp"]
    assert factor_keys("llama.cpp", get_format("q4_0", cat)) == ["llama.cpp/gguf", "llama.cpp"]
    assert factor_keys("vllm", mx) == ["vllm/mx", "vllm"]
    assert "llama.cpp/mx" not in factors
    f = factors["llama.cpp/gguf"]
    s = catalog_spec("gpt-oss-20b", cat)
    sp = speed(s, mx, gpu(cat, "rtx-4090"), context=512, engine="llama.cpp", catalog=cat)
    t = sp.bytes_per_step / (1008e9 * float(f["bw_efficiency"])) + 24 * float(f["layer_overhead_ms"]) / 1e3
    assert sp.decode_tokens_per_s == pytest.approx(1 / t, rel=1e-6)


def test_attention_computes_on_the_cache_not_on_the_weights_format(cat):
    """NVFP4 and FP8 quantize the Linear layers' weights and inputs; attention's QKᵀ and AV take the query and the
    KV cache: FP8 where the cache is FP8 (the B200's 4.5 PFLOPS), else 16 bits (2.25 PFLOPS), never FP4. A 2,048-token
    prompt of Llama 3.1 8B in NVFP4 on a B200 (η_c 0.5) attends 2,048 × 4 × 32 layers × 1,024 tokens × 32 heads × 128
    = 1,099,511,627,776 FLOP: 0.4887 ms longer on a 16-bit cache than on an FP8 one."""
    from gpucost.speed import EngineEfficiency, attention_tflops

    nvfp4, fp8, bf16 = get_format("nvfp4", cat), get_format("fp8-e4m3", cat), get_format("bf16", cat)
    b200, h100 = gpu(cat, "b200"), gpu(cat, "h100-sxm")
    assert attention_tflops(b200, nvfp4, "fp8", "vllm") == 4500
    assert attention_tflops(b200, nvfp4, "fp16", "vllm") == 2250
    assert attention_tflops(h100, fp8, "fp16", "vllm") == pytest.approx(989.4)
    assert attention_tflops(h100, fp8, "fp8", "vllm") == pytest.approx(1978.9)
    assert attention_tflops(h100, bf16, "fp8", "vllm") == pytest.approx(989.4)
    eff = EngineEfficiency("hand", 0.8, 0.1, 0.0, 0.5, 0.01, math.nan, (), "", "", "")
    s = catalog_spec("llama-3.1-8b", cat)
    t16, t8 = (2048 / speed(s, nvfp4, b200, context=2048, engine="vllm", eff=eff, kv_dtype=kv).prefill_tokens_per_s
               for kv in ("fp16", "fp8"))
    assert t16 - t8 == pytest.approx(1_099_511_627_776 * (1 / (2250e12 * 0.5) - 1 / (4500e12 * 0.5)), rel=1e-9)


def test_nvfp4_computes_on_fp4_tensor_cores_on_blackwell_only(cat):
    """NVFP4 quantizes the inputs of its Linear layers too (ModelOpt's default config), so on Blackwell its
    matmuls run at the card's dense FP4 rate — the B200's 9 PFLOPS, twice its FP8 and four times its BF16. A Hopper
    card has no FP4 tensor cores: vLLM runs the checkpoint weight-only through Marlin, in 16 bits (989 TFLOPS)."""
    from gpucost.speed import peak_tflops

    nvfp4, fp8 = get_format("nvfp4", cat), get_format("fp8-e4m3", cat)
    b200, h100, rtx5090 = gpu(cat, "b200"), gpu(cat, "h100-sxm"), gpu(cat, "rtx-5090")
    assert peak_tflops(b200, nvfp4, "vllm") == 9000
    assert peak_tflops(b200, fp8, "vllm") == 4500
    assert peak_tflops(h100, nvfp4, "vllm") == pytest.approx(989, rel=0.01)
    # GeForce Blackwell: NVIDIA's 3352 "AI TOPS" are FP4 with sparsity, half of them dense
    assert peak_tflops(rtx5090, nvfp4, "vllm") == 1676
    s = catalog_spec("llama-3.1-8b", cat)
    four = speed(s, nvfp4, b200, context=2048, engine="vllm", catalog=cat)
    sixteen = speed(s, nvfp4, h100, context=2048, engine="vllm", catalog=cat)
    assert four.compute_roofline_tokens_per_s / sixteen.compute_roofline_tokens_per_s == pytest.approx(
        9000 / h100.bf16_tflops, rel=1e-6)


def test_llama_cpp_on_a_p40_computes_on_int8_and_fp32_not_its_slow_fp16(cat):
    """The Tesla P40 (Pascal GP102, compute capability 6.1) runs FP16 at 1/64 of its FP32 rate (0.18 against 11.76
    TFLOPS on its datasheet). llama.cpp never computes FP16 there (ggml-cuda common.cuh: fast_fp16_hardware_available
    excludes cc 6.1): quantized weights' products take MMQ's dp4a int8 path (47 TOPS), the rest FP32 cuBLAS. Priced at
    its FP16 rate, a P40 read an 8B Q2_K prompt of 2,048 tokens at 5 tokens/s and decoded at 4.6; llama.cpp's PR #7921
    measured 729-768 tokens/s for that prompt (round ten, docs/corpus/round_2026-12-07e_log.md)."""
    from gpucost.speed import peak_tflops

    p40, rtx4090 = gpu(cat, "p40"), gpu(cat, "rtx-4090")
    q2k, q4km = get_format("q2_k", cat), get_format("q4_k_m", cat)
    assert peak_tflops(p40, q2k, "llama.cpp") == 47
    assert peak_tflops(p40, get_format("f16", cat), "llama.cpp") == 11.76
    assert peak_tflops(p40, get_format("fp16", cat), "vllm") == 0.18     # an engine that computes in FP16 there
    # a card with fast FP16 keeps its (FP16-accumulate) tensor rate
    assert peak_tflops(rtx4090, q4km, "llama.cpp") == pytest.approx(2 * rtx4090.fp16_tflops)
    est = speed(catalog_spec("llama-3-8b", cat), q2k, p40, context=2048, engine="llama.cpp", catalog=cat)
    assert 300 < est.prefill_tokens_per_s < 2000
    assert est.bound == "memory-bandwidth" and est.decode_tokens_per_s > 20
