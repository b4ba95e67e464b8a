"""Prometheus alerting rules for NVIDIA's DCGM exporter: idle GPUs and memory pressure, with the money.

Pure: options in, a rules document (dict, or YAML text) out. The metrics are those dcgm-exporter exports
by default (labels ``gpu``, ``UUID``, ``modelName``, ``Hostname``, and on Kubernetes ``namespace``/``pod``):

* ``DCGM_FI_DEV_GPU_UTIL``   GPU utilization [%]
* ``DCGM_FI_DEV_FB_USED`` / ``DCGM_FI_DEV_FB_FREE``   framebuffer memory used / free [MiB]
* ``DCGM_FI_DEV_POWER_USAGE``   power draw [W]
* ``DCGM_FI_PROF_GR_ENGINE_ACTIVE``   graphics/compute engine active [ratio 0–1] (a truer busy signal than
  GPU_UTIL, which counts a kernel running on one SM as busy; needs the profiling metrics enabled)

Rules made (group ``gpucost``):

* alert ``GpuIdle``: ``DCGM_FI_DEV_GPU_UTIL < idle_util_pct`` for ``idle_for``
* alert ``GpuEngineIdle`` (with ``use_prof``): ``DCGM_FI_PROF_GR_ENGINE_ACTIVE < idle_util_pct / 100``
* alert ``GpuMemoryPressure``: ``100 × FB_USED / (FB_USED + FB_FREE) > mem_high_pct`` for ``mem_for``
* record ``gpucost:gpu_memory_used:percent`` and ``gpucost:gpu_power:kilowatts`` (= kWh per hour)
* record ``gpucost:gpu_energy_cost:per_hour`` when an electricity price is given, and
  ``gpucost:gpu_idle_cost:per_hour`` (the hourly value of every card that is idle now) when the card is known
* with budgets (:mod:`gpucost.spend_budgets`): record ``gpucost:namespace_gpu_cost:per_hour`` and alert
  ``GpuNamespaceOverBudget`` when a namespace will pass its monthly budget at the current rate
  (:func:`budget_rules`)

The idle alerts' annotations state what an idle card costs per hour (``hourly_value`` with its basis,
from :func:`gpucost.monitor.card_value`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from gpucost.errors import GpucostError
from gpucost.i18n import t
from gpucost.monitor import (
    DEFAULT_IDLE_FOR_S,
    DEFAULT_IDLE_UTIL_PCT,
    DEFAULT_MEM_HIGH_PCT,
    CardValue,
    format_duration,
    parse_duration,
)
from gpucost.spend_budgets import Budgets

GROUP = "gpucost"
UTIL = "DCGM_FI_DEV_GPU_UTIL"
FB_USED = "DCGM_FI_DEV_FB_USED"
FB_FREE = "DCGM_FI_DEV_FB_FREE"
POWER = "DCGM_FI_DEV_POWER_USAGE"
ENGINE_ACTIVE = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
#: the budget forecast: the mean spending rate over this window, held for this long
DEFAULT_BUDGET_WINDOW = "6h"
DEFAULT_BUDGET_FOR = "1h"
NAMESPACE_COST = "gpucost:namespace_gpu_cost:per_hour"
_NAMESPACE_RE = re.compile(r"[A-Za-z0-9._-]+")
#: where the card sits, in annotation templates (labels of dcgm-exporter)
WHERE = "GPU {{ $labels.gpu }} ({{ $labels.modelName }}) on {{ $labels.Hostname }}"



@dataclass(frozen=True)
class RuleOptions:
    """What the rules watch for. Durations are Prometheus durations ("30m", "1h30m").

    idle_util_pct : a GPU under this utilization [%] is idle
    idle_for      : … for this long before the alert fires
    mem_high_pct  : memory used above this [% of used + free] is pressure
    mem_for       : … for this long
    use_prof      : also alert on DCGM_FI_PROF_GR_ENGINE_ACTIVE (needs DCGM profiling metrics)
    value         : the card the fleet is made of (its hourly value goes into the annotations)
    kwh_price     : electricity price [currency / kWh] for the energy-cost recording rule
    currency      : the currency of ``kwh_price`` (and of ``value``)
    budgets       : monthly budgets per namespace (:mod:`gpucost.spend_budgets`, by project) in ``currency``
    budget_hourly : what one card costs per hour [currency] (:func:`gpucost.showback.card_rate`: the same
                    cost as ``gpucost showback``)
    budget_window : the "current rate" is the mean of this window
    budget_for    : … and the forecast must hold this long before the alert fires
    """

    idle_util_pct: float = DEFAULT_IDLE_UTIL_PCT
    idle_for: str = format_duration(DEFAULT_IDLE_FOR_S)
    mem_high_pct: float = DEFAULT_MEM_HIGH_PCT
    mem_for: str = "5m"
    use_prof: bool = False
    value: CardValue | None = None
    kwh_price: float | None = None
    currency: str = "USD"
    budgets: Budgets | None = None
    budget_hourly: float | None = None
    budget_window: str = DEFAULT_BUDGET_WINDOW
    budget_for: str = DEFAULT_BUDGET_FOR

    def check(self) -> None:
        for name, v in (("--idle-util", self.idle_util_pct), ("--mem-high", self.mem_high_pct)):
            if not isinstance(v, (int, float)) or math.isnan(v) or not 0 < v <= 100:
                raise GpucostError(f"{name} must be a percentage above 0 and at most 100, not {v:g}")
        parse_duration(self.idle_for)
        parse_duration(self.mem_for)
        parse_duration(self.budget_window)
        parse_duration(self.budget_for)
        if self.budgets is not None:
            if self.budgets.by != "project":
                raise GpucostError(f"alert rules are per namespace: the budgets of {self.budgets.source} are per "
                                   f"{self.budgets.by}, give budgets by project (by: project)")
            if self.budget_hourly is None:
                raise GpucostError("budget alerts need a card's hourly cost: give --gpu ID or --hourly PRICE")
            if self.budgets.currency != self.currency.upper():
                raise GpucostError(f"the budgets are in {self.budgets.currency}, the rules in {self.currency}")
        if self.kwh_price is not None and (math.isnan(self.kwh_price) or self.kwh_price < 0):
            raise GpucostError(f"the electricity price must be zero or more, not {self.kwh_price:g}")


def _num(x: float) -> str:
    """A threshold as PromQL writes it (20 not 20.0)."""
    return f"{x:g}"


def _money(x: float) -> str:
    return f"{x:,.2f}" if x >= 1 else f"{x:.3f}"


def idle_cost_text(opts: RuleOptions) -> str:
    """The sentence about what an idle card costs per hour (locale strings ``rules_cost_*``)."""
    v = opts.value
    if v is None or v.hourly_value is None:
        why = "" if v is None else t("rules_cost_no_price", name=v.name)
        return t("rules_cost_unknown", why=why)
    key = "rules_basis_cloud" if v.hourly_basis == "cloud-on-demand" else "rules_basis_amortized"
    basis = t(key, years=v.amortize_years, offer=v.cloud_offer or "", date=v.cloud_as_of or "")
    return t("rules_cost_known", name=v.name, value=_money(v.hourly_value), cur=v.currency, basis=basis)


def alert_rules(opts: RuleOptions | None = None) -> dict:
    """The rules document (``{"groups": [...]}``) for ``promtool check rules`` and Prometheus."""
    opts = opts or RuleOptions()
    opts.check()
    idle_for = format_duration(parse_duration(opts.idle_for))
    mem_for = format_duration(parse_duration(opts.mem_for))
    cost = idle_cost_text(opts)
    rules: list[dict] = [
        {"record": "gpucost:gpu_memory_used:percent",
         "expr": f"100 * {FB_USED} / ({FB_USED} + {FB_FREE})"},
        {"record": "gpucost:gpu_power:kilowatts", "expr": f"{POWER} / 1000"},
    ]
    cur = (opts.value.currency if opts.value is not None else opts.currency).upper()
    if opts.kwh_price is not None:
        rules.append({"record": "gpucost:gpu_energy_cost:per_hour",
                      "expr": f"{POWER} / 1000 * {opts.kwh_price:g}",
                      "labels": {"currency": opts.currency.upper()}})
    if opts.value is not None and opts.value.hourly_value is not None:
        rules.append({"record": "gpucost:gpu_idle_cost:per_hour",
                      "expr": f"({UTIL} < bool {_num(opts.idle_util_pct)}) * {opts.value.hourly_value:.6g}",
                      "labels": {"currency": cur, "gpucost_gpu_id": opts.value.gpu_id}})
    rules.append({
        "alert": "GpuIdle",
        "expr": f"{UTIL} < {_num(opts.idle_util_pct)}",
        "for": idle_for,
        "labels": {"severity": "warning"},
        "annotations": {
            "summary": f"{WHERE} is idle",
            "description": (f"{WHERE} has been under {_num(opts.idle_util_pct)}% busy for {idle_for} "
                            f"(now {{{{ $value | humanize }}}}%). {cost}"),
        },
    })
    if opts.use_prof:
        ratio = opts.idle_util_pct / 100
        rules.append({
            "alert": "GpuEngineIdle",
            "expr": f"{ENGINE_ACTIVE} < {ratio:g}",
            "for": idle_for,
            "labels": {"severity": "warning"},
            "annotations": {
                "summary": f"{WHERE}: compute engine idle",
                "description": (f"The graphics/compute engine of {WHERE} has been active under "
                                f"{_num(opts.idle_util_pct)}% of the time for {idle_for} (now "
                                f"{{{{ $value | humanize }}}}). {cost}"),
            },
        })
    rules.append({
        "alert": "GpuMemoryPressure",
        "expr": f"100 * {FB_USED} / ({FB_USED} + {FB_FREE}) > {_num(opts.mem_high_pct)}",
        "for": mem_for,
        "labels": {"severity": "warning"},
        "annotations": {
            "summary": f"{WHERE}: memory above {_num(opts.mem_high_pct)}%",
            "description": (f"{WHERE} has used more than {_num(opts.mem_high_pct)}% of its memory for "
                            f"{mem_for} (now {{{{ $value | humanize }}}}%): the next allocation may fail with out of "
                            "memory; shrink the batch or context, quantize, or move the job to a larger card."),
        },
    })
    rules += budget_rules(opts)
    return {"groups": [{"name": GROUP, "rules": rules}]}


def budget_rules(opts: RuleOptions) -> list[dict]:
    """The namespace spending rule and one ``GpuNamespaceOverBudget`` alert per budget: at the mean rate of
    the last ``budget_window``, a whole calendar month (``24 × days_in_month()`` hours) costs more than the
    namespace's monthly budget. The rate is each namespace's share of its cards' SM time (GR_ENGINE_ACTIVE
    with ``use_prof``, else GPU_UTIL / 100) × a card's hourly cost: ``gpucost showback --rule sm --idle
    separate`` at the same price. Prometheus does not know what was spent earlier in the month:
    ``gpucost showback --budget`` tells that."""
    if opts.budgets is None or opts.budget_hourly is None:
        return []
    share = (f"sum by (namespace) ({ENGINE_ACTIVE}{{namespace!=\"\"}})" if opts.use_prof
             else f"sum by (namespace) ({UTIL}{{namespace!=\"\"}}) / 100")
    cur = opts.currency.upper()
    window = format_duration(parse_duration(opts.budget_window))
    out: list[dict] = [{"record": NAMESPACE_COST, "expr": f"{share} * {opts.budget_hourly:.6g}",
                        "labels": {"currency": cur}}]
    for ns, amount in opts.budgets.amounts.items():
        if not _NAMESPACE_RE.fullmatch(ns):
            raise GpucostError(f"'{ns}' in {opts.budgets.source} is not a Kubernetes namespace name "
                               "(letters, digits, '-', '.', '_')")
        out.append({
            "alert": "GpuNamespaceOverBudget",
            "expr": (f"avg_over_time({NAMESPACE_COST}{{namespace=\"{ns}\"}}[{window}]) * 24 * scalar(days_in_month()) "
                     f"> {amount:g}"),
            "for": format_duration(parse_duration(opts.budget_for)),
            "labels": {"severity": "warning", "budget": f"{amount:g}"},
            "annotations": {
                "summary": f"Namespace {ns} will pass its GPU budget this month at the current rate",
                "description": (f"At the mean rate of the last {window}, the GPUs of namespace {ns} cost "
                                f"{{{{ $value | humanize }}}} {cur} in a whole month, over its monthly budget of "
                                f"{amount:g} {cur} (SM share × {opts.budget_hourly:.4g} {cur} per card-hour)."),
            },
        })
    return out


def rules_yaml(opts: RuleOptions | None = None) -> str:
    """:func:`alert_rules` as YAML text, with a header comment naming what made it."""
    import yaml

    doc = alert_rules(opts)
    o = opts or RuleOptions()
    head = ("# Prometheus alerting rules for NVIDIA dcgm-exporter metrics, made by `gpucost rules`.\n"
            f"# idle: DCGM_FI_DEV_GPU_UTIL < {_num(o.idle_util_pct)} for {o.idle_for}; memory: used > "
            f"{_num(o.mem_high_pct)}% for {o.mem_for}.\n"
            "# Check with: promtool check rules FILE\n")
    return head + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100000,
                                 default_flow_style=False)
