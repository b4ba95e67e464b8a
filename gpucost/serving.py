"""Serving at a target load: how many concurrent sequences fit, what one replica sustains within the
latency targets, how many cards the load needs, and what each million input and output tokens costs —
bought (amortized, with power) or rented in the user's market — next to the APIs people compare against.

The model (continuous batching, one replica = ``gpus`` cards with tensor parallel):

* **KV capacity**: the memory a replica has for KV cache (its usable memory less weights, activations and
  the CUDA context — :mod:`gpucost.memory`) divided by one sequence's KV cache at ``input + output``
  tokens gives the most concurrent sequences.
* **Steps**: every forward step of the engine is priced by :func:`gpucost.serving_step.step_seconds` — the weights its
  tokens touch (an MoE's experts hit by all of them) and the running sequences' KV cache read once, every token's
  FLOP computed, the larger of the two times plus per-layer time and the tensor-parallel all-reduces — with the
  engine's own scheduling (:mod:`gpucost.scheduling`): vLLM V1 and TensorRT-LLM decode the running sequences and
  prefill prompt chunks in the same step, within a token budget; SGLang (and vLLM V0) run prompt-only prefill
  steps first, which the running sequences wait for. The engine's cap on running sequences bounds the batch.
* **Decode and prefill**: at ``b`` sequences in flight (average KV length ``input + output / 2``) the time per
  output token (TPOT) is the step; a lone request's time to first token (TTFT) is its prompt's steps (the last
  makes the first token), plus the wait for the prompts queued ahead (an M/D/1 queue whose service time is the
  replica's time per prompt under load: its mean, median or 90th percentile).
* **Throughput**: with mixed steps ``b / (output × step)`` requests per second, each step carrying the
  ``b × input / output`` prompt tokens that keep ``b`` sequences fed; with prefill steps first
  ``b / (b × prefill + output × step(b))``. The largest ``b`` that fits memory and keeps the latencies within
  their targets is the operating point (:func:`operating_point`). A published benchmark is replayed step by step
  on the same model (:mod:`gpucost.replay`) to judge it against what it measured.
* **Cost** per 1M tokens: the fleet's hourly cost (every hour of the day; the fleet is sized for the peak)
  split between input and output by the GPU time each takes (a step that does both split by Shapley's rule:
  each bears half of its own time alone and half of what it adds to the other's), divided by the tokens of the
  average load.
* **Uncertainty**: the capacity carries the 8-in-10 band (gpucost.bands) of measured ÷ estimated throughput on the
  published serving runs of the validation corpus (:mod:`gpucost.bands`, category ``serving_throughput``),
  else the decode band.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field, replace
from functools import cache

from gpucost.bands import band
from gpucost.catalog import Catalog, derived
from gpucost.economics import calendar_ownership, hourly_costs
from gpucost.errors import GpucostError, UnknownNameError
from gpucost.i18n import Message
from gpucost.memory import Setup, estimate, kv_pool_gib, usable_gib
from gpucost.memory_profiles import ENGINE_PROFILES
from gpucost.models import ModelSpec, model_id
from gpucost.quant import QuantFormat
from gpucost.records import Gpu
from gpucost.scheduling import Scheduler, scheduler
from gpucost.serialize import Record
from gpucost.serving_step import step_cost
from gpucost.specs import SPECS
from gpucost.speed import EngineEfficiency, card_efficiency, default_backend, speed
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
    ttft_ms: float               # one request's time to first token with no prompt queued ahead of it
    requests_per_s: float        # what one replica sustains
    decode_tokens_per_s: float
    #: the replica's time per prompt under load [ms]: the service time of the prompts' queue (M/D/1); by default
    #: the TTFT less one step (a prompt prefilled on its own, then a step for its first token)
    prefill_ms: float = math.nan
    #: share of the replica's GPU time that the prompts take (splits the cost between input and output tokens);
    #: by default one prefill against a ``1 / batch`` share of the output's steps
    input_share: float = math.nan
    scheduler: str = ""          # the engine's step scheduling it assumes (gpucost.scheduling), "" for none
    #: of ``ttft_ms``, the server's own time per request beyond the steps [ms] (EngineEfficiency.request_latency_ms):
    #: not the replica's GPU time, so neither the prompts' queue service time nor the throughput holds it
    latency_ms: float = 0.0

    def __post_init__(self) -> None:
        if math.isnan(self.prefill_ms):
            object.__setattr__(self, "prefill_ms", self.ttft_ms - self.tpot_ms)


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
    capacity_band: dict          # requests/s per replica at the band's low / high end
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
    ttft_queued_ms: float | None = None   # TTFT (of ``ttft_stat``) at the peak with the wait for the prefills queued ahead
    prefill_utilization: float | None = None  # share of a replica's time spent on prefills at the peak
    replica_max_rps: float | None = None  # the highest load [requests/s] one replica holds within the targets
    ttft_target_ms: float | None = None
    ttft_stat: str = "mean"               # what the TTFT figures are: the mean, the median (p50) or p90
    #: without an operating point: the closest configuration — ``gpus_per_replica``, the fewest cards per
    #: replica (up to 8) that meet the targets, else the best TTFT and TPOT one replica reaches (one sequence
    #: at a time, no queue) — so a user sees how far the targets are from what the card can do
    closest: dict = field(default_factory=dict)


def _refuse_non_llm(spec: ModelSpec) -> None:
    if not spec.is_llm:
        raise GpucostError(f"{spec.id} is a diffusion model: serving tokens does not apply to it")


def kv_capacity(spec: ModelSpec, fmt: QuantFormat, gpu: Gpu, *, context: int, prompt: int | None = None,
                gpus: int = 1, engine: str = "vllm", kv_dtype: str = "fp16",
                fraction: float | None = None) -> tuple[float, float]:
    """One sequence's KV cache at ``context`` tokens and the memory a replica of ``gpus`` × ``gpu`` has left
    for KV cache, both GiB per card: the pool a pre-allocating engine makes (:func:`gpucost.memory.kv_pool_gib`:
    vLLM and SGLang their share of the card less weights, activations and context; TensorRT-LLM its
    ``free_gpu_memory_fraction`` of what those leave — ``fraction`` where a run states its own), else the card's
    memory less those."""
    s = Setup(mode="inference", context=context, batch=1, gpus=gpus, engine=engine, kv_dtype=kv_dtype,
              prompt=context if prompt is None else prompt)
    est = estimate(spec, fmt, s)
    per_seq = est.per_gpu.kv_cache
    prof = ENGINE_PROFILES.get(engine)
    if prof is not None and prof.preallocate is not None:
        pool = kv_pool_gib(est, gpu.vram_gib, fraction)
    else:
        pool = float(usable_gib(gpu.vram_gib, engine, "inference", gpus)) - (est.per_gpu.total - per_seq)
    return per_seq, max(pool, 0.0)


def _whole(per_seq: float, pool: float) -> int:
    """Whole sequences of ``per_seq`` GiB of KV cache that a pool of ``pool`` GiB holds."""
    return int(pool // per_seq) if per_seq > 0 else 0


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


def _room(spec: ModelSpec, fmt: QuantFormat, gpu: Gpu, ctx: int, gpus: int, engine: str, kv_dtype: str) -> float:
    """How many sequences of ``ctx`` tokens the KV pool holds, as a real number (floor: whole sequences)."""
    per_seq, pool = kv_capacity(spec, fmt, gpu, context=ctx, gpus=gpus, engine=engine, kv_dtype=kv_dtype)
    return pool / per_seq if per_seq > 0 else 0.0


def _concurrency(spec: ModelSpec, fmt: QuantFormat, gpu: Gpu, ctx: int, gpus: int, engine: str, kv_dtype: str) -> int:
    return int(_room(spec, fmt, gpu, ctx, gpus, engine, kv_dtype))


def longest_context(spec: ModelSpec, fmt: QuantFormat, gpu: Gpu, concurrency: int, *, gpus: int = 1,
                    engine: str = "vllm", kv_dtype: str = "fp16", limit: int | None = None,
                    bracket: tuple[int, float, int, float] | None = None) -> int:
    """The longest context [tokens] at which ``concurrency`` sequences fit at once (0: not even 1 token;
    capped at ``limit``, by default the model's maximum context): exact on whole tokens, by a search that
    keeps a context that fits below and one that does not above (``bracket``, when the caller knows one),
    guessing by linear interpolation of one sequence's share of the pool (nearly linear in the context) and
    halving when a guess does not shrink the interval enough. ``bracket``: (a context that fits, its room, a
    longer one that does not, its room)."""
    if bracket is not None:
        lo, room_lo, hi, room_hi = bracket
    else:
        hi = limit or spec.max_context or FIT_CONTEXTS[-1]
        room_hi = _room(spec, fmt, gpu, hi, gpus, engine, kv_dtype)
        if int(room_hi) >= concurrency:
            return hi
        lo, room_lo = 0, math.inf   # invariant: lo fits (0 trivially), hi does not
    halve = False
    while hi - lo > 1:
        if halve or not math.isfinite(room_lo) or room_lo <= room_hi or room_hi <= 0:
            mid = (lo + hi) // 2
        else:  # one sequence's share of the pool (1 / room) grows about linearly with its length: interpolate it
            x_lo, x_hi = 1 / room_lo, 1 / room_hi
            mid = lo + int((1 / concurrency - x_lo) / (x_hi - x_lo) * (hi - lo))
            mid = min(max(mid, lo + 1), hi - 1)
        room = _room(spec, fmt, gpu, mid, gpus, engine, kv_dtype)
        width = hi - lo
        if int(room) >= concurrency:
            lo, room_lo = mid, room
        else:
            hi, room_hi = mid, room
        halve = hi - lo > width // 2   # interpolation gained less than a halving: halve next
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
        rows.append(FitRow(c, per_seq, pool, _whole(per_seq, pool)))
    conc = []
    room = {r.context: (r.kv_pool_gib / r.kv_per_sequence_gib if r.kv_per_sequence_gib > 0 else 0.0) for r in rows}
    for n in FIT_CONCURRENCY:
        # the table's own rows bracket the answer: the longest listed context that holds n, and the next
        fits = [r.context for r in rows if r.max_concurrency >= n]
        above = [r.context for r in rows if r.max_concurrency < n and (not fits or r.context > max(fits))]
        bracket = None
        if fits and above:
            lo, hi = max(fits), min(above)
            bracket = (lo, room[lo], hi, room[hi])
        conc.append(ConcurrencyRow(n, longest_context(spec, fmt, gpu, n, gpus=gpus, engine=engine, kv_dtype=kv_dtype,
                                                      bracket=bracket)))
    return FitTable(spec.id, fmt.id, gpu.id, gpus, engine, kv_dtype, top, tuple(rows), tuple(conc))


#: what a TTFT figure and target mean: the mean over requests, or the median / 90th percentile
TTFT_STATISTICS = ("mean", "p50", "p90")
_QUANTILE = {"p50": 0.5, "p90": 0.9}
#: prefill utilizations at which the M/D/1 waiting-time quantiles are tabulated (interpolated between)
_RHO_GRID = tuple(i / 400 for i in range(400)) + (0.9975, 0.999)


def md1_wait_cdf(t: float, rho: float) -> float:
    """P(wait ≤ t) in an M/D/1 queue at utilization ``rho``, ``t`` in service times (Erlang's formula:
    (1 − ρ) Σ_{k ≤ t} (ρ (k − t))^k / k! · e^{−ρ (k − t)}). Exact; its alternating sum loses digits past
    t ≈ 30 service times, where :func:`md1_wait_quantile` switches to the queue's exponential tail."""
    if t < 0:
        return 0.0
    terms = [(rho * (k - t)) ** k / math.factorial(k) * math.exp(-rho * (k - t)) for k in range(int(t) + 1)]
    return min(1.0, (1 - rho) * math.fsum(terms))


def _tail_decay(rho: float) -> float:
    """The M/D/1 wait's tail decay rate θ (per service time): the root x > 0 of ρ (e^x − 1) = x."""
    lo, hi = 0.0, 1.0
    while rho * math.expm1(hi) < hi:
        hi *= 2
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if rho * math.expm1(mid) < mid else (lo, mid)
    return hi


_EXACT_UP_TO = 25.0


def md1_wait_quantile(rho: float, q: float) -> float:
    """The ``q``-quantile of the M/D/1 wait at utilization ``rho``, in service times: 0 when at least a
    share ``q`` of requests find the queue empty (1 − ρ ≥ q); exact by bisection on :func:`md1_wait_cdf`
    up to 25 service times, beyond that on the exponential tail P(W > t) = P(W > 25) e^{−θ (t − 25)}."""
    if rho <= 0 or 1 - rho >= q:
        return 0.0
    if rho >= 1:
        return math.inf
    if md1_wait_cdf(_EXACT_UP_TO, rho) < q:
        tail = 1 - md1_wait_cdf(_EXACT_UP_TO, rho)
        return _EXACT_UP_TO + math.log(tail / (1 - q)) / _tail_decay(rho)
    lo, hi = 0.0, _EXACT_UP_TO
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if md1_wait_cdf(mid, rho) < q else (lo, mid)
    return hi


@cache
def _quantile_table(stat: str) -> tuple[float, ...]:
    """The wait's ``stat`` quantile at each utilization of :data:`_RHO_GRID` (a property of the queue, not of
    any data: computed once per process)."""
    return tuple(md1_wait_quantile(r, _QUANTILE[stat]) for r in _RHO_GRID)


def _wait_service_times(rho: float, stat: str) -> float:
    """The wait for the prefills queued ahead, in prefill times: its mean (Pollaczek–Khinchine,
    ρ / (2 (1 − ρ))) or a quantile (interpolated in a table of :func:`md1_wait_quantile`)."""
    if rho >= 1:
        return math.inf
    if rho <= 0:
        return 0.0
    if stat == "mean":
        return rho / (2 * (1 - rho))
    if rho > _RHO_GRID[-1]:
        return md1_wait_quantile(rho, _QUANTILE[stat])
    table = _quantile_table(stat)
    i = max(1, bisect.bisect_left(_RHO_GRID, rho))
    r0, r1 = _RHO_GRID[i - 1], _RHO_GRID[i]
    return table[i - 1] + (table[i] - table[i - 1]) * (rho - r0) / (r1 - r0)


def _check_stat(stat: str) -> None:
    if stat not in TTFT_STATISTICS:
        raise UnknownNameError("TTFT statistic", stat, TTFT_STATISTICS)


def queued_ttft_ms(ttft_ms: float, prefill_ms: float, rho: float, stat: str = "mean") -> float:
    """Time to first token with queueing: the engine schedules prefills ahead of decode steps (vLLM's and
    SGLang's default), so a new request waits for the prompts queued before it — an M/D/1 queue with the
    prefill as service time at prefill utilization ``rho``. ``stat``: the mean wait (Pollaczek–Khinchine,
    ``rho × prefill / (2 (1 − rho))``), or its median / 90th percentile (Erlang's exact distribution).
    Infinite at ``rho >= 1``."""
    _check_stat(stat)
    return ttft_ms + prefill_ms * _wait_service_times(rho, stat)


def max_rps_within_ttft(prefill_ms: float, ttft_ms: float, ttft_target_ms: float | None, stat: str = "mean") -> float:
    """The most requests per second one replica takes before the queued TTFT (:func:`queued_ttft_ms`, of
    statistic ``stat``) passes the target (infinite without a target)."""
    _check_stat(stat)
    if ttft_target_ms is None or prefill_ms <= 0:
        return math.inf
    slack = ttft_target_ms - ttft_ms           # what the wait may add
    if slack <= 0:
        return 0.0
    if stat == "mean":
        rho_max = 2 * slack / (prefill_ms + 2 * slack)   # queued_ttft_ms(ttft, prefill, rho_max) == target
    else:  # the quantile grows with rho: invert the table
        w = slack / prefill_ms
        table = _quantile_table(stat)
        i = bisect.bisect_right(table, w)
        if i >= len(table):
            rho_max = _RHO_GRID[-1]
        else:
            r0, r1, w0, w1 = _RHO_GRID[i - 1], _RHO_GRID[i], table[i - 1], table[i]
            rho_max = r0 + (r1 - r0) * (w - w0) / (w1 - w0) if w1 > w0 else r0
    return rho_max / (prefill_ms / 1e3)


def replicas_needed(peak_rps: float, capacity_rps: float, prefill_ms: float, ttft_ms: float,
                    ttft_target_ms: float | None, stat: str = "mean") -> int | None:
    """Replicas for ``peak_rps``: enough for its throughput, and (with a TTFT target) few enough prefills
    per replica that the queued TTFT (:func:`queued_ttft_ms`) meets the target. None: no number does."""
    reps = max(1, math.ceil(peak_rps / capacity_rps))
    if ttft_target_ms is None or prefill_ms <= 0:
        return reps
    per_replica = max_rps_within_ttft(prefill_ms, ttft_ms, ttft_target_ms, stat)
    if per_replica <= 0:
        return None
    reps = max(reps, math.ceil(peak_rps / per_replica))
    # the rounding above (and the table's interpolation) can land short of the target: step up until met
    while queued_ttft_ms(ttft_ms, prefill_ms, peak_rps / reps * prefill_ms / 1e3, stat) > ttft_target_ms * (1 + 1e-12):
        reps += 1
    return reps


def prefill_seconds(spec: ModelSpec, fmt: QuantFormat, gpu: Gpu, input_tokens: int, prefix_hit: float = 0.0, *,
                    gpus: int = 1, engine: str = "vllm", kv_dtype: str = "fp16", catalog: Catalog | None = None,
                    eff: EngineEfficiency | None = None) -> float:
    """One request's prefill on a replica: its prompt less the prefix-cache hits at the prefill speed of
    :func:`gpucost.speed.speed`."""
    first = speed(spec, fmt, gpu, gpus=gpus, batch=1, context=max(input_tokens, 1), engine=engine,
                  kv_dtype=kv_dtype, catalog=catalog, eff=eff)
    if first.prefill_tokens_per_s is None:
        raise GpucostError(f"{gpu.id} has no dense throughput figure: no prefill time")
    return input_tokens * (1 - prefix_hit) / first.prefill_tokens_per_s


def operating_point(spec: ModelSpec, fmt: QuantFormat, gpu: Gpu, batch: int, input_tokens: int, output_tokens: int,
                    prefill_s: float | None, *, gpus: int = 1, engine: str = "vllm", kv_dtype: str = "fp16",
                    catalog: Catalog | None = None, eff: EngineEfficiency | None = None,
                    sched: Scheduler | None = None, prefix_hit: float = 0.0) -> OperatingPoint:
    """:func:`_step_point`, its TTFT with the engine's request latency (:attr:`OperatingPoint.latency_ms`): what a
    served request waits beyond the steps, fitted on the corpus's serving runs at concurrency 1."""
    pt = _step_point(spec, fmt, gpu, batch, input_tokens, output_tokens, prefill_s, gpus=gpus, engine=engine,
                     kv_dtype=kv_dtype, catalog=catalog, eff=eff, sched=sched, prefix_hit=prefix_hit)
    latency = (eff or card_efficiency(engine, gpu, fmt, catalog)).request_latency_ms
    return replace(pt, ttft_ms=pt.ttft_ms + latency, latency_ms=latency) if latency else pt


def _step_point(spec: ModelSpec, fmt: QuantFormat, gpu: Gpu, batch: int, input_tokens: int, output_tokens: int,
                prefill_s: float | None, *, gpus: int = 1, engine: str = "vllm", kv_dtype: str = "fp16",
                catalog: Catalog | None = None, eff: EngineEfficiency | None = None,
                sched: Scheduler | None = None, prefix_hit: float = 0.0) -> OperatingPoint:
    """A replica with ``batch`` sequences in flight (continuous batching) in steady state.

    With the engine's step scheduling ``sched`` (:mod:`gpucost.scheduling`), every step priced by
    :func:`gpucost.serving_step.step_seconds` (running sequences at an average KV length of ``input + output / 2``):

    * **mixed steps** (vLLM V1, TensorRT-LLM): each step decodes the ``b`` running sequences and prefills
      ``p = b × input′ / output`` prompt tokens (``input′`` after prefix-cache hits: the prompts that keep ``b``
      sequences decoding), with ``b + p`` within the step's token budget (``b`` is lowered until it is). TPOT = the
      step; requests/s = ``b / (output × step)``; a lone prompt's TTFT = the steps its chunks take in what the
      decodes leave of the budget; its queue service time ``input′ / (budget − b) × step``; the prompts' share of
      the GPU time by Shapley's split of the step between the prefill and the decodes.
    * **prefill first** (SGLang, vLLM V0): prompts are prefilled in steps of up to the budget (``min(budget,
      b × input′)`` tokens under load) that the running sequences wait for; each request holds the replica for
      its share of a prefill step and a ``1 / b`` share of its ``output`` decode steps: requests/s =
      ``b / (b × prefill + output × step(b))``; a lone prompt's TTFT = its own prefill steps (the last makes the
      first token).

    Without ``sched`` (llama.cpp, transformers, ExLlamaV2): the decode step of :func:`gpucost.speed.speed` is the
    TPOT, ``prefill_s`` (one prompt on its own) plus one step the TTFT, and requests/s =
    ``batch / (batch × prefill + output × step)``."""
    if sched is None:
        if prefill_s is None:
            raise GpucostError("a prefill time is needed without an engine scheduler")
        sp = speed(spec, fmt, gpu, gpus=gpus, batch=batch, context=input_tokens + output_tokens // 2, engine=engine,
                   kv_dtype=kv_dtype, catalog=catalog, eff=eff)
        step = sp.step_ms / 1e3
        share = prefill_s / (prefill_s + output_tokens * step / batch)
        return OperatingPoint(batch=batch, tpot_ms=sp.step_ms, ttft_ms=(prefill_s + step) * 1e3,
                              requests_per_s=batch / (batch * prefill_s + output_tokens * step),
                              decode_tokens_per_s=sp.decode_tokens_per_s, input_share=share)
    cost = step_cost(spec, fmt, gpu, gpus=gpus, engine=engine, kv_dtype=kv_dtype, catalog=catalog, eff=eff)
    n_in = input_tokens * (1 - prefix_hit)          # prompt tokens to compute
    pre_ctx = input_tokens * prefix_hit + n_in / 2  # what a prompt token attends to, on average
    ctx = input_tokens + output_tokens / 2
    b = min(batch, sched.max_running or batch)
    if n_in <= 0:   # every prompt token a cache hit: decode only
        step = cost.seconds(b, ctx)
        return OperatingPoint(b, step * 1e3, step * 1e3, b / (output_tokens * step), b / step, 0.0, 0.0, sched.label)
    if sched.mixed:
        b = max(1, min(b, math.floor(sched.token_budget * output_tokens / (n_in + output_tokens))))
        p = b * n_in / output_tokens
        step = cost.seconds(b, ctx, p, pre_ctx)
        bare = cost.seconds(b, ctx)
        room = max(sched.token_budget - b, 1)
        alone = sum(cost.seconds(b, ctx, chunk, pre_ctx) for chunk in _chunks(n_in, room))
        # the prompts' share of the step by Shapley's split of a joint cost between two parties (each bears half of
        # its own cost alone plus half of what it adds to the other's): (prefill alone + step − decode alone) / 2
        share = (cost.seconds(0, 0.0, p, pre_ctx) + step - bare) / (2 * step)
        return OperatingPoint(b, step * 1e3, alone * 1e3, b / (output_tokens * step), b / step,
                              n_in / room * step * 1e3, share, sched.label)
    step = cost.seconds(b, ctx)
    fill = min(sched.token_budget, b * n_in)
    per_prompt = cost.seconds(0, 0.0, fill, pre_ctx) * n_in / fill
    alone = sum(cost.seconds(0, 0.0, chunk, pre_ctx) for chunk in _chunks(n_in, sched.token_budget))
    busy = b * per_prompt + output_tokens * step
    return OperatingPoint(b, step * 1e3, alone * 1e3, b / busy, b / step, per_prompt * 1e3, b * per_prompt / busy,
                          sched.label)


def _chunks(tokens: float, size: int) -> list[float]:
    """``tokens`` prompt tokens in steps of at most ``size``."""
    full = int(tokens // size)
    rest = tokens - full * size
    return [float(size)] * full + ([rest] if rest > 1e-9 else [])


def saturated(spec: ModelSpec, fmt: QuantFormat, gpu: Gpu, input_tokens: int, output_tokens: int, *,
              concurrency: int | None = None, gpus: int = 1, engine: str = "vllm", kv_dtype: str = "fp16",
              prefix_hit: float = 0.0, catalog: Catalog | None = None,
              eff: EngineEfficiency | None = None, sched: Scheduler | None = None) -> OperatingPoint:
    """A replica fed faster than it serves, in steady state (``concurrency`` clients that send their next request
    as soon as one finishes, or a queue that never empties): ``concurrency`` sequences in flight, or as many as
    the KV cache and the engine's cap on running sequences hold (``sched``: the engine's default scheduling,
    :func:`gpucost.scheduling.scheduler`; engines without one at most :data:`BATCHES`' largest)."""
    sched = sched or scheduler(engine, gpu)
    per_seq, pool = kv_capacity(spec, fmt, gpu, context=input_tokens + output_tokens, prompt=input_tokens, gpus=gpus,
                                engine=engine, kv_dtype=kv_dtype)
    fits = _whole(per_seq, pool)
    cap = (sched.max_running or fits) if sched is not None else BATCHES[-1]
    batch = min(fits, cap) if concurrency is None else min(concurrency, fits)
    if batch < 1:
        raise GpucostError(f"one sequence of {input_tokens + output_tokens} tokens does not fit {gpus} × {gpu.id}")
    pre = None if sched is not None else prefill_seconds(spec, fmt, gpu, input_tokens, prefix_hit, gpus=gpus,
                                                          engine=engine, kv_dtype=kv_dtype, catalog=catalog, eff=eff)
    return operating_point(spec, fmt, gpu, batch, input_tokens, output_tokens, pre, gpus=gpus, engine=engine,
                           kv_dtype=kv_dtype, catalog=catalog, eff=eff, sched=sched, prefix_hit=prefix_hit)


def closed_loop_latency(point: OperatingPoint, output_tokens: int) -> tuple[float, float]:
    """Mean (TTFT, TPOT) [ms] seen by ``point.batch`` clients that each send a new request as soon as the
    last one finishes (a benchmark at fixed concurrency). A request waits for the prefills of the others
    arriving meanwhile (the M/D/1 wait at the prefill utilization of the other ``batch − 1`` clients), and
    the rest of its time in the replica — ``batch / requests_per_s`` by Little's law — is its decode, whose
    steps the others' prefills interrupt: TPOT = (time in the replica − TTFT) / output tokens."""
    prefill_ms = point.prefill_ms
    n = point.batch
    rho = point.requests_per_s * prefill_ms / 1e3 * (n - 1) / n
    ttft = queued_ttft_ms(point.ttft_ms, prefill_ms, rho)
    in_replica = n / point.requests_per_s * 1e3   # the GPU's time per request: without the server's own latency
    return ttft, max(point.tpot_ms, (in_replica - (ttft - point.latency_ms)) / output_tokens)


def _best_point(spec: ModelSpec, fmt: QuantFormat, gpu: Gpu, load: Load, max_conc: int, *, gpus: int, engine: str,
                kv_dtype: str, ttft_ms: float | None, tpot_ms: float | None, catalog: Catalog,
                ttft_stat: str) -> tuple[OperatingPoint | None, float]:
    """(the operating point that needs the fewest replicas for the peak, then serves the most; the most requests
    per second one replica holds within the targets) over the batches up to ``max_conc`` and the engine's cap on
    running sequences (:func:`gpucost.scheduling.scheduler`)."""
    sched = scheduler(engine, gpu)
    prefill_s = None if sched is not None else prefill_seconds(
        spec, fmt, gpu, load.input_tokens, load.prefix_hit, gpus=gpus, engine=engine, kv_dtype=kv_dtype,
        catalog=catalog)
    peak = load.requests_per_s * load.peak_ratio
    point, replica_max = None, 0.0
    best: tuple[int, float] | None = None   # (replicas, -requests/s per replica): fewest, then fastest
    top = min(max_conc, (sched.max_running or max_conc) if sched is not None else BATCHES[-1])
    for b in sorted({*(x for x in BATCHES if x <= top), top}):
        pt = operating_point(spec, fmt, gpu, b, load.input_tokens, load.output_tokens, prefill_s, gpus=gpus,
                             engine=engine, kv_dtype=kv_dtype, catalog=catalog, sched=sched, prefix_hit=load.prefix_hit)
        if (tpot_ms is not None and pt.tpot_ms > tpot_ms) or (ttft_ms is not None and pt.ttft_ms > ttft_ms):
            break  # a step only grows with the batch: no larger batch meets the targets either
        reps = replicas_needed(peak, pt.requests_per_s, pt.prefill_ms, pt.ttft_ms, ttft_ms, ttft_stat)
        if reps is None:
            continue
        replica_max = max(replica_max, min(pt.requests_per_s, max_rps_within_ttft(
            pt.prefill_ms, pt.ttft_ms, ttft_ms, ttft_stat)))
        if best is None or (reps, -pt.requests_per_s) < best:
            best = (reps, -pt.requests_per_s)
            point = pt
    return point, replica_max


def plan_serving(spec: ModelSpec, fmt: QuantFormat, gpu: Gpu, load: Load, *, gpus: int = 1, engine: str = "vllm",
                 kv_dtype: str = "fp16", ttft_ms: float | None = None, tpot_ms: float | None = None,
                 catalog: Catalog | None = None, currency: str = "USD", ttft_stat: str = "mean",
                 find_closest: bool = True) -> ServePlan:
    """The serving plan of ``load`` on replicas of ``gpus`` × ``gpu`` (see the module docstring). ``ttft_stat``:
    whether the TTFT target bounds the mean, the median or the 90th percentile of the queued TTFT.
    Without an operating point the plan names the closest configuration (unless ``find_closest`` is off)."""
    _refuse_non_llm(spec)
    _check_stat(ttft_stat)
    catalog = catalog or Catalog()
    notes: list = [Message("sv_note_queue" if ttft_stat == "mean" else "sv_note_queue_pct", pct=ttft_stat[1:])]
    eff = card_efficiency(engine, gpu, fmt, catalog)
    if eff.time_factor != 1.0:
        notes.append(Message("sv_note_time_factor", engine=engine, backend=default_backend(gpu),
                             k=f"{eff.time_factor:.2f}"))
    if eff.request_latency_ms > 0:
        own = eff.request_latency_from.split("/")[0] == engine
        notes.append(Message("sv_note_latency" if own else "sv_note_latency_borrowed", engine=engine,
                             ms=f"{eff.request_latency_ms:.0f}", source=eff.request_latency_from))
    per_seq, pool = _kv(spec, fmt, gpu, gpus, engine, kv_dtype, load)
    max_conc = _whole(per_seq, pool)
    point = None
    replica_max = 0.0
    closest: dict = {}
    if max_conc >= 1:
        point, replica_max = _best_point(spec, fmt, gpu, load, max_conc, gpus=gpus, engine=engine, kv_dtype=kv_dtype,
                                         ttft_ms=ttft_ms, tpot_ms=tpot_ms, catalog=catalog, ttft_stat=ttft_stat)
    else:
        notes.append(Message("sv_note_nofit", tokens=load.input_tokens + load.output_tokens, n=gpus, card=gpu.id))
    empty: dict = {}
    if point is None:
        if max_conc >= 1:
            notes.append(Message("sv_note_targets"))
        closest = {} if not find_closest else _closest(spec, fmt, gpu, load, gpus=gpus, engine=engine, kv_dtype=kv_dtype, ttft_ms=ttft_ms,
                           tpot_ms=tpot_ms, catalog=catalog, ttft_stat=ttft_stat, fits=max_conc >= 1)
        if closest.get("gpus_per_replica"):
            notes.append(Message("sv_note_closest_gpus", m=gpus, n=closest["gpus_per_replica"], card=gpu.id))
        elif closest.get("best_ttft_ms") is not None:
            notes.append(Message("sv_note_closest_best", ttft=f"{closest['best_ttft_ms']:,.0f}",
                                 tpot=f"{closest['best_tpot_ms']:.1f}"))
        return ServePlan(spec.id, fmt.id, gpu.id, gpus, engine, load, max_conc, per_seq, pool, None, empty, None,
                         None, None, empty, empty, empty, currency.upper(), _apis(spec, load, catalog, currency),
                         tuple(notes), ttft_target_ms=ttft_ms, ttft_stat=ttft_stat, closest=closest)
    # the band measured on serving runs (published throughput at load ÷ this engine's estimate of it), else
    # the decode band where no serving row has been judged
    dec = band("serving_throughput", engine, catalog) or band("decode_speed", engine, catalog)
    capacity = {"low": point.requests_per_s * dec.low, "high": point.requests_per_s * dec.high} if dec else {}
    prefill_ms = point.prefill_ms
    replicas = replicas_needed(load.requests_per_s * load.peak_ratio, point.requests_per_s, prefill_ms,
                               point.ttft_ms, ttft_ms, ttft_stat) or 1
    rho = load.requests_per_s * load.peak_ratio / replicas * prefill_ms / 1e3
    ttft_queued = queued_ttft_ms(point.ttft_ms, prefill_ms, rho, ttft_stat)
    cards = replicas * gpus
    util = load.requests_per_s / (replicas * point.requests_per_s)
    # GPU time per request: what its prompt takes, and its share of the decode steps
    share_in = point.input_share
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
                     rho, replica_max, ttft_ms, ttft_stat)


def _closest(spec: ModelSpec, fmt: QuantFormat, gpu: Gpu, load: Load, *, gpus: int, engine: str, kv_dtype: str,
             ttft_ms: float | None, tpot_ms: float | None, catalog: Catalog, ttft_stat: str, fits: bool) -> dict:
    """What comes closest when no batch size of ``gpus`` × ``gpu`` serves ``load`` within the targets (see
    :attr:`ServePlan.closest`)."""
    out: dict = {"gpus_per_replica": None, "best_ttft_ms": None, "best_tpot_ms": None}
    if fits:
        one = saturated(spec, fmt, gpu, load.input_tokens, load.output_tokens, concurrency=1, gpus=gpus,
                        engine=engine, kv_dtype=kv_dtype, prefix_hit=load.prefix_hit, catalog=catalog)
        out["best_ttft_ms"], out["best_tpot_ms"] = one.ttft_ms, one.tpot_ms
    for g in (2, 4, 8):
        if g <= gpus:
            continue
        try:
            p = plan_serving(spec, fmt, gpu, load, gpus=g, engine=engine, kv_dtype=kv_dtype, ttft_ms=ttft_ms,
                             tpot_ms=tpot_ms, catalog=catalog, ttft_stat=ttft_stat, find_closest=False)
        except GpucostError:  # e.g. more cards than the model has attention heads to split
            break
        if p.point is not None:
            out["gpus_per_replica"] = g
            out["replicas"] = p.replicas
            break
    return out


def cost_curve(plan: ServePlan, points: int = 25, span: float = 10.0) -> list[dict]:
    """Monthly cost against the average load, from ``load / span`` to ``load × span`` (log-spaced), on the
    plan's operating point: per basis the fleet the load needs (replicas for its peak and TTFT target,
    :func:`replicas_needed`) at the plan's price per card, and the cheapest API's bill, which grows with
    the load. At the plan's own load it is the plan's answer. Empty without an operating point."""
    if plan.point is None or not plan.cards:
        return []
    ld, pt = plan.load, plan.point
    prefill_ms = pt.prefill_ms
    target = plan.ttft_target_ms
    per_card = {b: (m / plan.cards if m is not None else None) for b, m in plan.monthly_cost.items()}
    api_per_rps = plan.apis[0]["monthly_cost"] / ld.requests_per_s if plan.apis else None
    out = []
    for i in range(points):
        rps = ld.requests_per_s * span ** (2 * i / (points - 1) - 1)
        reps = replicas_needed(rps * ld.peak_ratio, pt.requests_per_s, prefill_ms, pt.ttft_ms, target, plan.ttft_stat)
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
    for r in derived(table, "records", lambda t: t.to_dict(orient="records")):
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


__all__ = ["FitTable", "Load", "TTFT_STATISTICS", "cost_curve", "OperatingPoint", "ServePlan", "closed_loop_latency",
           "fit_table", "kv_capacity", "longest_context", "md1_wait_cdf", "md1_wait_quantile", "operating_point",
           "plan_serving", "prefill_seconds", "saturated"]
