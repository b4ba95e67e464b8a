"""Scenario files: the schema (every key a :class:`~gpucost.specs.Spec`), validation, loading and saving.

A scenario is a YAML mapping (sections ``owned``, ``lease``, ``cloud``, ``spot``, ``demand``, ``hybrid``,
``uncertainty``); every error names the file and the dotted key. Money values are in the scenario's
``currency`` unless written as ``{value: 1000, currency: USD}``. Bounds come from the shared specs, so a
scenario file, the page's widgets and the CLI accept the same values.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from gpucost.catalog import bundled_data_dir, user_data_dir
from gpucost.errors import GpucostError, UnknownNameError, closest
from gpucost.specs import SPECS, Spec
from gpucost.spot import SPOT_BUCKETS

SITES = ("home", "office", "colocation")
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
SCENARIO_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
#: the deepest a scenario file may nest (its sections are two levels; a deeper file is not a scenario)
MAX_DEPTH = 6
MAX_JOBS = 100


@dataclass(frozen=True)
class Field:
    """A scenario key: its spec, whether it is money (a number or ``{value, currency}``), a list of
    names, or required."""

    spec: Spec
    money: bool = False
    many: bool = False
    required: bool = False

    @property
    def default(self) -> Any:
        return self.spec.default


def _F(kind: str = "float", default: Any = None, *, money: bool = False, many: bool = False,
       required: bool = False, **bounds: Any) -> Field:
    return Field(Spec(kind, default, optional=not required, **bounds), money, many, required)


def _shared(name: str, **changes: Any) -> Field:
    return Field(SPECS[name].with_default(changes.pop("default", SPECS[name].default), **changes))


#: Every key a scenario file may hold (dotted path → field)
FIELDS: dict[str, Field] = {
    "currency": Field(Spec("currency", "USD", help="currency of every amount in the file")),
    "region": _F("str", help="electricity region of tco_defaults.csv (US-CA, US-TX, US-VA, CN, ...)"),
    "horizon_months": _shared("horizon_months"),
    "owned.gpu": _F("gpu", required=True, help="the card you would own (catalog id or name)"),
    "owned.count": Field(SPECS["gpus"].with_default(None, help="how many cards you would own"), required=True),
    "owned.site": _F("choice", "office", choices=SITES, help="home, office or colocation"),
    "owned.always_on": _F("bool", True, help="the machine runs around the clock (false: off when idle)"),
    "owned.tdp_w": _F(gt=0, le=10_000, unit="W", help="board power; default gpus.csv"),
    "owned.price_new": _F(gt=0, le=1e9, money=True, help="price of one new card; default catalog"),
    "owned.price_used": _F(gt=0, le=1e9, money=True, help="price of one used card; default catalog"),
    "owned.host": _F("str", help="a host_cost_per_gpu variant of tco_defaults.csv"),
    "owned.host_cost_per_gpu": _F(ge=0, le=1e9, money=True, help="CPU, RAM, board, PSU, chassis per card"),
    "owned.host_power_w_per_gpu": _F(ge=0, le=10_000, unit="W", help="host power per card"),
    "owned.idle_power_fraction": _F(ge=0, le=1, help="idle draw as a fraction of TDP"),
    "owned.max_utilization": _F(default=1.0, gt=0, le=1, help="the most of the hours the owned cards can be busy"),
    "owned.pue": _F(ge=1, le=5, help="power usage effectiveness of the site"),
    "owned.electricity_per_kwh": Field(SPECS["electricity_per_kwh"], money=True),
    "owned.colocation_per_kw_month": _F(ge=0, le=1e6, money=True, unit="per kW-month",
                                        help="hosting price per kW of provisioned power"),
    "owned.maintenance_per_year": _F(default=0.0, ge=0, le=1, help="fraction of capex a year"),
    "owned.failure_rate_per_year": _F(ge=0, le=1, help="card failures per card-year"),
    "owned.resale_retention_per_year": _F(gt=0, le=1, help="fraction of value kept each year"),
    "owned.resale_fee": _F(default=0.0, ge=0, le=1, help="selling fee as a fraction of the price"),
    "owned.staff_hours_per_month": _F(default=0.0, ge=0, le=744, unit="h", help="admin time a month"),
    "owned.staff_cost_per_hour": _F(default=0.0, ge=0, le=1e6, money=True, help="cost of an hour of admin time"),
    "lease.annual_rate": _F(ge=0, le=1, help="interest rate a year"),
    "lease.term_months": _shared("horizon_months", default=None, optional=True, help="default: the horizon"),
    "lease.down_payment": _F(default=0.0, ge=0, le=1, help="fraction paid up front"),
    "cloud.gpu": _F("gpu", help="the cloud card; default the owned card"),
    "cloud.providers": _F("str", many=True, help="providers to take offers from (default: all)"),
    "cloud.instance": _F("str", help="one instance type"),
    "cloud.relative_speed": _F(gt=0, le=1000, help="cloud card speed / owned card speed; default dense BF16 ratio"),
    "cloud.on_demand_price": _F(gt=0, le=1e5, money=True, unit="per GPU-hour"),
    "cloud.spot_price": _F(gt=0, le=1e5, money=True, unit="per GPU-hour"),
    "cloud.reserved_1y_price": _F(gt=0, le=1e5, money=True, unit="per GPU-hour"),
    "cloud.reserved_3y_price": _F(gt=0, le=1e5, money=True, unit="per GPU-hour"),
    "spot.interruption_bucket": _F("choice", choices=SPOT_BUCKETS,
                                   help="AWS Spot Instance Advisor frequency-of-interruption bucket"),
    "spot.interruptions_per_month": _F(ge=0, lt=1, help="chance an instance is interrupted within a month"),
    "spot.checkpoint_minutes": _F(ge=0, le=10_000, unit="min", help="time to write one checkpoint"),
    "spot.restart_minutes": _F(ge=0, le=10_000, unit="min", help="time to get a new instance running"),
    "spot.gpus_per_job": Field(SPECS["gpus"].with_default(1, help="GPUs one job spans (any interruption stops all)")),
    "spot.job_gpu_hours": _F(gt=0, le=1e9, help="the job whose deadline is checked"),
    "spot.deadline_hours": _F(gt=0, le=1e6, unit="h", help="wall-clock deadline"),
    "demand.utilization": _F(ge=0, le=1, help="steady load as a fraction of the owned cards"),
    "demand.gpu_hours_per_month": _F(ge=0, le=1e9, unit="GPU-h", help="steady load"),
    "demand.gpu_hours_per_year": _F(ge=0, le=1.2e10, unit="GPU-h", help="steady load, a year's worth"),
    "demand.growth_per_year": _F(default=0.0, ge=-0.99, le=10, help="growth of the steady load"),
    "demand.bursts.gpu_hours": _F(default=0.0, ge=0, le=1e9, unit="GPU-h", help="extra hours in a burst month"),
    "demand.bursts.every_months": _F("int", 1, ge=1, le=120, unit="months"),
    "demand.bursts.first_month": _F("int", 1, ge=1, le=120),
    "hybrid.base": _F("choice", "auto", choices=("auto", *HYBRID_BASES)),
    "hybrid.burst": _F("choice", "auto", choices=("auto", *BURST_KINDS)),
    "hybrid.configured_base": _F("int", ge=0, le=100_000, help="your base today; default owned.count"),
    "hybrid.headroom": _F(default=0.3, ge=0, le=2, help="extra base capacity kept for swings"),
    **{f"uncertainty.{k}": _F(default=v, ge=0, le=1 if k in ("utilization", "resale") else 5,
                              help="sensitivity setting (± swing)") for k, v in DEFAULT_SWINGS.items()},
}
JOB_FIELDS: dict[str, Field] = {
    "name": _F("str", required=True),
    "kind": _F("choice", "training", choices=JOB_KINDS),
    "gpu_hours": _F(gt=0, le=1e9, help="GPU-hours of the owned card per run"),
    "runs_per_month": _F(default=1.0, ge=0, le=10_000),
    "tokens_per_month": _F(ge=0, le=1e16, help="serving: tokens generated a month"),
    "tokens_per_second_per_gpu": _F(gt=0, le=1e7, help="serving throughput of one card"),
    "benchmark": _F("str", help="a decode_speed row of benchmarks.csv giving the throughput"),
    "model": _F("str", help="a models.csv model: the speed estimator gives the GPU-hours"),
    "tokens": Field(SPECS["train_tokens"].with_default(None, optional=True, help="training: tokens per run")),
    "mode": Field(SPECS["train_mode"]),
    "quant": _F("str", "fp16", help="serving: quantization format (with model)"),
    "engine": Field(SPECS["engine"]),
    "batch": Field(SPECS["batch"]),
    "context": Field(SPECS["context"]),
    "first_month": _F("int", 1, ge=1, le=120),
}
_TOP_EXTRA = ("name", "title", "description", "sources", "demand.jobs")
_SECTIONS = sorted({k.rsplit(".", 1)[0] for k in FIELDS if "." in k} | {"demand"})
#: keys that give the same thing two ways; at most one of each group
EXCLUSIVE = (("demand.utilization", "demand.gpu_hours_per_month", "demand.gpu_hours_per_year"),
             ("spot.interruption_bucket", "spot.interruptions_per_month"),
             ("owned.host", "owned.host_cost_per_gpu"))


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
    context: int = 4096
    first_month: int = 1

    def to_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items()
                if v is not None and not (k in JOB_FIELDS and v == JOB_FIELDS[k].default and k != "kind")}


@dataclass(frozen=True)
class Scenario:
    """A validated scenario file. ``values`` maps every dotted key of :data:`FIELDS` to its value (None:
    taken from the data when resolved); money may be ``(value, currency)``."""

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
            for group in EXCLUSIVE:  # setting one way of giving a value clears the others
                if key in group and val is not None:
                    for other in group:
                        if other != key:
                            _set(d, other, None)
            _set(d, key, _to_yaml(val, FIELDS[key]))
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
            if val is None or (val == f.default and not keep and not f.required):
                continue
            _set(out, key, _to_yaml(val, f))
        if self.jobs:
            out.setdefault("demand", {})["jobs"] = [j.to_dict() for j in self.jobs]
        if self.sources:
            out["sources"] = dict(self.sources)
        return out

    def to_yaml(self) -> str:
        """The scenario as YAML text (what a download or a saved file holds)."""
        return yaml.safe_dump(self.to_dict(), sort_keys=False, allow_unicode=True, width=100)


def _to_yaml(val, f: Field):
    if isinstance(val, tuple) and f.money:
        return {"value": val[0], "currency": val[1]}
    return list(val) if isinstance(val, tuple) else val


def _set(d: dict, key: str, val) -> None:
    node = d
    parts = key.split(".")
    for p in parts[:-1]:
        node = node.setdefault(p, {})
    if val is None:
        node.pop(parts[-1], None)
    else:
        node[parts[-1]] = val


def _fmt_raw(v) -> str:
    return repr(v) if isinstance(v, str) else str(v)


def check_value(label: str, key: str, raw, f: Field):
    """Validate one raw YAML value against its field; return the typed value."""
    where = f"{label}: key '{key}'"
    if raw is None:
        return None
    if f.money and isinstance(raw, Mapping):
        unknown = set(raw) - {"value", "currency"}
        if unknown or "value" not in raw:
            raise GpucostError(f"{where}: a money value is a number or {{value: N, currency: C}}")
        val = f.spec.check(raw["value"], where)
        cur = raw.get("currency")
        if cur is not None and (not isinstance(cur, str) or not re.fullmatch(r"[A-Za-z]{3}", cur)):
            raise GpucostError(f"{where}: currency {_fmt_raw(cur)} is not an ISO code like USD")
        return (val, cur.upper()) if cur else val
    if f.many:
        items = raw.split(",") if isinstance(raw, str) else raw
        if not isinstance(items, list) or not all(isinstance(x, str) and x.strip() for x in items):
            raise GpucostError(f"{where}: expected a list of names")
        return tuple(x.strip() for x in items)
    if f.spec.kind in ("float", "int") and isinstance(raw, str):
        raise GpucostError(f"{where}: {_fmt_raw(raw)} is not a number")
    if f.spec.kind == "bool" and not isinstance(raw, bool):
        raise GpucostError(f"{where}: {_fmt_raw(raw)} is not true or false")
    if f.spec.kind not in ("float", "int", "bool", "choice") and not isinstance(raw, str):
        raise GpucostError(f"{where}: {_fmt_raw(raw)} is not a non-empty text")
    val = f.spec.check(raw, where)
    if f.spec.kind == "currency":
        if not re.fullmatch(r"[A-Za-z]{3}", val):
            raise GpucostError(f"{where}: '{val}' is not an ISO currency code like USD")
        return val.upper()
    return val


def _flatten(label: str, data: Mapping, prefix: str = "", depth: int = 0) -> dict[str, object]:
    if depth > MAX_DEPTH:
        raise GpucostError(f"{label}: nested deeper than a scenario can be (key '{prefix.rstrip('.')}')")
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
            out.update(_flatten(label, v, key + ".", depth + 1))
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
    if not isinstance(raw, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in raw.items()):
        raise GpucostError(f"{label}: key '{key}' must be a text or a mapping like {{en: ..., zh: ...}}")
    return dict(raw)


def _values(label: str, flat: Mapping[str, object], fields: Mapping[str, Field], prefix: str = "") -> dict:
    values: dict[str, object] = {}
    for key, f in fields.items():
        raw = flat.get(key)
        if raw is None:
            if f.required:
                raise GpucostError(f"{label}: key '{prefix}{key}' is required"
                                   + (f" ({f.spec.help})" if f.spec.help else ""))
            values[key] = f.default
        else:
            values[key] = check_value(label, prefix + key, raw, f)
    return values


def _check_exclusive(label: str, values: Mapping[str, object]) -> None:
    for group in EXCLUSIVE:
        given = [k for k in group if values[k] is not None]
        if len(given) > 1:
            raise GpucostError(f"{label}: key {' and '.join(repr(k) for k in given)} both set; give one of them")


def _job(label: str, i: int, rj) -> Job:
    jl = f"demand.jobs[{i}]"
    if not isinstance(rj, Mapping):
        raise GpucostError(f"{label}: key '{jl}' must be a mapping (name, kind, gpu_hours, ...)")
    for k in rj:
        if k not in JOB_FIELDS:
            hint = closest(str(k), JOB_FIELDS, 1)
            raise GpucostError(f"{label}: unknown key '{jl}.{k}'" + (f" (did you mean '{hint[0]}'?)" if hint else ""))
    jv = _values(label, rj, JOB_FIELDS, prefix=f"{jl}.")
    if jv["kind"] == "training" and jv["gpu_hours"] is None and not (jv["model"] and jv["tokens"]):
        raise GpucostError(f"{label}: key '{jl}.gpu_hours' is required for a training job "
                           f"(GPU-hours of the owned card per run), or '{jl}.model' with '{jl}.tokens'")
    if jv["kind"] == "serving":
        if jv["tokens_per_month"] is None:
            raise GpucostError(f"{label}: key '{jl}.tokens_per_month' is required for a serving job")
        if all(jv[k] is None for k in ("tokens_per_second_per_gpu", "benchmark", "gpu_hours", "model")):
            raise GpucostError(f"{label}: key '{jl}.tokens_per_second_per_gpu' (or '{jl}.benchmark', or "
                               f"'{jl}.model' for the speed estimator) is required for a serving job")
    return Job(**jv)  # type: ignore[arg-type]


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
    texts = {k: _text_map(label, k, flat.pop(k, None)) for k in ("title", "description", "sources")}
    raw_jobs = flat.pop("demand.jobs", None) or []
    values = _values(label, flat, FIELDS)
    _check_exclusive(label, values)
    if not isinstance(raw_jobs, list):
        raise GpucostError(f"{label}: key 'demand.jobs' must be a list of jobs")
    if len(raw_jobs) > MAX_JOBS:
        raise GpucostError(f"{label}: key 'demand.jobs' has {len(raw_jobs)} jobs; at most {MAX_JOBS}")
    jobs = tuple(_job(label, i, rj) for i, rj in enumerate(raw_jobs))
    return Scenario(name=name, values=MappingProxyType(values), jobs=jobs,
                    title=MappingProxyType(texts["title"]), description=MappingProxyType(texts["description"]),
                    sources=MappingProxyType(texts["sources"]), path=path if path is not None else label)


# --------------------------------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------------------------------

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


def parse_scenario_text(text: str, label: str, *, default_name: str | None = None) -> Scenario:
    """A scenario from YAML text (a file's or an upload's); errors name ``label``."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "syntax error"
        raise GpucostError(f"{label}: not valid YAML ({problem}{where})") from None
    except RecursionError:
        raise GpucostError(f"{label}: nested deeper than a scenario can be") from None
    if data is None:
        raise GpucostError(f"{label}: the file is empty")
    return scenario_from_dict(data, label=label, path=label, default_name=default_name)


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
    return parse_scenario_text(text, label, default_name=p.stem.lower())


def _title_of(p: Path) -> dict[str, str]:
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
        title = data.get("title") if isinstance(data, Mapping) else None
    except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError):
        return {}
    if isinstance(title, str):
        return {"en": title}
    if isinstance(title, Mapping):
        return {str(k): v for k, v in title.items() if isinstance(v, str)}
    return {}


def list_scenarios() -> list[dict]:
    """Bundled scenarios and those in ``GPUCOST_DATA_DIR/scenarios``: name, title, origin, path."""
    out = []
    for name, (p, origin) in sorted(_scenario_files().items()):
        title = _title_of(p)
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
    """Write ``scenario`` as YAML (a CLI user's own file); never replaces a file unless ``overwrite``, and
    never writes into the package's bundled data."""
    p = Path(path).expanduser()
    if p.suffix not in (".yaml", ".yml"):
        p = p.with_suffix(".yaml")
    if bundled_data_dir().resolve() in p.resolve().parents:
        raise GpucostError(f"{p}: the bundled data is read-only; save your scenario elsewhere")
    if p.exists() and not overwrite:
        raise GpucostError(f"{p}: the file exists; choose another name or allow overwriting")
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(scenario.to_yaml(), encoding="utf-8")
    return p
