"""The vectorized cost core: every option's cost to date, month by month, for S parameter sets at once.

Arrays are (S, M): S parameter sets (1, the tornado's rows or the Monte Carlo's draws) by M months. The
core reads :class:`~gpucost.tco.inputs.Params` (typed sections, every field a float or an (S, 1) array);
energy and resale go through :mod:`gpucost.economics`, spot through :mod:`gpucost.spot`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from gpucost.economics import energy_cost, resale_value
from gpucost.serialize import Record
from gpucost.specs import MAX_GPUS
from gpucost.spot import spot_factor
from gpucost.tco.inputs import JobLoad, Params
from gpucost.tco.scenario import BURST_KINDS, HYBRID_BASES
from gpucost.units import HOURS_PER_MONTH, MONTHS_PER_YEAR, WATTS_PER_KW

#: option id → kind (the CLI's ``kind`` field)
OPTION_KIND = {
    "buy-new": "buy-new", "buy-used": "buy-used", "lease": "lease", "on-demand": "cloud-on-demand",
    "spot": "cloud-spot", "reserved-1y": "cloud-reserved", "reserved-3y": "cloud-reserved",
    "hybrid": "hybrid",
}
OPTION_IDS = tuple(OPTION_KIND)
KINDS = ("buy-new", "buy-used", "lease", "cloud-on-demand", "cloud-spot", "cloud-reserved", "hybrid")
OWNED_OPTIONS = ("buy-new", "buy-used", "lease")
RENTED_OPTIONS = ("on-demand", "spot", "reserved-1y", "reserved-3y")
RESERVED_TERM_MONTHS = {"reserved-1y": 12, "reserved-3y": 36}
#: the part of ``hybrid`` option ids that names its owned base
OWNED_BASE_OPTION = {"owned-new": "buy-new", "owned-used": "buy-used"}
H = HOURS_PER_MONTH


@dataclass(frozen=True)
class HybridPlan(Record):
    """The base fleet that minimizes the hybrid's total cost."""

    base: str  # owned-new | owned-used | reserved-1y | reserved-3y
    burst: str  # spot | on-demand
    base_gpus: int
    total_cost: float
    headroom: float
    headroom_gpus: int
    headroom_cost: float
    configured_gpus: int
    configured_cost: float
    curve: tuple[tuple[int, float], ...]  # (base GPUs, total cost) for the chosen base and burst


def annuity_payment(principal, monthly_rate, months: int):
    """Monthly instalment that repays ``principal`` in ``months`` at ``monthly_rate``: A·r/(1−(1+r)^−T)."""
    principal = np.asarray(principal, float)
    r = np.asarray(monthly_rate, float)
    safe = np.where(r > 1e-12, r, 1.0)
    return np.where(r > 1e-12, principal * safe / (1 - (1 + safe) ** (-months)), principal / months)


def extra_hours(P: Params, jobs: Iterable[JobLoad], months: int) -> np.ndarray:
    """Bursts and jobs per month [GPU-h of the owned card], shape (months,)."""
    d = P.demand
    m = np.arange(1, months + 1)
    extra = np.zeros(months)
    burst = float(np.max(d.burst_gpu_hours))
    if burst > 0:
        first, every = int(np.max(d.burst_first_month)), int(np.max(d.burst_every_months))
        extra += np.where((m >= first) & ((m - first) % every == 0), burst, 0.0)
    for j in jobs:
        extra += np.where(m >= j.first_month, j.hours_per_month, 0.0)
    return extra


def demand(P: Params, months: int, extra: np.ndarray) -> np.ndarray:
    """Owned-card GPU-hours wanted each month, (S, M): the steady load growing yearly plus ``extra``."""
    m0 = np.arange(months)[None, :]
    base = P.demand.base_utilization * P.owned.count * H
    return base * (1.0 + P.demand.growth_per_year) ** (m0 / MONTHS_PER_YEAR) + extra[None, :]


def _hw(P: Params, price, exposed):
    return price * (1.0 + exposed * (P.fx.hardware_factor - 1.0))


def _cl(P: Params, price, exposed):
    return price * (1.0 + exposed * (P.fx.cloud_factor - 1.0))


def host_cost(P: Params):
    return _hw(P, P.owned.host_cost, P.fx.host_exposed)


def card_price(P: Params, condition: str):
    o = P.owned
    return _hw(P, o.price_new, P.fx.new_exposed) if condition == "new" else _hw(P, o.price_used, P.fx.used_exposed)


def cloud_price(P: Params, option: str):
    c, fx = P.cloud, P.fx
    return {"on-demand": _cl(P, c.on_demand_per_gpu_hour, fx.on_demand_exposed),
            "spot": _cl(P, c.spot_per_gpu_hour, fx.spot_exposed),
            "reserved-1y": _cl(P, c.reserved_1y_per_gpu_hour, fx.reserved_1y_exposed),
            "reserved-3y": _cl(P, c.reserved_3y_per_gpu_hour, fx.reserved_3y_exposed)}[option]


def _col(x, S: int) -> np.ndarray:
    return np.broadcast_to(np.asarray(x, float), (S, 1))[:, 0]


def owned_cost(P: Params, D: np.ndarray, N, price, c_over, months: int):
    """Cost to date (liquidation view) of N owned cards bought at ``price``; overflow at ``c_over`` per
    owned-card GPU-hour. Returns (cum (S, M), parts summed over the horizon)."""
    o = P.owned
    cap = N * H * o.max_utilization
    served = np.minimum(D, cap)
    over = D - served
    with np.errstate(divide="ignore", invalid="ignore"):
        u = np.where(N > 0, served / np.where(N > 0, N * H, 1.0), 0.0)
    card_w = o.tdp_w * (o.idle_power_fraction + (1.0 - o.idle_power_fraction) * u)
    on = np.where(o.always_on > 0, card_w + o.host_power_w, (o.tdp_w + o.host_power_w) * u)
    energy = energy_cost(N * on, H, o.electricity_per_kwh, o.pue)
    host = host_cost(P)
    # costs that are the same every month [per month, shape (S, 1)]
    colo = N * (o.tdp_w + o.host_power_w) / WATTS_PER_KW * o.colocation_per_kw_month
    maint = o.maintenance_fraction_per_year / MONTHS_PER_YEAR * N * (price + host)
    fail = o.failure_rate_per_year / MONTHS_PER_YEAR * N * price
    staff = np.where(N > 0, o.staff_per_month, 0.0)
    with np.errstate(invalid="ignore"):
        overflow = np.where(over > 0, over * c_over, 0.0)
    m = np.arange(1, months + 1)[None, :]
    resale = resale_value(N * price, o.resale_retention_per_year, m, o.resale_fee_fraction)
    cum = N * (price + host) - resale + np.cumsum(energy + overflow, axis=1) + (colo + maint + fail + staff) * m
    S = D.shape[0]
    parts = {"capex": _col(N * (price + host), S), "resale": resale[:, -1], "energy": energy.sum(1),
             "colocation": _col(colo, S) * months, "maintenance": _col(maint, S) * months,
             "failure_reserve": _col(fail, S) * months, "staff": _col(staff, S) * months,
             "overflow": overflow.sum(1), "overflow_hours": over.sum(1), "served_hours": served.sum(1),
             "utilization": u.mean(1)}
    return cum, parts


def lease_cost(P: Params, D: np.ndarray, months: int, c_over):
    """Lease to own: an annuity on the new cards and hosts; cost to date = paid + balance still owed −
    resale + running costs (buying plus interest)."""
    N, price = P.owned.count, card_price(P, "new")
    cum_own, parts = owned_cost(P, D, N, price, c_over, months)
    total = N * (price + host_cost(P))
    down = total * P.lease.down_payment_fraction
    A = total - down
    r = P.lease.annual_rate / MONTHS_PER_YEAR
    T = int(round(float(np.max(P.lease.term_months))))
    pay = annuity_payment(A, r, T)
    m = np.arange(1, months + 1)[None, :]
    paid = down + pay * np.minimum(m, T)
    g = (1.0 + r) ** m
    safe = np.where(r > 1e-12, r, 1.0)
    bal = np.where(m < T, np.where(r > 1e-12, A * g - pay * (g - 1.0) / safe, A - pay * m), 0.0)
    cum = cum_own - total + paid + bal  # capex replaced by what is paid and still owed
    parts = dict(parts)
    parts["payment"] = pay[:, 0] if np.ndim(pay) == 2 else pay
    parts["interest"] = (pay * T + down - total)[:, 0] if np.ndim(pay) == 2 else pay * T + down - total
    parts["term"] = T
    return cum, parts


def reserved_cost(P: Params, D: np.ndarray, months: int, term: int, price, fixed_k=None, c_over=None):
    """Reserved GPUs: per term the peak month's need (or ``fixed_k``), committed in full at the term's
    start. Overflow beyond ``fixed_k`` costs ``c_over`` per owned-card GPU-hour."""
    S = D.shape[0]
    speed = P.cloud.relative_speed
    need = D / speed
    n_terms = -(-months // term)
    if fixed_k is None:
        pad = np.zeros((S, n_terms * term))
        pad[:, :months] = need
        K = np.ceil(pad.reshape(S, n_terms, term).max(axis=2) / H - 1e-9)
        over_ref = np.zeros_like(D)
    else:
        K = np.broadcast_to(np.asarray(fixed_k, float), (S, 1)) * np.ones((1, n_terms))
        over_ref = np.maximum(0.0, D - np.asarray(fixed_k, float) * H * speed)
    K_month = np.repeat(K, term, axis=1)[:, :months]
    commit = K * H * term * price
    arr = np.zeros_like(D)
    arr[:, ::term] = commit
    with np.errstate(invalid="ignore"):
        overflow = np.where(over_ref > 0, over_ref * (c_over if c_over is not None else 0.0), 0.0)
    cum = np.cumsum(arr + overflow, axis=1)
    used = np.minimum(need, K_month * H).sum(1)
    paid_hours = (K * H * term).sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        util = np.where(paid_hours > 0, used / np.where(paid_hours > 0, paid_hours, 1.0), 0.0)
    return cum, {"reserved_gpus": K[:, 0], "reserved_gpus_max": K.max(1), "utilization": util,
                 "overflow": overflow.sum(1), "commitment": commit.sum(1), "terms": n_terms}


def burst_cost(P: Params, kind: str):
    """Cost of one owned-card GPU-hour of work in the cloud: on-demand or expected spot."""
    if kind == "on-demand":
        return cloud_price(P, "on-demand") / P.cloud.relative_speed
    s = P.spot
    phi, _ = spot_factor(s.interruptions_per_hour, s.checkpoint_hours, s.restart_hours, s.gpus_per_job)
    return cloud_price(P, "spot") * phi / P.cloud.relative_speed


def spot_cost(P: Params, D: np.ndarray):
    s = P.spot
    phi, tau = spot_factor(s.interruptions_per_hour, s.checkpoint_hours, s.restart_hours, s.gpus_per_job)
    work = D / P.cloud.relative_speed
    paid = work * phi
    with np.errstate(invalid="ignore"):
        interruptions = paid * s.interruptions_per_hour
    S = D.shape[0]
    return np.cumsum(paid * cloud_price(P, "spot"), axis=1), {
        "factor": _col(phi, S), "interval_h": _col(tau, S), "work_hours": work.sum(1), "paid_hours": paid.sum(1),
        "interruptions_per_month": interruptions.mean(1)}


def hybrid_cost(P: Params, D: np.ndarray, months: int, base: str, burst: str, k):
    c_b = burst_cost(P, burst)
    k = np.asarray(k, float)
    if base in OWNED_BASE_OPTION:
        return owned_cost(P, D, k, card_price(P, "new" if base == "owned-new" else "used"), c_b, months)
    return reserved_cost(P, D, months, RESERVED_TERM_MONTHS[base], cloud_price(P, base), fixed_k=k, c_over=c_b)


def all_options(P: Params, D: np.ndarray, months: int, plan: HybridPlan | None, skip: Iterable[str] = ()):
    """Cost to date of every available option → {id: (cum (S, M), parts)}."""
    skip = set(skip)
    od = burst_cost(P, "on-demand")
    builders = {
        "buy-new": lambda: owned_cost(P, D, P.owned.count, card_price(P, "new"), od, months),
        "buy-used": lambda: owned_cost(P, D, P.owned.count, card_price(P, "used"), od, months),
        "lease": lambda: lease_cost(P, D, months, od),
        "on-demand": lambda: (np.cumsum(D * od, axis=1), {"gpu_hours": (D / P.cloud.relative_speed).sum(1)}),
        "spot": lambda: spot_cost(P, D),
    }
    for rid, term in RESERVED_TERM_MONTHS.items():
        builders[rid] = _reserved_builder(P, D, months, rid, term)
    if plan is not None:
        builders["hybrid"] = lambda: hybrid_cost(P, D, months, plan.base, plan.burst, plan.base_gpus)
    return {oid: build() for oid, build in builders.items() if oid not in skip}


def _reserved_builder(P: Params, D: np.ndarray, months: int, rid: str, term: int):
    return lambda: reserved_cost(P, D, months, term, cloud_price(P, rid))


def break_even_month(cum_a: np.ndarray, cum_b: np.ndarray) -> np.ndarray:
    """First month (1-based) from which ``cum_a`` stays at or below ``cum_b``; 0 where never. (S, M)."""
    ok = cum_a <= cum_b * (1 + 1e-12) + 1e-9
    stays = np.flip(np.logical_and.accumulate(np.flip(ok, axis=1), axis=1), axis=1)
    first = np.argmax(stays, axis=1) + 1
    return np.where(stays.any(axis=1), first, 0)


def crossing(grid: np.ndarray, diff: np.ndarray) -> float | None:
    """Smallest utilization from which ``diff`` (owning − renting) stays ≤ 0, interpolated; None if never."""
    ok = diff <= 1e-9
    stays = np.flip(np.logical_and.accumulate(np.flip(ok)))
    if not stays.any():
        return None
    i = int(np.argmax(stays))
    if i == 0:
        return float(grid[0])
    d0, d1 = diff[i - 1], diff[i]
    frac = d0 / (d0 - d1) if d0 != d1 else 1.0
    return float(grid[i - 1] + frac * (grid[i] - grid[i - 1]))


# --------------------------------------------------------------------------------------------------
# The hybrid's base
# --------------------------------------------------------------------------------------------------

def _scalar(x) -> float:
    return float(np.asarray(x, float).ravel()[0])


def _base_range(P: Params, base: str, peak: float) -> int:
    """The largest base worth pricing: enough cards for the peak month with headroom, never more than
    :data:`~gpucost.specs.MAX_GPUS` (the most cards any input takes; a demand beyond it — a year's growth
    compounded over ten years, a serving job at a near-zero speed — is priced with the burst covering the
    rest, instead of an array of a billion candidate bases)."""
    per_gpu = H * _scalar(P.owned.max_utilization if base in OWNED_BASE_OPTION else P.cloud.relative_speed)
    ratio = peak / per_gpu if per_gpu > 0 else math.inf
    if not ratio <= MAX_GPUS:  # NaN and inf included
        return MAX_GPUS
    kmax = int(math.ceil(ratio - 1e-9))
    k_hr = int(math.ceil(kmax * (1 + _scalar(P.hybrid.headroom_fraction)))) + 1
    return min(max(kmax, int(_scalar(P.hybrid.configured_base_gpus)), k_hr), MAX_GPUS)


def _candidates(available: set[str], want_base: str, want_burst: str) -> tuple[list[str], list[str]]:
    bases = [b for b in HYBRID_BASES if OWNED_BASE_OPTION.get(b, b) in available]
    bases = [b for b in bases if want_base in ("auto", b)]
    bursts = [b for b in BURST_KINDS if b in available and want_burst in ("auto", b)]
    return bases, bursts


def plan_hybrid(P: Params, D: np.ndarray, months: int, available: set[str], want_base: str = "auto",
                want_burst: str = "auto") -> HybridPlan | None:
    """The base (owned or reserved), burst kind and base size with the lowest total cost."""
    bases, bursts = _candidates(available, want_base, want_burst)
    best = None
    for base in bases:
        ks = np.arange(_base_range(P, base, float(D.max())) + 1, dtype=float)[:, None]
        Dk = np.broadcast_to(D, (len(ks), months))
        for burst in bursts:
            totals = hybrid_cost(P, Dk, months, base, burst, ks)[0][:, -1]
            if not np.isfinite(totals).any():
                continue
            i = int(np.nanargmin(np.where(np.isfinite(totals), totals, np.inf)))
            if best is None or totals[i] < best[0] - 1e-9:
                best = (float(totals[i]), base, burst, i, totals)
    if best is None:
        return None
    total, base, burst, k, totals = best
    headroom = _scalar(P.hybrid.headroom_fraction)
    k_h = min(int(math.ceil(k * (1 + headroom) - 1e-9)) if k > 0 else 0, len(totals) - 1)
    k_c = min(int(_scalar(P.hybrid.configured_base_gpus)), len(totals) - 1)
    return HybridPlan(base=base, burst=burst, base_gpus=k, total_cost=total, headroom=headroom, headroom_gpus=k_h,
                      headroom_cost=float(totals[k_h] - total), configured_gpus=k_c,
                      configured_cost=float(totals[k_c]), curve=tuple((i, float(t)) for i, t in enumerate(totals)))


__all__ = ["OPTION_KIND", "OPTION_IDS", "KINDS", "OWNED_OPTIONS", "RENTED_OPTIONS", "RESERVED_TERM_MONTHS",
           "HybridPlan", "annuity_payment", "extra_hours", "demand", "all_options", "break_even_month", "crossing",
           "plan_hybrid", "owned_cost", "lease_cost", "reserved_cost", "spot_cost", "burst_cost"]
