"""Sharing and scaling planner: several workloads on one card, the fewest GPUs for a training run, and a
fleet that follows its queue (or a commitment sized to the demand).

Pure calculations (plain values, pandas frames and the :class:`~gpucost.catalog.Catalog` in, frozen
records out), one module per planner:

* :mod:`gpucost.plan.share` — :func:`plan_share`: workloads on cards by time-slicing, MIG or MPS, and the
  NVIDIA k8s-device-plugin / mig-parted configurations.
* :mod:`gpucost.plan.train` — :func:`plan_train`: plain data parallel, ZeRO 1/2/3, CPU or NVMe offload,
  tensor/pipeline parallel: the fewest GPUs that hold a training run (gpucost.memory's one training
  model), its throughput, time and cost, and a DeepSpeed config.
* :mod:`gpucost.plan.scale` — :func:`simulate_fleet`, :func:`commitment_level`, :func:`plan_scale`: a job
  trace on a fixed fleet, a queue-driven autoscaler or a spot-heavy pool, and the committed level that
  minimizes cost.

Units are in the names: ``_gib`` (2**30 bytes), ``_gb`` (1e9 bytes), ``_hours``, ``_pct``.
"""

from __future__ import annotations

import json

from gpucost.plan.scale import *  # noqa: F403
from gpucost.plan.scale import __all__ as _scale_all
from gpucost.plan.share import *  # noqa: F403
from gpucost.plan.share import __all__ as _share_all
from gpucost.plan.train import *  # noqa: F403
from gpucost.plan.train import __all__ as _train_all
from gpucost.spot import SPOT_BUCKETS


def config_json(cfg: dict) -> str:
    return json.dumps(cfg, indent=2)


__all__ = [*_share_all, *_train_all, *_scale_all, "SPOT_BUCKETS", "config_json"]
