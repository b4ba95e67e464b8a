"""Sharing a card: several workloads on one GPU by time-slicing, MIG or MPS, and the Kubernetes configs.

Workloads (memory [GiB], average utilization [% of a whole card], latency sensitivity) on cards by
**time-slicing** (no memory isolation: the memory of the workloads on a card must fit together; compute is
shared in turns, so utilization sums to at most 100 %), **MIG** (NVIDIA's profile tables in
``data/mig_profiles.csv``, placed on the memory-slice start positions the driver allows) or **MPS** (memory
must fit together, compute shared at once, no fault isolation). Emits the NVIDIA k8s-device-plugin
ConfigMap and an NVIDIA mig-parted configuration.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache

import yaml

from gpucost.catalog import Catalog
from gpucost.errors import DataError, GpucostError, UnknownNameError
from gpucost.i18n import Message
from gpucost.serialize import Record
from gpucost.serialize import jsonable as _clean
from gpucost.units import GIB_PER_GB

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
    for r in rows.to_dict(orient="records"):
        if r["media_extensions"] and not with_media:
            continue
        try:
            starts = tuple(int(s) for s in str(r["placements"]).split(";") if s.strip() != "")
        except ValueError:
            raise DataError(f"placements '{r['placements']}' must be start slots separated by ';'",
                            file="mig_profiles.csv", column="placements") from None
        n = {k: int(r[k]) for k in ("memory_slices", "memory_slices_total", "compute_slices",
                                     "compute_slices_total", "max_instances")}
        out.append(MigProfile(gid, str(r["profile"]), float(r["memory_gb"]), n["memory_slices"],
                              n["memory_slices_total"], n["compute_slices"], n["compute_slices_total"],
                              n["max_instances"], starts, bool(r["media_extensions"]), str(r["source"]),
                              str(r["as_of"])))
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
class Placement(Record):
    """A workload on a card (MIG: on an instance of ``profile`` starting at memory slice ``start``)."""

    workload: int  # 1-based, in the order given
    name: str
    card: int  # 0-based card index
    mem_gib: float
    util_pct: float
    latency_sensitive: bool
    profile: str | None = None
    start: int | None = None



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


@dataclass
class _Bin:
    """One card being filled: its memory and utilization so far, the workloads on it, whether it is kept
    for one latency-sensitive workload."""

    mem: float
    util: float
    items: list[int]
    alone: bool

    def takes(self, w: Workload, vram: float, max_clients: int) -> bool:
        return (not self.alone and len(self.items) < max_clients and self.mem + w.mem_gib <= vram + 1e-9
                and self.util + w.util_pct <= 100 + 1e-9)


def _first_fit(workloads: Sequence[Workload], vram: float, mode: str, latency_alone: bool) -> list[_Bin]:
    """First-fit decreasing by memory (then utilization) under the mode's client limit."""
    order = sorted(range(len(workloads)), key=lambda i: (-workloads[i].mem_gib, -workloads[i].util_pct, i))
    max_clients = MPS_MAX_CLIENTS if mode == "mps" else 10**9
    bins: list[_Bin] = []
    for i in order:
        w = workloads[i]
        alone = latency_alone and mode == "time-slicing" and w.latency_sensitive
        home = None if alone else next((b for b in bins if b.takes(w, vram, max_clients)), None)
        if home is None:
            bins.append(_Bin(w.mem_gib, w.util_pct, [i], alone))
        else:
            home.mem += w.mem_gib
            home.util += w.util_pct
            home.items.append(i)
    return bins


def _mps_warnings(workloads: Sequence[Workload], names: list[str], cards: list[CardLoad]) -> list[Message]:
    out = []
    for card in cards:
        lat = [wid for wid in card.workloads if workloads[wid - 1].latency_sensitive]
        if lat and len(card.workloads) > 1:
            out.append(Message("pw_mps_latency", card=card.index, names=", ".join(names[w - 1] for w in lat)))
    return out


def _mode_notes(mode: str, workloads: Sequence[Workload], latency_alone: bool) -> list[Message]:
    if mode != "time-slicing":
        return [Message("pn_mps")]
    notes = []
    if latency_alone and any(w.latency_sensitive for w in workloads):
        notes.append(Message("pn_latency_alone"))
    notes.append(Message("pn_ts_isolation"))
    return notes


def _sharing_configs(mode: str, replicas: int, vram: float, workloads: Sequence[Workload], names: list[str],
                     namespace: str, notes: list[Message], warnings: list[Message]) -> list[tuple[str, str]]:
    """The device plugin's sharing ConfigMap when a card runs two or more workloads (and its MPS limits)."""
    if replicas < 2:
        notes.append(Message("pn_no_sharing"))
        return []
    if mode == "mps":
        per = vram / replicas
        notes.append(Message("pn_mps_share", replicas=replicas, per=f"{per:.1f}"))
        big = [names[i] for i, w in enumerate(workloads) if w.mem_gib > per + 1e-9]
        if big:
            warnings.append(Message("pw_mps_big", names=", ".join(big), per=f"{per:.1f}"))
    return [("k8s_configmap", k8s_sharing_configmap(replicas, mode, namespace=namespace))]


def _plan_shared_memory(workloads, names, gid, row, mode, latency_alone, namespace) -> SharePlan:
    vram = float(row["vram_gib"])
    bins = _first_fit(workloads, vram, mode, latency_alone)
    placements = sorted((Placement(i + 1, names[i], c, workloads[i].mem_gib, workloads[i].util_pct,
                                   workloads[i].latency_sensitive)
                         for c, b in enumerate(bins) for i in b.items), key=lambda p: p.workload)
    cards = [CardLoad(c, tuple(i + 1 for i in sorted(b.items)), b.mem, b.util) for c, b in enumerate(bins)]
    n = len(workloads)
    notes: list[Message] = []
    ok, why = fit_together(workloads, vram, mode)
    if not ok and n > 1:
        notes.append(Message("pn_not_all", n=n, gpu=row["name"], why=why))
    notes += _mode_notes(mode, workloads, latency_alone)
    warnings = _mps_warnings(workloads, names, cards) if mode == "mps" else []
    configs = _sharing_configs(mode, max(len(c.workloads) for c in cards), vram, workloads, names, namespace,
                               notes, warnings)
    util_total = sum(w.util_pct for w in workloads)
    return SharePlan(gid, str(row["name"]), vram, mode, len(cards), n, tuple(placements), tuple(cards),
                     util_total / len(cards), util_total / n, tuple(warnings), tuple(notes), tuple(configs))


def _mig_profiles_for(workloads, names, gid, row, catalog) -> list[MigProfile]:
    """The smallest MIG profile each workload fits (raises for one that fits none)."""
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
    return chosen


def _mig_first_fit(chosen: list[MigProfile]) -> list[list[int]]:
    """First-fit decreasing of the instances onto cards, each card's set checked for a valid layout."""
    order = sorted(range(len(chosen)), key=lambda i: (-chosen[i].memory_slices, -chosen[i].compute_slices, i))
    card_items: list[list[int]] = []
    for i in order:
        home = next((items for items in card_items
                     if mig_layout(tuple(sorted([chosen[j] for j in items] + [chosen[i]], key=_profile_key)))
                     is not None), None)
        if home is None:
            card_items.append([i])
        else:
            home.append(i)
    return card_items


def _mig_card(c: int, items: list[int], chosen: list[MigProfile], workloads, names,
              placements: list[Placement]) -> CardLoad:
    """Card ``c`` with its instances at their start slices (and the placements it adds)."""
    items_sorted = sorted(items, key=lambda j: _profile_key(chosen[j]))
    starts = mig_layout(tuple(chosen[j] for j in items_sorted))
    assert starts is not None
    inst = []
    for j, start in zip(items_sorted, starts, strict=True):
        w = workloads[j]
        placements.append(Placement(j + 1, names[j], c, w.mem_gib, w.util_pct, w.latency_sensitive,
                                    chosen[j].profile, start))
        inst.append((chosen[j].profile, start))
    return CardLoad(c, tuple(sorted(j + 1 for j in items)), sum(workloads[j].mem_gib for j in items),
                    sum(workloads[j].util_pct for j in items), tuple(sorted(inst, key=lambda x: x[1])))


_MIG_NOTES = (Message("pn_mig_isolated"), Message("pn_mig_memory"), Message("pn_mig_nodes"), Message("pn_mig_tables"))


def _plan_mig(workloads, names, gid, row, catalog, namespace) -> SharePlan:
    chosen = _mig_profiles_for(workloads, names, gid, row, catalog)
    placements: list[Placement] = []
    cards = [_mig_card(c, items, chosen, workloads, names, placements)
             for c, items in enumerate(_mig_first_fit(chosen))]
    placements.sort(key=lambda p: p.workload)
    notes = list(_MIG_NOTES)
    mixed = len({tuple(sorted(c.instances)) for c in cards}) > 1 or any(len({p for p, _ in c.instances}) > 1
                                                                         for c in cards)
    if mixed:
        notes.append(Message("pn_mig_mixed"))
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
    for profile_counts, devs in groups.items():
        entries.append({"devices": "all" if len(groups) == 1 else devs, "mig-enabled": True,
                        "mig-devices": dict(profile_counts)})
    return _yaml({"version": "v1", "mig-configs": {"all-disabled": [{"devices": "all", "mig-enabled": False}],
                                                   config_name: entries}})


def mig_configmap(parted_yaml: str, *, name: str = "gpucost-mig-config", namespace: str = "gpu-operator") -> str:
    """The mig-parted config in a ConfigMap (key ``config.yaml``), as the GPU Operator's MIG manager reads it."""
    cm = {"apiVersion": "v1", "kind": "ConfigMap",
          "metadata": {"name": name, "namespace": namespace,
                       "labels": {"app.kubernetes.io/managed-by": "gpucost"}},
          "data": {"config.yaml": parted_yaml}}
    return _yaml(cm)



def parse_workloads(texts: Iterable[str]) -> list[Workload]:
    return [parse_workload(t, i) for i, t in enumerate(texts, start=1)]


__all__ = ['MPS_MAX_CLIENTS', 'SHARE_MODES', 'GPU_RESOURCE', 'DEVICE_PLUGIN_DOC', 'GPU_OPERATOR_DOC', 'MIG_PARTED_DOC', 'Workload', 'parse_workload', 'MigProfile', 'mig_profiles', 'mig_layout', 'choose_mig_profile', 'Placement', 'CardLoad', 'SharePlan', 'fit_together', 'plan_share', 'device_plugin_config', 'k8s_sharing_configmap', 'mig_parted_config', 'mig_configmap', 'parse_workloads']
