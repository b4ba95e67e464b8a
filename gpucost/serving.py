"""Serving at a target load: how many concurrent sequences fit, what one replica sustains within the
latency targets, how many cards the load needs, and what each million input and output tokens costs —
bought (amortized, with power) or rented in the user's market — next to the APIs people compare against.

The model (continuous batching, one replica = ``gpus`` cards with tensor parallel):

* **KV capacity**: the memory a replica has for KV cache (its usable memory less weights, activations and
  the CUDA context — :mod:`gpucost.memory`) divided by one sequence's KV cache at ``input + output``
  tokens gives the most concurrent sequences.
* **Decode**: at ``b`` sequences in flight a decode step takes :func:`gpucost.speed.speed`'s step time
  at batch ``b`` and an average KV length of ``input + output / 2``; the time per output token (TPOT) is
  that step.
* **Prefill**: a request's prompt (less the prefix-cache hits) takes ``input × (1 − hit) / prefill
  tokens/s``; time to first token (TTFT) ≈ that prefill plus one decode step — without queueing, so a
  replica is sized to stay well below saturation by the targets, not by queueing theory.
* **Throughput**: each request holds the replica for its prefill and shares each decode step with
  ``b − 1`` others: at most ``b / (b × prefill + output × step(b))`` requests per second. The largest ``b``
  that fits memory and keeps TPOT within its target is the operating point.
* **Cost** per 1M tokens: the fleet's hourly cost (every hour of the day; the fleet is sized for the peak)
  split between input and output by the GPU time each takes, divided by the tokens of the average load.
* **Uncertainty**: decode and prefill carry the cross-validated bands of :mod:`gpucost.bands`, so the
  capacity has a p10–p90 range too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from gpucost.bands import band
from gpucost.catalog import Catalog
from gpucost.economics import calendar_ownership, hourly_costs
from gpucost.errors import GpucostError
from gpucost.i18n import Message
from gpucost.memory import Setup, estimate, usable_gib
from gpucost.models import ModelSpec, model_id
from gpucost.quant import QuantFormat
from gpucost.records import Gpu
from gpucost.serialize import Record
from gpucost.specs import SPECS
from gpucost.speed import speed
from gpucost.units import HOURS_PER_MONTH

#: batch sizes tried for the operating point (and the largest that fits memory)
BATCHES = (1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024)


@dataclass(frozen=True)
class Load(Record):
    """The traffic: requests per second on average, tokens per request, prefix-cache hit rate, and the
    ratio of the peak hour to the average (the fleet is sized for the peak)."""

    requests_per_s: float
    input_tokens: int
    output_tokens: int
    prefix_hit: float = 0.0
    peak_ratio: float = 1.0

    @classmethod
    def from_tokens_per_day(cls, tokens_per_day: float, input_tokens: int, output_tokens: int,
                            prefix_hit: float = 0.0, peak_ratio: float = 1.0) -> Load:
        """The load of a daily volume: its average request rate for requests of these lengths."""
        rps = tokens_per_day / 86_400 / (input_tokens + output_tokens)
        return cls(rps, input_tokens, output_tokens, prefix_hit, peak_ratio)

    def __post_init__(self) -> None:  # the shared bounds (gpucost.specs): the CLI's and the page's
        for name in ("requests_per_s", "input_tokens", "output_tokens", "prefix_hit", "peak_ratio"):
            SPECS[name].check(getattr(self, name), name)


@dataclass(frozen=True)
class OperatingPoint(Record):
    batch: int                   # sequences in flight per replica
    tpot_ms: float
    ttft_ms: float
    requests_per_s: float        # what one replica sustains
    decode_tokens_per_s: float


@dataclass(frozen=True)
class ServePlan(Record):
    model: str
    quant: str
    gpu: str
    gpus_per_replica: int
    engine: str
    load: Load
    max_concurrency: int         # sequences whose KV cache fits one replica
    kv_per_sequence_gib: float
    kv_pool_gib: float
    point: OperatingPoint | None
    capacity_band: dict          # requests/s per replica at the band's p10 / p90
    replicas: int | None
    cards: int | None
    utilization: float | None    # average load ÷ what the fleet sustains
    cost_per_1m_input: dict      # basis (new, used, cloud) → currency per 1M input tokens
    cost_per_1m_output: dict
    monthly_cost: dict           # basis → currency per month for the fleet
    currency: str
    apis: list = field(default_factory=list)
    notes: tuple[str, ...] = ()
    #: basis → the average load [requests/s] above which one replica costs less than the cheapest API of the
    #: same model, and the replica's utilization at that load (> 1: the API is cheaper even at full load)
    break_even: dict = field(default_factory=dict)
    ttft_queued_ms: float | None = None   # mean TTFT at the peak with the wait for the prefills queued ahead
    prefill_utilization: float | None = None  # share of a replica's time spent on prefills at the peak
    replica_max_rps: float | None = None  # the highest load [requests/s] one replica holds within the targets
    ttft_target_ms: float | None = None


def _refuse_non_llm(spec: ModelSpec) -> None:
    if not spec.is_llm:
        raise GpucostError(f"{spec.id} is a diffusion model: serving tokens does not apply to it")


def kv_capacity(spec: ModelSpec, fmt: QuantFormat, gpu: Gpu, *, context: int, prompt: int | None = None,
                gpus: int = 1, engine: str = "vllm", kv_dtype: str = "fp16") -> tuple[float, float]:
    """One sequence's KV cache at ``context`` tokens and the memory a replica of ``gpus`` × ``gpu`` has left
    for KV cache (usable memory less weights, activations and context), both GiB per card."""
    s = Setup(mode="inference", context=context, batch=1, gpus=gpus, engine=engine, kv_dtype=kv_dtype,
              prompt=context if prompt is None else prompt)
    est = estimate(spec, fmt, s)
    per_seq = est.per_gpu.kv_cache
    pool = float(usable_gib(gpu.vram_gib, engine, "inference", gpus)) - (est.per_gpu.total - per_seq)
    return per_seq, max(pool, 0.0)


def _kv(spec: ModelSpec, fmt: QuantFormat, gpu: Gpu, gpus: int, engine: str, kv_dtype: str, load: Load):
    return kv_capacity(spec, fmt, gpu, context=load.input_tokens + load.output_tokens, prompt=load.input_tokens,
                       gpus=gpus, engine=engine, kv_dtype=kv_dtype)


#: context lengths and concurrencies of the "what fits" table
FIT_CONTEXTS = (2048, 4096, 8192, 16384, 32768, 65536, 131072, 262144, 1048576)
FIT_CONCURRENCY = (1, 2, 4, 8, 16, 32, 64, 128, 256)


@dataclass(frozen=True)
class FitRow(Record):
    context: int
    kv_per_sequence_gib: float
    kv_pool_gib: float
    max_concurrency: int         # sequences of this length whose KV cache fits at once


@dataclass(frozen=True)
class ConcurrencyRow(Record):
    concurrency: int
    longest_context: int         # tokens per sequence (prompt + output) when this many run at once; 0: none


@dataclass(frozen=True)
class FitTable(Record):
    """What fits one replica before anything is downloaded: per context length the most concurrent
    sequences, and per number of concurrent users the longest context (up to the model's maximum)."""

    model: str
    quant: str
    gpu: str
    gpus_per_replica: int
    engine: str
    kv_dtype: str
    max_context: int
    by_context: tuple[FitRow, ...]
    by_concurrency: tuple[ConcurrencyRow, ...]


def _concurrency(spec: ModelSpec, fmt: QuantFormat, gpu: Gpu, ctx: int, gpus: int, engine: str, kv_dtype: str) -> int:
    per_seq, pool = kv_capacity(spec, fmt, gpu, context=ctx, gpus=gpus, engine=engine, kv_dtype=kv_dtype)
    return int(pool // per_seq) if per_seq > 0 else 0


def longest_context(spec: ModelSpec, fmt: QuantFormat, gpu: Gpu, concurrency: int, *, gpus: int = 1,
                    engine: str = "vllm", kv_dtype: str = "fp16", limit: int | None = None) -> int:
    """The longest context [tokens] at which ``concurrency`` sequences fit at once (0: not even 1 token;
    capped at ``limit``, by default the model's maximum context): exact, by bisection on whole tokens."""
    hi = limit or spec.max_context or FIT_CONTEXTS[-1]
    if _concurrency(spec, fmt, gpu, hi, gpus, engine, kv_dtype) >= concurrency:
        return hi
    lo = 0  # invariant: lo fits (0 trivially), hi does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _concurrency(spec, fmt, gpu, mid, gpus, engine, kv_dtype) >= concurrency:
            lo = mid
        else:
            hi = mid
    return lo


def fit_table(spec: ModelSpec, fmt: QuantFormat, gpu: Gpu, *, gpus: int = 1, engine: str = "vllm",
              kv_dtype: str = "fp16") -> FitTable:
    """The inverse of :func:`plan_serving`'s capacity: see :class:`FitTable`."""
    _refuse_non_llm(spec)
    top = spec.max_context or FIT_CONTEXTS[-1]
    contexts = [c for c in FIT_CONTEXTS if c < top] + [top]
    rows = []
    for c in contexts:
        per_seq, pool = kv_capacity(spec, fmt, gpu, context=c, gpus=gpus, engine=engine, kv_dtype=kv_dtype)
        rows.append(FitRow(c, per_seq, pool, int(pool // per_seq) if per_seq > 0 else 0))
    conc = tuple(ConcurrencyRow(n, longest_context(spec, fmt, gpu, n, gpus=gpus, engine=engine, kv_dtype=kv_dtype))
                 for n in FIT_CONCURRENCY)
    return FitTable(spec.id, fmt.id, gpu.id, gpus, engine, kv_dtype, top, tuple(rows), conc)


def queued_ttft_ms(ttft_ms: float, prefill_ms: float, rho: float) -> float:
    """Mean time to first token with queueing: the engine schedules prefills ahead of decode steps (vLLM's
    and SGLang's default), so a new request waits for the prompts queued before it — an M/D/1 queue with
    the prefill as service time, whose mean wait is ``rho × prefill / (2 (1 − rho))`` (Pollaczek–Khinchine)
    at prefill utilization ``rho``. Infinite at ``rho >= 1``."""
    if rho >= 1:
        return math.inf
    return ttft_ms + rho * prefill_ms / (2 * (1 - rho))


def max_rps_within_ttft(prefill_ms: float, ttft_ms: float, ttft_target_ms: float | None) -> float:
    """The most requests per second one replica takes before the queued TTFT passes the target (infinite
    without a target): the prefill utilization at which :func:`queued_ttft_ms` reaches it."""
    if ttft_target_ms is None or prefill_ms <= 0:
        return math.inf
    slack = ttft_target_ms - ttft_ms           # what the wait may add
    if slack <= 0:
        return 0.0
    rho_max = 2 * slack / (prefill_ms + 2 * slack)   # queued_ttft_ms(ttft, prefill, rho_max) == target
    return rho_max / (prefill_ms / 1e3)


def replicas_needed(peak_rps: float, capacity_rps: float, prefill_ms: float, ttft_ms: float,
                    ttft_target_ms: float | None) -> int | None:
    """Replicas for ``peak_rps``: enough for its throughput, and (with a TTFT target) few enough prefills
    per replica that the queued TTFT (:func:`queued_ttft_ms`) meets the target. None: no number does."""
    reps = max(1, math.ceil(peak_rps / capacity_rps))
    if ttft_target_ms is None or prefill_ms <= 0:
        return reps
    per_replica = max_rps_within_ttft(prefill_ms, ttft_ms, ttft_target_ms)
    if per_replica <= 0:
        return None
    reps = max(reps, math.ceil(peak_rps / per_replica))
    # the rounding above can land one replica short of the target: step up until it is met
    while queued_ttft_ms(ttft_ms, prefill_ms, peak_rps / reps * prefill_ms / 1e3) > ttft_target_ms * (1 + 1e-12):
        reps += 1
    return reps


def plan_serving(spec: ModelSpec, fmt: QuantFormat, gpu: Gpu, load: Load, *, gpus: int = 1, engine: str = "vllm",
                 kv_dtype: str = "fp16", ttft_ms: float | None = None, tpot_ms: float | None = None,
                 catalog: Catalog | None = None, currency: str = "USD") -> ServePlan:
    """The serving plan of ``load`` on replicas of ``gpus`` × ``gpu`` (see the module docstring)."""
    _refuse_non_llm(spec)
    catalog = catalog or Catalog()
    notes: list = [Message("sv_note_queue")]
    per_seq, pool = _kv(spec, fmt, gpu, gpus, engine, kv_dtype, load)
    max_conc = int(pool // per_seq) if per_seq > 0 else 0
    hit = load.prefix_hit
    ctx = load.input_tokens + load.output_tokens // 2
    point = None
    replica_max = 0.0
    if max_conc >= 1:
        first = speed(spec, fmt, gpu, gpus=gpus, batch=1, context=max(load.input_tokens, 1), engine=engine,
                      kv_dtype=kv_dtype, catalog=catalog)
        if first.prefill_tokens_per_s is None:
            raise GpucostError(f"{gpu.id} has no dense throughput figure: no prefill time")
        prefill_s = load.input_tokens * (1 - hit) / first.prefill_tokens_per_s
        peak = load.requests_per_s * load.peak_ratio
        best: tuple[int, float] | None = None   # (replicas, -requests/s per replica): fewest, then fastest
        for b in sorted({*(x for x in BATCHES if x <= max_conc), min(max_conc, BATCHES[-1])}):
            sp = speed(spec, fmt, gpu, gpus=gpus, batch=b, context=ctx, engine=engine, kv_dtype=kv_dtype,
                       catalog=catalog)
            step = sp.step_ms / 1e3
            ttft = (prefill_s + step) * 1e3
            if (tpot_ms is not None and sp.step_ms > tpot_ms) or (ttft_ms is not None and ttft > ttft_ms):
                continue
            rps = b / (b * prefill_s + load.output_tokens * step)
            reps = replicas_needed(peak, rps, prefill_s * 1e3, ttft, ttft_ms)
            if reps is None:
                continue
            holds = min(rps, max_rps_within_ttft(prefill_s * 1e3, ttft, ttft_ms))
            replica_max = max(replica_max, holds)
            if best is None or (reps, -rps) < best:
                best = (reps, -rps)
                point = OperatingPoint(batch=b, tpot_ms=sp.step_ms, ttft_ms=ttft, requests_per_s=rps,
                                       decode_tokens_per_s=sp.decode_tokens_per_s)
    else:
        notes.append(Message("sv_note_nofit", tokens=load.input_tokens + load.output_tokens, n=gpus, card=gpu.id))
    empty: dict = {}
    if point is None:
        if max_conc >= 1:
            notes.append(Message("sv_note_targets"))
        return ServePlan(spec.id, fmt.id, gpu.id, gpus, engine, load, max_conc, per_seq, pool, None, empty, None,
                         None, None, empty, empty, empty, currency.upper(), _apis(spec, load, catalog, currency),
                         tuple(notes))
    dec = band("decode_speed", engine, catalog)
    capacity = {"low": point.requests_per_s * dec.p10, "high": point.requests_per_s * dec.p90} if dec else {}
    prefill_ms = point.ttft_ms - point.tpot_ms
    replicas = replicas_needed(load.requests_per_s * load.peak_ratio, point.requests_per_s, prefill_ms,
                               point.ttft_ms, ttft_ms) or 1
    rho = load.requests_per_s * load.peak_ratio / replicas * prefill_ms / 1e3
    ttft_queued = queued_ttft_ms(point.ttft_ms, prefill_ms, rho)
    cards = replicas * gpus
    util = load.requests_per_s / (replicas * point.requests_per_s)
    # GPU time per request: its prefill, and its share of the decode steps
    t_in = point.ttft_ms / 1e3 - point.tpot_ms / 1e3     # the prefill
    t_out = load.output_tokens * point.tpot_ms / 1e3 / point.batch
    share_in = t_in / (t_in + t_out)
    tok_in_h = load.requests_per_s * load.input_tokens * 3600
    tok_out_h = load.requests_per_s * load.output_tokens * 3600
    cost_in: dict[str, float | None] = {}
    cost_out: dict[str, float | None] = {}
    monthly: dict[str, float | None] = {}
    hourly = hourly_costs(catalog, gpu.id, currency, calendar_ownership())
    for basis, h in hourly.items():
        if h.per_hour is None:
            cost_in[basis] = cost_out[basis] = monthly[basis] = None
            continue
        fleet_h = h.per_hour * cards
        cost_in[basis] = fleet_h * share_in / tok_in_h * 1e6
        cost_out[basis] = fleet_h * (1 - share_in) / tok_out_h * 1e6
        monthly[basis] = fleet_h * HOURS_PER_MONTH
    apis = _apis(spec, load, catalog, currency)
    even: dict[str, dict] = {}
    if apis:
        api_per_rps = apis[0]["monthly_cost"] / load.requests_per_s  # the bill is linear in the load
        for basis, h in hourly.items():
            if h.per_hour is not None and api_per_rps > 0:
                rps = h.per_hour * gpus * HOURS_PER_MONTH / api_per_rps
                even[basis] = {"requests_per_s": rps, "utilization": rps / point.requests_per_s,
                               "tokens_per_month": rps * (load.input_tokens + load.output_tokens) * 3600
                               * HOURS_PER_MONTH,
                               "api": f"{apis[0]['provider']} {apis[0]['api_model']}"}
    return ServePlan(spec.id, fmt.id, gpu.id, gpus, engine, load, max_conc, per_seq, pool, point, capacity, replicas,
                     cards, util, cost_in, cost_out, monthly, currency.upper(), apis, tuple(notes), even, ttft_queued,
                     rho, replica_max, ttft_ms)


def cost_curve(plan: ServePlan, points: int = 25, span: float = 10.0) -> list[dict]:
    """Monthly cost against the average load, from ``load / span`` to ``load × span`` (log-spaced), on the
    plan's operating point: per basis the fleet the load needs (replicas for its peak and TTFT target,
    :func:`replicas_needed`) at the plan's price per card, and the cheapest API's bill, which grows with
    the load. At the plan's own load it is the plan's answer. Empty without an operating point."""
    if plan.point is None or not plan.cards:
        return []
    ld, pt = plan.load, plan.point
    prefill_ms = pt.ttft_ms - pt.tpot_ms
    target = plan.ttft_target_ms
    per_card = {b: (m / plan.cards if m is not None else None) for b, m in plan.monthly_cost.items()}
    api_per_rps = plan.apis[0]["monthly_cost"] / ld.requests_per_s if plan.apis else None
    out = []
    for i in range(points):
        rps = ld.requests_per_s * span ** (2 * i / (points - 1) - 1)
        reps = replicas_needed(rps * ld.peak_ratio, pt.requests_per_s, prefill_ms, pt.ttft_ms, target)
        row: dict = {"requests_per_s": rps, "replicas": reps,
                     "api": api_per_rps * rps if api_per_rps is not None else None}
        for b, c in per_card.items():
            row[b] = c * reps * plan.gpus_per_replica if (c is not None and reps is not None) else None
        out.append(row)
    return out


def _apis(spec: ModelSpec, load: Load, catalog: Catalog, currency: str) -> list[dict]:
    """API prices for this model (data/api_prices.csv rows whose comparable model is it), converted to
    ``currency``, with the monthly bill of the same average load."""
    table = catalog.table("api_prices")
    out = []
    tok_month_in = load.requests_per_s * load.input_tokens * 3600 * HOURS_PER_MONTH
    tok_month_out = load.requests_per_s * load.output_tokens * 3600 * HOURS_PER_MONTH
    for r in table.to_dict(orient="records"):
        comp = str(r.get("comparable_model") or "")
        if not comp or model_id(comp, catalog) != spec.id:
            continue
        rate = catalog.convert(1.0, str(r["currency"]), currency.upper())
        cached = r.get("cached_input_per_mtok")
        cached = float(cached) if cached == cached and cached is not None else float(r["input_per_mtok"])
        per_in = (1 - load.prefix_hit) * float(r["input_per_mtok"]) + load.prefix_hit * cached
        monthly = (per_in * tok_month_in + float(r["output_per_mtok"]) * tok_month_out) / 1e6 * rate
        out.append({"provider": r["provider"], "api_model": r["api_model"], "tier": r.get("tier") or "",
                    "input_per_1m": float(r["input_per_mtok"]) * rate, "cached_input_per_1m": cached * rate,
                    "output_per_1m": float(r["output_per_mtok"]) * rate, "monthly_cost": monthly,
                    "as_of": str(r["as_of"]), "source": r["source"]})
    return sorted(out, key=lambda a: a["monthly_cost"])


__all__ = ["FitTable", "Load", "cost_curve", "OperatingPoint", "ServePlan", "fit_table", "kv_capacity", "longest_context",
           "plan_serving"]
