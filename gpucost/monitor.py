"""Watching a GPU over time and what the samples say: busy or idle, memory pressure, energy, wasted money.

Pure: the sampler takes the probe as a function (``gpucost.probe.sample`` live, a fake in tests) and the
clock and sleep as functions, so tests run hours of simulated time in microseconds. Nothing here
imports pynvml, widgets or plotting.

Time model. Samples come at ``t_0 < t_1 < …`` seconds since the start; each sample stands for the time
until the next one, and the last one for one ``interval_s`` (sample and hold). So ``n`` samples at a
regular interval cover ``n × interval_s`` seconds. Means, idle time and energy are weighted by that time.

Policies follow Prometheus's ``for:``: a condition *fires* when it held at every sample from ``t_a`` to
``t_b`` and ``t_b − t_a ≥ for``; a condition that holds at the last sample but not yet that long is
*pending*. A sample without the reading (NVML said Not Supported, the GPU was lost) breaks a run.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from gpucost.catalog import Catalog, derived, gpu_alias_index, normalize_name
from gpucost.errors import GpucostError
from gpucost.serialize import Record, number
from gpucost.specs import DEFAULTS
from gpucost.units import HOURS_PER_MONTH, J_PER_KWH, MIB_PER_GIB, SECONDS_PER_HOUR

#: the usual reclaim policy the product starts from (issue #5, "Why"): a GPU under 20 % busy for 30 minutes
#: is idle; memory above 90 % is pressure. Every threshold is an input on the page and the CLI.
DEFAULT_IDLE_UTIL_PCT = 20.0
DEFAULT_IDLE_FOR_S = 30 * 60.0
DEFAULT_MEM_HIGH_PCT = 90.0
DEFAULT_MEM_FOR_S = 0.0
#: a user assumption, not a sourced figure: years over which a bought card's new price is spread when the
#: catalog has no cloud price for it (straight line, every hour of the year). Editable on page and CLI.
DEFAULT_AMORTIZATION_YEARS = DEFAULTS.amortization_years
#: NVML reports the usable framebuffer, a few % under the nominal size (ECC and firmware reservations);
#: a card whose memory is outside this fraction of the catalog's size is a different variant of the same
#: name (RTX 3060 8 GB vs 12 GB, RTX 4060 Ti 8 GB vs 16 GB) and is not matched.
MEMORY_MATCH_RANGE = (0.85, 1.05)
#: the longest a sampler may run and the most samples it may take (a guard for the page and the CLI)
MAX_SAMPLES = 100_000

_DURATION_RE = re.compile(r"^(?:(\d+)y)?(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?(?:(\d+)ms)?$")
_DURATION_UNITS = (365 * 86400, 7 * 86400, 86400, 3600, 60, 1, 0.001)


def parse_duration(text: str) -> float:
    """A Prometheus duration ("30m", "1h30m", "90s", "2d") in seconds; GpucostError when malformed."""
    s = str(text).strip()
    m = _DURATION_RE.match(s)
    if not s or m is None or not any(m.groups()):
        raise GpucostError(f"bad duration '{text}': use a Prometheus duration such as 30m, 1h, 90s or 1h30m")
    return float(sum(int(g) * u for g, u in zip(m.groups(), _DURATION_UNITS, strict=True) if g))


def format_duration(seconds: float) -> str:
    """Seconds as a Prometheus duration ("1h30m", "45s", "0s")."""
    if seconds < 0 or math.isnan(seconds):
        raise GpucostError(f"a duration cannot be negative: {seconds}")
    ms = int(round(seconds * 1000))
    if ms == 0:
        return "0s"
    parts = []
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000), ("ms", 1)):
        q, ms = divmod(ms, size)
        if q:
            parts.append(f"{q}{unit}")
    return "".join(parts)


# --------------------------------------------------------------------------------------------------
# Samples and the sampler
# --------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Sample(Record):
    """One reading of one GPU at ``t_s`` seconds since sampling began (None: no reading)."""

    t_s: float
    index: int
    utilization_gpu_pct: float | None = None
    utilization_memory_pct: float | None = None
    memory_used_mib: float | None = None
    memory_total_mib: float | None = None
    power_w: float | None = None
    temperature_c: float | None = None
    lost: bool = False

    @property
    def memory_used_pct(self) -> float | None:
        if self.memory_used_mib is None or not self.memory_total_mib:
            return None
        return 100.0 * self.memory_used_mib / self.memory_total_mib

    @classmethod
    def from_mapping(cls, t_s: float, m: Mapping) -> Sample:
        return cls(t_s=float(t_s), index=int(m["index"]),
                   **{k: m.get(k) for k in ("utilization_gpu_pct", "utilization_memory_pct",
                                            "memory_used_mib", "memory_total_mib", "power_w", "temperature_c")},
                   lost=bool(m.get("lost", False)))



def check_sampling(duration_s: float, interval_s: float) -> int:
    """The number of samples for ``duration_s`` at ``interval_s``; GpucostError on bad values."""
    for name, v in (("duration", duration_s), ("interval", interval_s)):
        if not isinstance(v, (int, float)) or math.isnan(v) or math.isinf(v) or v <= 0:
            raise GpucostError(f"the {name} must be a number of seconds greater than zero, not {v}")
    if interval_s > duration_s:
        raise GpucostError(f"the interval ({interval_s:g} s) is longer than the duration ({duration_s:g} s)")
    n = math.ceil(duration_s / interval_s - 1e-9)
    if n > MAX_SAMPLES:
        raise GpucostError(f"{n} samples is too many (at most {MAX_SAMPLES}): use a longer interval")
    return n


def paced(n: int, interval_s: float, clock: Callable[[], float],
          sleep: Callable[[float], None]) -> Iterator[tuple[int, float]]:
    """``n`` ticks, tick ``k`` at ``t_0 + k × interval`` by ``clock`` (no drift: a slow tick is followed by a shorter
    sleep); yields ``(k, t_0)`` once its time has come. The one pacing of every sampler (the watch, showback's probe)."""
    t0 = clock()
    for k in range(n):
        target = t0 + k * interval_s
        now = clock()
        if target > now:
            sleep(target - now)
        yield k, t0


def run_sampler(probe_fn: Callable[[], Iterable[Mapping]], duration_s: float, interval_s: float, *,
                clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
                on_sample: Callable[[list[Sample], float], None] | None = None,
                should_stop: Callable[[], bool] | None = None) -> list[Sample]:
    """Call ``probe_fn`` every ``interval_s`` seconds for ``duration_s`` seconds; return the samples.

    ``probe_fn()`` returns one mapping per GPU (keys of :class:`Sample` without ``t_s``; see
    ``gpucost.probe.sample``). Sample ``k`` is taken at ``t_0 + k × interval`` by ``clock`` (no drift: a
    slow probe is followed by a shorter sleep). ``on_sample(batch, fraction_done)`` runs after each
    sample; ``should_stop()`` True ends early.
    """
    n = check_sampling(duration_s, interval_s)
    samples: list[Sample] = []
    for k, t0 in paced(n, interval_s, clock, sleep):
        if should_stop is not None and should_stop():
            break
        t = clock() - t0
        batch = [Sample.from_mapping(t, m) for m in probe_fn()]
        samples.extend(batch)
        if on_sample is not None:
            on_sample(batch, (k + 1) / n)
    return samples


# --------------------------------------------------------------------------------------------------
# Policies
# --------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Policy(Record):
    """When a GPU counts as idle and when its memory is under pressure.

    idle_util_pct : utilization below this [%] is idle
    idle_for_s    : … for at least this long [s] to fire
    mem_high_pct  : memory used above this [% of total] is pressure
    mem_for_s     : … for at least this long [s] to fire
    """

    idle_util_pct: float = DEFAULT_IDLE_UTIL_PCT
    idle_for_s: float = DEFAULT_IDLE_FOR_S
    mem_high_pct: float = DEFAULT_MEM_HIGH_PCT
    mem_for_s: float = DEFAULT_MEM_FOR_S

    def check(self) -> None:
        for name, v in (("idle utilization threshold", self.idle_util_pct),
                        ("memory threshold", self.mem_high_pct)):
            if not isinstance(v, (int, float)) or math.isnan(v) or not 0 < v <= 100:
                raise GpucostError(f"the {name} must be a percentage above 0 and at most 100, not {v}")
        for name, v in (("idle duration", self.idle_for_s), ("memory duration", self.mem_for_s)):
            if not isinstance(v, (int, float)) or math.isnan(v) or math.isinf(v) or v < 0:
                raise GpucostError(f"the {name} must be zero or more seconds, not {v}")



@dataclass(frozen=True)
class Episode(Record):
    """A run of consecutive samples meeting a condition: first sample at ``start_s``, last at
    ``last_s``; ``covered_s`` the time those samples stand for."""

    start_s: float
    last_s: float
    covered_s: float



@dataclass(frozen=True)
class Verdict(Record):
    """A policy applied to one GPU. status: fired | pending | ok | unknown (no readings)."""

    policy: str  # idle | memory
    index: int
    status: str
    threshold_pct: float
    for_s: float
    fired_at_s: float | None
    longest_s: float
    episodes: tuple[Episode, ...] = ()



def _weights(ts: list[float], interval_s: float) -> list[float]:
    return [b - a for a, b in zip(ts, ts[1:], strict=False)] + [interval_s] if ts else []


def evaluate(policy_name: str, index: int, ts: list[float], flags: list[bool | None], weights: list[float],
             threshold_pct: float, for_s: float) -> Verdict:
    """Apply a ``for:`` rule to one GPU's samples: ``flags[i]`` True when the condition holds at ``ts[i]``,
    None when there is no reading (it breaks a run)."""
    if not any(f is not None for f in flags):
        return Verdict(policy_name, index, "unknown", threshold_pct, for_s, None, 0.0)
    runs: list[tuple[int, int]] = []
    start = None
    for i, f in enumerate(flags):
        if f:
            if start is None:
                start = i
        elif start is not None:
            runs.append((start, i - 1))
            start = None
    if start is not None:
        runs.append((start, len(flags) - 1))
    fired_at = None
    episodes = []
    for a, b in runs:
        episodes.append(Episode(ts[a], ts[b], sum(weights[a:b + 1])))
        if fired_at is None:
            for k in range(a, b + 1):
                if ts[k] - ts[a] >= for_s - 1e-9:
                    fired_at = ts[k]
                    break
    last_known = max(i for i, f in enumerate(flags) if f is not None)
    if fired_at is not None:
        status = "fired"
    elif flags[last_known]:
        status = "pending"
    else:
        status = "ok"
    longest = max((e.covered_s for e in episodes), default=0.0)
    return Verdict(policy_name, index, status, threshold_pct, for_s, fired_at, longest, tuple(episodes))


# --------------------------------------------------------------------------------------------------
# What a card is worth per hour
# --------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class CardValue(Record):
    """Prices of one catalog card in ``currency`` and its hourly value.

    hourly_value : [currency / GPU-hour] the cloud on-demand price per GPU when the catalog has one
                   (basis ``cloud-on-demand``), else the new price spread over ``amortize_years`` of
                   hours (basis ``amortized-new``), else None.
    """

    gpu_id: str
    name: str
    currency: str
    price_new: float | None
    price_new_as_of: str | None
    price_used: float | None
    price_used_as_of: str | None
    cloud_hourly: float | None
    cloud_offer: str | None
    cloud_as_of: str | None
    cloud_source: str | None
    amortize_years: float
    hourly_value: float | None
    hourly_basis: str | None  # cloud-on-demand | amortized-new | None



def _str(v) -> str | None:
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else str(v)


def card_value(catalog: Catalog, gpu_id: str, currency: str = "USD",
               amortize_years: float = DEFAULT_AMORTIZATION_YEARS, *, prices=None) -> CardValue:
    """What card ``gpu_id`` is worth: new, used and cloud prices and an hourly value (see CardValue).

    The owned value of an hour is :func:`gpucost.economics.card_hourly_cost` of the new card counted over
    every hour it is owned (utilization 1): the value it loses each hour, busy or idle (resale counted;
    its power is not, an idle card draws little). ``prices`` is accepted for compatibility and ignored
    (prices are cached per catalog).
    """
    from gpucost.economics import Ownership, card_hourly_cost
    from gpucost.pricing import price_index

    del prices
    if not isinstance(amortize_years, (int, float)) or math.isnan(amortize_years) or amortize_years <= 0:
        raise GpucostError(f"the amortization period must be more than 0 years, not {amortize_years}")
    currency = currency.upper()
    ps = price_index(catalog, currency)
    if gpu_id not in ps.index:
        from gpucost.errors import UnknownNameError
        raise UnknownNameError("GPU", gpu_id, list(ps.index))
    r = ps.loc[gpu_id]
    name = str(catalog.gpus.set_index("id").loc[gpu_id, "name"])
    cloud, new = number(r.get("cloud_hourly")), number(r.get("price_new"))
    hourly: float | None
    basis: str | None
    if cloud is not None:
        hourly, basis = cloud, "cloud-on-demand"
    elif new is not None:
        own = card_hourly_cost(catalog, gpu_id, currency, "new",
                               Ownership(years=float(amortize_years), utilization=1.0))
        hourly, basis = own.capital_per_hour, "amortized-new"
    else:
        hourly, basis = None, None
    return CardValue(gpu_id=gpu_id, name=name, currency=currency, price_new=new,
                     price_new_as_of=_str(r.get("price_new_as_of")), price_used=number(r.get("price_used")),
                     price_used_as_of=_str(r.get("price_used_as_of")), cloud_hourly=cloud,
                     cloud_offer=_str(r.get("cloud_offer")), cloud_as_of=_str(r.get("cloud_as_of")),
                     cloud_source=_str(r.get("cloud_source")), amortize_years=float(amortize_years),
                     hourly_value=hourly, hourly_basis=basis)


def _names(gpus) -> tuple[dict[str, str], dict[str, float]]:
    """The alias index and memory [GiB] by id of a gpus frame (computed once per loaded table)."""
    return derived(gpus, "names_and_vram", lambda g: (
        gpu_alias_index(g), dict(zip(g["id"], g["vram_gib"].astype(float), strict=True))))


def match_gpu(catalog: Catalog, nvml_name: str, memory_total_mib: float | None = None
              ) -> tuple[str | None, str | None]:
    """The catalog id of a GPU from its NVML name ("NVIDIA GeForce RTX 4090", "Tesla T4"), checked
    against its memory; returns (id, None), or (None, why not)."""
    index, vram = _names(catalog.gpus)
    gid = index.get(normalize_name(nvml_name))
    if gid is None:
        return None, f"'{nvml_name}' is not in the GPU catalog"
    if memory_total_mib:
        vram_gib = vram[gid]
        ratio = memory_total_mib / (vram_gib * MIB_PER_GIB)
        lo, hi = MEMORY_MATCH_RANGE
        if not lo <= ratio <= hi:
            return None, (f"the name matches catalog card {gid} ({vram_gib:g} GiB) but this card has "
                          f"{memory_total_mib / MIB_PER_GIB:.1f} GiB: another variant, not in the catalog")
    return gid, None


# --------------------------------------------------------------------------------------------------
# Summary
# --------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class GpuSummary(Record):
    """What one GPU's samples say. Utilization in %, times in s, energy in kWh, cost in ``currency``."""

    index: int
    samples: int
    covered_s: float
    util_mean_pct: float | None
    util_p95_pct: float | None
    util_max_pct: float | None
    idle_s: float | None
    idle_fraction: float | None
    mem_used_mean_pct: float | None
    mem_used_max_pct: float | None
    power_mean_w: float | None
    energy_kwh: float | None
    energy_complete: bool
    energy_cost: float | None
    lost: bool
    lost_at_s: float | None



@dataclass(frozen=True)
class Waste(Record):
    """Idle GPU-hours × the card's hourly value. ``basis`` says which value (see CardValue).
    ``wasted_per_month``: the same rate over an average month (730 h) of hours like the sampled ones."""

    index: int
    gpu_id: str | None
    idle_hours: float | None
    hourly_value: float | None
    basis: str | None
    wasted: float | None
    wasted_per_month: float | None
    currency: str



@dataclass(frozen=True)
class WatchReport:
    """A sampling run summed up: per GPU, the policies' verdicts, the waste, and totals."""

    interval_s: float
    policy: Policy
    currency: str
    kwh_price: float | None
    gpus: tuple[GpuSummary, ...]
    verdicts: tuple[Verdict, ...]
    waste: tuple[Waste, ...]
    totals: dict = field(default_factory=dict)

    def verdict(self, policy: str, index: int) -> Verdict:
        return next(v for v in self.verdicts if v.policy == policy and v.index == index)

    def to_dict(self) -> dict:
        return {"interval_s": self.interval_s, "policy": self.policy.to_dict(), "currency": self.currency,
                "kwh_price": self.kwh_price, "gpus": [g.to_dict() for g in self.gpus],
                "verdicts": [v.to_dict() for v in self.verdicts], "waste": [w.to_dict() for w in self.waste],
                "totals": dict(self.totals)}


def _weighted(values: Sequence[float | None], w: Sequence[float]) -> tuple[list[tuple[float, float]], float, float | None]:
    """The known (value, seconds) pairs, the seconds they cover, and their time-weighted mean."""
    known = [(v, wi) for v, wi in zip(values, w, strict=True) if v is not None]
    secs = sum(wi for _, wi in known)
    return known, secs, (sum(v * wi for v, wi in known) / secs if secs > 0 else None)


def _product(a: float | None, b: float | None) -> float | None:
    return a * b if a is not None and b is not None else None


def summarize_gpu(index: int, samples: list[Sample], interval_s: float, policy: Policy,
                  kwh_price: float | None = None) -> tuple[GpuSummary, Verdict, Verdict]:
    """One GPU's samples (sorted by time) → its summary and its idle and memory verdicts."""
    ts = [s.t_s for s in samples]
    w = _weights(ts, interval_s)
    util = [s.utilization_gpu_pct for s in samples]
    known, util_s, util_mean = _weighted(util, w)
    util_vals = [u for u, _ in known]
    idle_s = sum(wi for u, wi in known if u < policy.idle_util_pct) if known else None
    mem = [s.memory_used_pct for s in samples]
    mem_known, _, mem_mean = _weighted(mem, w)
    power, power_s, power_mean = _weighted([s.power_w for s in samples], w)
    energy = sum(p * wi for p, wi in power) / J_PER_KWH if power else None
    lost_at = next((s.t_s for s in samples if s.lost), None)
    summary = GpuSummary(
        index=index, samples=len(samples), covered_s=sum(w), util_mean_pct=util_mean,
        util_p95_pct=float(np.percentile(util_vals, 95)) if util_vals else None,
        util_max_pct=max(util_vals, default=None), idle_s=idle_s,
        idle_fraction=idle_s / util_s if idle_s is not None and util_s > 0 else None,
        mem_used_mean_pct=mem_mean, mem_used_max_pct=max((m for m, _ in mem_known), default=None),
        power_mean_w=power_mean, energy_kwh=energy, energy_complete=bool(power) and abs(power_s - sum(w)) < 1e-9,
        energy_cost=_product(energy, kwh_price), lost=lost_at is not None, lost_at_s=lost_at)
    idle = evaluate("idle", index, ts, [None if u is None else u < policy.idle_util_pct for u in util], w,
                    policy.idle_util_pct, policy.idle_for_s)
    memv = evaluate("memory", index, ts, [None if m is None else m > policy.mem_high_pct for m in mem], w,
                    policy.mem_high_pct, policy.mem_for_s)
    return summary, idle, memv


def _waste(summary: GpuSummary, value: CardValue | None, currency: str) -> Waste:
    """What one GPU's idle time was worth (its card value × idle hours), and per average month."""
    idle_h = summary.idle_s / SECONDS_PER_HOUR if summary.idle_s is not None else None
    hourly = value.hourly_value if value is not None else None
    wasted = _product(idle_h, hourly)
    per_month = wasted * HOURS_PER_MONTH * SECONDS_PER_HOUR / summary.covered_s \
        if wasted is not None and summary.covered_s > 0 else None
    return Waste(index=summary.index, gpu_id=value.gpu_id if value is not None else None, idle_hours=idle_h,
                 hourly_value=hourly, basis=value.hourly_basis if value is not None else None,
                 wasted=wasted, wasted_per_month=per_month, currency=currency.upper())


def _totals(gpus: list[GpuSummary], verdicts: list[Verdict], waste: list[Waste], kwh_price: float | None) -> dict:
    means = [g.util_mean_pct for g in gpus if g.util_mean_pct is not None]
    energies = [g.energy_kwh for g in gpus if g.energy_kwh is not None]
    energy = sum(energies) if energies else None
    wasted = [w.wasted for w in waste if w.wasted is not None]
    return {
        "gpus": len(gpus),
        "utilization_mean_pct": sum(means) / len(means) if means else None,
        "idle_gpu_hours": sum(w.idle_hours for w in waste if w.idle_hours is not None),
        "energy_kwh": energy,
        "energy_cost": _product(energy, kwh_price),
        "wasted": sum(wasted) if wasted else None,
        "idle_fired": [v.index for v in verdicts if v.policy == "idle" and v.status == "fired"],
        "memory_fired": [v.index for v in verdicts if v.policy == "memory" and v.status == "fired"],
    }


def _check_run(policy: Policy, interval_s: float, kwh_price: float | None) -> None:
    policy.check()
    if kwh_price is not None and (math.isnan(kwh_price) or kwh_price < 0):
        raise GpucostError(f"the electricity price must be zero or more, not {kwh_price}")
    if not interval_s > 0:
        raise GpucostError(f"the interval must be greater than zero, not {interval_s}")


def summarize(samples: Iterable[Sample], interval_s: float, policy: Policy | None = None, *,
              kwh_price: float | None = None, currency: str = "USD",
              values: Mapping[int, CardValue | None] | None = None) -> WatchReport:
    """Sum up a sampling run (see the module doc for the time model).

    interval_s : the sampling interval [s] (the time the last sample stands for)
    kwh_price  : electricity price [currency / kWh]; None leaves the energy cost out
    values     : GPU index → its CardValue (from :func:`card_value`), for the waste
    """
    policy = policy or Policy()
    _check_run(policy, interval_s, kwh_price)
    by_gpu: dict[int, list[Sample]] = {}
    for s in samples:
        by_gpu.setdefault(s.index, []).append(s)
    gpus: list[GpuSummary] = []
    verdicts: list[Verdict] = []
    waste: list[Waste] = []
    for index in sorted(by_gpu):
        summary, idle, memv = summarize_gpu(index, sorted(by_gpu[index], key=lambda s: s.t_s), interval_s,
                                            policy, kwh_price)
        gpus.append(summary)
        verdicts += [idle, memv]
        waste.append(_waste(summary, (values or {}).get(index), currency))
    return WatchReport(interval_s=float(interval_s), policy=policy, currency=currency.upper(),
                       kwh_price=kwh_price, gpus=tuple(gpus), verdicts=tuple(verdicts), waste=tuple(waste),
                       totals=_totals(gpus, verdicts, waste, kwh_price))
