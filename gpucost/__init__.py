"""gpucost — a GPU cost decision workbook.

What is the cheapest way to get the GPU compute you need? Sourced tables in ``data/``, pure engines
(cards, memory, speed, tco, monitor, plan, claims), widget pages in :mod:`gpucost.ui`, and a CLI.
Heavy modules are imported on first use, so ``import gpucost`` stays fast.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

__all__ = [
    "Catalog",
    "DataError",
    "GpucostError",
    "UnknownNameError",
    "load_table",
    "load_skypilot_vms",
    "Need",
    "rank_cards",
    "gpu_list",
    "__version__",
]

_LAZY = {
    "Catalog": "gpucost.catalog",
    "load_table": "gpucost.catalog",
    "load_skypilot_vms": "gpucost.catalog",
    "DataError": "gpucost.errors",
    "GpucostError": "gpucost.errors",
    "UnknownNameError": "gpucost.errors",
    "Need": "gpucost.cards",
    "rank_cards": "gpucost.cards",
    "gpu_list": "gpucost.cards",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'gpucost' has no attribute {name!r}")
