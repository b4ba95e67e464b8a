"""The one loader of gpucost's data tables, with schema validation and user overrides.

Every table is a CSV file with a header row. The bundled tables live in ``data/`` of the repository
(installed as ``gpucost/data``). A user replaces any table with their own file by

* ``GPUCOST_DATA_DIR=DIR`` — each table is read from ``DIR/<name>.csv`` when that file exists, else the
  bundled one is used;
* the ``path=`` / ``overrides=`` arguments of :func:`load_table` and :class:`Catalog`;
* an upload on a page (which goes through :func:`validate_bytes`).

A bad file raises :class:`gpucost.errors.DataError` naming the file, the row and the column. A SkyPilot
catalog ``vms.csv`` is accepted wherever ``cloud_offers`` is expected (:func:`load_skypilot_vms`).
"""

from __future__ import annotations

import ast
import csv
import io
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from gpucost.errors import DataError, UnknownNameError, closest

if TYPE_CHECKING:
    from gpucost.markets import Market

# --------------------------------------------------------------------------------------------------
# Schemas. A column kind is one of:
#   id        non-empty text, unique in the table
#   str       non-empty text            str?   optional text
#   num+      number > 0                num+?  optional number > 0
#   num0      number >= 0               num0?  optional number >= 0
#   num?      optional number (any sign)
#   int0      whole number >= 0         int+? optional whole number > 0     int0? optional whole >= 0
#   bool      true/false (also yes/no, 1/0)        bool?  optional
#   date      YYYY-MM-DD
#   enum:a|b  one of the listed values (case-insensitive on input, stored as listed)
#   currency  an ISO code present in fx.csv
#   ref:T     an id of table T (gpus, models, quant_formats)
#   ref:T?    optional reference
# --------------------------------------------------------------------------------------------------

SOURCE_COLS = {"source": "str", "as_of": "date", "notes": "str?"}

SCHEMAS: dict[str, dict[str, str]] = {
    "gpus": {
        "id": "id", "name": "str", "vendor": "enum:NVIDIA|AMD|Intel|Huawei",
        "segment": "enum:consumer|workstation|datacenter", "architecture": "str",
        "compute_capability": "num+?", "vram_gib": "num+", "memory_type": "str?",
        "mem_bandwidth_gbps": "num+?", "fp32_tflops": "num+?", "fp16_tflops": "num+?",
        "bf16_tflops": "num+?", "fp8_tflops": "num+?", "fp4_tflops": "num+?", "int8_tops": "num+?",
        "tdp_w": "num+?",
        "pcie_gen": "int+?", "nvlink_gbps": "num+?", "link_name": "str?", "mig_max_instances": "int0",
        "release_year": "int+?", "form_factor": "enum:pcie|sxm|oam|superchip|soc?",
        "host_type": "enum:desktop|workstation|pcie_server|baseboard_server|rack|mini_pc?",
        "aliases": "str?", **SOURCE_COLS,
    },
    "prices": {
        "gpu_id": "ref:gpus", "condition": "enum:new|used", "price": "num+", "currency": "currency",
        "region": "str", "channel": "str?", **SOURCE_COLS,
    },
    "cloud_offers": {
        "provider": "str", "InstanceType": "str", "AcceleratorName": "str", "AcceleratorCount": "num+",
        "vCPUs": "num+?", "MemoryGiB": "num+?", "Price": "num+?", "SpotPrice": "num+?",
        "ReservedPrice1y": "num+?", "ReservedPrice3y": "num+?", "Region": "str?",
        "currency": "currency", "gpu_id": "ref:gpus", **SOURCE_COLS,
    },
    "fx": {"currency": "id", "per_usd": "num+", **SOURCE_COLS},
    # what hosted APIs charge per 1M tokens, and the open-weights model each is comparable to
    "api_prices": {
        "provider": "str", "api_model": "str", "comparable_model": "str?", "input_per_mtok": "num0",
        "cached_input_per_mtok": "num0?", "output_per_mtok": "num0", "currency": "currency", "region": "str?",
        "tier": "str?", **SOURCE_COLS,
    },
    "models": {
        "id": "id", "hf_repo": "str?", "aliases": "str?", "family": "str", "kind": "enum:llm|diffusion",
        "params_total_b": "num+", "params_active_b": "num+?", "num_layers": "int+?",
        "hidden_size": "int+?", "num_attention_heads": "int+?", "num_kv_heads": "int+?",
        "head_dim": "int+?", "intermediate_size": "int+?", "moe_intermediate_size": "int+?",
        "vocab_size": "int+?", "max_context": "int+?", "tie_embeddings": "bool?",
        "num_experts": "int0?", "experts_per_token": "int0?", "num_shared_experts": "int0?",
        "first_dense_layers": "int0?", "sliding_window": "int+?", "sliding_window_layers": "int0?",
        "kv_lora_rank": "int+?", "q_lora_rank": "int+?", "qk_rope_head_dim": "int+?",
        "qk_nope_head_dim": "int+?", "v_head_dim": "int+?", "vision_params_b": "num0?",
        "full_attention_interval": "int0?", "linear_num_key_heads": "int0?", "linear_num_value_heads": "int0?",
        "linear_key_head_dim": "int0?", "linear_value_head_dim": "int0?", "linear_conv_kernel": "int0?",
        "moe_layer_step": "int0?", "image_tokens": "int0?", "cross_attention_layers": "int0?", "torch_dtype": "str?",
        **SOURCE_COLS,
    },
    "quant_formats": {
        "id": "id", "name": "str", "family": "str", "bits_per_weight": "num+", "group_size": "int+?",
        "overhead_note": "str?", "high_precision_tensors": "str?", "kv_compatible": "str?",
        "min_compute_capability": "num+?", "engines": "str?", "ppl_delta": "num?",
        "ppl_delta_model": "str?", "ppl_delta_source": "str?", **SOURCE_COLS,
    },
    # the validation corpus: published measurements, one source document per source_id
    "benchmarks": {
        "id": "id", "category": "enum:file_size|inference_memory|training_memory|decode_speed|prefill_speed|mfu|"
                                "ttft|tpot|serving_throughput|serving_ttft|serving_tpot",
        "model_id": "str", "quant": "str?", "mode": "str?", "engine": "str?", "engine_version": "str?",
        "backend": "enum:cuda|rocm|vulkan|metal|sycl|cpu?", "gpu_id": "str?", "num_gpus": "int+?",
        "batch": "int+?", "context": "int0?", "prompt_tokens": "num0?", "gen_tokens": "num0?",
        "concurrency": "int+?", "lora_rank": "int+?", "grad_checkpointing": "str?", "optimizer": "str?",
        "zero_stage": "int0?", "offload": "str?", "measured": "num+", "unit": "str",
        "measure_kind": "enum:allocator_peak|reserved|nvidia_smi|engine_log|model_weights|kv_cache|file|"
                        "throughput|latency|mfu|unknown?",
        "source_id": "str", "source": "str", "as_of": "date", "retrieved_on": "date?", "notes": "str?",
    },
    "engine_efficiency": {
        "engine": "id", "bw_efficiency": "num+?", "layer_overhead_ms": "num0?", "host_layer_ms": "num0?",
        "compute_efficiency": "num+?", "allreduce_latency_ms": "num0?", "mfu": "num+?", "time_factor": "num+?",
        "request_latency_ms": "num0?", "fallback": "str?",
        "calibration_rows": "str?", **SOURCE_COLS,
    },
    # the estimators' cross-validated error on the corpus, per category and engine (tools/calibrate.py)
    "error_bands": {
        "category": "str", "engine": "str", "rows": "int+", "sources": "int0", "median_abs_error_pct": "num0?",
        "p90_abs_error_pct": "num0?", "p10": "num+", "p50": "num+", "p90": "num+", "band_q_low": "num0?",
        "band_q_high": "num0?",
        "low": "num+?", "high": "num+?", **SOURCE_COLS,
    },
    "tco_defaults": {
        "key": "str", "variant": "str?", "region": "str?", "value": "num0", "low": "num0?",
        "high": "num0?", "unit": "str", "currency": "currency?", **SOURCE_COLS,
    },
    "mig_profiles": {
        "id": "id", "gpu_id": "ref:gpus", "profile": "str", "memory_gb": "num+", "memory_slices": "int+",
        "memory_slices_total": "int+", "compute_slices": "int+", "compute_slices_total": "int+",
        "max_instances": "int+", "placements": "str", "media_extensions": "bool", **SOURCE_COLS,
    },
    # PyTorch's caching allocator: what it reserves above the allocated peak of a training run, measured on pairs
    # of one run's two figures in the corpus (tools/calibrate.py, gpucost.validation.fit.fit_reserve_ratio)
    "allocator": {
        "regime": "enum:training", "churn_reserved_over_allocated": "num+", "p10": "num+", "p90": "num+", "pairs": "int+",
        "documents": "int+", "calibration_rows": "str", **SOURCE_COLS,
    },
    # a mixture-of-experts layer's routed experts: the share of the dense compute rate their matrix products reach,
    # fitted on the corpus's serving runs of MoE models (tools/calibrate.py, gpucost.validation.fit.fit_moe_share)
    "moe_efficiency": {
        "scope": "enum:all", "moe_compute_share": "num+", "rows": "int+", "documents": "int+",
        "calibration_rows": "str", **SOURCE_COLS,
    },
    # what each training framework (and version) keeps on the card: gpucost.memory's training terms
    "training_profiles": {
        # a row with based_on may leave a field empty: the based_on framework's value on the run's date
        "framework": "str", "since": "date", "version": "str?", "based_on": "str?",
        "precision": "enum:mixed|bf16|fp32?", "kbit_param_bytes": "num+?", "loss_bytes_per_logit": "num+?",
        "norm_saves_fp32": "bool?", "gqa_expand": "bool?", "quant_saves_inputs": "bool?", "lora_dropout": "bool?",
        "offload_checkpoints": "bool?", "optimizer_in_backward": "bool?", "adapter_copy": "enum:none|quantized|always?",
        "kbit_act_bytes": "num+?", "source": "str", "as_of": "date", "retrieved_on": "date?", "notes": "str?",
    },
}

#: optional columns a table gained after its first release (a user's file written before may lack them)
OPTIONAL_NEW_COLUMNS: dict[str, tuple[str, ...]] = {
    "gpus": ("form_factor", "host_type", "retrieved_on", "fp4_tflops"),
    "mig_profiles": ("retrieved_on",),
    "error_bands": ("band_q_low", "band_q_high", "low", "high"),
    "prices": ("retrieved_on",),
    "models": ("vision_params_b", "retrieved_on", "full_attention_interval", "linear_num_key_heads",
               "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim", "linear_conv_kernel",
               "moe_layer_step", "image_tokens", "cross_attention_layers"),
    "cloud_offers": ("provider_kind", "retrieved_on"),
    "training_profiles": ("adapter_copy", "kbit_act_bytes"),
    "benchmarks": ("backend", "prompt_tokens", "concurrency", "offload", "measure_kind", "retrieved_on")}

#: Tables whose rows refer to other tables load those first (for ``ref:`` and ``currency`` checks).
TABLE_NAMES: tuple[str, ...] = tuple(SCHEMAS)

_TRUE = {"true", "yes", "1", "y", "t"}
_FALSE = {"false", "no", "0", "n", "f"}
_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def bundled_data_dir() -> Path:
    """The folder of the bundled tables: ``gpucost/data`` when installed, ``<repo>/data`` in a checkout."""
    here = Path(__file__).resolve().parent
    for cand in (here / "data", here.parent / "data"):
        if (cand / "gpus.csv").is_file():
            return cand
    return here.parent / "data"


def user_data_dir() -> Path | None:
    """``GPUCOST_DATA_DIR`` when set (it need not hold every table). A value that is not a folder is an
    error, not a silent fall-back to the bundled tables."""
    val = os.environ.get("GPUCOST_DATA_DIR", "").strip()
    if not val:
        return None
    d = Path(val).expanduser()
    if not d.is_dir():
        raise DataError(f"GPUCOST_DATA_DIR={val} is not a folder (it does not exist, or is a file)")
    return d


def table_path(name: str, data_dir: str | Path | None = None) -> Path:
    """Where table ``name`` is read from: ``data_dir`` or ``GPUCOST_DATA_DIR`` first, else bundled."""
    _check_name(name)
    for d in (Path(data_dir) if data_dir else None, user_data_dir()):
        if d is None:
            continue
        cand = d / f"{name}.csv"
        if os.path.lexists(cand):  # there, but maybe not readable: say so, never fall back silently
            if not cand.is_file():
                what = "a folder" if cand.is_dir() else "a broken or looping link" if cand.is_symlink() else \
                    "not a regular file"
                raise DataError(f"{what}, not a readable table", file=str(cand))
            return cand
    return bundled_data_dir() / f"{name}.csv"


def _check_name(name: str) -> None:
    if name not in SCHEMAS:
        raise UnknownNameError("table", name, SCHEMAS, hint="valid tables: " + ", ".join(SCHEMAS))


# --------------------------------------------------------------------------------------------------
# Parsing and validation
# --------------------------------------------------------------------------------------------------

def _read_csv_text(text: str, label: str) -> pd.DataFrame:
    try:
        df = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False, na_filter=False,
                         skipinitialspace=False)
    except pd.errors.EmptyDataError:
        raise DataError("the file is empty (a header row is needed)", file=label) from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        msg = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
        m = re.search(r"line (\d+)", msg)
        row = int(m.group(1)) - 1 if m else None
        raise DataError(f"not a valid CSV file ({msg})", file=label, row=row) from None
    header = next(csv.reader(io.StringIO(text.splitlines()[0] if text else "")), [])
    names = [h.strip() for h in header]
    dup = sorted({h for h in names if names.count(h) > 1})
    if dup:  # pandas would rename the second one silently ('per_usd.1') and use the first
        raise DataError(f"the header has column '{dup[0]}' more than once", file=label)
    df.columns = [str(c).strip() for c in df.columns]
    return df.apply(lambda s: s.str.strip())


def _num(series: pd.Series) -> pd.Series:
    return pd.to_numeric(series.replace("", np.nan), errors="coerce")


@dataclass
class _Check:
    """One table's validation run: the text table, the known ids and currencies, the problems found."""

    df: pd.DataFrame
    refs: dict[str, set[str]]
    currencies: set[str] | None
    problems: list[tuple[int, str, str]] = field(default_factory=list)  # (row, column, message)
    table: str = ""

    def bad(self, mask: pd.Series, col: str, msg_fn: Callable[[str], str]) -> None:
        for idx in np.flatnonzero(mask.to_numpy()):
            self.problems.append((int(idx) + 1, col, msg_fn(self.df[col].iloc[idx])))

    def raise_first(self, label: str) -> None:
        """DataError for the first problem (by row), with the count of the others; nothing if none."""
        if not self.problems:
            return
        self.problems.sort()
        row, col, msg = self.problems[0]
        n = len(self.problems) - 1
        more = f" (and {n} more problem{'s' if n > 1 else ''})" if n else ""
        raise DataError(msg + more, file=label, row=row, column=col, problems=self.problems)


#: no figure in any table comes near this: larger ones are typos or attacks (1e308 hidden sizes)
MAX_MAGNITUDE = 1e12
#: nor this near zero: the smallest non-zero figure of the bundled tables is 0.0026 (a perplexity delta); a
#: non-zero value below this (1e-300) is a typo, and the engines divide by such figures (1 / 1e-300 tokens/s
#: is 1e300 GPU-hours)
MIN_MAGNITUDE = 1e-6
#: the lowest price of an offer per instance-hour, in its currency: the cheapest of the bundled offers is
#: 0.063 USD (Azure's spot price of a Standard_NC4as_T4_v3); under a cent an hour is a typo or a price per
#: second or minute
MIN_HOURLY_PRICE = 0.01
#: the lowest street price of a card, in its currency (the cheapest bundled one is 60 USD, a used P100)
MIN_CARD_PRICE = 1.0


@dataclass(frozen=True)
class Bounds:
    """What a numeric column admits: 0 itself when ``zero``; otherwise magnitudes from ``lo`` to ``hi``,
    negative ones too when ``signed``; whole numbers only when ``whole``. ``why`` says where ``lo`` comes
    from when it is a column's own floor."""

    lo: float = MIN_MAGNITUDE
    hi: float = MAX_MAGNITUDE
    zero: bool = False
    signed: bool = False
    whole: bool = False
    why: str = ""

    def admits(self, x: float) -> bool:
        if not np.isfinite(x) or (self.whole and x != np.floor(x)):
            return False
        if x == 0:
            return self.zero
        return (self.signed or x > 0) and self.lo <= abs(x) <= self.hi

    def range_text(self) -> str:
        """"0.01 to 1e+12 an instance-hour", "0, or 1e-06 to 1e+12 in size either way"."""
        span = f"{self.lo:g} to {self.hi:g}"
        if self.signed:
            span += " in size either way"
        return ("0, or " if self.zero else "") + span + (f" {self.why}" if self.why else "")


#: a column's floor where the kind's (non-zero magnitudes of at least MIN_MAGNITUDE) is too permissive:
#: table → column → (lowest value, why)
COLUMN_FLOORS: dict[str, dict[str, tuple[float, str]]] = {
    "cloud_offers": {c: (MIN_HOURLY_PRICE, "an instance-hour; a lower price is a typo, or a price per second "
                                           "or minute")
                     for c in ("Price", "SpotPrice", "ReservedPrice1y", "ReservedPrice3y")},
    "prices": {"price": (MIN_CARD_PRICE, "for a card's street price")},
}


def column_bounds(table: str, column: str) -> Bounds:
    """The values the numeric ``column`` of ``table`` admits (its kind, :data:`MIN_MAGNITUDE`,
    :data:`MAX_MAGNITUDE` and :data:`COLUMN_FLOORS`); what validation checks and the engines may assume."""
    base = SCHEMAS[table][column].rstrip("?")
    if base not in _NUMERIC_KINDS:
        raise ValueError(f"{table}.{column} is not a numeric column ({base})")
    lo, why = COLUMN_FLOORS.get(table, {}).get(column, (MIN_MAGNITUDE, ""))
    return Bounds(lo=lo, zero=base in ("num0", "int0", "num"), signed=base == "num", whole=base.startswith("int"),
                  why=why)


def _check_number(c: _Check, col: str, base: str, raw: pd.Series, present: pd.Series) -> pd.Series:
    num = _num(raw)
    b = column_bounds(c.table, col) if c.table else Bounds(zero=base in ("num0", "int0", "num"),
                                                              signed=base == "num")
    c.bad(present & num.isna(), col, lambda v: f"'{v}' is not a number")
    c.bad(present & num.notna() & ~np.isfinite(num), col, lambda v: f"'{v}' is not a finite number")
    c.bad(present & np.isfinite(num) & (num.abs() > b.hi), col,
          lambda v: f"{v} is out of range (at most {b.hi:g})")
    num = num.where(np.isfinite(num))
    ok = present & num.notna()
    if base in ("num+", "int+"):
        c.bad(ok & (num <= 0), col, lambda v: f"{v} must be greater than zero")
    if base in ("num0", "int0"):
        c.bad(ok & (num < 0), col, lambda v: f"{v} must not be negative")
    c.bad(ok & (num != 0) & ((num > 0) | b.signed) & (num.abs() < b.lo), col,
          lambda v: f"{v} is out of range ({b.range_text()})")
    if base.startswith("int"):
        c.bad(ok & (num != np.floor(num)), col, lambda v: f"{v} must be a whole number")
    return num


def _check_bool(c: _Check, col: str, base: str, raw: pd.Series, present: pd.Series) -> pd.Series:
    low = raw.str.lower()
    c.bad(present & ~low.isin(_TRUE | _FALSE), col, lambda v: f"'{v}' is not true/false")
    return low.map(lambda v: True if v in _TRUE else (False if v in _FALSE else None))


def _check_date(c: _Check, col: str, base: str, raw: pd.Series, present: pd.Series) -> None:
    badfmt = present & ~raw.str.match(_DATE_RE)
    parsed = pd.to_datetime(raw.where(present & ~badfmt), format="%Y-%m-%d", errors="coerce")
    c.bad(badfmt | (present & ~badfmt & parsed.isna()), col, lambda v: f"'{v}' is not a date (YYYY-MM-DD)")


def _check_enum(c: _Check, col: str, base: str, raw: pd.Series, present: pd.Series) -> pd.Series:
    allowed = base[5:].split("|")
    lower = {a.lower(): a for a in allowed}
    low = raw.str.lower()

    def msg(v: str) -> str:
        near = closest(v, allowed, 1)
        return f"'{v}' is not one of {', '.join(allowed)}" + (f" (closest: {near[0]})" if near else "")
    c.bad(present & ~low.isin(lower), col, msg)
    return low.map(lambda v: lower.get(v, v))


def _check_currency(c: _Check, col: str, base: str, raw: pd.Series, present: pd.Series) -> pd.Series:
    up = raw.str.upper()
    if c.currencies is not None:
        known = ", ".join(sorted(c.currencies))
        c.bad(present & ~up.isin(c.currencies), col, lambda v: f"unknown currency '{v}' (fx.csv has {known})")
    return up


def _check_ref(c: _Check, col: str, base: str, raw: pd.Series, present: pd.Series) -> None:
    target = base[4:]
    if target not in c.refs:
        return
    ids = c.refs[target]

    def msg(v: str) -> str:
        near = closest(v, ids)
        return f"unknown {target} id '{v}'" + (f"; closest: {', '.join(near)}" if near else "")
    c.bad(present & ~raw.isin(ids), col, msg)


def _check_id(c: _Check, col: str, base: str, raw: pd.Series, present: pd.Series) -> None:
    c.bad(present & raw.duplicated(keep="first"), col, lambda v: f"duplicate id '{v}'")


#: a column kind's checker: (run, column, kind, text column, non-empty mask) → the typed column or None
_CHECKS: dict[str, Callable[..., pd.Series | None]] = {
    "num+": _check_number, "num0": _check_number, "num": _check_number, "int+": _check_number,
    "int0": _check_number, "bool": _check_bool, "date": _check_date, "enum": _check_enum,
    "currency": _check_currency, "ref": _check_ref, "id": _check_id}
#: the column kinds that hold numbers
_NUMERIC_KINDS = ("num+", "num0", "num", "int+", "int0")


def _check_header(df: pd.DataFrame, name: str, label: str) -> pd.DataFrame:
    """The table with any optional later-added columns filled in; raises on a missing column or no rows."""
    schema = SCHEMAS[name]
    cols = list(df.columns)
    #: optional columns added to a schema later may be absent from a user's older file: empty everywhere
    absent = [c for c in OPTIONAL_NEW_COLUMNS.get(name, ()) if c not in df.columns]
    if absent:
        df = df.assign(**{c: "" for c in absent})
    for col in schema:
        if col not in df.columns:
            extra = [c for c in cols if c not in schema]
            guess = closest(col, extra, n=1)
            hint = f"; found '{guess[0]}' — misspelt?" if guess else f"; the header has: {', '.join(cols)}"
            raise DataError(f"missing column '{col}'{hint}", file=label)
    if df.empty:
        raise DataError("the table has a header but no rows", file=label)
    return df


def validate(df: pd.DataFrame, name: str, *, label: str | None = None,
             refs: Mapping[str, Iterable[str]] | None = None,
             currencies: Iterable[str] | None = None) -> pd.DataFrame:
    """Check ``df`` (all text) against the schema of table ``name``; return it with typed columns.

    ``refs`` maps a table name to its valid ids (for ``ref:`` columns); ``currencies`` lists the codes
    of fx.csv. Raises :class:`DataError` on the first problem (by row), with the count of others.
    """
    _check_name(name)
    label = label or f"{name}.csv"
    df = _check_header(df, name, label)
    c = _Check(df, {k: set(v) for k, v in (refs or {}).items()},
               set(currencies) if currencies is not None else None, table=name)
    out = df.copy()
    for col, kind in SCHEMAS[name].items():
        raw = df[col]
        base = kind.rstrip("?")
        empty = raw == ""
        if not kind.endswith("?"):
            c.bad(empty, col, lambda v: "empty, a value is required")
        typed = _CHECKS.get(base.split(":")[0], lambda *_: None)(c, col, base, raw, ~empty)
        if typed is not None:
            out[col] = typed
    if name == "cloud_offers":
        none = (df[["Price", "SpotPrice", "ReservedPrice1y", "ReservedPrice3y"]] == "").all(axis=1)
        c.bad(none, "Price", lambda v: "no price at all (Price, SpotPrice or a reserved price is needed)")
    c.raise_first(label)
    return out


def load_skypilot_vms(source: str | Path | io.StringIO, *, provider: str | None = None,
                      gpus: pd.DataFrame | None = None, as_of: str | None = None,
                      label: str | None = None) -> pd.DataFrame:
    """Read a SkyPilot catalog ``vms.csv`` and return rows in the ``cloud_offers`` schema.

    Columns are found by name (their order differs between clouds). ``GpuInfo`` is a Python-literal
    dict. Empty prices stay empty. The catalog has one row per zone; rows are folded per instance type
    and region: the on-demand price is the lowest of the zones, and so is the spot price. Rows without an
    accelerator, or whose accelerator is not a catalog GPU, are left out.
    """
    if isinstance(source, (str, Path)):
        path = Path(source)
        label = label or str(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise DataError(f"cannot read the file ({exc.strerror})", file=label) from None
        if as_of is None:
            as_of = date.fromtimestamp(path.stat().st_mtime).isoformat()
    else:
        text = source.getvalue()
        label = label or "vms.csv"
    df = _read_csv_text(text, label)
    required = ["InstanceType", "AcceleratorName", "AcceleratorCount", "Price", "SpotPrice"]
    for col in required:
        if col not in df.columns:
            raise DataError(f"missing column '{col}' of a SkyPilot vms.csv", file=label)
    for i, info in enumerate(df.get("GpuInfo", pd.Series([], dtype=str))):
        # GpuInfo is a Python-literal dict for GPUs; TPU rows carry a plain name (e.g. 'tpu-v6e-1')
        if info.startswith("{"):
            try:
                ast.literal_eval(info)
            except (ValueError, SyntaxError):
                raise DataError("GpuInfo is not a Python-literal dict", file=label, row=i + 1,
                                column="GpuInfo") from None
    _check_vms_numbers(df, label)
    df = df[df["AcceleratorName"] != ""].copy()
    gpus = gpus if gpus is not None else load_table("gpus")
    index = gpu_alias_index(gpus)
    df["gpu_id"] = df["AcceleratorName"].map(lambda n: index.get(normalize_name(n)))
    df = df[df["gpu_id"].notna()]
    for col in VMS_NUMBER_COLUMNS:
        df[col] = _num(df[col]) if col in df.columns else np.nan
    for col in VMS_PRICE_COLUMNS:
        df[col] = df[col].where(df[col] != 0)  # no price in that zone
    if "Region" not in df.columns:
        df["Region"] = ""
    # GCP lists attachable GPUs as rows without an instance type, priced for the GPUs alone
    gpu_only = df["InstanceType"] == ""
    df.loc[gpu_only, "InstanceType"] = (df.loc[gpu_only, "AcceleratorName"] + " x"
                                        + df.loc[gpu_only, "AcceleratorCount"].map("{:g}".format)
                                        + " (GPU only)")
    df["gpu_only"] = gpu_only
    folded = (df.groupby(["InstanceType", "AcceleratorName", "AcceleratorCount", "Region"], as_index=False,
                         sort=False)
                .agg(vCPUs=("vCPUs", "first"), MemoryGiB=("MemoryGiB", "first"), Price=("Price", "min"),
                     SpotPrice=("SpotPrice", "min"), gpu_id=("gpu_id", "first"),
                     gpu_only=("gpu_only", "first")))
    folded = folded[folded["Price"].notna() | folded["SpotPrice"].notna()]
    folded.insert(0, "provider", provider or skypilot_cloud(df))
    folded["ReservedPrice1y"] = np.nan
    folded["ReservedPrice3y"] = np.nan
    folded["currency"] = "USD"
    folded["source"] = f"SkyPilot catalog {label}"
    folded["as_of"] = as_of or date.today().isoformat()
    folded["notes"] = np.where(
        folded["gpu_only"], "imported from a SkyPilot vms.csv; GPU-only price (the host VM is billed on top); "
        "lowest price over the region's zones",
        "imported from a SkyPilot vms.csv; lowest price over the region's zones")
    return folded[list(SCHEMAS["cloud_offers"])].reset_index(drop=True)


#: the numbers of a SkyPilot vms.csv, checked with the bounds of the cloud_offers column they become
VMS_NUMBER_COLUMNS = ("AcceleratorCount", "vCPUs", "MemoryGiB", "Price", "SpotPrice")


#: its price columns: SkyPilot writes 0 where a zone has no such price (Vast's SpotPrice), as empty does
VMS_PRICE_COLUMNS = ("Price", "SpotPrice")


def _check_vms_numbers(df: pd.DataFrame, label: str) -> None:
    """The numbers of a vms.csv's accelerator rows, checked as the cloud_offers columns they fill (an empty
    cell, or a price of 0, is no price: a zone without spot); DataError naming the vms.csv's own row."""
    c = _Check(df, {}, None, table="cloud_offers")
    accel = df["AcceleratorName"] != ""
    for col in VMS_NUMBER_COLUMNS:
        if col in df.columns:
            present = accel & (df[col] != "")
            if col in VMS_PRICE_COLUMNS:
                present &= _num(df[col]) != 0
            _check_number(c, col, SCHEMAS["cloud_offers"][col].rstrip("?"), df[col], present)
    c.raise_first(label)


#: SkyPilot's clouds by how their catalogs name instance types (the catalog has no provider column)
SKYPILOT_INSTANCE_NAMES = {
    "aws": r"[a-z][a-z0-9-]*\.(?:\d*x?large|metal[\w-]*)",   # p4d.24xlarge, g5.xlarge
    "azure": r"Standard_\w+",                                # Standard_NC24ads_A100_v4
    "gcp": r"[a-z]\d[a-z]?-[a-z]+-\d+g?|.+ \(GPU only\)",     # a2-highgpu-1g; attachable GPUs
    "oci": r"(?:VM|BM)\.[\w.]+",                             # BM.GPU.H100.8
    "lambda": r"gpu_\d+x_\w+",                               # gpu_1x_h100_pcie
    "runpod": r"\d+x_[\w-]+_(?:SECURE|COMMUNITY)",            # 1x_A100-80GB_SECURE
    "vast": r"\d+x-[\w-]+-\d+-\d+",                          # 2x-RTX_4090-32-65536
    "primeintellect": r"[a-z0-9]+__\d+x\w+__\d+__\d+",        # lambdalabs__8xH100_80GB__208__1800
    "ibm": r"gx\d[\w-]*",                                     # gx2-8x64x1v100
    "do": r"gpu-[a-z0-9]+x\d+-[\w-]+",                        # gpu-h100x1-80gb
    "nebius": r"gpu-[\w-]+_\d+gpu-[\w-]+",                    # gpu-h100-sxm_8gpu-128vcpu-1600gb
}


def skypilot_cloud(df: pd.DataFrame) -> str:
    """The cloud a SkyPilot ``vms.csv`` lists, from its content: the one whose instance-type naming
    (:data:`SKYPILOT_INSTANCE_NAMES`) at least 80 % of its rows follow; ``skypilot`` when none does. Never
    the name of the folder the file was found in (a data folder is not a cloud)."""
    names = [n for n in df["InstanceType"].astype(str) if n]
    if not names:
        return "skypilot"
    best, share = "skypilot", 0.0
    for cloud, pattern in SKYPILOT_INSTANCE_NAMES.items():
        rx = re.compile(pattern)
        s = sum(1 for n in names if rx.fullmatch(n)) / len(names)
        if s > share:
            best, share = cloud, s
    return best if share >= 0.8 else "skypilot"


def _as_text(df: pd.DataFrame) -> pd.DataFrame:
    """Back to all-text cells (empty for missing), so imported rows validate like a file's."""
    return df.map(lambda v: "" if v is None or (isinstance(v, float) and np.isnan(v)) else
                  (f"{v:g}" if isinstance(v, float) else str(v)))


def _is_skypilot(df: pd.DataFrame) -> bool:
    return "GpuInfo" in df.columns and "source" not in df.columns


# --------------------------------------------------------------------------------------------------
# Names
# --------------------------------------------------------------------------------------------------

_DROP_WORDS = re.compile(r"\b(nvidia|geforce|tesla|amd|instinct)\b")


def normalize_name(name: str) -> str:
    """Fold a GPU or model name for matching: case, vendor words, spaces and punctuation."""
    s = _DROP_WORDS.sub(" ", str(name).lower())
    return re.sub(r"[^a-z0-9.]+", "", s).replace(".", "")


def gpu_alias_index(gpus: pd.DataFrame) -> dict[str, str]:
    """Normalized id, name and each alias → gpu id (the first row to claim a key keeps it)."""
    index: dict[str, str] = {}
    for gid, name, aliases in zip(gpus["id"], gpus["name"], gpus.get("aliases", [""] * len(gpus)),
                                  strict=False):
        keys = [gid, name, *[a for a in str(aliases or "").split(";") if a.strip()]]
        for key in keys:
            index.setdefault(normalize_name(key), gid)
    return index


# --------------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------------

_CACHE: dict[tuple, pd.DataFrame] = {}
_DERIVED: dict[tuple, tuple[tuple, object]] = {}


def derived(tables, what: str, build: Callable):
    """``build(tables)``, computed once per loaded table (or tuple of tables) and kept: an index, a
    parsed form or a summary that callers ask for many times per page or command. Loaded tables are
    read-only (see :func:`load_table`), so identity is the key; the cache is the one place derived data
    lives (every engine uses it instead of a module cache of its own)."""
    group = tables if isinstance(tables, tuple) else (tables,)
    key = (what, *map(id, group))
    hit = _DERIVED.get(key)
    if hit is None or any(a is not b for a, b in zip(hit[0], group, strict=True)):
        if len(_DERIVED) > 256:  # an id is reused only after its table is gone: drop stale entries
            _DERIVED.clear()
        hit = _DERIVED[key] = (group, build(tables))
    return hit[1]


def _file_key(path: Path) -> tuple:
    st = path.stat()
    return (str(path.resolve()), st.st_mtime_ns, st.st_size)


def load_table(name: str, path: str | Path | None = None, *, data_dir: str | Path | None = None,
               overrides: Mapping[str, str | Path] | None = None) -> pd.DataFrame:
    """Load and validate table ``name``; ``path`` replaces the file, ``overrides`` other tables' files.

    Returns a DataFrame with typed columns (numbers as floats, booleans, text). The result is cached by
    file path, size and modification time; treat it as read-only.
    """
    _check_name(name)
    overrides = dict(overrides or {})
    if path is not None:
        overrides[name] = path
    p = Path(overrides[name]) if name in overrides else table_path(name, data_dir)
    label = p.name if p.parent in (bundled_data_dir(),) else str(p)
    if not p.is_file():
        raise DataError("file not found", file=str(p))
    deps = _dependencies(name)
    dep_frames = {d: load_table(d, data_dir=data_dir, overrides=overrides) for d in deps}
    key = (name, _file_key(p), tuple(sorted((d, _file_key(_resolve(d, data_dir, overrides)))
                                            for d in deps)))
    if key in _CACHE:
        return _CACHE[key]
    try:
        text = p.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise DataError("not UTF-8 text", file=label) from None
    except OSError as exc:
        raise DataError(f"cannot read the file ({exc.strerror or type(exc).__name__})", file=label) from None
    df = _read_csv_text(text, label)
    if name == "cloud_offers" and _is_skypilot(df):  # the cloud from the file's content
        df = load_skypilot_vms(p, gpus=dep_frames["gpus"], label=label)
        df = _as_text(df)
    refs = {d: dep_frames[d]["id"] for d in deps if d != "fx"}
    currencies = dep_frames["fx"]["currency"] if "fx" in dep_frames else None
    out = validate(df, name, label=label, refs=refs, currencies=currencies)
    _CACHE[key] = out
    return out


def _resolve(name: str, data_dir, overrides) -> Path:
    return Path(overrides[name]) if name in overrides else table_path(name, data_dir)


def _dependencies(name: str) -> list[str]:
    deps = []
    for kind in SCHEMAS[name].values():
        base = kind.rstrip("?")
        if base == "currency" and "fx" not in deps:
            deps.append("fx")
        if base.startswith("ref:") and base[4:] not in deps:
            deps.append(base[4:])
    return deps


def validate_bytes(name: str, data: bytes, *, filename: str = "upload.csv",
                   catalog: Catalog | None = None) -> pd.DataFrame:
    """Validate an uploaded table against the others of ``catalog``; raise DataError or return it."""
    _check_name(name)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise DataError("not UTF-8 text", file=filename) from None
    df = _read_csv_text(text, filename)
    cat = catalog or Catalog()
    if name == "cloud_offers" and _is_skypilot(df):
        df = load_skypilot_vms(io.StringIO(text), gpus=cat.table("gpus"), label=filename)
        df = _as_text(df)
    deps = _dependencies(name)
    refs = {d: cat.table(d)["id"] for d in deps if d != "fx"}
    currencies = cat.table("fx")["currency"] if "fx" in deps else None
    return validate(df, name, label=filename, refs=refs, currencies=currencies)


#: the columns that say which bundled rows an uploaded row stands in for
MERGE_KEYS = {"prices": ("gpu_id", "condition"), "cloud_offers": ("provider", "InstanceType", "Region")}


def merge_upload(name: str, base: pd.DataFrame, upload: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """The bundled table with an upload's rows standing in for the rows they match (same card and
    condition for prices; same provider, instance and region for offers), the rest kept; and how many
    bundled rows were replaced."""
    keys = list(MERGE_KEYS[name])
    theirs = set(map(tuple, upload[keys].astype(str).to_numpy()))
    hit = [tuple(r) in theirs for r in base[keys].astype(str).to_numpy()]
    kept = base[[not h for h in hit]]
    return pd.concat([kept, upload], ignore_index=True), int(sum(hit))


@dataclass
class Catalog:
    """All tables of one data source: bundled, ``data_dir``/``GPUCOST_DATA_DIR``, or explicit files.

    ``frames`` holds tables given directly (an upload already validated). Tables load lazily. ``market``
    is where the user rents and buys (:class:`gpucost.offers.Market`; ``None`` follows the display
    currency): every cloud and street price read through this catalog is chosen in it.
    """

    data_dir: str | Path | None = None
    overrides: dict[str, str | Path] = field(default_factory=dict)
    frames: dict[str, pd.DataFrame] = field(default_factory=dict)
    market: Market | None = None

    def table(self, name: str) -> pd.DataFrame:
        if name not in self.frames:
            self.frames[name] = load_table(name, data_dir=self.data_dir, overrides=self.overrides)
        return self.frames[name]

    def with_table(self, name: str, frame: pd.DataFrame) -> Catalog:
        """A copy of this catalog in which ``name`` is replaced by an already validated frame."""
        frames = {k: v for k, v in self.frames.items() if k == name or name not in _dependencies(k)}
        frames[name] = frame
        return Catalog(self.data_dir, dict(self.overrides), frames, self.market)

    def with_market(self, market: Market | None) -> Catalog:
        """The same tables (shared, not reloaded) with cloud and street prices chosen in ``market``."""
        return Catalog(self.data_dir, self.overrides, self.frames, market)

    @property
    def gpus(self) -> pd.DataFrame:
        return self.table("gpus")

    @property
    def prices(self) -> pd.DataFrame:
        return self.table("prices")

    @property
    def offers(self) -> pd.DataFrame:
        return self.table("cloud_offers")

    @property
    def fx(self) -> pd.DataFrame:
        return self.table("fx")

    def gpu(self, name: str) -> pd.Series:
        """The catalog row of a GPU by id, name, NVML name or alias ("RTX 4090", "A100 80GB SXM")."""
        gid = self.gpu_id(name)
        row = self.gpus.set_index("id").loc[gid]
        assert isinstance(row, pd.Series)  # ids are unique (the schema checks it)
        return row

    def gpu_id(self, name: str) -> str:
        index = derived(self.gpus, "alias_index", gpu_alias_index)
        gid = index.get(normalize_name(name))
        if gid is None:
            raise UnknownNameError("GPU", name, list(self.gpus["id"]) + list(self.gpus["name"]))
        return gid

    def fx_rate(self, currency: str) -> float:
        """Units of ``currency`` per 1 USD."""
        fx = derived(self.fx, "fx_rates", lambda t: dict(zip(t["currency"], map(float, t["per_usd"]), strict=True)))
        cur = currency.upper()
        if cur not in fx:
            raise UnknownNameError("currency", currency, list(fx), hint="fx.csv has " + ", ".join(fx))
        return fx[cur]

    def convert(self, amount, from_currency: str, to_currency: str):
        """Convert an amount (number or array) between currencies through USD rates of fx.csv."""
        return amount * (self.fx_rate(to_currency) / self.fx_rate(from_currency))

    def currencies(self) -> list[str]:
        return list(self.fx["currency"])

    def default_row(self, key: str, variant: str | None = None, region: str | None = None) -> dict | None:
        """The tco_defaults.csv row for ``key`` (and ``variant``, case-insensitive); ``region`` matches
        exactly, then by country (US-CA → US), then a row without a region. None when there is none."""
        rows = derived(self.table("tco_defaults"), "default_rows",
                       lambda t: t.to_dict(orient="records"))
        rows = [r for r in rows if r["key"] == key
                and (variant is None or str(r["variant"]).lower() == variant.lower())]
        if region is not None:
            for want in (region.upper(), region.split("-")[0].upper(), ""):
                exact = [r for r in rows if str(r["region"]).upper() == want]
                if exact:
                    return exact[0]
            return None
        return rows[0] if rows else None

    def default_value(self, key: str, variant: str | None = None) -> tuple[float, str]:
        """(value, "source (as_of)") of a tco_defaults.csv row; DataError-free GpucostError when missing."""
        from gpucost.errors import GpucostError

        r = self.default_row(key, variant)
        if r is None:
            raise GpucostError(f"no '{key}'{f' ({variant})' if variant else ''} in tco_defaults.csv")
        return float(r["value"]), f"{r['source']} ({r['as_of']})"

    def as_of(self, name: str) -> str:
        """The newest as-of date in a table (what the pages show as the date of their prices)."""
        return str(self.table(name)["as_of"].max())

    def oldest_as_of(self, name: str) -> str:
        return str(self.table(name)["as_of"].min())
