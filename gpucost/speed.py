"""Speed and the cost of the job: decode and prefill tokens/s, training time, cost per 1M tokens.

Decode (one step generates one token for each of ``batch`` sequences)::

    weights     = weights read (all but the embedding table; MoE: shared weights + the experts the batch
                  touches)                                                                      [bytes]
    kv          = KV cache read (batch × context)                                               [bytes]
    flops_lin   = batch × 2 × active parameters (MoE: the routed experts' FLOP × 1 / share)      [FLOP]
    flops_attn  = batch × 4 × layers × context × heads × head_dim                               [FLOP]
    t_gpu       = max(weights / (bandwidth × η_bw), flops_lin / (peak × η_c))
                  + max(kv / (bandwidth × η_bw), flops_attn / (peak × η_c))
                  + layers × c_gpu + communication
    t_step      = max(t_gpu, layers × c_host)
    tokens/s    = batch / t_step

η_bw, c_gpu, c_host (per engine) and η_c are calibrated on some rows of data/benchmarks.csv and kept in
data/engine_efficiency.csv with the rows they were fitted on; the other rows judge them
(:mod:`gpucost.validation`). The matrix products over the weights and attention over the KV cache are separate
kernels that run one after the other, each on its own roofline, so their times add (:func:`roofline_seconds`): at
a large batch the products are compute-bound while attention still reads the whole cache. Since η ≤ 1 and the
added times are ≥ 0, tokens/s never exceeds the bandwidth roofline (batch × bandwidth / bytes per step) nor the
compute roofline (peak / FLOP per token). A mixture-of-experts model's routed experts compute at a share of the
dense rate, fitted on the corpus's MoE serving runs (data/moe_efficiency.csv, :func:`time_flops`).

Prefill processes the prompt at 2 × active parameters FLOP per token (+ attention) over the achievable
dense throughput. Training: 6 × parameters FLOP per token for full training (Kaplan et al. 2020,
arXiv 2001.08361: 2N forward + 4N backward), 4 × parameters for LoRA/QLoRA (the frozen weights need no
weight gradient), over GPUs × dense peak × MFU; data-parallel gradient traffic over PCIe or NVLink.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from gpucost.catalog import Catalog, derived
from gpucost.errors import GpucostError, UnknownNameError
from gpucost.i18n import Message
from gpucost.kernel_paths import (
    CURRENT,
    Software,
    extra_weight_bytes,
    layer_equivalents,
    llamacpp_prompt_bytes,
    llamacpp_prompt_path,
)
from gpucost.memory import (
    KV_DTYPE_BYTES,
    _arrays,
    cpu_moe_share,
    kv_cache_bytes,
)
from gpucost.memory_profiles import ENGINE_PROFILES
from gpucost.models import ModelSpec, lora_trainable_params, weight_tensors
from gpucost.quant import QuantFormat, active_weight_fraction, weight_bytes
from gpucost.records import Gpu
from gpucost.serialize import Record
from gpucost.specs import DEFAULTS
from gpucost.units import SECONDS_PER_HOUR, TFLOPS

#: ring all-reduce sends 2 (N−1)/N of the message per GPU (Patarasuk & Yuan 2009; NCCL docs)
RING_FACTOR = 2
#: ZeRO-3 moves 1.5× the data of plain data parallelism (ZeRO paper arXiv 1910.02054, section 7.2:
#: 3Ψ instead of 2Ψ per step)
ZERO3_COMM_FACTOR = 1.5
#: the backward pass is 2/3 of a training step's FLOP (4N of 6N); data-parallel gradient all-reduce
#: overlaps with it (PyTorch DDP bucketing, Li et al. 2020, arXiv 2006.15704)
BACKWARD_SHARE = 2 / 3


@dataclass(frozen=True)
class EngineEfficiency(Record):
    """Calibrated factors of one engine (a row of data/engine_efficiency.csv)."""

    engine: str
    bw_efficiency: float
    layer_overhead_ms: float
    host_layer_ms: float
    compute_efficiency: float
    allreduce_latency_ms: float
    mfu: float
    calibration_rows: tuple[str, ...]
    source: str
    as_of: str
    notes: str
    borrowed_from: str = ""
    #: every step time × this factor: an engine on a backend its factors were not fitted on (vLLM, SGLang on ROCm),
    #: fitted on that backend's serving measurements (:func:`gpucost.validation.fit.fit_time_factors`); 1 elsewhere
    time_factor: float = 1.0
    #: a mixture-of-experts layer's routed experts compute at this share of the dense rate (compute_efficiency ×
    #: the card's peak): grouped GEMMs over a few tokens per expert, the tokens' routing and permutation, uneven
    #: load. Fitted on the corpus's MoE serving runs (data/moe_efficiency.csv, read in :func:`efficiency_table`); 1: dense
    moe_compute_share: float = 1.0
    #: what a served request waits before its first token beyond the step model's prefill and first step [ms]: the
    #: server's own work per request (HTTP, tokenizing, scheduling, an eagerly launched prefill, detokenizing), added
    #: to a serving TTFT only (the speed page's single-request TTFT and every step time leave it out). Fitted on the
    #: corpus's serving runs at concurrency 1 (:func:`gpucost.validation.fit.fit_request_latency`); 0: none fitted
    request_latency_ms: float = 0.0
    #: the engine whose fitted request latency that is ("" : none; another engine's where this one has no runs of its own)
    request_latency_from: str = ""


def _f(v, default=float("nan")) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return default
    return default if math.isnan(f) else f


def efficiency_table(catalog: Catalog | None = None) -> dict[str, EngineEfficiency]:
    """data/engine_efficiency.csv by engine; an engine with empty cells takes them from the row named in
    its ``fallback`` column (said in ``borrowed_from``)."""
    catalog = catalog or Catalog()
    return derived((catalog.table("engine_efficiency"), catalog.table("moe_efficiency")), "efficiency_table",
                   _efficiency_table)


def with_moe_share(table: dict[str, EngineEfficiency], share: float) -> dict[str, EngineEfficiency]:
    """``table`` with every key's routed experts at ``share`` of the dense compute rate."""
    return {k: replace(v, moe_compute_share=share) for k, v in table.items()}


def _efficiency_table(tables) -> dict[str, EngineEfficiency]:
    df, moe = tables
    share = float(moe.iloc[0]["moe_compute_share"]) if len(moe) else 1.0
    rows = {r["engine"]: r for r in df.to_dict(orient="records")}
    cols = ("bw_efficiency", "layer_overhead_ms", "host_layer_ms", "compute_efficiency", "allreduce_latency_ms", "mfu")

    def resolve(name: str, col: str, seen: tuple = ()) -> tuple[float, str]:
        """(value, engine it came from), following the ``fallback`` chain for empty cells."""
        r = rows[name]
        v = _f(r.get(col))
        fb = str(r.get("fallback") or "")
        if math.isnan(v) and fb in rows and fb not in seen:
            return resolve(fb, col, seen + (name,))
        return v, name

    out = {}
    for name, r in rows.items():
        vals, srcs, borrowed = {}, {}, []
        for col in cols + ("request_latency_ms",):
            vals[col], srcs[col] = resolve(name, col)
            if srcs[col] != name and not math.isnan(vals[col]):
                borrowed.append(f"{col} from {srcs[col]}")
        latency = vals.pop("request_latency_ms")
        out[name] = EngineEfficiency(
            engine=name, **vals, time_factor=_f(r.get("time_factor"), 1.0),
            request_latency_ms=0.0 if math.isnan(latency) else latency,
            request_latency_from="" if math.isnan(latency) else srcs["request_latency_ms"],
            calibration_rows=tuple(x.strip() for x in str(r.get("calibration_rows") or "").split(";") if x.strip()),
            source=str(r.get("source") or ""), as_of=str(r.get("as_of") or ""), notes=str(r.get("notes") or ""),
            borrowed_from=", ".join(borrowed), moe_compute_share=share)
    return out


#: engines that read only GGUF files: every quantized format they run is a ggml block type, decoded by the same
#: MMVQ / MMQ kernels (MXFP4 too: GGML_TYPE_MXFP4, 32 E2M1 values and one E8M0 scale per block, in ggml-cuda's
#: mmvq.cu and mmq.cu beside Q4_0 — kernel_paths._MMQ_TYPES)
GGML_ENGINES = ("llama.cpp",)


def kernel_family(fmt: QuantFormat, engine: str | None = None) -> str:
    """The kernel path a format decodes through (factors may differ per path): float, fp8, bnb-int8
    (bitsandbytes' int8 matmul), bnb-4bit, gptq, awq, gguf (in a GGML engine, every block-quantized format)."""
    fid = fmt.id.lower()
    if engine in GGML_ENGINES and fmt.family == "mx":
        return "gguf"
    if fid.startswith("bnb-int8"):
        return "bnb-int8"
    if fid.startswith("bnb-"):
        return "bnb-4bit"
    if fid.startswith("fp8"):
        return "fp8"
    for fam in ("gptq", "awq"):
        if fid.startswith(fam):
            return fam
    return "gguf" if fmt.is_gguf else ("float" if fmt.is_float else fmt.family)


def factor_keys(engine: str, fmt: QuantFormat | None = None, backend: str = "cuda") -> list[str]:
    """Rows of data/engine_efficiency.csv that may hold an engine's factors, most specific first:
    ``engine/backend/kernel``, ``engine/kernel``, ``engine/backend``, ``engine`` (CUDA is the default
    backend and the float path the default kernel)."""
    fam = kernel_family(fmt, engine) if fmt is not None else "float"
    keys = []
    if backend and backend != "cuda":
        keys += [f"{engine}/{backend}/{fam}"] if fam != "float" else []
    keys += [f"{engine}/{fam}"] if fam != "float" else []
    keys += [f"{engine}/{backend}"] if backend and backend != "cuda" else []
    return keys + [engine]


#: engines whose factors have a key of their own on HBM cards (``engine/hbm``, fitted where the corpus has rows
#: of both card classes): llama.cpp's CUDA kernels are developed and tuned on GeForce cards (the pull requests'
#: benchmark tables: RTX 3090/4090 and P40 in #4766, #6766, #7716, #15802) and the corpus finds it reaching a
#: smaller share of an HBM card's bandwidth (issue 25)
CARD_CLASS_ENGINES = ("llama.cpp",)
HBM_KEY = "hbm"


def key_backend(engine: str, backend: str, gpu: Gpu | None) -> str:
    """The backend part of ``engine``'s factor keys on ``gpu``: ``hbm`` for a card-class engine on CUDA with an
    HBM card, else ``backend``."""
    if engine in CARD_CLASS_ENGINES and backend == "cuda" and gpu is not None and gpu.has_hbm:
        return HBM_KEY
    return backend


#: the backend an engine uses on a vendor's cards unless told otherwise
VENDOR_BACKENDS = {"NVIDIA": "cuda", "AMD": "rocm", "Intel": "hpu", "Apple": "metal"}


def default_backend(gpu: Gpu) -> str:
    return VENDOR_BACKENDS.get(gpu.vendor, gpu.vendor.lower())


def engine_efficiency(engine: str, catalog: Catalog | None = None, fmt: QuantFormat | None = None,
                      backend: str = "cuda", table: dict[str, EngineEfficiency] | None = None) -> EngineEfficiency:
    """The factors of ``engine`` for ``fmt``'s kernel path on ``backend``: the most specific row of the
    table that exists (:func:`factor_keys`)."""
    table = table if table is not None else efficiency_table(catalog)
    for key in factor_keys(engine, fmt, backend):
        if key in table:
            eff = table[key]
            # a kernel key fitted on CUDA rows, used on a backend whose own key holds a time factor: its times × that
            timed = table.get(f"{engine}/{backend}")
            if timed is not None and timed.time_factor != 1.0 and f"/{backend}" not in key:
                eff = replace(eff, time_factor=timed.time_factor)
            return eff
    raise UnknownNameError("engine", engine, [k for k in table if k in ENGINE_PROFILES])


# --------------------------------------------------------------------------------------------------
# GPU figures
# --------------------------------------------------------------------------------------------------

def card_efficiency(engine: str, gpu: Gpu, fmt: QuantFormat | None = None, catalog: Catalog | None = None,
                    backend: str | None = None) -> EngineEfficiency:
    """:func:`engine_efficiency` of ``engine`` on ``gpu``: its ``backend`` (default: the card vendor's) and card class
    (:func:`key_backend`) — the factors speed(), a serving step and a serving plan all take."""
    return engine_efficiency(engine, catalog, fmt, key_backend(engine, backend or default_backend(gpu), gpu))


def peak_tflops(gpu: Gpu, fmt: QuantFormat, engine: str | None = None) -> float | None:
    """Dense tensor throughput [TFLOPS] a format computes at on this card: FP8 formats at FP8 where the card
    has FP8 tensor cores, weight-only formats dequantize to 16-bit, fp32 at fp32 (:meth:`Gpu.tflops`); an
    engine that accumulates FP16 math in FP16 (llama.cpp) gets a GeForce card's FP16-accumulate rate, and on a card
    whose FP16 is slower than its FP32 (the P40) it computes a quantized format's products on int8, the rest in
    FP32."""
    return _dtype_tflops(gpu, fmt.compute_dtype, engine, fmt.is_quantized)


def _dtype_tflops(gpu: Gpu, dtype: str, engine: str | None, quantized: bool = False) -> float | None:
    t = gpu.tflops(dtype)
    prof = ENGINE_PROFILES.get(engine or "")
    if t is None or prof is None or dtype not in ("fp16", "bf16"):
        return t
    fp32 = gpu.column("fp32") if prof.no_slow_fp16 else None
    if fp32 is not None and t < fp32:
        return max(fp32, (gpu.column("int8") if quantized else None) or 0.0)
    if prof.fp16_accumulate:
        t *= gpu.fp16_accumulate_factor
    return t


def attention_tflops(gpu: Gpu, fmt: QuantFormat, kv_dtype: str = "fp16", engine: str | None = None) -> float | None:
    """Dense throughput [TFLOPS] attention (QKᵀ and AV) computes at: on the query and the cache, never on the
    weights' format. A model whose products run in FP8 or FP4 attends in FP8 where its cache is FP8 (FP8 attention
    kernels: TensorRT-LLM's FP8 FMHA, FlashAttention-3's FP8 path) and at the 16-bit rate otherwise — an NVFP4
    model's FP4 rate is its weights' products', not attention's; any other format attends at its own rate."""
    dtype = fmt.compute_dtype
    if dtype in ("fp8", "fp4"):
        dtype = "fp8" if kv_dtype == "fp8" else "bf16"
    return _dtype_tflops(gpu, dtype, engine)


# --------------------------------------------------------------------------------------------------
# Records
# --------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SpeedEstimate(Record):
    """Inference speed of one model, format and card set."""

    model: str
    quant: str
    gpu: str
    gpus: int
    engine: str
    batch: int
    context: int
    parallel: str
    link: str
    decode_tokens_per_s: float            # [tokens/s] all sequences of the batch together
    decode_tokens_per_s_per_seq: float    # [tokens/s] one sequence
    prefill_tokens_per_s: float | None    # [tokens/s] a prompt of ``context`` tokens
    bound: str                            # memory-bandwidth | compute | host-overhead
    step_ms: float
    bytes_per_step: float                 # [bytes] per GPU
    flops_per_token: float
    bandwidth_roofline_tokens_per_s: float
    compute_roofline_tokens_per_s: float | None
    efficiency: dict
    notes: tuple[str, ...] = ()



# --------------------------------------------------------------------------------------------------
# Decode and prefill
# --------------------------------------------------------------------------------------------------

def _flops_per_token(spec: ModelSpec, context: float) -> float:
    """2 × active parameters (without the embedding table, a lookup) + attention 4 × layers × attended
    tokens × heads × head_dim (QKᵀ and AV, 2 FLOP per multiply-add)."""
    return _linear_flops_per_token(spec) + _attention_flops_per_token(spec, context)


def _linear_flops_per_token(spec: ModelSpec) -> float:
    """The matrix products over the weights: 2 × active parameters, without the embedding table (a lookup)."""
    if not spec.is_llm:
        return 2 * spec.params_active
    embed = spec.vocab_size * spec.hidden_size if not spec.tie_embeddings else 0
    return 2 * (spec.params_active - embed)


def _expert_flops_per_token(spec: ModelSpec) -> float:
    """The routed experts' share of :func:`_linear_flops_per_token`: 2 × the parameters of the k experts a token
    is routed to, in every MoE layer (0 for a dense model; shared experts compute as dense layers do)."""
    if not spec.is_moe:
        return 0.0
    routed = sum(g.total for g in weight_tensors(spec) if g.kind.endswith("_exps"))
    return 2 * routed * spec.experts_per_token / spec.num_experts


def time_flops(linear: float, experts: float, moe_share: float) -> float:
    """``linear`` FLOP, ``experts`` of them a MoE model's routed experts', as FLOP at the dense rate that take as
    long: the experts' products at ``moe_share`` of that rate (:attr:`EngineEfficiency.moe_compute_share`) count
    1 / moe_share times."""
    return linear + experts * (1.0 / moe_share - 1.0)


def _linear_time_flops(spec: ModelSpec, moe_share: float) -> float:
    """:func:`time_flops` of one token's matrix products over the weights."""
    return time_flops(_linear_flops_per_token(spec), _expert_flops_per_token(spec), moe_share)


def _attention_flops_per_token(spec: ModelSpec, context: float) -> float:
    """Attention over ``context`` earlier tokens: 4 × layers × attended tokens × heads × head_dim (QKᵀ and AV)."""
    if not spec.is_llm:
        return 0.0
    n_swa = spec.sliding_window_layers if spec.sliding_window else 0
    # a hybrid's linear-attention layers attend to no past tokens: their state update is in the parameters
    attended = (len(spec.attention_layers) - n_swa) * context + n_swa * min(context, spec.sliding_window or context)
    qk = spec.num_attention_heads * (spec.qk_nope_head_dim + spec.qk_rope_head_dim if spec.is_mla else spec.head_dim)
    return 4 * attended * qk


def _weights_read(spec: ModelSpec, fmt: QuantFormat, tokens: float) -> float:
    """Weight bytes one forward pass over ``tokens`` tokens reads, whole model (before any split): every weight
    but the embedding table (a lookup); of a mixture-of-experts layer's routed experts only those the tokens
    touch (:func:`gpucost.quant.active_weight_fraction`: 1 − (1 − k/E)^tokens of them)."""
    wb = weight_bytes(spec, fmt)
    experts = wb.expert_blocks * float(active_weight_fraction(spec, tokens)) if spec.is_moe else 0.0
    weights = (wb.blocks - wb.expert_blocks) + experts + wb.output + wb.vectors
    if spec.tie_embeddings:
        weights += wb.embed  # the output head is the embedding matrix, read whole every step
    return weights


def _kv_read(spec: ModelSpec, fmt: QuantFormat, batch: float, context: float, engine: str, kv_dtype: str) -> float:
    """KV-cache bytes a decode step of ``batch`` sequences at ``context`` tokens moves, whole model: the cache
    times the engine's passes over it (``EngineProfile.kv_passes``: transformers copies it each step), and a hybrid
    model's recurrent state once (updated in place)."""
    prof = ENGINE_PROFILES[engine]
    return float(kv_cache_bytes(_arrays(((spec, fmt),)), context, batch, KV_DTYPE_BYTES[kv_dtype], prof,
                                cache_passes=prof.kv_passes)[0])


def _decode_bytes(spec: ModelSpec, fmt: QuantFormat, batch: float, context: float, engine: str,
                  kv_dtype: str, software: Software = CURRENT) -> tuple[float, float]:
    """(weight bytes read, KV bytes read) per decode step, whole model (before any split); the weights
    include what the engine's kernel path moves beyond one read (:func:`gpucost.kernel_paths.extra_weight_bytes`)."""
    return (_weights_read(spec, fmt, batch) + extra_weight_bytes(spec, fmt, engine, batch, software),
            _kv_read(spec, fmt, batch, context, engine, kv_dtype))


#: dual-channel DDR5-5600, a current desktop's host memory: 5600 MT/s × 8 bytes per 64-bit channel × 2
#: channels (JEDEC JESD79-5 transfer rate and channel width) = 89.6 GB/s, the peak the CPU's expert
#: matmuls are bounded by (a server with more channels: pass its own figure)
DEFAULT_HOST_BW_GBPS = 89.6
#: llama.cpp's default physical batch (-ub 512): a long prompt is processed this many tokens at a time
LLAMACPP_UBATCH = 512


def cpu_expert_times(spec: ModelSpec, fmt: QuantFormat, gpu: Gpu, batch: int, engine: str, cpu_moe: int,
                     host_bw_gbps: float | None) -> tuple[float, float, float]:
    """llama.cpp ``--n-cpu-moe N`` keeps the expert tensors of the first N layers in host RAM: per decode
    step the CPU reads the experts the batch's tokens use in those layers (bytes, seconds at the host's
    memory bandwidth — a lower bound: CPU matmuls reach only part of it), and for a prompt every physical
    batch copies those layers' experts over PCIe to the card (llama.cpp runs large batches on the GPU)
    (seconds per 512-token batch). (0, 0, 0) without it."""
    if not cpu_moe:
        return 0.0, 0.0, 0.0
    if engine != "llama.cpp" or not spec.is_moe:
        raise GpucostError("keeping experts in CPU RAM (--cpu-moe) is a llama.cpp option for MoE models")
    share = float(cpu_moe_share(_arrays(((spec, fmt),)), cpu_moe)[0])
    experts = weight_bytes(spec, fmt).expert_blocks * share
    read = experts * float(active_weight_fraction(spec, batch))
    host = host_bw_gbps or DEFAULT_HOST_BW_GBPS
    return read, read / (host * 1e9), experts / (gpu.link("pcie")[1] * 1e9)


def overhead_layers(spec: ModelSpec, engine: str, fmt: QuantFormat | None = None, tokens: float = 1,
                    software: Software = CURRENT) -> float:
    """Layers' worth of fixed per-layer time (kernel launches, host work) a forward of ``tokens`` tokens
    pays: the layers, and for transformers the operators its code calls on ``fmt``'s kernel path — quantized
    Linears, a Python loop over experts — in units of a dense layer (:func:`gpucost.kernel_paths.layer_equivalents`);
    the other engines fuse the experts into one kernel."""
    if fmt is None:
        return float(spec.num_layers)
    return layer_equivalents(spec, fmt, engine, tokens, software)


@dataclass(frozen=True)
class PromptTerms:
    """What a prompt costs one copy of the model (before any split): its FLOPs, the weight bytes it reads, the
    layers' worth of fixed time it pays, the tensor rate its products run at [TFLOPS] (None: no figure), the
    forward passes it takes, llama.cpp's kernel path (:func:`gpucost.kernel_paths.llamacpp_prompt_path`) and the
    tokens of all its prompts; ``flops`` are the products over the weights, ``attn_flops`` attention's, at
    ``attn_peak`` (:func:`attention_tflops`)."""

    flops: float
    weight_bytes: float
    layers: float
    peak: float | None
    passes: int
    path: str
    tokens: float
    attn_flops: float = 0.0
    attn_peak: float | None = None

    def compute_seconds(self, flops_per_tflops: float) -> float:
        """Seconds of the prompt's products and attention at ``flops_per_tflops`` FLOP/s per TFLOPS of rate (the
        compute efficiency × 1e12 × the cards sharing it)."""
        peak = self.peak or math.inf   # no figure: no compute time (speed() gives no prefill then)
        return (self.flops / peak + self.attn_flops / (self.attn_peak or peak)) / flops_per_tflops


def prompt_terms(spec: ModelSpec, fmt: QuantFormat, gpu: Gpu, *, prompt: float, engine: str, backend: str = "cuda",
                 software: Software = CURRENT, batch: int = 1, moe_share: float = 1.0,
                 kv_dtype: str = "fp16") -> PromptTerms:
    """The terms of a prompt of ``prompt`` tokens (attention over half of it on average). llama.cpp processes a
    prompt in physical batches of :data:`LLAMACPP_UBATCH` tokens: each reads the weights (on the BLAS path also
    their dequantized copy) and pays the per-layer time. Every path's products are taken at the 16-bit tensor
    rate (:func:`peak_tflops`): mul_mat_q runs on int8 tensor cores but, with its activations' quantization
    and block scales, about at FP16 cuBLAS's speed (PR #7676: "still slower than FP16 cuBLAS but faster for
    end-to-end performance because it needs less data conversion"; fitting it at the int8 rate judged worse on
    documents held out, 31 % against 27 %). Other engines: one forward of the whole prompt; a transformers
    kernel path's bytes and operators as for a forward of that many rows. ``batch`` prompts of that length
    prefilled together are one forward over all their tokens (the weights read and the per-layer time once), each
    prompt's attention over its own tokens. ``flops`` counts a mixture-of-experts model's routed experts at
    ``moe_share`` of the dense rate (:func:`_linear_time_flops`)."""
    prompt = max(float(prompt), 1.0)
    tokens = prompt * max(int(batch), 1)
    passes = math.ceil(tokens / LLAMACPP_UBATCH) if engine == "llama.cpp" else 1
    rows = tokens / passes
    weights = _weights_read(spec, fmt, rows) + extra_weight_bytes(spec, fmt, engine, rows, software)
    path = ""
    if engine == "llama.cpp":
        weights += llamacpp_prompt_bytes(spec, fmt, rows, gpu, backend, software)
        path = llamacpp_prompt_path(fmt, rows, gpu, backend, software)
    return PromptTerms(flops=_linear_time_flops(spec, moe_share) * tokens, weight_bytes=passes * weights,
                       layers=passes * overhead_layers(spec, engine, fmt, rows, software),
                       peak=peak_tflops(gpu, fmt, engine), passes=passes, path=path, tokens=tokens,
                       attn_flops=_attention_flops_per_token(spec, prompt / 2) * tokens,
                       attn_peak=attention_tflops(gpu, fmt, kv_dtype, engine))


def roofline_seconds(weight_bytes_, kv_bytes, linear_flops, attention_flops, bytes_per_s, flops_per_s,
                     attn_flops_per_s=None):
    """(memory-bound time, compute-bound time) [s] of one forward step on the roofline, kernel by kernel: the matrix
    products over the weights (their bytes read, every token's products computed) and attention over the KV cache
    (its bytes read, QKᵀ and AV computed) are separate kernels that run one after the other, each bound by memory or
    by compute on its own — max(W / B, F_lin / P) + max(KV / B, F_attn / P). Their sum is the step's roofline time; a
    single max over all bytes and all FLOP would let a large batch's compute-bound products hide the cache's read.
    Attention computes at ``attn_flops_per_s`` (:func:`attention_tflops`; None: ``flops_per_s``). Arrays broadcast
    together."""
    w = np.asarray(weight_bytes_, dtype=float) / bytes_per_s
    lin = np.asarray(linear_flops, dtype=float) / flops_per_s
    kv = np.asarray(kv_bytes, dtype=float) / bytes_per_s
    att = np.asarray(attention_flops, dtype=float) / (flops_per_s if attn_flops_per_s is None else attn_flops_per_s)
    memory = np.where(w >= lin, w, 0.0) + np.where(kv >= att, kv, 0.0)
    compute = np.where(w >= lin, 0.0, lin) + np.where(kv >= att, 0.0, att)
    return memory, compute


def decode_step(weight_bytes_gpu, kv_bytes_gpu, linear_flops_gpu, attention_flops_gpu, layers, bw_gbps, peak_tflops_,
                eff: EngineEfficiency, comm_s=0.0, attn_tflops=None):
    """(step time [s], which term bounds it) for arrays broadcast together (see module docstring); attention at
    ``attn_tflops`` (:func:`attention_tflops`; None: ``peak_tflops_``)."""
    bytes_per_s = np.asarray(bw_gbps, dtype=float) * 1e9 * eff.bw_efficiency

    def rate(tflops):
        return np.inf if tflops is None else np.asarray(tflops, dtype=float) * 1e12 * eff.compute_efficiency
    t_bw, t_c = roofline_seconds(weight_bytes_gpu, kv_bytes_gpu, linear_flops_gpu, attention_flops_gpu, bytes_per_s,
                                 rate(peak_tflops_), rate(peak_tflops_ if attn_tflops is None else attn_tflops))
    t_fixed = np.asarray(layers, dtype=float) * eff.layer_overhead_ms / 1e3
    t_gpu = t_bw + t_c + t_fixed + comm_s
    t_host = np.asarray(layers, dtype=float) * eff.host_layer_ms / 1e3
    t = np.maximum(t_gpu, t_host) * eff.time_factor
    # the per-layer fixed time (kernel launches, host work) bounds a step when it exceeds the roofline time
    overhead = (t_host >= t_gpu) | (t_fixed > t_bw + t_c)
    bound = np.where(overhead, "host-overhead", np.where(t_c > t_bw, "compute", "memory-bandwidth"))
    return t, bound


def _tensor_parallel_step(spec: ModelSpec, w_bytes: float, kv_bytes: float, linear_flops: float,
                          attention_flops: float, tokens: float, gpus: int, layers: float, bw_gbps: float,
                          peak: float | None, eff: EngineEfficiency, link_bw: float,
                          attn_peak: float | None = None) -> tuple[float, str]:
    """(time [s], bound) of one forward step split over ``gpus`` tensor-parallel cards: each reads its share of
    the weights and of the KV heads (all of an MLA latent, which every rank keeps) and computes its share of the
    FLOP; two all-reduces per layer of one 16-bit hidden vector per token (ring: 2 (N − 1)/N of it per card)."""
    shard = 1.0 / gpus
    kv_shard = 1.0 if spec.is_mla else max(spec.num_kv_heads / gpus, 1.0) / spec.num_kv_heads
    msg = tokens * spec.hidden_size * 2.0
    lat = eff.allreduce_latency_ms / 1e3
    comm = 0.0 if gpus == 1 else 2 * layers * (lat + RING_FACTOR * (gpus - 1) / gpus * msg / (link_bw * 1e9))
    t, bound = decode_step(w_bytes * shard, kv_bytes * kv_shard, linear_flops * shard, attention_flops * shard, layers,
                           bw_gbps, peak, eff, comm, attn_peak)
    return float(t), str(bound)


def _check_speed_inputs(spec: ModelSpec, gpu: Gpu, gpus, batch, context, engine: str, parallel: str | None) -> str:
    """Refuse what :func:`speed` cannot answer (one line each); returns the parallel mode to use."""
    if engine not in ENGINE_PROFILES:
        raise UnknownNameError("engine", engine, ENGINE_PROFILES)
    for name, v in (("GPU count", gpus), ("batch", batch), ("context", context)):
        if not isinstance(v, (int, np.integer)) or v < 1:
            raise GpucostError(f"{name} must be a whole number >= 1, not {v}")
    if not spec.is_llm:
        raise GpucostError(f"{spec.id} is a diffusion model: tokens/s does not apply")
    parallel = parallel or ENGINE_PROFILES[engine].parallel
    if parallel not in ("tensor", "layer"):
        raise UnknownNameError("parallel mode", parallel, ("tensor", "layer"))
    if parallel == "tensor" and gpus > 1 and spec.num_attention_heads % gpus:
        raise GpucostError(f"tensor parallel over {gpus} GPUs needs the {spec.num_attention_heads} attention "
                           "heads to divide evenly")
    if not gpu.mem_bandwidth_gbps > 0:
        raise GpucostError(f"{gpu.id} has no published memory-bandwidth figure in gpus.csv: its speed cannot be "
                           "estimated (see the row's notes)")
    return parallel


def _speed_notes(gpu: Gpu, fmt: QuantFormat, engine: str, backend: str, eff: EngineEfficiency,
                 peak: float | None, uncalibrated: bool) -> list[str]:
    notes: list[str] = []
    if peak is None:
        notes.append(Message("sp_note_no_peak", gpu=gpu.id, dtype=fmt.compute_dtype))
    if eff.borrowed_from and eff.time_factor == 1.0:   # a time-factor key's factors are its engine's (said below)
        notes.append(Message("sp_note_borrowed", engine=engine, borrowed=eff.borrowed_from))
    if eff.time_factor != 1.0:
        notes.append(Message("sp_note_time_factor", engine=engine, backend=backend, vendor=gpu.vendor,
                             k=f"{eff.time_factor:.2f}"))
    if uncalibrated:
        notes.append(Message("sp_note_uncalibrated", engine=engine, backend=backend, vendor=gpu.vendor))
    return notes


def speed(spec: ModelSpec, fmt: QuantFormat, gpu: Gpu, *, gpus: int = DEFAULTS.gpus, batch: int = DEFAULTS.batch,
          context: int = DEFAULTS.context, engine: str = DEFAULTS.engine, kv_dtype: str = "fp16",
          parallel: str | None = None, link: str = "auto", catalog: Catalog | None = None,
          eff: EngineEfficiency | None = None, backend: str | None = None, cpu_moe: int = 0,
          host_bw_gbps: float | None = None, software: Software | None = None,
          prefill_batch: int = 1) -> SpeedEstimate:
    """Decode and prefill speed of ``spec`` in ``fmt`` on ``gpus`` cards ``gpu`` (``backend``: cuda, rocm,
    vulkan, metal… — llama.cpp's factors differ per backend; default: the card vendor's, :func:`default_backend`).
    ``cpu_moe``: llama.cpp ``--n-cpu-moe`` (:func:`cpu_expert_times`), with the host's memory bandwidth.
    ``software``: the library versions whose code paths apply (:class:`gpucost.kernel_paths.Software`;
    default the current releases). ``prefill_batch``: prompts of ``context`` tokens prefilled in one forward pass;
    ``prefill_tokens_per_s`` is then their tokens together per second."""
    software = software or CURRENT
    parallel = _check_speed_inputs(spec, gpu, gpus, batch, context, engine, parallel)
    backend = backend or default_backend(gpu)
    uncalibrated = eff is None and backend != "cuda" and not any(
        f"/{backend}" in k for k in factor_keys(engine, fmt, backend) if k in efficiency_table(catalog))
    eff = eff or card_efficiency(engine, gpu, fmt, catalog, backend)
    bw = gpu.mem_bandwidth_gbps
    peak, attn_peak = peak_tflops(gpu, fmt, engine), attention_tflops(gpu, fmt, kv_dtype, engine)
    notes = _speed_notes(gpu, fmt, engine, backend, eff, peak, uncalibrated)
    if spec.is_moe and eff.moe_compute_share != 1.0:
        notes.append(Message("sp_note_moe_share", share=f"{eff.moe_compute_share:.2f}"))
    w_bytes, kv_bytes = _decode_bytes(spec, fmt, batch, context, engine, kv_dtype, software)
    cpu_read, t_cpu, t_copy = cpu_expert_times(spec, fmt, gpu, batch, engine, cpu_moe, host_bw_gbps)
    w_bytes -= cpu_read   # read from host RAM by the CPU, not from the card's memory
    if cpu_moe:
        notes.append(f"--n-cpu-moe {cpu_moe}: the CPU reads {cpu_read / 2**30:.2f} GiB of experts per step at "
                     f"{host_bw_gbps or DEFAULT_HOST_BW_GBPS:g} GB/s of host memory bandwidth (an upper bound on "
                     "speed: published runs measured about half of it, README error table 'llama.cpp --n-cpu-moe'); "
                     "each 512-token prompt batch copies those layers' experts to the card over PCIe")
    flops_tok, attn_tok = _flops_per_token(spec, context), _attention_flops_per_token(spec, context)
    lin_time = _linear_time_flops(spec, eff.moe_compute_share)   # the routed experts at their share of the rate
    L = overhead_layers(spec, engine, fmt, batch, software)
    link_name, link_bw = gpu.link(link) if gpus > 1 else ("none", float("inf"))
    msg = batch * spec.hidden_size * 2.0  # one 16-bit hidden vector per sequence
    lat = eff.allreduce_latency_ms / 1e3
    if parallel == "tensor":
        t, bound = _tensor_parallel_step(spec, w_bytes, kv_bytes, batch * lin_time, batch * attn_tok,
                                         batch, gpus, L, bw, peak, eff, link_bw, attn_peak)
    else:  # layer split: the stages run one after another for a single step
        hop = 0.0 if gpus == 1 else (gpus - 1) * (lat + msg / (link_bw * 1e9))
        t_stage, bound = decode_step(w_bytes / gpus, kv_bytes / gpus, batch * lin_time / gpus,
                                     batch * attn_tok / gpus, L / gpus, bw, peak, eff, 0.0, attn_peak)
        t = t_stage * gpus + hop
    t = float(t) + t_cpu   # the CPU's expert layers and the GPU's layers take turns within a step
    tps = batch / t
    bw_roof = batch * bw * 1e9 / ((w_bytes + kv_bytes) / (gpus if parallel == "tensor" else 1))
    c_roof = None if peak is None else peak * 1e12 * (gpus if parallel == "tensor" else 1) / flops_tok
    # prefill: a prompt of ``context`` tokens (prompt_terms: its passes, bytes and kernel path)
    prefill = None
    if peak is not None:
        pt = prompt_terms(spec, fmt, gpu, prompt=context, engine=engine, backend=backend, software=software,
                          batch=prefill_batch, moe_share=eff.moe_compute_share, kv_dtype=kv_dtype)
        tokens = pt.tokens
        n_par = gpus if parallel == "tensor" else 1
        # the prompt's tokens touch more of a mixture-of-experts model's experts than one decode token does; those
        # in host RAM (--n-cpu-moe) are copied over instead, every physical batch (t_copy)
        w_pre = pt.weight_bytes
        if cpu_moe:
            resident = weight_bytes(spec, fmt).expert_blocks * float(cpu_moe_share(_arrays(((spec, fmt),)), cpu_moe)[0])
            w_pre -= pt.passes * resident * float(active_weight_fraction(spec, tokens / pt.passes))
        t_pre = (pt.compute_seconds(1e12 * eff.compute_efficiency * n_par)
                 + (w_pre / n_par) / (bw * 1e9 * eff.bw_efficiency)
                 + pt.layers * eff.layer_overhead_ms / 1e3) * eff.time_factor \
            + math.ceil(tokens / LLAMACPP_UBATCH) * t_copy
        prefill = tokens / t_pre
    return SpeedEstimate(
        model=spec.id, quant=fmt.id, gpu=gpu.id, gpus=gpus, engine=engine, batch=batch, context=context,
        parallel=parallel, link=link_name, decode_tokens_per_s=tps, decode_tokens_per_s_per_seq=tps / batch,
        prefill_tokens_per_s=prefill, bound=str(bound), step_ms=t * 1e3,
        bytes_per_step=float((w_bytes + kv_bytes) / (gpus if parallel == "tensor" else 1)), flops_per_token=flops_tok,
        bandwidth_roofline_tokens_per_s=bw_roof, compute_roofline_tokens_per_s=c_roof,
        efficiency={"engine": eff.engine, "bw_efficiency": eff.bw_efficiency,
                    "layer_overhead_ms": eff.layer_overhead_ms, "host_layer_ms": eff.host_layer_ms,
                    "compute_efficiency": eff.compute_efficiency, "source": eff.source,
                    "calibration_rows": list(eff.calibration_rows)},
        notes=tuple(notes))


def prefill_speed(spec: ModelSpec, fmt: QuantFormat, gpu: Gpu, *, prompt: int, gpus: int = 1,
                  engine: str = "llama.cpp", parallel: str | None = None, catalog: Catalog | None = None,
                  eff: EngineEfficiency | None = None) -> float | None:
    """Prompt processing [tokens/s] for a prompt of ``prompt`` tokens."""
    return speed(spec, fmt, gpu, gpus=gpus, batch=1, context=prompt, engine=engine, parallel=parallel,
                 catalog=catalog, eff=eff).prefill_tokens_per_s


def decode_speed_cards(spec: ModelSpec, fmt: QuantFormat, cards: Sequence[Gpu], counts, *, batch: int = 1,
                       context: int = DEFAULTS.context, engine: str = DEFAULTS.engine,
                       catalog: Catalog | None = None, cpu_moe: int = 0,
                       host_bw_gbps: float | None = None) -> np.ndarray:
    """Decode tokens/s (whole batch) on every card of ``cards`` with ``counts[i]`` cards each (tensor
    parallel for vLLM/TensorRT-LLM, layer split otherwise); NaN where the count is missing. Vectorized per
    backend (each card vendor's, as :func:`speed`), with :func:`speed`'s ``cpu_moe`` expert reads on the CPU."""
    prof = ENGINE_PROFILES[engine]
    n = np.asarray(counts, dtype=float)
    ok = np.isfinite(n) & (n >= 1)
    n = np.where(ok, n, 1.0)
    w_bytes, kv_bytes = _decode_bytes(spec, fmt, batch, context, engine, "fp16")
    t_cpu = 0.0
    if cpu_moe and len(cards):
        cpu_read, t_cpu, _copy = cpu_expert_times(spec, fmt, cards[0], batch, engine, cpu_moe, host_bw_gbps)
        w_bytes -= cpu_read
    attn = batch * _attention_flops_per_token(spec, context)
    bw = np.array([g.mem_bandwidth_gbps for g in cards], dtype=float)
    peak = np.array([peak_tflops(g, fmt, engine) or np.inf for g in cards], dtype=float)
    attn_peak = np.array([attention_tflops(g, fmt, "fp16", engine) or np.inf for g in cards], dtype=float)
    L = overhead_layers(spec, engine, fmt, batch)
    links = np.array([g.link()[1] for g in cards], dtype=float)
    msg = batch * spec.hidden_size * 2.0
    backends = np.array([key_backend(engine, default_backend(g), g) for g in cards])
    t = np.full(len(cards), np.nan)
    for be in set(backends.tolist()):
        m = backends == be
        eff = engine_efficiency(engine, catalog, fmt, be)
        lat = eff.allreduce_latency_ms / 1e3
        lin = batch * _linear_time_flops(spec, eff.moe_compute_share)
        nm = n[m]
        if prof.parallel == "tensor":
            kv_shard = 1.0 if spec.is_mla else np.maximum(spec.num_kv_heads / nm, 1.0) / spec.num_kv_heads
            comm = np.where(nm > 1, 2 * L * (lat + RING_FACTOR * (nm - 1) / nm * msg / (links[m] * 1e9)), 0.0)
            t[m], _ = decode_step(w_bytes / nm, kv_bytes * kv_shard, lin / nm, attn / nm, L, bw[m], peak[m], eff, comm,
                                  attn_peak[m])
        else:
            t_stage, _ = decode_step(w_bytes / nm, kv_bytes / nm, lin / nm, attn / nm, L / nm, bw[m], peak[m], eff, 0.0,
                                     attn_peak[m])
            t[m] = t_stage * nm + np.where(nm > 1, (nm - 1) * (lat + msg / (links[m] * 1e9)), 0.0)
    return np.where(ok, batch / (t + t_cpu), np.nan)


# --------------------------------------------------------------------------------------------------
# Training
# --------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TrainingEstimate(Record):
    model: str
    mode: str
    gpu: str
    gpus: int
    tokens: float
    tokens_per_s: float
    hours: float
    mfu: float
    flops_per_token: float
    scaling_efficiency: float   # compute time / step time (1 = communication fully hidden)
    link: str
    cost: float | None
    currency: str
    cost_basis: str



def training_flops_per_token(spec: ModelSpec, mode: str, seq: int) -> float:
    """6N (full) or 4N (LoRA/QLoRA: no weight gradients for the frozen base) + the attention term of the
    PaLM paper's MFU definition (arXiv 2204.02311, appendix B: 6N + 12·L·H·Q·T, T = sequence length),
    scaled alike (full 12, LoRA 8)."""
    if not spec.is_llm:
        raise GpucostError(f"{spec.id}: training estimates cover language models only")
    n = spec.params_active - (spec.vocab_size * spec.hidden_size if not spec.tie_embeddings else 0)
    mult = 6 if mode == "full" else 4
    qk = spec.num_attention_heads * spec.head_dim
    return mult * n + 2 * mult * spec.num_layers * qk * seq


def training_time(spec: ModelSpec, gpu: Gpu, *, mode: str = "full", tokens: float = DEFAULTS.train_tokens,
                  gpus: int = 1, seq: int = DEFAULTS.context, micro_batch: int = 1, zero: int = 0,
                  mfu: float | None = None, link: str = "auto", precision: str | None = None,
                  hourly_price: float | None = None, lora_rank: int = DEFAULTS.lora_rank, currency: str = "USD",
                  catalog: Catalog | None = None) -> TrainingEstimate:
    """Time [hours] and cost to train on ``tokens`` tokens: FLOP = tokens × FLOP/token over
    GPUs × dense peak × MFU, plus the data-parallel gradient traffic that the backward pass cannot hide.
    ``precision``: the training math (default the card's :attr:`Gpu.training_precision`)."""
    from gpucost.economics import job_cost

    if not (tokens > 0 and math.isfinite(tokens)) or gpus < 1:
        raise GpucostError("tokens and GPU count must be positive")
    if mode not in ("full", "lora", "qlora"):
        raise UnknownNameError("training mode", mode, ("full", "lora", "qlora"))
    eff = engine_efficiency("training", catalog)
    mfu = eff.mfu if mfu is None else mfu
    if not (0 < mfu <= 1):
        raise GpucostError(f"MFU must be in (0, 1], not {mfu}")
    peak = gpu.tflops(precision) if precision else gpu.training_tflops
    if peak is None:
        raise GpucostError(f"{gpu.id} has no dense BF16/FP16 figure in the catalog")
    fpt = training_flops_per_token(spec, mode, seq)
    step_tokens = gpus * micro_batch * seq
    t_compute = step_tokens * fpt / (gpus * peak * TFLOPS * mfu)
    link_name, bw = gpu.link(link) if gpus > 1 else ("none", float("inf"))
    trainable = spec.params_total if mode == "full" else lora_trainable_params(spec, lora_rank)
    grad_bytes = trainable * 2  # 16-bit gradients all-reduced each step
    comm = 0.0
    if gpus > 1:
        comm = RING_FACTOR * (gpus - 1) / gpus * grad_bytes / (bw * 1e9)
        if zero >= 3:
            comm *= ZERO3_COMM_FACTOR
    exposed = max(0.0, comm - BACKWARD_SHARE * t_compute)
    t_step = t_compute + exposed
    tps = step_tokens / t_step
    hours = tokens / tps / SECONDS_PER_HOUR
    cost = None if hourly_price is None else float(job_cost(hours * gpus, hourly_price))
    return TrainingEstimate(model=spec.id, mode=mode, gpu=gpu.id, gpus=gpus, tokens=tokens,
                            tokens_per_s=tps, hours=hours, mfu=mfu, flops_per_token=fpt,
                            scaling_efficiency=t_compute / t_step, link=link_name, cost=cost, currency=currency,
                            cost_basis="cloud per GPU-hour" if hourly_price is not None else "")

