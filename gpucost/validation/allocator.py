"""What PyTorch's caching allocator reserves above a training run's allocated peak, measured on the corpus.

A training step frees and re-allocates tensors of many sizes; the caching allocator keeps freed blocks (and splits
them) instead of returning them to the driver, so the card holds its *reserved* peak
(``torch.cuda.max_memory_reserved``, or what nvidia-smi shows less the CUDA context), not the allocated one
(``torch.cuda.max_memory_allocated``). What a run allocates once and keeps — its weights and optimizer states — leaves
no freed blocks; what each step frees and allocates again (gradients, the step's temporaries, activations, logits)
does. gpucost estimates the allocated peak term by term and multiplies that churning part by the ratio measured
where a document gives both figures of one run (a row whose notes say ``same run as ID`` pairs with row ID): the
reserved less the run's estimated weights and optimizer states over the allocated less the same
(:attr:`ReservePair.ratio`; a pair whose run the estimator cannot estimate is left out). Until 2026-12-07 the ratio
was of the whole peak: runs whose weights are most of the peak (one H200's LoRA runs, 1.07) and runs whose activations
are (FSDP on A100s, 1.25) disagreed four-fold on the reserve, two-fold on this ratio. The ratio is the median over
documents of each document's median (a document of 54 pairs weighs as much as one of three); the cross-validated
error judges each document's rows with the ratio of the others (:func:`fit_reserve_ratio` with ``exclude_source``).
tools/calibrate.py writes the whole-corpus ratio to data/allocator.csv, which the product reads
(:func:`gpucost.memory_training.reserve_ratio`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from gpucost.catalog import Catalog
from gpucost.errors import GpucostError
from gpucost.memory_profiles import CUDA_CONTEXT_GIB
from gpucost.validation.corpus import comparison_value, source_of, training_kept_gib

_SAME_RUN = re.compile(r"same run as (\w+)")
#: the measure kinds that are a reserved figure (nvidia-smi less the CUDA context)
RESERVED_KINDS = ("reserved", "nvidia_smi")


@dataclass(frozen=True)
class ReservePair:
    """One run's two figures, its allocated and its reserved peak, and what of them it allocates once and keeps (its
    estimated weights and optimizer states) [GiB] per GPU."""

    source: str
    allocated_id: str
    reserved_id: str
    allocated_gib: float
    reserved_gib: float
    kept_gib: float = 0.0

    @property
    def ratio(self) -> float:
        """Reserved ÷ allocated of what the run's steps free and allocate again."""
        return (self.reserved_gib - self.kept_gib) / (self.allocated_gib - self.kept_gib)


def reserve_pairs(catalog: Catalog) -> list[ReservePair]:
    """Every pair of training-memory rows of one run: an allocated peak and a reserved (or nvidia-smi) figure,
    linked by ``same run as ID`` in either row's notes; nvidia-smi figures less the CUDA context; each with the run's
    estimated weights and optimizer states (a pair whose run the estimator cannot estimate is left out)."""
    t = catalog.table("benchmarks")
    rows = {str(r["id"]): r for r in t[t["category"] == "training_memory"].to_dict(orient="records")}
    out, seen = [], set()
    for row in rows.values():
        m = _SAME_RUN.search(str(row.get("notes") or ""))
        if not m or m.group(1) not in rows:
            continue
        kinds = {str(r.get("measure_kind")): r for r in (row, rows[m.group(1)])}
        alloc = kinds.get("allocator_peak")
        res = next((kinds[k] for k in RESERVED_KINDS if k in kinds), None)
        if alloc is None or res is None or (str(alloc["id"]), str(res["id"])) in seen:
            continue
        seen.add((str(alloc["id"]), str(res["id"])))
        a, r = comparison_value(alloc)[0], comparison_value(res)[0]
        if res.get("measure_kind") == "nvidia_smi":
            r -= CUDA_CONTEXT_GIB
        try:
            kept = training_kept_gib(alloc, catalog)
        except GpucostError:   # a run the estimator cannot estimate: what it keeps is not known
            continue
        if kept >= a:
            continue
        out.append(ReservePair(source=source_of(alloc), allocated_id=str(alloc["id"]), reserved_id=str(res["id"]),
                               allocated_gib=a, reserved_gib=r, kept_gib=kept))
    return out


def fit_reserve_ratio(pairs: list[ReservePair], exclude_source: str | None = None) -> float:
    """The median over documents of each document's median reserved ÷ allocated, without ``exclude_source``'s."""
    by_doc: dict[str, list[float]] = {}
    for p in pairs:
        if p.source != exclude_source:
            by_doc.setdefault(p.source, []).append(p.ratio)
    if not by_doc:
        raise GpucostError("no run in the corpus states both its allocated and its reserved peak")
    return float(np.median([np.median(v) for v in by_doc.values()]))


def fit_reserve_floor(pairs: list[ReservePair], exclude_source: str | None = None) -> float:
    """The p10 over the pairs of reserved ÷ allocated, without ``exclude_source``'s: the least reserve a run keeps
    (data/allocator.csv's p10; :func:`gpucost.memory_training.reserve_floor`)."""
    ratios = [p.ratio for p in pairs if p.source != exclude_source]
    if not ratios:
        raise GpucostError("no run in the corpus states both its allocated and its reserved peak")
    return float(np.percentile(ratios, 10))
