"""gpucost showback: who used the shared GPUs over a period and what each user, project or pod owes, with
the idle time spread over them or on its own line; from a CSV export (generic or Slurm sacct), a
Prometheus server with dcgm-exporter metrics, or this machine's NVML per-process samples."""

from __future__ import annotations

import argparse

from gpucost.commands import add_market, add_spec, bounded, catalog_for

NAME = "showback"
HELP = ("who used the shared GPUs and what each user, project or pod owes over a period (idle time "
        "spread or separate); from a CSV/sacct export, Prometheus (dcgm-exporter) or the live probe")

SOURCES = {"probe": 0, "prometheus": 1, "csv": 1}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--from", dest="source", nargs="+", required=True, metavar="SOURCE",
                   help="where the usage comes from: 'probe' (this machine's GPUs, sampled for --watch "
                        "seconds), 'prometheus URL' (dcgm-exporter metrics) or 'csv FILE' (a usage CSV or a "
                        "Slurm sacct -P export)")
    p.add_argument("--period", default=None, metavar="PERIOD",
                   help="YYYY-MM (a calendar month, UTC) or START..END (ISO dates, END's day included, or "
                        "date-times); default: the span of the usage (needed for prometheus)")
    add_spec(p, "--by", "showback_by")
    add_spec(p, "--idle", "showback_idle")
    add_spec(p, "--rule", "showback_rule")
    p.add_argument("--currency", default="USD", metavar="C", help="currency of the bill (USD)")
    p.add_argument("--gpu", default=None, metavar="ID",
                   help="the cards' model (catalog id or name) when the source does not say (csv, sacct)")
    cost = p.add_mutually_exclusive_group()
    cost.add_argument("--rented", action="store_true",
                      help="the cards are rented: each costs its cheapest cloud offer per GPU-hour in the catalog")
    # a mutually exclusive group takes the same add_argument as a parser
    add_spec(cost, "--hourly", "hourly_price", metavar="PRICE",  # type: ignore[arg-type]
             help="what one card costs per hour in --currency (your own price, owned or rented)")
    add_spec(p, "--amortize-years", "amortization_years", metavar="Y",
             help="owned cards: years over which the price is spread (every hour of them counted)")
    add_spec(p, "--kwh-price", "electricity_per_kwh", metavar="PRICE",
             help="owned cards: electricity price per kWh in --currency (default: the market's tariff)")
    add_market(p)
    p.add_argument("--gpus-per-node", type=bounded(1, 64, "GPUs", whole=True), default=None, metavar="N",
                   help="sacct exports: how many GPUs each node has (a job's GPUs are that share of its node)")
    p.add_argument("--interval", type=bounded(0, 86400, "s", lo_open=True), default=None, metavar="S",
                   help="seconds between samples (probe: 5; csv without duration_s: the median spacing)")
    p.add_argument("--watch", type=bounded(0, 86400, "s", lo_open=True), default=60.0, metavar="SECONDS",
                   help="probe: sample this long (60)")
    p.add_argument("--demo", action="store_true", help="probe: simulated GPUs and users in simulated time")
    p.add_argument("--step", type=bounded(1, 86400, "s", whole=True), default=60, metavar="S",
                   help="prometheus: seconds between the points asked for (60)")
    p.add_argument("--metric", default="auto", choices=("auto", "engine", "util"),
                   help="prometheus: SM share from DCGM_FI_PROF_GR_ENGINE_ACTIVE (engine), DCGM_FI_DEV_GPU_UTIL "
                        "(util) or the first the server has (auto)")
    p.add_argument("--budget", default=None, metavar="FILE",
                   help="monthly budgets per user or project (YAML or CSV): what each has spent of its budget "
                        "and, at the current rate, will have spent by the end of the period")
    p.add_argument("--csv", action="store_true", help="print the bill as CSV (a spreadsheet, an invoice)")
    p.add_argument("--json", action="store_true", help="print JSON")


def _source(args: argparse.Namespace) -> tuple[str, str | None]:
    from gpucost.errors import GpucostError, UnknownNameError

    kind, *rest = args.source
    if kind not in SOURCES:
        raise UnknownNameError("--from source", kind, SOURCES, hint="probe, prometheus URL or csv FILE")
    if len(rest) != SOURCES[kind]:
        want = "no argument" if SOURCES[kind] == 0 else ("a URL" if kind == "prometheus" else "a FILE")
        raise GpucostError(f"--from {kind} takes {want}, not {' '.join(rest) or 'nothing'}")
    return kind, (rest[0] if rest else None)


def _read(kind: str, where: str | None, args: argparse.Namespace, period):
    from gpucost import usage_sources
    from gpucost.errors import GpucostError

    if kind == "csv":
        return usage_sources.read_csv(str(where), interval_s=args.interval, gpus_per_node=args.gpus_per_node)
    if kind == "prometheus":
        if period is None:
            raise GpucostError("--from prometheus needs --period (YYYY-MM or START..END)")
        return usage_sources.read_prometheus(str(where), period, step_s=args.step, metric=args.metric)
    return _read_probe(args)


def _read_probe(args: argparse.Namespace):
    import time

    from gpucost import probe, usage_sources
    from gpucost.errors import GpucostError

    interval = args.interval or 5.0
    if args.demo:
        from gpucost.fake_nvml import SimClock

        sim = SimClock()
        probe.set_nvml(probe.fake("demo", clock=sim))
        try:
            return usage_sources.read_probe(args.watch, interval, sample_fn=probe.process_samples, clock=sim,
                                            sleep=sim.sleep)
        finally:
            probe.set_nvml(None)
    found = probe.probe()
    if not found.available:
        raise GpucostError(f"no NVIDIA GPU found: {found.reason}. {found.hint} (--demo shows simulated GPUs)")
    return usage_sources.read_probe(args.watch, interval, sample_fn=probe.process_samples, clock=time.monotonic,
                                    sleep=time.sleep)


def run(args: argparse.Namespace):
    from gpucost.economics import Ownership
    from gpucost.showback import allocate, bill_csv, card_rates, parse_period

    kind, where = _source(args)
    period = parse_period(args.period) if args.period else None
    cat = catalog_for(args)
    cat.fx_rate(args.currency)
    use = _read(kind, where, args, period)
    own = Ownership(years=args.amortize_years, electricity_per_kwh=args.kwh_price)
    rates = card_rates(cat, use.models, args.currency, gpu=args.gpu, rented=args.rented, hourly=args.hourly,
                       scale=use.scale, ownership=own)
    bill = allocate(use.frame, rates, period=period or use.period, by=args.by, idle=args.idle, rule=args.rule, catalog=cat)
    status = None
    if args.budget:
        from gpucost.spend_budgets import budget_status, read_budgets

        budgets = read_budgets(args.budget)
        status = budget_status(bill, budgets, rate=float(cat.convert(1.0, budgets.currency, bill.currency)))
    if args.csv:
        return bill_csv(bill)
    out = bill.to_dict()
    out["source"] = use.source
    out["notes"] = [*use.notes, *bill.notes]
    out["budgets"] = None if status is None else [s.to_dict() for s in status]
    return out


def render_text(r) -> str:
    if isinstance(r, str):
        return r.rstrip("\n")
    cur = r["currency"]
    p = r["period"]
    lines = [f"showback {p['start'][:16]} .. {p['end'][:16]} UTC ({p['hours']:g} h), from {r['source']}, "
             f"by {r['by']}, idle {r['idle']}, rule {r['rule']}"]
    width = max([len(ln["name"]) for ln in r["lines"]] + [8])
    for ln in r["lines"]:
        lines.append(f"  {ln['name']:<{width}}  {ln['cost']:>12,.2f} {cur}  {100 * ln['share']:6.2f} %  "
                     f"{ln['gpu_hours']:10.2f} GPU-h")
    lines.append(f"  {'total':<{width}}  {r['total']:>12,.2f} {cur}")
    lines.append(f"  idle time: {100 * r['idle_share']:.1f} % of the card-hours, worth {r['idle_cost']:,.2f} {cur}")
    for c in r["cards"]:
        n = f"{c['gpus']} × " if c["gpus"] != 1 else ""
        lines.append(f"  card {c['card']}: {n}{c['gpu_id'] or '?'} {c['basis']} {c['per_hour']:.4f} {cur}/h × "
                     f"{c['hours']:g} h = {c['cost']:,.2f} {cur}")
    for b in r.get("budgets") or []:
        flag = "  OVER BUDGET" if b["over"] else ("  will pass it at the current rate" if b["will_pass"] else "")
        lines.append(f"  budget {b['name']}: spent {b['spent']:,.2f} of {b['budget']:,.2f} {cur}, "
                     f"{b['projected']:,.2f} by the end of the period{flag}")
    lines += [f"  note: {n}" for n in r["notes"]]
    return "\n".join(lines)
