"""The machinery of the claims: inputs, verdict rules, sentences from the locale files, evaluation."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from gpucost.catalog import Catalog
from gpucost.errors import GpucostError, UnknownNameError
from gpucost.i18n import Message, t
from gpucost.pricing import price_index
from gpucost.records import Gpu, gpu_records
from gpucost.serialize import Record, jsonable
from gpucost.specs import SPECS, Spec

VERDICTS = ("holds", "overstated", "understated", "depends", "unsupported")

#: what "about" means for each kind of claimed figure — a judgement, not data; every one is an input
TOLERANCE = {
    "spec_pct": 5.0,        # a quoted spec figure (TFLOPS): ±5 % of the claim
    "share_pp": 5.0,        # a claimed percentage (discount, saving, cut): ±5 percentage points
    "amount_pct": 20.0,     # a claimed amount of money or a price multiple: ±20 % of the claim
    "gain_pct": 20.0,       # a claimed gain (utilization +300 %): ±20 % of the claim
    "near_pp": 10.0,        # "close to 60 %": ±10 percentage points
    "quality_pp": 2.0,      # "keeps about 95 % of accuracy": ±2 percentage points
}
#: the article the claims come from (shared/seed/low-cost-gpu-guide.zh.txt)
ARTICLE = "低成本GPU自由之路：从选型到部署的全攻略 (2025-11-04), shared/seed/low-cost-gpu-guide.zh.txt"
LANGS = ("en", "zh")
#: input kinds resolved against the catalog; the rest are validated by their spec
NAME_KINDS = ("gpu", "gpu_or_any", "model", "format", "provider", "scenario", "currency", "region")


# --------------------------------------------------------------------------------------------------
# Sentences
# --------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Text:
    """A sentence by locale key and parameters (numbers, names, or other Texts), rendered per language."""

    key: str
    params: Mapping[str, Any] = field(default_factory=dict)

    def render(self, lang: str) -> str:
        return t(self.key, lang, **{k: render(v, lang) for k, v in self.params.items()})


def T(key: str, **params: Any) -> Text:
    return Text(key, params)


def render(obj: Any, lang: str) -> Any:
    """``obj`` with every Text inside rendered in ``lang`` (dicts and lists walked)."""
    if isinstance(obj, Text):
        return obj.render(lang)
    if isinstance(obj, Message):  # an engine's sentence (a str): in the language asked for
        return obj.render(lang)
    if isinstance(obj, Mapping):
        return {k: render(v, lang) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [render(v, lang) for v in obj]
    return obj


# --------------------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class InputSpec:
    """One input of a claim: its name, kind and :class:`~gpucost.specs.Spec` (bounds written once);
    ``default`` is a value or a function of the catalog (a figure from the data)."""

    name: str
    default: object
    kind: str = "float"
    spec: Spec = field(default_factory=Spec)

    @property
    def lo(self) -> float | None:
        return self.spec.ge if self.spec.ge is not None else self.spec.gt

    @property
    def hi(self) -> float | None:
        return self.spec.le if self.spec.le is not None else self.spec.lt

    @property
    def unit(self) -> str:
        return self.spec.unit

    @property
    def choices(self) -> tuple:
        return self.spec.choices

    @property
    def step(self) -> float | None:
        return self.spec.step

    def default_value(self, catalog: Catalog):
        value = self.default(catalog) if callable(self.default) else self.default
        if self.kind == "provider" and value and value not in _providers(catalog):
            return ""  # the user's cloud offers have no such provider: the claim is judged on all of them
        return value

    def to_dict(self) -> dict:
        return {"name": self.name, "kind": self.kind, "lo": self.lo, "hi": self.hi, "choices": list(self.choices),
                "unit": self.unit, "step": self.step}


def I(name: str, default: object, kind: str = "float", *, lo: float | None = None, hi: float | None = None,  # noqa: E743
      unit: str = "", choices: tuple = (), shared: str | None = None) -> InputSpec:
    """An input. Numbers are bounded [lo, hi]; ``shared`` takes the bounds of a shared spec
    (:data:`gpucost.specs.SPECS`: context, batch, gpus, months…) so a claim accepts what the rest does."""
    if shared:
        spec = SPECS[shared]
    elif kind in ("float", "int", "optfloat"):
        spec = Spec("int" if kind == "int" else "float", None, ge=lo, le=hi, unit=unit,
                    optional=kind == "optfloat")
    elif kind == "bool":
        spec = Spec("bool")
    elif kind == "choice":
        spec = Spec("choice", choices=choices)
    else:
        spec = Spec("str", unit=unit)
    return InputSpec(name, default, kind, spec)


def tolerance(name: str, key: str) -> InputSpec:
    return I(name, TOLERANCE[key], lo=0, hi=100, unit="pp" if name.endswith("_pp") else "%")


# --------------------------------------------------------------------------------------------------
# Records
# --------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ClaimResult(Record):
    """A claim computed for one set of inputs (sentences in English and Chinese)."""

    id: str
    claim: str
    claim_zh: str
    quote_zh: str
    inputs: Mapping[str, object]
    computed: Mapping[str, object]
    numbers: tuple[Mapping[str, object], ...]
    verdict: str
    condition: str
    condition_zh: str
    engines: tuple[str, ...]
    sources: tuple[str, ...] = ()
    chart: Mapping[str, object] | None = None

    def to_dict(self) -> dict:
        d = super().to_dict()
        d["chart"] = jsonable(self.chart) if self.chart else None
        return d


@dataclass(frozen=True)
class ClaimDef:
    """A claim: its inputs, the function computing it and the numbers shown (computed key, unit). Its
    sentence, the article's words and the numbers' labels are locale strings ``claim_<id>``,
    ``claim_<id>_quote`` and ``claim_<id>_n_<key>``."""

    id: str
    inputs: tuple[InputSpec, ...]
    fn: Callable[..., dict]
    engines: tuple[str, ...]
    numbers: tuple[tuple[str, str], ...] = ()  # (computed key, unit)

    def text(self, lang: str = "en") -> str:
        return t(f"claim_{self.id}", lang)

    @property
    def claim(self) -> str:
        return self.text("en")

    @property
    def claim_zh(self) -> str:
        return self.text("zh")

    @property
    def quote_zh(self) -> str:
        return t(f"claim_{self.id}_quote", "zh")


# --------------------------------------------------------------------------------------------------
# Verdict rules (pure arithmetic on the computed figure and the claim)
# --------------------------------------------------------------------------------------------------

def compare(value: float, claimed: float, tolerance: float, *, higher_is_better: bool = True) -> str:
    """``holds`` when |value − claimed| ≤ tolerance; else ``overstated`` when reality is on the worse side
    of the claim (lower when higher is better), ``understated`` on the better side."""
    if value is None or not math.isfinite(value):
        return "unsupported"
    if abs(value - claimed) <= tolerance + 1e-12:
        return "holds"
    worse = value < claimed if higher_is_better else value > claimed
    return "overstated" if worse else "understated"


def in_range(value: float, lo: float, hi: float, *, higher_is_better: bool = True) -> str:
    """``holds`` inside [lo, hi]; outside, overstated/understated as in :func:`compare`."""
    if value is None or not math.isfinite(value):
        return "unsupported"
    if lo - 1e-12 <= value <= hi + 1e-12:
        return "holds"
    worse = value < lo if higher_is_better else value > hi
    return "overstated" if worse else "understated"


def at_least(value: float, bound: float) -> str:
    """A claim of a lower bound ("more than 60 %", "within 15 %" as ≥ 85 %): holds or overstated."""
    if value is None or not math.isfinite(value):
        return "unsupported"
    return "holds" if value >= bound - 1e-12 else "overstated"


# --------------------------------------------------------------------------------------------------
# Shared look-ups
# --------------------------------------------------------------------------------------------------

def price_table(catalog: Catalog, currency: str):
    """:func:`gpucost.pricing.price_index` (cached per loaded tables and currency)."""
    return price_index(catalog, currency)


def num(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def gpu_id(catalog: Catalog, name: str) -> str:
    """A GPU id from an id, name or alias (UnknownNameError with the closest names)."""
    return catalog.gpu_id(name)


def gpu(catalog: Catalog, gid: str) -> Gpu:
    return gpu_records(catalog)[gid]


def gpu_source(catalog: Catalog, gid: str) -> str:
    g = gpu(catalog, gid)
    return f"gpus.csv {gid}: {g.source} ({g.as_of})"


def first_source(text: str) -> str:
    return str(text).split(" ; ")[0]


def result(computed: dict, verdict: str, condition: Text, chart: dict | None = None, sources=()) -> dict:
    return {"computed": computed, "verdict": verdict, "condition": condition, "chart": chart,
            "sources": list(sources)}


def unsupported(condition: Text, computed: dict | None = None) -> dict:
    return result(computed or {}, "unsupported", condition)


# --------------------------------------------------------------------------------------------------
# Inputs and evaluation (over the registry)
# --------------------------------------------------------------------------------------------------

def _providers(cat: Catalog) -> tuple[str, ...]:
    return ("",) + tuple(sorted(set(cat.offers["provider"])))


def input_choices(spec: InputSpec, catalog: Catalog) -> tuple:
    """The values a choice-like input may take (GPU ids, models, formats, providers, scenarios, …)."""
    if spec.kind == "choice":
        return tuple(spec.choices)
    if spec.kind in ("gpu", "gpu_or_any"):
        return (("",) if spec.kind == "gpu_or_any" else ()) + tuple(catalog.gpus["id"])
    if spec.kind == "provider":
        return _providers(catalog)
    if spec.kind == "model":
        m = catalog.table("models")
        return tuple(m[m["kind"] == "llm"]["id"])
    if spec.kind == "format":
        return tuple(catalog.table("quant_formats")["id"])
    if spec.kind == "scenario":
        from gpucost import tco

        return tuple(s["name"] for s in tco.list_scenarios())
    if spec.kind == "currency":
        return tuple(catalog.currencies())
    if spec.kind == "region":
        from gpucost.tco.resolve import regions

        return tuple(regions(catalog))
    return ()


def _name(claim_id: str, spec: InputSpec, text: str, cat: Catalog):
    k = spec.kind
    if k in ("gpu_or_any", "provider") and text in ("", "any", "all"):
        return ""
    if k in ("gpu", "gpu_or_any"):
        return gpu_id(cat, text)
    if k == "model":
        from gpucost.models import model_id, model_names

        mid = model_id(text, cat)
        if mid is None:
            raise UnknownNameError("model", text, model_names(cat))
        return mid
    if k == "format":
        from gpucost.quant import get_format

        return get_format(text, cat).id
    if k == "currency":
        cat.fx_rate(text)
        return text.upper()
    if k == "region":
        from gpucost.tco.resolve import check_region

        return check_region(cat, text)
    if k == "provider":
        match = [p for p in _providers(cat)[1:] if p.lower() == text.lower()]
        if not match:
            raise UnknownNameError("provider", text, _providers(cat)[1:])
        return match[0]
    if not text:
        raise GpucostError(f"claim {claim_id}: input '{spec.name}': give a scenario name")
    from gpucost.tco import load_scenario

    load_scenario(text)  # raises UnknownNameError with the closest names
    return text


def coerce(claim_id: str, spec: InputSpec, value, cat: Catalog):
    """Check and convert one input (its spec's bounds, or the catalog's names); GpucostError naming the
    claim and the input."""
    where = f"claim {claim_id}: input '{spec.name}'"
    if spec.kind in NAME_KINDS:
        return _name(claim_id, spec, "" if value is None else str(value).strip(), cat)
    if spec.kind == "choice":
        return spec.spec.check(str(value).strip() if value is not None else value, where)
    return spec.spec.check(value, where)


class Registry:
    """The claims by id (filled by :mod:`gpucost.claims.registry`)."""

    def __init__(self) -> None:
        self.claims: dict[str, ClaimDef] = {}

    def add(self, d: ClaimDef) -> None:
        self.claims[d.id] = d

    def get(self, claim_id: str) -> ClaimDef:
        if claim_id not in self.claims:
            raise UnknownNameError("claim", claim_id, self.claims)
        return self.claims[claim_id]


REGISTRY = Registry()
CLAIMS = REGISTRY.claims


def claim_ids() -> list[str]:
    return list(CLAIMS)


def get_claim(claim_id: str) -> ClaimDef:
    return REGISTRY.get(claim_id)


def default_inputs(claim_id: str, catalog: Catalog | None = None) -> dict:
    cat = catalog or Catalog()
    return {s.name: s.default_value(cat) for s in get_claim(claim_id).inputs}


def resolve_inputs(claim_id: str, catalog: Catalog | None = None, **given) -> dict:
    """The claim's inputs: defaults from the data, replaced by ``given``, each checked."""
    cat = catalog or Catalog()
    specs = {s.name: s for s in get_claim(claim_id).inputs}
    for k in given:
        if k not in specs:
            raise UnknownNameError(f"input of claim {claim_id}", k, specs)
    return {name: coerce(claim_id, spec, given[name] if name in given else spec.default_value(cat), cat)
            for name, spec in specs.items()}


def _numbers(d: ClaimDef, computed: Mapping, currency: str) -> tuple:
    out = []
    for key, unit in d.numbers:
        if key in computed:
            out.append(MappingProxyType({"key": key, "label": t(f"claim_{d.id}_n_{key}", "en"),
                                         "label_zh": t(f"claim_{d.id}_n_{key}", "zh"), "value": computed[key],
                                         "unit": unit.format(currency=currency)}))
    return tuple(out)


def _chart(chart: dict | None) -> dict | None:
    """A chart spec with its labels in both languages (``x`` / ``x_zh``, ``y_title`` / ``y_title_zh`` …)."""
    if not chart:
        return None
    out = render(chart, "en")
    zh = render(chart, "zh")
    for key in ("x", "x_title", "y_title", "ref_label"):
        if key in chart and zh.get(key) != out.get(key):
            out[f"{key}_zh"] = zh[key]
    if "series" in chart:
        for s_en, s_zh in zip(out["series"], zh["series"], strict=True):
            if s_zh.get("name") != s_en.get("name"):
                s_en["name_zh"] = s_zh["name"]
    return out


def evaluate(claim_id: str, catalog: Catalog | None = None, **inputs) -> ClaimResult:
    """Compute one claim with its engine for ``inputs`` (the others at their defaults)."""
    cat = catalog or Catalog()
    d = get_claim(claim_id)
    vals = resolve_inputs(claim_id, cat, **inputs)  # a bad input is the caller's error: raised
    try:
        out = d.fn(cat, **vals)
    except GpucostError as exc:  # the data cannot judge it (a user's catalog without these cards' prices)
        return ClaimResult(id=d.id, claim=d.claim, claim_zh=d.claim_zh, quote_zh=d.quote_zh,
                           inputs=MappingProxyType(vals), computed=MappingProxyType({}), numbers=(),
                           verdict="unsupported", condition=t("claim_cannot_judge", "en", error=str(exc)),
                           condition_zh=t("claim_cannot_judge", "zh", error=str(exc)), engines=d.engines)
    verdict = out["verdict"]
    if verdict not in VERDICTS:  # pragma: no cover - a programming error
        raise ValueError(f"claim {claim_id}: verdict {verdict!r}")
    computed = dict(out["computed"])
    cur = computed.get("currency", vals.get("currency", ""))
    cond: Text = out["condition"]
    return ClaimResult(id=d.id, claim=d.claim, claim_zh=d.claim_zh, quote_zh=d.quote_zh,
                       inputs=MappingProxyType(vals), computed=MappingProxyType(computed),
                       numbers=_numbers(d, computed, cur), verdict=verdict, condition=cond.render("en"),
                       condition_zh=cond.render("zh"), engines=d.engines,
                       sources=tuple(s for s in out.get("sources", ()) if s), chart=_chart(out.get("chart")))


def split_overrides(overrides: Mapping[str, object]) -> dict[str, dict]:
    """Overrides → per-claim inputs. A key that is a claim id takes a mapping of that claim's inputs;
    ``"claim_id.input"`` sets one input of one claim; any other key sets that input of every claim that
    has it (e.g. ``currency="USD"``). A key no claim knows raises UnknownNameError."""
    per: dict[str, dict] = {cid: {} for cid in CLAIMS}
    all_names = {s.name for d in CLAIMS.values() for s in d.inputs}
    for key, val in overrides.items():
        if key in CLAIMS:
            if not isinstance(val, Mapping):
                raise GpucostError(f"overrides for claim {key} must be a mapping of its inputs")
            per[key].update(val)
        elif "." in key and key.split(".", 1)[0] in CLAIMS:
            cid, name = key.split(".", 1)
            per[cid][name] = val
        elif key in all_names:
            for cid, d in CLAIMS.items():
                if any(s.name == key for s in d.inputs):
                    per[cid][key] = val
        else:
            raise UnknownNameError("claim input", key, sorted(all_names | set(CLAIMS)))
    return per


def evaluate_all(catalog: Catalog | None = None, *, ids=None, **overrides) -> list[ClaimResult]:
    """Every claim (or those in ``ids``), in order, with ``overrides`` (see :func:`split_overrides`)."""
    cat = catalog or Catalog()
    per = split_overrides(overrides)
    chosen = list(CLAIMS) if ids is None else [get_claim(i).id for i in ids]
    return [evaluate(cid, cat, **per[cid]) for cid in chosen]


def parse_setting(text: str) -> tuple[str, str]:
    """``KEY=VALUE`` (KEY an input name, or claim_id.input) → (key, value) for the CLI and the notebook."""
    if "=" not in str(text):
        raise GpucostError(f"setting '{text}': expected KEY=VALUE, e.g. spot_discount.provider=azure or currency=USD")
    k, v = str(text).split("=", 1)
    return k.strip(), v.strip()


def with_inputs(d: ClaimDef, **defaults) -> ClaimDef:
    """A copy of ``d`` with other defaults for some inputs."""
    return replace(d, inputs=tuple(replace(s, default=defaults.get(s.name, s.default)) for s in d.inputs))
