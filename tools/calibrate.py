"""Refit the speed factors on the validation corpus and write what the product reads:

* data/engine_efficiency.csv — each fitted key's factors (the engine, or the engine on a backend or kernel
  path) with the corpus rows it was fitted on; engines without rows borrow vLLM's; MFU and vLLM's
  all-reduce latency are kept (not fitted here);
* data/error_bands.csv — the cross-validated error per category and engine: median and p90 of the
  absolute error, and p10 / p50 / p90 of measured ÷ estimated (the band every estimate carries).
* data/allocator.csv — the caching allocator's reserved ÷ allocated peak of a training run, from the corpus's
  pairs of one run's two figures (gpucost.validation.allocator).
* data/moe_efficiency.csv — the share of the dense compute rate a MoE model's routed experts reach, from the
  corpus's serving runs of MoE models (gpucost.validation.fit.fit_moe_share).

Usage (repo root): .venv/bin/python tools/calibrate.py [--check]
``--check`` writes nothing and exits 1 when the stored tables differ from a refit (tests/test_validation.py
runs the same comparison).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from gpucost.catalog import Catalog
from gpucost.speed import efficiency_table
from gpucost.validation import error_bands, moe_ratios, request_latencies, summary, time_factors, validate
from gpucost.validation.allocator import fit_reserve_floor, fit_reserve_ratio, reserve_pairs
from gpucost.validation.fit import (
    MIN_DOCUMENTS,
    MOE_GRID,
    MOE_SENSITIVE,
    corpus_terms,
    factor_table,
    fit_factors,
    fit_moe_share,
    fitted_table,
)

ROOT = Path(__file__).resolve().parents[1]
EFF = ROOT / "data" / "engine_efficiency.csv"
BANDS = ROOT / "data" / "error_bands.csv"
ALLOCATOR = ROOT / "data" / "allocator.csv"
MOE = ROOT / "data" / "moe_efficiency.csv"
COLS = ["engine", "bw_efficiency", "layer_overhead_ms", "host_layer_ms", "compute_efficiency", "allreduce_latency_ms",
        "mfu", "time_factor", "request_latency_ms", "fallback", "calibration_rows", "source", "as_of", "notes"]
SOURCE = ("fitted by tools/calibrate.py (gpucost.validation.fit) on the listed rows of data/benchmarks.csv, "
          "least absolute deviation of log(estimate / measured); the rows' own source columns name who measured them")

SOURCE_TIME = ("fitted by tools/calibrate.py (gpucost.validation.fit.fit_time_factors) on the listed serving rows of "
               "data/benchmarks.csv; the rows' own source columns name who measured them")


def _round(v, nd=4):
    from gpucost.serialize import number

    x = number(v)
    return "" if x is None else round(x, nd)


def efficiency_rows(catalog: Catalog, moe_share: float) -> pd.DataFrame:
    terms = corpus_terms(catalog)
    fitted = fit_factors(terms)
    stored = catalog.table("engine_efficiency").set_index("engine")
    table = factor_table(fitted, efficiency_table(catalog))
    bench = catalog.table("benchmarks").set_index("id")
    out = []
    for key, eff in sorted(table.items(), key=lambda kv: (kv[0].count("/"), kv[0])):
        if key == "training":
            continue
        f = fitted.get(key)
        rows = list(f.decode_rows + f.prefill_rows) if f else []
        # a date says when the figures were true: the newest fitted row, or (borrowed factors) vLLM's date
        as_of = str(max(bench.loc[rows, "as_of"])) if rows else str(max(bench.loc[list(
            fitted["vllm"].decode_rows + fitted["vllm"].prefill_rows), "as_of"]))
        allreduce = stored.at[key, "allreduce_latency_ms"] if key in stored.index else ""
        if f is None:
            out.append({"engine": key, "fallback": "vllm", "calibration_rows": "", "as_of": as_of,
                        "source": f"no single-GPU rows of its own from {MIN_DOCUMENTS} documents or more in "
                                  "data/benchmarks.csv: its factors are vLLM's",
                        "notes": "an assumption until enough measurements of this engine are in the corpus; the "
                                 "page and the CLI say so", "allreduce_latency_ms": _round(allreduce)})
            continue
        fitted_cols = [c for c in ("bw_efficiency", "layer_overhead_ms", "compute_efficiency") if getattr(f, c) is not None]
        out.append({"engine": key, "bw_efficiency": _round(eff.bw_efficiency),
                    "layer_overhead_ms": _round(eff.layer_overhead_ms), "host_layer_ms": 0,
                    "compute_efficiency": _round(eff.compute_efficiency), "allreduce_latency_ms": _round(allreduce),
                    "fallback": key.split("/")[0] if "/" in key else ("" if key == "vllm" else "vllm"), "calibration_rows": ";".join(rows),
                    "source": SOURCE, "as_of": as_of,
                    "notes": f"fitted: {', '.join(fitted_cols)} on {len(rows)} rows from "
                             f"{len(f.sources)} documents ({', '.join(f.sources)}); the other factors from "
                             f"{'its parent key' if '/' in key else 'vLLM'}"})
    # an engine on a backend its factors were not fitted on: its CUDA factors, every step time × a factor fitted on
    # that backend's serving runs (gpucost.validation.fit.fit_time_factors)
    for key, tf in sorted(time_factors(catalog, moe_share).items()):
        if key in table:
            continue
        engine = key.split("/")[0]
        docs = {s: sum(bench.at[r, "source_id"] == s for r in tf.rows) for s in tf.sources}
        out.append({"engine": key, "time_factor": tf.time_factor, "fallback": engine,
                    "calibration_rows": ";".join(tf.rows), "source": SOURCE_TIME,
                    "as_of": str(max(bench.loc[list(tf.rows), "as_of"].astype(str))),
                    "notes": f"{engine}'s factors (fitted on CUDA rows) with every step time × {tf.time_factor}: the "
                             f"median over {len(docs)} documents of each one's median estimate / measured output "
                             f"tokens/s of serving runs on {key.split('/')[1]} ("
                             + ", ".join(f"{d} {n} rows" for d, n in docs.items()) + ")"})
    # a served request's latency beyond the step model, per engine (gpucost.validation.fit.fit_request_latency):
    # on the engine's own row; an engine without one borrows through its fallback, as for the other factors
    for engine, lf in request_latencies(catalog, moe_share).items():
        row = next(r for r in out if r["engine"] == engine)
        row["request_latency_ms"] = lf.request_latency_ms
        row["notes"] = (row["notes"] + "; " if row["notes"] else "") + (
            f"request_latency_ms {lf.request_latency_ms}: the median over {len(lf.sources)} documents of each one's "
            f"median measured - estimated TTFT of serving runs at concurrency 1 (rows "
            + ";".join(lf.rows) + "; " + ", ".join(f"{d} {ms:.0f} ms" for d, ms in lf.per_document) + ")")
    train = stored.loc["training"]
    out.append({"engine": "training", "mfu": train["mfu"], "calibration_rows": train["calibration_rows"],
                "source": train["source"], "as_of": train["as_of"], "notes": train["notes"]})
    df = pd.DataFrame(out)
    for c in COLS:
        if c not in df.columns:
            df[c] = ""
    return df[COLS].astype(object).fillna("")


def allocator_rows(catalog: Catalog) -> pd.DataFrame:
    pairs = reserve_pairs(catalog)
    ratios = np.array([p.ratio for p in pairs])
    bench = catalog.table("benchmarks").set_index("id")
    ids = sorted({i for p in pairs for i in (p.allocated_id, p.reserved_id)})
    docs = sorted({p.source for p in pairs})
    per_doc = {d: float(np.median([p.ratio for p in pairs if p.source == d])) for d in docs}
    return pd.DataFrame([{
        "regime": "training", "churn_reserved_over_allocated": round(fit_reserve_ratio(pairs), 4),
        "p10": round(fit_reserve_floor(pairs), 4), "p90": round(float(np.percentile(ratios, 90)), 4),
        "pairs": len(pairs), "documents": len(docs), "calibration_rows": ";".join(ids),
        "source": "tools/calibrate.py (gpucost.validation.allocator) on the listed rows of data/benchmarks.csv: one "
                  "run's torch.cuda.max_memory_reserved (or nvidia-smi less the CUDA context) beside its "
                  "max_memory_allocated, each less the run's weights and optimizer states as gpucost estimates them "
                  "(what a step frees and allocates again: reserved / allocated); the rows' own source columns name "
                  "who measured them",
        "as_of": str(max(bench.loc[ids, "as_of"].astype(str))),
        "notes": "median over documents of each document's median ratio (" + ", ".join(
            f"{d} {per_doc[d]:.3f} over {sum(p.source == d for p in pairs)}" for d in docs) + "); p10-p90 over "
                 "the pairs"}])


def moe_rows(catalog: Catalog) -> pd.DataFrame:
    """data/moe_efficiency.csv's one row: the share fitted on every document (efficiency_rows prices the time
    factors' rows with it)."""
    ratios = moe_ratios(catalog, fitted_table(catalog))
    fit = fit_moe_share(ratios)
    if fit is None:
        raise SystemExit("too few documents of MoE serving runs to fit data/moe_efficiency.csv")
    bench = catalog.table("benchmarks").set_index("id")
    k = int(np.argmin(np.abs(MOE_GRID - fit.moe_compute_share)))
    docs = {d: [r[k] for s, _i, r in ratios if s == d] for d in fit.sources}
    return pd.DataFrame([{
        "scope": "all", "moe_compute_share": fit.moe_compute_share, "rows": len(fit.rows), "documents": len(docs),
        "calibration_rows": ";".join(fit.rows),
        "source": "tools/calibrate.py (gpucost.validation.fit.fit_moe_share) on the listed serving rows of "
                  "data/benchmarks.csv; the rows' own source columns name who measured them",
        "as_of": str(max(bench.loc[list(fit.rows), "as_of"].astype(str))),
        "notes": f"the share of MOE_GRID whose documents' median log(estimate / measured) are nearest zero in sum, over "
                 f"the serving runs of MoE models on NVIDIA cards whose estimate at half the dense rate is at most "
                 f"{MOE_SENSITIVE} x the estimate at the dense rate; each document's median estimate / measured at "
                 "this share: " + ", ".join(f"{d} {float(np.median(v)):.3f} over {len(v)}" for d, v in docs.items())}])


def band_rows(catalog: Catalog) -> pd.DataFrame:
    results = validate(catalog)
    bands = error_bands(results)
    summ = pd.concat([summary(results, by="engine"), summary(results).assign(engine="*")], ignore_index=True)
    summ = summ.set_index(["category", "engine"])
    out = []
    newest = str(catalog.table("benchmarks")["as_of"].astype(str).max())
    for r in bands.to_dict(orient="records"):
        key = (r["category"], r["engine"])
        s = summ.loc[key] if key in summ.index else None
        out.append({**r, "sources": int(s["sources"]) if s is not None else 0,
                    "median_abs_error_pct": _round(s["median_abs_error_pct"], 2) if s is not None else "",
                    "p90_abs_error_pct": _round(s["p90_abs_error_pct"], 2) if s is not None else "",
                    "source": "tools/calibrate.py: gpucost.validation.validate() on data/benchmarks.csv, each "
                              "document's rows estimated with factors refitted without it",
                    "as_of": newest, "notes": "p10/p50/p90 of measured / estimated; the band every estimate carries is "
                                              "low-high, the band_q_low and 1 - band_q_high quantiles: each side the narrowest "
                                              "from p10 (p90) beyond which no more than 1 in 10 rows of the documents "
                                              "left out fell when it was made"})
    cols = ["category", "engine", "rows", "sources", "median_abs_error_pct", "p90_abs_error_pct", "p10", "p50", "p90",
            "band_q_low", "band_q_high", "low", "high", "source", "as_of", "notes"]
    return pd.DataFrame(out)[cols]


def main(argv: list[str]) -> int:
    cat = Catalog()
    moe = moe_rows(cat)
    eff = efficiency_rows(cat, float(moe.at[0, "moe_compute_share"]))
    alloc = allocator_rows(cat)
    bands = band_rows(cat)
    if "--check" in argv:
        same = all(path.exists() and path.read_text(encoding="utf-8") == df.to_csv(index=False, lineterminator="\n")
                   for path, df in ((EFF, eff), (BANDS, bands), (ALLOCATOR, alloc), (MOE, moe)))
        print("stored tables are current" if same else "stored tables differ from a refit: run tools/calibrate.py")
        return 0 if same else 1
    EFF.write_text(eff.to_csv(index=False, lineterminator="\n"), encoding="utf-8")
    BANDS.write_text(bands.to_csv(index=False, lineterminator="\n"), encoding="utf-8")
    ALLOCATOR.write_text(alloc.to_csv(index=False, lineterminator="\n"), encoding="utf-8")
    MOE.write_text(moe.to_csv(index=False, lineterminator="\n"), encoding="utf-8")
    print(f"wrote {EFF.relative_to(ROOT)} ({len(eff)} rows), {BANDS.relative_to(ROOT)} ({len(bands)} rows) and "
          f"{ALLOCATOR.relative_to(ROOT)} (reserved / allocated of what steps free {alloc.at[0, 'churn_reserved_over_allocated']}) and "
          f"{MOE.relative_to(ROOT)} (MoE share {moe.at[0, 'moe_compute_share']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
