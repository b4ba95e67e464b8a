"""Autoscaling and commitments: a job trace on a fixed fleet, a queue-driven autoscaler or a spot-heavy
pool (event-driven, heapq), and the committed level that minimizes cost.
"""

from __future__ import annotations

import bisect
import heapq
import io
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from gpucost.catalog import Catalog, bundled_data_dir
from gpucost.economics import card_hourly_cost
from gpucost.errors import DataError, GpucostError, UnknownNameError
from gpucost.i18n import Message
from gpucost.serialize import jsonable as _clean
from gpucost.spot import spot_bucket as spot_bucket_record

POLICIES = ("fixed", "autoscale", "spot")


def default_commit_discount(catalog: Catalog) -> tuple[float, str]:
    """The 1-year commitment discount of tco_defaults.csv (reserved_discount_1y) and its source."""
    return catalog.default_value("reserved_discount_1y")


@dataclass(frozen=True)
class Trace:
    """Jobs sorted by arrival: arrival [h], gpus [count], run_hours [h] (= gpu_hours / gpus)."""

    arrival: np.ndarray
    gpus: np.ndarray
    run_hours: np.ndarray
    label: str = ""

    def __len__(self) -> int:
        return len(self.arrival)

    @property
    def gpu_hours(self) -> float:
        return float(np.sum(self.gpus * self.run_hours))


SAMPLE_TRACE = "sample"


def sample_trace_path() -> Path:
    return bundled_data_dir() / "traces" / "sample_jobs.csv"


def read_trace(source: str | Path | io.StringIO | pd.DataFrame, *, label: str | None = None) -> Trace:
    """A job trace CSV (columns arrival_hour, gpu_hours, gpus; others ignored) or a demand profile
    (columns hour, gpus: GPUs busy in each hour, read as that many 1-GPU jobs of one hour).

    ``"sample"`` is the bundled data/traces/sample_jobs.csv. A bad cell raises DataError naming the file,
    the row and the column.
    """
    if isinstance(source, pd.DataFrame):
        df = source.astype(str)
        label = label or "trace"
    else:
        if isinstance(source, (str, Path)) and str(source) == SAMPLE_TRACE:
            source = sample_trace_path()
        if isinstance(source, (str, Path)):
            p = Path(source)
            label = label or str(source)
            try:
                text = p.read_text(encoding="utf-8-sig")
            except FileNotFoundError:
                raise DataError("file not found", file=label) from None
            except (OSError, UnicodeDecodeError) as exc:
                raise DataError(f"cannot read the file ({type(exc).__name__})", file=label) from None
        else:
            text = source.getvalue()
            label = label or "trace.csv"
        try:
            df = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False, skipinitialspace=True)
        except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
            raise DataError(f"not a valid CSV file ({str(exc).strip().splitlines()[-1] if str(exc).strip() else 'empty'})",
                            file=label) from None
    df.columns = [str(c).strip() for c in df.columns]
    if {"hour", "gpus"} <= set(df.columns) and "arrival_hour" not in df.columns:
        return _profile_trace(df, label)
    for col in ("arrival_hour", "gpu_hours", "gpus"):
        if col not in df.columns:
            raise DataError(f"missing column '{col}' (a trace needs arrival_hour, gpu_hours, gpus; a demand "
                            f"profile needs hour, gpus); the header has: {', '.join(df.columns)}", file=label)
    if df.empty:
        raise DataError("the trace has a header but no jobs", file=label)
    arr = _num_col(df, "arrival_hour", label, lambda a: a >= 0, "must be a number >= 0")
    gh = _num_col(df, "gpu_hours", label, lambda a: a > 0, "must be a number > 0")
    g = _num_col(df, "gpus", label, lambda a: (a >= 1) & (a == np.floor(a)) & (a <= MAX_JOB_GPUS),
                 f"must be a whole number from 1 to {MAX_JOB_GPUS:,}")
    _check_span(arr, gh / g, label)
    order = np.argsort(arr, kind="stable")
    return Trace(arr[order], g[order].astype(np.int64), (gh / g)[order], label)


#: what one simulation may cover: ten years of arrivals and run time, and jobs up to this many GPUs
MAX_TRACE_HOURS = 87_600.0
MAX_JOB_GPUS = 100_000


def _check_span(arrival: np.ndarray, run_hours: np.ndarray, label: str) -> None:
    """A trace longer than ten years (a job of 10^12 GPU-hours) is refused with the row that breaks it,
    rather than simulated for hours."""
    end = arrival + run_hours
    bad = np.flatnonzero(end > MAX_TRACE_HOURS)
    if bad.size:
        i = int(bad[0])
        raise DataError(f"this job would run until hour {end[i]:,.0f}; a trace may span at most "
                        f"{MAX_TRACE_HOURS:,.0f} hours (ten years): split it or check gpu_hours", file=label,
                        row=i + 1, column="gpu_hours")


def _num_col(df: pd.DataFrame, col: str, label: str, ok, what: str) -> np.ndarray:
    raw = df[col].str.strip()
    val = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float)
    good = np.isfinite(val)
    good[good] = ok(val[good])
    if not good.all():
        i = int(np.flatnonzero(~good)[0])
        raise DataError(f"'{raw.iloc[i]}' {what}", file=label, row=i + 1, column=col)
    return val


def _profile_trace(df: pd.DataFrame, label: str) -> Trace:
    hours = _num_col(df, "hour", label, lambda a: a >= 0, "must be a number >= 0")
    gpus = _num_col(df, "gpus", label, lambda a: (a >= 0) & (a == np.floor(a)), "must be a whole number >= 0")
    counts = gpus.astype(np.int64)
    arr = np.repeat(hours, counts)
    if arr.size == 0:
        raise DataError("the demand profile asks for no GPU at all", file=label)
    order = np.argsort(arr, kind="stable")
    return Trace(arr[order], np.ones(arr.size, dtype=np.int64), np.ones(arr.size), label)


def demand_profile(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """Unconstrained demand: each job runs from its arrival. Returns (breakpoints [h], GPUs busy).

    ``levels[k]`` GPUs are busy between ``times[k]`` and ``times[k + 1]`` (``len(levels) == len(times) - 1``).
    """
    t = np.concatenate([trace.arrival, trace.arrival + trace.run_hours])
    d = np.concatenate([trace.gpus, -trace.gpus]).astype(np.int64)
    order = np.argsort(t, kind="stable")
    t, d = t[order], d[order]
    cum = np.cumsum(d)
    ut = np.unique(t)
    lev = cum[np.searchsorted(t, ut, side="right") - 1]
    return ut, lev[:-1]


@dataclass(frozen=True)
class FleetResult:
    policy: str
    gpus_max: int
    cost: float
    currency: str
    wait_mean_hours: float
    wait_p95_hours: float
    utilization: float
    gpu_hours_billed: float
    gpu_hours_used: float
    makespan_hours: float
    jobs: int
    interruptions: int = 0
    on_demand_gpu_hours: float = 0.0
    spot_gpu_hours: float = 0.0
    fleet_times: tuple[float, ...] = ()
    fleet_sizes: tuple[int, ...] = ()
    params: dict = field(default_factory=dict)

    def to_dict(self, *, series: bool = False) -> dict:
        d = asdict(self)
        if not series:
            d.pop("fleet_times")
            d.pop("fleet_sizes")
        return _clean(d)


def _quantile(a: np.ndarray, q: float) -> float:
    return float(np.quantile(a, q)) if a.size else 0.0


def simulate_fleet(trace: Trace, policy: str = "fixed", *, max_gpus: int | None = None,
                   price_per_gpu_hour: float = 1.0, spot_price_per_gpu_hour: float | None = None,
                   currency: str = "USD", min_gpus: int = 0, startup_hours: float = 0.05,
                   cooldown_hours: float = 0.25, on_demand_base: int = 0,
                   interruption_rate_per_hour: float | None = None, checkpoint_hours: float = 1.0,
                   seed: int = 0, record_series: bool = False) -> FleetResult:
    """Run ``trace`` through a fleet, event by event (heapq); jobs start first-come first-served, and any
    queued job that fits the free GPUs starts (a large job does not block smaller ones behind it).

    fixed     : ``max_gpus`` GPUs, billed for the whole makespan.
    autoscale : starts at ``min_gpus``; whenever jobs wait, requests GPUs toward running + pending demand
                (at most ``max_gpus``); a requested GPU is billed at once and serves after
                ``startup_hours``; an idle GPU is released after ``cooldown_hours`` idle (never below
                ``min_gpus``).
    spot      : the autoscaler with ``on_demand_base`` on-demand GPUs and the rest spot at
                ``spot_price_per_gpu_hour``; each spot GPU is interrupted at ``interruption_rate_per_hour``;
                the job on it loses the work since its last checkpoint (every ``checkpoint_hours``) and
                waits again; the interrupted GPU is gone (the autoscaler may request another).
    Wait = time a job spends queued (all its waits); utilization = GPU-hours of work / GPU-hours billed;
    makespan = when the last job ends (an autoscaled GPU is billed until its release after the cool-down).
    """
    if policy not in POLICIES:
        raise UnknownNameError("policy", policy, POLICIES)
    n = len(trace)
    if n == 0:
        raise GpucostError("the trace has no jobs")
    biggest = int(trace.gpus.max())
    if max_gpus is None:
        max_gpus = default_max_gpus(trace)
    if max_gpus < biggest:
        j = int(np.argmax(trace.gpus))
        raise GpucostError(f"a job of the trace (arrival {trace.arrival[j]:g} h) needs {biggest} GPUs but the "
                           f"fleet is capped at {max_gpus}: raise --max-gpus")
    for nm, v in (("startup", startup_hours), ("cool-down", cooldown_hours), ("checkpoint interval", checkpoint_hours)):
        if not (v >= 0) or math.isinf(v):
            raise GpucostError(f"{nm} must be a number >= 0 hours, not {v}")
    if policy == "fixed":
        res = _sim_fixed(trace, max_gpus, record_series)
        od_hours, spot_hours, interrupts = res["billed"], 0.0, 0
        cost = od_hours * price_per_gpu_hour
    else:
        spot = policy == "spot"
        if spot:
            if spot_price_per_gpu_hour is None:
                raise GpucostError("the spot policy needs a spot price (no spot offer for this GPU in your market)")
            if interruption_rate_per_hour is None:
                raise GpucostError("the spot policy needs an interruption rate (interruption_rate_per_hour)")
        res = _sim_elastic(trace, max_gpus, min_gpus, startup_hours, cooldown_hours,
                           on_demand_base if spot else max_gpus, interruption_rate_per_hour or 0.0,
                           checkpoint_hours, seed, record_series)
        od_hours, spot_hours, interrupts = res["od_billed"], res["spot_billed"], res["interrupts"]
        cost = od_hours * price_per_gpu_hour + spot_hours * (spot_price_per_gpu_hour or 0.0)
    billed = od_hours + spot_hours
    waits = res["waits"]
    used = trace.gpu_hours
    return FleetResult(policy, int(max_gpus), float(cost), currency.upper(), float(waits.mean()),
                       _quantile(waits, 0.95), float(used / billed) if billed > 0 else 0.0, float(billed),
                       float(used), float(res["makespan"]), n, int(interrupts), float(od_hours), float(spot_hours),
                       tuple(res.get("times", ())), tuple(res.get("sizes", ())),
                       {"max_gpus": int(max_gpus), "min_gpus": min_gpus, "startup_hours": startup_hours,
                        "cooldown_hours": cooldown_hours, "on_demand_base": on_demand_base,
                        "interruption_rate_per_hour": interruption_rate_per_hour,
                        "checkpoint_hours": checkpoint_hours, "price_per_gpu_hour": price_per_gpu_hour,
                        "spot_price_per_gpu_hour": spot_price_per_gpu_hour})


def default_max_gpus(trace: Trace) -> int:
    """The largest job, or the 95th percentile of the unconstrained concurrent demand, whichever is more."""
    times, levels = demand_profile(trace)
    dur = np.diff(times)
    q = _time_quantile(levels, dur, 0.95) if dur.size else int(trace.gpus.max())
    return int(max(int(trace.gpus.max()), q))


def _time_quantile(levels: np.ndarray, durations: np.ndarray, q: float) -> int:
    """The smallest level L with (time demand <= L) / total time >= q."""
    order = np.argsort(levels, kind="stable")
    cum = np.cumsum(durations[order])
    total = cum[-1]
    if total <= 0:
        return int(levels.max())
    k = int(np.searchsorted(cum, q * total - 1e-12))
    return int(levels[order][min(k, len(order) - 1)])


class _Queue:
    """Waiting jobs, kept sorted by (priority = arrival, job)."""

    __slots__ = ("items", "pending")

    def __init__(self) -> None:
        self.items: list[tuple[float, int]] = []
        self.pending = 0

    def push(self, prio: float, j: int, g: int) -> None:
        if not self.items or self.items[-1] <= (prio, j):
            self.items.append((prio, j))
        else:
            bisect.insort(self.items, (prio, j))
        self.pending += g


def _easy_backfill(queue: _Queue, now: float, free: int, capacity: int, ends: dict[int, tuple[float, int]],
                   gpus: np.ndarray, est: np.ndarray, start_cb, busy: int | None = None) -> None:
    """First come, first served with EASY backfilling (Lifka 1995; Mu'alem & Feitelson 2001).

    Jobs start in arrival order while they fit the ``free`` GPUs. When the first waiting job does not fit,
    it gets a reservation at the earliest time enough GPUs of ``capacity`` are free (from the running jobs'
    planned ends ``ends``: job -> (end, GPUs)); a later job may start now if it fits the free GPUs and
    either ends before that time or uses only GPUs the reserved job will not need. ``est`` are the run
    times the scheduler plans with (here: the trace's own, i.e. exact estimates).
    """
    items = queue.items
    k = 0
    while k < len(items) and gpus[items[k][1]] <= free:
        j = items[k][1]
        free -= gpus[j]
        queue.pending -= gpus[j]
        start_cb(j)
        k += 1
    del items[:k]
    if not items or free <= 0:
        return
    gh = int(gpus[items[0][1]])
    if busy is None or k:
        busy = sum(g for _, g in ends.values())
    avail = capacity - busy
    shadow, extra = math.inf, 0
    if avail >= gh:
        shadow, extra = now, avail - gh
    else:
        for end, g in sorted(ends.values()):
            avail += g
            if avail >= gh:
                shadow, extra = end, avail - gh
                break
    started = []
    for k in range(1, len(items)):
        if free <= 0:
            break
        j = items[k][1]
        g = gpus[j]
        if g <= free:
            fits_before = now + est[j] <= shadow
            if fits_before or g <= extra:
                if not fits_before:
                    extra -= g
                free -= g
                queue.pending -= g
                start_cb(j)
                started.append(k)
    for k in reversed(started):
        del items[k]


def _sim_fixed(trace: Trace, capacity: int, record: bool) -> dict:
    arr, gpus, run = trace.arrival.tolist(), trace.gpus.tolist(), trace.run_hours.tolist()
    n = len(arr)
    start = [0.0] * n
    events: list[tuple[float, int]] = []  # (end time, job)
    ends: dict[int, tuple[float, int]] = {}
    queue = _Queue()
    state = {"now": 0.0, "busy": 0}

    def begin(j: int) -> None:
        now = state["now"]
        start[j] = now
        heapq.heappush(events, (now + run[j], j))
        ends[j] = (now + run[j], gpus[j])
        state["busy"] += gpus[j]

    i = 0
    while i < n or events:
        now = min(events[0][0] if events else math.inf, arr[i] if i < n else math.inf)
        state["now"] = now
        while events and events[0][0] == now:  # ends first, then arrivals at the same instant
            _, j = heapq.heappop(events)
            state["busy"] -= gpus[j]
            del ends[j]
        while i < n and arr[i] == now:
            queue.push(arr[i], i, gpus[i])
            i += 1
        if queue.items:
            _easy_backfill(queue, now, int(capacity - state["busy"]), capacity, ends, gpus, run, begin,
                           int(state["busy"]))
    st_a, run_a = np.asarray(start), trace.run_hours
    makespan = float(np.max(st_a + run_a))
    return {"waits": st_a - trace.arrival, "billed": capacity * makespan, "makespan": makespan,
            "times": [0.0] if record else [], "sizes": [capacity] if record else []}


def _sim_elastic(trace: Trace, cap: int, floor: int, startup: float, cooldown: float, od_max: int,
                 hazard: float, ckpt: float, seed: int, record: bool) -> dict:
    """Queue-driven autoscaler; GPUs beyond ``od_max`` on-demand ones are spot (interrupted at ``hazard``)."""
    rng = np.random.default_rng(seed)
    # plain lists: element access on numpy arrays is several times slower in this event loop
    arr, gpus = trace.arrival.tolist(), trace.gpus.tolist()
    remaining = trace.run_hours.tolist()
    n = len(arr)
    waits = [0.0] * n
    queued_at = list(arr)
    END, INTERRUPT, READY, RELEASE = 0, 1, 2, 3
    events: list[tuple[float, int, int, int]] = []  # (time, kind, seq, payload)
    seq = 0
    st = {"now": 0.0, "last": 0.0, "interrupts": 0, "last_end": 0.0}
    idle: list[list[float]] = [[], []]  # per type (0 on-demand, 1 spot): idle-since times, oldest first
    booting = [0, 0]
    busy = [0, 0]
    count = [0, 0]  # provisioned (billed) GPUs per type
    billed = [0.0, 0.0]
    release_at = [math.inf, math.inf]
    running: dict[int, tuple[int, int, float]] = {}  # job -> (on-demand GPUs, spot GPUs, start)
    ends: dict[int, tuple[float, int]] = {}  # job -> (planned end, GPUs) for the backfill reservation
    queue = _Queue()
    times: list[float] = [0.0] if record else []
    sizes: list[int] = [0] if record else []

    def push(t: float, kind: int, payload: int) -> None:
        nonlocal seq
        seq += 1
        heapq.heappush(events, (t, kind, seq, payload))

    def bill_to(t: float) -> None:
        dt = t - st["last"]
        if dt > 0:
            billed[0] += count[0] * dt
            billed[1] += count[1] * dt
            st["last"] = t

    def note_size() -> None:
        if record:
            times.append(st["now"])
            sizes.append(count[0] + count[1])

    def add_gpus(k: int) -> None:
        bill_to(st["now"])
        n_od = max(0, min(k, od_max - count[0]))
        for tp, m in ((0, n_od), (1, k - n_od)):
            if m <= 0:
                continue
            count[tp] += m
            if startup <= 0:
                idle[tp].extend([st["now"]] * m)
            else:
                booting[tp] += m
                push(st["now"] + startup, READY, 2 * m + tp)

    def start_job(j: int) -> None:
        g = gpus[j]
        n_od = min(g, len(idle[0]))
        n_sp = g - n_od
        del idle[0][len(idle[0]) - n_od:]
        del idle[1][len(idle[1]) - n_sp:]
        busy[0] += n_od
        busy[1] += n_sp
        now = st["now"]
        waits[j] += now - queued_at[j]
        t_int = rng.exponential(1.0 / (hazard * n_sp)) if (n_sp and hazard > 0) else math.inf
        if t_int < remaining[j]:
            push(now + t_int, INTERRUPT, j)
        else:
            push(now + remaining[j], END, j)
        running[j] = (n_od, n_sp, now)
        ends[j] = (now + remaining[j], g)

    def wanted() -> int:
        """Running GPUs plus the waiting jobs that could start within the cap (in arrival order)."""
        room = cap - busy[0] - busy[1]
        if queue.pending <= room:
            return max(floor, busy[0] + busy[1] + queue.pending)
        want = 0
        for _, j in queue.items:
            g = gpus[j]
            if g <= room - want:
                want += g
                if want == room:
                    break
        return max(floor, busy[0] + busy[1] + want)

    def schedule_release(want: int) -> None:
        if count[0] + count[1] <= want:
            return
        for tp in (0, 1):
            if idle[tp] and release_at[tp] == math.inf:
                release_at[tp] = max(idle[tp][0] + cooldown, st["now"])
                push(release_at[tp], RELEASE, tp)

    for _ in range(min(floor, cap)):
        tp = 0 if count[0] < od_max else 1
        count[tp] += 1
        idle[tp].append(0.0)
    if record:
        sizes[0] = count[0] + count[1]
    i = 0
    while i < n or events:
        if events and (i >= n or events[0][0] <= arr[i]):
            now, kind, _, payload = heapq.heappop(events)
            st["now"] = now
            if kind == END or kind == INTERRUPT:
                j = payload
                n_od, n_sp, t0 = running.pop(j)
                del ends[j]
                busy[0] -= n_od
                busy[1] -= n_sp
                idle[0].extend([now] * n_od)
                if kind == END:
                    idle[1].extend([now] * n_sp)
                    st["last_end"] = now
                else:
                    st["interrupts"] += 1
                    ran = now - t0
                    remaining[j] -= math.floor(ran / ckpt) * ckpt if ckpt > 0 else ran
                    idle[1].extend([now] * (n_sp - 1))
                    bill_to(now)
                    count[1] -= 1  # the interrupted spot GPU is gone
                    note_size()
                    queued_at[j] = now
                    queue.push(arr[j], j, gpus[j])
            elif kind == READY:
                tp, m = payload % 2, payload // 2
                booting[tp] -= m
                idle[tp].extend([now] * m)
            else:  # RELEASE: idle GPUs beyond what running and startable jobs want, idle >= cool-down
                tp = payload
                release_at[tp] = math.inf
                spare = count[0] + count[1] - wanted()
                k = 0
                while k < len(idle[tp]) and k < spare and idle[tp][k] <= now - cooldown + 1e-12:
                    k += 1
                if k:
                    bill_to(now)
                    count[tp] -= k
                    del idle[tp][:k]
                    note_size()
        else:
            st["now"] = arr[i]
            queue.push(arr[i], i, int(gpus[i]))
            i += 1
        if queue.items:
            _easy_backfill(queue, st["now"], len(idle[0]) + len(idle[1]), cap, ends, gpus, remaining, start_job,
                           busy[0] + busy[1])
        want = wanted()
        have = count[0] + count[1]
        if want > have:
            add_gpus(want - have)
            note_size()
            if startup <= 0 and queue.items:  # the new GPUs serve at once
                _easy_backfill(queue, st["now"], len(idle[0]) + len(idle[1]), cap, ends, gpus, remaining,
                               start_job, busy[0] + busy[1])
        schedule_release(want)
    bill_to(st["now"])
    return {"waits": np.asarray(waits), "od_billed": billed[0], "spot_billed": billed[1], "interrupts": st["interrupts"],
            "makespan": st["last_end"], "times": times, "sizes": sizes}


@dataclass(frozen=True)
class Commitment:
    """The committed (reserved) GPU level that minimizes cost for a demand profile; overflow on demand."""

    level_gpus: int
    discount: float
    cost: float
    cost_on_demand_only: float
    saving: float
    currency: str
    hours: float
    levels: tuple[int, ...] = ()
    costs: tuple[float, ...] = ()

    def to_dict(self, *, curve: bool = False) -> dict:
        d = asdict(self)
        if not curve:
            d.pop("levels")
            d.pop("costs")
        return _clean(d)


def commitment_level(trace: Trace, discount: float, *, price_per_gpu_hour: float = 1.0,
                     currency: str = "USD") -> Commitment:
    """Commit ``c`` GPUs at ``(1 - discount) x price`` for the whole period, the rest on demand at ``price``.

    cost(c) = c x T x p x (1 - d) + p x ∫ max(0, D(t) - c) dt over the unconstrained demand D(t) of the
    trace (every job runs from its arrival). The minimum is where the share of time with D > c falls to
    (1 - d): c* is the d-quantile of the time-weighted demand; all levels are evaluated exactly here.
    """
    if not (0 <= discount < 1):
        raise GpucostError(f"the commitment discount must be >= 0 % and < 100 %, not {discount * 100:g} %")
    times, levels = demand_profile(trace)
    dur = np.diff(times)
    levels = levels[: len(dur)]
    T = float(times[-1] - times[0]) if len(times) > 1 else 0.0
    if T <= 0:
        raise GpucostError("the trace spans no time")
    peak = int(levels.max()) if levels.size else 0
    cs = np.arange(peak + 1)
    # overflow GPU-hours for each c: sum(dur * max(0, level - c)) computed via sorted levels
    order = np.argsort(levels)
    lv, du = levels[order].astype(float), dur[order]
    w = np.cumsum(du[::-1])[::-1]  # time with level >= lv[k]
    wl = np.cumsum((du * lv)[::-1])[::-1]
    k = np.searchsorted(lv, cs, side="right")  # first index with level > c
    over_time = np.where(k < len(lv), w[np.minimum(k, len(lv) - 1)], 0.0)
    over_work = np.where(k < len(lv), wl[np.minimum(k, len(lv) - 1)], 0.0)
    overflow = over_work - cs * over_time
    p = price_per_gpu_hour
    costs = cs * T * p * (1 - discount) + p * overflow
    best = int(np.argmin(costs))
    od_only = float(costs[0])
    return Commitment(best, float(discount), float(costs[best]), od_only, od_only - float(costs[best]),
                      currency.upper(), T, tuple(int(c) for c in cs), tuple(float(c) for c in costs))


def spot_price(catalog: Catalog, gpu_id: str, currency: str) -> tuple[float | None, str]:
    """The lowest spot price per GPU-hour for ``gpu_id`` over the offers of the user's market
    (:func:`gpucost.pricing.offer_rows`), in ``currency``."""
    from gpucost.pricing import offer_rows

    o = offer_rows(catalog, currency)
    o = o[(o["gpu_id"] == gpu_id) & o["SpotPrice"].notna()]
    if o.empty:
        return None, "no spot offer in your market"
    per = o["SpotPrice"] / o["AcceleratorCount"]
    per = per * [catalog.convert(1.0, c, currency) for c in o["currency"]]
    k = int(np.argmin(per.to_numpy()))
    r = o.iloc[k]
    return float(per.iloc[k]), f"{r['provider']} {r['InstanceType']} ({r['source']}, {r['as_of']})"


@dataclass(frozen=True)
class ScalePlan:
    gpu: str
    currency: str
    result: FleetResult
    others: tuple[FleetResult, ...]
    commitment: Commitment | None
    commitment_by_discount: tuple[tuple[float, int], ...]
    price_per_gpu_hour: float
    price_source: str
    spot_price_per_gpu_hour: float | None
    spot_source: str
    trace_label: str
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        r = self.result
        return _clean({
            "cost": r.cost, "wait_mean_hours": r.wait_mean_hours, "wait_p95_hours": r.wait_p95_hours,
            "utilization": r.utilization, "policy": r.policy, "currency": self.currency, "gpu": self.gpu,
            "max_gpus": r.gpus_max, "jobs": r.jobs, "gpu_hours_billed": r.gpu_hours_billed,
            "gpu_hours_used": r.gpu_hours_used, "makespan_hours": r.makespan_hours,
            "interruptions": r.interruptions,
            "policies": {o.policy: o.to_dict() for o in (r, *self.others)},
            "commitment": self.commitment.to_dict() if self.commitment else None,
            "commitment_by_discount": [{"discount": d, "level_gpus": lv} for d, lv in self.commitment_by_discount],
            "price_per_gpu_hour": self.price_per_gpu_hour, "price_source": self.price_source,
            "spot_price_per_gpu_hour": self.spot_price_per_gpu_hour, "spot_source": self.spot_source,
            "trace": self.trace_label, "warnings": list(self.warnings),
        })


def plan_scale(trace: Trace | str | Path, policy: str = "fixed", *, gpu: str = "h100-sxm",
               catalog: Catalog | None = None, currency: str = "USD", max_gpus: int | None = None,
               commit_discount: float | None = None, price_per_gpu_hour: float | None = None,
               spot_price_per_gpu_hour: float | None = None, spot_bucket: str = ">20%",
               compare: bool = True, **sim) -> ScalePlan:
    """Simulate ``policy`` (and, with ``compare``, the other two) and size a commitment.

    Prices: the catalog's lowest on-demand and lowest spot price per GPU-hour for ``gpu`` (overridable).
    ``spot_bucket`` picks the interruption rate from AWS's Spot Advisor buckets (tco_defaults.csv);
    ``commit_discount`` None: no commitment sized (see :func:`default_commit_discount`).
    """
    catalog = catalog or Catalog()
    if policy not in POLICIES:
        raise UnknownNameError("policy", policy, POLICIES)
    tr = trace if isinstance(trace, Trace) else read_trace(trace)
    gid = catalog.gpu_id(gpu)
    warnings = []
    if price_per_gpu_hour is None:
        hc = card_hourly_cost(catalog, gid, currency, "cloud")
        price, psrc = hc.per_hour, f"{hc.source} ({hc.as_of})"
        if price is None:
            raise GpucostError(f"no on-demand cloud price for '{gid}' in the catalog: give one (--price)")
    else:
        price, psrc = float(price_per_gpu_hour), "given"
    if spot_price_per_gpu_hour is None:
        sp, ssrc = spot_price(catalog, gid, currency)
    else:
        sp, ssrc = float(spot_price_per_gpu_hour), "given"
    if sp is not None and sp >= price:
        warnings.append(Message("sw_spot_not_cheaper", spot=f"{sp:.2f}", od=f"{price:.2f}"))
    if sim.get("interruption_rate_per_hour") is None:
        sim["interruption_rate_per_hour"] = spot_bucket_record(catalog, spot_bucket).rate_per_hour
    run = [policy] + ([p for p in POLICIES if p != policy and (p != "spot" or sp is not None)] if compare else [])
    if policy == "spot" and sp is None:
        raise GpucostError(f"no spot price for '{gid}' in the catalog: give one (--spot-price)")
    results = [simulate_fleet(tr, p, max_gpus=max_gpus, price_per_gpu_hour=price, spot_price_per_gpu_hour=sp,
                              currency=currency, record_series=True, **sim) for p in run]
    com = None
    if commit_discount is not None:
        com = commitment_level(tr, commit_discount, price_per_gpu_hour=price, currency=currency)
    by = tuple((d, commitment_level(tr, d, price_per_gpu_hour=price).level_gpus)
               for d in (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7))
    return ScalePlan(gid, currency.upper(), results[0], tuple(results[1:]), com, by, price, psrc, sp, ssrc,
                     tr.label, tuple(warnings))




__all__ = ['POLICIES', 'SAMPLE_TRACE', 'default_commit_discount', 'Trace', 'sample_trace_path', 'read_trace', 'demand_profile', 'FleetResult', 'simulate_fleet', 'default_max_gpus', 'Commitment', 'commitment_level', 'spot_price', 'ScalePlan', 'plan_scale']
