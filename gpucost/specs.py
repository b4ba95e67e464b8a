"""One input-spec system: every input's type, default, bounds and unit, written once.

A :class:`Spec` describes one input — a CLI flag, a widget, a scenario-file key, a claim input or a
column of a data table — and is the only place its bounds live. Scalar values are validated through
pydantic (``TypeAdapter`` over an ``Annotated`` type built from the spec: finite numbers only, bounds,
choices); table columns are validated vectorized by :mod:`gpucost.catalog` with the same bounds. The CLI
parses text with :meth:`Spec.parse` (which also accepts ``32k``, ``500M``, ``1.5G``, ``1e9``,
``1,000``), and widgets take their range from :meth:`Spec.widget_range`, so the slider, the parser and
the validator agree.

:data:`SPECS` holds the quantities shared by several surfaces; :data:`DEFAULTS` their defaults (what the
CLI and every page start from; the README lists them).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Annotated, Any, Literal

from gpucost.errors import SpecError, closest

if TYPE_CHECKING:  # pydantic is imported when a value is first checked (the CLI's --help stays fast)
    from pydantic import TypeAdapter, ValidationError

#: spec kinds. Numbers: float, int. Text: str. choice: one of ``choices``. bool. Names resolved against
#: the catalog by the caller: gpu, model, format, provider, scenario, currency (validated as text here).
KINDS = ("float", "int", "str", "bool", "choice", "gpu", "model", "format", "provider", "scenario", "currency")
NAME_KINDS = ("gpu", "model", "format", "provider", "scenario", "currency")
#: suffixes a number typed as text may carry (tokens, parameters): 32k, 500M, 1.5G, 2T — decimal in
#: either case (``suffixes=True``)
SUFFIX = {"k": 1e3, "m": 1e6, "g": 1e9, "b": 1e9, "t": 1e12}
#: context lengths (``suffixes="context"``) read as vLLM's --max-model-len does: lowercase decimal,
#: uppercase binary — 1k = 1000, 1K = 1024, 32K = 32768 (vLLM ModelConfig.max_model_len: "supports
#: k/m/g/K/M/G in human-readable format. Examples: 1k -> 1000, 1K -> 1024, 25.6k -> 25,600")
BINARY_SUFFIX = {"K": 2.0**10, "M": 2.0**20, "G": 2.0**30}
_NUM_RE = re.compile(r"^\s*([-+]?(?:\d[\d,_]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([kKmMgGbBtT]?)\s*$")
_TRUE = {"1", "true", "yes", "y", "on", "t"}
_FALSE = {"0", "false", "no", "n", "off", "f"}


def parse_number(text: str, *, suffixes: bool | str = True) -> float:
    """A number typed as text: ``4096``, ``1,000``, ``1e9``, and with ``suffixes`` ``32k``, ``500M``,
    ``1.5G`` (``suffixes="context"``: ``32K`` = 32768, see :data:`BINARY_SUFFIX`). Raises ValueError."""
    m = _NUM_RE.match(str(text))
    if not m or (m.group(2) and not suffixes):
        raise ValueError(text)
    v = float(m.group(1).replace(",", "").replace("_", ""))
    suffix = m.group(2)
    if not suffix:
        return v
    if suffixes == "context" and suffix in BINARY_SUFFIX:
        return v * BINARY_SUFFIX[suffix]
    return v * SUFFIX[suffix.lower()]


def _unit_keys(lang: str) -> set[str]:
    from gpucost.i18n import strings

    return {k for k in strings(lang) if k.startswith("unit_")}


def _fmt(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 1e5 and x == int(x) else f"{x:g}"


@dataclass(frozen=True)
class Spec:
    """One input. ``ge``/``gt``/``le``/``lt`` are inclusive/exclusive bounds; ``optional`` inputs may be
    empty (None); ``step`` is the widget step; ``suffixes``: text may say 32k, 500M."""

    kind: str = "float"
    default: Any = None
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None
    unit: str = ""
    choices: tuple = ()
    step: float | None = None
    optional: bool = False
    suffixes: bool | str = False     # True: 32k, 500M (decimal); "context": 32K = 32768 (vLLM's rule)
    help: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown spec kind {self.kind!r}")

    # -- pydantic ------------------------------------------------------------------------------------
    def annotation(self) -> Any:
        from pydantic import Field

        bounds = {k: getattr(self, k) for k in ("ge", "gt", "le", "lt") if getattr(self, k) is not None}
        base: Any
        if self.kind == "float":
            base = Annotated[float, Field(strict=False, allow_inf_nan=False, **bounds)]
        elif self.kind == "int":
            base = Annotated[int, Field(strict=False, **bounds)]
        elif self.kind == "bool":
            base = bool
        elif self.kind == "choice":
            base = Literal[tuple(self.choices)]  # type: ignore[valid-type]
        else:
            base = Annotated[str, Field(min_length=1)]
        return base | None if self.optional else base

    @cached_property
    def adapter(self) -> TypeAdapter:
        from pydantic import TypeAdapter

        return TypeAdapter(self.annotation())

    def range_text(self, lang: str = "en") -> str:
        """The allowed range in words: "between 1 and 120 months", "greater than 0" (in ``lang``)."""
        from gpucost.i18n import t

        if self.kind == "choice":
            return t("range_choice", lang, choices=", ".join(map(str, self.choices)))
        if self.kind in NAME_KINDS:
            return t(f"range_name_{self.kind}", lang)
        unit = t("unit_" + self.unit, lang) if self.unit and ("unit_" + self.unit) in _unit_keys(lang) \
            else self.unit
        unit = f" {unit}" if unit and unit != "%" else unit
        if self.ge is not None and self.le is not None:
            return t("range_between", lang, lo=_fmt(self.ge), hi=_fmt(self.le), unit=unit)
        parts = [t(f"range_{op}", lang, v=_fmt(getattr(self, op))) for op in ("ge", "gt", "le", "lt")
                 if getattr(self, op) is not None]
        return (t("range_and", lang).join(parts) + unit) if parts else t("range_number", lang)

    def check(self, value: Any, where: str = "value") -> Any:
        """The value validated (and converted: "12" → 12 for numbers); GpucostError with one line naming
        ``where`` and the allowed range otherwise."""
        if self.optional and (value is None or (isinstance(value, str) and not value.strip())):
            return None
        original = value
        if isinstance(value, str) and self.kind in ("float", "int"):
            value = self._number_text(value, where)
        if isinstance(value, str) and self.kind == "bool":
            low = value.strip().lower()
            if low not in _TRUE | _FALSE:
                raise SpecError(f"{where}: '{value}' is not true or false", reason="bool", value=value)
            value = low in _TRUE
        if self.kind == "int" and isinstance(value, float) and math.isfinite(value) and value == int(value):
            value = int(value)
        if isinstance(value, bool) and self.kind in ("float", "int"):
            raise SpecError(f"{where}: {value} is not a number", reason="number", value=value)
        if isinstance(value, str) and self.kind not in ("choice", "bool"):
            value = value.strip()
        from pydantic import ValidationError

        try:
            return self.adapter.validate_python(value)
        except ValidationError as exc:
            message, reason = self._message(exc, original, where)
            raise SpecError(message, reason=reason, value=original) from None

    def _number_text(self, text: str, where: str) -> float:
        try:
            return parse_number(text, suffixes=self.suffixes)
        except ValueError:
            try:
                nonfinite = not math.isfinite(float(text))
            except ValueError:
                nonfinite = False
            if nonfinite:  # nan, inf, Infinity: say what is allowed
                raise SpecError(f"{where}: '{text}' is not a finite number; it must be {self.range_text()}",
                                reason="finite", value=text) from None
            hint = " (e.g. 4096, 32k, 1.5M)" if self.suffixes else ""
            raise SpecError(f"{where}: '{text}' is not a number{hint}", reason="number", value=text) from None

    def _message(self, exc: ValidationError, value: Any, where: str) -> tuple[str, str]:
        """(the CLI's English line, the reason: choice, finite, whole, number, range, required, other)."""
        err = exc.errors()[0]
        typ = err.get("type", "")
        shown = repr(value) if isinstance(value, str) else (f"{value:g}" if isinstance(value, float) else value)
        if self.kind == "choice" or typ == "literal_error":
            hint = closest(str(value), [str(c) for c in self.choices], 1)
            return (f"{where}: {shown} is not one of {', '.join(map(str, self.choices))}"
                    + (f" (closest: {hint[0]})" if hint else "")), "choice"
        if typ in ("finite_number",):
            return f"{where}: {shown} is not a finite number", "finite"
        if typ == "int_from_float" or (typ.startswith("int_") and self.kind == "int"):
            return f"{where}: {shown} is not a whole number", "whole"
        if typ.startswith(("int_", "float_")):
            return f"{where}: {shown} is not a number", "number"
        if typ in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
            return f"{where}: {shown} must be {self.range_text()}", "range"
        if typ == "string_too_short":
            return f"{where}: a value is required", "required"
        return f"{where}: {shown} is not valid ({err.get('msg', typ)})", "other"

    def parse(self, text: str, where: str = "value") -> Any:
        """Text (a CLI flag, a text box) → a checked value."""
        return self.check(text, where)

    # -- widgets -------------------------------------------------------------------------------------
    def widget_range(self) -> tuple[float, float]:
        """(min, max) for a bounded widget: the inclusive bounds, an exclusive lower bound moved up by
        one step (or to the smallest positive value the widget shows)."""
        step = self.step or (1 if self.kind == "int" else 0.01)
        lo = self.ge if self.ge is not None else (self.gt + step if self.gt is not None else -1e12)
        hi = self.le if self.le is not None else (self.lt - step if self.lt is not None else 1e12)
        return lo, hi

    def with_default(self, default: Any, **changes: Any) -> Spec:
        return replace(self, default=default, **changes)


# --------------------------------------------------------------------------------------------------
# Shared quantities: one bound for each, wherever it is asked
# --------------------------------------------------------------------------------------------------

#: the inference engines gpucost models (memory profiles, speed factors); one list for every surface
ENGINES = ("transformers", "vllm", "llama.cpp", "tensorrt-llm", "sglang", "exllamav2")
#: the longest context any catalog model advertises is 10M tokens (Llama 4 Scout); beyond that a value
#: is a typo, not a question
MAX_CONTEXT_TOKENS = 10_000_000
#: more cards than any single job in the catalog's sources uses (Llama 3 405B: 16,384 H100)
MAX_GPUS = 100_000
#: the longest TCO horizon: 10 years (a card's life and a lease's term are shorter)
MAX_HORIZON_MONTHS = 120
#: a price per kWh above this is a typo in any currency of fx.csv (JPY included) [currency/kWh]
MAX_ELECTRICITY_PER_KWH = 1000.0
#: the most tokens a training-time question takes (100× the largest published pre-training runs)
MAX_TRAIN_TOKENS = 1e15
#: the most memory a "cards with at least this much" filter takes [GiB]: 300× the largest card of the catalog
#: (288 GiB); a finite number, so that nan and inf are refused
MAX_VRAM_GIB = 100_000

#: who shards a training run's states over its cards (Setup.sharder)
SHARDERS = ("deepspeed", "fsdp")

SPECS: Mapping[str, Spec] = {
    "context": Spec("int", 4096, ge=1, le=MAX_CONTEXT_TOKENS, unit="tokens", suffixes="context",
                    help="tokens per sequence: KV cache (inference) or sequence length (training)"),
    "prompt": Spec("int", None, ge=1, le=MAX_CONTEXT_TOKENS, unit="tokens", suffixes="context", optional=True,
                   help="prompt tokens processed in one pass (default: the whole context)"),
    "batch": Spec("int", 1, ge=1, le=65_536, unit="sequences", help="concurrent sequences / micro-batch"),
    "gpus": Spec("int", 1, ge=1, le=MAX_GPUS, unit="GPUs", help="number of cards"),
    "max_gpus": Spec("int", 1024, ge=1, le=MAX_GPUS, unit="GPUs", help="the most cards to consider"),
    "zero": Spec("choice", 0, choices=(0, 1, 2, 3), help="DeepSpeed ZeRO stage"),
    "sharder": Spec("choice", "deepspeed", choices=SHARDERS,
                    help="what shards the training states over the cards at ZeRO stage 1-3: deepspeed (its Adam "
                         "updates in place) or fsdp (PyTorch FSDP, FULL_SHARD ~ stage 3: torch's AdamW steps each "
                         "shard with a temporary the size of its states)"),
    "offload": Spec("choice", "none", choices=("none", "cpu", "nvme"), help="ZeRO offload target"),
    "lora_rank": Spec("int", 16, ge=1, le=4096, help="LoRA rank"),
    "lora_dropout": Spec("float", None, ge=0, lt=1, optional=True, step=0.05,
                         help="LoRA dropout probability; above 0 each adapted Linear keeps a dropout mask (default: "
                              "the framework's: 0 in PEFT and the trainers built on it, 0.05 in ms-swift and LitGPT)"),
    "grad_accum": Spec("int", None, ge=1, le=100_000, optional=True,
                       help="gradient accumulation steps: with 1 the gradients never coexist with a micro-batch's "
                            "activations (the peak is the backward pass or the optimizer step); default: 2 or more "
                            "is assumed, which keeps them through the next micro-batch"),
    "train_precision": Spec("choice", "", choices=("", "mixed", "bf16", "fp32"),
                            help="training precision: mixed (16-bit weights and gradients, fp32 master weights and "
                                 "AdamW states), bf16 (a model loaded in bf16 and trained so: everything bf16) or "
                                 "fp32; empty: the framework's (transformers mixed, torchtune and ms-swift bf16)"),
    "gpu_layers": Spec("int", None, ge=0, le=10_000, optional=True, help="llama.cpp -ngl"),
    "cpu_moe": Spec("int", 0, ge=0, le=10_000, help="llama.cpp --n-cpu-moe: the expert weights of the first N "
                    "layers stay in CPU RAM (MoE models)"),
    "images": Spec("int", 0, ge=0, le=1_000, unit="images", help="images per sequence (vision-language models): "
                   "each adds the model's image tokens to the prompt and the KV cache"),
    "host_bw_gbps": Spec("float", None, gt=0, le=20_000, unit="GB/s", optional=True,
                         help="host memory bandwidth for --cpu-moe (default: dual-channel DDR5-5600, 89.6 GB/s)"),
    "train_tokens": Spec("float", 1e9, gt=0, le=MAX_TRAIN_TOKENS, unit="tokens", suffixes=True,
                         help="tokens the training run processes"),
    "currency": Spec("currency", "USD", help="display currency (an ISO code in fx.csv)"),
    "horizon_months": Spec("int", 36, ge=1, le=MAX_HORIZON_MONTHS, unit="months", help="months to compare over"),
    "amortization_years": Spec("float", 3.0, gt=0, le=20, unit="years", step=0.5,
                               help="years an owned card's value is spread over"),
    "utilization": Spec("float", 0.5, gt=0, le=1, step=0.05, help="share of the hours an owned card is busy"),
    "utilization_pct": Spec("float", 50.0, gt=0, le=100, unit="%", step=1,
                            help="share of the hours an owned card is busy [%]"),
    "idle_for_min": Spec("float", 30.0, ge=0, le=10_080, unit="min", step=1,
                         help="a GPU idle this long fires the idle policy (a week at most)"),
    "site": Spec("choice", "office", choices=("home", "office", "colocation"), help="where owned cards run"),
    "electricity_per_kwh": Spec("float", None, ge=0, le=MAX_ELECTRICITY_PER_KWH, unit="per kWh", optional=True,
                                step=0.01, help="electricity price (default: the market's)"),
    "min_vram_gib": Spec("float", 0.0, ge=0, le=MAX_VRAM_GIB, unit="GiB", help="minimum memory per card"),
    "price": Spec("float", None, gt=0, le=1e9, optional=True, help="a price in the display currency"),
    "hourly_price": Spec("float", None, gt=0, le=10_000, unit="per GPU-hour", optional=True,
                         help="a price per GPU-hour"),
    "showback_by": Spec("choice", "user", choices=("user", "project", "pod"), help="whose lines the bill has"),
    "showback_idle": Spec("choice", "spread", choices=("spread", "separate"),
                          help="idle cost spread over the users pro rata to their use, or its own line"),
    "showback_rule": Spec("choice", "sm", choices=("sm", "memory"),
                          help="a user's share of a card: of its SM time, or of its memory held (MIG instances "
                               "count their profile's fraction)"),
    "engine": Spec("choice", "vllm", choices=ENGINES, help="inference engine"),
    "mode": Spec("choice", "inference", choices=("inference", "full", "lora", "qlora"), help="what is run"),
    "train_mode": Spec("choice", "lora", choices=("full", "lora", "qlora"), help="training mode"),
    "quant": Spec("format", "bf16", help="weight format"),
    "monte_carlo_draws": Spec("int", 10_000, ge=0, le=200_000, unit="draws", help="Monte Carlo draws (0: none)"),
    "seed": Spec("int", 0, ge=0, le=2**32 - 1, help="random seed"),
    "tokens_per_s": Spec("float", None, gt=0, le=1e9, unit="tokens/s", optional=True),
    # serving a load (gpucost.serving)
    "requests_per_s": Spec("float", 1.0, gt=0, le=1e5, unit="requests/s", help="average requests per second"),
    "tokens_per_day": Spec("float", None, gt=0, le=1e14, unit="tokens/day", optional=True, suffixes=True,
                           help="instead of --rps: input + output tokens a day (average)"),
    "input_tokens": Spec("int", 1000, ge=1, le=2_000_000, unit="tokens", suffixes=True,
                         help="input (prompt) tokens per request"),
    "output_tokens": Spec("int", 200, ge=1, le=1_000_000, unit="tokens", suffixes=True,
                          help="output tokens per request"),
    "prefix_hit": Spec("float", 0.0, ge=0, le=0.99, step=0.05,
                       help="share of input tokens served from the prefix cache"),
    "peak_ratio": Spec("float", 1.0, ge=1, le=100, help="peak ÷ average load; the fleet is sized for the peak"),
    "ttft_ms": Spec("float", None, gt=0, le=600_000, unit="ms", optional=True, help="target time to first token"),
    "tpot_ms": Spec("float", None, gt=0, le=60_000, unit="ms", optional=True, help="target time per output token"),
    "ttft_stat": Spec("choice", "mean", choices=("mean", "p50", "p90"),
                      help="what the TTFT target bounds: the mean, the median or the 90th percentile of requests"),
}


@dataclass(frozen=True)
class Defaults:
    """Defaults shared by the CLI and every page (from :data:`SPECS`)."""

    context: int
    batch: int
    gpus: int
    lora_rank: int
    train_tokens: float
    currency: str
    horizon_months: int
    amortization_years: float
    utilization: float
    site: str
    engine: str
    mode: str
    quant: str
    max_gpus: int
    sharder: str


DEFAULTS = Defaults(**{k: SPECS[k].default for k in Defaults.__dataclass_fields__})


def spec(name: str) -> Spec:
    """The shared spec of ``name`` (KeyError lists the names)."""
    try:
        return SPECS[name]
    except KeyError:
        raise KeyError(f"no shared spec '{name}'; known: {', '.join(SPECS)}") from None


__all__ = ["ENGINES", "Spec", "SPECS", "DEFAULTS", "Defaults", "spec", "parse_number", "KINDS", "NAME_KINDS"]
