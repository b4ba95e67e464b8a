"""The uncertainty every memory and speed estimate carries: the range of measured ÷ estimated that held 8 in
10 measurements of documents left out (the p10–p90 of the validation corpus's rows of the same category and
engine, each side widened where more than 1 in 10 of the rows of documents not used to make it fall beyond it —
gpucost.validation.band_quantiles), each
row estimated with factors refitted without its source document (data/error_bands.csv, written by ``tools/calibrate.py`` from
:mod:`gpucost.validation`). An engine whose own band does not hold its documents left out (or that has too few
rows or documents to tell) gets the band of all engines.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpucost.catalog import Catalog, derived
from gpucost.i18n import Message
from gpucost.serialize import Record, number

#: the band's name in the JSON and on the page
BAND_LABEL = "8-in-10 (held-out)"


@dataclass(frozen=True)
class Band(Record):
    """Measured ÷ estimated on ``rows`` cross-validated measurements from ``sources`` documents."""

    category: str
    engine: str          # whose rows made the band; "*" = every engine (this engine has too few rows)
    p10: float
    p50: float
    p90: float
    rows: int
    sources: int
    median_abs_error_pct: float | None
    low: float = 0.0     # the band: measured ÷ estimated that held 8 in 10 measurements of documents left out
    high: float = 0.0
    band_q_low: float = 0.10   # its quantiles: q_low and 1 − q_high (0.10, 0.10: the p10–p90), each side chosen on
    band_q_high: float = 0.10  # its own (gpucost.validation.band_quantiles)

    def around(self, value: float) -> dict:
        """The band around one estimate: {"low", "high", "basis", "rows", "sources"}."""
        return {"low": value * self.low, "high": value * self.high, "band": BAND_LABEL, "category": self.category,
                "engine": self.engine, "rows": self.rows, "sources": self.sources,
                "median_abs_error_pct": self.median_abs_error_pct}


def _or(x: float | None, default: float) -> float:
    return default if x is None else x


def _index(table) -> dict[tuple[str, str], Band]:
    out = {}
    for r in table.to_dict(orient="records"):
        out[(str(r["category"]), str(r["engine"]))] = Band(
            category=str(r["category"]), engine=str(r["engine"]), p10=float(r["p10"]), p50=float(r["p50"]),
            p90=float(r["p90"]), rows=int(r["rows"]), sources=int(r["sources"]),
            median_abs_error_pct=number(r.get("median_abs_error_pct")),
            low=number(r.get("low")) or float(r["p10"]), high=number(r.get("high")) or float(r["p90"]),
            band_q_low=_or(number(r.get("band_q_low")), 0.10), band_q_high=_or(number(r.get("band_q_high")), 0.10))
    return out


def band(category: str, engine: str, catalog: Catalog | None = None) -> Band | None:
    """The band of ``category`` (decode_speed, prefill_speed, inference_memory, training_memory, file_size)
    for ``engine``; the all-engine band where the engine has none; None where the category has none."""
    catalog = catalog or Catalog()
    table = catalog.table("error_bands")
    idx = derived(table, "band_index", _index)
    return idx.get((category, engine)) or idx.get((category, "*"))


def memory_category(mode: str) -> str:
    return "inference_memory" if mode == "inference" else "training_memory"


def memory_band(est, catalog: Catalog | None = None) -> dict | None:
    """The band around a memory estimate's per-GPU total [GiB] (``est``: :class:`gpucost.memory.Estimate`)."""
    b = band(memory_category(est.setup.mode), est.setup.engine, catalog)
    return None if b is None else {"per_gpu_gib": b.around(est.total_gib)}


def fit_verdict(fit, est, catalog: Catalog | None = None) -> dict:
    """Whether a card holds the setup with room to spare or only inside the error band
    (``fit``: :class:`gpucost.memory.CardFit`): spare memory [GiB] on each of ``min_gpus`` cards, the
    need at the band's high end (and at its p90), and the verdict (fits | within_band | no) with its sentence. A
    training run whose need (allocated peak and CUDA context) fits but not the allocator's whole cache is
    ``within_band``: negative spare, and a sentence that says so."""
    b = band(memory_category(est.setup.mode), est.setup.engine, catalog)
    if fit.min_gpus is None or fit.per_gpu_gib is None:
        return {"verdict": "no", "spare_gib": None, "need_p90_gib": None, "need_high_gib": None, "message": ""}
    spare = fit.usable_gib - fit.per_gpu_gib
    high = fit.per_gpu_gib * (b.high if b else 1.0)
    tight = b is not None and high > fit.usable_gib
    if spare < 0:  # a training run whose need fits but not the allocator's whole cache (memory.min_gpus' rule)
        tight = True
        need = fit.need_gib if fit.need_gib is not None else fit.per_gpu_gib
        msg = Message("band_cache", n=fit.min_gpus, need=f"{need:.1f}", total=f"{fit.per_gpu_gib:.1f}",
                      usable=f"{fit.usable_gib:.1f}")
    else:
        msg = Message("band_tight" if tight else "band_fits", spare=f"{spare:.1f}", high=f"{high:.1f}",
                      usable=f"{fit.usable_gib:.1f}", n=fit.min_gpus)
    return {"verdict": "within_band" if tight else "fits", "spare_gib": spare,
            "need_p90_gib": fit.per_gpu_gib * (b.p90 if b else 1.0), "need_high_gib": high, "message": msg}


def speed_band(sp, catalog: Catalog | None = None) -> dict:
    """The bands around a speed estimate's decode and prefill tokens/s (``sp``: SpeedEstimate)."""
    out = {}
    for cat, field in (("decode_speed", "decode_tokens_per_s"), ("prefill_speed", "prefill_tokens_per_s")):
        b, v = band(cat, sp.engine, catalog), getattr(sp, field)
        if b is not None and v is not None:
            out[field] = b.around(v)
    return out


__all__ = ["Band", "BAND_LABEL", "band", "memory_category", "memory_band", "fit_verdict", "speed_band"]
