"""Speed and the cost of the job: decode and prefill tokens/s, training time, cost per 1M tokens.

Decode (one step generates one token for each of ``batch`` sequences)::

    bytes_step  = weights read (all but the embedding table; MoE: shared weights + the experts the batch
                  touches) + KV cache read (batch × context)                                   [bytes]
    flops_step  = batch × (2 × active parameters + 4 × layers × context × heads × head_dim)    [FLOP]
    t_gpu       = max(bytes_step / (bandwidth × η_bw), flops_step / (peak × η_c))
                  + layers × c_gpu + communication
    t_step      = max(t_gpu, layers × c_host)
    tokens/s    = batch / t_step

η_bw, c_gpu, c_host (per engine) and η_c are calibrated on some rows of data/benchmarks.csv and kept in
data/engine_efficiency.csv with the rows they were fitted on; the other rows judge them
(:mod:`gpucost.validation`). Since η ≤ 1 and the added times are ≥ 0, tokens/s never exceeds the
bandwidth roofline (batch × bandwidth / bytes_step) nor the compute roofline (peak / FLOP per token).

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
from gpucost.kernel_paths import CURRENT, Software, extra_weight_bytes, layer_equivalents
from gpucost.memory import KV_DTYPE_BYTES, _arrays, cpu_moe_share, kv_cache_bytes
from gpucost.memory_profiles import ENGINE_PROFILES
from gpucost.models import ModelSpec, lora_trainable_params
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
    return derived(catalog.table("engine_efficiency"), "efficiency_table", _efficiency_table)


def _efficiency_table(df) -> dict[str, EngineEfficiency]:
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
            engine=name, **vals,
            calibration_rows=tuple(x.strip() for x in str(r.get("calibration_rows") or "").split(";") if x.strip()),
            source=str(r.get("source") or ""), as_of=str(r.get("as_of") or ""), notes=str(r.get("notes") or ""),
            borrowed_from=", ".join(borrowed))
    return out


def kernel_family(fmt: QuantFormat) -> str:
    """The kernel path a format decodes through (factors may differ per path): float, fp8, bnb-int8
    (bitsandbytes' int8 matmul), bnb-4bit, gptq, awq, gguf."""
    fid = fmt.id.lower()
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
    fam = kernel_family(fmt) if fmt is not None else "float"
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
            return table[key]
    raise UnknownNameError("engine", engine, [k for k in table if k in ENGINE_PROFILES])


# --------------------------------------------------------------------------------------------------
# GPU figures
# --------------------------------------------------------------------------------------------------

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
    if not spec.is_llm:
        return 2 * spec.params_active
    embed = spec.vocab_size * spec.hidden_size if not spec.tie_embeddings else 0
    n_swa = spec.sliding_window_layers if spec.sliding_window else 0
    # a hybrid's linear-attention layers attend to no past tokens: their state update is in the parameters
    attended = (len(spec.attention_layers) - n_swa) * context + n_swa * min(context, spec.sliding_window or context)
    qk = spec.num_attention_heads * (spec.qk_nope_head_dim + spec.qk_rope_head_dim if spec.is_mla else spec.head_dim)
    return 2 * (spec.params_active - embed) + 4 * attended * qk


def _decode_bytes(spec: ModelSpec, fmt: QuantFormat, batch: float, context: float, engine: str,
                  kv_dtype: str, software: Software = CURRENT) -> tuple[float, float]:
    """(weight bytes read, KV bytes read) per decode step, whole model (before any split); the weights
    include what the engine's kernel path moves beyond one read (:func:`gpucost.kernel_paths.extra_weight_bytes`)."""
    wb = weight_bytes(spec, fmt)
    experts = wb.expert_blocks * float(active_weight_fraction(spec, batch)) if spec.is_moe else 0.0
    weights = (wb.blocks - wb.expert_blocks) + experts + wb.output + wb.vectors
    weights += extra_weight_bytes(spec, fmt, engine, batch, software)
    if spec.tie_embeddings:
        weights += wb.embed  # the output head is the embedding matrix, read whole every step
    a = _arrays(((spec, fmt),))
    kv = float(kv_cache_bytes(a, context, batch, KV_DTYPE_BYTES[kv_dtype], ENGINE_PROFILES[engine])[0])
    return weights, kv


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


def decode_step(bytes_gpu, flops_gpu, layers, bw_gbps, peak_tflops_, eff: EngineEfficiency, comm_s=0.0):
    """(step time [s], which term bounds it) for arrays broadcast together (see module docstring)."""
    t_bw = np.asarray(bytes_gpu, dtype=float) / (np.asarray(bw_gbps, dtype=float) * 1e9 * eff.bw_efficiency)
    if peak_tflops_ is None:
        t_c = np.zeros_like(t_bw)
    else:
        t_c = np.asarray(flops_gpu, dtype=float) / (np.asarray(peak_tflops_, dtype=float) * 1e12 * eff.compute_efficiency)
    t_fixed = np.asarray(layers, dtype=float) * eff.layer_overhead_ms / 1e3
    t_gpu = np.maximum(t_bw, t_c) + t_fixed + comm_s
    t_host = np.asarray(layers, dtype=float) * eff.host_layer_ms / 1e3
    t = np.maximum(t_gpu, t_host)
    # the per-layer fixed time (kernel launches, host work) bounds a step when it exceeds the roofline time
    overhead = (t_host >= t_gpu) | (t_fixed > np.maximum(t_bw, t_c))
    bound = np.where(overhead, "host-overhead", np.where(t_c > t_bw, "compute", "memory-bandwidth"))
    return t, bound


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
    notes = []
    if peak is None:
        notes.append(f"{gpu.id} has no dense {fmt.compute_dtype} figure: compute limits ignored, no prefill")
    if eff.borrowed_from:
        notes.append(f"{engine}: {eff.borrowed_from} (no calibration rows of its own)")
    if uncalibrated:
        notes.append(f"no {engine} measurements on {backend} ({gpu.vendor}) in the calibration corpus: the factors "
                     "are fitted on CUDA (NVIDIA) rows; expect a larger error than the band says on this card")
    return notes


def speed(spec: ModelSpec, fmt: QuantFormat, gpu: Gpu, *, gpus: int = DEFAULTS.gpus, batch: int = DEFAULTS.batch,
          context: int = DEFAULTS.context, engine: str = DEFAULTS.engine, kv_dtype: str = "fp16",
          parallel: str | None = None, link: str = "auto", catalog: Catalog | None = None,
          eff: EngineEfficiency | None = None, backend: str | None = None, cpu_moe: int = 0,
          host_bw_gbps: float | None = None, software: Software | None = None) -> SpeedEstimate:
    """Decode and prefill speed of ``spec`` in ``fmt`` on ``gpus`` cards ``gpu`` (``backend``: cuda, rocm,
    vulkan, metal… — llama.cpp's factors differ per backend; default: the card vendor's, :func:`default_backend`).
    ``cpu_moe``: llama.cpp ``--n-cpu-moe`` (:func:`cpu_expert_times`), with the host's memory bandwidth.
    ``software``: the library versions whose code paths apply (:class:`gpucost.kernel_paths.Software`;
    default the current releases)."""
    software = software or CURRENT
    parallel = _check_speed_inputs(spec, gpu, gpus, batch, context, engine, parallel)
    backend = backend or default_backend(gpu)
    uncalibrated = eff is None and backend != "cuda" and not any(
        f"/{backend}" in k for k in factor_keys(engine, fmt, backend) if k in efficiency_table(catalog))
    eff = eff or engine_efficiency(engine, catalog, fmt, key_backend(engine, backend, gpu))
    bw = gpu.mem_bandwidth_gbps
    peak = peak_tflops(gpu, fmt, engine)
    notes = _speed_notes(gpu, fmt, engine, backend, eff, peak, uncalibrated)
    w_bytes, kv_bytes = _decode_bytes(spec, fmt, batch, context, engine, kv_dtype, software)
    cpu_read, t_cpu, t_copy = cpu_expert_times(spec, fmt, gpu, batch, engine, cpu_moe, host_bw_gbps)
    w_bytes -= cpu_read   # read from host RAM by the CPU, not from the card's memory
    if cpu_moe:
        notes.append(f"--n-cpu-moe {cpu_moe}: the CPU reads {cpu_read / 2**30:.2f} GiB of experts per step at "
                     f"{host_bw_gbps or DEFAULT_HOST_BW_GBPS:g} GB/s of host memory bandwidth (an upper bound on "
                     "speed: published runs measured about half of it, README error table 'llama.cpp --n-cpu-moe'); "
                     "each 512-token prompt batch copies those layers' experts to the card over PCIe")
    flops_tok = _flops_per_token(spec, context)
    L = overhead_layers(spec, engine, fmt, batch, software)
    link_name, link_bw = gpu.link(link) if gpus > 1 else ("none", float("inf"))
    msg = batch * spec.hidden_size * 2.0  # one 16-bit hidden vector per sequence
    lat = eff.allreduce_latency_ms / 1e3
    if parallel == "tensor":
        shard = 1.0 / gpus
        kv_shard = 1.0 if spec.is_mla else max(spec.num_kv_heads / gpus, 1.0) / spec.num_kv_heads
        bytes_gpu = w_bytes * shard + kv_bytes * kv_shard
        flops_gpu = batch * flops_tok * shard
        comm = 0.0 if gpus == 1 else 2 * L * (lat + RING_FACTOR * (gpus - 1) / gpus * msg / (link_bw * 1e9))
        t, bound = decode_step(bytes_gpu, flops_gpu, L, bw, peak, eff, comm)
    else:  # layer split: the stages run one after another for a single step
        bytes_gpu = (w_bytes + kv_bytes) / gpus
        flops_gpu = batch * flops_tok / gpus
        hop = 0.0 if gpus == 1 else (gpus - 1) * (lat + msg / (link_bw * 1e9))
        t_stage, bound = decode_step(bytes_gpu, flops_gpu, L / gpus, bw, peak, eff, 0.0)
        t = t_stage * gpus + hop
    t = float(t) + t_cpu   # the CPU's expert layers and the GPU's layers take turns within a step
    tps = batch / t
    bw_roof = batch * bw * 1e9 / ((w_bytes + kv_bytes) / (gpus if parallel == "tensor" else 1))
    c_roof = None if peak is None else peak * 1e12 * (gpus if parallel == "tensor" else 1) / flops_tok
    # prefill: a prompt of ``context`` tokens, attention over half of it on average
    prefill = None
    if peak is not None:
        f_pre = _flops_per_token(spec, context / 2) * context
        n_par = gpus if parallel == "tensor" else 1
        # a prompt is one forward of ``context`` tokens: its kernel path is that of ``context`` rows
        w_pre = w_bytes - extra_weight_bytes(spec, fmt, engine, batch, software) \
            + extra_weight_bytes(spec, fmt, engine, context, software)
        L_pre = overhead_layers(spec, engine, fmt, context, software)
        t_pre = f_pre / (peak * 1e12 * eff.compute_efficiency * n_par) + (w_pre / n_par) / (bw * 1e9 * eff.bw_efficiency) \
            + L_pre * eff.layer_overhead_ms / 1e3 + math.ceil(context / LLAMACPP_UBATCH) * t_copy
        prefill = context / t_pre
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
    flops = batch * _flops_per_token(spec, context)
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
        nm = n[m]
        if prof.parallel == "tensor":
            kv_shard = 1.0 if spec.is_mla else np.maximum(spec.num_kv_heads / nm, 1.0) / spec.num_kv_heads
            comm = np.where(nm > 1, 2 * L * (lat + RING_FACTOR * (nm - 1) / nm * msg / (links[m] * 1e9)), 0.0)
            t[m], _ = decode_step(w_bytes / nm + kv_bytes * kv_shard, flops / nm, L, bw[m], peak[m], eff, comm)
        else:
            t_stage, _ = decode_step((w_bytes + kv_bytes) / nm, flops / nm, L / nm, bw[m], peak[m], eff, 0.0)
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
