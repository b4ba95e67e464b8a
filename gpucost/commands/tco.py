"""gpucost tco: total cost of ownership — buy, lease, rent on demand, spot, reserved or hybrid."""

from __future__ import annotations

import argparse

from gpucost.commands import add_market, add_spec, catalog_for

NAME = "tco"
HELP = "compare buying, leasing and renting GPUs over time for a scenario (total cost, break-even, cheapest)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    src = p.add_mutually_exclusive_group()
    src.add_argument("--scenario", metavar="NAME", help="a bundled scenario (or one in GPUCOST_DATA_DIR/scenarios)")
    src.add_argument("--config", metavar="FILE", help="your own scenario YAML file")
    src.add_argument("--list", action="store_true", help="list the scenarios")
    add_spec(p, "--months", "horizon_months", default=None, help="horizon (default: the scenario's)")
    p.add_argument("--currency", default=None, metavar="C", help="display currency (default: the scenario's)")
    add_market(p)
    p.add_argument("--tornado", action="store_true", help="add the tornado (each input swung over its range)")
    add_spec(p, "--monte-carlo", "monte_carlo_draws", default=0, metavar="DRAWS",
             help="add a Monte Carlo over the uncertain inputs with this many draws (0: none)")
    add_spec(p, "--seed", "seed", help="Monte Carlo random seed")
    p.add_argument("--json", action="store_true", help="print JSON")


def run(args: argparse.Namespace):
    from gpucost import tco
    from gpucost.errors import GpucostError

    if args.list:
        return tco.list_scenarios()
    if not (args.scenario or args.config):
        raise GpucostError("give --scenario NAME, --config FILE or --list")
    sc = tco.read_scenario_file(args.config) if args.config else tco.load_scenario(args.scenario)
    inputs = tco.resolve(sc, catalog_for(args), currency=args.currency, months=args.months)
    result = tco.evaluate(inputs)
    out = result.summary_dict()
    if args.tornado:
        out["tornado"] = tco.tornado(inputs, result).to_dict()
    if args.monte_carlo:
        out["monte_carlo"] = tco.monte_carlo(inputs, result, draws=args.monte_carlo, seed=args.seed).to_dict()
    return out


def _fmt(v, nd=0) -> str:
    return "—" if v is None else f"{v:,.{nd}f}"


def render_text(result) -> str:
    if isinstance(result, list):
        lines = [f"{'name':18} {'origin':8} title"]
        lines += [f"{r['name']:18} {r['origin']:8} {r['title']}" for r in result]
        return "\n".join(lines)
    cur = result["currency"]
    lines = [f"scenario {result['scenario']} over {result['horizon_months']} months, in {cur}",
             f"{'option':46} {'total':>12} {'per GPU-h':>10} {'break-even':>10}"]
    for o in result["options"]:
        be = "—" if o["break_even_month"] is None else f"month {o['break_even_month']}"
        mark = "*" if o["id"] == result["cheapest_id"] else " "
        lines.append(f"{mark}{o['name'][:45]:45} {_fmt(o['total_cost']):>12} "
                     f"{_fmt(o['cost_per_useful_gpu_hour'], 3):>10} {be:>10}")
    for u in result["unavailable"]:
        lines.append(f" {u['id']:45} not priced: {u['reason']}")
    lines.append(result["summary"])
    for name, why in result["reasons"].items():
        lines.append(f"- {name}: {why}")
    for w in result["warnings"]:
        lines.append(f"! {w}")
    return "\n".join(lines)
