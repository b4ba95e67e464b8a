"""gpucost — a GPU cost decision workbook.

What is the cheapest way to get the GPU compute you need? Sourced tables in ``data/``, pure engines
(cards, memory, speed, tco, monitor, plan, claims), widget pages in :mod:`gpucost.ui`, and a CLI.
Heavy modules are imported on first use, so ``import gpucost`` stays fast.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_LAZY = {
    # catalog and errors
    "Catalog": "gpucost.catalog",
    "load_table": "gpucost.catalog",
    "load_skypilot_vms": "gpucost.catalog",
    "DataError": "gpucost.errors",
    "GpucostError": "gpucost.errors",
    "UnknownNameError": "gpucost.errors",
    # card choice
    "Need": "gpucost.cards",
    "rank_cards": "gpucost.cards",
    "gpu_list": "gpucost.cards",
    # memory fit and speed
    "resolve_model": "gpucost.models",
    "Setup": "gpucost.memory",
    "estimate": "gpucost.memory",
    "card_fits": "gpucost.memory",
    "fit_matrix": "gpucost.fit_matrix",
    "speed": "gpucost.speed",
    "training_time": "gpucost.speed",
    "validate": "gpucost.validation",
    # total cost of ownership
    "load_scenario": "gpucost.tco",
    "hourly_value": "gpucost.tco",
    # monitoring (gpucost.probe is the only module that touches NVML)
    "match_gpu": "gpucost.monitor",
    "summarize": "gpucost.monitor",
    # showback: who used shared cards and what each owes
    "allocate": "gpucost.showback",
    "card_rates": "gpucost.showback",
    "read_usage_csv": "gpucost.usage_sources",
    "read_prometheus": "gpucost.usage_sources",
    # rules of thumb
    "claim_ids": "gpucost.claims",
    "evaluate_all": "gpucost.claims",
}

__all__ = [*_LAZY, "__version__"]


#: public names that differ from the name in their module
_RENAMED = {"read_usage_csv": "read_csv"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), _RENAMED.get(name, name))
    raise AttributeError(f"module 'gpucost' has no attribute {name!r}")
