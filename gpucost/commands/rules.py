"""gpucost rules: Prometheus alerting rules (YAML) for NVIDIA dcgm-exporter metrics — idle GPUs and
memory pressure, with the hourly cost of an idle card in the annotations."""

from __future__ import annotations

import argparse

from gpucost.commands import add_market, bounded, catalog_for

NAME = "rules"
HELP = "print Prometheus alerting rules (YAML) for dcgm-exporter: idle GPUs, memory pressure, their cost"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--idle-util", type=float, default=20.0, metavar="PCT",
                   help="a GPU under this utilization is idle (20)")
    p.add_argument("--idle-for", default="30m", metavar="DURATION",
                   help="… for this long before GpuIdle fires (Prometheus duration: 30m, 1h, 90s)")
    p.add_argument("--mem-high", type=float, default=90.0, metavar="PCT",
                   help="memory used above this fires GpuMemoryPressure (90)")
    p.add_argument("--mem-for", default="5m", metavar="DURATION", help="… for this long (5m)")
    p.add_argument("--gpu", default=None, metavar="ID",
                   help="the card of the fleet (catalog id or name): its hourly value goes into the alerts")
    p.add_argument("--currency", default="USD", metavar="C", help="currency of the costs (USD)")
    add_market(p)
    p.add_argument("--amortize-years", type=bounded(0, 30, "years", lo_open=True), default=3.0, metavar="Y",
                   help="years over which a new price is spread when the card has no cloud price (3)")
    p.add_argument("--kwh-price", type=bounded(0, 100, "per kWh"), default=None, metavar="PRICE",
                   help="electricity price per kWh: adds an energy-cost recording rule")
    p.add_argument("--prof", action="store_true",
                   help="also alert on DCGM_FI_PROF_GR_ENGINE_ACTIVE (needs DCGM profiling metrics)")
    p.add_argument("--budget", default=None, metavar="FILE",
                   help="monthly budgets per namespace (YAML or CSV, by: project): alert when a namespace will "
                        "pass its budget this month at the current rate (needs --gpu or --hourly)")
    p.add_argument("--hourly", type=bounded(0, 1e6, "per card-hour", lo_open=True), default=None, metavar="PRICE",
                   help="budget alerts: what one card costs per hour in --currency (else --gpu's cost, as "
                        "gpucost showback counts it)")
    p.add_argument("--rented", action="store_true",
                   help="budget alerts: the --gpu cards are rented (their cloud offer per GPU-hour)")
    p.add_argument("--budget-window", default="6h", metavar="DURATION",
                   help="budget alerts: the current rate is the mean of this window (6h)")
    p.add_argument("--budget-for", default="1h", metavar="DURATION",
                   help="budget alerts: … and the forecast holds this long before the alert fires (1h)")
    p.add_argument("--json", action="store_true", help="print the rules as JSON instead of YAML")


class RulesOutput:
    def __init__(self, doc: dict, text: str):
        self.doc, self.text = doc, text

    def to_dict(self) -> dict:
        return self.doc


def run(args: argparse.Namespace) -> RulesOutput:
    from gpucost.rules import RuleOptions, alert_rules, rules_yaml

    value = None
    cat = catalog_for(args)
    cat.fx_rate(args.currency)  # the costs' currency is one of fx.csv's, with or without --gpu
    if args.gpu:
        from gpucost.monitor import card_value

        value = card_value(cat, cat.gpu_id(args.gpu), args.currency, args.amortize_years)
    budgets, hourly = _budgets(args)
    opts = RuleOptions(idle_util_pct=args.idle_util, idle_for=args.idle_for, mem_high_pct=args.mem_high,
                       mem_for=args.mem_for, use_prof=args.prof, value=value, kwh_price=args.kwh_price,
                       currency=args.currency.upper(), budgets=budgets, budget_hourly=hourly,
                       budget_window=args.budget_window, budget_for=args.budget_for)
    return RulesOutput(alert_rules(opts), rules_yaml(opts))


def _budgets(args: argparse.Namespace):
    """The budget file in --currency, and a card's hourly cost (--hourly, else --gpu's as showback counts it)."""
    if not args.budget:
        return None, None
    from dataclasses import replace

    from gpucost.economics import Ownership
    from gpucost.showback import card_rate
    from gpucost.spend_budgets import read_budgets

    cat = catalog_for(args)
    cur = args.currency.upper()
    cat.fx_rate(cur)
    b = read_budgets(args.budget)
    b = replace(b, currency=cur, amounts={k: round(float(cat.convert(v, b.currency, cur)), 2)
                                          for k, v in b.amounts.items()})
    hourly = args.hourly
    if hourly is None and args.gpu:
        hourly = card_rate(cat, args.gpu, cur, rented=args.rented,
                           ownership=Ownership(years=args.amortize_years)).per_hour
    return b, hourly


def render_text(result: RulesOutput) -> str:
    return result.text.rstrip("\n")
