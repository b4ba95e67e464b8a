"""The engines' kernel paths (gpucost.kernel_paths), counted by hand from the operators the code calls and
the bytes it moves."""

from __future__ import annotations

import pytest

from gpucost.catalog import Catalog
from gpucost.kernel_paths import (
    CURRENT,
    Software,
    extra_weight_bytes,
    layer_equivalents,
    linear_ops,
    software_of,
    version_on,
)
from gpucost.models import catalog_spec
from gpucost.quant import get_format
from gpucost.records import gpu
from gpucost.speed import speed

#: Llama-2-7B's decoder-block matrices: 32 layers × (4 × 4096² + 3 × 4096 × 11008) = 32 × 202,375,168
LLAMA2_7B_BLOCK_WEIGHTS = 32 * 202_375_168

OLD = Software(transformers=(4, 46, 3), bitsandbytes=(0, 44, 1))
NEW = Software(transformers=(4, 46, 3), bitsandbytes=(0, 45, 0))


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return Catalog()


def test_int8_operators_per_linear(cat):
    f = get_format("bnb-int8", cat)
    # 0.45+: quant (2 empty + kernel) + int8 matmul (empty + cuBLASLt) + dequant (empty + kernel) = 7;
    # the outlier split adds abs, >=, any, any(dim=0), argwhere, index, contiguous, index, 2 scalings, cast, addmm
    assert linear_ops(f, 1, NEW) == 7 + 12
    assert linear_ops(f, 1, Software(bitsandbytes=(0, 45, 0), int8_threshold=0.0)) == 7
    # before 0.45: double_quant 8, col32 transform 2, igemmlt 2, mm_dequant 4 = 16; the COO outlier path 25
    assert linear_ops(f, 1, OLD) == 16 + 25
    assert linear_ops(f, 1, Software(bitsandbytes=(0, 44, 1), int8_threshold=0.0)) == 16


def test_4bit_operators_per_linear(cat):
    nf4, dq = get_format("bnb-nf4", cat), get_format("bnb-nf4-dq", cat)
    assert linear_ops(nf4, 1, OLD) == 2          # gemv_4bit: output empty + kernel
    assert linear_ops(dq, 1, OLD) == 2 + 3       # + dequantize_blockwise of the absmax (empty + kernel) + offset
    assert linear_ops(nf4, 8, OLD) == 3          # dequantize_4bit (empty + kernel) + F.linear
    assert linear_ops(nf4, 8, CURRENT) == 2      # bitsandbytes 0.50's fused gemm_4bit
    assert linear_ops(get_format("bf16", cat), 8, OLD) == 1


def test_layer_equivalents_of_int8_llama(cat):
    s = catalog_spec("llama-2-7b", cat)
    f = get_format("bnb-int8", cat)
    # 32 layers × (48 operators + 7 Linears × 18 more) / 48
    assert layer_equivalents(s, f, "transformers", 1, NEW) == pytest.approx(32 * (48 + 7 * 18) / 48)
    assert layer_equivalents(s, f, "vllm", 1, NEW) == 32
    assert layer_equivalents(s, get_format("bf16", cat), "transformers", 1, NEW) == 32


def test_4bit_dequantize_round_trip_bytes(cat):
    s = catalog_spec("llama-2-7b", cat)
    nf4 = get_format("bnb-nf4", cat)
    # a batch > 1 before bitsandbytes 0.50: every block weight is written as 16 bits and read back: 4 bytes
    assert extra_weight_bytes(s, nf4, "transformers", 8, OLD) == pytest.approx(LLAMA2_7B_BLOCK_WEIGHTS * 4)
    assert extra_weight_bytes(s, nf4, "transformers", 1, OLD) == 0      # one row: gemv_4bit reads the 4-bit codes
    assert extra_weight_bytes(s, nf4, "transformers", 8, CURRENT) == 0
    assert extra_weight_bytes(s, nf4, "vllm", 8, OLD) == 0
    g = gpu(cat, "h100-sxm")
    old = speed(s, nf4, g, batch=8, context=512, engine="transformers", catalog=cat, software=OLD)
    new = speed(s, nf4, g, batch=8, context=512, engine="transformers", catalog=cat, software=CURRENT)
    assert old.bytes_per_step - new.bytes_per_step == pytest.approx(LLAMA2_7B_BLOCK_WEIGHTS * 4)


def test_software_of_a_row():
    sw = software_of("transformers 4.46.3; bitsandbytes 0.44.1; torch 2.5.1",
                     "load_in_8bit with llm_int8_threshold=0.0 (no outlier decomposition)", "2024-12-05")
    # llama.cpp is always placed by date: a run of 2024-12-05 has PR #8075 (2024-06-24)
    assert sw == Software(transformers=(4, 46, 3), bitsandbytes=(0, 44, 1), llamacpp=(2024, 6, 24), int8_threshold=0.0)
    assert software_of("", "", "2024-06-23").llamacpp == (0,)
    assert software_of("transformers 5.17.0, bitsandbytes 0.50.2").bitsandbytes == (0, 50, 2)
    assert software_of("bitsandbytes 0.45.0.dev").bitsandbytes == (0, 45, 0)
    # no version named: what was released on the row's date (0.40.0 on 2023-07-11, 0.45.0 on 2024-12-05)
    assert software_of("PyTorch 2.0.1", "", "2023-08-12").bitsandbytes == version_on("bitsandbytes", "2023-08-12") == (0, 40, 0)
    assert software_of("", "", "2023-01-01").bitsandbytes == (0,)
    assert software_of("").bitsandbytes is None and software_of("").int8_threshold == 6.0


def test_qwen3_moe_expert_loop_by_version(cat):
    """Qwen3-30B-A3B: 48 layers, 128 experts, 8 per token. transformers 4.51 loops over all 128 (each
    iteration 10 operators), 4.53 over the experts hit (11 each, router 11), 5 runs them batched (16)."""
    from gpucost.kernel_paths import experts_looped

    s = catalog_spec("qwen3-30b-a3b", cat)
    f = get_format("bf16", cat)
    old, hit, new = Software(transformers=(4, 51, 3)), Software(transformers=(4, 53, 0)), CURRENT
    assert experts_looped(s, 1, old) == ("all", 128.0)
    assert experts_looped(s, 1, hit) == ("hit", pytest.approx(8.0))
    assert experts_looped(s, 1, new) == ("fused", 0.0)
    assert layer_equivalents(s, f, "transformers", 1, old) == pytest.approx(48 * (48 - 5 + 8 + 128 * 10) / 48)
    assert layer_equivalents(s, f, "transformers", 1, hit) == pytest.approx(48 * (48 - 5 + 11 + 8 * 11) / 48)
    assert layer_equivalents(s, f, "transformers", 1, new) == pytest.approx(48 * (48 - 5 + 16) / 48)
    # a batch of 4 touches 128 × (1 − (1 − 8/128)^4) = 29.0 distinct experts
    assert experts_looped(s, 4, hit)[1] == pytest.approx(128 * (1 - (1 - 8 / 128) ** 4))


def test_llama_cpp_has_factors_of_its_own_on_hbm_cards(cat):
    """llama.cpp on a data-centre (HBM) card takes the llama.cpp/hbm keys fitted on such rows; the other engines,
    other backends and GeForce cards keep theirs."""
    from gpucost.speed import key_backend

    a100, rtx, mi300 = gpu(cat, "a100-80gb-sxm"), gpu(cat, "rtx-4090"), gpu(cat, "mi300x")
    assert a100.has_hbm and mi300.has_hbm and not rtx.has_hbm
    assert key_backend("llama.cpp", "cuda", a100) == "hbm"
    assert key_backend("llama.cpp", "cuda", rtx) == "cuda"
    assert key_backend("llama.cpp", "rocm", mi300) == "rocm"
    assert key_backend("vllm", "cuda", a100) == "cuda"
    s, q4 = catalog_spec("llama-2-7b", cat), get_format("q4_0", cat)
    assert speed(s, q4, a100, engine="llama.cpp", catalog=cat).efficiency["engine"] == "llama.cpp/hbm/gguf"
    assert speed(s, q4, rtx, engine="llama.cpp", catalog=cat).efficiency["engine"] == "llama.cpp/gguf"


# --------------------------------------------------------------------------------------------------
# llama.cpp's prompt path (issue 25: prefill)
# --------------------------------------------------------------------------------------------------

#: before and after llama.cpp PR #8075 (2024-06-24): a run is placed by its date
BEFORE_MMQ = software_of("", "", "2024-05-01")
AFTER_MMQ = software_of("", "", "2025-09-08")


def test_llamacpp_prompt_path_by_card_backend_type_and_date(cat):
    from gpucost.kernel_paths import llamacpp_prompt_path

    rtx, v100, mi300 = gpu(cat, "rtx-4090"), gpu(cat, "v100-32gb"), gpu(cat, "mi300x")
    q4k, q4, f16 = get_format("q4_k_m", cat), get_format("q4_0", cat), get_format("fp16", cat)
    assert llamacpp_prompt_path(q4k, 512, rtx, "cuda", AFTER_MMQ) == "mmq"
    assert llamacpp_prompt_path(q4k, 512, rtx, "cuda", BEFORE_MMQ) == "blas-dequant"  # dequantize, then cuBLAS
    assert llamacpp_prompt_path(q4, 512, v100, "cuda", AFTER_MMQ) == "blas-dequant"  # Volta: no int8 tensor cores
    assert llamacpp_prompt_path(q4, 512, mi300, "rocm", AFTER_MMQ) == "blas-dequant"
    assert llamacpp_prompt_path(q4, 512, rtx, "vulkan", AFTER_MMQ) == "shader"
    assert llamacpp_prompt_path(f16, 512, rtx, "cuda", AFTER_MMQ) == "float"
    assert llamacpp_prompt_path(q4, 1, rtx, "cuda", BEFORE_MMQ) == "vector"           # a decode step
    assert llamacpp_prompt_path(get_format("iq1_m", cat), 512, rtx, "cuda", AFTER_MMQ) == "blas-dequant"


def test_llamacpp_prompt_reads_a_dequantized_copy_before_mmq(cat):
    """Before PR #8075 every block weight is written as FP16 and read back by cuBLAS: 4 bytes a weight, per
    512-token physical batch; a 4,096-token prompt takes 8 of them, each reading the weights again."""
    from gpucost.kernel_paths import llamacpp_prompt_bytes
    from gpucost.speed import prompt_terms

    s, q4, rtx = catalog_spec("llama-2-7b", cat), get_format("q4_0", cat), gpu(cat, "rtx-4090")
    assert llamacpp_prompt_bytes(s, q4, 512, rtx, "cuda", BEFORE_MMQ) == pytest.approx(LLAMA2_7B_BLOCK_WEIGHTS * 4)
    assert llamacpp_prompt_bytes(s, q4, 512, rtx, "cuda", AFTER_MMQ) == 0
    assert llamacpp_prompt_bytes(s, q4, 512, rtx, "vulkan", BEFORE_MMQ) == 0
    one = prompt_terms(s, q4, rtx, prompt=512, engine="llama.cpp", software=BEFORE_MMQ)
    eight = prompt_terms(s, q4, rtx, prompt=4096, engine="llama.cpp", software=BEFORE_MMQ)
    assert (one.passes, eight.passes) == (1, 8)
    assert eight.weight_bytes == pytest.approx(8 * one.weight_bytes)
    assert eight.layers == 8 * 32
    now = prompt_terms(s, q4, rtx, prompt=512, engine="llama.cpp", software=AFTER_MMQ)
    assert one.weight_bytes - now.weight_bytes == pytest.approx(LLAMA2_7B_BLOCK_WEIGHTS * 4)
    # another engine: one forward of the whole prompt
    assert prompt_terms(s, get_format("fp16", cat), rtx, prompt=4096, engine="vllm").passes == 1


def test_q4_prompts_were_slower_than_fp16_before_mmq(cat):
    """The published ordering: XiongjieDai's RTX 4090 table (May 2024) has Llama 3 8B's pp512 at 9,382 t/s in
    F16 and 7,139 in Q4_K_M; since mul_mat_q a Q4 prompt is no slower than F16 (llmtracker's RTX PRO 6000,
    2025: Llama 2 7B Q4_0 16,634 t/s)."""
    s, rtx = catalog_spec("llama-3-8b", cat), gpu(cat, "rtx-4090")

    def pp(quant, sw):
        return speed(s, get_format(quant, cat), rtx, context=512, engine="llama.cpp", catalog=cat,
                     software=sw).prefill_tokens_per_s

    assert pp("q4_k_m", BEFORE_MMQ) < pp("fp16", BEFORE_MMQ)
    assert pp("q4_k_m", AFTER_MMQ) >= pp("fp16", AFTER_MMQ)
    assert pp("q4_k_m", AFTER_MMQ) == pytest.approx(speed(s, get_format("q4_k_m", cat), rtx, context=512,
                                                          engine="llama.cpp", catalog=cat).prefill_tokens_per_s)
