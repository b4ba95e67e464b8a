"""Pricing every option and explaining it: :func:`evaluate` → :class:`TcoResult`.

Sentences (option names, reasons, why an option cannot be priced, the headline) are locale templates
(``gpucost/locales/<lang>/scenario_tco.json``); a result keeps each one's key and parameters, so a page
renders them in its language and the CLI renders them in English.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType

import numpy as np

from gpucost.errors import GpucostError, UnknownNameError
from gpucost.fmt import fmt_hours, fmt_money, fmt_pct
from gpucost.i18n import Message, localize, t
from gpucost.serialize import Record, jsonable
from gpucost.spot import deadline_miss_probability
from gpucost.tco.core import (
    OPTION_IDS,
    OPTION_KIND,
    OWNED_OPTIONS,
    RENTED_OPTIONS,
    RESERVED_TERM_MONTHS,
    HybridPlan,
    all_options,
    break_even_month,
    crossing,
    demand,
    extra_hours,
    plan_hybrid,
)
from gpucost.tco.inputs import Inputs, Params, Provenance, vectorized
from gpucost.units import HOURS_PER_MONTH


def _key(oid: str) -> str:
    return oid.replace("-", "_")


def option_name(oid: str, params: Mapping[str, str], lang: str = "en") -> str:
    return t(f"tco_name_{_key(oid)}", lang, **{k: localize(v, lang) for k, v in params.items()})


def option_reason(oid: str, params: Mapping[str, str], lang: str = "en") -> str:
    return t(f"tco_reason_{_key(oid)}", lang, **{k: localize(v, lang) for k, v in params.items()})


def unavailable_text(key: str, params: Mapping[str, str], lang: str = "en") -> str:
    return t(f"tco_{key}", lang, **params)


@dataclass(frozen=True)
class OptionResult(Record):
    id: str
    name: str
    kind: str
    total_cost: float
    cost_per_useful_gpu_hour: float
    break_even_month: int | None
    cumulative_cost: tuple[float, ...]
    reason: str
    reason_params: Mapping[str, str]
    name_params: Mapping[str, str]
    offer: str
    source: str
    details: Mapping[str, float]
    cost_per_run: Mapping[str, float]
    cost_per_1m_tokens: Mapping[str, float]

    def to_dict(self) -> dict:
        return jsonable({k: getattr(self, k) for k in (
            "id", "name", "kind", "total_cost", "cost_per_useful_gpu_hour", "break_even_month", "reason", "offer",
            "source", "details", "cost_per_run", "cost_per_1m_tokens", "cumulative_cost")})


@dataclass(frozen=True)
class BreakEven(Record):
    """Owning option against a renting option: first month from which owning stays cheaper, and the
    steady utilization of the owned cards above which owning is cheaper over the horizon."""

    owned: str
    rented: str
    month: int | None
    utilization: float | None


@dataclass(frozen=True)
class TcoResult(Record):
    scenario: str
    title: str
    currency: str
    horizon_months: int
    options: tuple[OptionResult, ...]
    unavailable: tuple[tuple[str, str, str], ...]  # id, kind, reason
    unavailable_keys: tuple[tuple[str, str, Mapping[str, str]], ...]  # id, template key, params
    cheapest: str
    cheapest_sentence: str
    demand_gpu_hours: tuple[float, ...]
    useful_gpu_hours: float
    owned_utilization: float
    break_even: tuple[BreakEven, ...]
    reserved_break_even_utilization: Mapping[str, float]
    hybrid: HybridPlan | None
    spot: Mapping[str, float]
    warnings: tuple[str, ...]
    provenance: tuple[Provenance, ...]

    def option(self, oid: str) -> OptionResult:
        for o in self.options:
            if o.id == oid:
                return o
        raise UnknownNameError("option", oid, [o.id for o in self.options])

    @property
    def cheapest_option(self) -> OptionResult:
        return self.option(self.cheapest)

    def summary_dict(self) -> dict:
        """The CLI's stable JSON: scenario, currency, horizon_months, options, cheapest, reasons."""
        return jsonable({
            "scenario": self.scenario, "currency": self.currency, "horizon_months": self.horizon_months,
            "options": [{"name": o.name, "kind": o.kind, "id": o.id, "total_cost": o.total_cost,
                         "cost_per_useful_gpu_hour": o.cost_per_useful_gpu_hour,
                         "break_even_month": o.break_even_month} for o in self.options],
            "cheapest": self.cheapest_option.name, "cheapest_id": self.cheapest,
            "cheapest_kind": self.cheapest_option.kind,
            "reasons": {o.name: o.reason for o in self.options},
            "summary": self.cheapest_sentence,
            "unavailable": [{"id": i, "kind": k, "reason": r} for i, k, r in self.unavailable],
            "break_even": self.break_even, "hybrid": self.hybrid, "warnings": self.warnings,
        })

    def to_dict(self) -> dict:
        d = self.summary_dict()
        d.update(jsonable({"title": self.title, "options_detail": self.options,
                           "demand_gpu_hours": self.demand_gpu_hours, "useful_gpu_hours": self.useful_gpu_hours,
                           "owned_utilization": self.owned_utilization,
                           "reserved_break_even_utilization": self.reserved_break_even_utilization,
                           "spot": self.spot, "provenance": self.provenance}))
        return d


# --------------------------------------------------------------------------------------------------
# Sentences
# --------------------------------------------------------------------------------------------------

def _owned_params(inputs: Inputs, oid: str, d: Mapping[str, float], total: float, months: int) -> dict:
    p, cur = inputs.params, inputs.currency
    n = f"{float(p.owned.count):g}"
    if oid == "lease":
        return {"n": n, "gpu": inputs.owned_name, "payment": fmt_money(d["payment"], cur), "term": str(int(d["term"])),
                "rate": f"{100 * float(p.lease.annual_rate):.2f} %", "interest": fmt_money(d["interest"], cur)}
    price = p.owned.price_new if oid == "buy-new" else p.owned.price_used
    share = (d["energy"] + d["colocation"]) / total if total > 0 else math.nan
    return {"n": n, "gpu": inputs.owned_name, "price": fmt_money(float(price), cur),
            "host": fmt_money(float(p.owned.host_cost), cur), "util": fmt_pct(d["utilization"]),
            "energy_share": fmt_pct(share), "resale": fmt_money(d["resale"], cur), "months": str(months)}


def _cloud_params(inputs: Inputs, oid: str, d: Mapping[str, float], reserved_be, spot_info) -> dict:
    o, cur, gpu = inputs.offers[oid], inputs.currency, inputs.cloud_name
    if oid == "on-demand":
        return {"hours": f"{d['gpu_hours']:,.0f}", "gpu": gpu, "price": fmt_money(o.price, cur), "offer": o.label}
    if oid == "spot":
        dl = spot_info.get("deadline_miss_probability")
        return {"gpu": gpu, "price": fmt_money(o.price, cur), "offer": o.label,
                "interruptions": f"{d['interruptions_per_month']:.1f}", "interval": fmt_hours(d["interval_h"]),
                "overhead": fmt_pct(d["factor"] - 1), "deadline": fmt_pct(dl) if dl is not None else "—"}
    return {"k": f"{d['reserved_gpus_max']:.0f}", "gpu": gpu, "price": fmt_money(o.price, cur),
            "util": fmt_pct(d["utilization"]), "break_even": fmt_pct(reserved_be.get(oid, math.nan))}


def _hybrid_params(inputs: Inputs, plan: HybridPlan) -> tuple[dict, dict]:
    cur = inputs.currency
    base_name = Message(f"tco_base_{_key(plan.base)}", owned=inputs.owned_name, cloud=inputs.cloud_name)
    name = {"k": str(plan.base_gpus), "base": base_name, "burst": Message(f"tco_burst_{_key(plan.burst)}")}
    return {**name, "headroom": fmt_pct(plan.headroom), "headroom_cost": fmt_money(plan.headroom_cost, cur),
            "configured": str(plan.configured_gpus), "configured_cost": fmt_money(plan.configured_cost, cur)}, name


def reason_params(inputs: Inputs, oid: str, parts, total: float, months: int, plan: HybridPlan | None,
                  reserved_be, spot_info) -> tuple[dict, dict]:
    """(reason template parameters, name template parameters) of one option."""
    d = {k: (float(np.asarray(v).ravel()[0]) if np.size(v) else math.nan) for k, v in parts.items()}
    if oid in OWNED_OPTIONS:
        return _owned_params(inputs, oid, d, total, months), {"n": f"{float(inputs.params.owned.count):g}",
                                                              "gpu": inputs.owned_name}
    if oid == "hybrid":
        assert plan is not None
        return _hybrid_params(inputs, plan)
    return _cloud_params(inputs, oid, d, reserved_be, spot_info), {"gpu": inputs.cloud_name}


# --------------------------------------------------------------------------------------------------
# Evaluation
# --------------------------------------------------------------------------------------------------

def _drop_unpriceable(res: dict, unavailable: dict, cloud_name: str) -> None:
    for oid in list(res):
        if np.isfinite(res[oid][0][0, -1]):
            continue
        if oid in OWNED_OPTIONS:
            unavailable[oid] = ("unavail_overflow", {})
        elif oid == "spot":
            unavailable[oid] = ("unavail_never", {})
        else:
            unavailable[oid] = ("unavail_no_cloud", {"what": oid, "gpu": cloud_name, "field": "-"})
        del res[oid]


def _spot_info(P: Params, res: dict) -> dict[str, float]:
    if "spot" not in res:
        return {}
    parts, s = res["spot"][1], P.spot
    info = {"checkpoint_interval_h": float(parts["interval_h"][0]), "factor": float(parts["factor"][0]),
            "interruptions_per_month": float(parts["interruptions_per_month"][0]),
            "interruption_rate_per_hour": float(s.interruptions_per_hour)}
    if s.job_gpu_hours == s.job_gpu_hours and s.deadline_hours == s.deadline_hours:
        info["deadline_miss_probability"] = float(deadline_miss_probability(
            s.job_gpu_hours, s.deadline_hours, s.interruptions_per_hour, s.checkpoint_hours, s.restart_hours,
            s.gpus_per_job, P.cloud.relative_speed))
    return info


def _break_evens(P: Params, res: dict, months: int, skip: set[str], grid_points: int) -> list[BreakEven]:
    """Break-even month of every owned option against every rented one, and the break-even utilization:
    a steady load without bursts, jobs or growth on a grid over the owned cards' utilization."""
    grid = np.linspace(0.0, float(np.max(P.owned.max_utilization)), grid_points)
    Pg = vectorized(P, len(grid)).updated(demand={"base_utilization": grid[:, None],
                                                  "growth_per_year": np.zeros((len(grid), 1))})
    rg = all_options(Pg, demand(Pg, months, np.zeros(months)), months, None, skip=skip | {"hybrid"})
    totals = {k: v[0][:, -1] for k, v in rg.items()}
    out = []
    for own in (o for o in OWNED_OPTIONS if o in res):
        for rent in (r for r in RENTED_OPTIONS if r in res):
            bm = int(break_even_month(res[own][0], res[rent][0])[0])
            out.append(BreakEven(own, rent, bm or None, crossing(grid, totals[own] - totals[rent])))
    return out


def _option(inputs: Inputs, oid: str, cum, parts, useful: float, months: int, od_cum, plan, reserved_be,
            spot_info) -> OptionResult:
    total = float(cum[0, -1])
    cpu = total / useful if useful > 0 else math.nan
    bm = int(break_even_month(cum, od_cum)[0]) or None if od_cum is not None and oid != "on-demand" else None
    rp, npar = reason_params(inputs, oid, parts, total, months, plan, reserved_be, spot_info)
    offer = inputs.offers.get(plan.burst if oid == "hybrid" and plan is not None else oid)
    details = {k: (float(np.asarray(v).ravel()[0]) if np.size(v) else math.nan) for k, v in parts.items()}
    return OptionResult(
        id=oid, name=option_name(oid, npar), kind=OPTION_KIND[oid], total_cost=total,
        cost_per_useful_gpu_hour=cpu, break_even_month=bm, cumulative_cost=tuple(float(x) for x in cum[0]),
        reason=option_reason(oid, rp), reason_params=MappingProxyType(rp), name_params=MappingProxyType(npar),
        offer=offer.label if offer else "", source=offer.source if offer else "", details=MappingProxyType(details),
        cost_per_run=MappingProxyType({j.name: cpu * j.hours_per_unit for j in inputs.jobs if j.kind == "training"}),
        cost_per_1m_tokens=MappingProxyType({j.name: cpu * j.hours_per_unit for j in inputs.jobs
                                             if j.kind == "serving"}))


def evaluate(inputs: Inputs, *, months: int | None = None, break_even_grid: int = 101) -> TcoResult:
    """Price every option month by month; the cheapest with reasons; break-even months and utilizations."""
    M = int(months or inputs.horizon_months)
    cur, P = inputs.currency, vectorized(inputs.params, 1)
    D = demand(P, M, extra_hours(P, inputs.jobs, M))
    unavailable = dict(inputs.unavailable)
    avail = {o for o in OPTION_IDS if o not in unavailable and o != "hybrid"}
    v = inputs.scenario.values
    plan = plan_hybrid(P, D, M, avail, str(v["hybrid.base"]), str(v["hybrid.burst"]))
    if plan is None:
        unavailable.setdefault("hybrid", ("unavail_hybrid", {}))
    res = all_options(P, D, M, plan, skip=unavailable)
    _drop_unpriceable(res, unavailable, inputs.cloud_name)
    if not res:
        raise GpucostError("no option can be priced: the catalog has no prices for these cards")
    useful = float(D[0].sum())
    p = inputs.params
    spot_info = _spot_info(inputs.params, res)
    reserved_be = {rid: float(getattr(p.cloud, f"reserved_{rid[-2:]}_per_gpu_hour")) / float(p.cloud.on_demand_per_gpu_hour)
                   for rid in RESERVED_TERM_MONTHS if rid in res and p.cloud.on_demand_per_gpu_hour == p.cloud.on_demand_per_gpu_hour}
    od_cum = res["on-demand"][0] if "on-demand" in res else None
    options = [_option(inputs, oid, res[oid][0], res[oid][1], useful, M, od_cum, plan, reserved_be, spot_info)
               for oid in OPTION_IDS if oid in res]
    cheapest = min(options, key=lambda o: (o.total_cost, OPTION_IDS.index(o.id)))
    sentence = t("tco_cheapest", "en", months=M, name=cheapest.name, total=fmt_money(cheapest.total_cost, cur),
                 per_hour=fmt_money(cheapest.cost_per_useful_gpu_hour, cur))
    N = float(p.owned.count)
    sc = inputs.scenario
    return TcoResult(
        scenario=sc.name, title=sc.title.get("en", sc.name), currency=cur, horizon_months=M, options=tuple(options),
        unavailable=tuple((oid, OPTION_KIND[oid], unavailable_text(key, prm)) for oid, (key, prm) in unavailable.items()),
        unavailable_keys=tuple((oid, key, MappingProxyType(dict(prm))) for oid, (key, prm) in unavailable.items()),
        cheapest=cheapest.id, cheapest_sentence=sentence, demand_gpu_hours=tuple(float(x) for x in D[0]),
        useful_gpu_hours=useful,
        owned_utilization=float(np.minimum(D[0], N * HOURS_PER_MONTH * float(p.owned.max_utilization)).sum()
                                / (N * HOURS_PER_MONTH * M)),
        break_even=tuple(_break_evens(inputs.params, res, M, set(unavailable), break_even_grid)),
        reserved_break_even_utilization=MappingProxyType(reserved_be), hybrid=plan,
        spot=MappingProxyType(spot_info), warnings=inputs.warnings, provenance=inputs.provenance)


def relabel(result: TcoResult, lang: str) -> TcoResult:
    """The same result with its sentences in ``lang`` (numbers unchanged)."""
    opts = tuple(replace(o, name=option_name(o.id, o.name_params, lang), reason=option_reason(o.id, o.reason_params, lang))
                 for o in result.options)
    return replace(result, options=opts)


__all__ = ["OptionResult", "BreakEven", "TcoResult", "evaluate", "option_name", "option_reason", "unavailable_text",
           "relabel", "reason_params"]
