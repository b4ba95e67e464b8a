"""How wrong are the estimators? Every row of data/benchmarks.csv against gpucost's estimate.

Each published measurement is turned into the same setup for the estimator (rules below), converted to
one unit (GiB for sizes, tokens/s, fraction), and the error is ``estimate / measured − 1``. Rows whose
id appears in a ``calibration_rows`` cell of data/engine_efficiency.csv fitted a factor: they are marked
``calibration`` and kept out of the held-out error (the table shows both). Rows the estimator cannot run
(model, card or format not in the catalog) are ``skipped`` with the reason.

Row rules (from the columns; a few facts the table has no column for are read from the row's notes):

* file_size — :func:`gpucost.quant.weights_file_gib` (sum of tensor bytes, as llama.cpp reports).
* inference_memory — context = input + generated tokens (llama.cpp: ``context`` is n_ctx, the KV it
  allocates up front), prompt = the input; compared with what the engine allocates (without the CUDA
  context: the published figures are allocator statistics or llama.cpp's own buffer log); when the notes
  say the figure is the "total over" the GPUs, with the sum over GPUs.
* training_memory — per-GPU total without the CUDA context; "cpu offload" in the notes → offload=cpu.
* decode_speed — average KV length over the generation (input + generated/2); llama.cpp reports eval
  speed alone; for vLLM/transformers rows with a long input the figure is generated tokens over prefill
  plus decode time.
* prefill_speed — prompt of ``context`` tokens.
* mfu — the default MFU of the training-speed estimate.

FlashAttention per engine as used in the measurements' era: transformers rows name Flash Attention 2,
vLLM always uses it, llama.cpp needed ``-fa`` (off by default then; the notes of the rows say
flash_attn 0).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from gpucost.catalog import Catalog
from gpucost.errors import GpucostError
from gpucost.memory import Setup, estimate
from gpucost.memory_profiles import ENGINE_PROFILES, OPTIMIZERS, TRAINING_PROFILES
from gpucost.models import catalog_spec, model_id
from gpucost.quant import GIB, get_format, weights_file_gib
from gpucost.records import Gpu, gpu_records
from gpucost.speed import (
    EngineEfficiency,
    _decode_bytes,
    _flops_per_token,
    efficiency_table,
    peak_tflops,
    speed,
    with_efficiency,
)

#: explicit unit conversions to the comparison unit (GiB = 2^30 bytes; GB = 10^9 bytes; MiB = 2^20 bytes)
UNIT_TO_GIB = {"GiB": 1.0, "GB": 1e9 / GIB, "MiB": 2**20 / GIB, "MB": 1e6 / GIB}
UNIT_SAME = {"tokens/s": "tokens/s", "fraction": "fraction"}
#: the issue's bounds on the median absolute error of the held-out rows [%]
BOUNDS = {"file_size": 3.0, "inference_memory": 10.0, "training_memory": 15.0, "decode_speed": 25.0}
CATEGORIES = ("file_size", "inference_memory", "training_memory", "decode_speed", "prefill_speed", "mfu")
#: FlashAttention in the measurements (module docstring)
FLASH_BY_ENGINE = {"transformers": True, "vllm": True, "tensorrt-llm": True, "llama.cpp": False,
                   "torchtune": True, "transformers+peft": True}


@dataclass(frozen=True)
class RowResult:
    id: str
    category: str
    model: str
    quant: str
    engine: str
    gpu: str
    measured: float       # in ``unit``
    estimate: float | None
    unit: str
    error_pct: float | None
    role: str             # calibration | validation | skipped
    reason: str = ""

    def to_dict(self) -> dict:
        return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in self.__dict__.items()}


def convert(value: float, unit: str) -> tuple[float, str]:
    """A measured value in the comparison unit: GiB for GB/GiB/MiB/MB, else as published."""
    if unit in UNIT_TO_GIB:
        return value * UNIT_TO_GIB[unit], "GiB"
    if unit in UNIT_SAME:
        return value, unit
    raise GpucostError(f"unknown unit '{unit}' in benchmarks.csv")


def _num(v, default=None):
    try:
        f = float(v)
    except (TypeError, ValueError):
        return default
    return default if math.isnan(f) else f


def calibration_ids(table: dict[str, EngineEfficiency]) -> set[str]:
    return {r for e in table.values() for r in e.calibration_rows}


def _engine_key(engine: str) -> str:
    e = (engine or "").lower()
    if e.startswith("transformers"):
        return "transformers"
    return e


def row_estimate(row: dict, catalog: Catalog, table: dict[str, EngineEfficiency] | None = None) -> float:
    """The estimator's value for one benchmarks.csv row, in the row's comparison unit. Raises
    GpucostError (with the reason) when the row cannot be estimated."""
    table = table or efficiency_table(catalog)
    cat = row["category"]
    mid = model_id(row["model_id"], catalog)
    if mid is None:  # skipped in every category, MFU included, so that each row is judged on a catalog model
        raise GpucostError(f"model '{row['model_id']}' is not in models.csv")
    if cat == "mfu":
        return table["training"].mfu
    spec = catalog_spec(mid, catalog)
    fmt = get_format(row["quant"], catalog) if row.get("quant") else get_format("bf16", catalog)
    engine = _engine_key(row.get("engine", ""))
    notes = str(row.get("notes") or "").lower()
    if cat == "file_size":
        return weights_file_gib(spec, fmt)
    batch = int(_num(row.get("batch"), 1))
    gpus = int(_num(row.get("num_gpus"), 1))
    ctx_in = int(_num(row.get("context"), 0))
    gen = int(_num(row.get("gen_tokens"), 0))
    if cat == "inference_memory":
        if engine not in ENGINE_PROFILES:
            raise GpucostError(f"engine '{row.get('engine')}' is not modelled")
        if engine == "llama.cpp":
            s = Setup(mode="inference", context=max(ctx_in, 1), prompt=min(max(ctx_in, 1), 512), batch=batch,
                      gpus=gpus, engine=engine, flash_attention=FLASH_BY_ENGINE[engine])
        else:
            s = Setup(mode="inference", context=max(ctx_in, 1) + gen, prompt=max(ctx_in, 1), batch=batch, gpus=gpus,
                      engine=engine, flash_attention=FLASH_BY_ENGINE[engine])
        est = estimate(spec, fmt, s)
        return est.engine_gib * (gpus if "total over" in notes else 1)
    if cat == "training_memory":
        framework = engine if engine in TRAINING_PROFILES else "transformers"
        opt = str(row.get("optimizer") or "")
        ckpt = str(row.get("grad_checkpointing") or "true").lower() not in ("false", "0", "no")
        s = Setup(mode=str(row["mode"]), context=max(ctx_in, 1), batch=batch, gpus=gpus, engine=framework,
                  zero=int(_num(row.get("zero_stage"), 0)), offload="cpu" if "cpu offload" in notes else "none",
                  lora_rank=int(_num(row.get("lora_rank"), Setup.lora_rank)),
                  optimizer=opt if opt in OPTIMIZERS else None, grad_checkpointing=ckpt,
                  flash_attention=FLASH_BY_ENGINE.get(framework, True))
        return estimate(spec, fmt, s).engine_gib
    gpu = _gpu_row(row, catalog)
    if engine not in ENGINE_PROFILES:
        raise GpucostError(f"engine '{row.get('engine')}' is not modelled")
    eff = table[engine]
    if cat == "decode_speed":
        avg_ctx = max(1, int(round(max(ctx_in, 0) + gen / 2)))
        sp = speed(spec, fmt, gpu, gpus=gpus, batch=batch, context=avg_ctx, engine=engine, catalog=catalog, eff=eff)
        if engine != "llama.cpp" and ctx_in > 1 and gen > 0:
            pre = speed(spec, fmt, gpu, gpus=gpus, batch=1, context=ctx_in, engine=engine, catalog=catalog, eff=eff)
            t = (ctx_in / pre.prefill_tokens_per_s if pre.prefill_tokens_per_s else 0.0) + gen / sp.decode_tokens_per_s_per_seq
            return gen / t
        return sp.decode_tokens_per_s_per_seq
    if cat == "prefill_speed":
        sp = speed(spec, fmt, gpu, gpus=gpus, batch=1, context=max(ctx_in, 1), engine=engine, catalog=catalog, eff=eff)
        if sp.prefill_tokens_per_s is None:
            raise GpucostError(f"{gpu.id} has no dense throughput figure")
        return sp.prefill_tokens_per_s
    raise GpucostError(f"unknown category '{cat}'")


def _gpu_row(row: dict, catalog: Catalog) -> Gpu:
    gid = str(row.get("gpu_id") or "")
    if not gid:
        raise GpucostError("no GPU named")
    recs = gpu_records(catalog)
    if gid not in recs:
        raise GpucostError(f"GPU '{gid}' is not in gpus.csv")
    return recs[gid]


def validate(catalog: Catalog | None = None, table: dict[str, EngineEfficiency] | None = None) -> pd.DataFrame:
    """One row per benchmark: measured (comparison unit), estimate, error %, role (see module docstring)."""
    catalog = catalog or Catalog()
    table = table or efficiency_table(catalog)
    calib = calibration_ids(table)
    out = []
    for row in catalog.table("benchmarks").to_dict(orient="records"):
        measured, unit = convert(float(row["measured"]), str(row["unit"]))
        role = "calibration" if row["id"] in calib else "validation"
        try:
            est = row_estimate(row, catalog, table)
            err = (est / measured - 1) * 100
            reason = ""
        except GpucostError as exc:
            est, err, role, reason = None, None, "skipped", str(exc)
        out.append(RowResult(id=row["id"], category=row["category"], model=row["model_id"], quant=str(row.get("quant") or ""),
                             engine=str(row.get("engine") or ""), gpu=str(row.get("gpu_id") or ""),
                             measured=measured, estimate=est, unit=unit, error_pct=err, role=role,
                             reason=reason).to_dict())
    return pd.DataFrame(out)


def summary(results: pd.DataFrame) -> pd.DataFrame:
    """Per category: rows, held-out (validation) rows, calibration rows, skipped, median and p90 absolute
    error of the held-out rows, median absolute error of all estimated rows, and the bound."""
    rows = []
    for cat in CATEGORIES:
        r = results[results["category"] == cat]
        held = r[r["role"] == "validation"]["error_pct"].abs().dropna()
        est = r[r["role"] != "skipped"]["error_pct"].abs().dropna()
        rows.append({
            "category": cat, "rows": len(r), "validation_rows": len(held),
            "calibration_rows": int((r["role"] == "calibration").sum()), "skipped": int((r["role"] == "skipped").sum()),
            "median_abs_error_pct": float(np.median(held)) if len(held) else float("nan"),
            "p90_abs_error_pct": float(np.percentile(held, 90)) if len(held) else float("nan"),
            "median_abs_error_all_pct": float(np.median(est)) if len(est) else float("nan"),
            "bound_pct": BOUNDS.get(cat, float("nan")),
        })
    return pd.DataFrame(rows)


def markdown_table(summ: pd.DataFrame) -> str:
    """The error table in Markdown (README and page)."""

    def pct(v) -> str:
        return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.1f} %"

    lines = ["| category | rows | held-out / calibration / skipped | median abs error (held-out) | p90 (held-out) "
             "| median abs error (all estimated) | bound |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in summ.to_dict(orient="records"):
        bound = "—" if math.isnan(r["bound_pct"]) else f"≤ {r['bound_pct']:g} %"
        lines.append(f"| {r['category']} | {r['rows']} | {r['validation_rows']} / {r['calibration_rows']} / "
                     f"{r['skipped']} | {pct(r['median_abs_error_pct'])} | {pct(r['p90_abs_error_pct'])} | "
                     f"{pct(r['median_abs_error_all_pct'])} | {bound} |")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------------
# Calibration: least squares on log(estimate / measured) over the calibration rows only
# --------------------------------------------------------------------------------------------------

#: grids searched (a fit ending on an edge would show as a value at the edge)
GRID_BW = np.round(np.arange(0.20, 1.0 + 1e-9, 0.0025), 4)
GRID_LAYER_MS = np.round(np.arange(0.0, 0.5 + 1e-9, 0.0005), 4)
GRID_HOST_MS = np.round(np.arange(0.0, 3.0 + 1e-9, 0.001), 4)
GRID_COMPUTE = np.round(np.arange(0.05, 1.0 + 1e-9, 0.0025), 4)
GRID_LATENCY_MS = np.round(np.arange(0.0, 0.2 + 1e-9, 0.0005), 4)


def _rows(catalog: Catalog, ids) -> list[dict]:
    b = catalog.table("benchmarks")
    return b[b["id"].isin(list(ids))].to_dict(orient="records")


def _decode_terms(row: dict, catalog: Catalog) -> tuple[float, float, float, float, float, float]:
    """(weight+KV bytes, FLOP, layers, bandwidth GB/s, peak TFLOPS, measured tokens/s) of a single-GPU decode row."""
    mid = model_id(row["model_id"], catalog)
    if mid is None:
        raise GpucostError(f"model '{row['model_id']}' is not in models.csv")
    spec = catalog_spec(mid, catalog)
    fmt = get_format(row["quant"], catalog)
    gpu = _gpu_row(row, catalog)
    ctx = max(1, int(round(_num(row.get("context"), 0) + _num(row.get("gen_tokens"), 0) / 2)))
    w, kv = _decode_bytes(spec, fmt, 1, ctx, _engine_key(row["engine"]), "fp16")
    return (w + kv, _flops_per_token(spec, ctx), spec.num_layers, gpu.mem_bandwidth_gbps,
            peak_tflops(gpu, fmt) or np.inf, float(row["measured"]))


def _fit_2d(terms, eta_c: float) -> tuple[float, float]:
    B, F, L, bw, pk, meas = (np.array(x, dtype=float)[:, None, None] for x in zip(*terms, strict=True))
    eta = GRID_BW[None, :, None]
    c = GRID_LAYER_MS[None, None, :]
    t = np.maximum(B / (bw * 1e9 * eta), F / (pk * 1e12 * eta_c)) + L * c / 1e3
    err = np.log(1 / t / meas) ** 2
    sse = err.sum(axis=0)
    i, j = np.unravel_index(np.argmin(sse), sse.shape)
    return float(GRID_BW[i]), float(GRID_LAYER_MS[j])


def calibrate(catalog: Catalog | None = None, table: dict[str, EngineEfficiency] | None = None) -> dict[str, dict]:
    """Refit every calibrated factor from the rows named in engine_efficiency.csv. Returns
    {engine: {factor: value}}; tools/calibrate_speed.py prints it, a test checks the table holds it."""
    catalog = catalog or Catalog()
    table = table or efficiency_table(catalog)
    out: dict[str, dict] = {}
    b = catalog.table("benchmarks").set_index("id")

    def ids(engine: str, category: str) -> list[str]:
        return [i for i in table[engine].calibration_rows if i in b.index and b.at[i, "category"] == category]

    # 1. decode, single-GPU rows: bandwidth efficiency and per-layer GPU latency (llama.cpp, vLLM)
    for engine in ("llama.cpp", "vllm"):
        rows = [r for r in _rows(catalog, ids(engine, "decode_speed")) if int(_num(r.get("num_gpus"), 1)) == 1]
        if rows:
            eta, c = _fit_2d([_decode_terms(r, catalog) for r in rows], table[engine].compute_efficiency)
            out.setdefault(engine, {}).update(bw_efficiency=eta, layer_overhead_ms=c)
    fitted = {e: with_efficiency(table[e], **v) for e, v in out.items()}
    table2 = {**table, **fitted}
    # 2. prefill compute efficiency (llama.cpp prompt-processing rows)
    rows = _rows(catalog, ids("llama.cpp", "prefill_speed"))
    if rows:
        best = _fit_1d(rows, catalog, table2, "llama.cpp", "compute_efficiency", GRID_COMPUTE, "prefill_speed")
        out.setdefault("llama.cpp", {})["compute_efficiency"] = best
        table2["llama.cpp"] = with_efficiency(table2["llama.cpp"], compute_efficiency=best)
        for e in table2:  # engines that borrow it
            if "compute_efficiency from llama.cpp" in table2[e].borrowed_from:
                table2[e] = with_efficiency(table2[e], compute_efficiency=best)
    # 3. all-reduce latency from multi-GPU tensor-parallel rows (vLLM)
    rows = [r for r in _rows(catalog, ids("vllm", "decode_speed")) if int(_num(r.get("num_gpus"), 1)) > 1]
    if rows:
        out.setdefault("vllm", {})["allreduce_latency_ms"] = _fit_1d(
            rows, catalog, table2, "vllm", "allreduce_latency_ms", GRID_LATENCY_MS, "decode_speed")
    # 4. host launch time per layer (transformers eager generate; its GPU factors are vLLM's)
    rows = _rows(catalog, ids("transformers", "decode_speed"))
    if rows:
        base = table2["transformers"]
        for col in ("bw_efficiency", "layer_overhead_ms"):
            if f"{col} from vllm" in base.borrowed_from and "vllm" in out and col in out["vllm"]:
                base = with_efficiency(base, **{col: out["vllm"][col]})
        table2["transformers"] = base
        out.setdefault("transformers", {})["host_layer_ms"] = _fit_1d(
            rows, catalog, table2, "transformers", "host_layer_ms", GRID_HOST_MS, "decode_speed")
    # 5. MFU: geometric mean of the published MFU rows named (the least-squares value in log space)
    mfu_ids = [i for i in table["training"].calibration_rows if i in b.index]
    if mfu_ids:
        measured = b["measured"].astype(float)
        vals = np.array([measured[i] for i in mfu_ids], dtype=float)
        out["training"] = {"mfu": float(np.round(np.exp(np.mean(np.log(vals))), 4))}
    return out


def _fit_1d(rows, catalog, table, engine, col, grid, category) -> float:
    """Grid search (every 8th grid value, then every value around the best): the same minimum as the
    full grid for the smooth one-parameter errors here, at a fraction of the cost."""
    coarse = _search(rows, catalog, table, engine, col, grid[::8])
    i = int(np.searchsorted(grid, coarse))
    return _search(rows, catalog, table, engine, col, grid[max(0, i - 8): i + 9])


def _search(rows, catalog, table, engine, col, grid) -> float:
    best, best_sse = float(grid[0]), math.inf
    for v in grid:
        t = {**table, engine: with_efficiency(table[engine], **{col: float(v)})}
        sse = 0.0
        for r in rows:
            try:
                est = row_estimate(r, catalog, t)
            except GpucostError:
                continue
            sse += math.log(est / float(r["measured"])) ** 2
        if sse < best_sse:
            best, best_sse = float(v), sse
    return best
