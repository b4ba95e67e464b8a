"""Total cost of ownership: buy (new or used), lease, or rent (on-demand, spot, reserved) or mix them.

Pure numpy/pandas over the catalog and ``data/tco_defaults.csv``; no UI, no argparse. One module per
seam: :mod:`~gpucost.tco.scenario` (files and their schema), :mod:`~gpucost.tco.resolve` (every input
from the scenario, the catalog or a sourced default), :mod:`~gpucost.tco.inputs` (the typed inputs),
:mod:`~gpucost.tco.core` (the vectorized costs), :mod:`~gpucost.tco.results` (evaluation and sentences),
:mod:`~gpucost.tco.uncertainty` (tornado and Monte Carlo).

The model (all money in one currency, months m = 1..M, H = 730 hours a month):

* **Demand** ``D[m]`` in GPU-hours of the *owned* card (the reference card): a steady load
  (``demand.utilization`` × cards × H, or ``demand.gpu_hours_per_month``) growing by
  ``(1 + growth)^((m-1)/12)``, plus bursts every few months, plus jobs (training runs, serving loads in
  tokens). A cloud card that is ``relative_speed`` times faster needs ``D / relative_speed`` hours.
* **Owned cards** (buy new, buy used): the owned fleet serves ``min(D, N·H·max_utilization)``; the rest
  is bought on demand. Cost to date is the *liquidation view* — what it cost if you sold at month m:
  ``N·host + N·price·(1 − (1 − fee)·ρ^(m/12)) + Σ running`` with running = electricity
  ``N·(TDP·(idle + (1 − idle)·u) + host_W)·PUE·H·price_kWh`` (``u`` = busy fraction; with
  ``always_on: false`` the machine draws ``N·(TDP + host_W)·u`` only), colocation per kW-month of
  provisioned power, maintenance (fraction of capex a year), a failure reserve (failures a year × card
  price), staff time and the overflow. ρ (value kept per year) comes from the catalog's used/new prices
  and the card's age.
* **Lease to own**: an annuity ``A·r / (1 − (1 + r)^−T)`` on the new cards and hosts; cost to date =
  paid + balance still owed − resale value + running costs (so it equals buying plus interest).
* **On-demand**: ``D / speed × price``.
* **Spot**: expected GPU-hours = work × (1 + δ/τ) / (1 − gλ(R + τ/2)) with τ = √(2 δ MTBF) (Young),
  MTBF = 1/(gλ) for a job on g GPUs, δ the checkpoint time, R the restart time, λ the interruption rate
  per instance-hour from the provider's monthly bucket (λ = −ln(1 − p)/H). Never below price × work.
* **Reserved 1 y / 3 y**: each term reserves enough GPUs for that term's peak month and pays all their
  hours up front in the liquidation view (a commitment is owed whether used or not).
* **Hybrid**: k owned (new or used) or reserved GPUs as a base plus bursts on spot or on demand; the k
  (and base and burst kind) with the lowest total is chosen; the cost of keeping headroom is shown.

Every default that is not in the scenario file comes from the catalog or ``tco_defaults.csv`` with its
source; a figure that has no source is a required scenario input.
"""

from __future__ import annotations

from pathlib import Path

from gpucost.catalog import Catalog
from gpucost.fmt import fmt_hours, fmt_money, fmt_pct
from gpucost.spot import (
    SPOT_BUCKETS,
    deadline_miss_probability,
    interruption_rate_per_hour,
    poisson_cdf,
    spot_factor,
    young_daly_interval_hours,
)
from gpucost.tco.core import (
    KINDS,
    OPTION_IDS,
    OPTION_KIND,
    OWNED_OPTIONS,
    RENTED_OPTIONS,
    RESERVED_TERM_MONTHS,
    HybridPlan,
    annuity_payment,
    break_even_month,
)
from gpucost.tco.inputs import Inputs, JobLoad, Offer, Params, Provenance
from gpucost.tco.resolve import relative_speed, resolve
from gpucost.tco.results import (
    BreakEven,
    OptionResult,
    TcoResult,
    evaluate,
    option_name,
    option_reason,
    relabel,
)
from gpucost.tco.scenario import (
    BURST_KINDS,
    DEFAULT_SWINGS,
    FIELDS,
    HYBRID_BASES,
    JOB_FIELDS,
    JOB_KINDS,
    SCENARIO_NAME_RE,
    SITES,
    Job,
    Scenario,
    bundled_scenarios_dir,
    list_scenarios,
    load_scenario,
    parse_scenario_text,
    read_scenario_file,
    save_scenario,
    scenario_from_dict,
    user_scenarios_dir,
)
from gpucost.tco.uncertainty import (
    SENSITIVITY_INPUTS,
    MonteCarloResult,
    TornadoBar,
    TornadoResult,
    monte_carlo,
    tornado,
)


def run(name_or_path: str | Path | Scenario, catalog: Catalog | None = None, *, months: int | None = None,
        currency: str | None = None) -> TcoResult:
    """Load (if needed), resolve and evaluate a scenario: what ``gpucost tco`` prints."""
    sc = name_or_path if isinstance(name_or_path, Scenario) else load_scenario(name_or_path)
    return evaluate(resolve(sc, catalog, currency=currency, months=months))


__all__ = [
    "SPOT_BUCKETS", "KINDS", "OPTION_IDS", "OPTION_KIND", "OWNED_OPTIONS", "RENTED_OPTIONS", "RESERVED_TERM_MONTHS",
    "BURST_KINDS", "DEFAULT_SWINGS", "FIELDS", "HYBRID_BASES", "JOB_FIELDS", "JOB_KINDS", "SCENARIO_NAME_RE", "SITES",
    "SENSITIVITY_INPUTS", "Job", "Scenario", "Inputs", "JobLoad", "Offer", "Params", "Provenance", "HybridPlan",
    "BreakEven", "OptionResult", "TcoResult", "TornadoBar", "TornadoResult", "MonteCarloResult", "fmt_hours",
    "option_name", "option_reason", "fmt_money", "fmt_pct", "deadline_miss_probability", "interruption_rate_per_hour", "poisson_cdf", "spot_factor",
    "young_daly_interval_hours", "annuity_payment", "break_even_month", "relative_speed", "resolve", "evaluate",
    "relabel", "tornado", "monte_carlo", "run", "bundled_scenarios_dir", "user_scenarios_dir", "list_scenarios",
    "load_scenario", "parse_scenario_text", "read_scenario_file", "save_scenario", "scenario_from_dict",
]
