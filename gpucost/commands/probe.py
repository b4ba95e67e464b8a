"""gpucost probe: this machine's NVIDIA GPUs through NVML — what they are, what they are worth, how busy.

No GPU is an answer, not an error: ``available: false`` with the reason and a hint, exit 0.
"""

from __future__ import annotations

import argparse

from gpucost.commands import add_market, add_spec, catalog_for

NAME = "probe"
HELP = ("probe this machine's NVIDIA GPUs (NVML): name, memory, utilization, power, clocks, MIG, ECC, "
        "catalog value; --watch samples them and sums up idle time, energy and waste")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--watch", type=float, default=0.0, metavar="SECONDS",
                   help="sample for this many seconds and add a summary (utilization, idle time, energy, "
                        "policies, waste)")
    p.add_argument("--interval", type=float, default=1.0, metavar="S", help="seconds between samples (1)")
    p.add_argument("--processes", action="store_true", help="also list the processes on each GPU")
    p.add_argument("--currency", default="USD", metavar="C", help="currency of values and costs (USD)")
    add_market(p)
    add_spec(p, "--kwh-price", "electricity_per_kwh", metavar="PRICE",
             help="electricity price per kWh in --currency (energy cost of the watch)")
    p.add_argument("--idle-util", type=float, default=None, metavar="PCT",
                   help="a GPU under this utilization is idle (20)")
    p.add_argument("--idle-for", default=None, metavar="DURATION",
                   help="… for this long before the idle policy fires (Prometheus duration, 30m)")
    p.add_argument("--mem-high", type=float, default=None, metavar="PCT",
                   help="memory used above this is pressure (90)")
    add_spec(p, "--amortize-years", "amortization_years", metavar="Y",
             help="years over which a new price is spread when a card has no cloud price")
    p.add_argument("--demo", action="store_true",
                   help="probe simulated GPUs in simulated time instead of this machine (a demonstration)")
    p.add_argument("--json", action="store_true", help="print JSON")


def run(args: argparse.Namespace):
    from gpucost import monitor, probe
    from gpucost.errors import DataError, GpucostError

    policy = monitor.Policy(
        idle_util_pct=monitor.DEFAULT_IDLE_UTIL_PCT if args.idle_util is None else args.idle_util,
        idle_for_s=monitor.DEFAULT_IDLE_FOR_S if args.idle_for is None else monitor.parse_duration(args.idle_for),
        mem_high_pct=monitor.DEFAULT_MEM_HIGH_PCT if args.mem_high is None else args.mem_high)
    policy.check()
    if args.watch < 0 or args.watch != args.watch:
        raise GpucostError(f"--watch must be 0 or more seconds, not {args.watch:g}")
    if args.watch > 0:
        monitor.check_sampling(args.watch, args.interval)
    years = args.amortize_years
    currency = args.currency.upper()

    cat = catalog_for(args)
    cat.fx_rate(currency)  # an unknown currency is bad input: exit 2
    catalog_error = None
    prices = None
    try:
        from gpucost.pricing import price_summary
        prices = price_summary(cat, currency)
    except DataError as exc:  # a broken price table must not hide the GPU: say so in the answer
        catalog_error = str(exc)

    sim = None
    if args.demo:
        from gpucost.fake_nvml import SimClock
        sim = SimClock()
        probe.set_nvml(probe.fake("demo", clock=sim))

    def match(name, mem):
        return monitor.match_gpu(cat, name, mem)

    result = probe.probe(processes=args.processes, match=None if catalog_error else match)
    out = result.to_dict()
    out["demo"] = bool(args.demo)
    values = {}
    for g, gd in zip(result.gpus, out["gpus"], strict=True):
        gd["value"] = None
        if g.catalog_id and prices is not None:
            values[g.index] = monitor.card_value(cat, g.catalog_id, currency, years, prices=prices)
            gd["value"] = values[g.index].to_dict()
    if catalog_error:
        out["catalog_error"] = catalog_error
    out["watch"] = None
    if args.watch > 0 and result.available:
        if sim is not None:
            samples = monitor.run_sampler(probe.sample, args.watch, args.interval, clock=sim, sleep=sim.sleep)
        else:
            samples = monitor.run_sampler(probe.sample, args.watch, args.interval)
        report = monitor.summarize(samples, args.interval, policy, kwh_price=args.kwh_price,
                                   currency=currency, values=values)
        out["watch"] = {"duration_s": args.watch, "samples": len({s.t_s for s in samples}),
                        **report.to_dict()}
    if args.demo:
        probe.set_nvml(None)
    return out


def _f(v, fmt="{:.0f}", none="—") -> str:
    return none if v is None else fmt.format(v)


def render_text(r: dict) -> str:
    if not r["available"]:
        return f"No NVIDIA GPU available: {r['reason']}\nHint: {r['hint']}"
    lines = [("DEMO (simulated GPUs) — " if r.get("demo") else "")
             + f"driver {r['driver_version'] or '?'}, CUDA {r['cuda_version'] or '?'}"]
    for g in r["gpus"]:
        mem = (f"{_f(g['memory_used_mib'])}/{_f(g['memory_total_mib'])} MiB"
               if g["memory_total_mib"] is not None else "memory —")
        lines.append(f"[{g['index']}] {g['name']}  catalog: {g['catalog_id'] or '—'}  cc {_f(g['compute_capability'], '{:g}')}"
                     f"  {mem}  util {_f(g['utilization_gpu_pct'])}%  {_f(g['temperature_c'])} °C  "
                     f"{_f(g['power_w'])}/{_f(g['power_limit_w'])} W"
                     + ("  LOST" if g["lost"] else "") + ("  MIG on" if g["mig_mode"] else ""))
        v = g.get("value")
        if v and v["hourly_value"] is not None:
            lines.append(f"    worth {v['hourly_value']:.3f} {v['currency']}/h ({v['hourly_basis']})")
        for p in g.get("processes") or []:
            lines.append(f"    pid {p['pid']} {p['name'] or '?'} {_f(p['used_memory_mib'])} MiB")
    w = r.get("watch")
    if w:
        lines.append(f"watched {w['duration_s']:g} s, {w['samples']} samples:")
        for s in w["gpus"]:
            lines.append(f"  [{s['index']}] util mean {_f(s['util_mean_pct'], '{:.1f}')}% p95 "
                         f"{_f(s['util_p95_pct'], '{:.1f}')}%  idle {_f(s['idle_s'])} s  energy "
                         f"{_f(s['energy_kwh'], '{:.4f}')} kWh")
        for v in w["verdicts"]:
            lines.append(f"  [{v['index']}] {v['policy']}: {v['status']}")
        t = w["totals"]
        if t.get("wasted") is not None:
            lines.append(f"  idle GPU-hours {t['idle_gpu_hours']:.3f}, wasted {t['wasted']:.2f} {w['currency']}")
    return "\n".join(lines)
