"""Weight formats: how many bytes each of a model's tensors takes in a format, in memory and on disk.

* Float formats (fp32, fp16, bf16): every tensor at that width.
* Weight-only and FP8 formats (bitsandbytes int8/nf4/fp4, GPTQ, AWQ, FP8): the Linear layers inside the
  decoder blocks at the format's ``bits_per_weight`` (quant_formats.csv, scales and zeros included);
  token embedding, output head, MoE router and 1-D vectors stay at 16 bits (the
  ``high_precision_tensors`` column of quant_formats.csv).
* GGUF types (llama.cpp): each tensor gets the type llama.cpp's quantizer gives it —
  ``llama_tensor_get_type`` in src/llama-quant.cpp (https://github.com/ggml-org/llama.cpp/blob/master/
  src/llama-quant.cpp): the output head at Q6_K, attn_v/ffn_down at more bits on the "use_more_bits"
  layers for the _M mixes, 70B-class attn_v bump, 8-expert MoE attn_k/attn_v at Q8_0, fallbacks when a
  row is not a multiple of the 256-value super-block, 1-D tensors and the router left at F32.
  Type sizes are the block sizes of ggml-common.h (:data:`GGML_TYPE_BITS`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from gpucost.catalog import Catalog, derived
from gpucost.errors import GpucostError, UnknownNameError
from gpucost.models import ModelSpec, weight_tensors
from gpucost.serialize import Record

GIB = 2**30

#: bits per weight of each ggml tensor type = bytes per block × 8 / values per block, from the block
#: structs of ggml/src/ggml-common.h (https://github.com/ggml-org/llama.cpp/blob/master/ggml/src/ggml-common.h):
#: block_q8_0 34 B/32, block_q4_0 18 B/32, block_q4_1 20 B/32, block_q5_0 22 B/32, block_q5_1 24 B/32,
#: block_q2_K 84 B/256, block_q3_K 110 B/256, block_q4_K 144 B/256, block_q5_K 176 B/256,
#: block_q6_K 210 B/256, block_iq4_xs 136 B/256, block_iq4_nl 18 B/32, block_iq3_xxs 98 B/256,
#: block_iq3_s 110 B/256, block_iq2_xs 74 B/256, block_iq2_s 82 B/256, block_iq2_xxs 66 B/256,
#: block_iq1_s 50 B/256, block_iq1_m 56 B/256, block_mxfp4 17 B/32 (ggml-common.h at d99724f2)
GGML_TYPE_BITS = {
    "F32": 32.0, "F16": 16.0, "BF16": 16.0, "Q8_0": 8.5, "Q4_0": 4.5, "Q4_1": 5.0, "Q5_0": 5.5, "Q5_1": 6.0,
    "Q2_K": 2.625, "Q3_K": 3.4375, "Q4_K": 4.5, "Q5_K": 5.5, "Q6_K": 6.5625, "IQ4_XS": 4.25,
    "IQ4_NL": 4.5, "IQ3_XXS": 3.0625, "IQ3_S": 3.4375, "IQ2_XS": 2.3125, "IQ2_S": 2.5625,
    "IQ2_XXS": 2.0625, "IQ1_S": 1.5625, "IQ1_M": 1.75, "MXFP4": 4.25,
}
#: values per block: 256 for the K-quants and i-quants (QK_K), 32 for the legacy types (ggml-common.h)
GGML_BLOCK = {t: (256 if ("_K" in t or (t.startswith("IQ") and t != "IQ4_NL")) else 32)
              for t in GGML_TYPE_BITS}
GGML_BLOCK.update({"F32": 1, "F16": 1, "BF16": 1})
#: fallback when a row length is not a multiple of the block (llama-quant.cpp, convert_incompatible_tensor)
GGML_FALLBACK = {"IQ2_XS": "IQ4_NL", "IQ2_S": "IQ4_NL", "IQ3_XXS": "IQ4_NL", "IQ3_S": "IQ4_NL",
                 "IQ2_XXS": "IQ4_NL", "IQ1_S": "IQ4_NL", "IQ1_M": "IQ4_NL",
                 "Q2_K": "IQ4_NL", "Q3_K": "IQ4_NL", "IQ4_XS": "IQ4_NL", "Q4_K": "Q5_0", "Q5_K": "Q5_1",
                 "Q6_K": "Q8_0"}
#: catalog GGUF format id → (llama.cpp ftype name, its base tensor type)
GGUF_FTYPES = {
    "q8_0": ("Q8_0", "Q8_0"), "q6_k": ("Q6_K", "Q6_K"), "q5_k_m": ("Q5_K_M", "Q5_K"),
    "q5_k_s": ("Q5_K_S", "Q5_K"), "q4_k_m": ("Q4_K_M", "Q4_K"), "q4_k_s": ("Q4_K_S", "Q4_K"),
    "q4_0": ("Q4_0", "Q4_0"), "q3_k_m": ("Q3_K_M", "Q3_K"), "q3_k_s": ("Q3_K_S", "Q3_K"),
    "q3_k_l": ("Q3_K_L", "Q3_K"), "q2_k": ("Q2_K", "Q2_K"), "iq4_xs": ("IQ4_XS", "IQ4_XS"),
    "iq3_xxs": ("IQ3_XXS", "IQ3_XXS"), "iq2_xs": ("IQ2_XS", "IQ2_XS"),
    # llama-quant.cpp llama_ftype_get_default_type (at 007dbbf3)
    "q4_1": ("Q4_1", "Q4_1"), "q5_0": ("Q5_0", "Q5_0"), "q5_1": ("Q5_1", "Q5_1"), "iq1_s": ("IQ1_S", "IQ1_S"),
    "iq1_m": ("IQ1_M", "IQ1_M"), "iq2_xxs": ("IQ2_XXS", "IQ2_XXS"), "iq2_m": ("IQ2_M", "IQ2_S"),
    "iq3_s": ("IQ3_S", "IQ3_S"), "iq3_m": ("IQ3_M", "IQ3_S"),
    # llama_tensor_get_type: a 3-D tensor (ne[2] > 1: the MoE experts) MXFP4, output.weight and any other
    # quantizable tensor Q8_0 — ggml-org's and bartowski's gpt-oss GGUFs (llama-bench: "MXFP4 MoE")
    "mxfp4_moe": ("MXFP4_MOE", "Q8_0"),
}
#: the file types llama.cpp quantizes by its low-bit branch (IQ2_XXS, IQ2_XS, IQ2_S, IQ2_M, IQ1_S, IQ1_M)
LOW_BIT_FTYPES = ("IQ2_XS", "IQ2_XXS", "IQ1_S", "IQ1_M", "IQ2_M")
#: ExLlamaV2 quantizes the output head too: ``-hb``, default 6 bits, "about 6.3 bits" with its scales
#: (exllamav2 doc/convert.md)
EXL2_HEAD_BITS = 6.3
#: bytes per element of the 16-bit tensors kept beside quantized ones
HALF_BYTES = 2.0
#: KV-cache element sizes [bytes per value]: fp32 4, fp16/bf16 2, fp8 1; llama.cpp's q8_0 and q4_0 cache
#: types use the same blocks as the weights (34 B / 32 values, 18 B / 32 values; ggml-common.h)
KV_DTYPE_BYTES = {"fp32": 4.0, "fp16": 2.0, "bf16": 2.0, "fp8": 1.0, "q8_0": 34 / 32, "q4_0": 18 / 32}

FLOAT_FAMILIES = {"float"}
#: the format whose matmuls run in FP4 (weights and activations; quant_formats.csv row nvfp4)
NVFP4 = "nvfp4"


@dataclass(frozen=True)
class QuantFormat(Record):
    """One weight format (a row of quant_formats.csv)."""

    id: str
    name: str
    family: str
    bits_per_weight: float
    group_size: int | None
    high_precision_tensors: str
    kv_compatible: str
    min_compute_capability: float | None
    engines: tuple[str, ...]
    ppl_delta: float | None
    ppl_delta_model: str
    ppl_delta_source: str
    source: str
    as_of: str

    @property
    def is_float(self) -> bool:
        return self.family in FLOAT_FAMILIES

    @property
    def is_gguf(self) -> bool:
        return self.family == "gguf"

    @property
    def is_quantized(self) -> bool:
        return not self.is_float

    @property
    def compute_dtype(self) -> str:
        """The dtype matmuls run in: fp8 for FP8 and fp4 for NVFP4 on capable cards (the card's fallback rule,
        :data:`gpucost.records.FALLBACK`, takes the rest to 16 bits), else 16-bit (weight-only formats
        dequantize; vLLM/llama.cpp/bitsandbytes docs), fp32 for fp32. NVFP4 quantizes the inputs of its Linear
        layers too (ModelOpt NVFP4_DEFAULT_CFG: weight and input quantizers, quant_formats.csv), so its
        matmuls run on FP4 tensor cores (Blackwell)."""
        if self.id.startswith("fp8"):
            return "fp8"
        if self.id == NVFP4:
            return "fp4"
        if self.id == "fp32":
            return "fp32"
        return "bf16" if self.id == "bf16" else "fp16"



def _opt(v):
    return None if v is None or (isinstance(v, float) and math.isnan(v)) or v == "" else v


def format_from_row(row: Mapping) -> QuantFormat:
    gs = _opt(row.get("group_size"))
    cc = _opt(row.get("min_compute_capability"))
    ppl = _opt(row.get("ppl_delta"))
    return QuantFormat(
        id=str(row["id"]), name=str(row.get("name") or row["id"]), family=str(row.get("family") or ""),
        bits_per_weight=float(row["bits_per_weight"]), group_size=int(gs) if gs is not None else None,
        high_precision_tensors=str(row.get("high_precision_tensors") or ""),
        kv_compatible=str(row.get("kv_compatible") or ""),
        min_compute_capability=float(cc) if cc is not None else None,
        engines=tuple(e.strip() for e in str(row.get("engines") or "").split(";") if e.strip()),
        ppl_delta=float(ppl) if ppl is not None else None, ppl_delta_model=str(row.get("ppl_delta_model") or ""),
        ppl_delta_source=str(row.get("ppl_delta_source") or ""), source=str(row.get("source") or ""),
        as_of=str(row.get("as_of") or ""))


FORMAT_ALIASES = {"fp8": "fp8-e4m3", "int8": "bnb-int8", "nf4": "bnb-nf4-dq", "qlora": "bnb-nf4-dq",
                  "bnb-nf4-double": "bnb-nf4-dq", "gptq": "gptq-4bit-g128", "awq": "awq-4bit-g128",
                  "f16": "fp16", "f32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float32": "fp32",
                  "fp4": "bnb-fp4", "int4": "gptq-4bit-g128",
                  # as published (Qwen's GPTQ-Int4/Int8 and AWQ use group size 128, the AutoGPTQ/AutoAWQ default)
                  "gptq-int4": "gptq-4bit-g128", "gptq-4bit": "gptq-4bit-g128", "gptq-int8": "gptq-8bit-g128",
                  "awq-int4": "awq-4bit-g128", "awq-4bit": "awq-4bit-g128"}


def formats(catalog: Catalog) -> dict[str, QuantFormat]:
    """Every format of quant_formats.csv by id, in table order.

    Parsed once per loaded table: a page asks for formats hundreds of times while it builds, and parsing
    the table each time took half a second of the fit page's start.
    """
    parsed = derived(catalog.table("quant_formats"), "quant_formats",
                     lambda t: {r["id"]: format_from_row(r) for r in t.to_dict(orient="records")})
    return dict(parsed)


def get_format(name: str, catalog: Catalog | None = None) -> QuantFormat:
    """A format by id (case-insensitive; also "Q4_K_M", "nf4", "gptq", "fp8" …)."""
    catalog = catalog or Catalog()
    fmts = formats(catalog)
    key = str(name).strip().lower().replace(" ", "")
    key = FORMAT_ALIASES.get(key, key)
    if key in fmts:
        return fmts[key]
    raise UnknownNameError("format", str(name), list(fmts))


# --------------------------------------------------------------------------------------------------
# GGUF tensor types (llama.cpp's quantizer rules)
# --------------------------------------------------------------------------------------------------

def _use_more_bits(i: np.ndarray, n: int) -> np.ndarray:
    """llama-quant.cpp: i < n/8 || i >= 7n/8 || (i - n/8) % 3 == 2 (integer division as in C++)."""
    return (i < n // 8) | (i >= 7 * n // 8) | (((i - n // 8) % 3) == 2)


def _is_70b_class(spec: ModelSpec) -> bool:
    """llama.cpp's MODEL_70B: 80 layers with grouped-query attention (llama-model.cpp load_hparams:
    80 layers → 65B when n_head == n_head_kv, else 70B; qwen2: 80 layers → 70B)."""
    return spec.num_layers == 80 and (spec.num_kv_heads < spec.num_attention_heads or spec.family == "qwen2")


@dataclass(frozen=True)
class _Rules:
    """What llama.cpp's llama_tensor_get_type looks at besides the tensor: the file type and the model."""

    ftype: str
    base: str
    n_gqa: float
    n_expert: int
    is70: bool
    L: int


def _attn_v(r: _Rules, types: np.ndarray, layers: np.ndarray) -> None:
    ftype = r.ftype
    simple = {"Q2_K": "Q4_K" if r.n_gqa >= 4 else "Q3_K",
              "IQ3_XXS": "Q4_K" if r.n_gqa >= 4 else "IQ3_XXS",  # with an importance matrix (see ffn_down)
              "Q3_K_L": "Q5_K"}
    if ftype in simple:
        types[:] = simple[ftype]
    elif ftype == "Q3_K_M":
        types[:] = np.where(layers < 2, "Q5_K", "Q4_K")
    elif ftype == "IQ4_XS" and r.n_gqa >= 4:
        types[:] = "Q5_K"
    elif ftype == "IQ3_S" and r.n_gqa >= 4 or ftype == "IQ3_M":
        types[:] = "Q4_K"
    elif ftype in ("Q4_K_M", "Q5_K_M"):
        types[_use_more_bits(layers, r.L)] = "Q6_K"
    elif ftype == "Q4_K_S":
        types[layers < 4] = "Q5_K"
    if r.is70:
        types[(types == "Q3_K") | (types == "Q4_K")] = "Q5_K"
    if r.n_expert == 8:
        types[:] = "Q8_0"


def _attn_k(r: _Rules, types: np.ndarray, layers: np.ndarray) -> None:
    if r.n_expert == 8:
        types[:] = "Q8_0"
    elif r.ftype == "IQ3_XXS":
        types[:] = "IQ2_S"


def _attn_q(r: _Rules, types: np.ndarray, layers: np.ndarray) -> None:
    if r.ftype == "IQ3_XXS":
        types[:] = "IQ2_S"


def _ffn_down(r: _Rules, types: np.ndarray, layers: np.ndarray) -> None:
    # IQ3_XXS without an importance matrix would use Q4_K/Q3_K here; llama.cpp strongly recommends
    # an imatrix for the i-quants (and requires one for IQ2), so ffn_down keeps the base type
    ftype, L = r.ftype, r.L
    if ftype == "Q2_K":
        types[:] = "Q3_K"
    elif ftype == "Q3_K_M":
        types[:] = np.where(layers < L // 16, "Q5_K", "Q4_K")
    elif ftype == "Q3_K_L":
        types[:] = "Q5_K"
    elif ftype in ("Q4_K_M", "Q5_K_M"):
        types[_use_more_bits(layers, L)] = "Q6_K"
    elif ftype in ("IQ4_XS", "Q4_K_S"):
        types[layers < L // 8] = "Q5_K"
    elif ftype == "IQ3_M":
        types[layers < L // 8] = "Q4_K"


_ATTN_OUTPUT_MOE_Q5 = ("Q2_K", "IQ3_XXS", "Q3_K_S", "Q3_K_M", "Q4_K_S", "Q4_K_M", "IQ4_XS")
_ATTN_OUTPUT = {"Q2_K": "Q3_K", "IQ3_XXS": "IQ3_S", "Q3_K_M": "Q4_K", "Q3_K_L": "Q5_K", "IQ3_M": "Q4_K"}


def _attn_output(r: _Rules, types: np.ndarray, layers: np.ndarray) -> None:
    if r.n_expert == 8:
        if r.ftype in _ATTN_OUTPUT_MOE_Q5:
            types[:] = "Q5_K"
    elif r.ftype in _ATTN_OUTPUT:
        types[:] = _ATTN_OUTPUT[r.ftype]


def _iq2_xs(r: _Rules, k: str, types: np.ndarray, layers: np.ndarray) -> None:
    """llama.cpp's first branch, for the 1- and 2-bit i-quants (IQ2_XXS, IQ2_XS, IQ2_S, IQ2_M, IQ1_S,
    IQ1_M): IQ2_M lifts to IQ3_S where the others lift to Q2_K."""
    low = "IQ3_S" if r.ftype == "IQ2_M" else "Q2_K"
    if k == "attn_v":
        types[:] = "Q4_K" if (r.n_gqa >= 4 or r.n_expert >= 4) else low
    elif k == "attn_k" and r.n_expert == 8:
        types[:] = "Q4_K"
    elif k.startswith("ffn_down"):
        types[layers < r.L // 8] = low
    elif k == "attn_output":
        if r.n_expert == 8:
            types[:] = "Q5_K"
        elif r.ftype in ("IQ1_S", "IQ1_M"):
            types[:] = "IQ2_XXS"
        elif r.ftype == "IQ2_M":
            types[:] = "IQ3_S"


_LAYER_RULES = {"attn_v": _attn_v, "attn_k": _attn_k, "attn_q": _attn_q, "attn_output": _attn_output}


def _layer_types(r: _Rules, kind: str, layers: np.ndarray) -> np.ndarray:
    """The type of each layer's ``kind`` tensor."""
    types = np.full(len(layers), r.base, dtype=object)
    if r.ftype == "MXFP4_MOE":
        if kind.endswith("_exps"):
            types[:] = "MXFP4"
        return types
    if r.ftype in LOW_BIT_FTYPES:
        _iq2_xs(r, kind, types, layers)
    elif kind.startswith("ffn_down"):
        _ffn_down(r, types, layers)
    elif kind in _LAYER_RULES:
        _LAYER_RULES[kind](r, types, layers)
    return types


#: tensors no quantizer converts: norms and biases, the MoE routers (llama.cpp's llama-quant.cpp skips
#: ffn_gate_inp and ssm_conv1d weights), a Gated DeltaNet layer's causal conv1d
UNQUANTIZED = ("norm", "ffn_gate_inp", "ffn_gate_inp_shexp", "ssm_conv1d")


def _whole_tensor_type(r: _Rules, g, tied: bool) -> str | None:
    """The type of a tensor that is not per-layer (or of a float file), else None."""
    if g.kind == "other":  # a model without an LLM architecture: one group at the base type
        return r.base
    if g.kind in UNQUANTIZED:  # 1-D tensors, the MoE routers and the conv of a DeltaNet layer stay F32
        return "F32"
    if r.ftype in ("F16", "BF16", "F32"):
        return r.ftype
    if g.kind == "output" or (g.kind == "token_embd" and tied):
        t = "Q5_K" if r.ftype in (*LOW_BIT_FTYPES, "IQ3_XXS") else ("Q8_0" if r.base == "Q8_0" else "Q6_K")
        return "Q8_0" if g.ne0 % 256 else t
    if g.kind == "token_embd":
        low = {"IQ2_XS": "Q2_K", "IQ2_XXS": "Q2_K", "IQ1_S": "Q2_K", "IQ1_M": "Q2_K", "IQ2_M": "IQ3_S",
               "IQ3_XXS": "IQ3_S"}
        return _fit_row(low.get(r.ftype, r.base), g.ne0)
    return None


def _file_types(fmt_id: str) -> tuple[str, str]:
    """(llama.cpp file type, its base tensor type) of a GGUF format id."""
    floats = {"fp16": "F16", "bf16": "BF16", "fp32": "F32"}
    if fmt_id in floats:
        return floats[fmt_id], floats[fmt_id]
    if fmt_id in GGUF_FTYPES:
        return GGUF_FTYPES[fmt_id]
    raise GpucostError(f"'{fmt_id}' is not a GGUF type llama.cpp writes")


def gguf_tensor_types(spec: ModelSpec, fmt_id: str) -> list[tuple[str, int, float, str]]:
    """(kind, ne0, values, ggml type) for every tensor of ``spec`` quantized as GGUF ``fmt_id`` (or F16,
    BF16, F32 for the float formats). Per-layer groups are split where the type differs by layer."""
    ftype, base = _file_types(fmt_id.lower())
    r = _Rules(ftype, base, spec.num_attention_heads / max(spec.num_kv_heads, 1),
               spec.num_experts if spec.is_moe else 0, _is_70b_class(spec), spec.num_layers)
    out: list[tuple[str, int, float, str]] = []
    for g in weight_tensors(spec):
        whole = _whole_tensor_type(r, g, spec.tie_embeddings)
        if whole is not None:
            out.append((g.kind, g.ne0, g.total, whole))
            continue
        types = _layer_types(r, g.kind, np.asarray(g.layers))
        for t in np.unique(types):
            n = int(np.count_nonzero(types == t))
            out.append((g.kind, g.ne0, float(g.numel) * n, _fit_row(str(t), g.ne0)))
    return out


def _fit_row(t: str, ne0: int) -> str:
    """The type llama.cpp falls back to when a row of ``ne0`` values is not a whole number of blocks."""
    if ne0 and ne0 % GGML_BLOCK.get(t, 1):
        t = GGML_FALLBACK.get(t, "F16")
        if ne0 % GGML_BLOCK.get(t, 1):
            t = "F16"
    return t


# --------------------------------------------------------------------------------------------------
# Bytes
# --------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class WeightBytes:
    """Bytes of a model's weights in one format.

    total            [bytes] all weights (the file size for GGUF: the sum of tensor bytes, no metadata)
    embed            [bytes] the token-embedding table (llama.cpp keeps it in host memory)
    output           [bytes] the output head when it is a separate tensor
    blocks           [bytes] per-layer tensors (what tensor parallelism and layer split divide)
    read_per_token   [bytes] weights a decode step reads (all but the embedding table; MoE: see
                     :func:`active_weight_fraction`)
    """

    total: float
    embed: float
    output: float
    blocks: float
    vectors: float
    expert_blocks: float

    @property
    def total_gib(self) -> float:
        return self.total / GIB


def weight_bytes(spec: ModelSpec, fmt: QuantFormat) -> WeightBytes:
    """Bytes of each part of the weights of ``spec`` stored as ``fmt`` (see module docstring)."""
    return _weight_bytes_cached(spec, fmt)


@lru_cache(maxsize=4096)
def _weight_bytes_cached(spec: ModelSpec, fmt: QuantFormat) -> WeightBytes:
    parts = {"embed": 0.0, "output": 0.0, "blocks": 0.0, "vectors": 0.0, "experts": 0.0}
    if fmt.is_gguf:
        for kind, _ne0, n, t in gguf_tensor_types(spec, fmt.id):
            b = n * GGML_TYPE_BITS[t] / 8
            _add(parts, kind, b)
    else:
        # FP8 checkpoints (llm-compressor, TensorRT Model Optimizer, DeepSeek's native FP8) convert the
        # decoder blocks' Linear layers and keep embeddings, output head, norms and router in 16 bits
        float_bits = fmt.bits_per_weight if fmt.is_float and fmt.bits_per_weight >= 16 else HALF_BYTES * 8
        for g in weight_tensors(spec):
            if g.kind == "output" and fmt.family == "exl2":
                bits = EXL2_HEAD_BITS
            elif g.kind in ("token_embd", "output", *UNQUANTIZED):
                bits = float_bits
            elif fmt.family == "mx" and not g.kind.endswith("_exps"):
                bits = float_bits  # MXFP4 checkpoints (GPT-OSS) quantize the MoE experts alone, the rest is BF16
            else:  # decoder-block matrices, and the single group of a diffusion model
                bits = fmt.bits_per_weight
            _add(parts, g.kind, g.total * bits / 8)
        extra = spec.params_total - sum(g.total for g in weight_tensors(spec))
        if spec.is_llm and extra > 0:  # vision tower etc.: kept at 16 bits by quantizers, else as the format
            parts["vectors"] += extra * float_bits / 8
    total = sum(parts.values())
    return WeightBytes(total=total, embed=parts["embed"], output=parts["output"],
                       blocks=parts["blocks"] + parts["experts"], vectors=parts["vectors"],
                       expert_blocks=parts["experts"])


def _add(parts: dict, kind: str, b: float) -> None:
    if kind == "token_embd":
        parts["embed"] += b
    elif kind == "output":
        parts["output"] += b
    elif kind in UNQUANTIZED:
        parts["vectors"] += b
    elif kind.endswith("_exps"):
        parts["experts"] += b
    else:
        parts["blocks"] += b


def weights_file_gib(spec: ModelSpec, fmt: QuantFormat) -> float:
    """Size of the weights file(s) [GiB]: for GGUF the sum of tensor bytes as llama.cpp reports it
    ('model size'); for the other formats the weights as stored (safetensors: tensor bytes)."""
    return weight_bytes(spec, fmt).total / GIB


def bits_per_weight_effective(spec: ModelSpec, fmt: QuantFormat) -> float:
    """Whole-model bits per parameter (llama.cpp's 'BPW')."""
    return weight_bytes(spec, fmt).total * 8 / spec.params_total


def active_weight_fraction(spec: ModelSpec, batch: float | np.ndarray = 1) -> np.ndarray | float:
    """Fraction of the routed-expert weights a decode step reads for ``batch`` sequences: with k of E
    experts per token and routing taken as uniform and independent, an expert is untouched by all b
    tokens with probability (1 − k/E)^b, so the expected fraction read is 1 − (1 − k/E)^b."""
    if not spec.is_moe:
        return 1.0
    p = spec.experts_per_token / spec.num_experts
    return 1.0 - (1.0 - p) ** np.asarray(batch, dtype=float)


def check_format_for_gpu(fmt: QuantFormat, compute_capability: float | None, vendor: str) -> str:
    """'' when the card runs ``fmt`` natively, else the reason (FP8 needs compute capability ≥ 8.9,
    BF16 ≥ 8.0 — quant_formats.csv min_compute_capability)."""
    need = fmt.min_compute_capability
    if need is None or vendor != "NVIDIA" or compute_capability is None or compute_capability != compute_capability:
        return ""
    if compute_capability < need:
        return f"{fmt.id} needs compute capability >= {need:g} (card has {compute_capability:g})"
    return ""
