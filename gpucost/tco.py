"""Total cost of ownership: buy (new or used), lease, or rent (on-demand, spot, reserved) or mix them.

Pure numpy/pandas over the catalog and ``data/tco_defaults.csv``; no UI, no argparse.

The model (all money in one currency, months m = 1..M, H = 730 hours a month):

* **Demand** ``D[m]`` in GPU-hours of the *owned* card (the reference card): a steady load
  (``demand.utilization`` × cards × H, or ``demand.gpu_hours_per_month``) growing by
  ``(1 + growth)^((m-1)/12)``, plus bursts every few months, plus jobs (training runs, serving loads in
  tokens). A cloud card that is ``relative_speed`` times faster needs ``D / relative_speed`` hours.
* **Owned cards** (buy new, buy used): the owned fleet serves ``min(D, N·H·max_utilization)``; the rest
  is bought on demand. Cost to date is the *liquidation view* — what it cost if you sold at month m:
  ``N·host + N·price·(1 − (1 − fee)·ρ^(m/12)) + Σ running`` with running = electricity
  ``N·(TDP·(idle + (1 − idle)·u) + host_W)·PUE·H·price_kWh`` (``u`` = busy fraction; with
  ``always_on: false`` the machine draws ``N·(TDP + host_W)·u`` only), colocation per kW-month of
  provisioned power, maintenance (fraction of capex a year), a failure reserve (failures a year × card
  price), staff time and the overflow. ρ (value kept per year) comes from the catalog's used/new prices
  and the card's age.
* **Lease to own**: an annuity ``A·r / (1 − (1 + r)^−T)`` on the new cards and hosts; cost to date =
  paid + balance still owed − resale value + running costs (so it equals buying plus interest).
* **On-demand**: ``D / speed × price``.
* **Spot**: expected GPU-hours = work × (1 + δ/τ) / (1 − gλ(R + τ/2)) with τ = √(2 δ MTBF) (Young),
  MTBF = 1/(gλ) for a job on g GPUs, δ the checkpoint time, R the restart time, λ the interruption rate
  per instance-hour from the provider's monthly bucket (λ = −ln(1 − p)/H). Never below price × work.
* **Reserved 1 y / 3 y**: each term reserves enough GPUs for that term's peak month and pays all their
  hours up front in the liquidation view (a commitment is owed whether used or not).
* **Hybrid**: k owned (new or used) or reserved GPUs as a base plus bursts on spot or on demand; the k
  (and base and burst kind) with the lowest total is chosen; the cost of keeping headroom is shown.

Every default that is not in the scenario file comes from the catalog or ``tco_defaults.csv`` with its
source; a figure that has no source is a required scenario input.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from types import MappingProxyType

import numpy as np
import pandas as pd
import yaml

from gpucost.catalog import Catalog, bundled_data_dir, user_data_dir
from gpucost.errors import GpucostError, UnknownNameError, closest

# --------------------------------------------------------------------------------------------------
# Constants
# --------------------------------------------------------------------------------------------------

#: hours in an average month [h]: 365 days × 24 h / 12 (definition; cloud providers bill 730 h a month)
HOURS_PER_MONTH = 365 * 24 / 12
#: option id → kind (the CLI's ``kind`` field)
OPTION_KIND = {
    "buy-new": "buy-new", "buy-used": "buy-used", "lease": "lease", "on-demand": "cloud-on-demand",
    "spot": "cloud-spot", "reserved-1y": "cloud-reserved", "reserved-3y": "cloud-reserved",
    "hybrid": "hybrid",
}
OPTION_IDS = tuple(OPTION_KIND)
KINDS = ("buy-new", "buy-used", "lease", "cloud-on-demand", "cloud-spot", "cloud-reserved", "hybrid")
OWNED_OPTIONS = ("buy-new", "buy-used", "lease")
RENTED_OPTIONS = ("on-demand", "spot", "reserved-1y", "reserved-3y")
RESERVED_TERM_MONTHS = {"reserved-1y": 12, "reserved-3y": 36}
SITES = ("home", "office", "colocation")
#: site → electricity tariff of tco_defaults.csv
SITE_TARIFF = {"home": "residential", "office": "commercial", "colocation": "industrial"}
SPOT_BUCKETS = ("<5%", "5-10%", "10-15%", "15-20%", ">20%")
HYBRID_BASES = ("owned-new", "owned-used", "reserved-1y", "reserved-3y")
BURST_KINDS = ("spot", "on-demand")
JOB_KINDS = ("training", "serving")
#: Sensitivity settings (NOT market data): the ± swing of each tornado / Monte Carlo input. Fractions
#: of the base value except ``utilization`` and ``resale`` (absolute). A scenario's ``uncertainty``
#: section replaces them. The spot interruption rate swings over its provider bucket when it has one.
DEFAULT_SWINGS = {
    "hardware_price": 0.2, "cloud_price": 0.2, "utilization": 0.2, "electricity": 0.3,
    "resale": 0.1, "interruption": 0.5, "fx": 0.1, "pue": 0.1,
}
#: the upper end of the open ">20%" spot bucket for the tornado (a sensitivity setting, not data)
OPEN_BUCKET_HIGH_FACTOR = 2.0
SCENARIO_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
_REQUIRED = object()


# --------------------------------------------------------------------------------------------------
# Scenario files
# --------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Field:
    kind: str  # num | int | str | bool | enum | gpu | currency | money | strlist
    default: object = None
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False
    choices: tuple[str, ...] = ()
    unit: str = ""
    help: str = ""


def _F(kind, default=None, **kw) -> _Field:
    return _Field(kind, default, **kw)


#: Every key a scenario file may hold (dotted path → field). Money values are in the scenario's
#: ``currency`` unless written as ``{value: 1000, currency: USD}``.
FIELDS: dict[str, _Field] = {
    "currency": _F("currency", "USD", help="currency of every amount in the file"),
    "region": _F("str", help="electricity region of tco_defaults.csv (US-CA, US-TX, US-VA, CN, ...)"),
    "horizon_months": _F("int", 36, lo=1, hi=120, unit="months", help="months to compare over"),
    "owned.gpu": _F("gpu", _REQUIRED, help="the card you would own (catalog id or name)"),
    "owned.count": _F("int", _REQUIRED, lo=1, hi=100000, help="how many cards you would own"),
    "owned.site": _F("enum", "office", choices=SITES, help="home, office or colocation"),
    "owned.always_on": _F("bool", True, help="the machine runs around the clock (false: off when idle)"),
    "owned.tdp_w": _F("num", lo=0, lo_open=True, unit="W", help="board power; default gpus.csv"),
    "owned.price_new": _F("money", lo=0, lo_open=True, help="price of one new card; default catalog"),
    "owned.price_used": _F("money", lo=0, lo_open=True, help="price of one used card; default catalog"),
    "owned.host": _F("str", help="a host_cost_per_gpu variant of tco_defaults.csv"),
    "owned.host_cost_per_gpu": _F("money", lo=0, help="CPU, RAM, board, PSU, chassis per card"),
    "owned.host_power_w_per_gpu": _F("num", lo=0, unit="W", help="host power per card"),
    "owned.idle_power_fraction": _F("num", lo=0, hi=1, help="idle draw as a fraction of TDP"),
    "owned.max_utilization": _F("num", 1.0, lo=0, hi=1, lo_open=True,
                                help="the most of the hours the owned cards can be busy"),
    "owned.pue": _F("num", lo=1, hi=5, help="power usage effectiveness of the site"),
    "owned.electricity_per_kwh": _F("money", lo=0, unit="per kWh", help="electricity price"),
    "owned.colocation_per_kw_month": _F("money", lo=0, unit="per kW-month",
                                        help="hosting price per kW of provisioned power"),
    "owned.maintenance_per_year": _F("num", 0.0, lo=0, hi=1, help="fraction of capex a year"),
    "owned.failure_rate_per_year": _F("num", lo=0, hi=1, help="card failures per card-year"),
    "owned.resale_retention_per_year": _F("num", lo=0, hi=1, lo_open=True,
                                          help="fraction of value kept each year"),
    "owned.resale_fee": _F("num", 0.0, lo=0, hi=1, help="selling fee as a fraction of the price"),
    "owned.staff_hours_per_month": _F("num", 0.0, lo=0, unit="h", help="admin time a month"),
    "owned.staff_cost_per_hour": _F("money", 0.0, lo=0, help="cost of an hour of admin time"),
    "lease.annual_rate": _F("num", lo=0, hi=1, help="interest rate a year"),
    "lease.term_months": _F("int", lo=1, hi=120, unit="months", help="default: the horizon"),
    "lease.down_payment": _F("num", 0.0, lo=0, hi=1, help="fraction paid up front"),
    "cloud.gpu": _F("gpu", help="the cloud card; default the owned card"),
    "cloud.providers": _F("strlist", help="providers to take offers from (default: all)"),
    "cloud.instance": _F("str", help="one instance type"),
    "cloud.relative_speed": _F("num", lo=0, lo_open=True,
                               help="cloud card speed / owned card speed; default dense BF16 ratio"),
    "cloud.on_demand_price": _F("money", lo=0, lo_open=True, unit="per GPU-hour"),
    "cloud.spot_price": _F("money", lo=0, lo_open=True, unit="per GPU-hour"),
    "cloud.reserved_1y_price": _F("money", lo=0, lo_open=True, unit="per GPU-hour"),
    "cloud.reserved_3y_price": _F("money", lo=0, lo_open=True, unit="per GPU-hour"),
    "spot.interruption_bucket": _F("enum", choices=SPOT_BUCKETS,
                                   help="AWS Spot Instance Advisor frequency-of-interruption bucket"),
    "spot.interruptions_per_month": _F("num", lo=0, hi=1, hi_open=True,
                                       help="chance an instance is interrupted within a month"),
    "spot.checkpoint_minutes": _F("num", lo=0, unit="min", help="time to write one checkpoint"),
    "spot.restart_minutes": _F("num", lo=0, unit="min", help="time to get a new instance running"),
    "spot.gpus_per_job": _F("int", 1, lo=1, help="GPUs one job spans (any interruption stops all)"),
    "spot.job_gpu_hours": _F("num", lo=0, lo_open=True, help="the job whose deadline is checked"),
    "spot.deadline_hours": _F("num", lo=0, lo_open=True, unit="h", help="wall-clock deadline"),
    "demand.utilization": _F("num", lo=0, hi=1, help="steady load as a fraction of the owned cards"),
    "demand.gpu_hours_per_month": _F("num", lo=0, unit="GPU-h", help="steady load"),
    "demand.growth_per_year": _F("num", 0.0, lo=-0.99, hi=10, help="growth of the steady load"),
    "demand.bursts.gpu_hours": _F("num", 0.0, lo=0, unit="GPU-h", help="extra hours in a burst month"),
    "demand.bursts.every_months": _F("int", 1, lo=1, unit="months"),
    "demand.bursts.first_month": _F("int", 1, lo=1),
    "hybrid.base": _F("enum", "auto", choices=("auto", *HYBRID_BASES)),
    "hybrid.burst": _F("enum", "auto", choices=("auto", *BURST_KINDS)),
    "hybrid.configured_base": _F("int", lo=0, help="your base today; default owned.count"),
    "hybrid.headroom": _F("num", 0.3, lo=0, hi=2, help="extra base capacity kept for swings"),
    **{f"uncertainty.{k}": _F("num", v, lo=0, hi=1 if k in ("utilization", "resale") else 5,
                              help="sensitivity setting (± swing)") for k, v in DEFAULT_SWINGS.items()},
}
JOB_FIELDS: dict[str, _Field] = {
    "name": _F("str", _REQUIRED),
    "kind": _F("enum", "training", choices=JOB_KINDS),
    "gpu_hours": _F("num", lo=0, lo_open=True, help="GPU-hours of the owned card per run"),
    "runs_per_month": _F("num", 1.0, lo=0),
    "tokens_per_month": _F("num", lo=0, help="serving: tokens generated a month"),
    "tokens_per_second_per_gpu": _F("num", lo=0, lo_open=True, help="serving throughput of one card"),
    "benchmark": _F("str", help="a decode_speed row of benchmarks.csv giving the throughput"),
    "model": _F("str", help="a models.csv model: the speed estimator gives the GPU-hours"),
    "tokens": _F("num", lo=0, lo_open=True, help="training: tokens per run (with model)"),
    "mode": _F("enum", "lora", choices=("full", "lora", "qlora"), help="training mode (with model)"),
    "quant": _F("str", "fp16", help="serving: quantization format (with model)"),
    "engine": _F("str", "vllm", help="serving: inference engine (with model)"),
    "batch": _F("int", 1, lo=1, help="serving: concurrent sequences per card (with model)"),
    "context": _F("int", 1024, lo=1, help="serving: context length (with model)"),
    "first_month": _F("int", 1, lo=1),
}
_TOP_EXTRA = ("name", "title", "description", "sources", "demand.jobs")
_SECTIONS = sorted({k.rsplit(".", 1)[0] for k in FIELDS if "." in k} | {"demand"})


@dataclass(frozen=True)
class Job:
    """A training run or serving load. Training: ``gpu_hours`` per run [GPU-h of the owned card]."""

    name: str
    kind: str = "training"
    gpu_hours: float | None = None
    runs_per_month: float = 1.0
    tokens_per_month: float | None = None
    tokens_per_second_per_gpu: float | None = None
    benchmark: str | None = None
    model: str | None = None
    tokens: float | None = None
    mode: str = "lora"
    quant: str = "fp16"
    engine: str = "vllm"
    batch: int = 1
    context: int = 1024
    first_month: int = 1

    def to_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items()
                if v is not None and not (k in JOB_FIELDS and v == JOB_FIELDS[k].default and k != "kind")}


@dataclass(frozen=True)
class Scenario:
    """A validated scenario file. ``values`` maps every dotted key of :data:`FIELDS` to its value (None:
    taken from the data at :func:`resolve`); money may be ``(value, currency)``."""

    name: str
    values: Mapping[str, object]
    jobs: tuple[Job, ...] = ()
    title: Mapping[str, str] = field(default_factory=dict)
    description: Mapping[str, str] = field(default_factory=dict)
    sources: Mapping[str, str] = field(default_factory=dict)
    path: str | None = None

    @property
    def label(self) -> str:
        return self.path or f"scenario '{self.name}'"

    def get(self, key: str):
        if key not in FIELDS:
            raise UnknownNameError("scenario key", key, FIELDS)
        return self.values.get(key)

    def updated(self, changes: Mapping[str, object], *, jobs: Iterable[Job] | None = None) -> Scenario:
        """A copy with ``changes`` (dotted keys) applied and validated like a file."""
        d = self.to_dict()
        for key, val in changes.items():
            if key not in FIELDS:
                raise UnknownNameError("scenario key", key, FIELDS)
            node = d
            parts = key.split(".")
            for p in parts[:-1]:
                node = node.setdefault(p, {})
            if val is None:
                node.pop(parts[-1], None)
            else:
                node[parts[-1]] = list(val) if isinstance(val, tuple) and FIELDS[key].kind != "money" \
                    else ({"value": val[0], "currency": val[1]} if isinstance(val, tuple) else val)
        if jobs is not None:
            d.setdefault("demand", {})["jobs"] = [j.to_dict() for j in jobs]
        return scenario_from_dict(d, label=self.label, path=self.path)

    def to_dict(self) -> dict:
        """Nested mapping as written to YAML (defaults that equal the field default are left out)."""
        out: dict = {"name": self.name}
        if self.title:
            out["title"] = dict(self.title)
        if self.description:
            out["description"] = dict(self.description)
        for key, f in FIELDS.items():
            val = self.values.get(key)
            keep = key in ("currency", "horizon_months")
            if val is None or (f.default is not _REQUIRED and val == f.default and not keep):
                continue
            if isinstance(val, tuple) and f.kind == "money":
                val = {"value": val[0], "currency": val[1]}
            elif isinstance(val, tuple):
                val = list(val)
            node = out
            parts = key.split(".")
            for p in parts[:-1]:
                node = node.setdefault(p, {})
            node[parts[-1]] = val
        if self.jobs:
            out.setdefault("demand", {})["jobs"] = [j.to_dict() for j in self.jobs]
        if self.sources:
            out["sources"] = dict(self.sources)
        return out


def _fmt_raw(v) -> str:
    return repr(v) if isinstance(v, str) else str(v)


def _check(label: str, key: str, raw, f: _Field):
    """Validate one raw YAML value against its field; return the typed value."""
    where = f"{label}: key '{key}'"
    if raw is None:
        return None
    kind = f.kind
    if kind == "money" and isinstance(raw, Mapping):
        unknown = set(raw) - {"value", "currency"}
        if unknown or "value" not in raw:
            raise GpucostError(f"{where}: a money value is a number or {{value: N, currency: C}}")
        val = _check(label, key, raw["value"], _Field("num", lo=f.lo, hi=f.hi, lo_open=f.lo_open))
        cur = raw.get("currency")
        if cur is not None and (not isinstance(cur, str) or not re.fullmatch(r"[A-Za-z]{3}", cur)):
            raise GpucostError(f"{where}: currency {_fmt_raw(cur)} is not an ISO code like USD")
        return (val, cur.upper()) if cur else val
    if kind in ("num", "int", "money"):
        if isinstance(raw, bool) or not isinstance(raw, (int, float)):
            raise GpucostError(f"{where}: {_fmt_raw(raw)} is not a number")
        val = float(raw)
        if math.isnan(val) or math.isinf(val):
            raise GpucostError(f"{where}: {_fmt_raw(raw)} is not a finite number")
        if kind == "int" and val != int(val):
            raise GpucostError(f"{where}: {_fmt_raw(raw)} is not a whole number")
        lo_bad = f.lo is not None and (val <= f.lo if f.lo_open else val < f.lo)
        hi_bad = f.hi is not None and (val >= f.hi if f.hi_open else val > f.hi)
        if lo_bad or hi_bad:
            if f.lo is not None and f.hi is not None and not f.lo_open and not f.hi_open:
                raise GpucostError(f"{where}: {raw} is not between {f.lo:g} and {f.hi:g}")
            if lo_bad:
                op = "greater than" if f.lo_open else "at least"
                raise GpucostError(f"{where}: {raw} must be {op} {f.lo:g}")
            op = "less than" if f.hi_open else "at most"
            raise GpucostError(f"{where}: {raw} must be {op} {f.hi:g}")
        return int(val) if kind == "int" else val
    if kind == "bool":
        if not isinstance(raw, bool):
            raise GpucostError(f"{where}: {_fmt_raw(raw)} is not true or false")
        return raw
    if kind == "strlist":
        items = raw.split(",") if isinstance(raw, str) else raw
        if not isinstance(items, list) or not all(isinstance(x, str) and x.strip() for x in items):
            raise GpucostError(f"{where}: expected a list of names")
        return tuple(x.strip() for x in items)
    if not isinstance(raw, str) or not raw.strip():
        raise GpucostError(f"{where}: {_fmt_raw(raw)} is not a non-empty text")
    val = raw.strip()
    if kind == "enum":
        match = [c for c in f.choices if c.lower() == val.lower()]
        if not match:
            hint = closest(val, f.choices, 1)
            raise GpucostError(f"{where}: '{val}' is not one of {', '.join(f.choices)}"
                               + (f" (closest: {hint[0]})" if hint else ""))
        return match[0]
    if kind == "currency":
        if not re.fullmatch(r"[A-Za-z]{3}", val):
            raise GpucostError(f"{where}: '{val}' is not an ISO currency code like USD")
        return val.upper()
    return val


def _flatten(label: str, data: Mapping, prefix: str = "") -> dict[str, object]:
    out: dict[str, object] = {}
    for k, v in data.items():
        if not isinstance(k, str):
            raise GpucostError(f"{label}: key {k!r} is not text")
        key = f"{prefix}{k}"
        if key in FIELDS or key in _TOP_EXTRA:
            out[key] = v
        elif key in _SECTIONS:
            if not isinstance(v, Mapping):
                raise GpucostError(f"{label}: key '{key}' must be a section (a mapping of keys)")
            out.update(_flatten(label, v, key + "."))
        else:
            known = list(FIELDS) + list(_TOP_EXTRA) + _SECTIONS
            hint = closest(key, known, 1) or closest(k, [x.rsplit(".", 1)[-1] for x in known], 1)
            raise GpucostError(f"{label}: unknown key '{key}'" + (f" (did you mean '{hint[0]}'?)"
                                                                    if hint else ""))
    return out


def _text_map(label: str, key: str, raw) -> dict[str, str]:
    if raw is None:
        return {}
    if isinstance(raw, str):
        return {"en": raw}
    if not isinstance(raw, Mapping) or not all(isinstance(v, str) for v in raw.values()):
        raise GpucostError(f"{label}: key '{key}' must be a text or a mapping like {{en: ..., zh: ...}}")
    return {str(k): v for k, v in raw.items()}


def scenario_from_dict(data: Mapping, *, label: str = "scenario", path: str | None = None,
                       default_name: str | None = None) -> Scenario:
    """Validate a scenario given as a (nested) mapping; errors name ``label`` and the key."""
    if not isinstance(data, Mapping):
        raise GpucostError(f"{label}: a scenario is a mapping of keys (got {type(data).__name__})")
    flat = _flatten(label, data)
    name = flat.pop("name", None) or default_name
    if not isinstance(name, str) or not SCENARIO_NAME_RE.match(name):
        raise GpucostError(f"{label}: key 'name': {_fmt_raw(name)} must be lower-case letters, digits, "
                           "'-' or '_'")
    title = _text_map(label, "title", flat.pop("title", None))
    description = _text_map(label, "description", flat.pop("description", None))
    sources = _text_map(label, "sources", flat.pop("sources", None))
    raw_jobs = flat.pop("demand.jobs", None) or []
    values: dict[str, object] = {}
    for key, f in FIELDS.items():
        raw = flat.get(key)
        if raw is None:
            if f.default is _REQUIRED:
                raise GpucostError(f"{label}: key '{key}' is required ({f.help})")
            values[key] = f.default
        else:
            values[key] = _check(label, key, raw, f)
    if values["demand.utilization"] is not None and values["demand.gpu_hours_per_month"] is not None:
        raise GpucostError(f"{label}: key 'demand.utilization' and 'demand.gpu_hours_per_month' both set; "
                           "give one of them")
    if values["spot.interruption_bucket"] is not None and values["spot.interruptions_per_month"] is not None:
        raise GpucostError(f"{label}: key 'spot.interruption_bucket' and 'spot.interruptions_per_month' both "
                           "set; give one of them")
    if values["owned.host"] is not None and values["owned.host_cost_per_gpu"] is not None:
        raise GpucostError(f"{label}: key 'owned.host' and 'owned.host_cost_per_gpu' both set; give one")
    if not isinstance(raw_jobs, list):
        raise GpucostError(f"{label}: key 'demand.jobs' must be a list of jobs")
    jobs = []
    for i, rj in enumerate(raw_jobs):
        jl = f"demand.jobs[{i}]"
        if not isinstance(rj, Mapping):
            raise GpucostError(f"{label}: key '{jl}' must be a mapping (name, kind, gpu_hours, ...)")
        for k in rj:
            if k not in JOB_FIELDS:
                hint = closest(str(k), JOB_FIELDS, 1)
                raise GpucostError(f"{label}: unknown key '{jl}.{k}'" + (f" (did you mean '{hint[0]}'?)"
                                                                          if hint else ""))
        jv = {}
        for k, f in JOB_FIELDS.items():
            raw = rj.get(k)
            if raw is None:
                if f.default is _REQUIRED:
                    raise GpucostError(f"{label}: key '{jl}.{k}' is required")
                jv[k] = f.default
            else:
                jv[k] = _check(label, f"{jl}.{k}", raw, f)
        if jv["kind"] == "training" and jv["gpu_hours"] is None and not (jv["model"] and jv["tokens"]):
            raise GpucostError(f"{label}: key '{jl}.gpu_hours' is required for a training job "
                               f"(GPU-hours of the owned card per run), or '{jl}.model' with '{jl}.tokens'")
        if jv["kind"] == "serving":
            if jv["tokens_per_month"] is None:
                raise GpucostError(f"{label}: key '{jl}.tokens_per_month' is required for a serving job")
            if jv["tokens_per_second_per_gpu"] is None and jv["benchmark"] is None \
                    and jv["gpu_hours"] is None and jv["model"] is None:
                raise GpucostError(f"{label}: key '{jl}.tokens_per_second_per_gpu' (or '{jl}.benchmark', or "
                                   f"'{jl}.model' for the speed estimator) is required for a serving job")
        jobs.append(Job(**jv))
    return Scenario(name=name, values=MappingProxyType(values), jobs=tuple(jobs),
                    title=MappingProxyType(title), description=MappingProxyType(description),
                    sources=MappingProxyType(sources), path=path if path is not None else label)


def bundled_scenarios_dir() -> Path:
    return bundled_data_dir() / "scenarios"


def user_scenarios_dir() -> Path | None:
    d = user_data_dir()
    return d / "scenarios" if d else None


def _scenario_files() -> dict[str, tuple[Path, str]]:
    """name → (file, origin); a user file of the same name replaces the bundled one."""
    found: dict[str, tuple[Path, str]] = {}
    for origin, d in (("bundled", bundled_scenarios_dir()), ("user", user_scenarios_dir())):
        if d is not None and d.is_dir():
            for p in sorted(d.glob("*.yaml")) + sorted(d.glob("*.yml")):
                found[p.stem] = (p, origin)
    return found


def _label_for(path: Path) -> str:
    return f"data/scenarios/{path.name}"


def read_scenario_file(path: str | Path) -> Scenario:
    """Load and validate a scenario YAML file; every error names the file and the key."""
    p = Path(path)
    label = _label_for(p) if p.parent.resolve() == bundled_scenarios_dir().resolve() else str(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise GpucostError(f"{label}: file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise GpucostError(f"{label}: cannot read the file ({exc.__class__.__name__})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "syntax error"
        raise GpucostError(f"{label}: not valid YAML ({problem}{where})") from None
    if data is None:
        raise GpucostError(f"{label}: the file is empty")
    return scenario_from_dict(data, label=label, path=label, default_name=p.stem.lower())


def list_scenarios() -> list[dict]:
    """Bundled scenarios and those in ``GPUCOST_DATA_DIR/scenarios``: name, title, origin, path."""
    out = []
    for name, (p, origin) in sorted(_scenario_files().items()):
        title = {}
        try:
            data = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
            title = data.get("title") or {}
            title = {"en": title} if isinstance(title, str) else dict(title)
        except (OSError, yaml.YAMLError, AttributeError):
            pass
        out.append({"name": name, "title": title.get("en", name), "title_zh": title.get("zh", ""),
                    "origin": origin, "path": str(p)})
    return out


def load_scenario(name_or_path: str | Path) -> Scenario:
    """A scenario by bundled/user name ("startup") or by the path of a YAML file."""
    s = str(name_or_path)
    p = Path(s).expanduser()
    if s.endswith((".yaml", ".yml")) or p.is_file() or "/" in s:
        return read_scenario_file(p)
    files = _scenario_files()
    if s not in files:
        raise UnknownNameError("scenario", s, files, hint="gpucost tco --list names them")
    return read_scenario_file(files[s][0])


def save_scenario(scenario: Scenario, path: str | Path, *, overwrite: bool = False) -> Path:
    """Write ``scenario`` as YAML; never replaces an existing file unless ``overwrite``."""
    p = Path(path).expanduser()
    if p.suffix not in (".yaml", ".yml"):
        p = p.with_suffix(".yaml")
    if p.exists() and not overwrite:
        raise GpucostError(f"{p}: the file exists; choose another name or allow overwriting")
    p.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(scenario.to_dict(), sort_keys=False, allow_unicode=True, width=100)
    p.write_text(text, encoding="utf-8")
    return p


# --------------------------------------------------------------------------------------------------
# Resolving a scenario against the catalog
# --------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Provenance:
    """Where an input came from: the scenario, the catalog, tco_defaults.csv or a derivation."""

    key: str
    value: object
    unit: str
    source: str
    as_of: str = ""
    note: str = ""

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Offer:
    """The cloud price an option uses [display currency per GPU-hour]."""

    price: float
    label: str
    source: str
    as_of: str = ""

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Inputs:
    """A scenario resolved into numbers (in ``currency``) ready for :func:`evaluate`."""

    scenario: Scenario
    currency: str
    horizon_months: int
    params: Mapping[str, float]
    owned_gpu: str
    owned_name: str
    cloud_gpu: str
    cloud_name: str
    offers: Mapping[str, Offer]
    unavailable: Mapping[str, tuple[str, Mapping[str, str]]]
    provenance: tuple[Provenance, ...]
    warnings: tuple[str, ...]
    swings: Mapping[str, tuple[float, float]]
    job_hours: tuple[tuple[str, str, float, float, int], ...]  # name, kind, hours/month, per-unit, first
    job_units: Mapping[str, float]  # name → GPU-hours per run (training) or per 1M tokens (serving)

    def replace_params(self, **changes: float) -> Inputs:
        """A copy with some numeric inputs changed (the page's quick what-ifs)."""
        p = dict(self.params)
        for k, v in changes.items():
            if k not in p:
                raise UnknownNameError("input", k, p)
            p[k] = float(v)
        return Inputs(**{**self.__dict__, "params": MappingProxyType(p)})


_PS_CACHE: dict[tuple, tuple] = {}


def _price_summary(catalog: Catalog, currency: str) -> pd.DataFrame:
    from gpucost.cards import price_summary

    key = (id(catalog.prices), id(catalog.offers), id(catalog.fx), currency)
    hit = _PS_CACHE.get(key)
    if hit is None:
        hit = (catalog.prices, catalog.offers, catalog.fx, price_summary(catalog, currency).set_index("id"))
        if len(_PS_CACHE) > 32:
            _PS_CACHE.clear()
        _PS_CACHE[key] = hit
    return hit[3]


def _defaults(catalog: Catalog) -> pd.DataFrame:
    return catalog.table("tco_defaults")


_ROWS_CACHE: dict[int, tuple] = {}


def _default_rows(catalog: Catalog) -> list[dict]:
    t = _defaults(catalog)
    hit = _ROWS_CACHE.get(id(t))
    if hit is None or hit[0] is not t:
        hit = (t, t.to_dict(orient="records"))
        _ROWS_CACHE.clear()
        _ROWS_CACHE[id(t)] = hit
    return hit[1]


def _default_row(catalog: Catalog, key: str, variant: str | None = None,
                 region: str | None = None) -> dict | None:
    """The tco_defaults.csv row for ``key`` (and ``variant``); ``region`` matches exactly, then by
    country (US-CA → US), then a row without a region."""
    rows = [r for r in _default_rows(catalog) if r["key"] == key
            and (variant is None or str(r["variant"]).lower() == variant.lower())]
    if region is not None:
        for want in (region.upper(), region.split("-")[0].upper(), ""):
            exact = [r for r in rows if str(r["region"]).upper() == want]
            if exact:
                return exact[0]
        return None
    return rows[0] if rows else None


def _money_in(catalog: Catalog, raw, scen_cur: str) -> tuple[float, str]:
    """A scenario money value → (amount in the scenario currency, original currency)."""
    if isinstance(raw, tuple):
        val, cur = raw
        return float(catalog.convert(val, cur, scen_cur)), cur
    return float(raw), scen_cur


def _gpu(catalog: Catalog, label: str, key: str, name: str) -> pd.Series:
    try:
        gid = catalog.gpu_id(name)
    except UnknownNameError as exc:
        raise GpucostError(f"{label}: key '{key}': {exc}") from None
    return catalog.gpus.set_index("id").loc[gid]


def _num(x) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return math.nan
    return v


def relative_speed(catalog: Catalog, fast_gpu: str, ref_gpu: str) -> tuple[float, str]:
    """Dense BF16 (else FP16, else FP32) throughput of ``fast_gpu`` over ``ref_gpu`` from gpus.csv."""
    g = catalog.gpus.set_index("id")
    a, b = g.loc[catalog.gpu_id(fast_gpu)], g.loc[catalog.gpu_id(ref_gpu)]
    if a.name == b.name:
        return 1.0, "same card"
    for col in ("bf16_tflops", "fp16_tflops", "fp32_tflops"):
        x, y = _num(a[col]), _num(b[col])
        if x > 0 and y > 0:
            return x / y, f"dense {col.split('_')[0].upper()} {x:g} / {y:g} TFLOPS (gpus.csv)"
    return math.nan, "no common throughput figure in gpus.csv"


def resale_retention(catalog: Catalog, gpu_id: str) -> tuple[float, str]:
    """Fraction of value a card keeps per year, from its catalog used/new prices and age.

    ρ = (used / new)^(1 / age), age = years from mid release year to the used price's as-of date. A card
    without both prices gets the median ρ of the catalog's cards that have them.
    """
    ps = _price_summary(catalog, "USD")
    gpus = catalog.gpus.set_index("id")

    def one(gid: str) -> float:
        if gid not in ps.index:
            return math.nan
        pn, pu = _num(ps.loc[gid, "price_new"]), _num(ps.loc[gid, "price_used"])
        ry = _num(gpus.loc[gid, "release_year"]) if gid in gpus.index else math.nan
        asof = ps.loc[gid, "price_used_as_of"]
        if not (pn > 0 and pu > 0 and ry > 0 and isinstance(asof, str)):
            return math.nan
        age = (date.fromisoformat(asof) - date(int(ry), 7, 1)).days / 365.25
        if age < 0.5:
            return math.nan
        return min(1.0, (pu / pn) ** (1 / age))

    own = one(gpu_id)
    if own == own:
        pn, pu = ps.loc[gpu_id, "price_new"], ps.loc[gpu_id, "price_used"]
        return own, (f"derived from the catalog: used {pu:,.0f} / new {pn:,.0f} USD at the card's age "
                     f"(released {int(gpus.loc[gpu_id, 'release_year'])})")
    all_r = [r for r in (one(g) for g in ps.index) if r == r]
    if not all_r:
        return math.nan, "no card in the catalog has both a new and a used price"
    return float(np.median(all_r)), (f"median over {len(all_r)} catalog cards with new and used prices "
                                     "(this card has not both)")


def interruption_rate_per_hour(p_month: float) -> float:
    """Interruptions per instance-hour from the chance ``p_month`` of an interruption within a month.

    A Poisson process with rate λ interrupts within H hours with probability 1 − e^(−λH), so
    λ = −ln(1 − p) / H.
    """
    if not (0 <= p_month < 1):
        raise GpucostError(f"the monthly interruption chance must be in [0, 1), not {p_month}")
    return -math.log1p(-p_month) / HOURS_PER_MONTH


def young_daly_interval_hours(checkpoint_hours, mtbf_hours):
    """Young's optimal checkpoint interval τ = √(2 δ MTBF) [h] (array-friendly)."""
    return np.sqrt(2.0 * np.asarray(checkpoint_hours, float) * np.asarray(mtbf_hours, float))


def annuity_payment(principal, monthly_rate, months: int):
    """Monthly instalment that repays ``principal`` in ``months`` at ``monthly_rate``: A·r/(1−(1+r)^−T)."""
    principal = np.asarray(principal, float)
    r = np.asarray(monthly_rate, float)
    safe = np.where(r > 1e-12, r, 1.0)
    return np.where(r > 1e-12, principal * safe / (1 - (1 + safe) ** (-months)), principal / months)


def _offer_table(catalog: Catalog, cloud_gpu: str, providers, instance, currency: str) -> pd.DataFrame:
    o = catalog.offers
    o = o[o["gpu_id"] == cloud_gpu]
    if providers:
        wanted = {p.lower() for p in providers}
        o = o[o["provider"].str.lower().isin(wanted)]
    if instance:
        o = o[o["InstanceType"].str.lower() == instance.lower()]
    if o.empty:
        return o.assign(od=[], spot=[], r1=[], r3=[], r1_note=[], r3_note=[])
    rates = catalog.fx.set_index("currency")["per_usd"]
    conv = rates[currency] / o["currency"].map(rates).to_numpy() / o["AcceleratorCount"].to_numpy()
    o = o.assign(od=o["Price"] * conv, spot=o["SpotPrice"] * conv, r1=o["ReservedPrice1y"] * conv,
                 r3=o["ReservedPrice3y"] * conv, r1_note="", r3_note="")
    for col, key in (("r1", "reserved_discount_1y"), ("r3", "reserved_discount_3y")):
        for idx in o.index[o[col].isna() & o["od"].notna()]:
            row = _default_row(catalog, key, variant=o.at[idx, "provider"])
            if row is not None:
                o.at[idx, col] = o.at[idx, "od"] * (1 - row["value"])
                o.at[idx, f"{col}_note"] = (f"on-demand × (1 − {row['value']:.4f}) — {key} for "
                                            f"{o.at[idx, 'provider']} in tco_defaults.csv ({row['source']})")
    return o


def _best_offer(o: pd.DataFrame, col: str) -> tuple[Offer | None, bool]:
    rows = o.dropna(subset=[col])
    if rows.empty:
        return None, False
    r = rows.sort_values(col).iloc[0]
    note = r.get(f"{col}_note", "") if col in ("r1", "r3") else ""
    label = f"{r['provider']} {r['InstanceType']}" + (f" ({r['Region']})" if r["Region"] else "")
    src = r["source"] + (f"; {note}" if note else "")
    return Offer(float(r[col]), label, src, str(r["as_of"])), r["currency"]


def _gpu_row(og: pd.Series) -> dict:
    row = dict(og)
    row["id"] = str(og.name)
    return row


def _estimate_training_hours(cat: Catalog, label: str, job: Job, og: pd.Series) -> float:
    """GPU-hours of one training run on one owned card, from gpucost.speed."""
    from gpucost import speed
    from gpucost.models import resolve_model

    try:
        spec = resolve_model(job.model, catalog=cat, fetch=False)
        est = speed.training_time(spec, _gpu_row(og), mode=job.mode, tokens=float(job.tokens), catalog=cat)
    except GpucostError as exc:
        raise GpucostError(f"{label}: job '{job.name}': {exc}") from None
    return float(est.hours)


def _estimate_decode_tps(cat: Catalog, label: str, job: Job, og: pd.Series) -> float:
    """Decode tokens/s of one owned card for a serving job, from gpucost.speed."""
    from gpucost import speed
    from gpucost.models import resolve_model
    from gpucost.quant import get_format

    try:
        spec = resolve_model(job.model, catalog=cat, fetch=False)
        est = speed.speed(spec, get_format(job.quant, cat), _gpu_row(og), batch=int(job.batch),
                          context=int(job.context), engine=job.engine, catalog=cat)
    except GpucostError as exc:
        raise GpucostError(f"{label}: job '{job.name}': {exc}") from None
    return float(est.decode_tokens_per_s)


def resolve(scenario: Scenario, catalog: Catalog | None = None, *, currency: str | None = None,
            months: int | None = None) -> Inputs:
    """Fill every input of ``scenario`` from the catalog and tco_defaults.csv; money in ``currency``
    (default: the scenario's). ``months`` replaces the horizon."""
    cat = catalog or Catalog()
    v = scenario.values
    label = scenario.label
    scur = str(v["currency"]).upper()
    try:
        cat.fx_rate(scur)
    except UnknownNameError as exc:
        raise GpucostError(f"{label}: key 'currency': {exc}") from None
    dcur = (currency or scur).upper()
    try:
        rate = cat.convert(1.0, scur, dcur)
    except UnknownNameError as exc:
        raise GpucostError(f"currency: {exc}") from None
    horizon = int(months if months is not None else v["horizon_months"])
    if not (1 <= horizon <= 120):
        raise GpucostError(f"the horizon must be 1 to 120 months, not {horizon}")

    prov: list[Provenance] = []
    warnings: list[str] = []
    unavailable: dict[str, tuple[str, dict]] = {}

    def note(key, value, unit, source, as_of="", text=""):
        prov.append(Provenance(key, value, unit, source, str(as_of or ""), text))

    def scen_src(key: str) -> str:
        return scenario.sources.get(key, f"scenario {scenario.name}")

    def from_default(key, fkey, variant=None, region=None, required_msg=None):
        row = _default_row(cat, fkey, variant, region)
        if row is None:
            if required_msg:
                raise GpucostError(f"{label}: key '{key}' is required: {required_msg}")
            return None, None
        val = float(row["value"])
        unit = row["unit"]
        if row["currency"]:
            val = float(cat.convert(val, row["currency"], scur))
            unit = unit.replace(row["currency"], scur)
        note(key, val, unit, row["source"], row["as_of"], row["notes"])
        return val, row

    # --- the owned card -----------------------------------------------------------------------------
    og = _gpu(cat, label, "owned.gpu", str(v["owned.gpu"]))
    owned_id, owned_name = str(og.name), str(og["name"])
    n = int(v["owned.count"])
    tdp = v["owned.tdp_w"] if v["owned.tdp_w"] is not None else _num(og["tdp_w"])
    if not tdp > 0:
        raise GpucostError(f"{label}: key 'owned.tdp_w' is required: gpus.csv has no TDP for {owned_id}")
    note("owned.tdp_w", tdp, "W", scen_src("owned.tdp_w") if v["owned.tdp_w"] is not None
         else str(og["source"]), "" if v["owned.tdp_w"] is not None else og["as_of"])
    site = str(v["owned.site"])
    region = v["region"]

    ps = _price_summary(cat, scur)
    prices = {}
    exposed = {}
    for cond in ("new", "used"):
        key = f"owned.price_{cond}"
        if v[key] is not None:
            val, cur = _money_in(cat, v[key], scur)
            prices[cond], exposed[cond] = val, cur != scur
            note(key, val, scur, scen_src(key))
        else:
            val = _num(ps.loc[owned_id, f"price_{cond}"]) if owned_id in ps.index else math.nan
            prices[cond] = val
            rows = cat.prices[(cat.prices["gpu_id"] == owned_id) & (cat.prices["condition"] == cond)]
            exposed[cond] = not (rows["currency"] == scur).any()
            if val == val:
                note(key, val, scur, str(ps.loc[owned_id, f"price_{cond}_source"]),
                     ps.loc[owned_id, f"price_{cond}_as_of"],
                     "median of the catalog's rows" + (" (converted through fx.csv)" if exposed[cond] else ""))
    # host share
    if v["owned.host_cost_per_gpu"] is not None:
        host_cost, hcur = _money_in(cat, v["owned.host_cost_per_gpu"], scur)
        exposed["host"] = hcur != scur
        note("owned.host_cost_per_gpu", host_cost, scur, scen_src("owned.host_cost_per_gpu"))
    elif v["owned.host"] is not None:
        row = _default_row(cat, "host_cost_per_gpu", variant=str(v["owned.host"]))
        if row is None:
            known = sorted(r["variant"] for r in _default_rows(cat) if r["key"] == "host_cost_per_gpu")
            raise GpucostError(f"{label}: key 'owned.host': unknown host '{v['owned.host']}'; known: "
                               + ", ".join(known))
        host_cost = float(cat.convert(row["value"], row["currency"] or scur, scur))
        exposed["host"] = (row["currency"] or scur) != scur
        note("owned.host_cost_per_gpu", host_cost, scur, row["source"], row["as_of"], row["notes"])
    else:
        known = sorted(r["variant"] for r in _default_rows(cat) if r["key"] == "host_cost_per_gpu")
        raise GpucostError(f"{label}: key 'owned.host_cost_per_gpu' is required (the host share per card: "
                           f"CPU, RAM, board, PSU, chassis; 0 if the card goes into a machine you own), or "
                           f"owned.host: one of {', '.join(known)}")
    if host_cost == 0:
        warnings.append("host cost is 0: the owned options leave out the machine around the cards")
    # host power
    if v["owned.host_power_w_per_gpu"] is not None:
        host_w = float(v["owned.host_power_w_per_gpu"])
        note("owned.host_power_w_per_gpu", host_w, "W", scen_src("owned.host_power_w_per_gpu"))
    else:
        sxm = bool(re.search(r"sxm|hgx|oam|superchip", f"{owned_id} {owned_name}", re.I)) or \
            owned_id in ("b200", "h200", "gh200", "mi300x", "mi325x", "mi250", "gaudi2", "gaudi3")
        host_w, _ = from_default("owned.host_power_w_per_gpu", "host_power_w_per_gpu",
                                 "sxm-server" if sxm else "pcie-server")
    idle = v["owned.idle_power_fraction"]
    if idle is None:
        idle, _ = from_default("owned.idle_power_fraction", "gpu_idle_power_fraction",
                               required_msg="no gpu_idle_power_fraction in tco_defaults.csv")
    else:
        note("owned.idle_power_fraction", idle, "fraction of TDP", scen_src("owned.idle_power_fraction"))
    pue = v["owned.pue"]
    if pue is None:
        pue, _ = from_default("owned.pue", "pue", site, required_msg=f"no PUE for site '{site}'")
    else:
        note("owned.pue", pue, "ratio", scen_src("owned.pue"))
    if v["owned.electricity_per_kwh"] is not None:
        kwh, _ = _money_in(cat, v["owned.electricity_per_kwh"], scur)
        note("owned.electricity_per_kwh", kwh, f"{scur}/kWh", scen_src("owned.electricity_per_kwh"))
    else:
        regions = sorted({r["region"] for r in _default_rows(cat) if r["key"] == "electricity_per_kwh"})
        if not region:
            raise GpucostError(f"{label}: key 'owned.electricity_per_kwh' is required (or key 'region': one "
                               f"of {', '.join(regions)})")
        kwh, _ = from_default("owned.electricity_per_kwh", "electricity_per_kwh", SITE_TARIFF[site],
                              str(region), required_msg=f"tco_defaults.csv has no {SITE_TARIFF[site]} "
                              f"electricity price for region '{region}' (regions: {', '.join(regions)})")
    if v["owned.colocation_per_kw_month"] is not None:
        colo, _ = _money_in(cat, v["owned.colocation_per_kw_month"], scur)
        note("owned.colocation_per_kw_month", colo, f"{scur}/kW-month", scen_src("owned.colocation_per_kw_month"))
    elif site == "colocation":
        colo, _ = from_default("owned.colocation_per_kw_month", "colocation_per_kw_month",
                               region=str(region or ""), required_msg="no colocation price in "
                               "tco_defaults.csv for this region; give your quote per kW-month")
    else:
        colo = 0.0
    fail = v["owned.failure_rate_per_year"]
    if fail is None:
        fail, _ = from_default("owned.failure_rate_per_year", "gpu_failure_rate_per_year",
                               required_msg="no gpu_failure_rate_per_year in tco_defaults.csv")
    else:
        note("owned.failure_rate_per_year", fail, "per card-year", scen_src("owned.failure_rate_per_year"))
    rho = v["owned.resale_retention_per_year"]
    if rho is None:
        rho, why = resale_retention(cat, owned_id)
        if not rho == rho:
            raise GpucostError(f"{label}: key 'owned.resale_retention_per_year' is required ({why})")
        note("owned.resale_retention_per_year", rho, "per year", why)
    else:
        note("owned.resale_retention_per_year", rho, "per year", scen_src("owned.resale_retention_per_year"))
    staff_rate, _ = _money_in(cat, v["owned.staff_cost_per_hour"], scur)
    staff = float(v["owned.staff_hours_per_month"]) * staff_rate

    # --- lease ----------------------------------------------------------------------------------------
    lease_rate = v["lease.annual_rate"]
    if lease_rate is None:
        row = _default_row(cat, "financing_rate_per_year", region=str(region or "")) if region else None
        if row is not None and row["region"]:
            lease_rate = float(row["value"])
            note("lease.annual_rate", lease_rate, "per year", row["source"], row["as_of"], row["notes"])
        else:
            lease_rate = math.nan
            unavailable["lease"] = ("unavail_financing", {"region": str(region or "?")})
    else:
        note("lease.annual_rate", lease_rate, "per year", scen_src("lease.annual_rate"))
    lease_term = int(v["lease.term_months"] or horizon)
    if not prices["new"] == prices["new"]:
        unavailable["buy-new"] = ("unavail_no_price", {"what": "new", "gpu": owned_name,
                                                       "field": "owned.price_new"})
        unavailable.setdefault("lease", unavailable["buy-new"])
    if not prices["used"] == prices["used"]:
        unavailable["buy-used"] = ("unavail_no_price", {"what": "used", "gpu": owned_name,
                                                        "field": "owned.price_used"})

    # --- cloud ----------------------------------------------------------------------------------------
    cg = _gpu(cat, label, "cloud.gpu", str(v["cloud.gpu"] or owned_id))
    cloud_id, cloud_name = str(cg.name), str(cg["name"])
    if v["cloud.relative_speed"] is not None:
        speed = float(v["cloud.relative_speed"])
        note("cloud.relative_speed", speed, "×", scen_src("cloud.relative_speed"))
    else:
        speed, why = relative_speed(cat, cloud_id, owned_id)
        if not speed == speed:
            raise GpucostError(f"{label}: key 'cloud.relative_speed' is required ({why})")
        note("cloud.relative_speed", speed, "×", why)
    table = _offer_table(cat, cloud_id, v["cloud.providers"], v["cloud.instance"], scur)
    offers: dict[str, Offer] = {}
    cloud_exposed = {}
    for opt, col, key in (("on-demand", "od", "cloud.on_demand_price"), ("spot", "spot", "cloud.spot_price"),
                          ("reserved-1y", "r1", "cloud.reserved_1y_price"),
                          ("reserved-3y", "r3", "cloud.reserved_3y_price")):
        if v[key] is not None:
            val, cur = _money_in(cat, v[key], scur)
            offers[opt] = Offer(val, "your price", scen_src(key))
            cloud_exposed[opt] = cur != scur
        else:
            best, cur = _best_offer(table, col)
            if best is None:
                unavailable[opt] = ("unavail_no_cloud", {"what": opt, "gpu": cloud_name, "field": key})
                continue
            offers[opt] = best
            cloud_exposed[opt] = cur != scur
        note(key, offers[opt].price, f"{scur}/GPU-hour", offers[opt].source, offers[opt].as_of,
             offers[opt].label)

    # --- spot -----------------------------------------------------------------------------------------
    bucket = v["spot.interruption_bucket"]
    lam = math.nan
    lam_lo = lam_hi = math.nan
    if v["spot.interruptions_per_month"] is not None:
        p = float(v["spot.interruptions_per_month"])
        lam = interruption_rate_per_hour(p)
        note("spot.interruptions_per_month", p, "per month", scen_src("spot.interruptions_per_month"))
    elif bucket is not None:
        row = _default_row(cat, "spot_interruption_per_month", variant=bucket)
        if row is None:
            raise GpucostError(f"{label}: key 'spot.interruption_bucket': no row for '{bucket}' in "
                               "tco_defaults.csv")
        p = float(row["value"])
        lam = interruption_rate_per_hour(p)
        lo = _num(row["low"])
        hi = _num(row["high"])
        lam_lo = interruption_rate_per_hour(lo) if lo == lo else math.nan
        lam_hi = interruption_rate_per_hour(min(hi if hi == hi else p * OPEN_BUCKET_HIGH_FACTOR, 0.999))
        note("spot.interruption_bucket", p, "chance per month", row["source"], row["as_of"],
             f"bucket {bucket}: " + row["notes"])
    if "spot" not in unavailable:
        missing = [k for k in ("spot.checkpoint_minutes", "spot.restart_minutes") if v[k] is None]
        if not lam == lam:
            missing.insert(0, "spot.interruption_bucket")
        if missing:
            unavailable["spot"] = ("unavail_spot_inputs", {"field": ", ".join(missing)})
    ckpt_h = (v["spot.checkpoint_minutes"] or 0.0) / 60
    restart_h = (v["spot.restart_minutes"] or 0.0) / 60

    # --- demand ---------------------------------------------------------------------------------------
    cap_hours = n * HOURS_PER_MONTH
    if v["demand.utilization"] is not None:
        base_util = float(v["demand.utilization"])
    elif v["demand.gpu_hours_per_month"] is not None:
        base_util = float(v["demand.gpu_hours_per_month"]) / cap_hours
    else:
        base_util = 0.0
    job_rows = []
    job_units: dict[str, float] = {}
    for j in scenario.jobs:
        if j.kind == "training":
            run_h = j.gpu_hours
            if run_h is None:
                run_h = _estimate_training_hours(cat, label, j, og)
                note(f"job {j.name}: GPU-hours per run", run_h, "GPU-h",
                     "gpucost.speed.training_time (6N/4N FLOP per token over dense peak × MFU)", "",
                     f"{j.model}, {j.mode}, {j.tokens:,.0f} tokens on one {owned_id}")
            else:
                note(f"job {j.name}: GPU-hours per run", run_h, "GPU-h", scen_src("demand.jobs"), "",
                     "given directly in the scenario")
            hours = run_h * j.runs_per_month
            job_units[j.name] = run_h
        else:
            tps = j.tokens_per_second_per_gpu
            if tps is None and j.benchmark is None and j.gpu_hours is None:
                tps = _estimate_decode_tps(cat, label, j, og)
                note(f"job {j.name}: tokens/s", tps, "tokens/s", "gpucost.speed.speed (decode roofline "
                     "with calibrated engine efficiency)", "",
                     f"{j.model} {j.quant} on one {owned_id}, {j.engine}, batch {j.batch}, context {j.context}")
            if tps is None and j.benchmark is not None:
                b = cat.table("benchmarks")
                hit = b[b["id"] == j.benchmark]
                if hit.empty:
                    raise UnknownNameError("benchmark", j.benchmark, b["id"])
                r = hit.iloc[0]
                if r["category"] != "decode_speed" or r["unit"] != "tokens/s":
                    raise GpucostError(f"{label}: job '{j.name}': benchmark {j.benchmark} is not a decode "
                                       "speed in tokens/s")
                tps = float(r["measured"])
                note(f"job {j.name}: tokens/s", tps, "tokens/s", r["source"], r["as_of"],
                     f"benchmarks.csv {j.benchmark}: {r['model_id']} {r['quant']} on {r['gpu_id']}, batch "
                     f"{r['batch']:g}")
                if r["gpu_id"] != owned_id:
                    warnings.append(f"job '{j.name}': benchmark {j.benchmark} was measured on {r['gpu_id']}, "
                                    f"not on the owned {owned_id}")
            if tps:
                per_m = 1e6 / (tps * 3600)
            else:
                per_m = j.gpu_hours / (j.tokens_per_month / 1e6) if j.tokens_per_month else math.nan
            hours = j.tokens_per_month / 1e6 * per_m if tps else j.gpu_hours
            job_units[j.name] = per_m
        job_rows.append((j.name, j.kind, float(hours), float(job_units[j.name]), int(j.first_month)))

    # --- sensitivity ranges ---------------------------------------------------------------------------
    sw = {k: float(v[f"uncertainty.{k}"]) for k in DEFAULT_SWINGS}
    swings = {
        "hardware_price": (1 - sw["hardware_price"], 1 + sw["hardware_price"]),
        "cloud_price": (1 - sw["cloud_price"], 1 + sw["cloud_price"]),
        "utilization": (max(0.0, base_util - sw["utilization"]),
                        min(float(v["owned.max_utilization"]), base_util + sw["utilization"])),
        "electricity": (1 - sw["electricity"], 1 + sw["electricity"]),
        "resale": (max(1e-3, rho - sw["resale"]), min(1.0, rho + sw["resale"])),
        "interruption": ((lam_lo / lam if lam_lo == lam_lo and lam > 0 else 1 - sw["interruption"]),
                         (lam_hi / lam if lam_hi == lam_hi and lam > 0 else 1 + sw["interruption"])),
        "fx": (1 - sw["fx"], 1 + sw["fx"]),
        "pue": (max(1.0, pue * (1 - sw["pue"])) / pue, (pue * (1 + sw["pue"])) / pue),
    }

    def money(x: float) -> float:
        return x * rate

    nan = math.nan
    params = {
        "N": float(n), "tdp_w": float(tdp), "host_w": float(host_w), "idle": float(idle),
        "u_cap": float(v["owned.max_utilization"]), "always_on": 1.0 if v["owned.always_on"] else 0.0,
        "pue": float(pue), "kwh": money(kwh), "colo": money(colo), "maint": float(v["owned.maintenance_per_year"]),
        "fail": float(fail), "staff": money(staff), "price_new": money(prices["new"]),
        "price_used": money(prices["used"]), "host_cost": money(host_cost), "rho": float(rho),
        "fee": float(v["owned.resale_fee"]), "lease_rate": float(lease_rate), "lease_term": float(lease_term),
        "lease_down": float(v["lease.down_payment"]), "speed": float(speed),
        "p_od": money(offers["on-demand"].price) if "on-demand" in offers else nan,
        "p_spot": money(offers["spot"].price) if "spot" in offers else nan,
        "p_r1": money(offers["reserved-1y"].price) if "reserved-1y" in offers else nan,
        "p_r3": money(offers["reserved-3y"].price) if "reserved-3y" in offers else nan,
        "lam": float(lam), "ckpt_h": float(ckpt_h), "restart_h": float(restart_h),
        "gpj": float(v["spot.gpus_per_job"]), "base_util": float(base_util),
        "growth": float(v["demand.growth_per_year"]), "burst_hours": float(v["demand.bursts.gpu_hours"]),
        "burst_every": float(v["demand.bursts.every_months"]),
        "burst_first": float(v["demand.bursts.first_month"]),
        "job_hours": float(v["spot.job_gpu_hours"] or nan), "deadline_h": float(v["spot.deadline_hours"] or nan),
        "headroom": float(v["hybrid.headroom"]),
        "configured_base": float(v["hybrid.configured_base"] if v["hybrid.configured_base"] is not None else n),
        "fx_hw": 1.0, "fx_cloud": 1.0,
        "x_new": float(exposed["new"]), "x_used": float(exposed["used"]), "x_host": float(exposed["host"]),
        "x_od": float(cloud_exposed.get("on-demand", False)), "x_spot": float(cloud_exposed.get("spot", False)),
        "x_r1": float(cloud_exposed.get("reserved-1y", False)),
        "x_r3": float(cloud_exposed.get("reserved-3y", False)),
    }
    if dcur != scur:
        prov = [Provenance(p.key, (p.value * rate if p.unit.startswith(scur) and isinstance(p.value, float)
                                   else p.value), p.unit.replace(scur, dcur) if p.unit.startswith(scur)
                           else p.unit, p.source, p.as_of, p.note) for p in prov]
    return Inputs(
        scenario=scenario, currency=dcur, horizon_months=horizon, params=MappingProxyType(params),
        owned_gpu=owned_id, owned_name=owned_name, cloud_gpu=cloud_id, cloud_name=cloud_name,
        offers=MappingProxyType({k: Offer(money(o.price), o.label, o.source, o.as_of)
                                 for k, o in offers.items()}),
        unavailable=MappingProxyType(unavailable), provenance=tuple(prov), warnings=tuple(warnings),
        swings=MappingProxyType(swings), job_hours=tuple(job_rows), job_units=MappingProxyType(job_units),
    )


# --------------------------------------------------------------------------------------------------
# The vectorized core: every array is (S, M) — S parameter sets (1, tornado rows or Monte Carlo draws)
# --------------------------------------------------------------------------------------------------

def _extra_hours(inputs: Inputs, months: int) -> np.ndarray:
    """Bursts and jobs per month [GPU-h of the owned card], shape (months,)."""
    p = inputs.params
    m = np.arange(1, months + 1)
    extra = np.zeros(months)
    if p["burst_hours"] > 0:
        first, every = int(p["burst_first"]), int(p["burst_every"])
        extra += np.where((m >= first) & ((m - first) % every == 0), p["burst_hours"], 0.0)
    for _name, _kind, hours, _unit, first in inputs.job_hours:
        extra += np.where(m >= first, hours, 0.0)
    return extra


def _col(P: Mapping, key: str) -> np.ndarray:
    return P[key]


def _demand(P: Mapping, months: int, extra: np.ndarray) -> np.ndarray:
    m0 = np.arange(months)[None, :]
    base = P["base_util"] * P["N"] * HOURS_PER_MONTH
    return base * (1.0 + P["growth"]) ** (m0 / 12.0) + extra[None, :]


def _hw(P, key: str, xkey: str) -> np.ndarray:
    return P[key] * (1.0 + P[xkey] * (P["fx_hw"] - 1.0))


def _cloud(P, key: str, xkey: str) -> np.ndarray:
    return P[key] * (1.0 + P[xkey] * (P["fx_cloud"] - 1.0))


def spot_factor(lam, ckpt_h, restart_h, gpus=1):
    """Expected paid GPU-hours per GPU-hour of work on spot, and Young's checkpoint interval τ [h].

    φ = (1 + δ/τ) / (1 − gλ(R + τ/2)) with τ = √(2δ/(gλ)); φ = ∞ when interruptions outpace progress.
    Array-friendly; φ ≥ 1 always.
    """
    lam = np.asarray(lam, float)
    ckpt_h = np.asarray(ckpt_h, float)
    restart_h = np.asarray(restart_h, float)
    lj = lam * np.asarray(gpus, float)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        tau = np.where(lj > 0, np.sqrt(2.0 * ckpt_h / np.where(lj > 0, lj, 1.0)), np.inf)
        ck = np.where((tau > 0) & np.isfinite(tau), ckpt_h / np.where(tau > 0, tau, 1.0), 0.0)
        lost = restart_h + np.where(np.isfinite(tau), tau, 0.0) / 2.0
        denom = np.where(lj > 0, 1.0 - lj * lost, 1.0)
        phi = np.where(denom > 0, (1.0 + ck) / np.where(denom > 0, denom, 1.0), np.inf)
    return phi, tau


def poisson_cdf(k, mu):
    """P(X ≤ k) for X ~ Poisson(mu); arrays broadcast; k < 0 gives 0."""
    k = np.floor(np.asarray(k, float))
    mu = np.asarray(mu, float)
    k, mu = np.broadcast_arrays(k, mu)
    out = np.zeros(k.shape)
    ok = k >= 0
    if not ok.any():
        return out
    mu_max = float(np.max(np.where(ok, mu, 0.0)))
    cap = int(math.ceil(mu_max + 12 * math.sqrt(mu_max) + 25))
    big = ok & (k >= cap)
    out[big] = 1.0
    small = ok & ~big
    if small.any():
        j = np.arange(cap + 1)
        lg = np.concatenate([[0.0], np.cumsum(np.log(np.arange(1, cap + 1)))])
        mus = mu[small][:, None]
        with np.errstate(divide="ignore"):
            logpmf = np.where(mus > 0, j * np.log(np.where(mus > 0, mus, 1.0)) - mus - lg,
                              np.where(j == 0, 0.0, -np.inf))
        cdf = np.cumsum(np.exp(logpmf), axis=1)
        out[small] = np.minimum(1.0, cdf[np.arange(cdf.shape[0]), k[small].astype(int)])
    return out


def deadline_miss_probability(work_gpu_hours, deadline_h, lam, ckpt_h, restart_h, gpus=1, speed=1.0):
    """Chance a spot job of ``work_gpu_hours`` (owned-card GPU-hours) on ``gpus`` GPUs misses a
    wall-clock deadline. Interruptions ~ Poisson(gλ × w') over the uninterrupted wall time
    w' = W/(g·speed)·(1 + δ/τ); each costs R + τ/2. Misses when w' + k(R + τ/2) > deadline."""
    phi, tau = spot_factor(lam, ckpt_h, restart_h, gpus)
    lj = np.asarray(lam, float) * gpus
    with np.errstate(divide="ignore", invalid="ignore"):
        ck = np.where(np.isfinite(tau) & (tau > 0), np.asarray(ckpt_h, float) / np.where(tau > 0, tau, 1), 0)
        wall = np.asarray(work_gpu_hours, float) / (gpus * np.asarray(speed, float)) * (1 + ck)
        loss = np.asarray(restart_h, float) + np.where(np.isfinite(tau), tau, 0.0) / 2
        kmax = np.where(loss > 0, (np.asarray(deadline_h, float) - wall) / np.where(loss > 0, loss, 1),
                        np.inf)
    mu = lj * wall
    p_ok = np.where(np.asarray(deadline_h) < wall, 0.0,
                    np.where(np.isinf(kmax), 1.0, poisson_cdf(np.where(np.isinf(kmax), 0, kmax), mu)))
    return 1.0 - p_ok


def _owned(P, D, N, price, c_over, months: int, fixed=True):
    """Cost to date (liquidation view) of N owned cards bought at ``price``; overflow at ``c_over`` per
    owned-card GPU-hour. Returns (cum, parts) with parts summed over the horizon."""
    H = HOURS_PER_MONTH
    host_cost = _hw(P, "host_cost", "x_host")
    cap = N * H * P["u_cap"]
    served = np.minimum(D, cap)
    over = D - served
    with np.errstate(divide="ignore", invalid="ignore"):
        u = np.where(N > 0, served / np.where(N > 0, N * H, 1.0), 0.0)
    card_w = P["tdp_w"] * (P["idle"] + (1.0 - P["idle"]) * u)
    on = np.where(P["always_on"] > 0, card_w + P["host_w"], (P["tdp_w"] + P["host_w"]) * u)
    energy = N * on / 1000.0 * P["pue"] * H * P["kwh"]
    # costs that are the same every month [per month, shape (S, 1)]
    colo = N * (P["tdp_w"] + P["host_w"]) / 1000.0 * P["colo"]
    maint = P["maint"] / 12.0 * N * (price + host_cost)
    fail = P["fail"] / 12.0 * N * price
    staff = np.where(N > 0, P["staff"], 0.0)
    fixed = colo + maint + fail + staff
    with np.errstate(invalid="ignore"):
        overflow = np.where(over > 0, over * c_over, 0.0)
    m = np.arange(1, months + 1)[None, :]
    resale_value = N * price * (1.0 - P["fee"]) * P["rho"] ** (m / 12.0)
    capex = N * (price + host_cost)
    cum = capex - resale_value + np.cumsum(energy + overflow, axis=1) + fixed * m
    S = D.shape[0]

    def col(x):
        return np.broadcast_to(np.asarray(x, float), (S, 1))[:, 0]

    parts = {"capex": col(capex), "resale": resale_value[:, -1], "energy": energy.sum(1),
             "colocation": col(colo) * months, "maintenance": col(maint) * months,
             "failure_reserve": col(fail) * months, "staff": col(staff) * months,
             "overflow": overflow.sum(1), "overflow_hours": over.sum(1), "served_hours": served.sum(1),
             "utilization": u.mean(1)}
    return cum, parts


def _lease(P, D, months: int, c_over):
    N = P["N"]
    price = _hw(P, "price_new", "x_new")
    cum_own, parts = _owned(P, D, N, price, c_over, months)
    host_cost = _hw(P, "host_cost", "x_host")
    total = N * (price + host_cost)
    down = total * P["lease_down"]
    A = total - down
    r = P["lease_rate"] / 12.0
    T = int(round(float(np.max(P["lease_term"]))))
    pay = annuity_payment(A, r, T)
    m = np.arange(1, months + 1)[None, :]
    paid = down + pay * np.minimum(m, T)
    g = (1.0 + r) ** m
    safe = np.where(r > 1e-12, r, 1.0)
    bal = np.where(m < T, np.where(r > 1e-12, A * g - pay * (g - 1.0) / safe, A - pay * m), 0.0)
    # owned cost to date = capex − resale + running; lease replaces capex with paid + balance
    cum = cum_own - total + paid + bal
    parts = dict(parts)
    parts["payment"] = pay[:, 0] if np.ndim(pay) == 2 else pay
    parts["interest"] = (pay * T + down - total)[:, 0] if np.ndim(pay) == 2 else pay * T + down - total
    parts["term"] = T
    return cum, parts


def _reserved(P, D, months: int, term: int, price, fixed_k=None, c_over=None):
    """Reserved GPUs: per term the peak month's need (or ``fixed_k``), committed in full at the term's
    start. Overflow beyond ``fixed_k`` costs ``c_over`` per owned-card GPU-hour."""
    H = HOURS_PER_MONTH
    S = D.shape[0]
    need = D / P["speed"]
    n_terms = -(-months // term)
    if fixed_k is None:
        pad = np.zeros((S, n_terms * term))
        pad[:, :months] = need
        peak = pad.reshape(S, n_terms, term).max(axis=2)
        K = np.ceil(peak / H - 1e-9)
        over_ref = np.zeros_like(D)
    else:
        K = np.broadcast_to(np.asarray(fixed_k, float), (S, 1)) * np.ones((1, n_terms))
        over_ref = np.maximum(0.0, D - np.asarray(fixed_k, float) * H * P["speed"])
    K_month = np.repeat(K, term, axis=1)[:, :months]
    commit = K * H * term * price
    arr = np.zeros_like(D)
    arr[:, ::term] = commit
    with np.errstate(invalid="ignore"):
        overflow = np.where(over_ref > 0, over_ref * (c_over if c_over is not None else 0.0), 0.0)
    cum = np.cumsum(arr + overflow, axis=1)
    used = np.minimum(need, K_month * H).sum(1)
    paid_hours = (K * H * term).sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        util = np.where(paid_hours > 0, used / np.where(paid_hours > 0, paid_hours, 1.0), 0.0)
    parts = {"reserved_gpus": K[:, 0], "reserved_gpus_max": K.max(1), "utilization": util,
             "overflow": overflow.sum(1), "commitment": commit.sum(1), "terms": n_terms}
    return cum, parts


def _burst_cost(P, kind: str):
    """Cost of one owned-card GPU-hour of work in the cloud: on-demand or expected spot."""
    if kind == "on-demand":
        return _cloud(P, "p_od", "x_od") / P["speed"]
    phi, _ = spot_factor(P["lam"], P["ckpt_h"], P["restart_h"], P["gpj"])
    return _cloud(P, "p_spot", "x_spot") * phi / P["speed"]


def _hybrid_cum(P, D, months, base: str, burst: str, k):
    c_b = _burst_cost(P, burst)
    k = np.asarray(k, float)
    if base in ("owned-new", "owned-used"):
        price = _hw(P, "price_new", "x_new") if base == "owned-new" else _hw(P, "price_used", "x_used")
        return _owned(P, D, k, price, c_b, months)
    term = RESERVED_TERM_MONTHS[base]
    price = _cloud(P, "p_r1" if base == "reserved-1y" else "p_r3", "x_r1" if base == "reserved-1y" else "x_r3")
    return _reserved(P, D, months, term, price, fixed_k=k, c_over=c_b)


def _all_options(P, D, months: int, plan: HybridPlan | None, skip: Iterable[str] = ()):
    """Cost to date of every available option → {id: (cum (S, M), parts)}."""
    skip = set(skip)
    out = {}
    od_cost = _burst_cost(P, "on-demand")
    if "buy-new" not in skip:
        out["buy-new"] = _owned(P, D, P["N"], _hw(P, "price_new", "x_new"), od_cost, months)
    if "buy-used" not in skip:
        out["buy-used"] = _owned(P, D, P["N"], _hw(P, "price_used", "x_used"), od_cost, months)
    if "lease" not in skip:
        out["lease"] = _lease(P, D, months, od_cost)
    if "on-demand" not in skip:
        cost = D * od_cost
        out["on-demand"] = (np.cumsum(cost, axis=1), {"gpu_hours": (D / P["speed"]).sum(1)})
    if "spot" not in skip:
        phi, tau = spot_factor(P["lam"], P["ckpt_h"], P["restart_h"], P["gpj"])
        work = D / P["speed"]
        paid = work * phi
        cost = paid * _cloud(P, "p_spot", "x_spot")
        with np.errstate(invalid="ignore"):
            interruptions = paid * P["lam"]
        out["spot"] = (np.cumsum(cost, axis=1), {
            "factor": np.broadcast_to(phi, (D.shape[0], 1))[:, 0],
            "interval_h": np.broadcast_to(tau, (D.shape[0], 1))[:, 0],
            "work_hours": work.sum(1), "paid_hours": paid.sum(1),
            "interruptions_per_month": interruptions.mean(1)})
    for rid, term in RESERVED_TERM_MONTHS.items():
        if rid not in skip:
            pk, xk = ("p_r1", "x_r1") if rid == "reserved-1y" else ("p_r3", "x_r3")
            out[rid] = _reserved(P, D, months, term, _cloud(P, pk, xk))
    if "hybrid" not in skip and plan is not None:
        out["hybrid"] = _hybrid_cum(P, D, months, plan.base, plan.burst, plan.base_gpus)
    return out


# --------------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------------

REASON_TEMPLATES = {
    "buy-new": "{n} × {gpu} bought new at {price} each plus {host} of host per card, busy {util} of the "
               "hours; electricity and hosting are {energy_share} of the cost and resale returns {resale} "
               "at month {months}.",
    "buy-used": "{n} × {gpu} bought used at {price} each plus {host} of host per card, busy {util} of the "
                "hours; electricity and hosting are {energy_share} of the cost and resale returns {resale} "
                "at month {months}.",
    "lease": "{n} × {gpu} leased for {payment} a month over {term} months at {rate} a year: {interest} of "
             "interest on top of buying, and the cards are yours at the end.",
    "on-demand": "{hours} GPU-hours of {gpu} at {price} an hour ({offer}): nothing idle is paid for and "
                 "nothing is committed.",
    "spot": "{gpu} spot at {price} an hour ({offer}) with {interruptions} interruptions a month expected: a "
            "checkpoint every {interval} (Young/Daly) and {overhead} extra hours; chance of missing the "
            "deadline {deadline}.",
    "reserved-1y": "{k} × {gpu} reserved for 1 year at {price} an hour and paid whether used or not: busy "
                   "{util} of the paid hours against a break-even of {break_even}.",
    "reserved-3y": "{k} × {gpu} reserved for 3 years at {price} an hour and paid whether used or not: busy "
                   "{util} of the paid hours against a break-even of {break_even}.",
    "hybrid": "{k} × {base} as the base with {burst} bursts for the rest; {headroom} of headroom would cost "
              "{headroom_cost} more, and your configured base of {configured} would cost {configured_cost}.",
}
UNAVAILABLE_TEMPLATES = {
    "unavail_no_price": "no {what} price for {gpu} in the catalog; set {field}",
    "unavail_no_cloud": "no {what} price for {gpu} in the catalog; set {field}",
    "unavail_financing": "no financing rate for region {region} in tco_defaults.csv; set lease.annual_rate",
    "unavail_spot_inputs": "spot needs {field}",
    "unavail_overflow": "demand exceeds the owned cards and there is no on-demand price for the overflow",
    "unavail_hybrid": "a hybrid needs an owned or reserved base and a spot or on-demand price",
    "unavail_never": "interruptions come faster than the work can checkpoint and restart: the job never "
                     "finishes on spot",
}
NAME_TEMPLATES = {
    "buy-new": "buy new: {n} × {gpu}", "buy-used": "buy used: {n} × {gpu}",
    "lease": "lease to own: {n} × {gpu}", "on-demand": "cloud on-demand: {gpu}",
    "spot": "cloud spot: {gpu}", "reserved-1y": "cloud reserved 1 year: {gpu}",
    "reserved-3y": "cloud reserved 3 years: {gpu}", "hybrid": "hybrid: {k} × {base} + {burst}",
}
CHEAPEST_TEMPLATE = "Cheapest over {months} months: {name}, {total} ({per_hour} per useful GPU-hour)."


def fmt_money(x: float, currency: str) -> str:
    if x is None or x != x:
        return "—"
    if math.isinf(x):
        return "∞"
    return f"{x:,.0f} {currency}" if abs(x) >= 100 else f"{x:,.2f} {currency}"


def fmt_pct(x: float) -> str:
    return "—" if x is None or x != x else f"{100 * x:.0f} %"


def fmt_hours(h: float) -> str:
    if h != h:
        return "—"
    if math.isinf(h):
        return "never"
    return f"{h * 60:.0f} min" if h < 2 else f"{h:.1f} h"


@dataclass(frozen=True)
class HybridPlan:
    """The base fleet that minimizes the hybrid's total cost."""

    base: str  # owned-new | owned-used | reserved-1y | reserved-3y
    burst: str  # spot | on-demand
    base_gpus: int
    total_cost: float
    headroom: float
    headroom_gpus: int
    headroom_cost: float
    configured_gpus: int
    configured_cost: float
    curve: tuple[tuple[int, float], ...]  # (base GPUs, total cost) for the chosen base and burst

    def to_dict(self) -> dict:
        d = dict(self.__dict__)
        d["curve"] = [list(x) for x in self.curve]
        return d


@dataclass(frozen=True)
class OptionResult:
    id: str
    name: str
    kind: str
    total_cost: float
    cost_per_useful_gpu_hour: float
    break_even_month: int | None
    cumulative_cost: tuple[float, ...]
    reason: str
    reason_params: Mapping[str, str]
    name_params: Mapping[str, str]
    offer: str
    source: str
    details: Mapping[str, float]
    cost_per_run: Mapping[str, float]
    cost_per_1m_tokens: Mapping[str, float]

    def to_dict(self) -> dict:
        return {"id": self.id, "name": self.name, "kind": self.kind, "total_cost": _clean(self.total_cost),
                "cost_per_useful_gpu_hour": _clean(self.cost_per_useful_gpu_hour),
                "break_even_month": self.break_even_month, "reason": self.reason, "offer": self.offer,
                "source": self.source, "details": {k: _clean(v) for k, v in self.details.items()},
                "cost_per_run": {k: _clean(v) for k, v in self.cost_per_run.items()},
                "cost_per_1m_tokens": {k: _clean(v) for k, v in self.cost_per_1m_tokens.items()},
                "cumulative_cost": [_clean(x) for x in self.cumulative_cost]}


@dataclass(frozen=True)
class BreakEven:
    """Owning option against a renting option: first month from which owning stays cheaper, and the
    steady utilization of the owned cards above which owning is cheaper over the horizon."""

    owned: str
    rented: str
    month: int | None
    utilization: float | None

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True)
class TcoResult:
    scenario: str
    title: str
    currency: str
    horizon_months: int
    options: tuple[OptionResult, ...]
    unavailable: tuple[tuple[str, str, str], ...]  # id, kind, reason
    unavailable_keys: tuple[tuple[str, str, Mapping[str, str]], ...]  # id, template key, params
    cheapest: str
    cheapest_sentence: str
    demand_gpu_hours: tuple[float, ...]
    useful_gpu_hours: float
    owned_utilization: float
    break_even: tuple[BreakEven, ...]
    reserved_break_even_utilization: Mapping[str, float]
    hybrid: HybridPlan | None
    spot: Mapping[str, float]
    warnings: tuple[str, ...]
    provenance: tuple[Provenance, ...]

    def option(self, oid: str) -> OptionResult:
        for o in self.options:
            if o.id == oid:
                return o
        raise UnknownNameError("option", oid, [o.id for o in self.options])

    @property
    def cheapest_option(self) -> OptionResult:
        return self.option(self.cheapest)

    def summary_dict(self) -> dict:
        """The CLI's stable JSON: scenario, currency, horizon_months, options, cheapest, reasons."""
        return {
            "scenario": self.scenario, "currency": self.currency, "horizon_months": self.horizon_months,
            "options": [{"name": o.name, "kind": o.kind, "id": o.id, "total_cost": _clean(o.total_cost),
                         "cost_per_useful_gpu_hour": _clean(o.cost_per_useful_gpu_hour),
                         "break_even_month": o.break_even_month} for o in self.options],
            "cheapest": self.cheapest_option.name, "cheapest_id": self.cheapest,
            "cheapest_kind": self.cheapest_option.kind,
            "reasons": {o.name: o.reason for o in self.options},
            "summary": self.cheapest_sentence,
            "unavailable": [{"id": i, "kind": k, "reason": r} for i, k, r in self.unavailable],
            "break_even": [b.to_dict() for b in self.break_even],
            "hybrid": self.hybrid.to_dict() if self.hybrid else None,
            "warnings": list(self.warnings),
        }

    def to_dict(self) -> dict:
        d = self.summary_dict()
        d.update({"title": self.title, "options_detail": [o.to_dict() for o in self.options],
                  "demand_gpu_hours": [_clean(x) for x in self.demand_gpu_hours],
                  "useful_gpu_hours": self.useful_gpu_hours, "owned_utilization": self.owned_utilization,
                  "reserved_break_even_utilization": dict(self.reserved_break_even_utilization),
                  "spot": {k: _clean(v) for k, v in self.spot.items()},
                  "provenance": [p.to_dict() for p in self.provenance]})
        return d


def _clean(x):
    if isinstance(x, (np.floating, np.integer)):
        x = x.item()
    if isinstance(x, float) and (math.isnan(x) or math.isinf(x)):
        return None
    return x


def _params_arrays(inputs: Inputs, S: int = 1) -> dict[str, np.ndarray]:
    return {k: np.full((S, 1), float(v)) for k, v in inputs.params.items()}


def break_even_month(cum_a: np.ndarray, cum_b: np.ndarray) -> np.ndarray:
    """First month (1-based) from which ``cum_a`` stays at or below ``cum_b``; 0 where never. (S, M)."""
    ok = cum_a <= cum_b * (1 + 1e-12) + 1e-9
    stays = np.flip(np.logical_and.accumulate(np.flip(ok, axis=1), axis=1), axis=1)
    any_ = stays.any(axis=1)
    first = np.argmax(stays, axis=1) + 1
    return np.where(any_, first, 0)


def _available(inputs: Inputs) -> list[str]:
    return [o for o in OPTION_IDS if o not in inputs.unavailable and o != "hybrid"]


def _plan_hybrid(inputs: Inputs, P, D, months) -> HybridPlan | None:
    v = inputs.scenario.values
    avail = set(_available(inputs))
    bases = [b for b in HYBRID_BASES if {"owned-new": "buy-new", "owned-used": "buy-used"}.get(b, b) in avail]
    if v["hybrid.base"] != "auto":
        bases = [b for b in bases if b == v["hybrid.base"]]
    bursts = [b for b in BURST_KINDS if b in avail]
    if v["hybrid.burst"] != "auto":
        bursts = [b for b in bursts if b == v["hybrid.burst"]]
    if not bases or not bursts:
        return None
    p = inputs.params
    peak = float(D.max())
    best = None
    for base in bases:
        if base.startswith("owned"):
            kmax = int(math.ceil(peak / (HOURS_PER_MONTH * p["u_cap"]) - 1e-9))
        else:
            kmax = int(math.ceil(peak / (HOURS_PER_MONTH * p["speed"]) - 1e-9))
        k_hr = int(math.ceil(kmax * (1 + p["headroom"]))) + 1
        kmax = max(kmax, int(p["configured_base"]), k_hr)
        ks = np.arange(kmax + 1, dtype=float)[:, None]
        Pk = {key: val for key, val in P.items()}
        Dk = np.broadcast_to(D, (len(ks), months))
        for burst in bursts:
            cum, _ = _hybrid_cum(Pk, Dk, months, base, burst, ks)
            totals = cum[:, -1]
            if not np.isfinite(totals).any():
                continue
            i = int(np.nanargmin(np.where(np.isfinite(totals), totals, np.inf)))
            if best is None or totals[i] < best[0] - 1e-9:
                best = (float(totals[i]), base, burst, i, totals)
    if best is None:
        return None
    total, base, burst, k, totals = best
    k_h = int(math.ceil(k * (1 + p["headroom"]) - 1e-9)) if k > 0 else 0
    k_h = min(k_h, len(totals) - 1)
    k_c = min(int(p["configured_base"]), len(totals) - 1)
    return HybridPlan(base=base, burst=burst, base_gpus=k, total_cost=total, headroom=p["headroom"],
                      headroom_gpus=k_h, headroom_cost=float(totals[k_h] - total), configured_gpus=k_c,
                      configured_cost=float(totals[k_c]),
                      curve=tuple((i, float(t)) for i, t in enumerate(totals)))


def evaluate(inputs: Inputs, *, months: int | None = None, break_even_grid: int = 101) -> TcoResult:
    """Price every option month by month; the cheapest with reasons; break-even months and utilizations."""
    M = int(months or inputs.horizon_months)
    cur = inputs.currency
    P = _params_arrays(inputs)
    p = inputs.params
    extra = _extra_hours(inputs, M)
    D = _demand(P, M, extra)
    plan = _plan_hybrid(inputs, P, D, M)
    unavailable = dict(inputs.unavailable)
    if plan is None:
        unavailable.setdefault("hybrid", ("unavail_hybrid", {}))
    res = _all_options(P, D, M, plan, skip=unavailable)
    # options that cannot be priced
    for oid in list(res):
        cum = res[oid][0]
        if not np.isfinite(cum[0, -1]):
            if oid in ("buy-new", "buy-used", "lease"):
                unavailable[oid] = ("unavail_overflow", {})
            elif oid == "spot":
                unavailable[oid] = ("unavail_never", {})
            else:
                unavailable[oid] = ("unavail_no_cloud", {"what": oid, "gpu": inputs.cloud_name, "field": "-"})
            del res[oid]
    if not res:
        raise GpucostError("no option can be priced: the catalog has no prices for these cards")
    demand = D[0]
    useful = float(demand.sum())
    od_cum = res["on-demand"][0] if "on-demand" in res else None
    hours = HOURS_PER_MONTH
    N = p["N"]

    # spot deadline
    spot_info: dict[str, float] = {}
    if "spot" in res:
        parts = res["spot"][1]
        spot_info = {"checkpoint_interval_h": float(parts["interval_h"][0]), "factor": float(parts["factor"][0]),
                     "interruptions_per_month": float(parts["interruptions_per_month"][0]),
                     "interruption_rate_per_hour": p["lam"]}
        if p["job_hours"] == p["job_hours"] and p["deadline_h"] == p["deadline_h"]:
            spot_info["deadline_miss_probability"] = float(deadline_miss_probability(
                p["job_hours"], p["deadline_h"], p["lam"], p["ckpt_h"], p["restart_h"], p["gpj"], p["speed"]))

    # break-even utilization: steady load, no bursts/jobs/growth; grid over the owned cards' utilization
    grid = np.linspace(0.0, p["u_cap"], break_even_grid)
    Pg = _params_arrays(inputs, len(grid))
    Pg["base_util"] = grid[:, None]
    Pg["growth"] = np.zeros((len(grid), 1))
    Dg = _demand(Pg, M, np.zeros(M))
    rg = _all_options(Pg, Dg, M, None, skip=set(unavailable) | {"hybrid"})
    totals_g = {k: v[0][:, -1] for k, v in rg.items()}

    be_list = []
    for own in OWNED_OPTIONS:
        if own not in res:
            continue
        for rent in RENTED_OPTIONS:
            if rent not in res:
                continue
            bm = int(break_even_month(res[own][0], res[rent][0])[0])
            be_list.append(BreakEven(own, rent, bm or None, _crossing(grid, totals_g[own] - totals_g[rent])))
    reserved_be = {rid: p[pk] / p["p_od"] for rid, pk in (("reserved-1y", "p_r1"), ("reserved-3y", "p_r3"))
                   if rid in res and p["p_od"] == p["p_od"]}

    options = []
    for oid in OPTION_IDS:
        if oid not in res:
            continue
        cum, parts = res[oid]
        total = float(cum[0, -1])
        cpu = total / useful if useful > 0 else math.nan
        bm = None
        if od_cum is not None and oid != "on-demand":
            b = int(break_even_month(cum, od_cum)[0])
            bm = b or None
        reason_params, name_params = _reason_params(inputs, oid, parts, total, M, plan, reserved_be, spot_info)
        per_run = {name: cpu * unit for name, kind, _h, unit, _f in inputs.job_hours if kind == "training"}
        per_tok = {name: cpu * unit for name, kind, _h, unit, _f in inputs.job_hours if kind == "serving"}
        offer = inputs.offers.get(oid)
        if oid == "hybrid" and plan is not None:
            o2 = inputs.offers.get(plan.burst)
            offer_label = o2.label if o2 else ""
            source = o2.source if o2 else ""
        elif offer is not None:
            offer_label, source = offer.label, offer.source
        else:
            offer_label, source = "", ""
        details = {k: (float(np.asarray(v).ravel()[0]) if np.size(v) else math.nan)
                   for k, v in parts.items()}
        options.append(OptionResult(
            id=oid, name=NAME_TEMPLATES[oid].format(**name_params), kind=OPTION_KIND[oid], total_cost=total,
            cost_per_useful_gpu_hour=cpu, break_even_month=bm,
            cumulative_cost=tuple(float(x) for x in cum[0]),
            reason=REASON_TEMPLATES[oid].format(**reason_params),
            reason_params=MappingProxyType(reason_params), name_params=MappingProxyType(name_params),
            offer=offer_label, source=source, details=MappingProxyType(details),
            cost_per_run=MappingProxyType(per_run), cost_per_1m_tokens=MappingProxyType(per_tok)))
    cheapest = min(options, key=lambda o: (o.total_cost, OPTION_IDS.index(o.id)))
    sentence = CHEAPEST_TEMPLATE.format(months=M, name=cheapest.name, total=fmt_money(cheapest.total_cost, cur),
                                        per_hour=fmt_money(cheapest.cost_per_useful_gpu_hour, cur))
    unav = tuple((oid, OPTION_KIND[oid], UNAVAILABLE_TEMPLATES[key].format(**prm))
                 for oid, (key, prm) in unavailable.items())
    util = float(np.minimum(demand, N * hours * p["u_cap"]).sum() / (N * hours * M))
    sc = inputs.scenario
    return TcoResult(
        scenario=sc.name, title=sc.title.get("en", sc.name), currency=cur, horizon_months=M,
        options=tuple(options), unavailable=unav,
        unavailable_keys=tuple((oid, key, MappingProxyType(dict(prm))) for oid, (key, prm) in unavailable.items()),
        cheapest=cheapest.id, cheapest_sentence=sentence,
        demand_gpu_hours=tuple(float(x) for x in demand), useful_gpu_hours=useful, owned_utilization=util,
        break_even=tuple(be_list), reserved_break_even_utilization=MappingProxyType(reserved_be),
        hybrid=plan, spot=MappingProxyType(spot_info), warnings=inputs.warnings, provenance=inputs.provenance)


def _crossing(grid: np.ndarray, diff: np.ndarray) -> float | None:
    """Smallest utilization from which ``diff`` (owning − renting) stays ≤ 0, interpolated; None if never."""
    ok = diff <= 1e-9
    stays = np.flip(np.logical_and.accumulate(np.flip(ok)))
    if not stays.any():
        return None
    i = int(np.argmax(stays))
    if i == 0:
        return float(grid[0])
    d0, d1 = diff[i - 1], diff[i]
    frac = d0 / (d0 - d1) if d0 != d1 else 1.0
    return float(grid[i - 1] + frac * (grid[i] - grid[i - 1]))


def _reason_params(inputs: Inputs, oid: str, parts, total: float, M: int, plan, reserved_be, spot_info):
    cur = inputs.currency
    p = inputs.params
    n = int(p["N"])
    d = {k: (float(np.asarray(v).ravel()[0]) if np.size(v) else math.nan) for k, v in parts.items()}
    if oid in ("buy-new", "buy-used", "lease"):
        price = p["price_new"] if oid != "buy-used" else p["price_used"]
        energy_share = (d["energy"] + d["colocation"]) / total if total > 0 else math.nan
        rp = {"n": str(n), "gpu": inputs.owned_name, "price": fmt_money(price, cur),
              "host": fmt_money(p["host_cost"], cur), "util": fmt_pct(d["utilization"]),
              "energy_share": fmt_pct(energy_share), "resale": fmt_money(d["resale"], cur), "months": str(M)}
        if oid == "lease":
            rp = {"n": str(n), "gpu": inputs.owned_name, "payment": fmt_money(d["payment"], cur),
                  "term": str(int(d["term"])), "rate": f"{100 * p['lease_rate']:.2f} %",
                  "interest": fmt_money(d["interest"], cur)}
        return rp, {"n": str(n), "gpu": inputs.owned_name}
    if oid == "on-demand":
        o = inputs.offers["on-demand"]
        return ({"hours": f"{d['gpu_hours']:,.0f}", "gpu": inputs.cloud_name, "price": fmt_money(o.price, cur),
                 "offer": o.label}, {"gpu": inputs.cloud_name})
    if oid == "spot":
        o = inputs.offers["spot"]
        dl = spot_info.get("deadline_miss_probability")
        return ({"gpu": inputs.cloud_name, "price": fmt_money(o.price, cur), "offer": o.label,
                 "interruptions": f"{d['interruptions_per_month']:.1f}", "interval": fmt_hours(d["interval_h"]),
                 "overhead": fmt_pct(d["factor"] - 1), "deadline": fmt_pct(dl) if dl is not None else "—"},
                {"gpu": inputs.cloud_name})
    if oid in RESERVED_TERM_MONTHS:
        o = inputs.offers[oid]
        return ({"k": f"{d['reserved_gpus_max']:.0f}", "gpu": inputs.cloud_name, "price": fmt_money(o.price, cur),
                 "util": fmt_pct(d["utilization"]), "break_even": fmt_pct(reserved_be.get(oid, math.nan))},
                {"gpu": inputs.cloud_name})
    # hybrid
    base_name = {"owned-new": f"new {inputs.owned_name}", "owned-used": f"used {inputs.owned_name}",
                 "reserved-1y": f"{inputs.cloud_name} reserved 1 y",
                 "reserved-3y": f"{inputs.cloud_name} reserved 3 y"}[plan.base]
    return ({"k": str(plan.base_gpus), "base": base_name, "burst": plan.burst,
             "headroom": fmt_pct(plan.headroom), "headroom_cost": fmt_money(plan.headroom_cost, cur),
             "configured": str(plan.configured_gpus), "configured_cost": fmt_money(plan.configured_cost, cur)},
            {"k": str(plan.base_gpus), "base": base_name, "burst": plan.burst})


# --------------------------------------------------------------------------------------------------
# Sensitivity: tornado and Monte Carlo
# --------------------------------------------------------------------------------------------------

#: tornado/Monte Carlo inputs: name → (parameter keys, how: "scale" multiplies, "set" replaces)
SENSITIVITY_INPUTS = {
    "hardware_price": (("price_new", "price_used", "host_cost"), "scale"),
    "cloud_price": (("p_od", "p_spot", "p_r1", "p_r3"), "scale"),
    "utilization": (("base_util",), "set"),
    "electricity": (("kwh",), "scale"),
    "resale": (("rho",), "set"),
    "interruption": (("lam",), "scale"),
    "fx": (("fx_hw", "fx_cloud"), "scale"),
    "pue": (("pue",), "scale"),
}


def _apply(P: dict, name: str, values: np.ndarray, rows: slice | np.ndarray) -> None:
    keys, how = SENSITIVITY_INPUTS[name]
    for k in keys:
        if how == "scale":
            P[k][rows, 0] = P[k][rows, 0] * values
        else:
            P[k][rows, 0] = values


@dataclass(frozen=True)
class TornadoBar:
    """One input swung: ``low``/``high`` are factors of the base (``how`` = factor) or values."""

    input: str
    how: str
    low: float
    high: float
    base: float
    low_totals: Mapping[str, float]
    high_totals: Mapping[str, float]

    def swing(self, option: str) -> float:
        return abs(self.high_totals[option] - self.low_totals[option])

    def to_dict(self) -> dict:
        return {"input": self.input, "how": self.how, "low": self.low, "high": self.high,
                "base": _clean(self.base),
                "low_totals": {k: _clean(v) for k, v in self.low_totals.items()},
                "high_totals": {k: _clean(v) for k, v in self.high_totals.items()}}


@dataclass(frozen=True)
class TornadoResult:
    currency: str
    base_totals: Mapping[str, float]
    bars: tuple[TornadoBar, ...]

    def ranked(self, option: str) -> list[TornadoBar]:
        """Bars by their swing of ``option``'s total, widest first."""
        return sorted(self.bars, key=lambda b: -b.swing(option))

    def to_dict(self) -> dict:
        return {"currency": self.currency, "base_totals": {k: _clean(v) for k, v in self.base_totals.items()},
                "bars": [b.to_dict() for b in self.bars]}


def _relevant_inputs(inputs: Inputs) -> list[str]:
    p = inputs.params
    names = []
    for name in SENSITIVITY_INPUTS:
        if name == "interruption" and not (p["lam"] == p["lam"] and p["lam"] > 0):
            continue
        if name == "fx" and not any(p[x] for x in ("x_new", "x_used", "x_host", "x_od", "x_spot", "x_r1", "x_r3")):
            continue
        names.append(name)
    return names


def tornado(inputs: Inputs, result: TcoResult | None = None, *, months: int | None = None) -> TornadoResult:
    """Swing each input over its range (DEFAULT_SWINGS or the scenario's, the spot bucket for the
    interruption rate) with the rest at base; total cost of every option at both ends. One vectorized
    evaluation; the hybrid keeps the base plan's commitment (a commitment is made before you know)."""
    result = result or evaluate(inputs, months=months)
    M = result.horizon_months
    names = _relevant_inputs(inputs)
    S = 1 + 2 * len(names)
    P = _params_arrays(inputs, S)
    p = inputs.params
    for i, name in enumerate(names):
        lo, hi = inputs.swings[name]
        _apply(P, name, np.array([lo]), slice(1 + 2 * i, 2 + 2 * i))
        _apply(P, name, np.array([hi]), slice(2 + 2 * i, 3 + 2 * i))
    D = _demand(P, M, _extra_hours(inputs, M))
    skip = {u for u, _k, _r in result.unavailable}
    res = _all_options(P, D, M, result.hybrid, skip=skip)
    totals = {k: v[0][:, -1] for k, v in res.items()}
    bars = []
    for i, name in enumerate(names):
        lo, hi = inputs.swings[name]
        how = SENSITIVITY_INPUTS[name][1]
        base_val = p[SENSITIVITY_INPUTS[name][0][0]]
        bars.append(TornadoBar(name, "factor" if how == "scale" else "value", float(lo), float(hi),
                               float(base_val),
                               MappingProxyType({k: float(t[1 + 2 * i]) for k, t in totals.items()}),
                               MappingProxyType({k: float(t[2 + 2 * i]) for k, t in totals.items()})))
    return TornadoResult(inputs.currency, MappingProxyType({k: float(t[0]) for k, t in totals.items()}),
                         tuple(bars))


@dataclass(frozen=True)
class MonteCarloResult:
    currency: str
    draws: int
    seed: int
    percentiles: Mapping[str, Mapping[str, float]]  # option → p10, p50, p90, mean
    probability_cheapest: Mapping[str, float]
    deadline_miss_probability: float | None
    histogram: Mapping[str, tuple[tuple[float, ...], tuple[int, ...]]]  # option → (edges, counts)
    totals: Mapping[str, np.ndarray] = field(repr=False, compare=False)

    def to_dict(self) -> dict:
        return {"currency": self.currency, "draws": self.draws, "seed": self.seed,
                "percentiles": {k: {q: _clean(x) for q, x in v.items()} for k, v in self.percentiles.items()},
                "probability_cheapest": dict(self.probability_cheapest),
                "deadline_miss_probability": self.deadline_miss_probability,
                "histogram": {k: {"edges": list(e), "counts": list(c)} for k, (e, c) in self.histogram.items()}}


def _triangular(rng: np.random.Generator, lo: float, mode: float, hi: float, n: int) -> np.ndarray:
    if hi - lo <= 1e-15:
        return np.full(n, mode)
    mode = min(max(mode, lo), hi)
    return rng.triangular(lo, mode, hi, n)


def monte_carlo(inputs: Inputs, result: TcoResult | None = None, *, draws: int = 10000, seed: int = 0,
                months: int | None = None, chunk: int = 2500, bins: int = 30,
                progress: Callable[[float], None] | None = None) -> MonteCarloResult:
    """Draw every uncertain input from a triangular (low, base, high) distribution over its range and
    price every option per draw (vectorized, in chunks so ``progress(fraction)`` can report)."""
    if draws < 1:
        raise GpucostError(f"Monte Carlo needs at least one draw, not {draws}")
    result = result or evaluate(inputs, months=months)
    M = result.horizon_months
    rng = np.random.default_rng(seed)
    names = _relevant_inputs(inputs)
    p = inputs.params
    samples = {}
    for name in names:
        lo, hi = inputs.swings[name]
        how = SENSITIVITY_INPUTS[name][1]
        mode = p[SENSITIVITY_INPUTS[name][0][0]] if how == "set" else 1.0
        samples[name] = _triangular(rng, lo, mode, hi, draws)
    extra = _extra_hours(inputs, M)
    skip = {u for u, _k, _r in result.unavailable}
    totals: dict[str, list[np.ndarray]] = {}
    miss = []
    for start in range(0, draws, chunk):
        stop = min(draws, start + chunk)
        S = stop - start
        P = _params_arrays(inputs, S)
        for name in names:
            _apply(P, name, samples[name][start:stop], slice(0, S))
        D = _demand(P, M, extra)
        res = _all_options(P, D, M, result.hybrid, skip=skip)
        for k, (cum, _parts) in res.items():
            totals.setdefault(k, []).append(cum[:, -1])
        if "spot" in res and p["job_hours"] == p["job_hours"] and p["deadline_h"] == p["deadline_h"]:
            miss.append(deadline_miss_probability(p["job_hours"], p["deadline_h"], P["lam"][:, 0], p["ckpt_h"],
                                                  p["restart_h"], p["gpj"], p["speed"]))
        if progress is not None:
            progress(stop / draws)
    tot = {k: np.concatenate(v) for k, v in totals.items()}
    keys = list(tot)
    stack = np.vstack([np.where(np.isfinite(tot[k]), tot[k], np.inf) for k in keys])
    winner = np.argmin(stack, axis=0)
    prob = {k: float(np.mean(winner == i)) for i, k in enumerate(keys)}
    pct = {}
    hist = {}
    finite_all = stack[np.isfinite(stack)]
    lo_e, hi_e = (float(finite_all.min()), float(finite_all.max())) if finite_all.size else (0.0, 1.0)
    edges = np.linspace(lo_e, hi_e if hi_e > lo_e else lo_e + 1, bins + 1)
    for k in keys:
        x = tot[k][np.isfinite(tot[k])]
        q = np.percentile(x, [10, 50, 90]) if x.size else [math.nan] * 3
        pct[k] = MappingProxyType({"p10": float(q[0]), "p50": float(q[1]), "p90": float(q[2]),
                                   "mean": float(x.mean()) if x.size else math.nan})
        counts, _ = np.histogram(x, bins=edges)
        hist[k] = (tuple(float(e) for e in edges), tuple(int(c) for c in counts))
    return MonteCarloResult(inputs.currency, draws, seed, MappingProxyType(pct), MappingProxyType(prob),
                            float(np.mean(np.concatenate(miss))) if miss else None,
                            MappingProxyType(hist), MappingProxyType(tot))


# --------------------------------------------------------------------------------------------------
# Small helpers other engines use
# --------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class HourlyValue:
    """What one GPU-hour of a card is worth [currency per GPU-hour]: its cheapest cloud on-demand price,
    else its amortized ownership cost (depreciation over ``years`` at the utilization, plus energy)."""

    gpu_id: str
    currency: str
    value: float
    basis: str  # cloud-on-demand | owned-amortized
    cloud_on_demand: float
    owned_amortized: float
    source: str

    def to_dict(self) -> dict:
        return {k: _clean(v) for k, v in self.__dict__.items()}


def owned_hourly_cost(gpu_id: str, catalog: Catalog | None = None, currency: str = "USD", *,
                      utilization: float = 1.0, years: float = 3.0, electricity_per_kwh: float = 0.0,
                      pue: float = 1.0, condition: str = "new") -> float:
    """Amortized cost of one busy GPU-hour of an owned card [currency/h]: the value lost over ``years``
    (price × (1 − ρ^years), ρ from :func:`resale_retention`) spread over the busy hours, plus the card's
    energy at TDP (``electricity_per_kwh`` in ``currency``; 0 leaves energy out)."""
    cat = catalog or Catalog()
    if not (0 < utilization <= 1):
        raise GpucostError(f"utilization must be in (0, 1], not {utilization}")
    if not years > 0:
        raise GpucostError(f"years must be greater than zero, not {years}")
    gid = cat.gpu_id(gpu_id)
    ps = _price_summary(cat, currency.upper())
    price = _num(ps.loc[gid, f"price_{condition}"]) if gid in ps.index else math.nan
    rho, _ = resale_retention(cat, gid)
    tdp = _num(cat.gpus.set_index("id").loc[gid, "tdp_w"])
    if not (price == price and rho == rho):
        return math.nan
    busy = years * 8760 * utilization
    energy = (tdp / 1000 * pue * electricity_per_kwh) if tdp == tdp else 0.0
    return price * (1 - rho ** years) / busy + energy


def hourly_value(gpu_id: str, catalog: Catalog | None = None, currency: str = "USD", **owned_kw) -> HourlyValue:
    """The card's cloud on-demand price per GPU-hour (cheapest offer), or — when no offer exists — its
    amortized ownership cost per busy hour (:func:`owned_hourly_cost`). Other engines price idle time,
    sharing and scaling with it."""
    cat = catalog or Catalog()
    cur = currency.upper()
    gid = cat.gpu_id(gpu_id)
    ps = _price_summary(cat, cur)
    cloud = _num(ps.loc[gid, "cloud_hourly"]) if gid in ps.index else math.nan
    owned = owned_hourly_cost(gid, cat, cur, **owned_kw)
    if cloud == cloud:
        return HourlyValue(gid, cur, cloud, "cloud-on-demand", cloud, owned,
                           f"{ps.loc[gid, 'cloud_offer']}: {ps.loc[gid, 'cloud_source']}")
    if owned == owned:
        return HourlyValue(gid, cur, owned, "owned-amortized", cloud, owned,
                           "catalog new price and resale retention (gpucost.tco.owned_hourly_cost)")
    raise GpucostError(f"no cloud price and no new price for {gid} in the catalog")


def run(name_or_path: str | Path | Scenario, catalog: Catalog | None = None, *, months: int | None = None,
        currency: str | None = None) -> TcoResult:
    """Load (if needed), resolve and evaluate a scenario: what ``gpucost tco`` prints."""
    sc = name_or_path if isinstance(name_or_path, Scenario) else load_scenario(name_or_path)
    return evaluate(resolve(sc, catalog, currency=currency, months=months))
