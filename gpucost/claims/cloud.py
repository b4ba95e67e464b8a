"""Claims about renting and running: spot and reserved discounts, time-slicing, reclaiming idle GPUs, and
the article's scenarios (a start-up's first year, a mid-size company's spot + reserved mix, a hybrid)."""

from __future__ import annotations

import math
import statistics

from gpucost.catalog import Catalog, derived
from gpucost.claims.core import (
    T,
    Text,
    at_least,
    compare,
    first_source,
    gpu_source,
    in_range,
    result,
    unsupported,
)
from gpucost.claims.core import (
    gpu as rec,
)
from gpucost.units import HOURS_PER_MONTH, HOURS_PER_YEAR


def _offers(cat: Catalog, gpu: str, provider: str, col: str):
    """The offers with an on-demand and a ``col`` price in the user's market. These claims are ratios of one
    offer's own prices (no money shown), so the market is the one chosen, else the global one."""
    from gpucost.pricing import offer_rows

    o = offer_rows(cat, "USD")
    o = o[o["Price"].notna() & o[col].notna()]
    if gpu:
        o = o[o["gpu_id"] == gpu]
    if provider:
        o = o[o["provider"].str.lower() == provider.lower()]
    return o


def load_scenario(name: str):
    """:func:`gpucost.tco.load_scenario`, parsed once per scenario file (YAML parsing is the slow part)."""
    from gpucost import tco

    dirs = [d for d in (tco.user_scenarios_dir(), tco.bundled_scenarios_dir()) if d is not None]
    stamps = tuple((d / f"{name}{ext}").stat().st_mtime_ns if (d / f"{name}{ext}").is_file() else 0
                   for d in dirs for ext in (".yaml", ".yml"))
    key = f"scenario:{name}:{':'.join(map(str, dirs))}:{stamps}"
    return derived((), key, lambda _t: tco.load_scenario(name))


def scenario_value(name: str, key: str):
    return load_scenario(name).values[key]


# --------------------------------------------------------------------------------------------------
# Spot and 1-year reserved against on-demand
# --------------------------------------------------------------------------------------------------

def spot(cat: Catalog, gpu: str, provider: str, claimed_low_pct: float, claimed_high_pct: float,
         interruption_bucket: str, checkpoint_minutes: float, restart_minutes: float, gpus_per_job: int) -> dict:
    from gpucost.spot import spot_bucket, spot_factor

    o = _offers(cat, gpu, provider, "SpotPrice")
    if o.empty:
        return unsupported(T("claim_spot_discount_c_none"), {"offers": 0})
    disc = ((1 - o["SpotPrice"] / o["Price"]) * 100).to_numpy()
    med = float(statistics.median(disc))
    b = spot_bucket(cat, interruption_bucket)
    phi, tau = (float(x) for x in spot_factor(b.rate_per_hour, checkpoint_minutes / 60, restart_minutes / 60,
                                               gpus_per_job))
    effective = (1 - (1 - med / 100) * phi) * 100 if math.isfinite(phi) else -math.inf
    verdict = in_range(med, claimed_low_pct, claimed_high_pct)
    inside = float(((disc >= claimed_low_pct) & (disc <= claimed_high_pct)).mean() * 100)
    computed = {"offers": len(disc), "discount_median_pct": med, "discount_min_pct": float(disc.min()),
                "discount_max_pct": float(disc.max()), "offers_in_claimed_range_pct": inside,
                "interruptions_per_month": b.per_month, "interruption_rate_per_hour": b.rate_per_hour,
                "checkpoint_interval_hours": tau, "extra_hours_pct": (phi - 1) * 100,
                "effective_discount_pct": effective}
    cond = T(f"claim_spot_discount_c_{'in' if verdict == 'holds' else 'out'}",
             where=(f"{provider} " if provider else "") + (f"{gpu} " if gpu else ""), med=med,
             band=f"{claimed_low_pct:g}–{claimed_high_pct:g} %", inside=inside, n=len(disc),
             p=b.per_month * 100, ckpt=checkpoint_minutes, restart=restart_minutes, extra=(phi - 1) * 100,
             effective=effective)
    order = disc.argsort()
    labels = (o["provider"] + " " + o["InstanceType"]).to_numpy()
    chart = {"kind": "bar", "x": [str(labels[i]) for i in order], "y": [float(disc[i]) for i in order],
             "band": [claimed_low_pct, claimed_high_pct], "y_title": T("claims_y_spot_below")}
    srcs = sorted({first_source(s) for s in o["source"]}) + [
        f"tco_defaults.csv spot_interruption_per_month {interruption_bucket}: {b.source} ({b.as_of})"]
    return result(computed, verdict, cond, chart, srcs)


def reserved(cat: Catalog, gpu: str, provider: str, utilization_pct: float, claimed_pct: float,
             tolerance_pp: float) -> dict:
    o = _offers(cat, gpu, provider, "ReservedPrice1y")
    if o.empty:
        return unsupported(T("claim_reserved_1y_saving_c_none"), {"offers": 0})
    ratio = (o["ReservedPrice1y"] / o["Price"]).to_numpy()
    med_ratio = float(statistics.median(ratio))
    list_saving = (1 - med_ratio) * 100
    # a reservation pays every hour, on-demand only the used ones, so it wins above utilization =
    # reserved / on-demand (gpucost.tco's reserved_break_even_utilization)
    break_even = med_ratio * 100
    u = utilization_pct / 100
    effective = (1 - med_ratio / u) * 100 if u > 0 else -math.inf
    verdict = compare(effective, claimed_pct, tolerance_pp)
    computed = {"offers": len(ratio), "list_saving_median_pct": list_saving,
                "list_saving_min_pct": float((1 - ratio.max()) * 100),
                "list_saving_max_pct": float((1 - ratio.min()) * 100), "break_even_utilization_pct": break_even,
                "utilization_pct": utilization_pct, "effective_saving_pct": effective, "claimed_pct": claimed_pct}
    cond = T("claim_reserved_1y_saving_c", saving=list_saving, n=len(ratio), effective=effective,
             u=utilization_pct, be=break_even)
    grid = list(range(int(max(5, min(utilization_pct, 40) // 5 * 5)), 101, 5))
    chart = {"kind": "line", "x": grid, "y": [(1 - med_ratio / (g / 100)) * 100 for g in grid], "ref": claimed_pct,
             "ref_label": f"{claimed_pct:g} %", "marker": [utilization_pct, effective],
             "x_title": T("claims_x_utilization"), "y_title": T("claims_y_saving_vs_od")}
    return result(computed, verdict, cond, chart, sorted({first_source(s) for s in o["source"]}))


# --------------------------------------------------------------------------------------------------
# Time-slicing: one A100 as 8 logical GPUs
# --------------------------------------------------------------------------------------------------

def _gain_ranges(replicas: int, mem_cap: int, claimed_gain_pct: float, tol: float) -> list[tuple[float, float]]:
    """Identical workloads: m = min(floor(100 / u), floor(vram / mem)) per card, ceil(R / m) cards, so the
    gain R / ceil(R / m) − 1 is constant for u in (100 / (m + 1), 100 / m]: the u ranges that meet the claim."""
    ranges: list[tuple[float, float]] = []
    for m in range(1, int(replicas) + 1):
        g = (replicas / math.ceil(replicas / min(m, max(mem_cap, 1))) - 1) * 100
        if abs(g - claimed_gain_pct) <= tol + 1e-9:
            lo_u, hi_u = (0.0 if m == replicas else 100 / (m + 1)), 100 / m
            if ranges and abs(ranges[-1][0] - hi_u) < 1e-9:
                ranges[-1] = (lo_u, ranges[-1][1])
            else:
                ranges.append((lo_u, hi_u))
    return ranges


def time_slicing(cat: Catalog, gpu: str, replicas: int, workload_mem_gib: float, workload_util_pct: float,
                 claimed_gain_pct: float, tolerance_pct: float) -> dict:
    from gpucost import plan

    g = rec(cat, gpu)
    mem = workload_mem_gib if workload_mem_gib > 0 else g.vram_gib / replicas
    sp = plan.plan_share([plan.Workload(mem, workload_util_pct, False, f"w{i + 1}") for i in range(int(replicas))],
                         gpu, "time-slicing", cat)
    logical = plan.device_plugin_config(int(replicas), "time-slicing")["sharing"]["timeSlicing"]["resources"][0][
        "replicas"]
    gain = (sp.utilization_shared_pct / sp.utilization_without_sharing_pct - 1) * 100
    tol = claimed_gain_pct * tolerance_pct / 100
    ranges = _gain_ranges(replicas, int(g.vram_gib // mem) if mem > 0 else int(replicas), claimed_gain_pct, tol)
    computed = {"logical_gpus": logical, "memory_per_logical_gpu_gib": g.vram_gib / replicas,
                "cards_needed": sp.cards_needed, "cards_without_sharing": sp.cards_without_sharing,
                "utilization_alone_pct": sp.utilization_without_sharing_pct,
                "utilization_shared_pct": sp.utilization_shared_pct, "utilization_gain_pct": gain,
                "claimed_gain_pct": claimed_gain_pct, "all_on_one_card": sp.cards_needed == 1,
                "workload_util_range_for_claim_pct": [list(r) for r in ranges]}
    rng = ", ".join(f"{a:.1f}–{b:.1f} %" for a, b in sorted(ranges))
    cond = T("claim_time_slicing_8x_c", logical=logical, name=g.name, r=replicas, u=workload_util_pct, mem=mem,
             cards=T("claims_on_one_card") if sp.cards_needed == 1 else T("claims_on_n_cards", n=sp.cards_needed),
             alone=sp.utilization_without_sharing_pct, shared=sp.utilization_shared_pct, gain=gain,
             tail=T("claim_time_slicing_8x_needs", claim=claimed_gain_pct, rng=rng) if ranges
             else T("claim_time_slicing_8x_never", claim=claimed_gain_pct))
    chart = {"kind": "bar", "x": [T("claims_x_alone"), T("claims_x_time_sliced")],
             "y": [sp.utilization_without_sharing_pct, sp.utilization_shared_pct], "y_title": T("claims_y_avg_util")}
    return result(computed, compare(gain, claimed_gain_pct, tol), cond, chart,
                  [gpu_source(cat, gpu), plan.DEVICE_PLUGIN_DOC])


# --------------------------------------------------------------------------------------------------
# Reclaiming idle GPUs
# --------------------------------------------------------------------------------------------------

#: sampling step of the simulated utilization trace [s] (NVML/DCGM exporters scrape at 15–60 s), the
#: number of job + idle cycles simulated, and the most samples (a longer cycle is sampled more coarsely)
IDLE_SAMPLE_S = 60.0
IDLE_CYCLES = 3
IDLE_MAX_SAMPLES = 1500


def _busy_trace(busy_pct: float, job_minutes: float):
    """Samples of whole job + idle cycles (busy at 100 %, idle at 0 %) and the sampling step [s]."""
    from gpucost import monitor

    u = busy_pct / 100
    cycle_s = job_minutes * 60 / u
    step = max(IDLE_SAMPLE_S, IDLE_CYCLES * cycle_s / IDLE_MAX_SAMPLES)
    n = int(math.ceil(IDLE_CYCLES * cycle_s / step - 1e-9))
    job_s = job_minutes * 60
    return [monitor.Sample(t_s=k * step, index=0, utilization_gpu_pct=100.0 if (k * step) % cycle_s < job_s else 0.0)
            for k in range(n)], step


def idle(cat: Catalog, gpu: str, gpus: int, busy_pct: float, job_minutes: float, idle_util_pct: float,
         idle_for_minutes: float, currency: str, min_recovered_pct: float) -> dict:
    from gpucost import monitor
    from gpucost.errors import GpucostError

    u = busy_pct / 100
    if not (0 < u < 1):
        raise GpucostError(f"the busy share must be between 0 and 100 % (exclusive), not {busy_pct:g}")
    samples, step = _busy_trace(busy_pct, job_minutes)
    policy = monitor.Policy(idle_util_pct=idle_util_pct, idle_for_s=idle_for_minutes * 60)
    value = monitor.card_value(cat, gpu, currency)
    rep = monitor.summarize(samples, step, policy, currency=currency, values={0: value})
    idle_v = rep.verdict("idle", 0)
    covered = rep.gpus[0].covered_s
    reclaim_s = sum(max(0.0, e.covered_s - policy.idle_for_s) for e in idle_v.episodes)
    idle_s = rep.gpus[0].idle_s or 0.0
    hourly = value.hourly_value if value.hourly_value is not None else math.nan
    idle_month = idle_s / covered * HOURS_PER_MONTH * hourly * gpus
    saved_month = reclaim_s / covered * HOURS_PER_MONTH * hourly * gpus
    recovered = reclaim_s / idle_s * 100 if idle_s > 0 else 0.0
    verdict = "unsupported" if not math.isfinite(hourly) else at_least(recovered, min_recovered_pct)
    gap_min = job_minutes * (1 - u) / u
    computed = {"currency": currency, "hourly_value_money_per_hour": hourly, "hourly_basis": value.hourly_basis,
                "idle_gap_minutes": gap_min, "idle_share_pct": idle_s / covered * 100,
                "idle_cost_money_per_month": idle_month, "saved_money_per_month": saved_month,
                "recovered_pct": recovered, "policy_fired": idle_v.status == "fired", "samples": len(samples)}
    name = gpu_record_name(cat, gpu)
    cond = T("claim_idle_reclaim_c_unsupported", name=name) if verdict == "unsupported" else T(
        "claim_idle_reclaim_c", job=job_minutes, busy=busy_pct, gap=gap_min, after=idle_for_minutes,
        recovered=recovered, saved=saved_month, idle=idle_month, cur=currency, n=gpus, name=name,
        need=idle_for_minutes * u / (1 - u))
    chart = {"kind": "bar", "x": [T("claims_x_idle_cost"), T("claims_x_reclaimed")], "y": [idle_month, saved_month],
             "y_title": T("claims_y_per_month", cur=currency)}
    return result(computed, verdict, cond, chart,
                  [f"hourly value: {value.cloud_offer or 'new price'} ({value.cloud_source or value.price_new_as_of})"])


def gpu_record_name(cat: Catalog, gid: str) -> str:
    return rec(cat, gid).name


# --------------------------------------------------------------------------------------------------
# Scenarios: start-up first year, mid-size spot + reserved, hybrid
# --------------------------------------------------------------------------------------------------

def startup(cat: Catalog, scenario: str, region: str, owned_count: int, condition: str, a100_hours: float,
            a100_pricing: str, currency: str, claimed_cny: float, tolerance_pct: float) -> dict:
    from gpucost import tco

    sc = load_scenario(scenario).updated({"currency": "CNY", "region": region, "owned.count": int(owned_count)})
    inputs = tco.resolve(sc, cat, currency=currency, months=12)
    res = tco.evaluate(inputs, months=12)
    oid = f"buy-{condition}"
    if oid not in {o.id for o in res.options} or a100_pricing not in inputs.offers:
        missing = oid if oid not in {o.id for o in res.options} else a100_pricing
        return unsupported(T("claims_tco_cannot_price", what=missing), {"currency": currency})
    d = res.option(oid).details
    owned_cap = d["capex"]
    owned_run = d["energy"] + d["colocation"] + d["maintenance"] + d["staff"]
    price = inputs.offers[a100_pricing].price * (float(res.spot.get("factor", 1.0)) if a100_pricing == "spot" else 1.0)
    a100 = a100_hours * price
    total = owned_cap + owned_run + a100
    claimed = float(cat.convert(claimed_cny, "CNY", currency))
    verdict = compare(total, claimed, claimed * tolerance_pct / 100, higher_is_better=False)
    hours_ok = max(0.0, (claimed * (1 + tolerance_pct / 100) - owned_cap - owned_run) / price)
    computed = {"currency": currency, "owned_capex_money": owned_cap, "owned_running_money": owned_run,
                "a100_price_money_per_hour": price, "a100_money": a100, "total_money": total,
                "claimed_money": claimed, "total_over_claim_x": total / claimed,
                "a100_hours_within_claim": hours_ok, "a100_share_of_year_within_claim_pct": hours_ok / HOURS_PER_YEAR * 100}
    gname = inputs.owned_name
    cond = T(f"claim_startup_first_year_c_{'holds' if verdict == 'holds' else 'no'}", n=owned_count, gpu=gname,
             cap=owned_cap, run=owned_run, hours=a100_hours, a100=a100, total=total, cur=currency, price=price,
             pricing=a100_pricing, ok=hours_ok, share=hours_ok / HOURS_PER_YEAR * 100)
    chart = {"kind": "stack", "x": [T("claims_x_first_year")],
             "series": [{"name": T("claims_s_cards_hosts", n=owned_count, gpu=gname), "y": [owned_cap]},
                        {"name": T("claims_s_running"), "y": [owned_run]},
                        {"name": T("claims_s_cloud_a100"), "y": [a100]}],
             "ref": claimed, "ref_label": f"{claimed:,.0f}", "y_title": currency}
    srcs = [f"{p.key}: {p.source}" for p in inputs.provenance
            if p.key in ("owned.price_new", "owned.price_used", "owned.host_cost_per_gpu", "owned.electricity_per_kwh")]
    srcs.append(f"A100 {a100_pricing}: {inputs.offers[a100_pricing].label} — "
                f"{first_source(inputs.offers[a100_pricing].source)}")
    return result(computed, verdict, cond, chart, srcs)


def midsize(cat: Catalog, scenario: str, provider: str, reserved_gpus: int, months: int, currency: str,
            claimed_pct: float, tolerance_pp: float) -> dict:
    from gpucost import tco

    sc = load_scenario(scenario).updated({
        "hybrid.base": "reserved-1y", "hybrid.burst": "spot", "hybrid.configured_base": int(reserved_gpus),
        "cloud.providers": (provider,) if provider else None})
    res = tco.evaluate(tco.resolve(sc, cat, currency=currency), months=int(months))
    ids = {o.id: o.total_cost for o in res.options}
    need = [k for k in ("on-demand", "spot", "reserved-1y") if k not in ids]
    if need or res.hybrid is None:
        return unsupported(T("claims_tco_cannot_price", what=", ".join(need) or "hybrid"), {"currency": currency})
    od, h = ids["on-demand"], res.hybrid
    cut = (1 - h.configured_cost / od) * 100
    best_cut = (1 - h.total_cost / od) * 100
    computed = {"currency": currency, "on_demand_money": od, "mix_money": h.configured_cost, "mix_cut_pct": cut,
                "reserved_gpus": h.configured_gpus, "best_reserved_gpus": h.base_gpus, "best_mix_cut_pct": best_cut,
                "spot_only_cut_pct": (1 - ids["spot"] / od) * 100,
                "reserved_only_cut_pct": (1 - ids["reserved-1y"] / od) * 100, "months": int(months)}
    cond = T("claim_midsize_spot_reserved_c", k=h.configured_gpus, where=provider or T("claims_all_providers"),
             m=months, cut=cut, best=h.base_gpus, best_cut=best_cut, spot=computed["spot_only_cut_pct"],
             res=computed["reserved_only_cut_pct"])
    chart = {"kind": "line", "x": [k for k, _ in h.curve], "y": [(1 - t / od) * 100 for _, t in h.curve],
             "ref": claimed_pct, "ref_label": f"{claimed_pct:g} %", "marker": [h.configured_gpus, cut],
             "x_title": T("claims_x_reserved_gpus"), "y_title": T("claims_y_bill_below_od")}
    srcs = [f"scenario {scenario}"] + [f"{o.id}: {o.offer} — {first_source(o.source)}" for o in res.options
                                       if o.id in ("on-demand", "spot", "reserved-1y")]
    return result(computed, compare(cut, claimed_pct, tolerance_pp), cond, chart, srcs)


def _option_name(o) -> Text:
    """A TCO option's name, in each language."""
    return T(f"tco_name_{o.id.replace('-', '_')}", **o.name_params)


def hybrid(cat: Catalog, scenario: str, baseline: str, horizon_months: int, currency: str, claimed_pct: float) -> dict:
    from gpucost import tco

    sc = load_scenario(scenario)
    m = int(horizon_months) if horizon_months else int(sc.values["horizon_months"])
    res = tco.evaluate(tco.resolve(sc, cat, currency=currency), months=m)
    ids = {o.id: o for o in res.options}
    if "hybrid" not in ids or baseline not in ids:
        return unsupported(T("claims_tco_cannot_price", what="hybrid" if "hybrid" not in ids else baseline),
                           {"currency": currency})
    base, hyb = ids[baseline].total_cost, ids["hybrid"].total_cost
    cut = (1 - hyb / base) * 100
    h = res.hybrid
    computed = {"currency": currency, "baseline_money": base, "hybrid_money": hyb, "cut_pct": cut,
                "hybrid_base": h.base if h else "", "hybrid_burst": h.burst if h else "",
                "hybrid_base_gpus": h.base_gpus if h else 0, "months": m}
    cond = T("claim_hybrid_cuts_60pct_c", m=m, name=_option_name(ids["hybrid"]), hyb=hyb, cur=currency, cut=cut,
             base_name=_option_name(ids[baseline]), base=base)
    chart = {"kind": "bar", "x": [T(f"opt_{o.id}") for o in res.options], "y": [o.total_cost for o in res.options],
             "y_title": T("claims_y_over_months", cur=currency, m=m)}
    return result(computed, at_least(cut, claimed_pct), cond, chart,
                  [f"scenario {scenario}", ids["hybrid"].source or "", ids[baseline].source or ""])
