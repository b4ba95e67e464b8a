"""How wrong are the estimators, on measurements they were not fitted on?

Every row of the validation corpus (data/benchmarks.csv: published measurements, each from a named source
document) is estimated (:mod:`~gpucost.validation.corpus`). The speed factors are fitted on the corpus
(:mod:`~gpucost.validation.fit`); the published error is **cross-validated by source document**: each
document's rows are estimated with factors refitted without that document. The memory and file-size
models have no fitted factor, so every row is already out of sample for them.

:func:`validate` gives one row per measurement with its cross-validated estimate and error;
:func:`summary` the median and p90 absolute error per category (and per engine), with the number of rows
and of documents; :func:`error_bands` the p10–p90 of measured / estimated per category and engine — the
band every estimate carries (data/error_bands.csv, refitted by ``tools/calibrate.py``).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np
import pandas as pd

from gpucost.catalog import Catalog
from gpucost.errors import GpucostError
from gpucost.serialize import number
from gpucost.speed import with_moe_share
from gpucost.validation.allocator import fit_reserve_floor, fit_reserve_ratio, reserve_pairs
from gpucost.validation.corpus import (
    CATEGORIES,
    COMPARE_UNIT,
    SERVING_CATEGORIES,
    SPEED_CATEGORIES,
    _gpu,
    backend_of,
    comparison_value,
    convert,
    cpu_moe_of,
    engine_of,
    row_estimate,
    row_model,
    serving_throughput_at_shares,
    source_of,
)
from gpucost.validation.fit import (
    MOE_GRID,
    MOE_SENSITIVE,
    MoeFit,
    corpus_terms,
    fit_factors,
    fit_moe_share,
    fit_request_latency,
    fit_time_factors,
    fitted_table,
    latency_of,
    time_key_of,
    with_request_latency,
    with_time_factors,
)

#: the issue's targets: median absolute error [%] on documents not used to fit, with p90 ≤ 2.5 × median
TARGETS = {"file_size": 1.0, "inference_memory": 5.0, "training_memory": 10.0, "decode_speed": 15.0,
           "prefill_speed": 25.0, "serving_throughput": 20.0}
#: what the tests hold on the median today: the target where the median meets it, else the measured
#: cross-validated median a little above (README "what still misses"). Serving throughput 30 -> 32 on 2026-12-06:
#: 19 prefill rows of a new document (optimum-benchmark, transformers 4.35) moved the pooled prefill factor that
#: vLLM and SGLang borrow (0.594 -> 0.490), and the held-out median with it (27.9 -> 31.4 %); 32 -> 27 later that day:
#: NVFP4 at the card's FP4 rate (28.9 %) and the decode step's two kernel groups timed one after the other (25.9 %);
#: 27 -> 21.5 on 2026-12-07: a MoE model's routed experts at their fitted share of the dense rate (20.6 %; 20.9 %
#: once attention computes at the cache's rate, not the weights'). Decode 19.5 -> 21 on 2026-12-07 (evening): the held-out
#: leak closed (a document had been judged with kernel keys fitted on it alone: 18.9 -> 20.2 %), one-document factors
#: retired (19.3 %) and the eighth blind round's 18 llama.cpp rows (20.0 %). Serving throughput 19.5 -> 21.0 % (bound
#: kept at 21.5) with the ninth blind round: its GPUStack gpt-oss-20b bursts moved the MoE share from 0.30 to 0.15
BOUNDS = {"file_size": 1.0, "inference_memory": 5.0, "training_memory": 16.5, "decode_speed": 21.0,
          "prefill_speed": 25.0, "serving_throughput": 21.5}
P90_RATIO = 2.5


#: the engine label of rows run with experts in host RAM: judged (and banded) apart from the card alone
CPU_MOE_LABEL = " --n-cpu-moe"


def _engine(row: dict) -> str:
    try:
        name = engine_of(row)
    except GpucostError:
        return str(row.get("engine") or "")
    return name + (CPU_MOE_LABEL if cpu_moe_of(row)[0] else "")


def validate(catalog: Catalog | None = None, *, cross_validated: bool = True) -> pd.DataFrame:
    """One row per measurement: measured (comparison unit), estimate, error %, role (``validation``:
    estimated with factors not fitted on its document; ``skipped`` with the reason). A serving engine on a
    backend its factors were not fitted on (vLLM on ROCm) has its time factor fitted without the row's
    document (:func:`gpucost.validation.fit.fit_time_factors`), on the other documents' rows estimated with
    the same speed factors as the row."""
    catalog = catalog or Catalog()
    rows = catalog.table("benchmarks").to_dict(orient="records")
    terms = corpus_terms(catalog)
    full = fitted_table(catalog, terms=terms)
    # the allocator's reserve ratio, refitted without each document that gave pairs to it
    pairs = reserve_pairs(catalog)
    paired = {p.source for p in pairs}
    ratio_all, floor_all = fit_reserve_ratio(pairs), fit_reserve_floor(pairs)
    fitted_sources = {t.source for t in terms}
    tables: dict[str, dict] = {}
    moe_ratio_cache: dict[int, list] = {}
    moe_tables: dict[tuple[int, float], dict] = {}

    def speed_table(src: str, category: str) -> dict:
        # a serving document enters no fit unless it also published decode/prefill rows
        if cross_validated and (category in SPEED_CATEGORIES
                                or (category in SERVING_CATEGORIES and src in fitted_sources)):
            if src not in tables:
                tables[src] = fitted_table(catalog, exclude_source=src, terms=terms)
            return tables[src]
        return full

    def table_of(src: str, category: str, moe: bool) -> dict:
        """The speed factors for a row of ``src``; for a MoE model's row (or one whose time factor prices others'
        MoE rows) with the MoE share fitted without ``src`` on the other documents' rows priced the same way."""
        table = speed_table(src, category)
        if not moe:
            return table
        if id(table) not in moe_ratio_cache:
            moe_ratio_cache[id(table)] = moe_ratios(catalog, table, rows)
        fit = fit_moe_share(moe_ratio_cache[id(table)], exclude_source=src if cross_validated else None)
        share = fit.moe_compute_share if fit else 1.0
        if (id(table), share) not in moe_tables:
            moe_tables[(id(table), share)] = with_moe_share(table, share)
        return moe_tables[(id(table), share)]

    def estimate(row: dict, table: dict) -> dict:
        src = source_of(row)
        base = {"id": row["id"], "category": row["category"], "source_id": src, "model": row["model_id"],
                "quant": str(row.get("quant") or ""), "engine": _engine(row), "backend": str(row.get("backend") or ""),
                "gpu": str(row.get("gpu_id") or ""), "measure_kind": str(row.get("measure_kind") or "")}
        try:
            if cross_validated and row["category"] == "mfu" and src in mfu_sources:
                raise GpucostError("the default MFU is this document's own rows' geometric mean (data/"
                                   "engine_efficiency.csv 'training'): no other document to judge it on")
            measured, unit = comparison_value(row)
            held_out = cross_validated and src in paired
            ratio = fit_reserve_ratio(pairs, exclude_source=src) if held_out else ratio_all
            floor = fit_reserve_floor(pairs, exclude_source=src) if held_out else floor_all
            est = row_estimate(row, catalog, table, reserve_ratio=ratio, reserve_floor=floor)
            if not math.isfinite(est) or est <= 0:
                raise GpucostError(f"the estimator gives no finite value ({est})")
            return {**base, "measured": measured, "unit": unit, "estimate": est,
                    "error_pct": (est / measured - 1) * 100, "role": "validation", "reason": ""}
        except GpucostError as exc:
            return {**base, "measured": float("nan"), "unit": COMPARE_UNIT.get(row["category"], ""),
                    "estimate": float("nan"), "error_pct": float("nan"), "role": "skipped", "reason": str(exc)}

    moe_model = {row["id"]: _is_moe(row, catalog) for row in rows}
    mfu_rows = set(full["training"].calibration_rows) if "training" in full else set()
    mfu_sources = {source_of(row) for row in rows if str(row["id"]) in mfu_rows}

    out = [estimate(row, table_of(source_of(row), row["category"], moe_model[row["id"]])) for row in rows]
    # time factors: each document's rows on such a backend re-estimated with the factor fitted without it, on the
    # other documents' rows estimated with the same speed factors as its own
    ratios: dict[int, list[tuple[str, str, str, float]]] = {}

    def time_fits(src: str, category: str) -> tuple[dict, dict]:
        """(the speed factors that judge ``src``'s rows, the time factors fitted without it)."""
        table = table_of(src, category, True)
        if id(table) not in ratios:
            ratios[id(table)] = time_ratios(catalog, table, rows)
        return table, fit_time_factors(ratios[id(table)], exclude_source=src if cross_validated else None)

    for i, row in enumerate(rows):
        if time_key_of(row) is None:
            continue
        table, fits = time_fits(source_of(row), row["category"])
        if time_key_of(row) in fits:
            out[i] = estimate(row, with_time_factors(table, fits))
    # request latency: each document's serving TTFT rows with the latency fitted without it, on the other documents'
    # runs at concurrency 1 estimated with the same speed factors as its own (and none)
    diffs: dict[str, list[tuple[str, str, str, float]]] = {}

    def diffs_for(src: str) -> list[tuple[str, str, str, float]]:
        if src not in diffs:
            diffs[src] = latency_diffs(catalog, with_time_factors(*time_fits(src, "serving_ttft")), rows)
        return diffs[src]

    for i, row in enumerate(rows):
        if row["category"] != "serving_ttft" or out[i]["role"] != "validation":
            continue
        src = source_of(row)
        latency = latency_of(engine_of(row), fit_request_latency(diffs_for(src),
                                                                 exclude_source=src if cross_validated else None))
        est = out[i]["estimate"] + latency
        out[i] = {**out[i], "estimate": est, "error_pct": (est / out[i]["measured"] - 1) * 100}
    return pd.DataFrame(out)


def latency_diffs(catalog: Catalog, table: dict, rows: list[dict] | None = None) -> list[tuple[str, str, str, float]]:
    """``(engine, source document, row id, measured − estimated TTFT [ms])`` of the serving TTFT rows at concurrency 1
    that the request latency is fitted on (:func:`gpucost.validation.fit.fit_request_latency`), estimated with
    ``table`` (whose request latency :func:`gpucost.validation.fit.factor_table` leaves at 0)."""
    rows = rows if rows is not None else catalog.table("benchmarks").to_dict(orient="records")
    table = with_request_latency(table, {})
    out = []
    for row in rows:
        if row["category"] != "serving_ttft" or number(row.get("concurrency")) != 1:
            continue
        try:
            measured, _unit = comparison_value(row)
            est = row_estimate(row, catalog, table)
            engine = engine_of(row)
        except GpucostError:
            continue
        if math.isfinite(est) and est > 0:
            out.append((engine, source_of(row), str(row["id"]), measured - est))
    return out


def request_latencies(catalog: Catalog | None = None, share: float | None = None) -> dict:
    """The request latency per engine fitted on every document (tools/calibrate.py writes it to
    data/engine_efficiency.csv), on runs priced with the time factors and the MoE share fitted on every document."""
    catalog = catalog or Catalog()
    table = with_moe_share(fitted_table(catalog), _share(catalog, share))
    timed = with_time_factors(table, fit_time_factors(time_ratios(catalog, table)))
    return fit_request_latency(latency_diffs(catalog, timed))


def time_ratios(catalog: Catalog, table: dict, rows: list[dict] | None = None) -> list[tuple[str, str, str, float]]:
    """``(time key, source document, row id, estimate ÷ measured)`` of the serving-throughput rows a time factor
    is fitted on (:func:`gpucost.validation.fit.fit_time_factors`), estimated with ``table`` (time factor 1)."""
    rows = rows if rows is not None else catalog.table("benchmarks").to_dict(orient="records")
    out = []
    for row in rows:
        key = time_key_of(row)
        if key is None or row["category"] != "serving_throughput":
            continue
        try:
            measured, _unit = comparison_value(row)
            est = row_estimate(row, catalog, table)
        except GpucostError:
            continue
        if math.isfinite(est) and est > 0:
            out.append((key, source_of(row), str(row["id"]), est / measured))
    return out


def moe_ratios(catalog: Catalog, table: dict, rows: list[dict] | None = None) -> list[tuple[str, str, np.ndarray]]:
    """``(source document, row id, estimate ÷ measured at each share of MOE_GRID)`` of the serving-throughput rows of
    MoE models on NVIDIA cards with CUDA whose time the experts' products govern (:data:`MOE_SENSITIVE`), estimated
    with ``table``: what the MoE share is fitted on
    (:func:`gpucost.validation.fit.fit_moe_share`; a backend's time factor is fitted after it, on rows priced with it)."""
    rows = rows if rows is not None else catalog.table("benchmarks").to_dict(orient="records")
    out = []
    for row in rows:
        if row["category"] != "serving_throughput" or backend_of(row) != "cuda":
            continue
        try:
            if not _is_moe(row, catalog) or _gpu(row, catalog).vendor != "NVIDIA":
                continue
            measured, _unit = comparison_value(row)
            # a cheap gate first (two prices of the row's schedule), the whole grid only for the rows it keeps
            dense, half = serving_throughput_at_shares(row, catalog, table, (1.0, 0.5))
            if half > MOE_SENSITIVE * dense:
                continue
            est = serving_throughput_at_shares(row, catalog, table, MOE_GRID)
        except GpucostError:
            continue
        out.append((source_of(row), str(row["id"]), est / measured))
    return out


def _is_moe(row: dict, catalog: Catalog) -> bool:
    """Whether a corpus row's model is a mixture of experts (False where models.csv lacks it)."""
    try:
        return row_model(row, catalog).is_moe
    except GpucostError:
        return False


def moe_share(catalog: Catalog | None = None) -> MoeFit | None:
    """The MoE share fitted on every document (tools/calibrate.py writes it to data/moe_efficiency.csv)."""
    catalog = catalog or Catalog()
    return fit_moe_share(moe_ratios(catalog, fitted_table(catalog)))


def time_factors(catalog: Catalog | None = None, share: float | None = None) -> dict:
    """The time factors fitted on every document (tools/calibrate.py writes them to data/engine_efficiency.csv), on
    rows priced with the routed experts at ``share`` of the dense rate (None: :func:`moe_share`'s fit)."""
    catalog = catalog or Catalog()
    table = with_moe_share(fitted_table(catalog), _share(catalog, share))
    return fit_time_factors(time_ratios(catalog, table))


def _share(catalog: Catalog, share: float | None) -> float:
    """``share``, or where None the MoE share fitted on every document (:func:`moe_share`; 1 without a fit)."""
    if share is None:
        fit = moe_share(catalog)
        share = fit.moe_compute_share if fit else 1.0
    return share


def _stats(errs: pd.Series) -> tuple[float, float]:
    a = errs.abs().dropna()
    return (float(np.median(a)), float(np.percentile(a, 90))) if len(a) else (math.nan, math.nan)


def summary(results: pd.DataFrame, by: str | None = None) -> pd.DataFrame:
    """Per category (and per ``by``, e.g. ``"engine"``): rows, rows estimated, documents, median and p90
    absolute error of the cross-validated estimates, the target and the bound the tests hold."""
    out = []
    groups = [(c, None) for c in CATEGORIES] if by is None else sorted(
        {(c, v) for c, v in zip(results["category"], results[by], strict=True) if c in CATEGORIES})
    # a category's headline judges the estimator with the model on the cards; runs with experts in host RAM
    # (--n-cpu-moe) are a regime of their own, reported on their own engine row
    card_only = ~results["engine"].astype(str).str.endswith(CPU_MOE_LABEL)
    for cat, val in groups:
        r = results[(results["category"] == cat) & ((results[by] == val) if by else card_only)]
        ok = r[r["role"] == "validation"]
        med, p90 = _stats(ok["error_pct"])
        out.append({"category": cat, **({by: val} if by else {}), "rows": len(r), "estimated": len(ok),
                    "sources": ok["source_id"].nunique(), "skipped": int((r["role"] == "skipped").sum()),
                    "median_abs_error_pct": med, "p90_abs_error_pct": p90,
                    "target_pct": TARGETS.get(cat, math.nan), "bound_pct": BOUNDS.get(cat, math.nan)})
    return pd.DataFrame(out)


def _pct(v) -> str:
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.1f} %"


def markdown_table(summ: pd.DataFrame) -> str:
    """The error table in Markdown (README and page): per category, or per category and engine."""
    by = "engine" if "engine" in summ.columns else None
    head = "| category |" + (" engine |" if by else "") + (" rows estimated / documents | median abs error "
                                                          "| p90 | target |")
    lines = [head, "| --- |" + (" --- |" if by else "") + " ---: | ---: | ---: | ---: |"]
    for r in summ.to_dict(orient="records"):
        if by and not r["estimated"]:
            continue
        tgt = "—" if math.isnan(r["target_pct"]) else f"≤ {r['target_pct']:g} %"
        lines.append(f"| {r['category']} |" + (f" {r[by] or '—'} |" if by else "")
                     + f" {r['estimated']} / {r['sources']} | {_pct(r['median_abs_error_pct'])} | "
                     f"{_pct(r['p90_abs_error_pct'])} | {tgt} |")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------------
# Bands: what an estimate's measured value has been, relative to it
# --------------------------------------------------------------------------------------------------

#: a band needs this many cross-validated rows (else the category's band over all engines is used)
MIN_BAND_ROWS = 8
#: an engine's own band needs rows of this many documents (else the category's band over all engines is used): one
#: document's spread says nothing of how another's runs differ — TensorRT-LLM's band made from dstack's nine runs
#: alone held none of NVIDIA's own table, and serving throughput's band held 28 % of documents left out (issue 25)
MIN_BAND_DOCUMENTS = 2


#: what a band should hold of the measurements of documents it was not made from (issue 25: 80 % ± 10)
BAND_COVERAGE_TARGET = (0.70, 0.90)
#: the most of documents left out a band may miss on either side: a p10–p90 band misses 1 in 10 above and 1 in 10
#: below, and for a memory estimate the side above is the one that runs out of memory
BAND_SIDE_MISS = 0.10
#: the quantiles each side of a band may take, narrowest first: p10 (p90), then wider until documents left out are
#: held on that side
BAND_QUANTILES = tuple(round(0.10 - 0.01 * i, 2) for i in range(11))


def _band_rows(results: pd.DataFrame) -> pd.DataFrame:
    ok = results[(results["role"] == "validation") & (results["estimate"] > 0)]
    return ok[~ok["engine"].astype(str).str.endswith(CPU_MOE_LABEL)]


@dataclass(frozen=True)
class HeldOut:
    """Rows of a category judged against the band made without their document: how many, and how many fell
    below its low end and above its high end."""

    rows: int
    below: int
    above: int

    @property
    def inside(self) -> int:
        return self.rows - self.below - self.above


#: the key of a category's band over every engine's rows
ALL_ENGINES = "*"


def _judge(ratio: np.ndarray, judged: list[tuple[int, np.ndarray]], q_low: float, q_high: float) -> HeldOut:
    """``judged``: (row, the rows its band is made from — none of its document's); each row against the
    q_low–(1 − q_high) band of its pool."""
    below = above = 0
    for i, pool in judged:
        lo, hi = np.percentile(ratio[pool], [100 * q_low, 100 * (1 - q_high)])
        below += bool(ratio[i] < lo)
        above += bool(ratio[i] > hi)
    return HeldOut(len(judged), below, above)


def _narrowest(held: Callable[[float, float], HeldOut]) -> tuple[float | None, float | None]:
    """(q_low, q_high): each side the narrowest quantile from p10 (p90) beyond which no more than
    :data:`BAND_SIDE_MISS` of the rows ``held(q_low, q_high)`` judges fall; None for a side that misses more even at
    the min (max), or for both where it judges no row."""
    narrowest = BAND_QUANTILES[0]
    limit = BAND_SIDE_MISS * held(narrowest, narrowest).rows
    if not limit:
        return None, None
    return (next((q for q in BAND_QUANTILES if held(q, narrowest).below <= limit), None),
            next((q for q in BAND_QUANTILES if held(narrowest, q).above <= limit), None))


@dataclass(frozen=True)
class _Category:
    """A category's cross-validated rows (measured ÷ estimated, engine, document) and its bands' quantiles: the
    band over every engine's rows and each engine's own that holds documents left out."""

    ratio: np.ndarray
    engines: np.ndarray
    sources: np.ndarray
    quantiles: dict[str, tuple[float, float]]

    def pool(self, i: int, engine: str) -> np.ndarray | None:
        """The rows row ``i``'s band is made from when its document is left out: its engine's (``engine``) or every
        engine's (:data:`ALL_ENGINES`); None where too few rows or documents remain for that band."""
        rest = self.sources != self.sources[i]
        if engine != ALL_ENGINES:
            rest &= self.engines == engine
            if len(set(self.sources[rest])) < MIN_BAND_DOCUMENTS:
                return None
        return np.flatnonzero(rest) if rest.sum() >= MIN_BAND_ROWS else None

    def band_of(self, i: int) -> tuple[str, np.ndarray] | None:
        """The band row ``i`` is judged against — its engine's where that band is kept and can be made without the
        row's document, else every engine's — and its pool."""
        eng = str(self.engines[i])
        own = self.pool(i, eng) if eng in self.quantiles and eng != ALL_ENGINES else None
        if own is not None:
            return eng, own
        pool = self.pool(i, ALL_ENGINES)
        return None if pool is None else (ALL_ENGINES, pool)


def _category(results: pd.DataFrame, category: str) -> _Category:
    """A category's rows and the quantiles of its bands (:func:`band_quantiles`): an engine's own band (MIN_BAND_ROWS
    rows of MIN_BAND_DOCUMENTS documents or more) judged on its rows whose band can be made without their document,
    and kept only where each side holds them — else the engine carries the band of every engine's rows, whose
    sides are chosen on the whole category, each row against the band it carries."""
    ok = _band_rows(results)
    ok = ok[ok["category"] == category]
    ratio = (ok["measured"] / ok["estimate"]).to_numpy()
    engs, srcs = ok["engine"].astype(str).to_numpy(), ok["source_id"].astype(str).to_numpy()
    cat = _Category(ratio, engs, srcs, {})
    quantiles: dict[str, tuple[float, float]] = {}
    for eng in sorted(set(engs) - {""}):
        mine = engs == eng
        if mine.sum() < MIN_BAND_ROWS or len(set(srcs[mine])) < MIN_BAND_DOCUMENTS:
            continue
        judged = [(int(i), p) for i in np.flatnonzero(mine) if (p := cat.pool(int(i), eng)) is not None]
        q_low, q_high = _narrowest(partial(_judge, ratio, judged))
        if q_low is not None and q_high is not None:
            quantiles[eng] = (q_low, q_high)

    # every engine's band: each side the narrowest that keeps the category's misses — every row against the band it
    # carries — within BAND_SIDE_MISS (it is the band of the engines without one of their own, and of new ones)
    def carried(q_low: float, q_high: float) -> HeldOut:
        return _carried(_Category(ratio, engs, srcs, {**quantiles, ALL_ENGINES: (q_low, q_high)}))

    narrowest, widest = BAND_QUANTILES[0], BAND_QUANTILES[-1]
    if not carried(narrowest, narrowest).rows:   # one document: its band cannot be judged on another: the p10–p90
        return _Category(ratio, engs, srcs, {**quantiles, ALL_ENGINES: (narrowest, narrowest)})
    q_low, q_high = _narrowest(carried)
    return _Category(ratio, engs, srcs, {**quantiles, ALL_ENGINES: (widest if q_low is None else q_low,
                                                                    widest if q_high is None else q_high)})


def _carried(cat: _Category) -> HeldOut:
    """Every row of a category against the band it carries (:meth:`_Category.band_of`), made without its document."""
    by_band: dict[str, list[tuple[int, np.ndarray]]] = defaultdict(list)
    for i in range(len(cat.ratio)):
        b = cat.band_of(i)
        if b is not None:
            by_band[b[0]].append((i, b[1]))
    held = [_judge(cat.ratio, judged, *cat.quantiles[key]) for key, judged in by_band.items()]
    return HeldOut(sum(h.rows for h in held), sum(h.below for h in held), sum(h.above for h in held))


def band_quantiles(results: pd.DataFrame, category: str) -> dict[str, tuple[float, float]]:
    """{band: (q_low, q_high)} of ``category``'s bands — :data:`ALL_ENGINES` and each engine that keeps a band of its
    own: a band runs from the q_low quantile to the 1 − q_high quantile of measured ÷ estimated. Each side is chosen
    on its own: p10 (p90) where no more than :data:`BAND_SIDE_MISS` of the rows of documents left out fall beyond it,
    else the narrowest wider quantile that holds them (down to the min or max). One quantile for both sides and for
    every engine of a category (the bands until 2026-12-05) let documents left out miss mostly on one side: training
    memory's p3–p97 held 81 % of them, but 12 % of those runs measured above its high end — a card the band called
    roomy would have run out of memory — and 7 % below. An engine's own band that cannot hold documents left out
    (LitGPT's four training documents, TensorRT-LLM's two serving documents) is not kept."""
    return dict(_category(results, category).quantiles)


def band_coverage(results: pd.DataFrame) -> pd.DataFrame:
    """Per category: how many cross-validated rows fall inside the band they would carry (their engine's where it is
    kept, else every engine's) made without their document, below it and above it — rows, documents, inside,
    below, above, coverage, and the quantiles of every engine's band."""
    ok = _band_rows(results)
    out = []
    for name in sorted(set(ok["category"])):
        cat = _category(results, name)
        h = _carried(cat)
        q_low, q_high = cat.quantiles[ALL_ENGINES]
        out.append({"category": name, "rows": h.rows, "sources": len(set(cat.sources)), "inside": h.inside,
                    "below": h.below, "above": h.above, "coverage": h.inside / h.rows if h.rows else math.nan,
                    "band_q_low": q_low, "band_q_high": q_high})
    return pd.DataFrame(out)


def error_bands(results: pd.DataFrame) -> pd.DataFrame:
    """Per category and engine (``*``: all engines), from the cross-validated rows: p10, p50 and p90 of measured /
    estimated, and the band every estimate carries — ``low``–``high``, the q_low and 1 − q_high quantiles
    (:func:`band_quantiles`: p10 and p90 where documents left out miss no more than 1 in 10 on that side, else
    wider until they do)."""
    ok = results[(results["role"] == "validation") & (results["estimate"] > 0)]
    out = []
    groups: dict[tuple[str, str], list[float]] = defaultdict(list)
    for cat, eng, m, e in zip(ok["category"], ok["engine"], ok["measured"], ok["estimate"], strict=True):
        if not str(eng).endswith(CPU_MOE_LABEL):   # the all-engines band is the card-only estimator's
            groups[(cat, ALL_ENGINES)].append(m / e)
        if eng:  # rows that name no engine (a file size) count for the category's band only
            groups[(cat, eng)].append(m / e)
    qs = {cat: band_quantiles(results, cat) for cat in {c for c, _ in groups}}
    for (cat, eng), ratios in sorted(groups.items()):
        if eng not in qs[cat]:   # an engine's band that holds no documents left out: it carries every engine's
            continue
        p10, p50, p90 = np.percentile(ratios, [10, 50, 90])
        q_low, q_high = qs[cat][eng]
        lo, hi = np.percentile(ratios, [100 * q_low, 100 * (1 - q_high)])
        out.append({"category": cat, "engine": eng, "rows": len(ratios), "p10": round(float(p10), 3),
                    "p50": round(float(p50), 3), "p90": round(float(p90), 3), "band_q_low": q_low,
                    "band_q_high": q_high,
                    "low": round(float(lo), 3), "high": round(float(hi), 3)})
    return pd.DataFrame(out)


def calibrate(catalog: Catalog | None = None) -> dict[str, dict]:
    """The speed factors fitted on the whole corpus: {key: {factor: value}} (tools/calibrate.py writes them
    to data/engine_efficiency.csv; a test checks the stored table holds them)."""
    catalog = catalog or Catalog()
    fitted = fit_factors(corpus_terms(catalog))
    out = {}
    for key, f in fitted.items():
        if key == "all":  # the pooled prefill fit every key without its own starts from
            continue
        vals = {c: getattr(f, c) for c in ("bw_efficiency", "layer_overhead_ms", "compute_efficiency")
                if getattr(f, c) is not None}
        out[key] = vals
    return out


__all__ = ["CATEGORIES", "TARGETS", "BOUNDS", "P90_RATIO", "convert", "comparison_value", "row_estimate", "validate",
           "summary", "markdown_table", "error_bands", "band_coverage", "band_quantiles", "ALL_ENGINES",
           "BAND_COVERAGE_TARGET", "BAND_SIDE_MISS", "calibrate", "time_factors", "time_ratios", "latency_diffs",
           "request_latencies"]
