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
    STATE_BYTES,
    STATE_BYTES_DEFAULT,
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
    #: load. Fitted on the corpus's MoE serving runs (data/moe_efficiency.csv, :func:`moe_compute_share`); 1: dense
    moe_compute_share: float = 1.0



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


def moe_compute_share(catalog: Catalog | None = None) -> float:
    """The share of the dense compute rate a mixture-of-experts model's routed experts reach
    (data/moe_efficiency.csv: fitted on the corpus's serving runs of MoE models; 1 where the file has no row)."""
    catalog = catalog or Catalog()
    t = catalog.table("moe_efficiency")
    return float(t.iloc[0]["moe_compute_share"]) if len(t) else 1.0


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
        vals, borrowed = {}, []
        for col in cols:
            vals[col], src = resolve(name, col)
            if src != name and not math.isnan(vals[col]):
                borrowed.append(f"{col} from {src}")
        out[name] = EngineEfficiency(
            engine=name, **vals, time_factor=_f(r.get("time_factor"), 1.0),
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
    engine that accumulates FP16 math in FP16 (llama.cpp) gets a GeForce card's FP16-accumulate rate."""
    t = gpu.tflops(fmt.compute_dtype)
    prof = ENGINE_PROFILES.get(engine or "")
    if t is not None and prof is not None and prof.fp16_accumulate and fmt.compute_dtype in ("fp16", "bf16"):
        t *= gpu.fp16_accumulate_factor
    return t


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
    tokens of all its prompts."""

    flops: float
    weight_bytes: float
    layers: float
    peak: float | None
    passes: int
    path: str
    tokens: float


def prompt_terms(spec: ModelSpec, fmt: QuantFormat, gpu: Gpu, *, prompt: float, engine: str, backend: str = "cuda",
                 software: Software = CURRENT, batch: int = 1, moe_share: float = 1.0) -> PromptTerms:
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
    flops = _linear_time_flops(spec, moe_share) + _attention_flops_per_token(spec, prompt / 2)
    return PromptTerms(flops=flops * tokens, weight_bytes=passes * weights,
                       layers=passes * overhead_layers(spec, engine, fmt, rows, software),
                       peak=peak_tflops(gpu, fmt, engine), passes=passes, path=path, tokens=tokens)


def roofline_seconds(weight_bytes_, kv_bytes, linear_flops, attention_flops, bytes_per_s, flops_per_s):
    """(memory-bound time, compute-bound time) [s] of one forward step on the roofline, kernel by kernel: the matrix
    products over the weights (their bytes read, every token's products computed) and attention over the KV cache
    (its bytes read, QKᵀ and AV computed) are separate kernels that run one after the other, each bound by memory or
    by compute on its own — max(W / B, F_lin / P) + max(KV / B, F_attn / P). Their sum is the step's roofline time; a
    single max over all bytes and all FLOP would let a large batch's compute-bound products hide the cache's read.
    Arrays broadcast together."""
    w = np.asarray(weight_bytes_, dtype=float) / bytes_per_s
    lin = np.asarray(linear_flops, dtype=float) / flops_per_s
    kv = np.asarray(kv_bytes, dtype=float) / bytes_per_s
    att = np.asarray(attention_flops, dtype=float) / flops_per_s
    memory = np.where(w >= lin, w, 0.0) + np.where(kv >= att, kv, 0.0)
    compute = np.where(w >= lin, 0.0, lin) + np.where(kv >= att, 0.0, att)
    return memory, compute


def decode_step(weight_bytes_gpu, kv_bytes_gpu, linear_flops_gpu, attention_flops_gpu, layers, bw_gbps, peak_tflops_,
                eff: EngineEfficiency, comm_s=0.0):
    """(step time [s], which term bounds it) for arrays broadcast together (see module docstring)."""
    bytes_per_s = np.asarray(bw_gbps, dtype=float) * 1e9 * eff.bw_efficiency
    flops_per_s = np.inf if peak_tflops_ is None else np.asarray(peak_tflops_, dtype=float) * 1e12 * eff.compute_efficiency
    t_bw, t_c = roofline_seconds(weight_bytes_gpu, kv_bytes_gpu, linear_flops_gpu, attention_flops_gpu, bytes_per_s,
                                 flops_per_s)
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
                          peak: float | None, eff: EngineEfficiency, link_bw: float) -> tuple[float, str]:
    """(time [s], bound) of one forward step split over ``gpus`` tensor-parallel cards: each reads its share of
    the weights and of the KV heads (all of an MLA latent, which every rank keeps) and computes its share of the
    FLOP; two all-reduces per layer of one 16-bit hidden vector per token (ring: 2 (N − 1)/N of it per card)."""
    shard = 1.0 / gpus
    kv_shard = 1.0 if spec.is_mla else max(spec.num_kv_heads / gpus, 1.0) / spec.num_kv_heads
    msg = tokens * spec.hidden_size * 2.0
    lat = eff.allreduce_latency_ms / 1e3
    comm = 0.0 if gpus == 1 else 2 * layers * (lat + RING_FACTOR * (gpus - 1) / gpus * msg / (link_bw * 1e9))
    t, bound = decode_step(w_bytes * shard, kv_bytes * kv_shard, linear_flops * shard, attention_flops * shard, layers,
                           bw_gbps, peak, eff, comm)
    return float(t), str(bound)


@dataclass(frozen=True)
class StepCost:
    """The terms of one continuous-batching step (:func:`step_seconds`) for one model, format, card set and
    engine, worked out once so that a replayed benchmark (:mod:`gpucost.replay`) can price thousands of steps:
    the same quantities as :func:`speed`'s tensor-parallel decode step (``tests/test_serving_step.py`` holds
    them equal), as plain numbers."""

    dense_bytes: float        # weights every step reads (all but the embedding table and the routed experts)
    expert_bytes: float       # the routed experts' weights (MoE), read as far as the step's tokens touch them
    route_share: float        # k / E: the share of the experts one token is routed to (0: dense)
    kv_full: float            # KV bytes per token of context in full-attention layers, per sequence
    kv_window: float          # … in sliding-window layers, up to ``window`` tokens
    window: float             # the KV cache's window (inf: none, or the engine caches every token)
    kv_state: float           # a hybrid model's fixed recurrent state per sequence [bytes]
    flops_linear: float       # 2 × active parameters (without the embedding table) [FLOP per token]
    flops_experts: float      # … of which the routed experts' (MoE), computed at ``moe_share`` of the dense rate
    attn_full: float          # attention FLOP per token per attended token, full-attention layers
    attn_window: float        # … sliding-window layers, up to ``attn_span`` attended tokens
    attn_span: float          # the attention window (inf: none)
    shard: float              # a card's share of the weights and FLOP (1 / tensor-parallel cards)
    kv_shard: float           # a card's share of the KV cache
    bytes_per_s: float        # achievable memory bandwidth of a card [bytes/s]
    flops_per_s: float        # achievable dense throughput of a card [FLOP/s] (inf: no figure)
    fixed_s: float            # per-layer GPU time of a step
    host_s: float             # per-layer host time of a step (a floor)
    comm_fixed_s: float       # all-reduce latencies of a step (2 per layer, tensor parallel)
    comm_per_token_s: float   # all-reduce transfer per token of the step
    #: pipeline stages: the fields above are one stage's (its share of the layers); a step of the whole batch is
    #: ``stages`` stage times, each stage working on a micro-batch of 1 / stages of the sequences
    stages: int = 1
    hop_s: float = 0.0        # sending a micro-batch's activations to the next stage: latency
    hop_per_token_s: float = 0.0   # … and transfer per token
    time_factor: float = 1.0  # the whole step × this (:attr:`EngineEfficiency.time_factor`)
    moe_share: float = 1.0    # :attr:`EngineEfficiency.moe_compute_share`

    @property
    def flops_dense(self) -> float:
        """The products over the weights per token as FLOP at the dense rate (:func:`time_flops`)."""
        return time_flops(self.flops_linear, self.flops_experts, self.moe_share)

    def kv_bytes(self, context):
        """One sequence's KV cache at ``context`` tokens [bytes], whole model."""
        return self.kv_full * context + self.kv_window * np.minimum(context, self.window) + self.kv_state

    def attention_flops(self, context):
        """Attention FLOP of one token that attends to ``context`` tokens (:func:`_attention_flops_per_token`)."""
        return self.attn_full * context + self.attn_window * np.minimum(context, self.attn_span)

    def seconds(self, decode, context, prefill=0, prefill_context=0.0):
        """See :func:`step_seconds`; arrays of steps give an array of their times (:mod:`gpucost.replay`)."""
        if self.stages > 1:   # micro-batches through the stages, one after another on each stage
            mb_dec, mb_pre = np.divide(decode, self.stages), np.divide(prefill, self.stages)
            hop = self.hop_s + self.hop_per_token_s * (mb_dec + mb_pre)
            t = self.time_factor * self.stages * (self._stage(mb_dec, context, mb_pre, prefill_context) + hop)
        else:
            t = self.time_factor * self._stage(decode, context, prefill, prefill_context)
        return float(t) if np.ndim(t) == 0 else t

    def _stage(self, decode, context, prefill, prefill_context):
        decode, prefill = np.asarray(decode, dtype=float), np.asarray(prefill, dtype=float)
        tokens = decode + prefill
        weights = self.dense_bytes + self.expert_bytes * (1.0 - (1.0 - self.route_share) ** tokens)
        kv = np.where(decode > 0, decode * self.kv_bytes(context), 0.0)
        attn = decode * self.attention_flops(context) + prefill * self.attention_flops(prefill_context)
        t_bw, t_c = roofline_seconds(weights * self.shard, kv * self.kv_shard, tokens * self.flops_dense * self.shard,
                                     attn * self.shard, self.bytes_per_s, self.flops_per_s)
        comm = self.comm_fixed_s + self.comm_per_token_s * tokens if self.shard < 1 else 0.0
        return np.maximum(t_bw + t_c + self.fixed_s + comm, self.host_s)


def step_cost(spec: ModelSpec, fmt: QuantFormat, gpu: Gpu, *, gpus: int = 1, engine: str = DEFAULTS.engine,
              kv_dtype: str = "fp16", link: str = "auto", catalog: Catalog | None = None,
              eff: EngineEfficiency | None = None, pp: int = 1) -> StepCost:
    """:class:`StepCost` of ``spec`` in ``fmt`` on ``gpus`` × ``gpu`` with ``engine``'s factors: tensor parallel
    over ``gpus / pp`` cards in each of ``pp`` pipeline stages. A stage holds 1 / pp of the layers (their weights,
    KV cache, FLOP and per-layer time) and its all-reduces stay within its cards; in flight are ``pp`` micro-batches,
    one per stage (TensorRT-LLM's and vLLM's pipeline parallelism), and a micro-batch's hidden vectors go to the
    next stage over the cards' link (one send per stage: the all-reduce latency and the transfer)."""
    if pp < 1 or gpus % pp:
        raise GpucostError(f"{gpus} cards do not split into {pp} pipeline stages")
    tp = gpus // pp
    _check_speed_inputs(spec, gpu, tp, 1, 1, engine, "tensor")
    eff = eff or card_efficiency(engine, gpu, fmt, catalog)
    wb = weight_bytes(spec, fmt)
    expert = wb.expert_blocks if spec.is_moe else 0.0
    # the kernel path's own bytes and per-layer time as speed() takes them for one token a sequence (only a
    # transformers run's differ from one read of the weights and one time per layer: gpucost.kernel_paths)
    dense = (_weights_read(spec, fmt, 0) if spec.is_moe else _weights_read(spec, fmt, 1)) \
        + extra_weight_bytes(spec, fmt, engine, 1)
    a = {k: float(np.asarray(v).ravel()[0]) for k, v in _arrays(((spec, fmt),)).items()}
    prof = ENGINE_PROFILES[engine]
    vals = (a["kv_vals"] if prof.kv_mla_compressed else a["kv_vals_expanded"]) if a["is_mla"] > 0 else a["kv_vals"]
    kvb = KV_DTYPE_BYTES[kv_dtype]
    window = a["window"] if prof.kv_sliding_window and a["n_swa"] > 0 else 0.0
    n_swa = a["n_swa"] if window else 0.0
    state = a["state_vals"] * STATE_BYTES.get(prof.activation_model, STATE_BYTES_DEFAULT)
    f_swa = spec.sliding_window_layers if spec.sliding_window else 0
    qk = spec.num_attention_heads * (spec.qk_nope_head_dim + spec.qk_rope_head_dim if spec.is_mla else spec.head_dim)
    L = overhead_layers(spec, engine, fmt)
    peak = peak_tflops(gpu, fmt, engine)
    link_bw = gpu.link(link)[1] if gpus > 1 else float("inf")
    f = 1.0 / pp   # a stage's share of the layers
    L *= f
    return StepCost(
        dense_bytes=dense * f, expert_bytes=expert * f,
        route_share=spec.experts_per_token / spec.num_experts if spec.is_moe else 0.0,
        kv_full=vals * (a["n_full"] + a["n_swa"] - n_swa) * kvb * f * prof.kv_passes,
        kv_window=vals * n_swa * kvb * f * prof.kv_passes,
        window=window if window else math.inf, kv_state=state * f,
        flops_linear=_linear_flops_per_token(spec) * f, flops_experts=_expert_flops_per_token(spec) * f,
        moe_share=eff.moe_compute_share,
        attn_full=4 * qk * (len(spec.attention_layers) - f_swa) * f,
        attn_window=4 * qk * f_swa * f, attn_span=float(spec.sliding_window) if spec.sliding_window else math.inf,
        shard=1.0 / tp,
        kv_shard=1.0 if spec.is_mla else max(spec.num_kv_heads / tp, 1.0) / spec.num_kv_heads,
        bytes_per_s=gpu.mem_bandwidth_gbps * 1e9 * eff.bw_efficiency,
        flops_per_s=peak * 1e12 * eff.compute_efficiency if peak is not None else math.inf,
        fixed_s=L * eff.layer_overhead_ms / 1e3, host_s=L * eff.host_layer_ms / 1e3,
        comm_fixed_s=2 * L * eff.allreduce_latency_ms / 1e3,
        comm_per_token_s=2 * L * RING_FACTOR * (tp - 1) / tp * spec.hidden_size * 2.0 / (link_bw * 1e9),
        stages=pp, hop_s=eff.allreduce_latency_ms / 1e3 if pp > 1 else 0.0,
        hop_per_token_s=spec.hidden_size * 2.0 / (link_bw * 1e9) if pp > 1 else 0.0, time_factor=eff.time_factor)


def step_seconds(spec: ModelSpec, fmt: QuantFormat, gpu: Gpu, *, decode: int, context: float, prefill: int = 0,
                 prefill_context: float = 0.0, gpus: int = 1, engine: str = DEFAULTS.engine, kv_dtype: str = "fp16",
                 link: str = "auto", catalog: Catalog | None = None, eff: EngineEfficiency | None = None) -> float:
    """One step of a continuous-batching engine [s], tensor parallel over ``gpus`` cards: one token for each of
    ``decode`` running sequences (KV length ``context`` on average) and ``prefill`` prompt tokens (chunks that
    attend to ``prefill_context`` earlier tokens on average) in one forward pass. The weights its tokens touch
    (MoE: the experts hit by all ``decode + prefill`` tokens, 1 − (1 − k/E)^tokens of them) and the running
    sequences' KV cache are read once and every token's matrix products computed: the step takes the larger of
    the memory and the compute time (:func:`decode_step`), plus the per-layer time and two all-reduces per layer
    of every token's hidden vector. A prefill chunk thus rides along a memory-bound decode step for the compute
    the step had to spare (vLLM V1's chunked prefill, TensorRT-LLM's in-flight batching; :mod:`gpucost.scheduling`).
    With ``prefill = 0`` it is :func:`speed`'s decode step. (A chunk's reads of its own prompt's earlier KV are
    left out: one read per chunk, not per token.)"""
    if decode < 0 or prefill < 0 or decode + prefill < 1:
        raise GpucostError("a step processes at least one token")
    cost = step_cost(spec, fmt, gpu, gpus=gpus, engine=engine, kv_dtype=kv_dtype, link=link, catalog=catalog, eff=eff)
    return cost.seconds(decode, context, prefill, prefill_context)


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
    peak = peak_tflops(gpu, fmt, engine)
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
    flops_tok, lin_tok = _flops_per_token(spec, context), _linear_flops_per_token(spec)
    lin_time = _linear_time_flops(spec, eff.moe_compute_share)   # the routed experts at their share of the rate
    L = overhead_layers(spec, engine, fmt, batch, software)
    link_name, link_bw = gpu.link(link) if gpus > 1 else ("none", float("inf"))
    msg = batch * spec.hidden_size * 2.0  # one 16-bit hidden vector per sequence
    lat = eff.allreduce_latency_ms / 1e3
    if parallel == "tensor":
        t, bound = _tensor_parallel_step(spec, w_bytes, kv_bytes, batch * lin_time, batch * (flops_tok - lin_tok),
                                         batch, gpus, L, bw, peak, eff, link_bw)
    else:  # layer split: the stages run one after another for a single step
        hop = 0.0 if gpus == 1 else (gpus - 1) * (lat + msg / (link_bw * 1e9))
        t_stage, bound = decode_step(w_bytes / gpus, kv_bytes / gpus, batch * lin_time / gpus,
                                     batch * (flops_tok - lin_tok) / gpus, L / gpus, bw, peak, eff, 0.0)
        t = t_stage * gpus + hop
    t = float(t) + t_cpu   # the CPU's expert layers and the GPU's layers take turns within a step
    tps = batch / t
    bw_roof = batch * bw * 1e9 / ((w_bytes + kv_bytes) / (gpus if parallel == "tensor" else 1))
    c_roof = None if peak is None else peak * 1e12 * (gpus if parallel == "tensor" else 1) / flops_tok
    # prefill: a prompt of ``context`` tokens (prompt_terms: its passes, bytes and kernel path)
    prefill = None
    if peak is not None:
        pt = prompt_terms(spec, fmt, gpu, prompt=context, engine=engine, backend=backend, software=software,
                          batch=prefill_batch, moe_share=eff.moe_compute_share)
        tokens = pt.tokens
        n_par = gpus if parallel == "tensor" else 1
        # the prompt's tokens touch more of a mixture-of-experts model's experts than one decode token does; those
        # in host RAM (--n-cpu-moe) are copied over instead, every physical batch (t_copy)
        w_pre = pt.weight_bytes
        if cpu_moe:
            resident = weight_bytes(spec, fmt).expert_blocks * float(cpu_moe_share(_arrays(((spec, fmt),)), cpu_moe)[0])
            w_pre -= pt.passes * resident * float(active_weight_fraction(spec, tokens / pt.passes))
        t_pre = (pt.flops / ((pt.peak or peak) * 1e12 * eff.compute_efficiency * n_par)
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
            t[m], _ = decode_step(w_bytes / nm, kv_bytes * kv_shard, lin / nm, attn / nm, L, bw[m], peak[m], eff, comm)
        else:
            t_stage, _ = decode_step(w_bytes / nm, kv_bytes / nm, lin / nm, attn / nm, L / nm, bw[m], peak[m], eff, 0.0)
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


def with_efficiency(eff: EngineEfficiency, **kw) -> EngineEfficiency:
    """A copy of ``eff`` with some factors replaced (for calibration)."""
    return replace(eff, **kw)
