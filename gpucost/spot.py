"""Spot instances: the interruption hazard, its buckets, and what interruptions cost a job.

One home for every engine that prices spot capacity (the TCO, the fleet simulator, the claims):

* **Buckets.** AWS's Spot Instance Advisor reports each instance type's interruption frequency as a
  bucket ("the rate at which Spot has reclaimed capacity during the trailing month": <5 %, 5-10 %, …);
  each bucket's value (fraction of instances interrupted within a month, with its range) is a row
  ``spot_interruption_per_month`` of data/tco_defaults.csv, with its source.
* **Hazard.** A Poisson process with rate λ interrupts an instance within a month of H hours with
  probability p = 1 − e^(−λH), so λ = −ln(1 − p) / H.
* **Cost.** With Young's checkpoint interval τ = √(2δ·MTBF) (MTBF = 1/(gλ) for a job on g GPUs, δ the
  time to write a checkpoint, R the time to restart), the expected paid GPU-hours per GPU-hour of work are
  φ = (1 + δ/τ) / (1 − gλ(R + τ/2)); a job misses a wall-clock deadline when its interruptions,
  Poisson(gλ × wall time), cost more than the slack.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gpucost.catalog import Catalog
from gpucost.errors import GpucostError, UnknownNameError
from gpucost.units import HOURS_PER_MONTH

#: AWS Spot Instance Advisor's interruption-frequency buckets (values: tco_defaults.csv)
SPOT_BUCKETS = ("<5%", "5-10%", "10-15%", "15-20%", ">20%")
#: the upper end of the open ">20%" bucket for sensitivity ranges: twice its value (a sensitivity setting,
#: not data; capped below 1)
OPEN_BUCKET_HIGH_FACTOR = 2.0
MAX_MONTHLY_FRACTION = 0.999


@dataclass(frozen=True)
class SpotBucket:
    """One bucket: the monthly interrupted fraction (value, low, high) and its source."""

    bucket: str
    per_month: float
    low: float | None
    high: float | None
    source: str
    as_of: str
    notes: str

    @property
    def rate_per_hour(self) -> float:
        return interruption_rate_per_hour(self.per_month)

    @property
    def rate_range_per_hour(self) -> tuple[float, float]:
        """(low, high) interruption rate [per instance-hour]; the open top bucket goes to twice its value."""
        lo = interruption_rate_per_hour(self.low) if self.low is not None else self.rate_per_hour
        hi_frac = self.high if self.high is not None else self.per_month * OPEN_BUCKET_HIGH_FACTOR
        return lo, interruption_rate_per_hour(min(hi_frac, MAX_MONTHLY_FRACTION))


def _opt(v) -> float | None:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(x) else x


def spot_bucket(catalog: Catalog, bucket: str) -> SpotBucket:
    """The tco_defaults.csv row of an AWS Spot Advisor bucket."""
    if bucket not in SPOT_BUCKETS:
        raise UnknownNameError("spot interruption bucket", bucket, SPOT_BUCKETS)
    t = catalog.table("tco_defaults")
    rows = t[(t["key"] == "spot_interruption_per_month") & (t["variant"] == bucket)]
    if rows.empty:
        raise GpucostError(f"no spot_interruption_per_month row for bucket '{bucket}' in tco_defaults.csv")
    r = rows.iloc[0]
    return SpotBucket(bucket, float(r["value"]), _opt(r["low"]), _opt(r["high"]), str(r["source"]),
                      str(r["as_of"]), str(r["notes"] or ""))


def interruption_rate_per_hour(p_month: float) -> float:
    """Interruptions per instance-hour from the chance ``p_month`` of an interruption within a month."""
    if not (0 <= p_month < 1):
        raise GpucostError(f"the monthly interruption chance must be in [0, 1), not {p_month}")
    return -math.log1p(-p_month) / HOURS_PER_MONTH


def young_daly_interval_hours(checkpoint_hours, mtbf_hours):
    """Young's optimal checkpoint interval τ = √(2 δ MTBF) [h] (array-friendly)."""
    return np.sqrt(2.0 * np.asarray(checkpoint_hours, float) * np.asarray(mtbf_hours, float))


def spot_factor(lam, ckpt_h, restart_h, gpus=1):
    """Expected paid GPU-hours per GPU-hour of work on spot, and Young's checkpoint interval τ [h].

    φ = (1 + δ/τ) / (1 − gλ(R + τ/2)) with τ = √(2δ/(gλ)); φ = ∞ when interruptions outpace progress.
    Array-friendly; φ ≥ 1 always.
    """
    lam = np.asarray(lam, float)
    ckpt_h = np.asarray(ckpt_h, float)
    restart_h = np.asarray(restart_h, float)
    lj = lam * np.asarray(gpus, float)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        tau = np.where(lj > 0, np.sqrt(2.0 * ckpt_h / np.where(lj > 0, lj, 1.0)), np.inf)
        ck = np.where((tau > 0) & np.isfinite(tau), ckpt_h / np.where(tau > 0, tau, 1.0), 0.0)
        lost = restart_h + np.where(np.isfinite(tau), tau, 0.0) / 2.0
        denom = np.where(lj > 0, 1.0 - lj * lost, 1.0)
        phi = np.where(denom > 0, (1.0 + ck) / np.where(denom > 0, denom, 1.0), np.inf)
    return phi, tau


def poisson_cdf(k, mu):
    """P(X ≤ k) for X ~ Poisson(mu); arrays broadcast; k < 0 gives 0."""
    k = np.floor(np.asarray(k, float))
    mu = np.asarray(mu, float)
    k, mu = np.broadcast_arrays(k, mu)
    out = np.zeros(k.shape)
    ok = k >= 0
    if not ok.any():
        return out
    mu_max = float(np.max(np.where(ok, mu, 0.0)))
    cap = int(math.ceil(mu_max + 12 * math.sqrt(mu_max) + 25))
    big = ok & (k >= cap)
    out[big] = 1.0
    small = ok & ~big
    if small.any():
        j = np.arange(cap + 1)
        lg = np.concatenate([[0.0], np.cumsum(np.log(np.arange(1, cap + 1)))])
        mus = mu[small][:, None]
        with np.errstate(divide="ignore"):
            logpmf = np.where(mus > 0, j * np.log(np.where(mus > 0, mus, 1.0)) - mus - lg,
                              np.where(j == 0, 0.0, -np.inf))
        cdf = np.cumsum(np.exp(logpmf), axis=1)
        out[small] = np.minimum(1.0, cdf[np.arange(cdf.shape[0]), k[small].astype(int)])
    return out


def deadline_miss_probability(work_gpu_hours, deadline_h, lam, ckpt_h, restart_h, gpus=1, speed=1.0):
    """Chance a spot job of ``work_gpu_hours`` (owned-card GPU-hours) on ``gpus`` GPUs misses a
    wall-clock deadline. Interruptions ~ Poisson(gλ × w') over the uninterrupted wall time
    w' = W/(g·speed)·(1 + δ/τ); each costs R + τ/2. Misses when w' + k(R + τ/2) > deadline."""
    _phi, tau = spot_factor(lam, ckpt_h, restart_h, gpus)
    lj = np.asarray(lam, float) * gpus
    with np.errstate(divide="ignore", invalid="ignore"):
        ck = np.where(np.isfinite(tau) & (tau > 0), np.asarray(ckpt_h, float) / np.where(tau > 0, tau, 1), 0)
        wall = np.asarray(work_gpu_hours, float) / (gpus * np.asarray(speed, float)) * (1 + ck)
        loss = np.asarray(restart_h, float) + np.where(np.isfinite(tau), tau, 0.0) / 2
        kmax = np.where(loss > 0, (np.asarray(deadline_h, float) - wall) / np.where(loss > 0, loss, 1),
                        np.inf)
    mu = lj * wall
    p_ok = np.where(np.asarray(deadline_h) < wall, 0.0,
                    np.where(np.isinf(kmax), 1.0, poisson_cdf(np.where(np.isinf(kmax), 0, kmax), mu)))
    return 1.0 - p_ok


__all__ = ["SPOT_BUCKETS", "SpotBucket", "spot_bucket", "interruption_rate_per_hour", "young_daly_interval_hours",
           "spot_factor", "poisson_cdf", "deadline_miss_probability"]
