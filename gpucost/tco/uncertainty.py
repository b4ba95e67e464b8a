"""Sensitivity: the tornado (each uncertain input swung over its range, the rest at base) and a
vectorized Monte Carlo (every uncertain input drawn from a triangular distribution over its range).

The hybrid keeps the base plan's commitment in both (a commitment is made before you know).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from gpucost.errors import GpucostError
from gpucost.serialize import Record, jsonable
from gpucost.specs import SPECS
from gpucost.spot import deadline_miss_probability
from gpucost.tco.core import all_options, demand, extra_hours
from gpucost.tco.inputs import Inputs, Params, vectorized
from gpucost.tco.results import TcoResult, evaluate

#: tornado/Monte Carlo inputs: name → (the fields it moves, how: "scale" multiplies, "set" replaces)
SENSITIVITY_INPUTS: dict[str, tuple[tuple[str, ...], str]] = {
    "hardware_price": (("owned.price_new", "owned.price_used", "owned.host_cost"), "scale"),
    "cloud_price": (("cloud.on_demand_per_gpu_hour", "cloud.spot_per_gpu_hour", "cloud.reserved_1y_per_gpu_hour",
                     "cloud.reserved_3y_per_gpu_hour"), "scale"),
    "utilization": (("demand.base_utilization",), "set"),
    "electricity": (("owned.electricity_per_kwh",), "scale"),
    "resale": (("owned.resale_retention_per_year",), "set"),
    "interruption": (("spot.interruptions_per_hour",), "scale"),
    "fx": (("fx.hardware_factor", "fx.cloud_factor"), "scale"),
    "pue": (("owned.pue",), "scale"),
}


def _apply(P: Params, name: str, values: np.ndarray, rows: slice) -> None:
    """Set or scale the rows ``rows`` of the (S, 1) arrays an input moves (in place: arrays are fresh)."""
    paths, how = SENSITIVITY_INPUTS[name]
    for path in paths:
        arr = P.get(path)
        arr[rows, 0] = arr[rows, 0] * values if how == "scale" else values


def base_value(inputs: Inputs, name: str) -> float:
    paths, how = SENSITIVITY_INPUTS[name]
    return float(inputs.params.get(paths[0])) if how == "set" else 1.0


def relevant_inputs(inputs: Inputs) -> list[str]:
    """The inputs that can move a total: no interruption rate without spot, no fx without a converted price."""
    lam = inputs.params.spot.interruptions_per_hour
    names = []
    for name in SENSITIVITY_INPUTS:
        if name == "interruption" and not (lam == lam and lam > 0):
            continue
        if name == "fx" and not inputs.params.fx.any_exposed:
            continue
        names.append(name)
    return names


@dataclass(frozen=True)
class TornadoBar(Record):
    """One input swung: ``low``/``high`` are factors of the base (``how`` = factor) or values."""

    input: str
    how: str
    low: float
    high: float
    base: float
    low_totals: Mapping[str, float]
    high_totals: Mapping[str, float]

    def swing(self, option: str) -> float:
        return abs(self.high_totals[option] - self.low_totals[option])


@dataclass(frozen=True)
class TornadoResult(Record):
    currency: str
    base_totals: Mapping[str, float]
    bars: tuple[TornadoBar, ...]

    def ranked(self, option: str) -> list[TornadoBar]:
        """Bars by their swing of ``option``'s total, widest first."""
        return sorted(self.bars, key=lambda b: -b.swing(option))


def _skip(result: TcoResult) -> set[str]:
    return {u for u, _k, _r in result.unavailable}


def tornado(inputs: Inputs, result: TcoResult | None = None, *, months: int | None = None) -> TornadoResult:
    """Swing each input over its range with the rest at base; total cost of every option at both ends
    (one vectorized evaluation)."""
    result = result or evaluate(inputs, months=months)
    M = result.horizon_months
    names = relevant_inputs(inputs)
    P = vectorized(inputs.params, 1 + 2 * len(names))
    for i, name in enumerate(names):
        lo, hi = inputs.swings[name]
        _apply(P, name, np.array([lo]), slice(1 + 2 * i, 2 + 2 * i))
        _apply(P, name, np.array([hi]), slice(2 + 2 * i, 3 + 2 * i))
    res = all_options(P, demand(P, M, extra_hours(P, inputs.jobs, M)), M, result.hybrid, skip=_skip(result))
    totals = {k: v[0][:, -1] for k, v in res.items()}
    bars = []
    for i, name in enumerate(names):
        lo, hi = inputs.swings[name]
        how = SENSITIVITY_INPUTS[name][1]
        bars.append(TornadoBar(name, "factor" if how == "scale" else "value", float(lo), float(hi),
                               float(inputs.params.get(SENSITIVITY_INPUTS[name][0][0])),
                               MappingProxyType({k: float(t[1 + 2 * i]) for k, t in totals.items()}),
                               MappingProxyType({k: float(t[2 + 2 * i]) for k, t in totals.items()})))
    return TornadoResult(inputs.currency, MappingProxyType({k: float(t[0]) for k, t in totals.items()}), tuple(bars))


@dataclass(frozen=True)
class MonteCarloResult(Record):
    currency: str
    draws: int
    seed: int
    percentiles: Mapping[str, Mapping[str, float]]  # option → p10, p50, p90, mean
    probability_cheapest: Mapping[str, float]
    deadline_miss_probability: float | None
    histogram: Mapping[str, tuple[tuple[float, ...], tuple[int, ...]]]  # option → (edges, counts)
    totals: Mapping[str, np.ndarray] = field(repr=False, compare=False)

    def to_dict(self) -> dict:
        return jsonable({"currency": self.currency, "draws": self.draws, "seed": self.seed,
                         "percentiles": self.percentiles, "probability_cheapest": self.probability_cheapest,
                         "deadline_miss_probability": self.deadline_miss_probability,
                         "histogram": {k: {"edges": e, "counts": c} for k, (e, c) in self.histogram.items()}})


def _triangular(rng: np.random.Generator, lo: float, mode: float, hi: float, n: int) -> np.ndarray:
    if hi - lo <= 1e-15:
        return np.full(n, mode)
    return rng.triangular(lo, min(max(mode, lo), hi), hi, n)


def _summary(tot: dict[str, np.ndarray], bins: int):
    keys = list(tot)
    stack = np.vstack([np.where(np.isfinite(tot[k]), tot[k], np.inf) for k in keys])
    winner = np.argmin(stack, axis=0)
    prob = {k: float(np.mean(winner == i)) for i, k in enumerate(keys)}
    finite_all = stack[np.isfinite(stack)]
    lo_e, hi_e = (float(finite_all.min()), float(finite_all.max())) if finite_all.size else (0.0, 1.0)
    edges = np.linspace(lo_e, hi_e if hi_e > lo_e else lo_e + 1, bins + 1)
    pct, hist = {}, {}
    for k in keys:
        x = tot[k][np.isfinite(tot[k])]
        q = np.percentile(x, [10, 50, 90]) if x.size else [math.nan] * 3
        pct[k] = MappingProxyType({"p10": float(q[0]), "p50": float(q[1]), "p90": float(q[2]),
                                   "mean": float(x.mean()) if x.size else math.nan})
        counts, _ = np.histogram(x, bins=edges)
        hist[k] = (tuple(float(e) for e in edges), tuple(int(c) for c in counts))
    return pct, prob, hist


def monte_carlo(inputs: Inputs, result: TcoResult | None = None, *, draws: int = 10000, seed: int = 0,
                months: int | None = None, chunk: int = 2500, bins: int = 30,
                progress: Callable[[float], None] | None = None) -> MonteCarloResult:
    """Draw every uncertain input from a triangular (low, base, high) distribution over its range and
    price every option per draw (vectorized, in chunks so ``progress(fraction)`` can report)."""
    draws = int(SPECS["monte_carlo_draws"].check(draws, "Monte Carlo draws"))
    if draws < 1:
        raise GpucostError(f"Monte Carlo needs at least one draw, not {draws}")
    seed = int(SPECS["seed"].check(seed, "seed"))
    result = result or evaluate(inputs, months=months)
    M = result.horizon_months
    rng = np.random.default_rng(seed)
    names = relevant_inputs(inputs)
    samples = {n: _triangular(rng, *inputs.swings[n][:1], base_value(inputs, n), inputs.swings[n][1], draws)
               for n in names}
    extra = extra_hours(inputs.params, inputs.jobs, M)
    totals: dict[str, list[np.ndarray]] = {}
    miss = []
    s = inputs.params.spot
    for start in range(0, draws, chunk):
        stop = min(draws, start + chunk)
        P = vectorized(inputs.params, stop - start)
        for name in names:
            _apply(P, name, samples[name][start:stop], slice(0, stop - start))
        res = all_options(P, demand(P, M, extra), M, result.hybrid, skip=_skip(result))
        for k, (cum, _parts) in res.items():
            totals.setdefault(k, []).append(cum[:, -1])
        if "spot" in res and s.job_gpu_hours == s.job_gpu_hours and s.deadline_hours == s.deadline_hours:
            miss.append(deadline_miss_probability(s.job_gpu_hours, s.deadline_hours, P.spot.interruptions_per_hour[:, 0],
                                                  s.checkpoint_hours, s.restart_hours, s.gpus_per_job,
                                                  inputs.params.cloud.relative_speed))
        if progress is not None:
            progress(stop / draws)
    tot = {k: np.concatenate(v) for k, v in totals.items()}
    if not tot:
        raise GpucostError("no option can be priced")
    pct, prob, hist = _summary(tot, bins)
    return MonteCarloResult(inputs.currency, draws, seed, MappingProxyType(pct), MappingProxyType(prob),
                            float(np.mean(np.concatenate(miss))) if miss else None, MappingProxyType(hist),
                            MappingProxyType(tot))


__all__ = ["SENSITIVITY_INPUTS", "TornadoBar", "TornadoResult", "tornado", "MonteCarloResult", "monte_carlo",
           "relevant_inputs"]
