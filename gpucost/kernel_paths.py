"""What an engine's code does per decode step on a kernel path: the host operations of a decoder layer and the
extra bytes some paths move, counted in the engines' source at the versions named (issue 25).

transformers runs a model eagerly: every PyTorch operator a layer calls is dispatched by the Python host, and
at batch 1 the host, not the card, bounds a decode step (the fixed time per layer of :mod:`gpucost.speed`).
That time is fitted on transformers' float rows as the time of one decoder layer of
:data:`TF_DENSE_LAYER_OPS` operators; a layer whose code calls more operators — a bitsandbytes Linear in
place of ``nn.Linear``, a Python loop over experts — costs proportionally more (:func:`layer_equivalents`).
An *operator* here is a call that allocates a tensor or launches a kernel; views (``view``, ``transpose``,
``unsqueeze``) and casts to the dtype a tensor already has are not counted.

The counts change with the libraries' versions: :class:`Software` holds the versions a run used (``None``:
the current releases) and each change is a :class:`Release` with the version and date it arrived.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpucost.models import ModelSpec
from gpucost.quant import QuantFormat, active_weight_fraction, weight_bytes
from gpucost.records import Gpu

Version = tuple[int, ...]


@dataclass(frozen=True)
class Release:
    """The first release of ``package`` with a change of code path (``date``: when it was released, or for a
    pull request the day it was approved — runs dated earlier certainly ran the old code)."""

    package: str
    version: Version
    date: str
    source: str


@dataclass(frozen=True)
class Software:
    """The library versions a run used; ``None``: the current releases (every change below applies).
    ``int8_threshold``: bitsandbytes LLM.int8()'s outlier threshold (transformers' BitsAndBytesConfig
    ``llm_int8_threshold``, default 6.0; 0 turns the mixed-precision decomposition off)."""

    transformers: Version | None = None
    bitsandbytes: Version | None = None
    llamacpp: Version | None = None
    int8_threshold: float = 6.0

    def has(self, release: Release) -> bool:
        v = getattr(self, release.package)
        return True if v is None else v >= release.version


CURRENT = Software()

#: bitsandbytes 0.40.0 added the batch-1 inference kernel: matmul_4bit runs gemv_4bit
#: (kgemm_4bit_inference_naive) when the input is one row, and dequantize_4bit + F.linear otherwise
BNB_GEMV_4BIT = Release("bitsandbytes", (0, 40, 0), "2023-07-11",
                        "https://github.com/bitsandbytes-foundation/bitsandbytes/blob/"
                        "817bdf632529329bb5ba73260e8bdbe22bb9e9d2/bitsandbytes/autograd/_functions.py")
#: bitsandbytes 0.45.0 rewrote LLM.int8() inference: int8_vectorwise_quant + int8_linear_matmul +
#: int8_mm_dequant on row-major tensors, without 0.44's double_quant, col32/col_ampere transforms and COO
#: outlier tensors (autograd/_functions.py MatMul8bitLt.forward at 0.44.1 and at 0.45.0)
BNB_INT8_ROWWISE = Release("bitsandbytes", (0, 45, 0), "2024-12-05",
                           "https://github.com/bitsandbytes-foundation/bitsandbytes/blob/"
                           "64d382da786ad2dd51337496f35a6b516a695352/bitsandbytes/autograd/_functions.py")
#: bitsandbytes 0.50.0: matmul_4bit runs the fused gemm_4bit kernel for small batches (backends/cuda/ops.py:
#: custom kernel up to _gemm_4bit_custom_max_m rows), so a batch > 1 no longer dequantizes every weight
BNB_FUSED_4BIT = Release("bitsandbytes", (0, 50, 0), "2026-07-24",
                         "https://github.com/bitsandbytes-foundation/bitsandbytes/blob/"
                         "c5d481be1be2b04c7859bc6753268d4e7b748ee3/bitsandbytes/backends/cuda/ops.py")
#: transformers' MoE blocks looped over every expert (``for expert_idx in range(self.num_experts)``, each
#: with torch.where and the expert MLP, also on no token) until they looped over the experts hit
#: (``expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()``, modeling_qwen3_moe.py at
#: https://github.com/huggingface/transformers/blob/00d4b3d2142cb4ced2f51b90614b5d26bc045015/src/transformers/models/qwen3_moe/modeling_qwen3_moe.py):
#: Mixtral and Qwen2-MoE in PR #32429 (approved 2025-04-08, first in 4.52), Qwen3-MoE in PR #38133
#: (approved 2025-06-02, first in 4.53); other MoE families are taken to have changed with Mixtral
TF_EXPERTS_HIT = {
    "mixtral": Release("transformers", (4, 52, 0), "2025-04-08", "https://github.com/huggingface/transformers/pull/32429"),
    "qwen2_moe": Release("transformers", (4, 52, 0), "2025-04-08", "https://github.com/huggingface/transformers/pull/32429"),
    "qwen3_moe": Release("transformers", (4, 53, 0), "2025-06-02", "https://github.com/huggingface/transformers/pull/38133"),
}
#: transformers 5 stores the experts as 3D tensors and runs them through the experts interface: the default
#: ``grouped_mm`` (modeling_utils get_correct_experts_implementation), switched to ``batched_mm`` for decoding
#: (docs/source/en/experts_interface.md) — a fixed number of operators per MoE block, no loop over experts
#: (PR #42697, 2025-12-08)
TF_FUSED_EXPERTS = Release("transformers", (5, 0, 0), "2025-12-08", "https://github.com/huggingface/transformers/pull/42697")

#: llama.cpp PR #8075 (commit a818f3028, 2024-06-24, "CUDA: use MMQ instead of cuBLAS by default"): on NVIDIA cards
#: with int8 tensor cores (compute capability 7.5 and up) a prompt's products with quantized weights run mul_mat_q —
#: int8 MMA on activations quantized to q8_1 — where builds before it dequantized each weight to an FP16 buffer
#: for a cuBLAS GEMM once a batch exceeded MMQ_MAX_BATCH_SIZE (ggml-cuda.cu, PR #3776 of 2023-10). llama.cpp
#: numbers its builds by commit count; gpucost places a run by its date, so this release's version is its date.
LLAMACPP_MMQ = Release("llamacpp", (2024, 6, 24), "2024-06-24", "https://github.com/ggml-org/llama.cpp/pull/8075")

RELEASES = (BNB_GEMV_4BIT, BNB_INT8_ROWWISE, BNB_FUSED_4BIT, *TF_EXPERTS_HIT.values(), TF_FUSED_EXPERTS, LLAMACPP_MMQ)

#: Operators of one Llama decoder layer in a decode step (transformers modeling_llama.py, SDPA attention,
#: https://github.com/huggingface/transformers/blob/002272831fba584eb30dca9729c1be456836960a/src/transformers/models/llama/modeling_llama.py):
#: RMSNorm 8 (to fp32, pow, mean, add eps, rsqrt, mul, to dtype, mul weight) × 2; q/k/v/o projections 4;
#: rotary embedding 7 (position ids to float, matmul, cat, cos, sin, two casts); apply_rotary_pos_emb 10
#: (q and k: mul cos, neg, cat, mul sin, add); DynamicCache.update 2 (cat K, cat V); mask slice 1; SDPA 1;
#: MLP 5 (gate, act, up, mul, down); residual adds 2 — 48
TF_DENSE_LAYER_OPS = 48
#: operators of the MLP the MoE block replaces (gate, act, up, mul, down)
TF_DENSE_MLP_OPS = 5
#: the router of a transformers 4.x sparse MoE block (modeling_mixtral.py / modeling_qwen3_moe.py
#: SparseMoeBlock.forward): gate Linear, softmax, topk, sum and divide (norm_topk_prob), cast, zeros for the
#: output, one_hot — 8; looping over the experts hit adds sum, greater, nonzero — 11
TF_ROUTER_OPS = 8
TF_ROUTER_HIT_OPS = 11
#: one iteration of the expert loop: torch.where (a nonzero: the host waits for the card), index the tokens,
#: the expert MLP (5), index the routing weights, multiply, index_add_ — 10; the loop over experts hit also
#: indexes the mask and the ModuleList with a tensor — 11. Transformers 4.x checkpoints run the expert
#: Linears one by one, so a quantized format changes each of the 3.
TF_EXPERT_LOOP_OPS = 10
TF_EXPERT_HIT_OPS = 11
#: transformers 5's MoE block at decode: router (Linear, softmax, topk, sum, divide, cast — 6) and
#: batched_mm_experts_forward (repeat_interleave, clamp, gather gate_up_proj, bmm, activation, mul, gather
#: down_proj, bmm, weight multiply, sum — 10), integrations/moe.py
#: (https://github.com/huggingface/transformers/blob/8b584a67b474f3dfdedcdda7acb96a33dcc3b5e3/src/transformers/integrations/moe.py).
#: Not modelled: batched_mm gathers a copy of each selected expert's weights per token (bytes beyond one read).
TF_FUSED_MOE_OPS = 16
#: bitsandbytes skips the output head (transformers' bnb integration keeps ``lm_head`` in 16 bits), so the
#: Linears it replaces are the decoder blocks': q, k, v, o and the MLP's gate, up, down (no gate: 6)
ATTENTION_LINEARS = 4


def linears_per_layer(spec: ModelSpec) -> int:
    return ATTENTION_LINEARS + (3 if spec.gated_mlp else 2)


def linear_ops(fmt: QuantFormat, tokens: float, sw: Software = CURRENT) -> float:
    """Operators one Linear of ``fmt`` calls for ``tokens`` rows (1 for ``nn.Linear``), counted in
    bitsandbytes' code at the versions :class:`Software` names:

    * 4-bit (Linear4bit → matmul_4bit): one row, bnb ≥ 0.40: gemv_4bit = output empty + kernel (2);
      more rows before 0.50: dequantize_4bit (empty + kernel) + F.linear (3); from 0.50 gemm_4bit for
      small batches (empty + kernel, 2). Double quantization (NF4+DQ) first dequantizes the absmax
      constants (dequantize_blockwise: empty + kernel, add offset: +3) except in 0.50's fused kernel.
    * 8-bit LLM.int8() (Linear8bitLt → MatMul8bitLt): from 0.45 int8_vectorwise_quant (2 empty + kernel),
      int8_linear_matmul (empty + cuBLASLt), int8_mm_dequant (empty + kernel) — 7; with an outlier
      threshold: abs, >=, any (the host waits), any(dim=0), argwhere (waits again), the outlier inputs
      (index, contiguous), their weights (index, transpose × scale, × 1/127, cast) and addmm — +12.
      Before 0.45: double_quant (two empty().fill_, stats kernel, two zeros, quant kernel — 8), transform to
      col32 (zeros + kernel), igemmlt (zeros + kernel), mm_dequant (3 empty + kernel) — 16; with a threshold
      the COO outlier path adds 25 (zeros and cumsum of the block pointers, .item(), three COO zeros, sort,
      two gathers, unique, extract_outliers, the subB arithmetic, zeroing the outlier columns of CA and CAt,
      gathering them from A, matmul, add). The LLM.int8() paper (arXiv 2208.07339, section 4) finds
      outlier features in every layer of models from 6.7B parameters, so every Linear takes the outlier path.
    """
    fid = fmt.id.lower()
    if fid.startswith("bnb-int8"):
        new = sw.has(BNB_INT8_ROWWISE)
        base = 7 if new else 16
        return float(base + ((12 if new else 25) if sw.int8_threshold > 0 else 0))
    if fid.startswith("bnb-"):
        nested = fid.endswith("-dq")
        if sw.has(BNB_FUSED_4BIT):
            return 2.0
        gemv = tokens <= 1 and sw.has(BNB_GEMV_4BIT)
        return (2.0 if gemv else 3.0) + (3.0 if nested else 0.0)
    return 1.0


def dequantizes_4bit(fmt: QuantFormat, tokens: float, sw: Software = CURRENT) -> bool:
    """Whether a bitsandbytes 4-bit Linear dequantizes its whole weight to 16 bits for ``tokens`` rows
    (MatMul4Bit.forward: ``F.linear(A, dequantize_4bit(B).to(A.dtype).t())``)."""
    fid = fmt.id.lower()
    if not fid.startswith("bnb-") or fid.startswith("bnb-int8") or sw.has(BNB_FUSED_4BIT):
        return False
    return tokens > 1 or not sw.has(BNB_GEMV_4BIT)


def experts_looped(spec: ModelSpec, tokens: float, sw: Software = CURRENT) -> tuple[str, float]:
    """How transformers runs a MoE block's experts and how many loop iterations a forward of ``tokens``
    tokens takes: ("fused", 0) from transformers 5, ("hit", expected distinct experts the tokens route to)
    after the families' expert-hit change, else ("all", every expert)."""
    if sw.has(TF_FUSED_EXPERTS):
        return "fused", 0.0
    hit = TF_EXPERTS_HIT.get(spec.family, TF_EXPERTS_HIT["mixtral"])
    if sw.has(hit):
        return "hit", float(spec.num_experts * active_weight_fraction(spec, tokens))
    return "all", float(spec.num_experts)


def layer_equivalents(spec: ModelSpec, fmt: QuantFormat, engine: str, tokens: float = 1,
                      sw: Software = CURRENT) -> float:
    """Decoder layers' worth of the fixed per-layer time a forward of ``tokens`` tokens pays. Engines other
    than transformers: the layers. transformers: the operators the layers call, in units of a dense layer's
    :data:`TF_DENSE_LAYER_OPS` — each Linear of a quantized path adds ``linear_ops − 1``, each MoE block adds
    its router and expert loop in place of the dense MLP (:func:`experts_looped`)."""
    if engine != "transformers" or not spec.is_llm:
        return float(spec.num_layers)
    per_linear = linear_ops(fmt, tokens, sw) - 1.0
    ops = spec.num_layers * (TF_DENSE_LAYER_OPS + linears_per_layer(spec) * per_linear)
    if spec.is_moe:
        kind, n = experts_looped(spec, tokens, sw)
        if kind == "fused":
            block = float(TF_FUSED_MOE_OPS)
        else:
            it = (TF_EXPERT_HIT_OPS if kind == "hit" else TF_EXPERT_LOOP_OPS) + 3 * per_linear
            block = (TF_ROUTER_HIT_OPS if kind == "hit" else TF_ROUTER_OPS) + n * it
        ops += spec.moe_layers * (block - TF_DENSE_MLP_OPS - 3 * per_linear)
    return ops / TF_DENSE_LAYER_OPS


#: bytes per weight of a dequantized 16-bit copy: written by dequantize_4bit, read back by F.linear
DEQUANT_ROUND_TRIP_BYTES = 2 * 2


def _round_trip_bytes(spec: ModelSpec, fmt: QuantFormat, tokens: float) -> float:
    """A 16-bit copy of the decoder blocks' quantized weights written and read back once: 4 bytes per weight
    (of a MoE, the experts ``tokens`` tokens touch)."""
    wb = weight_bytes(spec, fmt)
    params_per_byte = 8.0 / fmt.bits_per_weight
    experts = wb.expert_blocks * float(active_weight_fraction(spec, tokens)) if spec.is_moe else 0.0
    return ((wb.blocks - wb.expert_blocks) + experts) * params_per_byte * DEQUANT_ROUND_TRIP_BYTES


def extra_weight_bytes(spec: ModelSpec, fmt: QuantFormat, engine: str, tokens: float = 1,
                       sw: Software = CURRENT) -> float:
    """Bytes a forward of ``tokens`` tokens moves beyond reading the weights once: a bitsandbytes 4-bit
    Linear that dequantizes (:func:`dequantizes_4bit`) writes a 16-bit copy of its weight and F.linear reads
    it — 4 bytes per weight of the decoder blocks (the experts a step touches, for a MoE). (llama.cpp's prompt
    path: :func:`llamacpp_prompt_bytes`.)"""
    if engine != "transformers" or not spec.is_llm or not dequantizes_4bit(fmt, tokens, sw):
        return 0.0
    return _round_trip_bytes(spec, fmt, tokens)


def llamacpp_prompt_bytes(spec: ModelSpec, fmt: QuantFormat, tokens: float, gpu: Gpu | None, backend: str = "cuda",
                          sw: Software = CURRENT) -> float:
    """Bytes one llama.cpp forward of ``tokens`` prompt rows moves beyond reading the weights once: on the
    ``blas-dequant`` path (:func:`llamacpp_prompt_path`) each quantized weight is written to an FP16 buffer and
    read back by the GEMM (4 bytes per weight of the decoder blocks); none on the others."""
    if not spec.is_llm or llamacpp_prompt_path(fmt, tokens, gpu, backend, sw) != "blas-dequant":
        return 0.0
    return _round_trip_bytes(spec, fmt, tokens)


#: ggml types with a mul_mat_q kernel (ggml_cuda_should_use_mmq, ggml/src/ggml-cuda/mmq.cu): the legacy
#: quants and k-quants (PR #8075's set; a k-quant mix such as Q4_K_M and Unsloth's UD-…_K_XL are k-quant
#: tensors), the i-quants but IQ1_M (joined in July 2024, PRs #8278 and #8495; runs in between are taken to
#: have them) and MXFP4 (which arrived in 2025, with MMQ)
_MMQ_TYPES = re.compile(r"^(ud-)?(q[2-8]_(0|1|k)|iq(1_s|2_xxs|2_xs|2_s|2_m|3_xxs|3_s|3_m|4_xs|4_nl)|mxfp4)")
#: mul_mat_q runs on int8 tensor cores from Turing (int8_mma_available: compute capability 7.5)
MMQ_MIN_COMPUTE_CAPABILITY = 7.5
#: llama.cpp's batch size from which a product takes the matrix-matrix path (MMVQ below it; ggml-cuda's
#: MMVQ_MAX_BATCH_SIZE 8): a prompt; a decode step of fewer rows reads the quantized weights directly
LLAMACPP_MMVQ_MAX_BATCH = 8


def llamacpp_prompt_path(fmt: QuantFormat, tokens: float, gpu: Gpu | None, backend: str = "cuda",
                         sw: Software = CURRENT) -> str:
    """How llama.cpp multiplies a forward of ``tokens`` rows by ``fmt``'s weights on ``gpu``: ``float`` (16-bit
    weights: a BLAS GEMM), ``mmq`` (mul_mat_q on the quantized weights: CUDA, compute capability ≥ 7.5, a type
    it supports, a build from PR #8075 on — :data:`LLAMACPP_MMQ`), ``blas-dequant`` (CUDA and ROCm
    otherwise: each weight dequantized to an FP16 buffer, then the GEMM; RDNA3 keeps hipBLAS, PR #8075),
    ``shader`` (Vulkan, Metal, SYCL: the matmul shader dequantizes as it loads) and ``vector`` (a decode
    step of at most :data:`LLAMACPP_MMVQ_MAX_BATCH` rows)."""
    if fmt.is_float:
        return "float"
    if tokens <= LLAMACPP_MMVQ_MAX_BATCH:
        return "vector"
    if backend not in ("cuda", "rocm"):
        return "shader"
    if (backend == "cuda" and gpu is not None and gpu.vendor == "NVIDIA"
            and (gpu.compute_capability or 0.0) >= MMQ_MIN_COMPUTE_CAPABILITY
            and _MMQ_TYPES.match(fmt.id.lower()) and sw.has(LLAMACPP_MMQ)):
        return "mmq"
    return "blas-dequant"


_VERSION = re.compile(r"(\d+(?:\.\d+)+)")


def parse_version(text: str | None) -> Version | None:
    """The first dotted version in a text, up to three parts: (4, 46, 3) from '4.46.3', '0.45.0.dev', 'v0.44.1',
    (0, 7, 3) from '0.7.3.dev138+g21f6'; None when there is none. Engine versions of serving rows
    (:mod:`gpucost.scheduling`) and library versions of speed rows are read with it."""
    m = _VERSION.search(text or "")
    return tuple(int(x) for x in m.group(1).split(".")[:3]) if m else None


def version_on(package: str, date: str) -> Version:
    """A version that has exactly the changes of ``package`` released by ``date`` (ISO): a run that names
    no version is taken to have run what was out on the day its figure was true."""
    out: Version = (0,)
    for r in RELEASES:
        if r.package == package and r.date <= date and r.version > out:
            out = r.version
    return out


_PACKAGE = {"transformers": re.compile(r"transformers\s*v?(\d+(?:\.\d+)+)", re.IGNORECASE),
            "bitsandbytes": re.compile(r"bitsandbytes\s*v?(\d+(?:\.\d+)+)", re.IGNORECASE)}
_THRESHOLD = re.compile(r"(?:llm_int8_)?threshold\s*=\s*(\d+(?:\.\d+)?)", re.IGNORECASE)


def software_of(versions: str, notes: str = "", as_of: str | None = None) -> Software:
    """The :class:`Software` a corpus row states: the versions its engine column names ('transformers
    4.46.3; bitsandbytes 0.44.1'), else the releases out on its ``as_of`` date (llama.cpp: always by date),
    else the current ones; the
    LLM.int8() threshold its notes give (``llm_int8_threshold=0.0``), else the default 6.0."""
    kw: dict = {}
    for pkg, rx in _PACKAGE.items():
        m = rx.search(versions or "")
        v = parse_version(m.group(1)) if m else None
        kw[pkg] = v if v is not None else (version_on(pkg, as_of) if as_of else None)
    # llama.cpp's build numbers are not versions of the releases above: a run is placed by its date
    kw["llamacpp"] = version_on("llamacpp", as_of) if as_of else None
    m = _THRESHOLD.search(notes or "")
    if m:
        kw["int8_threshold"] = float(m.group(1))
    return Software(**kw)
