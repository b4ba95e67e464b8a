"""Speed factors fitted on the corpus, and the error on documents they were not fitted on.

The decode and prefill model (:mod:`gpucost.speed`) has three factors per engine — bandwidth efficiency
η, a fixed time per layer c, compute efficiency η_c — kept in data/engine_efficiency.csv by *key*: the
engine, and where the corpus has enough rows, the engine on one backend (``llama.cpp/rocm``) or one kernel
path (``transformers/bnb-int8``). :func:`fit_factors` fits every key with enough rows by least absolute
deviation of log(estimate / measured) (:func:`_loss`), over single-GPU rows: η and c on decode rows (a grid, refined), η_c on prefill
and time-to-first-token rows. A key without enough rows, or with rows of fewer than :data:`MIN_DOCUMENTS`
documents, takes its parent's factors
(:func:`gpucost.speed.factor_keys`); an engine without rows takes vLLM's. A row on another backend than CUDA
(Vulkan, ROCm, Metal) fits only the keys that name its backend: the engine's own key and its kernel keys are
CUDA's, which every backend without enough rows of its own borrows (pooling them had pulled llama.cpp's CUDA
prompt rate down to a Vulkan card's: issue 25, prefill 49 → 36 % held out).

:func:`cross_validate` is the published error: for each source document, every factor is refitted without
it and its rows are estimated with the refitted table — leave-one-document-out, so no row is judged by a
factor fitted on its own document (a key fitted only on that document falls back to its parent).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, replace

import numpy as np

from gpucost.catalog import Catalog
from gpucost.errors import GpucostError
from gpucost.memory_profiles import ENGINE_PROFILES
from gpucost.speed import (
    EngineEfficiency,
    _attention_flops_per_token,
    _decode_bytes,
    _flops_per_token,
    attention_tflops,
    efficiency_table,
    factor_keys,
    kernel_family,
    key_backend,
    overhead_layers,
    peak_tflops,
    prompt_terms,
    roofline_seconds,
)
from gpucost.validation.corpus import (
    SPEED_CATEGORIES,
    _aggregate,
    _gpu,
    _int,
    _tokens,
    backend_of,
    comparison_value,
    cpu_moe_of,
    engine_of,
    includes_prefill,
    row_format,
    row_model,
    software_of_row,
    source_of,
)

#: every fitted figure — a key's speed factors, a time factor, the MoE share — stands on at least this many source
#: documents, else the less specific figure stands: a figure from one document is that document's own (its
#: rig, its harness), never judged on another — leaving it out, each row is judged with what the others support
#: (issue 25: exllamav2's EXL2 rows held out had been estimated from one other document's two rows at half speed)
MIN_DOCUMENTS = 2
#: a key is fitted on at least this many rows (else it takes its parent's factors); a specific key with
#: fewer than ``TWO_FACTOR_ROWS`` decode rows fits η alone (c from its parent)
MIN_DECODE_ROWS = 2
MIN_PREFILL_ROWS = 3
TWO_FACTOR_ROWS = 6
#: the kernel paths an engine's own factors are fitted on (its default path); other paths fit their own key
DEFAULT_KERNELS = {"llama.cpp": ("gguf", "float")}
#: the engine whose factors an engine without rows borrows
FALLBACK_ENGINE = "vllm"
#: starting values where nothing is fitted yet (η_c from the corpus-wide prefill fit replaces it)
DEFAULT = {"bw_efficiency": 0.8, "layer_overhead_ms": 0.1, "compute_efficiency": 0.5}
GRID_BW = np.arange(0.05, 1.0 + 1e-9, 0.01)
GRID_C = np.arange(0.0, 2.0 + 1e-9, 0.01)
GRID_COMPUTE = np.arange(0.01, 1.0 + 1e-9, 0.005)


@dataclass(frozen=True)
class Terms:
    """What one single-GPU speed row contributes to a fit (see :mod:`gpucost.speed`)."""

    id: str
    source: str
    keys: tuple[str, ...]
    kind: str            # decode | prefill
    weights: float       # bytes read per step
    kv: float            # KV bytes per sequence per step
    flops: float         # decode: per token; prefill: for the whole prompt
    layers: float        # layers paying the fixed time
    bw: float            # GB/s
    peak: float          # TFLOPS (inf: no figure)
    batch: float
    tokens: float        # prefill: prompt tokens
    measured: float      # decode: tokens/s per sequence; prefill: seconds for the prompt
    attention: float = 0.0   # decode: the attention FLOP per token within ``flops`` (its own kernels' roofline);
                             # prefill: attention's FLOP for the whole prompt, beside ``flops``
    attn_peak: float = math.inf   # TFLOPS attention computes at (gpucost.speed.attention_tflops)


def terms_of(row: dict, catalog: Catalog) -> Terms | None:
    """The fit terms of a speed row; None when it is not a single-GPU row the fit can use."""
    if row["category"] not in SPEED_CATEGORIES or _int(row.get("num_gpus"), 1) != 1 or cpu_moe_of(row)[0]:
        return None   # experts in host RAM: the CPU's share is not the card's speed (judged, never fitted)
    try:
        engine = engine_of(row)
        spec, fmt = row_model(row, catalog), row_format(row, catalog)
        gpu = _gpu(row, catalog)
        value, _unit = comparison_value(row)
    except GpucostError:
        return None
    if not spec.is_llm:
        return None
    keys = tuple(factor_keys(engine, fmt, key_backend(engine, backend_of(row), gpu)))
    if kernel_family(fmt, engine) not in DEFAULT_KERNELS.get(engine, ("float",)):
        keys = tuple(k for k in keys if k != engine)  # the engine's own factors are its default path's
    peak = peak_tflops(gpu, fmt, engine) or math.inf
    attn_peak = attention_tflops(gpu, fmt, "fp16", engine) or peak
    ctx, prompt, gen = _tokens(row)
    batch = float(_int(row.get("batch"), 1))
    sw = software_of_row(row)
    if row["category"] in ("decode_speed", "tpot"):
        if includes_prefill(row):   # a whole generate(), prompt included: judged, not a decode step to fit on
            return None
        kv_len = max(1, int(round((prompt or ctx) + gen / 2)))
        L = overhead_layers(spec, engine, fmt, batch, sw)
        w, _kv_b = _decode_bytes(spec, fmt, batch, kv_len, engine, "fp16", sw)
        _w1, kv = _decode_bytes(spec, fmt, 1, kv_len, engine, "fp16", sw)  # KV bytes of one sequence
        per_seq = value / batch if (row["category"] == "decode_speed" and _aggregate(row)) else value
        if row["category"] == "tpot":
            per_seq = 1000.0 / value
        return Terms(str(row["id"]), source_of(row), keys, "decode", w, kv, _flops_per_token(spec, kv_len), L,
                     gpu.mem_bandwidth_gbps, peak, batch, 0.0, per_seq, _attention_flops_per_token(spec, kv_len),
                     attn_peak)
    p = float(max(prompt or ctx, 1))
    if batch != 1 or spec.is_moe:   # a MoE prompt's time is its experts' share of the rate (fit_moe_share's)
        return None
    pt = prompt_terms(spec, fmt, gpu, prompt=p, engine=engine, backend=backend_of(row), software=sw)
    if not pt.peak:  # a card with no dense throughput figure: the row is not estimated, nor can it size compute
        return None
    seconds = p / value if row["category"] == "prefill_speed" else value / 1000.0
    return Terms(str(row["id"]), source_of(row), keys, "prefill", pt.weight_bytes, 0.0, pt.flops, pt.layers,
                 gpu.mem_bandwidth_gbps, pt.peak, 1.0, p, seconds, pt.attn_flops, pt.attn_peak or pt.peak)


# --------------------------------------------------------------------------------------------------
# Fitting
# --------------------------------------------------------------------------------------------------

def _arr(rows: list[Terms], name: str) -> np.ndarray:
    return np.array([getattr(r, name) for r in rows], dtype=float)


def _loss(ratio: np.ndarray) -> np.ndarray:
    """The fit's loss over rows (axis 0) of estimated ÷ measured times: Σ |log ratio|, least absolute deviation
    — the factor it finds makes the median row right, as the published error is a median; a document far off
    (llama.cpp on an MI300X at a twentieth of its card's compute) does not pull every other row, as it did
    under least squares (issue 25: prefill 27 % → 22 %, decode 17.9 → 17.3 % held out)."""
    return np.abs(np.log(ratio)).sum(axis=0)


def _fit_decode(rows: list[Terms], eta_c: float, c_fixed: float | None = None) -> tuple[float, float]:
    """(η, c [ms]) minimizing :func:`_loss` over decode rows: a grid, then a finer one (``c_fixed``: η
    alone)."""
    W, K, F, A, L, bw, pk, pa, b, meas = (_arr(rows, n)[:, None, None] for n in
                                          ("weights", "kv", "flops", "attention", "layers", "bw", "peak", "attn_peak",
                                           "batch", "measured"))

    def sse(etas, cs):
        eta, c = etas[None, :, None], cs[None, None, :]
        t_bw, t_c = roofline_seconds(W, b * K, b * (F - A), b * A, bw * 1e9 * eta, pk * 1e12 * eta_c,
                                     pa * 1e12 * eta_c)
        t = t_bw + t_c + L * c / 1e3
        return _loss(t * meas)

    grid_c = GRID_C if c_fixed is None else np.array([c_fixed])
    s = sse(GRID_BW, grid_c)
    i, j = np.unravel_index(np.argmin(s), s.shape)
    fine_eta = np.clip(GRID_BW[i] + np.arange(-0.01, 0.0101, 0.001), 0.01, 1.0)
    fine_c = np.clip(grid_c[j] + np.arange(-0.01, 0.0101, 0.001), 0.0, None) if c_fixed is None else grid_c
    s = sse(fine_eta, fine_c)
    i, j = np.unravel_index(np.argmin(s), s.shape)
    return round(float(fine_eta[i]), 4), round(float(fine_c[j]), 4)


def _fit_compute(rows: list[Terms], eta: float, c: float) -> float:
    """η_c minimizing :func:`_loss` over prefill rows (:func:`gpucost.speed.prompt_terms`: the weights read once
    per forward pass)."""
    F, A, W, L, bw, pk, pa, meas = (_arr(rows, n)[:, None] for n in ("flops", "attention", "weights", "layers", "bw",
                                                                     "peak", "attn_peak", "measured"))
    grid = GRID_COMPUTE[None, :]
    t = (F / pk + A / pa) / (1e12 * grid) + W / (bw * 1e9 * eta) + L * c / 1e3
    s = _loss(t / meas)
    k = int(np.argmin(s))
    fine = np.clip(GRID_COMPUTE[k] + np.arange(-0.005, 0.00501, 0.0005), 0.005, 1.0)
    t = (F / pk + A / pa) / (1e12 * fine[None, :]) + W / (bw * 1e9 * eta) + L * c / 1e3
    return round(float(fine[int(np.argmin(_loss(t / meas)))]), 4)


@dataclass(frozen=True)
class Fitted:
    """A key's fitted factors and what they were fitted on."""

    key: str
    bw_efficiency: float | None
    layer_overhead_ms: float | None
    compute_efficiency: float | None
    decode_rows: tuple[str, ...]
    prefill_rows: tuple[str, ...]
    sources: tuple[str, ...]


def _parent(key: str, fitted: dict[str, Fitted], col: str, default: float) -> float:
    """The value of ``col`` for ``key`` from the nearest fitted less specific key."""
    engine, *rest = key.split("/")
    chain = [k for k in _chain(key) if k != key]
    for k in chain:
        v = getattr(fitted[k], col) if k in fitted else None
        if v is not None:
            return v
    if engine != FALLBACK_ENGINE and FALLBACK_ENGINE in fitted:
        v = getattr(fitted[FALLBACK_ENGINE], col)
        if v is not None:
            return v
    return default


#: backends other than CUDA that get keys of their own (llama.cpp/rocm, exllamav2/rocm, …)
OTHER_BACKENDS = ("rocm", "vulkan", "metal", "sycl", "cpu")


def _on_cuda(t: Terms) -> bool:
    """Whether a row ran on CUDA: the pooled prefill factor is what engines without prefill rows of their own
    borrow (vLLM, SGLang, TensorRT-LLM on NVIDIA cards), so it pools CUDA rows, not Vulkan's, ROCm's or Metal's,
    which have keys of their own."""
    return not any(len(k.split("/")) > 1 and k.split("/")[1] in OTHER_BACKENDS for k in t.keys)


def _backend_keys(t: Terms) -> tuple[str, ...]:
    """A non-CUDA row's keys that name its backend (empty on CUDA)."""
    return tuple(k for k in t.keys if len(k.split("/")) > 1 and k.split("/")[1] in OTHER_BACKENDS)


def _chain(key: str) -> list[str]:
    """``key`` and its less specific keys: llama.cpp/rocm/gguf → llama.cpp/gguf, llama.cpp/rocm, llama.cpp."""
    parts = key.split("/")
    if len(parts) == 1:
        return [key]
    if len(parts) == 3:
        e, b, f = parts
        return [key, f"{e}/{f}", f"{e}/{b}", e]
    return [key, parts[0]]


def _rows_by_key(terms: Iterable[Terms]) -> dict[str, list[Terms]]:
    """The rows each key is fitted on: a row's keys, but a Vulkan/ROCm/Metal row only its backend's (not CUDA's)."""
    by_key: dict[str, list[Terms]] = defaultdict(list)
    for t in terms:
        own = _backend_keys(t)
        for k in t.keys:
            if not own or k in own:
                by_key[k].append(t)
    return by_key


def _documents(rows: list[Terms]) -> int:
    return len({t.source for t in rows})


def fit_factors(terms: Iterable[Terms]) -> dict[str, Fitted]:
    """Every key with enough rows, least specific first (each starts from its parent's factors)."""
    by_key = _rows_by_key(terms)
    all_prefill = [t for ts in by_key.values() for t in ts if t.kind == "prefill" and _on_cuda(t)]
    global_c = _fit_compute(list({t.id: t for t in all_prefill}.values()), DEFAULT["bw_efficiency"],
                            DEFAULT["layer_overhead_ms"]) if all_prefill else DEFAULT["compute_efficiency"]
    fitted: dict[str, Fitted] = {}
    for key in sorted(by_key, key=lambda k: (k.count("/"), k != FALLBACK_ENGINE, k)):
        rows = by_key[key]
        dec = [t for t in rows if t.kind == "decode"]
        pre = [t for t in rows if t.kind == "prefill"]
        eta = _parent(key, fitted, "bw_efficiency", DEFAULT["bw_efficiency"])
        c = _parent(key, fitted, "layer_overhead_ms", DEFAULT["layer_overhead_ms"])
        eta_c = _parent(key, fitted, "compute_efficiency", global_c)
        f_eta = f_c = f_ec = None
        if len(pre) >= MIN_PREFILL_ROWS and _documents(pre) >= MIN_DOCUMENTS:
            f_ec = eta_c = _fit_compute(pre, eta, c)
        if len(dec) >= MIN_DECODE_ROWS and _documents(dec) >= MIN_DOCUMENTS:
            one = "/" in key and len(dec) < TWO_FACTOR_ROWS
            f_eta, f_c = eta, c = _fit_decode(dec, eta_c, c if one else None)
            if f_ec is not None:  # once more with this key's own η and c
                f_ec = _fit_compute(pre, eta, c)
        if f_eta is None and f_ec is None:
            continue
        fitted[key] = Fitted(key, f_eta, f_c, f_ec, tuple(t.id for t in dec) if f_eta is not None else (),
                             tuple(t.id for t in pre) if f_ec is not None else (),
                             tuple(sorted({t.source for t in (dec if f_eta is not None else []) + (pre if f_ec is not None else [])})))
    if "all" not in fitted:
        fitted["all"] = Fitted("all", None, None, global_c, (), tuple(t.id for t in all_prefill), ())
    return fitted


def factor_table(fitted: dict[str, Fitted], base: dict[str, EngineEfficiency]) -> dict[str, EngineEfficiency]:
    """An engine-efficiency table from fitted keys: each key with its own factors where fitted and its
    parent's elsewhere; engines of ``base`` without rows keep borrowing; MFU and the all-reduce latency
    come from ``base``."""
    pooled = fitted["all"].compute_efficiency if "all" in fitted else None
    global_c: float = pooled if pooled is not None else DEFAULT["compute_efficiency"]
    template = base.get(FALLBACK_ENGINE) or next(iter(base.values()))
    # nothing the stored table holds from a fit survives: a kernel or backend key (llama.cpp/rocm, sglang/awq) is
    # this fit's or absent (its parent's factors stand); an engine's factors are this fit's or borrowed below. A
    # stored key fitted on one document alone had judged that document's rows with its own factors (issue 25). A
    # stored time-factor key (vllm/rocm) was fitted on serving rows, maybe of the document being judged:
    # :func:`with_time_factors` adds it back, fitted without that document; so is the MoE share (with_moe_share)
    out = {k: replace(v, moe_compute_share=1.0) for k, v in base.items() if v.time_factor == 1.0 and "/" not in k}
    for key in sorted(fitted, key=lambda k: (k.count("/"), k)):
        if key == "all":
            continue
        f = fitted[key]
        vals: dict[str, float] = {}
        for col, default in (("bw_efficiency", DEFAULT["bw_efficiency"]),
                             ("layer_overhead_ms", DEFAULT["layer_overhead_ms"]),
                             ("compute_efficiency", global_c)):
            own = getattr(f, col)
            vals[col] = own if own is not None else _parent(key, fitted, col, default)
        engine = key.split("/")[0]
        prev = base.get(key) or base.get(engine) or template
        out[key] = replace(prev, engine=key, host_layer_ms=0.0, calibration_rows=f.decode_rows + f.prefill_rows,
                           borrowed_from="", bw_efficiency=vals["bw_efficiency"],
                           layer_overhead_ms=vals["layer_overhead_ms"], compute_efficiency=vals["compute_efficiency"])
    # an engine without rows of its own borrows the fallback engine's fitted factors (never a stored value
    # that may have been fitted on the document being judged)
    if FALLBACK_ENGINE not in fitted:   # its stored factors may have been fitted on the document being judged
        out[FALLBACK_ENGINE] = replace(template, engine=FALLBACK_ENGINE, calibration_rows=(), host_layer_ms=0.0,
                                       bw_efficiency=DEFAULT["bw_efficiency"],
                                       layer_overhead_ms=DEFAULT["layer_overhead_ms"], compute_efficiency=global_c,
                                       borrowed_from="the fit's starting values (too few documents of its own)")
    for engine in ENGINE_PROFILES:
        if engine not in fitted and engine != FALLBACK_ENGINE:
            src = out[FALLBACK_ENGINE]
            out[engine] = replace(src, engine=engine, calibration_rows=(), host_layer_ms=0.0,
                                  borrowed_from=f"all factors from {FALLBACK_ENGINE} (no rows of its own)")
    # the stored request latency was fitted on serving runs, maybe of the document being judged: none here
    # (:func:`with_request_latency` adds one fitted without that document)
    return {k: replace(v, request_latency_ms=0.0) for k, v in out.items()}


# --------------------------------------------------------------------------------------------------
# Time factors: an engine on a backend its factors were not fitted on
# --------------------------------------------------------------------------------------------------

#: engines that get a time factor on a backend other than CUDA: the serving engines, whose factors are fitted on
#: CUDA rows only (the corpus has no single-GPU decode or prefill rows of vLLM or SGLang on ROCm to fit a key on,
#: but nine documents of their serving runs on AMD cards — eight slower than the CUDA-fitted step model, 1.2–3.2× at
#: the document's median, the newest (vLLM 0.20, 2026) faster: issue 25)
TIME_ENGINES = ("vllm", "sglang", "tensorrt-llm")


def time_key(engine: str, backend: str) -> str | None:
    """The key whose time factor scales ``engine``'s steps on ``backend`` (``vllm/rocm``); None on CUDA or for an
    engine outside :data:`TIME_ENGINES`."""
    if engine not in TIME_ENGINES or not backend or backend == "cuda":
        return None
    return f"{engine}/{backend}"


def time_key_of(row: dict) -> str | None:
    """:func:`time_key` of a corpus row (None where its engine is not modelled)."""
    try:
        return time_key(engine_of(row), backend_of(row))
    except GpucostError:
        return None


@dataclass(frozen=True)
class TimeFit:
    """A key's time factor and what it was fitted on."""

    key: str
    time_factor: float
    rows: tuple[str, ...]
    sources: tuple[str, ...]


def fit_time_factors(ratios: Iterable[tuple[str, str, str, float]],
                     exclude_source: str | None = None) -> dict[str, TimeFit]:
    """Time factors from ``(key, source document, row id, estimate ÷ measured)`` of serving-throughput rows
    estimated with the CUDA factors: per key, exp of the median over documents of each document's median
    log ratio (the allocator's reserve ratio is fitted the same way: one large document does not outvote the
    others), on at least :data:`MIN_DOCUMENTS` documents other than ``exclude_source``. Every step time
    scales by the factor, so a throughput estimate divides by it exactly (a replay's schedule depends on token
    counts, not on time: ``tests/test_validation.py``)."""
    by: dict[str, dict[str, list[tuple[str, float]]]] = defaultdict(lambda: defaultdict(list))
    for key, src, rid, r in ratios:
        if src != exclude_source and r > 0 and math.isfinite(r):
            by[key][src].append((rid, r))
    out = {}
    for key, docs in sorted(by.items()):
        if len(docs) < MIN_DOCUMENTS:
            continue
        med = float(np.median([np.median([math.log(r) for _, r in rows]) for rows in docs.values()]))
        out[key] = TimeFit(key, round(math.exp(med), 3), tuple(rid for rows in docs.values() for rid, _ in rows),
                           tuple(sorted(docs)))
    return out


def with_time_factors(table: dict[str, EngineEfficiency], fits: dict[str, TimeFit]) -> dict[str, EngineEfficiency]:
    """``table`` with each time factor's key: the engine's (CUDA) factors, every step time × the factor
    (:func:`gpucost.speed.engine_efficiency` applies it to the engine's kernel keys on that backend too). A key
    fitted on the backend's own speed rows keeps its factors."""
    out = dict(table)
    for key, f in fits.items():
        engine = key.split("/")[0]
        if key in table or engine not in table:
            continue
        out[key] = replace(table[engine], engine=key, time_factor=f.time_factor, calibration_rows=f.rows)
    return out


# --------------------------------------------------------------------------------------------------
# The routed experts' share of the dense compute rate
# --------------------------------------------------------------------------------------------------

#: the shares of the dense compute rate a MoE share is chosen from
MOE_GRID = np.round(np.arange(0.10, 1.0 + 1e-9, 0.05), 3)
#: a serving row the MoE share is fitted on: its estimate at half the dense rate is at most this × the estimate at
#: the dense rate — a run whose time the experts' products govern (chosen on the model alone, not the measurement:
#: a run that decodes a few sequences at a time reads weights and cache, and says nothing of the experts' rate)
MOE_SENSITIVE = 0.95


@dataclass(frozen=True)
class MoeFit:
    """The routed experts' share of the dense compute rate and what it was fitted on."""

    moe_compute_share: float
    rows: tuple[str, ...]
    sources: tuple[str, ...]


def fit_moe_share(ratios: Iterable[tuple[str, str, np.ndarray]], exclude_source: str | None = None) -> MoeFit | None:
    """:attr:`gpucost.speed.EngineEfficiency.moe_compute_share` from ``(source document, row id, estimate ÷ measured
    at each share of MOE_GRID)`` of MoE serving-throughput rows on CUDA whose time the experts' products govern
    (:data:`MOE_SENSITIVE`): the share whose documents' median log ratios are nearest zero in sum (each document one
    vote, as :func:`fit_time_factors`; least absolute deviation as :func:`_loss`), on at least
    :data:`MIN_DOCUMENTS` documents other than ``exclude_source``; None with fewer."""
    by: dict[str, list[tuple[str, np.ndarray]]] = defaultdict(list)
    for src, rid, r in ratios:
        if src != exclude_source and np.all(np.isfinite(r)) and np.all(r > 0):
            by[src].append((rid, r))
    if len(by) < MIN_DOCUMENTS:
        return None
    doc_medians = np.array([np.median(np.log([r for _, r in rows]), axis=0) for rows in by.values()])
    k = int(np.argmin(np.abs(doc_medians).sum(axis=0)))
    return MoeFit(float(MOE_GRID[k]), tuple(rid for rows in by.values() for rid, _ in rows), tuple(sorted(by)))


# --------------------------------------------------------------------------------------------------
# A served request's latency beyond the step model
# --------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class LatencyFit:
    """An engine's request latency [ms] and what it was fitted on."""

    engine: str
    request_latency_ms: float
    rows: tuple[str, ...]
    sources: tuple[str, ...]
    #: each document's median measured − estimated TTFT [ms]
    per_document: tuple[tuple[str, float], ...] = ()


def fit_request_latency(diffs: Iterable[tuple[str, str, str, float]],
                        exclude_source: str | None = None) -> dict[str, LatencyFit]:
    """:attr:`gpucost.speed.EngineEfficiency.request_latency_ms` per engine from ``(engine, source document, row id,
    measured − estimated TTFT [ms])`` of serving runs at concurrency 1 (one request in flight: no queue), estimated
    without a latency: the median over documents of each document's median difference (each document one vote, as
    :func:`fit_time_factors`), never below 0, on at least :data:`MIN_DOCUMENTS` documents other than
    ``exclude_source``. A difference holds what the server does per request beyond the step model (HTTP,
    tokenizing, scheduling, an eager prefill's launches, detokenizing) and the estimate's own error of that
    prompt's prefill; the median over documents is what most documents share."""
    by: dict[str, dict[str, list[tuple[str, float]]]] = defaultdict(lambda: defaultdict(list))
    for engine, src, rid, d in diffs:
        if src != exclude_source and math.isfinite(d):
            by[engine][src].append((rid, d))
    out = {}
    for engine, docs in sorted(by.items()):
        if len(docs) < MIN_DOCUMENTS:
            continue
        per_doc = tuple((src, float(np.median([d for _, d in rows]))) for src, rows in sorted(docs.items()))
        ms = max(0.0, float(np.median([d for _, d in per_doc])))
        out[engine] = LatencyFit(engine, round(ms, 1), tuple(rid for rows in docs.values() for rid, _ in rows),
                                 tuple(sorted(docs)), per_doc)
    return out


def latency_of(engine: str, fits: dict[str, LatencyFit]) -> float:
    """The request latency [ms] of ``engine`` (``sglang/rocm``: SGLang's) from ``fits``: its own, else
    :data:`FALLBACK_ENGINE`'s (as for its speed factors), else 0 — the fallback data/engine_efficiency.csv gives the
    product."""
    f = fits.get(engine.split("/")[0]) or fits.get(FALLBACK_ENGINE)
    return f.request_latency_ms if f else 0.0


def with_request_latency(table: dict[str, EngineEfficiency], fits: dict[str, LatencyFit]) -> dict[str, EngineEfficiency]:
    """``table`` with every key's request latency from ``fits`` (:func:`latency_of`)."""
    return {k: replace(v, request_latency_ms=latency_of(k, fits)) for k, v in table.items()}


# --------------------------------------------------------------------------------------------------
# Cross-validation by source document
# --------------------------------------------------------------------------------------------------

def corpus_terms(catalog: Catalog) -> list[Terms]:
    rows = catalog.table("benchmarks").to_dict(orient="records")
    return [t for t in (terms_of(r, catalog) for r in rows) if t is not None]


def fitted_table(catalog: Catalog, exclude_source: str | None = None,
                 terms: list[Terms] | None = None) -> dict[str, EngineEfficiency]:
    """The factor table fitted on the whole corpus, or without one source document."""
    terms = terms if terms is not None else corpus_terms(catalog)
    use = [t for t in terms if t.source != exclude_source]
    return factor_table(fit_factors(use), efficiency_table(catalog))
