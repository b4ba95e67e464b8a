"""Sharing and scaling planner: several workloads on one card, the fewest GPUs for a training run, and a
fleet that follows its queue (or a commitment sized to the demand).

Pure calculations (plain values, pandas frames and the :class:`~gpucost.catalog.Catalog` in, frozen
records out). Three planners:

* :func:`plan_share` — workloads (memory [GiB], average utilization [% of a whole card], latency
  sensitivity) on cards by **time-slicing** (no memory isolation: the memory of the workloads on a card
  must fit together; compute is shared in turns, so utilization sums to at most 100 %), **MIG**
  (NVIDIA's profile tables in ``data/mig_profiles.csv``, placed on the memory-slice start positions the
  driver allows) or **MPS** (memory must fit together, compute shared at once, no fault isolation). It
  emits the NVIDIA k8s-device-plugin ConfigMap and an NVIDIA mig-parted configuration.
* :func:`plan_train` — plain data parallel, ZeRO 1/2/3, CPU or NVMe offload, tensor/pipeline parallel:
  the fewest GPUs that hold a training run, its throughput, time and cost, and a DeepSpeed config.
* :func:`simulate_fleet` and :func:`commitment_level` — a job trace on a fixed fleet, a queue-driven
  autoscaler or a spot-heavy pool (event-driven, heapq), and the committed level that minimizes cost.

Units are in the names: ``_gib`` (2**30 bytes), ``_gb`` (1e9 bytes), ``_hours``, ``_pct``.
"""

from __future__ import annotations

import bisect
import heapq
import io
import json
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from gpucost.catalog import Catalog, bundled_data_dir
from gpucost.errors import DataError, GpucostError, UnknownNameError

GIB_PER_GB = 1e9 / 2**30
#: CUDA MPS serves at most 48 clients per GPU (NVIDIA MIG User Guide, table "CUDA Concurrency
#: Mechanisms": MPS max partitions 48; https://docs.nvidia.com/datacenter/tesla/mig-user-guide/concepts.html)
MPS_MAX_CLIENTS = 48
SHARE_MODES = ("time-slicing", "mig", "mps")
#: the extended resource the NVIDIA device plugin advertises for a whole GPU
GPU_RESOURCE = "nvidia.com/gpu"
#: documentation of the configuration formats emitted here
DEVICE_PLUGIN_DOC = "https://github.com/NVIDIA/k8s-device-plugin#shared-access-to-gpus"
GPU_OPERATOR_DOC = "https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/gpu-sharing.html"
MIG_PARTED_DOC = "https://github.com/NVIDIA/mig-parted"
DEEPSPEED_DOC = "https://www.deepspeed.ai/docs/config-json/"


def _clean(v):
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return None
    if isinstance(v, np.generic):
        return _clean(v.item())
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    return v


# ==================================================================================================
# 1. Sharing a card
# ==================================================================================================

@dataclass(frozen=True)
class Workload:
    """One workload to place.

    mem_gib  : float  [GiB] memory it needs (weights, KV cache, activations, CUDA context)
    util_pct : float  [%] its average utilization of a whole card when alone (0 < util <= 100)
    latency_sensitive : bool  serving with a latency target (True) or batch work (False)
    """

    mem_gib: float
    util_pct: float
    latency_sensitive: bool = False
    name: str = ""

    def check(self, label: str) -> None:
        if not (self.mem_gib > 0) or math.isinf(self.mem_gib):
            raise GpucostError(f"{label}: memory must be a number > 0 GiB, not {self.mem_gib}")
        if not (0 < self.util_pct <= 100):
            raise GpucostError(f"{label}: utilization must be > 0 and <= 100 %, not {self.util_pct}")


_WL_RE = re.compile(r"^\s*(?:(?P<name>[^=]+)=)?(?P<mem>[^:]+):(?P<util>[^:%]+)%?(?::(?P<flag>[a-z-]+))?\s*$",
                    re.IGNORECASE)
_LATENCY_FLAGS = {"latency": True, "lat": True, "l": True, "online": True, "batch": False, "b": False,
                  "offline": False}


def parse_workload(text: str, index: int = 1) -> Workload:
    """``MEM_GIB:UTIL_PCT[:latency|batch]``, optionally ``name=`` first (e.g. ``chat=20:35:latency``)."""
    m = _WL_RE.match(str(text))
    if not m:
        raise GpucostError(f"workload {index} '{text}': expected MEM_GIB:UTIL_PCT[:latency|batch], "
                           "e.g. 20:35 or 20:35:latency")
    try:
        mem, util = float(m["mem"]), float(m["util"])
    except ValueError:
        raise GpucostError(f"workload {index} '{text}': MEM_GIB and UTIL_PCT must be numbers, "
                           "e.g. 20:35") from None
    flag = (m["flag"] or "batch").lower()
    if flag not in _LATENCY_FLAGS:
        raise GpucostError(f"workload {index} '{text}': unknown flag '{flag}' (latency or batch)")
    w = Workload(mem, util, _LATENCY_FLAGS[flag], (m["name"] or "").strip())
    w.check(f"workload {index} '{text}'")
    return w


@dataclass(frozen=True)
class MigProfile:
    """One MIG GPU-instance profile of a card (a row of data/mig_profiles.csv)."""

    gpu_id: str
    profile: str
    memory_gb: float
    memory_slices: int
    memory_slices_total: int
    compute_slices: int
    compute_slices_total: int
    max_instances: int
    starts: tuple[int, ...]
    media_extensions: bool
    source: str
    as_of: str

    @property
    def memory_gib(self) -> float:
        """[GiB] the profile's nominal memory (its name's GB); nvidia-smi reports a little more usable."""
        return self.memory_gb * GIB_PER_GB

    @property
    def compute_fraction(self) -> float:
        return self.compute_slices / self.compute_slices_total

    def to_dict(self) -> dict:
        d = asdict(self)
        d["starts"] = list(self.starts)
        d["memory_gib"] = round(self.memory_gib, 3)
        return d


def mig_profiles(gpu: str, catalog: Catalog | None = None, *, with_media: bool = False) -> tuple[MigProfile, ...]:
    """The MIG profiles of ``gpu`` (id or name), smallest first; raises when the card has no MIG table."""
    catalog = catalog or Catalog()
    gid = catalog.gpu_id(gpu)
    t = catalog.table("mig_profiles")
    rows = t[t["gpu_id"] == gid]
    if rows.empty:
        known = sorted(set(t["gpu_id"]))
        raise GpucostError(f"no MIG profile table for GPU '{gid}' (MIG tables: {', '.join(known)})")
    out = []
    for r in rows.itertuples(index=False):
        if r.media_extensions and not with_media:
            continue
        try:
            starts = tuple(int(s) for s in str(r.placements).split(";") if s.strip() != "")
        except ValueError:
            raise DataError(f"placements '{r.placements}' must be start slots separated by ';'",
                            file="mig_profiles.csv", column="placements") from None
        out.append(MigProfile(gid, r.profile, float(r.memory_gb), int(r.memory_slices), int(r.memory_slices_total),
                              int(r.compute_slices), int(r.compute_slices_total), int(r.max_instances), starts,
                              bool(r.media_extensions), str(r.source), str(r.as_of)))
    return tuple(sorted(out, key=lambda p: (p.memory_slices, p.compute_slices, p.memory_gb)))


def mig_layout(profiles: Sequence[MigProfile]) -> tuple[int, ...] | None:
    """Start slots (memory-slice index) for these instances on one card, or None when no valid layout exists.

    NVIDIA's rules: each instance starts at one of its profile's listed positions and occupies
    ``memory_slices`` consecutive memory slices; instances may not overlap; at most ``max_instances`` of a
    profile; the compute slices of all instances add up to at most the card's compute slices.
    """
    if not profiles:
        return ()
    key = tuple(profiles)
    return _layout_cached(key)


@lru_cache(maxsize=4096)
def _layout_cached(profiles: tuple[MigProfile, ...]) -> tuple[int, ...] | None:
    total_mem = profiles[0].memory_slices_total
    if sum(p.compute_slices for p in profiles) > profiles[0].compute_slices_total:
        return None
    counts: dict[str, int] = {}
    for p in profiles:
        counts[p.profile] = counts.get(p.profile, 0) + 1
        if counts[p.profile] > p.max_instances:
            return None
    if sum(p.memory_slices for p in profiles) > total_mem:
        return None
    order = sorted(range(len(profiles)), key=lambda i: (-profiles[i].memory_slices, -profiles[i].compute_slices,
                                                        len(profiles[i].starts)))
    starts = [0] * len(profiles)

    def place(k: int, used: int) -> bool:
        if k == len(order):
            return True
        i = order[k]
        p = profiles[i]
        mask0 = (1 << p.memory_slices) - 1
        prev_same = k > 0 and profiles[order[k - 1]] == p
        lo = starts[order[k - 1]] if prev_same else -1  # identical instances: increasing starts only
        for s in p.starts:
            if s <= lo or s + p.memory_slices > total_mem:
                continue
            mask = mask0 << s
            if used & mask:
                continue
            starts[i] = s
            if place(k + 1, used | mask):
                return True
        return False

    return tuple(starts) if place(0, 0) else None


def choose_mig_profile(w: Workload, profiles: Sequence[MigProfile]) -> MigProfile | None:
    """The smallest profile with at least the workload's memory and compute share (None if none)."""
    for p in profiles:  # sorted smallest first
        if p.memory_gib >= w.mem_gib and p.compute_fraction * 100 >= w.util_pct - 1e-9:
            return p
    return None


@dataclass(frozen=True)
class Placement:
    """A workload on a card (MIG: on an instance of ``profile`` starting at memory slice ``start``)."""

    workload: int  # 1-based, in the order given
    name: str
    card: int  # 0-based card index
    mem_gib: float
    util_pct: float
    latency_sensitive: bool
    profile: str | None = None
    start: int | None = None

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class CardLoad:
    index: int
    workloads: tuple[int, ...]
    mem_gib: float
    util_pct: float
    instances: tuple[tuple[str, int], ...] = ()  # MIG: (profile, start)

    def to_dict(self) -> dict:
        return {"index": self.index, "workloads": list(self.workloads), "mem_gib": round(self.mem_gib, 3),
                "util_pct": round(self.util_pct, 3),
                "instances": [{"profile": p, "start": s} for p, s in self.instances]}


@dataclass(frozen=True)
class SharePlan:
    """Workloads on cards. ``utilization_*`` are average utilization per card [%]."""

    gpu_id: str
    gpu_name: str
    vram_gib: float
    mode: str
    cards_needed: int
    cards_without_sharing: int
    placements: tuple[Placement, ...]
    cards: tuple[CardLoad, ...]
    utilization_shared_pct: float
    utilization_without_sharing_pct: float
    warnings: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    configs: tuple[tuple[str, str], ...] = ()  # (name, YAML text)

    @property
    def cards_saved(self) -> int:
        return self.cards_without_sharing - self.cards_needed

    @property
    def utilization_gained_pct(self) -> float:
        """Percentage points of average card utilization gained by sharing."""
        return self.utilization_shared_pct - self.utilization_without_sharing_pct

    def config(self, name: str) -> str | None:
        return dict(self.configs).get(name)

    def to_dict(self) -> dict:
        return _clean({
            "gpu": self.gpu_id, "gpu_name": self.gpu_name, "vram_gib": self.vram_gib, "mode": self.mode,
            "cards_needed": self.cards_needed, "cards_without_sharing": self.cards_without_sharing,
            "cards_saved": self.cards_saved,
            "utilization_shared_pct": round(self.utilization_shared_pct, 3),
            "utilization_without_sharing_pct": round(self.utilization_without_sharing_pct, 3),
            "utilization_gained_pct": round(self.utilization_gained_pct, 3),
            "placements": [p.to_dict() for p in self.placements],
            "cards": [c.to_dict() for c in self.cards],
            "warnings": list(self.warnings), "notes": list(self.notes),
            "configs": dict(self.configs),
        })


def fit_together(workloads: Sequence[Workload], vram_gib: float, mode: str = "time-slicing") -> tuple[bool, str]:
    """Can these workloads share ONE card by time-slicing or MPS? (ok, reason). MIG: see :func:`mig_layout`.

    Time-slicing and MPS do not partition memory: the workloads' memory must fit together in the card's
    ``vram_gib``; their utilization adds up to at most 100 % (time-slicing runs them in turns, MPS at once).
    """
    if mode not in ("time-slicing", "mps"):
        raise UnknownNameError("sharing mode for fit_together", mode, ("time-slicing", "mps"))
    mem = sum(w.mem_gib for w in workloads)
    util = sum(w.util_pct for w in workloads)
    if mem > vram_gib + 1e-9:
        return False, (f"memory {mem:g} GiB > the card's {vram_gib:g} GiB: {mode} shares compute, not "
                       "memory, so the workloads' memory must fit together")
    if util > 100 + 1e-9:
        return False, f"utilization adds up to {util:g} % > 100 %: the card would be saturated"
    if mode == "mps" and len(workloads) > MPS_MAX_CLIENTS:
        return False, f"{len(workloads)} clients > MPS's maximum of {MPS_MAX_CLIENTS} per GPU"
    return True, f"fits: {mem:g} of {vram_gib:g} GiB, {util:g} % of the compute"


def plan_share(workloads: Sequence[Workload], gpu: str, mode: str = "time-slicing",
               catalog: Catalog | None = None, *, latency_alone: bool = True,
               namespace: str = "gpu-operator") -> SharePlan:
    """Place ``workloads`` on as few cards of ``gpu`` as the sharing ``mode`` allows (first-fit decreasing).

    latency_alone : under time-slicing a latency-sensitive workload waits for its turn, so it gets a card
        of its own (True, default); MPS and MIG place it with others (MPS with a warning: no isolation).
    """
    catalog = catalog or Catalog()
    if mode not in SHARE_MODES:
        raise UnknownNameError("sharing mode", mode, SHARE_MODES)
    if not workloads:
        raise GpucostError("no workload given (--workload MEM_GIB:UTIL_PCT)")
    for i, w in enumerate(workloads, start=1):
        w.check(f"workload {i}")
    row = catalog.gpu(gpu)
    gid = catalog.gpu_id(gpu)
    vram = float(row["vram_gib"])
    names = [w.name or f"w{i}" for i, w in enumerate(workloads, start=1)]
    for i, w in enumerate(workloads, start=1):
        if w.mem_gib > vram + 1e-9:
            raise GpucostError(f"workload {i} ({names[i - 1]}) needs {w.mem_gib:g} GiB, more than one "
                               f"{row['name']} has ({vram:g} GiB): split it over cards (tensor parallel) first")
    if mode == "mig":
        return _plan_mig(workloads, names, gid, row, catalog, namespace)
    return _plan_shared_memory(workloads, names, gid, row, mode, latency_alone, namespace)


def _plan_shared_memory(workloads, names, gid, row, mode, latency_alone, namespace) -> SharePlan:
    vram = float(row["vram_gib"])
    order = sorted(range(len(workloads)), key=lambda i: (-workloads[i].mem_gib, -workloads[i].util_pct, i))
    card_mem: list[float] = []
    card_util: list[float] = []
    card_items: list[list[int]] = []
    card_alone: list[bool] = []
    max_clients = MPS_MAX_CLIENTS if mode == "mps" else 10**9
    for i in order:
        w = workloads[i]
        alone = latency_alone and mode == "time-slicing" and w.latency_sensitive
        placed = False
        if not alone:
            for c in range(len(card_mem)):
                if card_alone[c] or len(card_items[c]) >= max_clients:
                    continue
                if card_mem[c] + w.mem_gib <= vram + 1e-9 and card_util[c] + w.util_pct <= 100 + 1e-9:
                    card_mem[c] += w.mem_gib
                    card_util[c] += w.util_pct
                    card_items[c].append(i)
                    placed = True
                    break
        if not placed:
            card_mem.append(w.mem_gib)
            card_util.append(w.util_pct)
            card_items.append([i])
            card_alone.append(alone)
    placements = []
    cards = []
    for c, items in enumerate(card_items):
        for i in sorted(items):
            w = workloads[i]
            placements.append(Placement(i + 1, names[i], c, w.mem_gib, w.util_pct, w.latency_sensitive))
        cards.append(CardLoad(c, tuple(i + 1 for i in sorted(items)), card_mem[c], card_util[c]))
    placements.sort(key=lambda p: p.workload)
    warnings, notes = [], []
    n = len(workloads)
    ok, why = fit_together(workloads, vram, mode)
    if not ok and n > 1:
        notes.append(f"not all {n} workloads on one {row['name']}: {why}")
    if mode == "time-slicing":
        if latency_alone and any(w.latency_sensitive for w in workloads):
            notes.append("latency-sensitive workloads get a card of their own: time-slicing runs workloads "
                         "in turns, so a request can wait for the other workloads' time slices")
        notes.append("time-slicing gives no memory or fault isolation: one workload that runs out of memory "
                     "or crashes the context affects the others on its card")
    else:
        notes.append("MPS runs the clients at once on the SMs; no fault isolation (a fatal error in one "
                     "client affects all clients of the card)")
        for card in cards:
            lat = [wid for wid in card.workloads if workloads[wid - 1].latency_sensitive]
            if lat and len(card.workloads) > 1:
                warnings.append(f"card {card.index}: latency-sensitive {', '.join(names[w - 1] for w in lat)} "
                                "shares the SMs and memory bandwidth under MPS with no isolation; not advisable "
                                "for a latency target (use MIG or a card of its own)")
    replicas = max(len(c.workloads) for c in cards)
    configs = []
    if replicas >= 2:
        configs.append(("k8s_configmap", k8s_sharing_configmap(replicas, mode, namespace=namespace)))
        if mode == "mps":
            notes.append(f"the device plugin's MPS sharing gives each of the {replicas} replicas 1/{replicas} "
                         f"of the card's memory ({vram / replicas:.1f} GiB)")
            big = [names[i] for i, w in enumerate(workloads) if w.mem_gib > vram / replicas + 1e-9]
            if big:
                warnings.append(f"{', '.join(big)} need more than {vram / replicas:.1f} GiB, the per-replica "
                                "memory limit of the device plugin's MPS sharing: run MPS outside Kubernetes "
                                "or give them cards of their own")
    else:
        notes.append("no card runs more than one workload: no sharing config is needed")
    util_total = sum(w.util_pct for w in workloads)
    return SharePlan(gid, str(row["name"]), vram, mode, len(cards), n, tuple(placements), tuple(cards),
                     util_total / len(cards), util_total / n, tuple(warnings), tuple(notes), tuple(configs))


def _plan_mig(workloads, names, gid, row, catalog, namespace) -> SharePlan:
    profiles = mig_profiles(gid, catalog)
    chosen: list[MigProfile] = []
    for i, w in enumerate(workloads):
        p = choose_mig_profile(w, profiles)
        if p is None:
            big = profiles[-1]
            raise GpucostError(f"workload {i + 1} ({names[i]}: {w.mem_gib:g} GiB, {w.util_pct:g} %) fits no MIG "
                               f"profile of {row['name']}; the largest is {big.profile} ({big.memory_gib:.1f} GiB, "
                               f"{big.compute_slices}/{big.compute_slices_total} of the compute): use a whole card")
        chosen.append(p)
    order = sorted(range(len(workloads)), key=lambda i: (-chosen[i].memory_slices, -chosen[i].compute_slices, i))
    card_items: list[list[int]] = []
    for i in order:
        for items in card_items:
            cand = tuple(sorted([chosen[j] for j in items] + [chosen[i]], key=_profile_key))
            if mig_layout(cand) is not None:
                items.append(i)
                break
        else:
            card_items.append([i])
    placements, cards = [], []
    for c, items in enumerate(card_items):
        items_sorted = sorted(items, key=lambda j: _profile_key(chosen[j]))
        starts = mig_layout(tuple(chosen[j] for j in items_sorted))
        assert starts is not None
        inst = []
        for j, s in zip(items_sorted, starts, strict=True):
            w = workloads[j]
            placements.append(Placement(j + 1, names[j], c, w.mem_gib, w.util_pct, w.latency_sensitive,
                                        chosen[j].profile, s))
            inst.append((chosen[j].profile, s))
        cards.append(CardLoad(c, tuple(sorted(j + 1 for j in items)),
                              sum(workloads[j].mem_gib for j in items), sum(workloads[j].util_pct for j in items),
                              tuple(sorted(inst, key=lambda x: x[1]))))
    placements.sort(key=lambda p: p.workload)
    notes = ["MIG partitions memory and SMs: each instance is isolated (memory, cache, faults), so "
             "latency-sensitive workloads may share the card",
             "profile memory is the GB in its name (nvidia-smi reports slightly more usable memory)",
             "mig-parted device indices are per node; a plan of more cards than a node holds spreads over nodes",
             "the profile tables are NVIDIA's MIG User Guide's (data/mig_profiles.csv, with sources)"]
    if len({tuple(sorted(c.instances)) for c in cards}) > 1 or any(len(set(p for p, _ in c.instances)) > 1
                                                                   for c in cards):
        notes.append("different profiles on a node: deploy the device plugin with migStrategy 'mixed'")
    parted = mig_parted_config(cards)
    configs = (("mig_parted", parted), ("k8s_configmap", mig_configmap(parted, namespace=namespace)))
    util_total = sum(w.util_pct for w in workloads)
    n = len(workloads)
    return SharePlan(gid, str(row["name"]), float(row["vram_gib"]), "mig", len(cards), n, tuple(placements),
                     tuple(cards), util_total / len(cards), util_total / n, (), tuple(notes), configs)


def _profile_key(p: MigProfile):
    return (-p.memory_slices, -p.compute_slices, p.profile)


# -- configs -----------------------------------------------------------------------------------------

def device_plugin_config(replicas: int, mode: str = "time-slicing", *, rename_by_default: bool = False,
                         fail_requests_greater_than_one: bool = True) -> dict:
    """The NVIDIA k8s-device-plugin config (``version: v1``) sharing each GPU among ``replicas``.

    Structure from the device plugin README ("Shared Access to GPUs", DEVICE_PLUGIN_DOC):
    ``sharing.timeSlicing`` (renameByDefault, failRequestsGreaterThanOne, resources[name, replicas]) or
    ``sharing.mps`` (renameByDefault, resources[name, replicas]).
    """
    if replicas < 1:
        raise GpucostError(f"replicas must be >= 1, not {replicas}")
    res = [{"name": GPU_RESOURCE, "replicas": int(replicas)}]
    if mode == "time-slicing":
        sharing = {"timeSlicing": {"renameByDefault": rename_by_default,
                                   "failRequestsGreaterThanOne": fail_requests_greater_than_one,
                                   "resources": res}}
    elif mode == "mps":
        sharing = {"mps": {"renameByDefault": rename_by_default, "resources": res}}
    else:
        raise UnknownNameError("device-plugin sharing mode", mode, ("time-slicing", "mps"))
    return {"version": "v1", "flags": {"migStrategy": "none"}, "sharing": sharing}


def _yaml(obj) -> str:
    return yaml.safe_dump(obj, sort_keys=False, default_flow_style=False)


def k8s_sharing_configmap(replicas: int, mode: str = "time-slicing", *, name: str | None = None,
                          namespace: str = "gpu-operator", key: str = "any") -> str:
    """A Kubernetes ConfigMap (YAML) holding the device-plugin config under ``data.<key>``.

    Apply it and point the GPU Operator at it (GPU_OPERATOR_DOC):
    ``kubectl patch clusterpolicies.nvidia.com/cluster-policy --type merge -p
    '{"spec": {"devicePlugin": {"config": {"name": NAME, "default": "any"}}}}'``.
    """
    name = name or ("gpucost-time-slicing" if mode == "time-slicing" else "gpucost-mps")
    cm = {"apiVersion": "v1", "kind": "ConfigMap",
          "metadata": {"name": name, "namespace": namespace,
                       "labels": {"app.kubernetes.io/managed-by": "gpucost"}},
          "data": {key: _yaml(device_plugin_config(replicas, mode))}}
    return _yaml(cm)


def mig_parted_config(cards: Sequence[CardLoad], *, config_name: str = "gpucost-plan") -> str:
    """An NVIDIA mig-parted config (``version: v1``, ``mig-configs``) creating each card's instances.

    Cards with the same instances share one entry; when all cards are alike, ``devices: all``.
    """
    groups: dict[tuple, list[int]] = {}
    for c in cards:
        counts: dict[str, int] = {}
        for p, _ in c.instances:
            counts[p] = counts.get(p, 0) + 1
        groups.setdefault(tuple(sorted(counts.items())), []).append(c.index)
    entries = []
    for counts, devs in groups.items():
        entries.append({"devices": "all" if len(groups) == 1 else devs, "mig-enabled": True,
                        "mig-devices": dict(counts)})
    return _yaml({"version": "v1", "mig-configs": {"all-disabled": [{"devices": "all", "mig-enabled": False}],
                                                   config_name: entries}})


def mig_configmap(parted_yaml: str, *, name: str = "gpucost-mig-config", namespace: str = "gpu-operator") -> str:
    """The mig-parted config in a ConfigMap (key ``config.yaml``), as the GPU Operator's MIG manager reads it."""
    cm = {"apiVersion": "v1", "kind": "ConfigMap",
          "metadata": {"name": name, "namespace": namespace,
                       "labels": {"app.kubernetes.io/managed-by": "gpucost"}},
          "data": {"config.yaml": parted_yaml}}
    return _yaml(cm)


# ==================================================================================================
# 2. Multi-GPU training
# ==================================================================================================

#: bytes per parameter of mixed-precision Adam (ZeRO paper, Rajbhandari et al. 2020, section 3.1,
#: https://arxiv.org/abs/1910.02054): fp16/bf16 weights 2, gradients 2, optimizer states K = 12
#: (fp32 master weights 4 + momentum 4 + variance 4)
BYTES_WEIGHTS = 2
BYTES_GRADS = 2
ADAM_K = 12
#: activation bytes per token per layer without recomputation = hidden x (34 + 5 a s / h) (Korthikanti
#: et al. 2022, "Reducing Activation Recomputation in Large Transformer Models", eq. 1,
#: https://arxiv.org/abs/2205.05198); with FlashAttention the 5as/h attention-score term is not stored
ACT_BYTES_PER_HIDDEN = 34
#: with full recomputation only each layer's input (2 bytes x hidden per token) is kept
ACT_CKPT_BYTES_PER_HIDDEN = 2
#: training FLOPs per parameter per token: forward 2 + backward 4 (Kaplan et al. 2020, C = 6 N D)
FLOPS_PER_PARAM_TOKEN = 6
TRAIN_MODES = ("full", "lora", "qlora")
OFFLOADS = ("none", "cpu", "nvme")
DEFAULT_NVME_PATH = "/local_nvme"  # the path in DeepSpeed's config-json examples


@dataclass(frozen=True)
class TrainSetup:
    """What is trained, on what. params are counts (not billions)."""

    model_id: str
    params: float
    trainable_params: float
    base_bytes_per_param: float  # frozen or trained weights in GPU memory [bytes/param]
    num_layers: int
    hidden_size: int
    num_heads: int
    vocab_size: int
    seq_len: int
    micro_batch: int
    mode: str
    quant: str
    precision: str  # bf16 | fp16
    gpu_id: str
    gpu_name: str
    vram_gib: float
    peak_tflops: float
    nvlink: bool


@dataclass(frozen=True)
class Strategy:
    name: str
    zero_stage: int
    offload: str = "none"  # optimizer (and, stage 3, parameter) offload: none | cpu | nvme
    tp: int = 1
    pp: int = 1

    @property
    def model_parallel(self) -> int:
        return self.tp * self.pp


STRATEGIES = (
    Strategy("dp", 0), Strategy("zero1", 1), Strategy("zero2", 2), Strategy("zero3", 3),
    Strategy("zero2+cpu", 2, "cpu"), Strategy("zero3+cpu", 3, "cpu"), Strategy("zero3+nvme", 3, "nvme"),
)


@dataclass(frozen=True)
class MemoryEstimate:
    """Per-GPU memory [GiB] by component, and what lands in CPU RAM / on NVMe [GiB] per GPU."""

    weights: float
    gradients: float
    optimizer: float
    activations: float
    overhead: float
    cpu_gib: float = 0.0
    nvme_gib: float = 0.0

    @property
    def total(self) -> float:
        return self.weights + self.gradients + self.optimizer + self.activations + self.overhead

    def to_dict(self) -> dict:
        d = asdict(self)
        d["total"] = self.total
        return {k: round(v, 3) for k, v in d.items()}


MemoryFn = Callable[[TrainSetup, Strategy, int], MemoryEstimate]
SpeedFn = Callable[[TrainSetup, Strategy, int], float]


def zero_memory(setup: TrainSetup, strategy: Strategy, n_gpus: int) -> MemoryEstimate:
    """Per-GPU training memory by the ZeRO paper's model-state formulas plus activations.

    Model states per GPU with Ψ parameters per model-parallel rank and N_d data-parallel ranks
    (ZeRO paper, fig. 1): stage 0: (2+2+K)Ψ; stage 1: 2Ψ + 2Ψ + KΨ/N_d; stage 2: 2Ψ + (2+K)Ψ/N_d;
    stage 3: (2+2+K)Ψ/N_d, with K = 12. LoRA/QLoRA: the frozen base weights (2 bytes, or the quantized
    bits) plus these states for the trainable parameters only; stage 3 also shards the base weights.
    Offload moves the optimizer states (and, in stage 3, the parameters) to CPU RAM or NVMe.
    Activations: full recomputation (checkpointing) with FlashAttention.
    """
    mp = strategy.model_parallel
    nd = n_gpus // mp
    if nd < 1 or n_gpus % mp:
        raise GpucostError(f"{n_gpus} GPUs do not split into tensor x pipeline parallel {strategy.tp} x {strategy.pp}")
    gib = 2**30
    psi_t = setup.trainable_params / mp
    psi_b = setup.params / mp
    s = strategy.zero_stage
    full = setup.mode == "full"
    # weights: the model's (full) or the frozen base (lora/qlora), in GPU memory
    weights = psi_b * setup.base_bytes_per_param
    if s == 3:
        weights /= nd
    if not full:  # the trainable adapter's own weights
        weights += psi_t * BYTES_WEIGHTS / (nd if s == 3 else 1)
    grads = psi_t * BYTES_GRADS / (nd if s >= 2 else 1)
    opt = psi_t * ADAM_K / (nd if s >= 1 else 1)
    cpu = nvme = 0.0
    if strategy.offload != "none":
        moved = opt
        opt = 0.0
        if s == 3:
            moved += weights
            # params stream back layer by layer: keep about two layers' worth on the GPU (prefetch)
            weights = 2 * psi_b * setup.base_bytes_per_param / max(setup.num_layers // strategy.pp, 1)
        if strategy.offload == "cpu":
            cpu = moved
        else:
            nvme = moved
    layers = setup.num_layers / strategy.pp
    tokens = setup.seq_len * setup.micro_batch
    act = (layers * tokens * setup.hidden_size * ACT_CKPT_BYTES_PER_HIDDEN
           + tokens * setup.hidden_size * ACT_BYTES_PER_HIDDEN) / strategy.tp
    logits = tokens * setup.vocab_size * 4 / strategy.tp  # fp32 logits of the last stage
    return MemoryEstimate(weights / gib, grads / gib, opt / gib, (act + logits) / gib, 0.0, cpu / gib, nvme / gib)


def default_mfu(catalog: Catalog) -> tuple[float, str]:
    """The median published MFU in benchmarks.csv (category mfu) and where it comes from."""
    try:
        b = catalog.table("benchmarks")
        rows = b[b["category"] == "mfu"]
    except GpucostError:
        rows = pd.DataFrame()
    if rows.empty:
        raise GpucostError("no MFU measurement in benchmarks.csv: cannot estimate training speed")
    med = float(np.median(rows["measured"].astype(float)))
    return med, f"median of {len(rows)} published MFU figures in benchmarks.csv ({med:.3f})"


def linear_speed(mfu: float) -> SpeedFn:
    """tokens/s = GPUs x dense peak x MFU / (6 x parameters) — the issue's rule (Kaplan et al.'s 6ND)."""

    def fn(setup: TrainSetup, strategy: Strategy, n_gpus: int) -> float:
        return n_gpus * setup.peak_tflops * 1e12 * mfu / (FLOPS_PER_PARAM_TOKEN * setup.params)

    return fn


@dataclass(frozen=True)
class TrainOption:
    strategy: str
    zero_stage: int
    offload: str
    tp: int
    pp: int
    min_gpus: int | None
    per_gpu_gib: float | None
    memory: dict | None
    tokens_per_s: float | None
    time_to_train_hours: float | None
    cost: float | None
    reason: str = ""

    def to_dict(self) -> dict:
        return _clean(asdict(self))


@dataclass(frozen=True)
class TrainPlan:
    model: str
    gpu: str
    gpu_name: str
    mode: str
    quant: str
    tokens: float
    currency: str
    price_per_gpu_hour: float | None
    price_source: str
    options: tuple[TrainOption, ...]
    chosen: TrainOption | None
    deepspeed_config: dict | None
    engines: tuple[str, ...]
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        c = self.chosen
        return _clean({
            "min_gpus": c.min_gpus if c else None, "zero_stage": c.zero_stage if c else None,
            "offload": c.offload if c else None, "tp": c.tp if c else None, "pp": c.pp if c else None,
            "strategy": c.strategy if c else None,
            "tokens_per_s": c.tokens_per_s if c else None,
            "time_to_train_hours": c.time_to_train_hours if c else None,
            "cost": c.cost if c else None, "currency": self.currency,
            "per_gpu_gib": c.per_gpu_gib if c else None,
            "model": self.model, "gpu": self.gpu, "gpu_name": self.gpu_name, "mode": self.mode,
            "quant": self.quant, "tokens": self.tokens, "price_per_gpu_hour": self.price_per_gpu_hour,
            "price_source": self.price_source, "options": [o.to_dict() for o in self.options],
            "deepspeed_config": self.deepspeed_config, "engines": list(self.engines), "notes": list(self.notes),
        })


def _lora_trainable(m: pd.Series, rank: int) -> float:
    """Trainable parameters of LoRA rank ``rank`` on q, k, v, o and the MLP projections of every layer."""
    h = int(m["hidden_size"])
    layers = int(m["num_layers"])
    heads = int(m["num_attention_heads"])
    kv = int(m["num_kv_heads"]) if m.get("num_kv_heads") == m.get("num_kv_heads") and m.get("num_kv_heads") else heads
    hd = int(m["head_dim"]) if m.get("head_dim") == m.get("head_dim") and m.get("head_dim") else h // heads
    inter = m.get("intermediate_size")
    inter = int(inter) if inter == inter and inter else 4 * h
    mats = [(h, heads * hd), (h, kv * hd), (h, kv * hd), (heads * hd, h), (h, inter), (h, inter), (inter, h)]
    return float(layers * sum(rank * (a + b) for a, b in mats))


def train_setup(model: str, gpu: str, catalog: Catalog | None = None, *, mode: str = "full", quant: str | None = None,
                seq_len: int = 4096, micro_batch: int = 1, lora_rank: int = 16) -> TrainSetup:
    catalog = catalog or Catalog()
    if mode not in TRAIN_MODES:
        raise UnknownNameError("training mode", mode, TRAIN_MODES)
    models = catalog.table("models")
    idx = {str(r).lower(): str(r) for r in models["id"]}
    for rid, al in zip(models["id"], models["aliases"].fillna(""), strict=True):
        for a in str(al).split(";"):
            if a.strip():
                idx.setdefault(a.strip().lower(), rid)
    mid = idx.get(str(model).strip().lower())
    if mid is None:
        raise UnknownNameError("model", model, list(models["id"]))
    m = models.set_index("id").loc[mid]
    if m["kind"] != "llm" or not (m["num_layers"] == m["num_layers"]) or not (m["hidden_size"] == m["hidden_size"]):
        raise GpucostError(f"model '{mid}' lacks the transformer shape (layers, hidden size) training needs")
    row = catalog.gpu(gpu)
    gid = catalog.gpu_id(gpu)
    cc = row.get("compute_capability")
    precision = "bf16" if (cc == cc and cc is not None and cc >= 8.0) or row["vendor"] != "NVIDIA" else "fp16"
    peak = row["bf16_tflops"] if precision == "bf16" else row["fp16_tflops"]
    if not (peak == peak) or peak is None:
        peak = row["fp16_tflops"]
    if not (peak == peak) or peak is None:
        raise GpucostError(f"no dense BF16/FP16 throughput for {row['name']} in gpus.csv")
    quants = catalog.table("quant_formats").set_index("id")
    if quant is None:
        quant = "bnb-nf4-dq" if mode == "qlora" else precision
    if quant not in quants.index:
        raise UnknownNameError("quantization format", quant, list(quants.index))
    bits = float(quants.loc[quant, "bits_per_weight"])
    if mode == "full" and bits < 16:
        raise GpucostError(f"full fine-tuning trains {precision} weights; '{quant}' is for QLoRA or inference")
    params = float(m["params_total_b"]) * 1e9
    trainable = params if mode == "full" else _lora_trainable(m, lora_rank)
    base_bytes = BYTES_WEIGHTS if mode == "full" else bits / 8
    for name, v in (("seq_len", seq_len), ("micro_batch", micro_batch), ("lora_rank", lora_rank)):
        if not (isinstance(v, (int, np.integer)) and v >= 1):
            raise GpucostError(f"{name} must be a whole number >= 1, not {v}")
    nv = row.get("nvlink_gbps")
    return TrainSetup(mid, params, trainable, base_bytes, int(m["num_layers"]), int(m["hidden_size"]),
                      int(m["num_attention_heads"]), int(m["vocab_size"]) if m["vocab_size"] == m["vocab_size"] else 0,
                      int(seq_len), int(micro_batch), mode, quant, precision, gid, str(row["name"]),
                      float(row["vram_gib"]), float(peak), bool(nv == nv and nv))


def min_gpus_for(setup: TrainSetup, strategy: Strategy, memory_fn: MemoryFn, max_gpus: int,
                 reserve_gib: float = 0.0) -> tuple[int | None, MemoryEstimate | None]:
    """The fewest GPUs (a multiple of tp x pp, at most ``max_gpus``) whose per-GPU memory fits the card.

    Per-GPU memory does not grow with the GPU count, so the count is found by doubling, then bisection.
    """
    mp = strategy.model_parallel
    if mp > max_gpus:
        return None, None

    def fits(k: int) -> tuple[bool, MemoryEstimate]:
        est = memory_fn(setup, strategy, k * mp)
        return est.total + reserve_gib <= setup.vram_gib, est

    ok, est = fits(1)
    if ok:
        return mp, est
    if strategy.zero_stage == 0 and mp == 1:
        return None, est  # plain data parallel: every GPU holds everything
    lo, hi, top = 1, 2, max_gpus // mp
    last = est
    while True:
        if hi > top:
            hi = top
            ok, e = fits(hi)
            if not ok:
                return None, e
            break
        ok, e = fits(hi)
        last = e
        if ok:
            break
        lo, hi = hi, hi * 2
    best = (hi, e)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        ok, e = fits(mid)
        if ok:
            hi, best = mid, (mid, e)
        else:
            lo, last = mid, e
    del last
    return best[0] * mp, best[1]


def tp_pp_strategy(setup: TrainSetup, memory_fn: MemoryFn, max_gpus: int, reserve_gib: float = 0.0):
    """The smallest tensor x pipeline parallel layout (tp <= 8 dividing the heads) with ZeRO-1 over the rest."""
    best = None
    for tp in (2, 4, 8):
        if setup.num_heads % tp:
            continue
        for pp in (1, 2, 4, 8, 16, 32):
            if pp > setup.num_layers:
                break
            st = Strategy(f"tp{tp}" + (f"+pp{pp}" if pp > 1 else "") + "+zero1", 1, "none", tp, pp)
            n, est = min_gpus_for(setup, st, memory_fn, max_gpus, reserve_gib)
            if n is not None and (best is None or n < best[1]):
                best = (st, n, est)
    return best


def deepspeed_config(strategy: Strategy, n_gpus: int, *, micro_batch: int = 1, grad_accum: int = 1,
                     precision: str = "bf16", nvme_path: str = DEFAULT_NVME_PATH) -> dict:
    """A DeepSpeed config (DEEPSPEED_DOC) for ``strategy`` on ``n_gpus``.

    ``train_batch_size`` = micro batch x gradient accumulation x data-parallel ranks (DeepSpeed asserts
    exactly this in ``DeepSpeedConfig._batch_assertion``).
    """
    dp = n_gpus // strategy.model_parallel
    zero: dict = {"stage": strategy.zero_stage}
    if strategy.zero_stage >= 1:
        zero.update({"overlap_comm": True, "contiguous_gradients": True})
    if strategy.offload != "none":
        off = {"device": strategy.offload, "pin_memory": True}
        if strategy.offload == "nvme":
            off["nvme_path"] = nvme_path
        zero["offload_optimizer"] = dict(off)
        if strategy.zero_stage == 3:
            zero["offload_param"] = dict(off)
    cfg = {"train_batch_size": micro_batch * grad_accum * dp, "train_micro_batch_size_per_gpu": micro_batch,
           "gradient_accumulation_steps": grad_accum,
           "bf16": {"enabled": precision == "bf16"}, "fp16": {"enabled": precision == "fp16"},
           "zero_optimization": zero}
    if strategy.tp > 1:
        cfg["tensor_parallel"] = {"autotp_size": strategy.tp}
    return cfg


def engine_memory_fn(catalog: Catalog, setup: TrainSetup, *, lora_rank: int = 16) -> MemoryFn:
    """The fit engine (:func:`gpucost.memory.estimate`) as a MemoryFn for data-parallel / ZeRO strategies.

    The fit engine models ZeRO stages and offload over N data-parallel GPUs, not tensor or pipeline
    parallelism: for a tp x pp layout its estimate over the N / (tp x pp) data-parallel ranks is taken with
    the model states divided by tp x pp (each rank holds that share of the layers' weights) and the
    activations by tp (Megatron-style tensor parallel splits them; the first pipeline stage keeps pp
    micro-batches in flight, which offsets its 1/pp share of the layers).
    """
    from gpucost import memory as mem_engine
    from gpucost.models import catalog_spec
    from gpucost.quant import get_format

    spec = catalog_spec(setup.model_id, catalog)
    fmt = get_format(setup.quant, catalog)

    def fn(st: TrainSetup, strategy: Strategy, n_gpus: int) -> MemoryEstimate:
        mp = strategy.model_parallel
        if n_gpus % mp:
            raise GpucostError(f"{n_gpus} GPUs do not split into tensor x pipeline parallel {strategy.tp} x {strategy.pp}")
        e = mem_engine.estimate(spec, fmt, mem_engine.Setup(
            mode=st.mode, context=st.seq_len, batch=st.micro_batch, gpus=int(n_gpus // mp), zero=strategy.zero_stage,
            offload=strategy.offload, lora_rank=lora_rank))
        b = e.per_gpu
        return MemoryEstimate(b.weights / mp, b.gradients / mp, b.optimizer / mp, (b.activations + b.kv_cache) / strategy.tp,
                              b.overhead, e.cpu_gib / mp, e.nvme_gib / mp)

    return fn


def engine_speed_fn(catalog: Catalog, setup: TrainSetup) -> SpeedFn:
    """The speed engine (:func:`gpucost.speed.training_time`): 6N (full) / 4N (LoRA) FLOP per token at the
    calibrated training MFU, plus the gradient all-reduce the backward pass cannot hide."""
    from gpucost import speed as speed_engine
    from gpucost.models import catalog_spec

    spec = catalog_spec(setup.model_id, catalog)
    gpu_row = catalog.gpus.set_index("id").loc[setup.gpu_id].to_dict()
    gpu_row["id"] = setup.gpu_id
    col = "bf16_tflops" if setup.precision == "bf16" else "fp16_tflops"

    def fn(st: TrainSetup, strategy: Strategy, n_gpus: int) -> float:
        est = speed_engine.training_time(spec, gpu_row, mode=st.mode, tokens=1e9, gpus=int(n_gpus),
                                         seq=st.seq_len, micro_batch=st.micro_batch, zero=strategy.zero_stage,
                                         precision_col=col, catalog=catalog)
        return float(est.tokens_per_s)

    return fn


def cloud_price(catalog: Catalog, gpu_id: str, currency: str) -> tuple[float | None, str]:
    """The lowest on-demand cloud price per GPU-hour in ``currency`` and its offer (cards.price_summary)."""
    from gpucost.cards import price_summary

    ps = price_summary(catalog, currency).set_index("id")
    if gpu_id not in ps.index or not (ps.loc[gpu_id, "cloud_hourly"] == ps.loc[gpu_id, "cloud_hourly"]):
        return None, "no cloud offer in the catalog"
    r = ps.loc[gpu_id]
    return float(r["cloud_hourly"]), f"{r['cloud_offer']} ({r['cloud_source']}, {r['cloud_as_of']})"


def plan_train(model: str, gpu: str, catalog: Catalog | None = None, *, mode: str = "full",
               quant: str | None = None, tokens: float = 1e9, seq_len: int = 4096, micro_batch: int = 1,
               grad_accum: int = 1, lora_rank: int = 16, max_gpus: int = 1024, currency: str = "USD",
               strategy: str | None = None, reserve_gib: float = 0.0, nvme_path: str = DEFAULT_NVME_PATH,
               memory_fn: MemoryFn | None = None, speed_fn: SpeedFn | None = None,
               price_per_gpu_hour: float | None = None) -> TrainPlan:
    """For each strategy, the fewest GPUs of ``gpu`` that hold the run; throughput, time and cost.

    The chosen option is ``strategy`` when given, else the fewest GPUs without offload (offload is slower:
    optimizer steps run on the CPU and states cross PCIe), else the fewest with offload. ``memory_fn`` /
    ``speed_fn`` default to the fit and speed engines when installed, else to :func:`zero_memory` and
    :func:`linear_speed` with the catalog's median published MFU.
    """
    catalog = catalog or Catalog()
    if not (tokens > 0) or math.isinf(tokens):
        raise GpucostError(f"tokens must be a number > 0, not {tokens}")
    if not (isinstance(max_gpus, (int, np.integer)) and max_gpus >= 1):
        raise GpucostError(f"max GPUs must be a whole number >= 1, not {max_gpus}")
    setup = train_setup(model, gpu, catalog, mode=mode, quant=quant, seq_len=seq_len, micro_batch=micro_batch,
                        lora_rank=lora_rank)
    engines, notes = [], []
    if memory_fn is None:
        try:
            memory_fn = engine_memory_fn(catalog, setup, lora_rank=lora_rank)
            engines.append("memory: gpucost.memory.estimate (fit engine; tensor/pipeline layouts: its "
                           "data-parallel estimate with model states / (tp x pp), activations / tp)")
        except (ImportError, AttributeError, GpucostError, KeyError):
            memory_fn = zero_memory
            engines.append("memory: gpucost.plan.zero_memory (ZeRO paper model states + activations)")
            notes.append("memory: ZeRO paper model states (2+2+12 bytes/param) plus checkpointed activations; "
                         "CUDA context and allocator fragmentation are not included (add them with reserve_gib)")
    else:
        engines.append("memory: caller's memory_fn")
    if speed_fn is None:
        try:
            speed_fn = engine_speed_fn(catalog, setup)
            engines.append("speed: gpucost.speed.training_time (speed engine)")
        except (ImportError, AttributeError, GpucostError, KeyError):
            mfu, why = default_mfu(catalog)
            speed_fn = linear_speed(mfu)
            engines.append(f"speed: gpucost.plan.linear_speed (6 x params FLOPs/token, MFU {why})")
        notes.append("speed: offload moves the optimizer step to the CPU (and NVMe traffic); its slowdown is "
                     "not modelled, so offload options are slower than shown")
    else:
        engines.append("speed: caller's speed_fn")
    if price_per_gpu_hour is None:
        price, psrc = cloud_price(catalog, setup.gpu_id, currency)
    else:
        price, psrc = float(price_per_gpu_hour), "given"
    if not setup.nvlink:
        notes.append(f"{setup.gpu_name} has no NVLink-class link: ZeRO-3 and tensor parallel traffic goes over "
                     "PCIe, so real scaling is below the linear estimate")
    cands = list(STRATEGIES)
    tp_best = tp_pp_strategy(setup, memory_fn, max_gpus, reserve_gib)
    options = []
    for st in cands + ([tp_best[0]] if tp_best else []):
        try:
            n, est = min_gpus_for(setup, st, memory_fn, max_gpus, reserve_gib)
        except GpucostError as exc:
            options.append(TrainOption(st.name, st.zero_stage, st.offload, st.tp, st.pp, None, None, None, None,
                                       None, None, str(exc)))
            continue
        if n is None:
            tot = est.total if est else None
            options.append(TrainOption(st.name, st.zero_stage, st.offload, st.tp, st.pp, None, tot,
                                       est.to_dict() if est else None, None, None, None,
                                       f"does not fit on up to {max_gpus} GPUs"
                                       + (f" ({tot:.1f} GiB per GPU > {setup.vram_gib:g} GiB)" if tot else "")))
            continue
        tps = float(speed_fn(setup, st, n))
        hours = tokens / tps / 3600 if tps > 0 else None
        cost = price * n * hours if (price is not None and hours is not None) else None
        options.append(TrainOption(st.name, st.zero_stage, st.offload, st.tp, st.pp, n, est.total, est.to_dict(),
                                   tps, hours, cost))
    chosen = None
    if strategy:
        match = [o for o in options if o.strategy == strategy]
        if not match:
            raise UnknownNameError("strategy", strategy, [o.strategy for o in options])
        chosen = match[0]
        if chosen.min_gpus is None:
            raise GpucostError(f"strategy {strategy} does not fit: {chosen.reason}")
    else:
        fits = [o for o in options if o.min_gpus is not None]
        plain = [o for o in fits if o.offload == "none"]
        pool = plain or fits
        if pool:
            chosen = min(pool, key=lambda o: (o.min_gpus, o.tp * o.pp, o.zero_stage))
    ds = None
    if chosen is not None:
        st = next(s for s in cands + ([tp_best[0]] if tp_best else []) if s.name == chosen.strategy)
        ds = deepspeed_config(st, chosen.min_gpus, micro_batch=micro_batch, grad_accum=grad_accum,
                              precision=setup.precision, nvme_path=nvme_path)
        if st.pp > 1:
            notes.append(f"pipeline parallel ({st.pp} stages) is set in code (deepspeed.pipe.PipelineModule"
                         f"(num_stages={st.pp})), not in the config")
    else:
        notes.append(f"no strategy fits {setup.model_id} on up to {max_gpus} x {setup.gpu_name}")
    return TrainPlan(setup.model_id, setup.gpu_id, setup.gpu_name, mode, setup.quant, float(tokens),
                     currency.upper(), price, psrc, tuple(options), chosen, ds, tuple(engines), tuple(notes))


# ==================================================================================================
# 3. Autoscaling and commitments
# ==================================================================================================

#: AWS Spot Instance Advisor's interruption-frequency buckets ("the rate at which Spot has reclaimed capacity
#: during the trailing month"); their values (fraction of instances per month) are rows
#: ``spot_interruption_per_month`` of data/tco_defaults.csv, with sources
SPOT_BUCKETS = ("<5%", "5-10%", "10-15%", "15-20%", ">20%")
HOURS_PER_MONTH = 730.0  # 8760 / 12
POLICIES = ("fixed", "autoscale", "spot")


def tco_default(catalog: Catalog, key: str, variant: str | None = None) -> tuple[float, str]:
    """A value of data/tco_defaults.csv (key, variant) and its source."""
    t = catalog.table("tco_defaults")
    rows = t[t["key"] == key]
    if variant is not None:
        rows = rows[rows["variant"] == variant]
    if rows.empty:
        raise GpucostError(f"no '{key}'{f' ({variant})' if variant else ''} in tco_defaults.csv")
    r = rows.iloc[0]
    return float(r["value"]), f"{r['source']} ({r['as_of']})"


def spot_bucket_fraction(catalog: Catalog, bucket: str) -> tuple[float, str]:
    """The monthly interrupted fraction of an AWS Spot Advisor bucket (tco_defaults.csv)."""
    if bucket not in SPOT_BUCKETS:
        raise UnknownNameError("spot interruption bucket", bucket, SPOT_BUCKETS)
    return tco_default(catalog, "spot_interruption_per_month", bucket)


def default_commit_discount(catalog: Catalog) -> tuple[float, str]:
    """The 1-year commitment discount of tco_defaults.csv (reserved_discount_1y)."""
    return tco_default(catalog, "reserved_discount_1y")


def spot_hazard_per_hour(monthly_fraction: float) -> float:
    """Interruptions per instance-hour for a monthly interrupted fraction f: -ln(1 - f) / 730."""
    if not (0 <= monthly_fraction < 1):
        raise GpucostError(f"monthly interruption fraction must be in [0, 1), not {monthly_fraction}")
    return -math.log1p(-monthly_fraction) / HOURS_PER_MONTH


@dataclass(frozen=True)
class Trace:
    """Jobs sorted by arrival: arrival [h], gpus [count], run_hours [h] (= gpu_hours / gpus)."""

    arrival: np.ndarray
    gpus: np.ndarray
    run_hours: np.ndarray
    label: str = ""

    def __len__(self) -> int:
        return len(self.arrival)

    @property
    def gpu_hours(self) -> float:
        return float(np.sum(self.gpus * self.run_hours))


SAMPLE_TRACE = "sample"


def sample_trace_path() -> Path:
    return bundled_data_dir() / "traces" / "sample_jobs.csv"


def read_trace(source: str | Path | io.StringIO | pd.DataFrame, *, label: str | None = None) -> Trace:
    """A job trace CSV (columns arrival_hour, gpu_hours, gpus; others ignored) or a demand profile
    (columns hour, gpus: GPUs busy in each hour, read as that many 1-GPU jobs of one hour).

    ``"sample"`` is the bundled data/traces/sample_jobs.csv. A bad cell raises DataError naming the file,
    the row and the column.
    """
    if isinstance(source, pd.DataFrame):
        df = source.astype(str)
        label = label or "trace"
    else:
        if isinstance(source, (str, Path)) and str(source) == SAMPLE_TRACE:
            source = sample_trace_path()
        if isinstance(source, (str, Path)):
            p = Path(source)
            label = label or str(source)
            try:
                text = p.read_text(encoding="utf-8-sig")
            except FileNotFoundError:
                raise DataError("file not found", file=label) from None
            except (OSError, UnicodeDecodeError) as exc:
                raise DataError(f"cannot read the file ({type(exc).__name__})", file=label) from None
        else:
            text = source.getvalue()
            label = label or "trace.csv"
        try:
            df = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False, skipinitialspace=True)
        except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
            raise DataError(f"not a valid CSV file ({str(exc).strip().splitlines()[-1] if str(exc).strip() else 'empty'})",
                            file=label) from None
    df.columns = [str(c).strip() for c in df.columns]
    if {"hour", "gpus"} <= set(df.columns) and "arrival_hour" not in df.columns:
        return _profile_trace(df, label)
    for col in ("arrival_hour", "gpu_hours", "gpus"):
        if col not in df.columns:
            raise DataError(f"missing column '{col}' (a trace needs arrival_hour, gpu_hours, gpus; a demand "
                            f"profile needs hour, gpus); the header has: {', '.join(df.columns)}", file=label)
    if df.empty:
        raise DataError("the trace has a header but no jobs", file=label)
    arr = _num_col(df, "arrival_hour", label, lambda a: a >= 0, "must be a number >= 0")
    gh = _num_col(df, "gpu_hours", label, lambda a: a > 0, "must be a number > 0")
    g = _num_col(df, "gpus", label, lambda a: (a >= 1) & (a == np.floor(a)), "must be a whole number >= 1")
    order = np.argsort(arr, kind="stable")
    return Trace(arr[order], g[order].astype(np.int64), (gh / g)[order], label)


def _num_col(df: pd.DataFrame, col: str, label: str, ok, what: str) -> np.ndarray:
    raw = df[col].str.strip()
    val = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float)
    good = np.isfinite(val)
    good[good] = ok(val[good])
    if not good.all():
        i = int(np.flatnonzero(~good)[0])
        raise DataError(f"'{raw.iloc[i]}' {what}", file=label, row=i + 1, column=col)
    return val


def _profile_trace(df: pd.DataFrame, label: str) -> Trace:
    hours = _num_col(df, "hour", label, lambda a: a >= 0, "must be a number >= 0")
    gpus = _num_col(df, "gpus", label, lambda a: (a >= 0) & (a == np.floor(a)), "must be a whole number >= 0")
    counts = gpus.astype(np.int64)
    arr = np.repeat(hours, counts)
    if arr.size == 0:
        raise DataError("the demand profile asks for no GPU at all", file=label)
    order = np.argsort(arr, kind="stable")
    return Trace(arr[order], np.ones(arr.size, dtype=np.int64), np.ones(arr.size), label)


def demand_profile(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """Unconstrained demand: each job runs from its arrival. Returns (breakpoints [h], GPUs busy).

    ``levels[k]`` GPUs are busy between ``times[k]`` and ``times[k + 1]`` (``len(levels) == len(times) - 1``).
    """
    t = np.concatenate([trace.arrival, trace.arrival + trace.run_hours])
    d = np.concatenate([trace.gpus, -trace.gpus]).astype(np.int64)
    order = np.argsort(t, kind="stable")
    t, d = t[order], d[order]
    cum = np.cumsum(d)
    ut = np.unique(t)
    lev = cum[np.searchsorted(t, ut, side="right") - 1]
    return ut, lev[:-1]


@dataclass(frozen=True)
class FleetResult:
    policy: str
    gpus_max: int
    cost: float
    currency: str
    wait_mean_hours: float
    wait_p95_hours: float
    utilization: float
    gpu_hours_billed: float
    gpu_hours_used: float
    makespan_hours: float
    jobs: int
    interruptions: int = 0
    on_demand_gpu_hours: float = 0.0
    spot_gpu_hours: float = 0.0
    fleet_times: tuple[float, ...] = ()
    fleet_sizes: tuple[int, ...] = ()
    params: dict = field(default_factory=dict)

    def to_dict(self, *, series: bool = False) -> dict:
        d = asdict(self)
        if not series:
            d.pop("fleet_times")
            d.pop("fleet_sizes")
        return _clean(d)


def _quantile(a: np.ndarray, q: float) -> float:
    return float(np.quantile(a, q)) if a.size else 0.0


def simulate_fleet(trace: Trace, policy: str = "fixed", *, max_gpus: int | None = None,
                   price_per_gpu_hour: float = 1.0, spot_price_per_gpu_hour: float | None = None,
                   currency: str = "USD", min_gpus: int = 0, startup_hours: float = 0.05,
                   cooldown_hours: float = 0.25, on_demand_base: int = 0,
                   interruption_rate_per_hour: float | None = None, checkpoint_hours: float = 1.0,
                   seed: int = 0, record_series: bool = False) -> FleetResult:
    """Run ``trace`` through a fleet, event by event (heapq); jobs start first-come first-served, and any
    queued job that fits the free GPUs starts (a large job does not block smaller ones behind it).

    fixed     : ``max_gpus`` GPUs, billed for the whole makespan.
    autoscale : starts at ``min_gpus``; whenever jobs wait, requests GPUs toward running + pending demand
                (at most ``max_gpus``); a requested GPU is billed at once and serves after
                ``startup_hours``; an idle GPU is released after ``cooldown_hours`` idle (never below
                ``min_gpus``).
    spot      : the autoscaler with ``on_demand_base`` on-demand GPUs and the rest spot at
                ``spot_price_per_gpu_hour``; each spot GPU is interrupted at ``interruption_rate_per_hour``;
                the job on it loses the work since its last checkpoint (every ``checkpoint_hours``) and
                waits again; the interrupted GPU is gone (the autoscaler may request another).
    Wait = time a job spends queued (all its waits); utilization = GPU-hours of work / GPU-hours billed;
    makespan = when the last job ends (an autoscaled GPU is billed until its release after the cool-down).
    """
    if policy not in POLICIES:
        raise UnknownNameError("policy", policy, POLICIES)
    n = len(trace)
    if n == 0:
        raise GpucostError("the trace has no jobs")
    biggest = int(trace.gpus.max())
    if max_gpus is None:
        max_gpus = default_max_gpus(trace)
    if max_gpus < biggest:
        j = int(np.argmax(trace.gpus))
        raise GpucostError(f"a job of the trace (arrival {trace.arrival[j]:g} h) needs {biggest} GPUs but the "
                           f"fleet is capped at {max_gpus}: raise --max-gpus")
    for nm, v in (("startup", startup_hours), ("cool-down", cooldown_hours), ("checkpoint interval", checkpoint_hours)):
        if not (v >= 0) or math.isinf(v):
            raise GpucostError(f"{nm} must be a number >= 0 hours, not {v}")
    if policy == "fixed":
        res = _sim_fixed(trace, max_gpus, record_series)
        od_hours, spot_hours, interrupts = res["billed"], 0.0, 0
        cost = od_hours * price_per_gpu_hour
    else:
        spot = policy == "spot"
        if spot:
            if spot_price_per_gpu_hour is None:
                raise GpucostError("the spot policy needs a spot price (no spot offer in the catalog for this GPU)")
            if interruption_rate_per_hour is None:
                raise GpucostError("the spot policy needs an interruption rate (interruption_rate_per_hour)")
        res = _sim_elastic(trace, max_gpus, min_gpus, startup_hours, cooldown_hours,
                           on_demand_base if spot else max_gpus, interruption_rate_per_hour or 0.0,
                           checkpoint_hours, seed, record_series)
        od_hours, spot_hours, interrupts = res["od_billed"], res["spot_billed"], res["interrupts"]
        cost = od_hours * price_per_gpu_hour + spot_hours * (spot_price_per_gpu_hour or 0.0)
    billed = od_hours + spot_hours
    waits = res["waits"]
    used = trace.gpu_hours
    return FleetResult(policy, int(max_gpus), float(cost), currency.upper(), float(waits.mean()),
                       _quantile(waits, 0.95), float(used / billed) if billed > 0 else 0.0, float(billed),
                       float(used), float(res["makespan"]), n, int(interrupts), float(od_hours), float(spot_hours),
                       tuple(res.get("times", ())), tuple(res.get("sizes", ())),
                       {"max_gpus": int(max_gpus), "min_gpus": min_gpus, "startup_hours": startup_hours,
                        "cooldown_hours": cooldown_hours, "on_demand_base": on_demand_base,
                        "interruption_rate_per_hour": interruption_rate_per_hour,
                        "checkpoint_hours": checkpoint_hours, "price_per_gpu_hour": price_per_gpu_hour,
                        "spot_price_per_gpu_hour": spot_price_per_gpu_hour})


def default_max_gpus(trace: Trace) -> int:
    """The largest job, or the 95th percentile of the unconstrained concurrent demand, whichever is more."""
    times, levels = demand_profile(trace)
    dur = np.diff(times)
    q = _time_quantile(levels, dur, 0.95) if dur.size else int(trace.gpus.max())
    return int(max(int(trace.gpus.max()), q))


def _time_quantile(levels: np.ndarray, durations: np.ndarray, q: float) -> int:
    """The smallest level L with (time demand <= L) / total time >= q."""
    order = np.argsort(levels, kind="stable")
    cum = np.cumsum(durations[order])
    total = cum[-1]
    if total <= 0:
        return int(levels.max())
    k = int(np.searchsorted(cum, q * total - 1e-12))
    return int(levels[order][min(k, len(order) - 1)])


class _Queue:
    """Waiting jobs, kept sorted by (priority = arrival, job)."""

    __slots__ = ("items", "pending")

    def __init__(self) -> None:
        self.items: list[tuple[float, int]] = []
        self.pending = 0

    def push(self, prio: float, j: int, g: int) -> None:
        if not self.items or self.items[-1] <= (prio, j):
            self.items.append((prio, j))
        else:
            bisect.insort(self.items, (prio, j))
        self.pending += g


def _easy_backfill(queue: _Queue, now: float, free: int, capacity: int, ends: dict[int, tuple[float, int]],
                   gpus: np.ndarray, est: np.ndarray, start_cb, busy: int | None = None) -> None:
    """First come, first served with EASY backfilling (Lifka 1995; Mu'alem & Feitelson 2001).

    Jobs start in arrival order while they fit the ``free`` GPUs. When the first waiting job does not fit,
    it gets a reservation at the earliest time enough GPUs of ``capacity`` are free (from the running jobs'
    planned ends ``ends``: job -> (end, GPUs)); a later job may start now if it fits the free GPUs and
    either ends before that time or uses only GPUs the reserved job will not need. ``est`` are the run
    times the scheduler plans with (here: the trace's own, i.e. exact estimates).
    """
    items = queue.items
    k = 0
    while k < len(items) and gpus[items[k][1]] <= free:
        j = items[k][1]
        free -= gpus[j]
        queue.pending -= gpus[j]
        start_cb(j)
        k += 1
    del items[:k]
    if not items or free <= 0:
        return
    gh = int(gpus[items[0][1]])
    if busy is None or k:
        busy = sum(g for _, g in ends.values())
    avail = capacity - busy
    shadow, extra = math.inf, 0
    if avail >= gh:
        shadow, extra = now, avail - gh
    else:
        for end, g in sorted(ends.values()):
            avail += g
            if avail >= gh:
                shadow, extra = end, avail - gh
                break
    started = []
    for k in range(1, len(items)):
        if free <= 0:
            break
        j = items[k][1]
        g = gpus[j]
        if g <= free:
            fits_before = now + est[j] <= shadow
            if fits_before or g <= extra:
                if not fits_before:
                    extra -= g
                free -= g
                queue.pending -= g
                start_cb(j)
                started.append(k)
    for k in reversed(started):
        del items[k]


def _sim_fixed(trace: Trace, capacity: int, record: bool) -> dict:
    arr, gpus, run = trace.arrival.tolist(), trace.gpus.tolist(), trace.run_hours.tolist()
    n = len(arr)
    start = [0.0] * n
    events: list[tuple[float, int]] = []  # (end time, job)
    ends: dict[int, tuple[float, int]] = {}
    queue = _Queue()
    state = {"now": 0.0, "busy": 0}

    def begin(j: int) -> None:
        now = state["now"]
        start[j] = now
        heapq.heappush(events, (now + run[j], j))
        ends[j] = (now + run[j], gpus[j])
        state["busy"] += gpus[j]

    i = 0
    while i < n or events:
        now = min(events[0][0] if events else math.inf, arr[i] if i < n else math.inf)
        state["now"] = now
        while events and events[0][0] == now:  # ends first, then arrivals at the same instant
            _, j = heapq.heappop(events)
            state["busy"] -= gpus[j]
            del ends[j]
        while i < n and arr[i] == now:
            queue.push(arr[i], i, gpus[i])
            i += 1
        if queue.items:
            _easy_backfill(queue, now, capacity - state["busy"], capacity, ends, gpus, run, begin, state["busy"])
    st_a, run_a = np.asarray(start), trace.run_hours
    makespan = float(np.max(st_a + run_a))
    return {"waits": st_a - trace.arrival, "billed": capacity * makespan, "makespan": makespan,
            "times": [0.0] if record else [], "sizes": [capacity] if record else []}


def _sim_elastic(trace: Trace, cap: int, floor: int, startup: float, cooldown: float, od_max: int,
                 hazard: float, ckpt: float, seed: int, record: bool) -> dict:
    """Queue-driven autoscaler; GPUs beyond ``od_max`` on-demand ones are spot (interrupted at ``hazard``)."""
    rng = np.random.default_rng(seed)
    # plain lists: element access on numpy arrays is several times slower in this event loop
    arr, gpus = trace.arrival.tolist(), trace.gpus.tolist()
    remaining = trace.run_hours.tolist()
    n = len(arr)
    waits = [0.0] * n
    queued_at = list(arr)
    END, INTERRUPT, READY, RELEASE = 0, 1, 2, 3
    events: list[tuple[float, int, int, int]] = []  # (time, kind, seq, payload)
    seq = 0
    st = {"now": 0.0, "last": 0.0, "interrupts": 0, "last_end": 0.0}
    idle: list[list[float]] = [[], []]  # per type (0 on-demand, 1 spot): idle-since times, oldest first
    booting = [0, 0]
    busy = [0, 0]
    count = [0, 0]  # provisioned (billed) GPUs per type
    billed = [0.0, 0.0]
    release_at = [math.inf, math.inf]
    running: dict[int, tuple[int, int, float]] = {}  # job -> (on-demand GPUs, spot GPUs, start)
    ends: dict[int, tuple[float, int]] = {}  # job -> (planned end, GPUs) for the backfill reservation
    queue = _Queue()
    times: list[float] = [0.0] if record else []
    sizes: list[int] = [0] if record else []

    def push(t: float, kind: int, payload: int) -> None:
        nonlocal seq
        seq += 1
        heapq.heappush(events, (t, kind, seq, payload))

    def bill_to(t: float) -> None:
        dt = t - st["last"]
        if dt > 0:
            billed[0] += count[0] * dt
            billed[1] += count[1] * dt
            st["last"] = t

    def note_size() -> None:
        if record:
            times.append(st["now"])
            sizes.append(count[0] + count[1])

    def add_gpus(k: int) -> None:
        bill_to(st["now"])
        n_od = max(0, min(k, od_max - count[0]))
        for tp, m in ((0, n_od), (1, k - n_od)):
            if m <= 0:
                continue
            count[tp] += m
            if startup <= 0:
                idle[tp].extend([st["now"]] * m)
            else:
                booting[tp] += m
                push(st["now"] + startup, READY, 2 * m + tp)

    def start_job(j: int) -> None:
        g = gpus[j]
        n_od = min(g, len(idle[0]))
        n_sp = g - n_od
        del idle[0][len(idle[0]) - n_od:]
        del idle[1][len(idle[1]) - n_sp:]
        busy[0] += n_od
        busy[1] += n_sp
        now = st["now"]
        waits[j] += now - queued_at[j]
        t_int = rng.exponential(1.0 / (hazard * n_sp)) if (n_sp and hazard > 0) else math.inf
        if t_int < remaining[j]:
            push(now + t_int, INTERRUPT, j)
        else:
            push(now + remaining[j], END, j)
        running[j] = (n_od, n_sp, now)
        ends[j] = (now + remaining[j], g)

    def wanted() -> int:
        """Running GPUs plus the waiting jobs that could start within the cap (in arrival order)."""
        room = cap - busy[0] - busy[1]
        if queue.pending <= room:
            return max(floor, busy[0] + busy[1] + queue.pending)
        want = 0
        for _, j in queue.items:
            g = gpus[j]
            if g <= room - want:
                want += g
                if want == room:
                    break
        return max(floor, busy[0] + busy[1] + want)

    def schedule_release(want: int) -> None:
        if count[0] + count[1] <= want:
            return
        for tp in (0, 1):
            if idle[tp] and release_at[tp] == math.inf:
                release_at[tp] = max(idle[tp][0] + cooldown, st["now"])
                push(release_at[tp], RELEASE, tp)

    for _ in range(min(floor, cap)):
        tp = 0 if count[0] < od_max else 1
        count[tp] += 1
        idle[tp].append(0.0)
    if record:
        sizes[0] = count[0] + count[1]
    i = 0
    while i < n or events:
        if events and (i >= n or events[0][0] <= arr[i]):
            now, kind, _, payload = heapq.heappop(events)
            st["now"] = now
            if kind == END or kind == INTERRUPT:
                j = payload
                n_od, n_sp, t0 = running.pop(j)
                del ends[j]
                busy[0] -= n_od
                busy[1] -= n_sp
                idle[0].extend([now] * n_od)
                if kind == END:
                    idle[1].extend([now] * n_sp)
                    st["last_end"] = now
                else:
                    st["interrupts"] += 1
                    ran = now - t0
                    remaining[j] -= math.floor(ran / ckpt) * ckpt if ckpt > 0 else ran
                    idle[1].extend([now] * (n_sp - 1))
                    bill_to(now)
                    count[1] -= 1  # the interrupted spot GPU is gone
                    note_size()
                    queued_at[j] = now
                    queue.push(arr[j], j, gpus[j])
            elif kind == READY:
                tp, m = payload % 2, payload // 2
                booting[tp] -= m
                idle[tp].extend([now] * m)
            else:  # RELEASE: idle GPUs beyond what running and startable jobs want, idle >= cool-down
                tp = payload
                release_at[tp] = math.inf
                spare = count[0] + count[1] - wanted()
                k = 0
                while k < len(idle[tp]) and k < spare and idle[tp][k] <= now - cooldown + 1e-12:
                    k += 1
                if k:
                    bill_to(now)
                    count[tp] -= k
                    del idle[tp][:k]
                    note_size()
        else:
            st["now"] = arr[i]
            queue.push(arr[i], i, int(gpus[i]))
            i += 1
        if queue.items:
            _easy_backfill(queue, st["now"], len(idle[0]) + len(idle[1]), cap, ends, gpus, remaining, start_job,
                           busy[0] + busy[1])
        want = wanted()
        have = count[0] + count[1]
        if want > have:
            add_gpus(want - have)
            note_size()
            if startup <= 0 and queue.items:  # the new GPUs serve at once
                _easy_backfill(queue, st["now"], len(idle[0]) + len(idle[1]), cap, ends, gpus, remaining,
                               start_job, busy[0] + busy[1])
        schedule_release(want)
    bill_to(st["now"])
    return {"waits": np.asarray(waits), "od_billed": billed[0], "spot_billed": billed[1], "interrupts": st["interrupts"],
            "makespan": st["last_end"], "times": times, "sizes": sizes}


@dataclass(frozen=True)
class Commitment:
    """The committed (reserved) GPU level that minimizes cost for a demand profile; overflow on demand."""

    level_gpus: int
    discount: float
    cost: float
    cost_on_demand_only: float
    saving: float
    currency: str
    hours: float
    levels: tuple[int, ...] = ()
    costs: tuple[float, ...] = ()

    def to_dict(self, *, curve: bool = False) -> dict:
        d = asdict(self)
        if not curve:
            d.pop("levels")
            d.pop("costs")
        return _clean(d)


def commitment_level(trace: Trace, discount: float, *, price_per_gpu_hour: float = 1.0,
                     currency: str = "USD") -> Commitment:
    """Commit ``c`` GPUs at ``(1 - discount) x price`` for the whole period, the rest on demand at ``price``.

    cost(c) = c x T x p x (1 - d) + p x ∫ max(0, D(t) - c) dt over the unconstrained demand D(t) of the
    trace (every job runs from its arrival). The minimum is where the share of time with D > c falls to
    (1 - d): c* is the d-quantile of the time-weighted demand; all levels are evaluated exactly here.
    """
    if not (0 <= discount < 1):
        raise GpucostError(f"the commitment discount must be >= 0 % and < 100 %, not {discount * 100:g} %")
    times, levels = demand_profile(trace)
    dur = np.diff(times)
    levels = levels[: len(dur)]
    T = float(times[-1] - times[0]) if len(times) > 1 else 0.0
    if T <= 0:
        raise GpucostError("the trace spans no time")
    peak = int(levels.max()) if levels.size else 0
    cs = np.arange(peak + 1)
    # overflow GPU-hours for each c: sum(dur * max(0, level - c)) computed via sorted levels
    order = np.argsort(levels)
    lv, du = levels[order].astype(float), dur[order]
    w = np.cumsum(du[::-1])[::-1]  # time with level >= lv[k]
    wl = np.cumsum((du * lv)[::-1])[::-1]
    k = np.searchsorted(lv, cs, side="right")  # first index with level > c
    over_time = np.where(k < len(lv), w[np.minimum(k, len(lv) - 1)], 0.0)
    over_work = np.where(k < len(lv), wl[np.minimum(k, len(lv) - 1)], 0.0)
    overflow = over_work - cs * over_time
    p = price_per_gpu_hour
    costs = cs * T * p * (1 - discount) + p * overflow
    best = int(np.argmin(costs))
    od_only = float(costs[0])
    return Commitment(best, float(discount), float(costs[best]), od_only, od_only - float(costs[best]),
                      currency.upper(), T, tuple(int(c) for c in cs), tuple(float(c) for c in costs))


def spot_price(catalog: Catalog, gpu_id: str, currency: str) -> tuple[float | None, str]:
    """The lowest spot price per GPU-hour for ``gpu_id`` over the catalog's offers, in ``currency``."""
    o = catalog.offers
    o = o[(o["gpu_id"] == gpu_id) & o["SpotPrice"].notna()]
    if o.empty:
        return None, "no spot offer in the catalog"
    per = o["SpotPrice"] / o["AcceleratorCount"]
    per = per * [catalog.convert(1.0, c, currency) for c in o["currency"]]
    k = int(np.argmin(per.to_numpy()))
    r = o.iloc[k]
    return float(per.iloc[k]), f"{r['provider']} {r['InstanceType']} ({r['source']}, {r['as_of']})"


@dataclass(frozen=True)
class ScalePlan:
    gpu: str
    currency: str
    result: FleetResult
    others: tuple[FleetResult, ...]
    commitment: Commitment | None
    commitment_by_discount: tuple[tuple[float, int], ...]
    price_per_gpu_hour: float
    price_source: str
    spot_price_per_gpu_hour: float | None
    spot_source: str
    trace_label: str
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        r = self.result
        return _clean({
            "cost": r.cost, "wait_mean_hours": r.wait_mean_hours, "wait_p95_hours": r.wait_p95_hours,
            "utilization": r.utilization, "policy": r.policy, "currency": self.currency, "gpu": self.gpu,
            "max_gpus": r.gpus_max, "jobs": r.jobs, "gpu_hours_billed": r.gpu_hours_billed,
            "gpu_hours_used": r.gpu_hours_used, "makespan_hours": r.makespan_hours,
            "interruptions": r.interruptions,
            "policies": {o.policy: o.to_dict() for o in (r, *self.others)},
            "commitment": self.commitment.to_dict() if self.commitment else None,
            "commitment_by_discount": [{"discount": d, "level_gpus": lv} for d, lv in self.commitment_by_discount],
            "price_per_gpu_hour": self.price_per_gpu_hour, "price_source": self.price_source,
            "spot_price_per_gpu_hour": self.spot_price_per_gpu_hour, "spot_source": self.spot_source,
            "trace": self.trace_label, "warnings": list(self.warnings),
        })


def plan_scale(trace: Trace | str | Path, policy: str = "fixed", *, gpu: str = "h100-sxm",
               catalog: Catalog | None = None, currency: str = "USD", max_gpus: int | None = None,
               commit_discount: float | None = None, price_per_gpu_hour: float | None = None,
               spot_price_per_gpu_hour: float | None = None, spot_bucket: str = ">20%",
               compare: bool = True, **sim) -> ScalePlan:
    """Simulate ``policy`` (and, with ``compare``, the other two) and size a commitment.

    Prices: the catalog's lowest on-demand and lowest spot price per GPU-hour for ``gpu`` (overridable).
    ``spot_bucket`` picks the interruption rate from AWS's Spot Advisor buckets (tco_defaults.csv);
    ``commit_discount`` None: no commitment sized (see :func:`default_commit_discount`).
    """
    catalog = catalog or Catalog()
    if policy not in POLICIES:
        raise UnknownNameError("policy", policy, POLICIES)
    tr = trace if isinstance(trace, Trace) else read_trace(trace)
    gid = catalog.gpu_id(gpu)
    warnings = []
    if price_per_gpu_hour is None:
        price, psrc = cloud_price(catalog, gid, currency)
        if price is None:
            raise GpucostError(f"no on-demand cloud price for '{gid}' in the catalog: give one (--price)")
    else:
        price, psrc = float(price_per_gpu_hour), "given"
    if spot_price_per_gpu_hour is None:
        sp, ssrc = spot_price(catalog, gid, currency)
    else:
        sp, ssrc = float(spot_price_per_gpu_hour), "given"
    if sp is not None and sp >= price:
        warnings.append(f"the lowest spot price ({sp:.2f}) is not below the lowest on-demand price ({price:.2f}); "
                        "they come from different providers")
    if sim.get("interruption_rate_per_hour") is None:
        frac, _ = spot_bucket_fraction(catalog, spot_bucket)
        sim["interruption_rate_per_hour"] = spot_hazard_per_hour(frac)
    run = [policy] + ([p for p in POLICIES if p != policy and (p != "spot" or sp is not None)] if compare else [])
    if policy == "spot" and sp is None:
        raise GpucostError(f"no spot price for '{gid}' in the catalog: give one (--spot-price)")
    results = [simulate_fleet(tr, p, max_gpus=max_gpus, price_per_gpu_hour=price, spot_price_per_gpu_hour=sp,
                              currency=currency, record_series=True, **sim) for p in run]
    com = None
    if commit_discount is not None:
        com = commitment_level(tr, commit_discount, price_per_gpu_hour=price, currency=currency)
    by = tuple((d, commitment_level(tr, d, price_per_gpu_hour=price).level_gpus)
               for d in (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7))
    return ScalePlan(gid, currency.upper(), results[0], tuple(results[1:]), com, by, price, psrc, sp, ssrc,
                     tr.label, tuple(warnings))


# ==================================================================================================
# helpers for front ends
# ==================================================================================================

def config_json(cfg: dict) -> str:
    return json.dumps(cfg, indent=2)


def parse_workloads(texts: Iterable[str]) -> list[Workload]:
    return [parse_workload(t, i) for i, t in enumerate(texts, start=1)]
