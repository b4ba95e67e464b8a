"""Rules of thumb, tested: common GPU-cost claims computed with gpucost's own engines and data.

Each claim (most from the article in ``shared/seed/low-cost-gpu-guide.zh.txt``) is a
:class:`ClaimDef`: the claim in a sentence (English and Chinese), the article's words, the inputs it
assumes (:class:`InputSpec`, each with a default the user can change) and a function that computes the
quantity with the engine that owns it. :func:`evaluate` returns a :class:`ClaimResult`: the inputs used,
every computed number (units in the key names), a few headline numbers, the verdict and the condition
under which it holds. Nothing about a verdict is stored: it is computed from the numbers every time.

Verdicts (the user's point of view: is the claim too rosy?)

* ``holds``       — the computed figure is within the tolerance of the claim (or inside its range, or
  meets its bound);
* ``overstated``  — reality is less favourable than the claim says: a smaller saving, a slower card, a
  higher cost, more GPUs;
* ``understated`` — reality is more favourable than the claim says;
* ``depends``     — true or false according to a condition the claim does not state (said in
  ``condition``);
* ``unsupported`` — the data has no sourced figure the check needs (nothing is made up to fill it).

What "about" means is a judgement, not data: each claim's tolerance is an input (``tolerance_pct`` of the
claimed figure, or ``tolerance_pp`` percentage points) with the defaults in :data:`TOLERANCE`.

Units in names: ``_pct`` percent, ``_pp`` percentage points, ``_tflops`` dense TFLOPS, ``_gib`` GiB,
``_tokens_per_s``, ``_hours``, ``_x`` a multiple, ``_gpus`` a GPU count, ``_money`` an amount in the
record's ``computed["currency"]`` (``_money_per_hour``, ``_money_per_month`` likewise).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from urllib.parse import urlparse

from gpucost.catalog import Catalog
from gpucost.errors import GpucostError, UnknownNameError

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
HOURS_PER_YEAR = 365 * 24
HOURS_PER_MONTH = HOURS_PER_YEAR / 12
#: a parameter count of a dense transformer ≈ 12 · layers · hidden² (Kaplan et al. 2020, arXiv 2001.08361,
#: section 2.1: N ≈ 2 d_model n_layer (2 d_attn + d_ff) = 12 n_layer d_model² with d_ff = 4 d_model)
KAPLAN_PARAMS_PER_LAYER_HIDDEN2 = 12


# --------------------------------------------------------------------------------------------------
# Records
# --------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class InputSpec:
    """One input of a claim. ``default`` is a value or a function of the catalog (a figure from the data).

    kind: float | int | bool | choice | gpu | model | format | provider | scenario | currency |
          optfloat (a number or empty) | str
    """

    name: str
    default: object
    kind: str = "float"
    lo: float | None = None
    hi: float | None = None
    choices: tuple = ()
    unit: str = ""
    step: float | None = None

    def default_value(self, catalog: Catalog):
        return self.default(catalog) if callable(self.default) else self.default

    def to_dict(self) -> dict:
        return {"name": self.name, "kind": self.kind, "lo": self.lo, "hi": self.hi, "choices": list(self.choices),
                "unit": self.unit, "step": self.step}


@dataclass(frozen=True)
class ClaimResult:
    """A claim computed for one set of inputs."""

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
        return {"id": self.id, "claim": self.claim, "claim_zh": self.claim_zh, "quote_zh": self.quote_zh,
                "inputs": _plain(self.inputs), "computed": _plain(self.computed),
                "numbers": [_plain(n) for n in self.numbers], "verdict": self.verdict,
                "condition": self.condition, "condition_zh": self.condition_zh, "engines": list(self.engines),
                "sources": list(self.sources), "chart": _plain(self.chart) if self.chart else None}


@dataclass(frozen=True)
class ClaimDef:
    id: str
    claim: str
    claim_zh: str
    quote_zh: str
    inputs: tuple[InputSpec, ...]
    fn: Callable[..., dict]
    engines: tuple[str, ...]
    numbers: tuple[tuple[str, str, str, str], ...] = ()  # (computed key, label en, label zh, unit)


def _plain(v):
    """JSON-friendly: NaN/inf → None, numpy scalars → Python, mappings/tuples → dict/list."""
    if isinstance(v, Mapping):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if hasattr(v, "item") and callable(v.item) and not isinstance(v, (str, bytes)):
        v = v.item()
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return None
    return v


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
# Shared look-ups (cached per catalog frames)
# --------------------------------------------------------------------------------------------------

_PS_CACHE: dict[tuple, tuple] = {}


def price_table(catalog: Catalog, currency: str):
    """:func:`gpucost.cards.price_summary` indexed by GPU id, cached per (tables, currency)."""
    from gpucost.cards import price_summary

    key = (id(catalog.prices), id(catalog.offers), id(catalog.fx), currency.upper())
    hit = _PS_CACHE.get(key)
    if hit is None or hit[0] is not catalog.prices or hit[1] is not catalog.offers:
        if len(_PS_CACHE) > 16:
            _PS_CACHE.clear()
        hit = (catalog.prices, catalog.offers, catalog.fx, price_summary(catalog, currency).set_index("id"))
        _PS_CACHE[key] = hit
    return hit[3]


def _num(v) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return math.nan
    return f


_GPU_CACHE: dict[int, tuple] = {}


def _gpu_tables(catalog: Catalog) -> tuple[dict[str, str], dict[str, dict]]:
    """(alias index, id → row dict) of the catalog's gpus table, cached per frame."""
    from gpucost.catalog import gpu_alias_index

    g = catalog.gpus
    hit = _GPU_CACHE.get(id(g))
    if hit is None or hit[0] is not g:
        if len(_GPU_CACHE) > 8:
            _GPU_CACHE.clear()
        rows = {}
        for r in g.to_dict(orient="records"):
            rows[r["id"]] = r
        hit = (g, gpu_alias_index(g), rows)
        _GPU_CACHE[id(g)] = hit
    return hit[1], hit[2]


def gpu_id(catalog: Catalog, name: str) -> str:
    """A GPU id from an id, name or alias (UnknownNameError with the closest names)."""
    from gpucost.catalog import normalize_name

    index, _ = _gpu_tables(catalog)
    gid = index.get(normalize_name(name))
    if gid is None:
        return catalog.gpu_id(name)  # raises with the closest names
    return gid


def _gpu_row(catalog: Catalog, gid: str) -> dict:
    return dict(_gpu_tables(catalog)[1][gid])


def _gpu_source(catalog: Catalog, gid: str) -> str:
    r = _gpu_row(catalog, gid)
    return f"gpus.csv {gid}: {r['source']} ({r['as_of']})"


def _first_source(text: str) -> str:
    return str(text).split(" ; ")[0]


def _pct(x: float) -> str:
    return "—" if x is None or not math.isfinite(x) else f"{x:.0f} %"


def _f(x: float, nd: int = 0) -> str:
    return "—" if x is None or not math.isfinite(x) else f"{x:,.{nd}f}"


def _largest_under(catalog: Catalog, limit_gib: float) -> float:
    g = catalog.gpus
    under = g[g["vram_gib"] < limit_gib]["vram_gib"]
    return float(under.max()) if len(under) else limit_gib / 2


# --------------------------------------------------------------------------------------------------
# 1. RTX 4090: FP16 TFLOPS, training against an A100, price against an A100
# --------------------------------------------------------------------------------------------------

def _c_rtx4090_fp16(cat: Catalog, gpu: str, claimed_tflops: float, tolerance_pct: float) -> dict:
    r = _gpu_row(cat, gpu)
    dense = _num(r["fp16_tflops"])
    fp32 = _num(r["fp32_tflops"])
    if not math.isfinite(dense):
        verdict = "unsupported"
    else:
        verdict = compare(dense, claimed_tflops, dense * tolerance_pct / 100)
    near_fp32 = math.isfinite(fp32) and abs(claimed_tflops - fp32) <= fp32 * tolerance_pct / 100
    computed = {"fp16_dense_tensor_tflops": dense, "fp32_tflops": fp32, "claimed_tflops": claimed_tflops,
                "claim_over_dense_fp16_pct": claimed_tflops / dense * 100 if dense else math.nan,
                "claim_matches_fp32_rate": near_fp32}
    name = r["name"]
    if verdict == "unsupported":
        cond = (f"gpus.csv has no dense FP16 figure for {name}.", f"gpus.csv 中没有 {name} 的稠密 FP16 数值。")
    elif verdict == "holds":
        cond = (f"{claimed_tflops:g} TFLOPS is the dense FP16 tensor rate of {name} ({dense:g}).",
                f"{claimed_tflops:g} TFLOPS 与 {name} 的稠密 FP16 张量算力（{dense:g}）一致。")
    elif near_fp32:
        cond = (f"Holds only for non-tensor math: {claimed_tflops:g} is the FP32 (non-tensor) rate, {fp32:g} TFLOPS; "
                f"dense FP16 tensor math with FP32 accumulate (what training uses) is {dense:g} TFLOPS, "
                f"{dense / claimed_tflops:.2f}× the claim.",
                f"仅对非张量运算成立：{claimed_tflops:g} 实为 FP32（非张量）算力 {fp32:g} TFLOPS；训练所用的稠密 FP16 "
                f"张量算力（FP32 累加）为 {dense:g} TFLOPS，是该说法的 {dense / claimed_tflops:.2f} 倍。")
    else:
        cond = (f"Dense FP16 tensor math with FP32 accumulate on {name} is {dense:g} TFLOPS, "
                f"{dense / claimed_tflops:.2f}× the claim (FP32: {fp32:g}).",
                f"{name} 的稠密 FP16 张量算力（FP32 累加）为 {dense:g} TFLOPS，是该说法的 {dense / claimed_tflops:.2f} 倍"
                f"（FP32：{fp32:g}）。")
    chart = {"kind": "bar", "x": ["claim", "FP32", "FP16 tensor (dense)"],
             "x_zh": ["说法", "FP32", "FP16 张量（稠密）"], "y": [claimed_tflops, fp32, dense],
             "y_title": "TFLOPS", "y_title_zh": "TFLOPS"}
    return {"computed": computed, "verdict": verdict, "condition": cond, "chart": chart,
            "sources": [_gpu_source(cat, gpu)]}


def _c_rtx4090_training(cat: Catalog, gpu: str, reference_gpu: str, model: str, mode: str,
                        claimed_gap_pct: float) -> dict:
    from gpucost import memory, speed
    from gpucost.models import catalog_spec
    from gpucost.quant import get_format

    spec = catalog_spec(model, cat)
    out, fits, peaks = {}, {}, {}
    for key, gid in (("gpu", gpu), ("reference", reference_gpu)):
        row = _gpu_row(cat, gid)
        col = "bf16_tflops" if math.isfinite(_num(row.get("bf16_tflops"))) else "fp16_tflops"
        peaks[key] = _num(row[col])
        est = speed.training_time(spec, row, mode=mode, tokens=1e9, gpus=1, precision_col=col, catalog=cat)
        out[key] = est
        fmt = get_format(("bnb-nf4-dq" if mode == "qlora" else ("bf16" if col == "bf16_tflops" else "fp16")), cat)
        e = memory.estimate(spec, fmt, memory.Setup(mode=mode, context=2048, batch=1))
        fits[key] = e.total_gib <= float(row["vram_gib"])
        out[key + "_mem"] = e.total_gib
    a, b = out["gpu"].tokens_per_s, out["reference"].tokens_per_s
    share = a / b * 100
    bound = 100 - claimed_gap_pct
    verdict = at_least(share, bound)
    computed = {"gpu_tokens_per_s": a, "reference_tokens_per_s": b, "speed_share_pct": share,
                "gap_pct": 100 - share, "claimed_gap_pct": claimed_gap_pct, "mfu": out["gpu"].mfu,
                "gpu_training_memory_gib": out["gpu_mem"], "reference_training_memory_gib": out["reference_mem"],
                "fits_gpu": fits["gpu"], "fits_reference": fits["reference"],
                "hours_per_1b_tokens_gpu": out["gpu"].hours, "hours_per_1b_tokens_reference": out["reference"].hours,
                "gpu_dense_tflops": peaks["gpu"], "reference_dense_tflops": peaks["reference"]}
    ng, nr = _gpu_row(cat, gpu)["name"], _gpu_row(cat, reference_gpu)["name"]
    if verdict == "holds":
        cond = (f"{ng} trains {spec.id} ({mode}) at {share:.0f} % of {nr}'s speed: within {claimed_gap_pct:g} %.",
                f"{ng} 训练 {spec.id}（{mode}）的速度为 {nr} 的 {share:.0f} %，差距在 {claimed_gap_pct:g} % 以内。")
    else:
        cond = (f"{ng} reaches {share:.0f} % of {nr}'s training speed ({100 - share:.0f} % slower), not "
                f"{bound:g} %: at the same MFU training speed follows dense tensor throughput ({peaks['gpu']:g} vs "
                f"{peaks['reference']:g} TFLOPS); the claim holds against cards up to {peaks['gpu'] / bound * 100:.0f} "
                "dense TFLOPS.",
                f"{ng} 的训练速度只有 {nr} 的 {share:.0f} %（慢 {100 - share:.0f} %），达不到 {bound:g} %：同样的 MFU 下"
                f"训练速度取决于稠密张量算力（{peaks['gpu']:g} 对 {peaks['reference']:g} TFLOPS）；只有对比卡的稠密算力不超过 "
                f"{peaks['gpu'] / bound * 100:.0f} TFLOPS 时说法才成立。")
    chart = {"kind": "bar", "x": [ng, nr], "y": [a, b], "y_title": "training tokens/s", "y_title_zh": "训练 tokens/s"}
    return {"computed": computed, "verdict": verdict, "condition": cond, "chart": chart,
            "sources": [_gpu_source(cat, gpu), _gpu_source(cat, reference_gpu),
                        f"engine_efficiency.csv training MFU {out['gpu'].mfu:.3f}"]}


def _c_rtx4090_price(cat: Catalog, gpu: str, reference_gpu: str, condition: str, currency: str,
                     claimed_multiple_x: float, tolerance_pct: float) -> dict:
    ps = price_table(cat, currency)
    col = f"price_{condition}"
    pa, pb = _num(ps.loc[gpu, col]), _num(ps.loc[reference_gpu, col])
    ra, rb = _gpu_row(cat, gpu), _gpu_row(cat, reference_gpu)
    multiple = pb / pa if (pa > 0 and pb > 0) else math.nan
    verdict = compare(multiple, claimed_multiple_x, claimed_multiple_x * tolerance_pct / 100)
    ta, tb = _num(ra["fp16_tflops"]), _num(rb["bf16_tflops"]) if math.isfinite(_num(rb["bf16_tflops"])) \
        else _num(rb["fp16_tflops"])
    computed = {"currency": currency, "gpu_price_money": pa, "reference_price_money": pb,
                "price_multiple_x": multiple, "price_share_pct": pa / pb * 100 if pb else math.nan,
                "claimed_multiple_x": claimed_multiple_x,
                "gpu_money_per_dense_tflops": pa / ta if ta else math.nan,
                "reference_money_per_dense_tflops": pb / tb if tb else math.nan}
    na, nb = ra["name"], rb["name"]
    if verdict == "unsupported":
        cond = (f"The catalog has no {condition} price for {na if not pa > 0 else nb}.",
                f"目录中没有 {na if not pa > 0 else nb} 的{'新卡' if condition == 'new' else '二手'}价格。")
    else:
        word = {"holds": ("about", "约为"), "overstated": ("only", "仅为"), "understated": ("even", "甚至达到")}
        cond = (f"{nb} costs {word[verdict][0]} {multiple:.1f}× {na} ({condition}, median {currency} prices); "
                f"per dense TFLOPS {na} costs {computed['gpu_money_per_dense_tflops']:,.0f} and {nb} "
                f"{computed['reference_money_per_dense_tflops']:,.0f} {currency}.",
                f"{nb} 的价格{word[verdict][1]} {na} 的 {multiple:.1f} 倍（{'新卡' if condition == 'new' else '二手'}，"
                f"{currency} 中位价）；每稠密 TFLOPS 成本：{na} {computed['gpu_money_per_dense_tflops']:,.0f}，"
                f"{nb} {computed['reference_money_per_dense_tflops']:,.0f} {currency}。")
    srcs = [f"prices.csv {gpu} {condition}: {_first_source(ps.loc[gpu, col + '_source'])} "
            f"({ps.loc[gpu, col + '_as_of']})" if pa > 0 else f"prices.csv: no {condition} price for {gpu}",
            f"prices.csv {reference_gpu} {condition}: {_first_source(ps.loc[reference_gpu, col + '_source'])} "
            f"({ps.loc[reference_gpu, col + '_as_of']})" if pb > 0 else
            f"prices.csv: no {condition} price for {reference_gpu}"]
    chart = {"kind": "bar", "x": [na, nb], "y": [pa, pb], "y_title": f"price ({currency})",
             "y_title_zh": f"价格（{currency}）"}
    return {"computed": computed, "verdict": verdict, "condition": cond, "chart": chart, "sources": srcs}


# --------------------------------------------------------------------------------------------------
# 2. Cards under 16 GB and a 70B model
# --------------------------------------------------------------------------------------------------

def _c_vram16_70b(cat: Catalog, model: str, vram_gib: float, context: int, allow_cpu_offload: bool) -> dict:
    from gpucost import memory
    from gpucost.models import catalog_spec
    from gpucost.quant import formats, weights_file_gib

    spec = catalog_spec(model, cat)
    rows = []
    for fid, fmt in formats(cat).items():
        eng = "llama.cpp" if fmt.is_gguf else "transformers"
        try:
            e = memory.estimate(spec, fmt, memory.Setup(mode="inference", engine=eng, context=int(context)))
        except GpucostError:
            continue
        rows.append((e.total_gib, fid, eng, weights_file_gib(spec, fmt), fmt.bits_per_weight))
    rows.sort()
    best_total, best_fmt, best_eng, best_weights, best_bits = rows[0]
    fits_gpu_only = best_total <= vram_gib
    # llama.cpp partial offload (-ngl): the most layers of the smallest GGUF file the card holds
    gguf = [r for r in rows if r[2] == "llama.cpp"]
    layers_on_gpu, cpu_gib, offload_fmt = 0, math.nan, ""
    if gguf:
        _, offload_fmt, _, _, _ = gguf[0]
        fmt = formats(cat)[offload_fmt]
        lo, hi = 0, spec.num_layers

        def est(n):
            return memory.estimate(spec, fmt, memory.Setup(mode="inference", engine="llama.cpp",
                                                           context=int(context), gpu_layers=int(n)))
        if est(0).total_gib <= vram_gib:
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if est(mid).total_gib <= vram_gib:
                    lo = mid
                else:
                    hi = mid
            if est(hi).total_gib <= vram_gib:
                lo = hi
            layers_on_gpu = lo
            cpu_gib = est(lo).cpu_gib
        else:
            layers_on_gpu = -1
    runs_with_offload = layers_on_gpu >= 0 and bool(gguf)
    if fits_gpu_only:
        verdict = "overstated"
    elif allow_cpu_offload and runs_with_offload:
        verdict = "depends"
    else:
        verdict = "holds"
    computed = {"vram_gib": vram_gib, "smallest_format": best_fmt, "smallest_format_bits_per_weight": best_bits,
                "smallest_weights_gib": best_weights, "smallest_total_gib": best_total,
                "fits_on_gpu_alone": fits_gpu_only, "offload_format": offload_fmt,
                "layers_on_gpu": max(layers_on_gpu, 0), "layers_total": spec.num_layers,
                "layers_on_gpu_pct": max(layers_on_gpu, 0) / spec.num_layers * 100,
                "cpu_ram_needed_gib": cpu_gib, "runs_with_cpu_offload": runs_with_offload}
    if verdict == "overstated":
        cond = (f"{spec.id} at {best_fmt} ({best_bits:g} bits/weight) needs {best_total:.1f} GiB, which fits in "
                f"{vram_gib:g} GiB.",
                f"{spec.id} 以 {best_fmt}（每权重 {best_bits:g} 位）只需 {best_total:.1f} GiB，{vram_gib:g} GiB 放得下。")
    elif verdict == "holds":
        cond = (f"Even at {best_fmt} ({best_bits:g} bits/weight) {spec.id} needs {best_total:.1f} GiB > {vram_gib:g} "
                "GiB on the card alone" + (" (offload to CPU RAM not allowed)." if not allow_cpu_offload else "."),
                f"即使用 {best_fmt}（每权重 {best_bits:g} 位），{spec.id} 也需 {best_total:.1f} GiB，超过单卡 {vram_gib:g} GiB"
                + ("（未允许卸载到内存）。" if not allow_cpu_offload else "。"))
    else:
        cond = (f"Not on the card alone (at least {best_total:.1f} GiB at {best_fmt}), but llama.cpp runs "
                f"{offload_fmt} with {layers_on_gpu} of {spec.num_layers} layers on the GPU and {cpu_gib:.1f} GiB "
                "in CPU RAM — at CPU-memory speed for the layers left there.",
                f"单卡放不下（{best_fmt} 至少 {best_total:.1f} GiB），但 llama.cpp 可以用 {offload_fmt} 把 "
                f"{spec.num_layers} 层中的 {layers_on_gpu} 层放在 GPU、{cpu_gib:.1f} GiB 放在内存中运行——留在内存的层受内存带宽限制。")
    top = rows[:8]
    chart = {"kind": "bar", "x": [r[1] for r in top], "y": [r[0] for r in top], "ref": vram_gib,
             "ref_label": f"{vram_gib:g} GiB", "y_title": "GiB (inference, whole model)",
             "y_title_zh": "GiB（推理，整个模型）"}
    return {"computed": computed, "verdict": verdict, "condition": cond, "chart": chart,
            "sources": [f"models.csv {spec.id}", "quant_formats.csv bits_per_weight; gpucost.quant GGUF tensor types"]}


# --------------------------------------------------------------------------------------------------
# 3. Used ex-cloud A100 against new
# --------------------------------------------------------------------------------------------------

def _c_used_a100(cat: Catalog, gpu: str, statistic: str, currency: str, claimed_pct: float,
                 tolerance_pp: float) -> dict:
    ps = price_table(cat, currency)
    new, used = _num(ps.loc[gpu, "price_new"]), _num(ps.loc[gpu, "price_used"])
    median_discount = (1 - used / new) * 100 if (new > 0 and used > 0) else math.nan
    # the same source quoting both a new and a used price: the discount within one source
    p = cat.prices[cat.prices["gpu_id"] == gpu]
    rates = cat.fx.set_index("currency")["per_usd"]
    per_source = []
    for src, g in p.groupby("source", sort=True):
        vals = g["price"] / g["currency"].map(rates).to_numpy()
        n = vals[(g["condition"] == "new").to_numpy()]
        u = vals[(g["condition"] == "used").to_numpy()]
        if len(n) and len(u):
            per_source.append((src, (1 - statistics.median(u) / statistics.median(n)) * 100))
    same_source = statistics.median([d for _, d in per_source]) if per_source else math.nan
    value = median_discount if statistic == "median" else same_source
    verdict = compare(value, claimed_pct, tolerance_pp)
    computed = {"currency": currency, "price_new_median_money": new, "price_used_median_money": used,
                "discount_median_pct": median_discount, "discount_same_source_pct": same_source,
                "sources_with_both": len(per_source), "discount_pct": value, "claimed_pct": claimed_pct,
                "price_rows_new": int((p["condition"] == "new").sum()),
                "price_rows_used": int((p["condition"] == "used").sum())}
    name = _gpu_row(cat, gpu)["name"]
    if verdict == "unsupported":
        cond = (f"The catalog lacks a new or a used price of {name}" + (" from one source" if statistic != "median"
                                                                       else "") + ".",
                f"目录中缺少 {name} 的新卡或二手价格" + ("（同一来源）" if statistic != "median" else "") + "。")
    else:
        vals = [v for v in [median_discount] + [d for _, d in per_source] if math.isfinite(v)]
        lo, hi = min(vals), max(vals)
        how_en = ("the median of all the catalog's new and used prices" if statistic == "median"
                  else "each source's own new and used quotes")
        how_zh = "目录中全部新卡和二手价格的中位数" if statistic == "median" else "同一来源自己的新卡与二手报价"
        split_en = (f" The ways of comparing disagree ({lo:.0f}–{hi:.0f} %): the catalog's sources quote different "
                    "ranges." if hi - lo > tolerance_pp else "")
        split_zh = (f"不同比较方式结果不一（{lo:.0f}–{hi:.0f} %）：目录中各来源的报价区间不同。"
                    if hi - lo > tolerance_pp else "")
        cond = (f"Used {name} is {value:.0f} % below new by {how_en}.{split_en} Card prices, not whole servers.",
                f"按{how_zh}，二手 {name} 比新卡便宜 {value:.0f} %。{split_zh}比较的是显卡价格，不是整机。")
    labels = sorted(set(p["source"]))
    hosts = [urlparse(src).netloc or src[:30] for src, _ in per_source]
    chart = {"kind": "bar", "x": ["median (all sources)"] + hosts, "x_zh": ["中位数（全部来源）"] + hosts,
             "y": [median_discount] + [d for _, d in per_source], "ref": claimed_pct, "ref_label": f"{claimed_pct:g} %",
             "y_title": "used below new (%)", "y_title_zh": "二手比新卡便宜（%）"}
    return {"computed": computed, "verdict": verdict, "condition": cond, "chart": chart,
            "sources": [f"prices.csv {gpu}: {s}" for s in labels]}


# --------------------------------------------------------------------------------------------------
# 4. Cloud: spot and 1-year reserved against on-demand
# --------------------------------------------------------------------------------------------------

def _offers(cat: Catalog, gpu: str, provider: str, col: str):
    o = cat.offers
    o = o[o["Price"].notna() & o[col].notna()]
    if gpu:
        o = o[o["gpu_id"] == gpu]
    if provider:
        o = o[o["provider"].str.lower() == provider.lower()]
    return o


_SCENARIOS: dict[tuple, object] = {}


def load_scenario(name: str):
    """:func:`gpucost.tco.load_scenario`, cached per file modification time (YAML parsing is the slow part)."""
    from gpucost import tco

    dirs = [d for d in (tco.user_scenarios_dir(), tco.bundled_scenarios_dir()) if d is not None]
    stamps = []
    for d in dirs:
        for ext in (".yaml", ".yml"):
            f = d / f"{name}{ext}"
            stamps.append(f.stat().st_mtime_ns if f.is_file() else 0)
    key = (str(name), tuple(str(d) for d in dirs), tuple(stamps))
    if key not in _SCENARIOS:
        if len(_SCENARIOS) > 32:
            _SCENARIOS.clear()
        _SCENARIOS[key] = tco.load_scenario(name)
    return _SCENARIOS[key]


def _scenario_value(name: str, key: str):
    return load_scenario(name).values[key]


def _c_spot(cat: Catalog, gpu: str, provider: str, claimed_low_pct: float, claimed_high_pct: float,
            interruption_bucket: str, checkpoint_minutes: float, restart_minutes: float,
            gpus_per_job: int) -> dict:
    from gpucost import tco

    o = _offers(cat, gpu, provider, "SpotPrice")
    if o.empty:
        computed = {"offers": 0}
        return {"computed": computed, "verdict": "unsupported",
                "condition": ("No offer in cloud_offers.csv has both an on-demand and a spot price for this choice.",
                              "cloud_offers.csv 中没有同时有按需价和竞价的对应报价。"),
                "chart": None, "sources": []}
    disc = ((1 - o["SpotPrice"] / o["Price"]) * 100).to_numpy()
    med = float(statistics.median(disc))
    row = [r for r in cat.table("tco_defaults").to_dict(orient="records")
           if r["key"] == "spot_interruption_per_month" and str(r["variant"]) == interruption_bucket]
    if not row:
        raise UnknownNameError("interruption bucket", interruption_bucket, tco.SPOT_BUCKETS)
    p_month = float(row[0]["value"])
    lam = tco.interruption_rate_per_hour(p_month)
    phi, tau = tco.spot_factor(lam, checkpoint_minutes / 60, restart_minutes / 60, gpus_per_job)
    phi, tau = float(phi), float(tau)
    effective = (1 - (1 - med / 100) * phi) * 100 if math.isfinite(phi) else -math.inf
    verdict = in_range(med, claimed_low_pct, claimed_high_pct)
    inside = float(((disc >= claimed_low_pct) & (disc <= claimed_high_pct)).mean() * 100)
    computed = {"offers": len(disc), "discount_median_pct": med, "discount_min_pct": float(disc.min()),
                "discount_max_pct": float(disc.max()), "offers_in_claimed_range_pct": inside,
                "interruptions_per_month": p_month, "interruption_rate_per_hour": lam,
                "checkpoint_interval_hours": tau, "extra_hours_pct": (phi - 1) * 100,
                "effective_discount_pct": effective}
    where_en = (f"{provider} " if provider else "") + (f"{gpu} " if gpu else "")
    where_zh = where_en
    band = f"{claimed_low_pct:g}–{claimed_high_pct:g} %"
    if verdict == "holds":
        head_en = f"The median {where_en}spot discount is {med:.0f} %, inside {band}"
        head_zh = f"{where_zh}竞价折扣中位数为 {med:.0f} %，在 {band} 之内"
    else:
        head_en = f"The median {where_en}spot discount is {med:.0f} %, outside {band}"
        head_zh = f"{where_zh}竞价折扣中位数为 {med:.0f} %，不在 {band} 之内"
    cond = (f"{head_en} ({inside:.0f} % of {len(disc)} offers are); interruptions at {p_month * 100:g} % a month with "
            f"{checkpoint_minutes:g}-min checkpoints and {restart_minutes:g}-min restarts cost {(phi - 1) * 100:.1f} % "
            f"extra hours, leaving {effective:.0f} %.",
            f"{head_zh}（{len(disc)} 个报价中 {inside:.0f} % 在此区间）；按每月 {p_month * 100:g} % 的中断概率、"
            f"{checkpoint_minutes:g} 分钟检查点和 {restart_minutes:g} 分钟重启计算，需多付 {(phi - 1) * 100:.1f} % 的机时，"
            f"实际折扣为 {effective:.0f} %。")
    order = disc.argsort()
    labels = (o["provider"] + " " + o["InstanceType"]).to_numpy()
    chart = {"kind": "bar", "x": [str(labels[i]) for i in order], "y": [float(disc[i]) for i in order],
             "band": [claimed_low_pct, claimed_high_pct], "y_title": "spot below on-demand (%)",
             "y_title_zh": "竞价比按需便宜（%）"}
    srcs = sorted({_first_source(s) for s in o["source"]}) + [
        f"tco_defaults.csv spot_interruption_per_month {interruption_bucket}: {row[0]['source']} ({row[0]['as_of']})"]
    return {"computed": computed, "verdict": verdict, "condition": cond, "chart": chart, "sources": srcs}


def _c_reserved(cat: Catalog, gpu: str, provider: str, utilization_pct: float, claimed_pct: float,
                tolerance_pp: float) -> dict:
    o = _offers(cat, gpu, provider, "ReservedPrice1y")
    if o.empty:
        return {"computed": {"offers": 0}, "verdict": "unsupported",
                "condition": ("No offer in cloud_offers.csv has both an on-demand and a 1-year reserved price for "
                              "this choice.", "cloud_offers.csv 中没有同时有按需价和一年预留价的对应报价。"),
                "chart": None, "sources": []}
    ratio = (o["ReservedPrice1y"] / o["Price"]).to_numpy()
    med_ratio = float(statistics.median(ratio))
    list_saving = (1 - med_ratio) * 100
    # the TCO engine's break-even: a reservation pays every hour, on-demand only the used ones, so it
    # wins above utilization = reserved / on-demand (gpucost.tco.evaluate reserved_break_even_utilization)
    break_even = med_ratio * 100
    u = utilization_pct / 100
    effective = (1 - med_ratio / u) * 100 if u > 0 else -math.inf
    verdict = compare(effective, claimed_pct, tolerance_pp)
    computed = {"offers": len(ratio), "list_saving_median_pct": list_saving,
                "list_saving_min_pct": float((1 - ratio.max()) * 100),
                "list_saving_max_pct": float((1 - ratio.min()) * 100), "break_even_utilization_pct": break_even,
                "utilization_pct": utilization_pct, "effective_saving_pct": effective, "claimed_pct": claimed_pct}
    cond = (f"The list saving is {list_saving:.0f} % (median of {len(ratio)} offers); a reservation is paid every hour, "
            f"so it saves {effective:.0f} % at {utilization_pct:g} % utilization and loses money below "
            f"{break_even:.0f} %.",
            f"标价节省 {list_saving:.0f} %（{len(ratio)} 个报价的中位数）；预留实例每小时都要付费，利用率 {utilization_pct:g} % 时"
            f"实际节省 {effective:.0f} %，低于 {break_even:.0f} % 的利用率就会亏钱。")
    grid = list(range(int(max(5, min(utilization_pct, 40) // 5 * 5)), 101, 5))
    chart = {"kind": "line", "x": grid, "y": [(1 - med_ratio / (g / 100)) * 100 for g in grid], "ref": claimed_pct,
             "ref_label": f"{claimed_pct:g} %", "marker": [utilization_pct, effective],
             "x_title": "utilization (%)", "x_title_zh": "利用率（%）", "y_title": "saving vs on-demand (%)",
             "y_title_zh": "相对按需节省（%）"}
    srcs = sorted({_first_source(s) for s in o["source"]})
    return {"computed": computed, "verdict": verdict, "condition": cond, "chart": chart, "sources": srcs}


# --------------------------------------------------------------------------------------------------
# 5. Time-slicing: one A100 as 8 logical GPUs
# --------------------------------------------------------------------------------------------------

def _c_time_slicing(cat: Catalog, gpu: str, replicas: int, workload_mem_gib: float, workload_util_pct: float,
                    claimed_gain_pct: float, tolerance_pct: float) -> dict:
    from gpucost import plan

    row = _gpu_row(cat, gpu)
    vram = float(row["vram_gib"])
    mem = workload_mem_gib if workload_mem_gib > 0 else vram / replicas
    wl = [plan.Workload(mem, workload_util_pct, False, f"w{i + 1}") for i in range(int(replicas))]
    sp = plan.plan_share(wl, gpu, "time-slicing", cat)
    cfg = plan.device_plugin_config(int(replicas), "time-slicing")
    logical = cfg["sharing"]["timeSlicing"]["resources"][0]["replicas"]
    gain = (sp.utilization_shared_pct / sp.utilization_without_sharing_pct - 1) * 100
    tol = claimed_gain_pct * tolerance_pct / 100
    verdict = compare(gain, claimed_gain_pct, tol)
    # identical workloads: m = min(floor(100 / u), floor(vram / mem)) per card, ceil(R / m) cards, so the
    # gain R / ceil(R / m) − 1 is constant for u in (100 / (m + 1), 100 / m]; the u ranges that meet the claim
    mem_cap = int(vram // mem) if mem > 0 else int(replicas)
    ranges = []
    for m in range(1, int(replicas) + 1):
        g = (replicas / math.ceil(replicas / min(m, max(mem_cap, 1))) - 1) * 100
        if abs(g - claimed_gain_pct) <= tol + 1e-9:
            lo_u = 0.0 if m == replicas else 100 / (m + 1)
            hi_u = 100 / m
            if ranges and abs(ranges[-1][0] - hi_u) < 1e-9:
                ranges[-1] = (lo_u, ranges[-1][1])
            else:
                ranges.append((lo_u, hi_u))
    computed = {"logical_gpus": logical, "memory_per_logical_gpu_gib": vram / replicas,
                "cards_needed": sp.cards_needed, "cards_without_sharing": sp.cards_without_sharing,
                "utilization_alone_pct": sp.utilization_without_sharing_pct,
                "utilization_shared_pct": sp.utilization_shared_pct, "utilization_gain_pct": gain,
                "claimed_gain_pct": claimed_gain_pct, "all_on_one_card": sp.cards_needed == 1,
                "workload_util_range_for_claim_pct": [list(r) for r in ranges]}
    rng = ", ".join(f"{a:.1f}–{b:.1f} %" for a, b in sorted(ranges))
    name = row["name"]
    one_en = "all on one card" if sp.cards_needed == 1 else f"on {sp.cards_needed} cards"
    one_zh = "全部在一张卡上" if sp.cards_needed == 1 else f"需要 {sp.cards_needed} 张卡"
    cond = (f"The device plugin advertises {logical} GPUs per {name}, but time-slicing shares compute and memory "
            f"(no isolation): {replicas} workloads at {workload_util_pct:g} % and {mem:g} GiB run {one_en}, "
            f"utilization {sp.utilization_without_sharing_pct:.0f} % → {sp.utilization_shared_pct:.0f} % "
            f"(+{gain:.0f} %). " + (f"+{claimed_gain_pct:g} % needs workloads that each use {rng} of a card."
                                    if ranges else f"No workload size gives +{claimed_gain_pct:g} % here."),
            f"设备插件为每张 {name} 报告 {logical} 个 GPU，但时间片共享的是算力和显存（没有隔离）：{replicas} 个负载"
            f"（各 {workload_util_pct:g} %、{mem:g} GiB）{one_zh}，利用率 {sp.utilization_without_sharing_pct:.0f} % → "
            f"{sp.utilization_shared_pct:.0f} %（+{gain:.0f} %）。" + (
                f"要达到 +{claimed_gain_pct:g} %，每个负载需占单卡的 {rng}。" if ranges
                else f"这里没有任何负载大小能达到 +{claimed_gain_pct:g} %。"))
    chart = {"kind": "bar", "x": ["without sharing", "time-sliced"], "x_zh": ["不共享", "时间片共享"],
             "y": [sp.utilization_without_sharing_pct, sp.utilization_shared_pct], "y_title": "average utilization (%)",
             "y_title_zh": "平均利用率（%）"}
    return {"computed": computed, "verdict": verdict, "condition": cond, "chart": chart,
            "sources": [_gpu_source(cat, gpu), plan.DEVICE_PLUGIN_DOC]}


# --------------------------------------------------------------------------------------------------
# 6. 8-bit quantization: memory, speed, accuracy
# --------------------------------------------------------------------------------------------------

def _engine_for(fmt) -> str:
    return "llama.cpp" if fmt.is_gguf else "transformers"


def _c_int8_memory(cat: Catalog, model: str, base_format: str, quant_format: str, context: int,
                   claimed_pct: float, tolerance_pp: float) -> dict:
    from gpucost import memory
    from gpucost.models import catalog_spec
    from gpucost.quant import get_format, weights_file_gib

    spec = catalog_spec(model, cat)
    fb, fq = get_format(base_format, cat), get_format(quant_format, cat)
    eb = memory.estimate(spec, fb, memory.Setup(mode="inference", engine=_engine_for(fb), context=int(context)))
    eq = memory.estimate(spec, fq, memory.Setup(mode="inference", engine=_engine_for(fq), context=int(context)))
    bits_cut = (1 - fq.bits_per_weight / fb.bits_per_weight) * 100
    wb, wq = weights_file_gib(spec, fb), weights_file_gib(spec, fq)
    weights_cut = (1 - wq / wb) * 100
    total_cut = (1 - eq.total_gib / eb.total_gib) * 100
    verdict = compare(total_cut, claimed_pct, tolerance_pp)
    computed = {"bits_per_weight_base": fb.bits_per_weight, "bits_per_weight_quant": fq.bits_per_weight,
                "bits_cut_pct": bits_cut, "weights_base_gib": wb, "weights_quant_gib": wq,
                "weights_cut_pct": weights_cut, "total_base_gib": eb.total_gib, "total_quant_gib": eq.total_gib,
                "total_cut_pct": total_cut, "claimed_pct": claimed_pct}
    cond = (f"{fb.id} → {fq.id} is {fb.bits_per_weight:g} → {fq.bits_per_weight:g} bits per weight: "
            f"{bits_cut:.0f} % less for the weights ({weights_cut:.0f} % for {spec.id}'s whole file) and "
            f"{total_cut:.0f} % of the memory in use with a {context:,}-token KV cache. 75 % is FP32 → 8-bit.",
            f"{fb.id} → {fq.id} 即每权重 {fb.bits_per_weight:g} → {fq.bits_per_weight:g} 位：权重减少 {bits_cut:.0f} %"
            f"（{spec.id} 整个文件减少 {weights_cut:.0f} %），含 {context:,} token KV 缓存的显存占用减少 {total_cut:.0f} %。"
            "75 % 对应的是 FP32 → 8 位。")
    parts = ("weights", "kv_cache", "activations", "overhead")
    chart = {"kind": "stack", "x": [fb.id, fq.id],
             "series": [{"name": p, "y": [getattr(eb.per_gpu, p), getattr(eq.per_gpu, p)]} for p in parts],
             "y_title": "GiB", "y_title_zh": "GiB"}
    return {"computed": computed, "verdict": verdict, "condition": cond, "chart": chart,
            "sources": [f"quant_formats.csv {fb.id}, {fq.id} bits_per_weight", f"models.csv {spec.id}"]}


def _measured_decode(cat: Catalog, model: str, quant: str, gpu: str, engine: str) -> float:
    b = cat.table("benchmarks")
    hit = b[(b["category"] == "decode_speed") & (b["model_id"] == model) & (b["quant"] == quant)
            & (b["gpu_id"] == gpu) & (b["engine"] == engine) & (b["num_gpus"].fillna(1) == 1)
            & (b["batch"].fillna(1) == 1) & (b["unit"] == "tokens/s")]
    return float(hit["measured"].iloc[0]) if len(hit) else math.nan


def _c_int8_speed(cat: Catalog, model: str, gpu: str, base_format: str, quant_format: str, batch: int,
                  claimed_low_x: float, claimed_high_x: float) -> dict:
    from gpucost import speed
    from gpucost.models import catalog_spec
    from gpucost.quant import get_format

    spec = catalog_spec(model, cat)
    fb, fq = get_format(base_format, cat), get_format(quant_format, cat)
    row = _gpu_row(cat, gpu)
    engine = "llama.cpp" if (fb.is_gguf or fq.is_gguf) else "vllm"
    eff = speed.engine_efficiency(engine, cat)
    sb = speed.speed(spec, fb, row, batch=int(batch), context=1024, engine=engine, catalog=cat, eff=eff)
    sq = speed.speed(spec, fq, row, batch=int(batch), context=1024, engine=engine, catalog=cat, eff=eff)
    x = sq.decode_tokens_per_s / sb.decode_tokens_per_s
    mb, mq = (_measured_decode(cat, spec.id, fb.id, gpu, engine), _measured_decode(cat, spec.id, fq.id, gpu, engine))
    verdict = in_range(x, claimed_low_x, claimed_high_x)
    computed = {"engine": engine, "base_tokens_per_s": sb.decode_tokens_per_s,
                "quant_tokens_per_s": sq.decode_tokens_per_s, "speedup_x": x,
                "bytes_ratio_x": sb.bytes_per_step / sq.bytes_per_step, "bound": sq.bound,
                "measured_base_tokens_per_s": mb, "measured_quant_tokens_per_s": mq,
                "measured_speedup_x": mq / mb if mb > 0 else math.nan}
    meas_en = (f" Measured in benchmarks.csv: {mq / mb:.2f}×." if mb > 0 and mq > 0 else
               " benchmarks.csv has no measured pair for this model, card and formats.")
    meas_zh = (f"benchmarks.csv 实测：{mq / mb:.2f} 倍。" if mb > 0 and mq > 0 else
               "benchmarks.csv 中没有该模型、显卡和格式的实测对比。")
    cond = (f"Decoding is {sq.bound}-bound: {fb.id} → {fq.id} reads {computed['bytes_ratio_x']:.2f}× fewer bytes per "
            f"token and runs {x:.2f}× as fast on {row['name']} (batch {batch}, {engine}); weight-only 8-bit "
            f"computes in 16-bit, so it cannot beat the byte ratio (2× is the ceiling, 4× needs 4-bit)." + meas_en,
            f"解码受{'显存带宽' if sq.bound == 'memory-bandwidth' else sq.bound}限制：{fb.id} → {fq.id} 每个 token 读取的字节少 "
            f"{computed['bytes_ratio_x']:.2f} 倍，在 {row['name']} 上（批量 {batch}，{engine}）快 {x:.2f} 倍；仅权重的 8 位量化仍以 "
            f"16 位计算，提速不会超过字节比（上限 2 倍，4 倍需要 4 位）。" + meas_zh)
    chart = {"kind": "bar", "x": [fb.id, fq.id], "y": [sb.decode_tokens_per_s, sq.decode_tokens_per_s],
             "y_title": "decode tokens/s", "y_title_zh": "解码 tokens/s"}
    return {"computed": computed, "verdict": verdict, "condition": cond, "chart": chart,
            "sources": [_gpu_source(cat, gpu), f"engine_efficiency.csv {engine}",
                        f"quant_formats.csv {fb.id}, {fq.id}"]}


def _c_int8_accuracy(cat: Catalog, quant_format: str, claimed_pct: float, tolerance_pp: float) -> dict:
    from gpucost.quant import get_format

    fq = get_format(quant_format, cat)
    q = cat.table("quant_formats").set_index("id").loc[fq.id]
    delta = _num(q["ppl_delta"])
    if not math.isfinite(delta):
        return {"computed": {"ppl_delta": None, "quality_kept_at_least_pct": None}, "verdict": "unsupported",
                "condition": (f"quant_formats.csv has no sourced perplexity change for {fq.id}.",
                              f"quant_formats.csv 中没有 {fq.id} 有来源的困惑度变化。"),
                "chart": None, "sources": []}
    # perplexity is at least 1, so ppl_base / ppl_quant = 1 / (1 + delta / ppl_base) >= 1 / (1 + delta)
    kept = 100 / (1 + max(delta, 0.0))
    if kept >= claimed_pct - tolerance_pp:
        verdict = compare(kept, claimed_pct, tolerance_pp)
    else:
        verdict = "depends"
    computed = {"ppl_delta": delta, "quality_kept_at_least_pct": kept, "claimed_pct": claimed_pct}
    src = str(q["ppl_delta_source"])
    if verdict == "depends":
        cond = (f"{fq.id} raises perplexity by {delta:g}; whether that keeps {claimed_pct:g} % depends on the base "
                "perplexity, which the data does not give.",
                f"{fq.id} 使困惑度增加 {delta:g}；是否保持 {claimed_pct:g} % 取决于基础困惑度，数据中没有该值。")
    else:
        cond = (f"{fq.id} raises perplexity by {delta:g} ({q['ppl_delta_model']}); since perplexity is at least 1, "
                f"the model keeps at least {kept:.1f} % of its perplexity-measured quality. Perplexity is a proxy: "
                "task accuracy can move differently.",
                f"{fq.id} 使困惑度增加 {delta:g}；困惑度不小于 1，所以按困惑度衡量至少保留 {kept:.1f} % 的质量。"
                "困惑度只是代理指标，具体任务准确率可能不同。")
    return {"computed": computed, "verdict": verdict, "condition": cond, "chart": None,
            "sources": [f"quant_formats.csv {fq.id} ppl_delta: {src}"]}


# --------------------------------------------------------------------------------------------------
# 7. ZeRO-3 and a 100B-parameter model
# --------------------------------------------------------------------------------------------------

def _host_ram_default(cat: Catalog) -> float:
    """The memory of the smallest 8-GPU A100 80GB cloud server in cloud_offers.csv [GiB]."""
    o = cat.offers
    o = o[(o["gpu_id"] == "a100-80gb-sxm") & (o["AcceleratorCount"] == 8) & o["MemoryGiB"].notna()]
    return float(o["MemoryGiB"].min()) if len(o) else 1024.0


def _c_zero3(cat: Catalog, params_b: float, num_layers: int, gpu: str, seq_len: int, micro_batch: int,
             claimed_from_gpus: int, claimed_to_gpus: int, host_ram_gib_per_node: float,
             gpus_per_node: int) -> dict:
    from gpucost import plan

    ref = cat.table("models").set_index("id").loc["llama-3-70b"]
    head_dim = int(ref["head_dim"]) if _num(ref["head_dim"]) > 0 else 128
    hidden = int(round(math.sqrt(params_b * 1e9 / (KAPLAN_PARAMS_PER_LAYER_HIDDEN2 * num_layers)) / head_dim)
                 * head_dim)
    row = _gpu_row(cat, gpu)
    gid = gpu
    peak = _num(row["bf16_tflops"]) if math.isfinite(_num(row["bf16_tflops"])) else _num(row["fp16_tflops"])
    nv = _num(row.get("nvlink_gbps"))
    setup = plan.TrainSetup(f"dense-{params_b:g}b", params_b * 1e9, params_b * 1e9, plan.BYTES_WEIGHTS,
                            int(num_layers), hidden, max(hidden // head_dim, 1), int(ref["vocab_size"]),
                            int(seq_len), int(micro_batch), "full", "bf16", "bf16", gid, str(row["name"]),
                            float(row["vram_gib"]), peak, math.isfinite(nv))
    by = {s.name: s for s in plan.STRATEGIES}
    counts = {}
    for name in ("dp", "zero1", "zero2", "zero3", "zero3+cpu", "zero3+nvme"):
        n, _ = plan.min_gpus_for(setup, by[name], plan.zero_memory, 4096)
        counts[name] = n
    # without ZeRO-3: tensor x pipeline parallel with ZeRO-1 over the rest (Megatron-style)
    tp = plan.tp_pp_strategy(setup, plan.zero_memory, 4096)
    best = (tp[0].name, tp[1]) if tp else None
    baseline_name, baseline = best if best else ("none", None)
    n_off = counts["zero3+cpu"]
    per_gpu_cpu = plan.zero_memory(setup, by["zero3+cpu"], int(claimed_to_gpus)).cpu_gib
    node_cpu = per_gpu_cpu * min(int(gpus_per_node), int(claimed_to_gpus))
    cpu_fits = node_cpu <= host_ram_gib_per_node
    mfu, mfu_why = plan.default_mfu(cat)
    spd = plan.linear_speed(mfu)
    tps_to = spd(setup, by["zero3+nvme"], int(claimed_to_gpus))
    tps_from = spd(setup, by["zero3"], int(claimed_from_gpus))
    verdict = "holds" if n_off is not None and n_off <= claimed_to_gpus else "overstated"
    computed = {"params_b": params_b, "num_layers": num_layers, "hidden_size": hidden,
                "min_gpus_dp": counts["dp"], "min_gpus_zero1": counts["zero1"], "min_gpus_zero2": counts["zero2"],
                "min_gpus_zero3": counts["zero3"], "min_gpus_zero3_offload": n_off,
                "min_gpus_without_zero3": baseline, "layout_without_zero3": baseline_name,
                "cpu_ram_per_node_gib": node_cpu, "host_ram_per_node_gib": host_ram_gib_per_node,
                "cpu_offload_fits_host": cpu_fits, "mfu": mfu,
                "hours_per_1b_tokens_at_claimed_to": 1e9 / tps_to / 3600,
                "hours_per_1b_tokens_at_claimed_from": 1e9 / tps_from / 3600,
                "slowdown_x": tps_from / tps_to}
    name = row["name"]
    if verdict == "holds":
        off_en = (f"to CPU RAM ({node_cpu:,.0f} GiB per server)" if cpu_fits else
                  f"to NVMe: CPU offload would need {node_cpu:,.0f} GiB of RAM per server, more than "
                  f"{host_ram_gib_per_node:,.0f}")
        off_zh = (f"卸载到内存（每台服务器 {node_cpu:,.0f} GiB）" if cpu_fits else
                  f"卸载到 NVMe：卸载到内存每台服务器需 {node_cpu:,.0f} GiB，超过 {host_ram_gib_per_node:,.0f} GiB")
        cond = (f"Memory allows it: without ZeRO-3 ({baseline_name}) {baseline} × {name}, ZeRO-3 "
                f"{counts['zero3']}, with offload {n_off} ({off_en}). But {claimed_to_gpus} GPUs train "
                f"{tps_from / tps_to:.1f}× slower than {claimed_from_gpus} (same GPU-hours; offload's own slowdown "
                "not counted).",
                f"显存上可行：不用 ZeRO-3（{baseline_name}）需 {baseline} 块 {name}，ZeRO-3 需 {counts['zero3']} 块，"
                f"卸载时需 {n_off} 块（{off_zh}）。但 {claimed_to_gpus} 块 GPU 的训练速度是 {claimed_from_gpus} 块的 "
                f"1/{tps_from / tps_to:.1f}（GPU 时数不变；未计卸载本身的减速）。")
    else:
        cond = (f"Even with offload a {params_b:g}B model needs {n_off if n_off else 'more than 4096'} × {name} "
                f"(ZeRO-3 without offload {counts['zero3']}), more than {claimed_to_gpus}.",
                f"即使卸载，{params_b:g}B 模型也需要 {n_off if n_off else '超过 4096'} 块 {name}"
                f"（不卸载的 ZeRO-3 需 {counts['zero3']} 块），多于 {claimed_to_gpus} 块。")
    xs = [baseline_name, "ZeRO-3", "ZeRO-3 + offload"]
    chart = {"kind": "bar", "x": xs, "y": [baseline, counts["zero3"], n_off], "y_title": "GPUs needed (memory)",
             "y_title_zh": "所需 GPU 数（显存）", "ref": claimed_to_gpus, "ref_label": f"{claimed_to_gpus}"}
    return {"computed": computed, "verdict": verdict, "condition": cond, "chart": chart,
            "sources": [_gpu_source(cat, gid), "ZeRO paper model states (gpucost.plan.zero_memory)",
                        f"MFU: {mfu_why}", "host RAM: cloud_offers.csv MemoryGiB of 8-GPU A100 80GB servers"]}


# --------------------------------------------------------------------------------------------------
# 8. Reclaiming idle GPUs
# --------------------------------------------------------------------------------------------------

#: sampling step of the simulated utilization trace [s] (NVML/DCGM exporters scrape at 15–60 s), the
#: number of job + idle cycles simulated, and the most samples (a longer cycle is sampled more coarsely)
IDLE_SAMPLE_S = 60.0
IDLE_CYCLES = 3
IDLE_MAX_SAMPLES = 1500


def _c_idle(cat: Catalog, gpu: str, gpus: int, busy_pct: float, job_minutes: float, idle_util_pct: float,
            idle_for_minutes: float, currency: str, min_recovered_pct: float) -> dict:
    from gpucost import monitor

    u = busy_pct / 100
    if not (0 < u < 1):
        raise GpucostError(f"the busy share must be between 0 and 100 % (exclusive), not {busy_pct:g}")
    gap_min = job_minutes * (1 - u) / u
    cycle_s = (job_minutes + gap_min) * 60
    # a trace of whole job + idle cycles, sampled at most IDLE_MAX_SAMPLES times
    span = IDLE_CYCLES * cycle_s
    step = max(IDLE_SAMPLE_S, span / IDLE_MAX_SAMPLES)
    n = int(math.ceil(span / step - 1e-9))
    job_s = job_minutes * 60
    samples = [monitor.Sample(t_s=k * step, index=0,
                              utilization_gpu_pct=100.0 if (k * step) % cycle_s < job_s else 0.0)
               for k in range(n)]
    policy = monitor.Policy(idle_util_pct=idle_util_pct, idle_for_s=idle_for_minutes * 60)
    value = monitor.card_value(cat, gpu, currency, prices=price_table(cat, currency).reset_index())
    rep = monitor.summarize(samples, step, policy, currency=currency, values={0: value})
    idle = rep.verdict("idle", 0)
    covered = rep.gpus[0].covered_s
    reclaim_s = sum(max(0.0, e.covered_s - policy.idle_for_s) for e in idle.episodes)
    idle_s = rep.gpus[0].idle_s or 0.0
    hourly = value.hourly_value if value.hourly_value is not None else math.nan
    idle_month = idle_s / covered * HOURS_PER_MONTH * hourly * gpus
    saved_month = reclaim_s / covered * HOURS_PER_MONTH * hourly * gpus
    recovered = reclaim_s / idle_s * 100 if idle_s > 0 else 0.0
    verdict = "unsupported" if not math.isfinite(hourly) else at_least(recovered, min_recovered_pct)
    computed = {"currency": currency, "hourly_value_money_per_hour": hourly, "hourly_basis": value.hourly_basis,
                "idle_gap_minutes": gap_min, "idle_share_pct": idle_s / covered * 100,
                "idle_cost_money_per_month": idle_month, "saved_money_per_month": saved_month,
                "recovered_pct": recovered, "policy_fired": idle.status == "fired", "samples": n}
    name = _gpu_row(cat, gpu)["name"]
    need = idle_for_minutes * u / (1 - u)
    if verdict == "unsupported":
        cond = (f"The catalog has no cloud or new price for {name} to value its idle hours.",
                f"目录中没有 {name} 的云价格或新卡价格，无法估算空闲成本。")
    else:
        cond = (f"Jobs of {job_minutes:g} min at {busy_pct:g} % busy leave {gap_min:.0f}-min idle gaps; the rule reclaims "
                f"what follows the first {idle_for_minutes:g} min of each: {recovered:.0f} % of the idle cost, "
                f"{saved_month:,.0f} of {idle_month:,.0f} {currency} a month for {gpus} × {name}. It saves nothing when "
                f"jobs are shorter than {need:.0f} min.",
                f"每个任务 {job_minutes:g} 分钟、忙碌 {busy_pct:g} % 时，空闲间隔为 {gap_min:.0f} 分钟；该规则回收每段空闲中前 "
                f"{idle_for_minutes:g} 分钟之后的时间：收回 {recovered:.0f} % 的空闲成本，{gpus} 块 {name} 每月 "
                f"{saved_month:,.0f} / {idle_month:,.0f} {currency}。任务短于 {need:.0f} 分钟时一分钱也省不下。")
    chart = {"kind": "bar", "x": ["idle cost", "reclaimed"], "x_zh": ["空闲成本", "可回收"],
             "y": [idle_month, saved_month], "y_title": f"{currency} per month", "y_title_zh": f"{currency}/月"}
    src = [f"hourly value: {value.cloud_offer or 'new price'} ({value.cloud_source or value.price_new_as_of})"]
    return {"computed": computed, "verdict": verdict, "condition": cond, "chart": chart, "sources": src}


# --------------------------------------------------------------------------------------------------
# 9. Scenarios: start-up first year, mid-size spot + reserved, hybrid
# --------------------------------------------------------------------------------------------------

def _c_startup(cat: Catalog, scenario: str, region: str, owned_count: int, condition: str, a100_hours: float,
               a100_pricing: str, currency: str, claimed_cny: float, tolerance_pct: float) -> dict:
    from gpucost import tco

    sc = load_scenario(scenario).updated({"currency": "CNY", "region": region, "owned.count": int(owned_count)})
    inputs = tco.resolve(sc, cat, currency=currency, months=12)
    res = tco.evaluate(inputs, months=12)
    oid = f"buy-{condition}"
    if oid not in {o.id for o in res.options} or a100_pricing not in inputs.offers:
        missing = oid if oid not in {o.id for o in res.options} else a100_pricing
        return {"computed": {"currency": currency}, "verdict": "unsupported",
                "condition": (f"The TCO engine cannot price '{missing}' from the catalog for this scenario.",
                              f"TCO 引擎无法用目录数据为该场景计算“{missing}”。"), "chart": None, "sources": []}
    d = res.option(oid).details
    owned_cap = d["capex"]
    owned_run = d["energy"] + d["colocation"] + d["maintenance"] + d["staff"]
    price = inputs.offers[a100_pricing].price
    factor = float(res.spot.get("factor", 1.0)) if a100_pricing == "spot" else 1.0
    a100 = a100_hours * price * factor
    total = owned_cap + owned_run + a100
    claimed = float(cat.convert(claimed_cny, "CNY", currency))
    verdict = compare(total, claimed, claimed * tolerance_pct / 100, higher_is_better=False)
    room = claimed * (1 + tolerance_pct / 100) - owned_cap - owned_run
    hours_ok = max(0.0, room / (price * factor))
    computed = {"currency": currency, "owned_capex_money": owned_cap, "owned_running_money": owned_run,
                "a100_price_money_per_hour": price * factor, "a100_money": a100, "total_money": total,
                "claimed_money": claimed, "total_over_claim_x": total / claimed,
                "a100_hours_within_claim": hours_ok, "a100_share_of_year_within_claim_pct": hours_ok / HOURS_PER_YEAR * 100}
    gname = inputs.owned_name
    if verdict == "holds":
        cond = (f"{owned_count} × {gname} ({owned_cap:,.0f} with hosts, {owned_run:,.0f} to run) plus {a100_hours:,.0f} "
                f"A100-hours ({a100:,.0f}) come to {total:,.0f} {currency}, about the claim.",
                f"{owned_count} 块 {gname}（含主机 {owned_cap:,.0f}，运行 {owned_run:,.0f}）加 {a100_hours:,.0f} 个 A100 机时"
                f"（{a100:,.0f}）共 {total:,.0f} {currency}，与说法相符。")
    else:
        cond = (f"{owned_count} × {gname} ({owned_cap:,.0f} with hosts, {owned_run:,.0f} to run) plus {a100_hours:,.0f} "
                f"A100-hours at {price * factor:,.2f} ({a100_pricing}) come to {total:,.0f} {currency}; the claim holds "
                f"only if the cloud A100 runs at most {hours_ok:,.0f} h a year ({hours_ok / HOURS_PER_YEAR * 100:.0f} %).",
                f"{owned_count} 块 {gname}（含主机 {owned_cap:,.0f}，运行 {owned_run:,.0f}）加 {a100_hours:,.0f} 个 A100 机时"
                f"（{a100_pricing}，每小时 {price * factor:,.2f}）共 {total:,.0f} {currency}；只有云端 A100 每年最多运行 "
                f"{hours_ok:,.0f} 小时（{hours_ok / HOURS_PER_YEAR * 100:.0f} %）时说法才成立。")
    chart = {"kind": "stack", "x": ["first year"], "x_zh": ["首年"],
             "series": [{"name": f"{owned_count} × {gname} + hosts", "name_zh": f"{owned_count} 块 {gname} + 主机",
                         "y": [owned_cap]},
                        {"name": "electricity etc.", "name_zh": "电费等", "y": [owned_run]},
                        {"name": "cloud A100", "name_zh": "云端 A100", "y": [a100]}],
             "ref": claimed, "ref_label": f"{claimed:,.0f}", "y_title": currency, "y_title_zh": currency}
    srcs = [f"{p.key}: {p.source}" for p in inputs.provenance
            if p.key in ("owned.price_new", "owned.price_used", "owned.host_cost_per_gpu", "owned.electricity_per_kwh")]
    srcs.append(f"A100 {a100_pricing}: {inputs.offers[a100_pricing].label} — "
                f"{_first_source(inputs.offers[a100_pricing].source)}")
    return {"computed": computed, "verdict": verdict, "condition": cond, "chart": chart, "sources": srcs}


def _c_midsize(cat: Catalog, scenario: str, provider: str, reserved_gpus: int, months: int, currency: str,
               claimed_pct: float, tolerance_pp: float) -> dict:
    from gpucost import tco

    sc = load_scenario(scenario).updated({
        "hybrid.base": "reserved-1y", "hybrid.burst": "spot", "hybrid.configured_base": int(reserved_gpus),
        "cloud.providers": (provider,) if provider else None})
    res = tco.evaluate(tco.resolve(sc, cat, currency=currency), months=int(months))
    ids = {o.id: o.total_cost for o in res.options}
    need = [k for k in ("on-demand", "spot", "reserved-1y") if k not in ids]
    if need or res.hybrid is None:
        return {"computed": {"currency": currency}, "verdict": "unsupported",
                "condition": (f"No {', '.join(need) or 'hybrid'} price for this provider in the catalog.",
                              f"目录中没有该云厂商的{'、'.join(need) or '混合'}价格。"), "chart": None, "sources": []}
    od = ids["on-demand"]
    h = res.hybrid
    mix = h.configured_cost
    cut = (1 - mix / od) * 100
    best_cut = (1 - h.total_cost / od) * 100
    verdict = compare(cut, claimed_pct, tolerance_pp)
    computed = {"currency": currency, "on_demand_money": od, "mix_money": mix, "mix_cut_pct": cut,
                "reserved_gpus": h.configured_gpus, "best_reserved_gpus": h.base_gpus, "best_mix_cut_pct": best_cut,
                "spot_only_cut_pct": (1 - ids["spot"] / od) * 100,
                "reserved_only_cut_pct": (1 - ids["reserved-1y"] / od) * 100, "months": int(months)}
    where = provider or "all providers"
    cond = (f"With {h.configured_gpus} GPUs reserved for 1 year and spot for the rest ({where}), the {months}-month bill is "
            f"{cut:.0f} % below on-demand; the cheapest mix reserves {h.base_gpus} ({best_cut:.0f} %), spot alone "
            f"{computed['spot_only_cut_pct']:.0f} %, reserved alone {computed['reserved_only_cut_pct']:.0f} %.",
            f"一年预留 {h.configured_gpus} 块 GPU、其余用竞价（{provider or '全部云厂商'}），{months} 个月的账单比按需低 {cut:.0f} %；"
            f"最省的组合预留 {h.base_gpus} 块（{best_cut:.0f} %），只用竞价 {computed['spot_only_cut_pct']:.0f} %，"
            f"只用预留 {computed['reserved_only_cut_pct']:.0f} %。")
    chart = {"kind": "line", "x": [k for k, _ in h.curve], "y": [(1 - t / od) * 100 for _, t in h.curve],
             "ref": claimed_pct, "ref_label": f"{claimed_pct:g} %", "marker": [h.configured_gpus, cut],
             "x_title": "GPUs reserved for 1 year", "x_title_zh": "一年预留的 GPU 数",
             "y_title": "bill below on-demand (%)", "y_title_zh": "账单比按需低（%）"}
    srcs = [f"scenario {scenario}"] + [f"{o.id}: {o.offer} — {_first_source(o.source)}" for o in res.options
                                       if o.id in ("on-demand", "spot", "reserved-1y")]
    return {"computed": computed, "verdict": verdict, "condition": cond, "chart": chart, "sources": srcs}


def _c_hybrid(cat: Catalog, scenario: str, baseline: str, horizon_months: int, currency: str,
              claimed_pct: float) -> dict:
    from gpucost import tco

    sc = load_scenario(scenario)
    m = int(horizon_months) if horizon_months else int(sc.values["horizon_months"])
    res = tco.evaluate(tco.resolve(sc, cat, currency=currency), months=m)
    ids = {o.id: o for o in res.options}
    if "hybrid" not in ids or baseline not in ids:
        miss = "hybrid" if "hybrid" not in ids else baseline
        return {"computed": {"currency": currency}, "verdict": "unsupported",
                "condition": (f"The TCO engine cannot price '{miss}' for scenario {scenario}.",
                              f"TCO 引擎无法为场景 {scenario} 计算“{miss}”。"), "chart": None, "sources": []}
    base, hyb = ids[baseline].total_cost, ids["hybrid"].total_cost
    cut = (1 - hyb / base) * 100
    verdict = at_least(cut, claimed_pct)
    h = res.hybrid
    computed = {"currency": currency, "baseline_money": base, "hybrid_money": hyb, "cut_pct": cut,
                "hybrid_base": h.base, "hybrid_burst": h.burst, "hybrid_base_gpus": h.base_gpus, "months": m}
    cond = (f"Over {m} months the cheapest hybrid ({ids['hybrid'].name}) costs {hyb:,.0f} {currency}, {cut:.0f} % less "
            f"than the baseline ({ids[baseline].name}, {base:,.0f}). Containers and scheduling are not priced here (see the "
            "time-slicing and idle-reclaim claims).",
            f"{m} 个月内最省的混合方案（{ids['hybrid'].name}）花费 {hyb:,.0f} {currency}，比基准（{ids[baseline].name}，"
            f"{base:,.0f}）低 {cut:.0f} %。此处未计容器化和调度的收益（见时间片与空闲回收两条）。")
    opts = [o for o in res.options]
    chart = {"kind": "bar", "x": [o.id for o in opts], "y": [o.total_cost for o in opts],
             "y_title": f"{currency} over {m} months", "y_title_zh": f"{m} 个月总成本（{currency}）"}
    return {"computed": computed, "verdict": verdict, "condition": cond, "chart": chart,
            "sources": [f"scenario {scenario}", ids["hybrid"].source or "", ids[baseline].source or ""]}


# --------------------------------------------------------------------------------------------------
# 10. Eight used T4s against an A100 cluster
# --------------------------------------------------------------------------------------------------

def _c_t4_perf(cat: Catalog, t4_count: int, reference_gpu: str, reference_count: int, model: str,
               claimed_pct: float, tolerance_pp: float) -> dict:
    from gpucost import speed
    from gpucost.models import catalog_spec

    spec = catalog_spec(model, cat)
    t4, ref = _gpu_row(cat, "t4"), _gpu_row(cat, reference_gpu)
    col = "bf16_tflops"
    et = speed.training_time(spec, t4, mode="full", tokens=1e9, gpus=int(t4_count), precision_col=col, catalog=cat)
    er = speed.training_time(spec, ref, mode="full", tokens=1e9, gpus=int(reference_count), precision_col=col,
                             catalog=cat)
    share = et.tokens_per_s / er.tokens_per_s * 100
    tf_t4 = _num(t4["fp16_tflops"]) * t4_count
    tf_ref = (_num(ref["bf16_tflops"]) if math.isfinite(_num(ref["bf16_tflops"])) else _num(ref["fp16_tflops"])) \
        * reference_count
    bw = _num(t4["mem_bandwidth_gbps"]) * t4_count / (_num(ref["mem_bandwidth_gbps"]) * reference_count) * 100
    verdict = compare(share, claimed_pct, tolerance_pp)
    computed = {"t4_tokens_per_s": et.tokens_per_s, "reference_tokens_per_s": er.tokens_per_s,
                "training_share_pct": share, "dense_tflops_share_pct": tf_t4 / tf_ref * 100,
                "bandwidth_share_pct": bw, "t4_link": et.link, "reference_link": er.link,
                "t4_scaling_efficiency": et.scaling_efficiency,
                "reference_gpus_for_claim": tf_t4 / (claimed_pct / 100) / (tf_ref / reference_count)
                if claimed_pct > 0 else math.inf}
    rn = ref["name"]
    cond = (f"{t4_count} × T4 train {spec.id} at {share:.0f} % of {reference_count} × {rn} (dense FP16 "
            f"{tf_t4:g} vs {tf_ref:g} TFLOPS, memory bandwidth {bw:.0f} %); {claimed_pct:g} % holds against a cluster "
            f"of about {computed['reference_gpus_for_claim']:.1f} {rn}.",
            f"{t4_count} 块 T4 训练 {spec.id} 的速度是 {reference_count} 块 {rn} 的 {share:.0f} %（稠密 FP16 {tf_t4:g} 对 "
            f"{tf_ref:g} TFLOPS，显存带宽 {bw:.0f} %）；只有对比约 {computed['reference_gpus_for_claim']:.1f} 块 {rn} 的集群时 "
            f"{claimed_pct:g} % 才成立。")
    chart = {"kind": "bar", "x": [f"{t4_count} × T4", f"{reference_count} × {rn}"],
             "y": [et.tokens_per_s, er.tokens_per_s], "y_title": "training tokens/s", "y_title_zh": "训练 tokens/s"}
    return {"computed": computed, "verdict": verdict, "condition": cond, "chart": chart,
            "sources": [_gpu_source(cat, "t4"), _gpu_source(cat, reference_gpu)]}


def _c_t4_price(cat: Catalog, t4_count: int, t4_used_price: float | None, currency: str, claimed_cny: float,
                tolerance_pct: float) -> dict:
    ps = price_table(cat, currency)
    sourced = _num(ps.loc["t4", "price_used"]) if "t4" in ps.index else math.nan
    price = t4_used_price if t4_used_price is not None else sourced
    claimed = float(cat.convert(claimed_cny, "CNY", currency))
    rows = int(((cat.prices["gpu_id"] == "t4") & (cat.prices["condition"] == "used")).sum())
    if not (price and price > 0):
        return {"computed": {"currency": currency, "sourced_used_price_rows": rows, "claimed_money": claimed,
                             "price_per_card_money": None, "total_money": None},
                "verdict": "unsupported",
                "condition": ("No sourced used T4 price in prices.csv: enter a price you can cite to check the claim.",
                              "prices.csv 中没有有来源的二手 T4 价格：请填入你能给出来源的价格再核对。"),
                "chart": None, "sources": []}
    total = price * t4_count
    verdict = compare(total, claimed, claimed * tolerance_pct / 100, higher_is_better=False)
    computed = {"currency": currency, "sourced_used_price_rows": rows, "price_per_card_money": price,
                "price_from": "input" if t4_used_price is not None else "prices.csv", "total_money": total,
                "claimed_money": claimed, "total_over_claim_x": total / claimed}
    cond = (f"{t4_count} × {price:,.0f} = {total:,.0f} {currency} for the cards (servers extra) against "
            f"{claimed:,.0f} claimed.",
            f"{t4_count} × {price:,.0f} = {total:,.0f} {currency}（仅显卡，不含服务器），说法为 {claimed:,.0f}。")
    srcs = ["your input"] if t4_used_price is not None else [f"prices.csv t4 used: {ps.loc['t4', 'price_used_source']}"]
    return {"computed": computed, "verdict": verdict, "condition": cond, "chart": None, "sources": srcs}


# --------------------------------------------------------------------------------------------------
# The claims
# --------------------------------------------------------------------------------------------------

def _providers(cat: Catalog) -> tuple[str, ...]:
    return ("",) + tuple(sorted(set(cat.offers["provider"])))


def _gpu_or_any(cat: Catalog) -> tuple[str, ...]:
    return ("",) + tuple(cat.gpus["id"])


_CUR = InputSpec("currency", "CNY", "currency")
_GPU_4090 = InputSpec("gpu", "rtx-4090", "gpu")
_REF_A100 = InputSpec("reference_gpu", "a100-80gb-sxm", "gpu")


def _spot_default(key: str):
    return lambda cat: _scenario_value("midsize", key)


CLAIMS: dict[str, ClaimDef] = {}


def _add(d: ClaimDef) -> None:
    CLAIMS[d.id] = d


_add(ClaimDef(
    "rtx4090_fp16_tflops",
    "An RTX 4090 delivers about 83.6 TFLOPS of FP16.",
    "RTX 4090 的 FP16 算力约 83.6 TFLOPS。",
    "RTX 4090的FP16算力达83.6 TFLOPS",
    (_GPU_4090, InputSpec("claimed_tflops", 83.6, lo=0.1, hi=100000, unit="TFLOPS"),
     InputSpec("tolerance_pct", TOLERANCE["spec_pct"], lo=0, hi=100, unit="%")),
    _c_rtx4090_fp16, ("gpucost.catalog (gpus.csv dense throughput, as gpucost.cards ranks it)",),
    (("fp16_dense_tensor_tflops", "dense FP16 tensor (FP32 accumulate)", "稠密 FP16 张量（FP32 累加）", "TFLOPS"),
     ("fp32_tflops", "FP32 (non-tensor)", "FP32（非张量）", "TFLOPS"),
     ("claim_over_dense_fp16_pct", "claim / dense FP16", "说法 / 稠密 FP16", "%"))))

_add(ClaimDef(
    "rtx4090_training_vs_a100",
    "An RTX 4090 trains within 15 % of an A100.",
    "RTX 4090 的训练效率与 A100 差距不足 15 %。",
    "训练效率与A100差距不足15%",
    (_GPU_4090, _REF_A100, InputSpec("model", "llama-3-8b", "model"),
     InputSpec("mode", "lora", "choice", choices=("full", "lora", "qlora")),
     InputSpec("claimed_gap_pct", 15.0, lo=0, hi=100, unit="%")),
    _c_rtx4090_training, ("gpucost.speed.training_time", "gpucost.memory.estimate"),
    (("speed_share_pct", "4090 speed / reference", "4090 速度 / 对比卡", "%"),
     ("gpu_tokens_per_s", "4090 training", "4090 训练速度", "tokens/s"),
     ("reference_tokens_per_s", "reference training", "对比卡训练速度", "tokens/s"))))

_add(ClaimDef(
    "rtx4090_price_vs_a100",
    "An RTX 4090 costs one fifth of an A100.",
    "RTX 4090 的价格仅为 A100 的 1/5。",
    "但价格仅为后者的1/5",
    (_GPU_4090, _REF_A100, InputSpec("condition", "new", "choice", choices=("new", "used")), _CUR,
     InputSpec("claimed_multiple_x", 5.0, lo=1, hi=1000, unit="×"),
     InputSpec("tolerance_pct", TOLERANCE["amount_pct"], lo=0, hi=100, unit="%")),
    _c_rtx4090_price, ("gpucost.cards.price_summary",),
    (("price_multiple_x", "reference price / 4090 price", "对比卡价格 / 4090 价格", "×"),
     ("gpu_price_money", "4090 price", "4090 价格", "{currency}"),
     ("reference_price_money", "reference price", "对比卡价格", "{currency}"))))

_add(ClaimDef(
    "vram_under_16gb_70b",
    "Cards with less than 16 GB cannot run a 70B model such as Llama-3 70B.",
    "16GB 以下的显卡难以运行 Llama-3 70B 这样的 70B 模型。",
    "16GB以下显卡难以处理大型模型（如LLaMA-3 70B）",
    (InputSpec("model", "llama-3-70b", "model"),
     InputSpec("vram_gib", lambda cat: _largest_under(cat, 16.0), lo=1, hi=4096, unit="GiB"),
     InputSpec("context", 4096, "int", lo=1, hi=1_048_576, unit="tokens"),
     InputSpec("allow_cpu_offload", True, "bool")),
    _c_vram16_70b, ("gpucost.memory.estimate", "gpucost.quant"),
    (("smallest_total_gib", "smallest memory need (any format)", "最小显存需求（任意格式）", "GiB"),
     ("layers_on_gpu", "layers on the GPU with offload", "卸载时放在 GPU 上的层数", ""),
     ("cpu_ram_needed_gib", "CPU RAM needed with offload", "卸载时所需内存", "GiB"))))

_add(ClaimDef(
    "used_a100_discount",
    "Used ex-cloud A100s cost about 40 % less than new.",
    "云厂商淘汰的二手 A100 比全新便宜约 40 %。",
    "AWS等云服务商淘汰的A100服务器，价格可比全新低40%",
    (InputSpec("gpu", "a100-80gb-sxm", "gpu"),
     InputSpec("statistic", "median", "choice", choices=("median", "same-source")), _CUR,
     InputSpec("claimed_pct", 40.0, lo=0, hi=100, unit="%"),
     InputSpec("tolerance_pp", TOLERANCE["share_pp"], lo=0, hi=100, unit="pp")),
    _c_used_a100, ("gpucost.cards.price_summary",),
    (("discount_pct", "used below new", "二手比新卡便宜", "%"),
     ("price_new_median_money", "new (median)", "新卡（中位数）", "{currency}"),
     ("price_used_median_money", "used (median)", "二手（中位数）", "{currency}"))))

_add(ClaimDef(
    "spot_discount",
    "Spot instances cost 70–90 % less than on-demand.",
    "竞价实例比按需实例便宜 70–90 %。",
    "AWS Spot实例价格比按需实例低70-90%，适用于可中断任务",
    (InputSpec("gpu", "", "gpu_or_any"), InputSpec("provider", "aws", "provider"),
     InputSpec("claimed_low_pct", 70.0, lo=0, hi=100, unit="%"), InputSpec("claimed_high_pct", 90.0, lo=0, hi=100,
                                                                            unit="%"),
     InputSpec("interruption_bucket", _spot_default("spot.interruption_bucket"), "choice",
               choices=("<5%", "5-10%", "10-15%", "15-20%", ">20%")),
     InputSpec("checkpoint_minutes", _spot_default("spot.checkpoint_minutes"), lo=0, hi=1440, unit="min"),
     InputSpec("restart_minutes", _spot_default("spot.restart_minutes"), lo=0, hi=1440, unit="min"),
     InputSpec("gpus_per_job", 1, "int", lo=1, hi=4096)),
    _c_spot, ("gpucost.catalog (cloud_offers.csv)", "gpucost.tco.spot_factor", "gpucost.tco.interruption_rate_per_hour"),
    (("discount_median_pct", "median spot discount", "竞价折扣中位数", "%"),
     ("effective_discount_pct", "after interruptions", "计入中断后", "%"),
     ("offers_in_claimed_range_pct", "offers inside the claimed range", "落在说法区间内的报价", "%"))))

_add(ClaimDef(
    "reserved_1y_saving",
    "A 1-year reservation saves about 35 % against on-demand.",
    "1 年期预留实例比按需节省约 35 %。",
    "对稳定需求部分，1年期预留实例可比按需节省35%",
    (InputSpec("gpu", "", "gpu_or_any"), InputSpec("provider", "", "provider"),
     InputSpec("utilization_pct", 100.0, lo=1, hi=100, unit="%"),
     InputSpec("claimed_pct", 35.0, lo=0, hi=100, unit="%"),
     InputSpec("tolerance_pp", TOLERANCE["share_pp"], lo=0, hi=100, unit="pp")),
    _c_reserved, ("gpucost.catalog (cloud_offers.csv)", "gpucost.tco (reserved break-even utilization)"),
    (("effective_saving_pct", "saving at this utilization", "该利用率下的节省", "%"),
     ("list_saving_median_pct", "list saving (median)", "标价节省（中位数）", "%"),
     ("break_even_utilization_pct", "loses below utilization", "低于此利用率即亏", "%"))))

_add(ClaimDef(
    "time_slicing_8x",
    "Time-slicing turns one A100 into 8 logical GPUs and raises utilization by 300 %.",
    "时间片共享可把一块 A100 虚拟成 8 个逻辑 GPU，资源利用率提升 300 %。",
    "此配置可将单块A100虚拟化为8个逻辑GPU，资源利用率提升300%",
    (InputSpec("gpu", "a100-80gb-sxm", "gpu"), InputSpec("replicas", 8, "int", lo=1, hi=64),
     InputSpec("workload_mem_gib", 0.0, lo=0, hi=4096, unit="GiB"),
     InputSpec("workload_util_pct", 30.0, lo=0.5, hi=100, unit="%"),
     InputSpec("claimed_gain_pct", 300.0, lo=0, hi=10000, unit="%"),
     InputSpec("tolerance_pct", TOLERANCE["gain_pct"], lo=0, hi=100, unit="%")),
    _c_time_slicing, ("gpucost.plan.plan_share", "gpucost.plan.device_plugin_config"),
    (("utilization_gain_pct", "utilization gain", "利用率提升", "%"),
     ("utilization_alone_pct", "utilization alone", "独占时利用率", "%"),
     ("utilization_shared_pct", "utilization shared", "共享后利用率", "%"),
     ("cards_needed", "cards needed", "所需卡数", ""))))

_add(ClaimDef(
    "int8_memory",
    "8-bit quantization (FP16 → INT8) cuts memory by 75 %.",
    "8 位量化（FP16 → INT8）使显存占用减少 75 %。",
    "对大型模型进行8位量化（如FP16→INT8）… 显存占用减少75%",
    (InputSpec("model", "llama-3-8b", "model"), InputSpec("base_format", "fp16", "format"),
     InputSpec("quant_format", "bnb-int8", "format"), InputSpec("context", 4096, "int", lo=1, hi=1_048_576,
                                                                unit="tokens"),
     InputSpec("claimed_pct", 75.0, lo=0, hi=100, unit="%"),
     InputSpec("tolerance_pp", TOLERANCE["share_pp"], lo=0, hi=100, unit="pp")),
    _c_int8_memory, ("gpucost.memory.estimate", "gpucost.quant.weights_file_gib"),
    (("total_cut_pct", "memory in use, less", "显存占用减少", "%"),
     ("bits_cut_pct", "bits per weight, less", "每权重位数减少", "%"),
     ("total_quant_gib", "8-bit total", "8 位总占用", "GiB"))))

_add(ClaimDef(
    "int8_speed",
    "8-bit quantization speeds inference up 2–4×.",
    "8 位量化使推理速度提升 2–4 倍。",
    "推理速度提升2-4倍",
    (InputSpec("model", "llama-3-8b", "model"), InputSpec("gpu", "rtx-4090", "gpu"),
     InputSpec("base_format", "fp16", "format"), InputSpec("quant_format", "bnb-int8", "format"),
     InputSpec("batch", 1, "int", lo=1, hi=4096),
     InputSpec("claimed_low_x", 2.0, lo=0, hi=100, unit="×"), InputSpec("claimed_high_x", 4.0, lo=0, hi=100, unit="×")),
    _c_int8_speed, ("gpucost.speed.speed",),
    (("speedup_x", "speed-up (model)", "提速（模型）", "×"),
     ("measured_speedup_x", "speed-up (measured)", "提速（实测）", "×"),
     ("quant_tokens_per_s", "8-bit decode", "8 位解码速度", "tokens/s"))))

_add(ClaimDef(
    "int8_accuracy",
    "8-bit quantization keeps about 95 % of the accuracy.",
    "8 位量化可保持约 95 % 的精度。",
    "可在保持95%精度的同时",
    (InputSpec("quant_format", "bnb-int8", "format"), InputSpec("claimed_pct", 95.0, lo=0, hi=100, unit="%"),
     InputSpec("tolerance_pp", TOLERANCE["quality_pp"], lo=0, hi=100, unit="pp")),
    _c_int8_accuracy, ("gpucost.catalog (quant_formats.csv ppl_delta)",),
    (("quality_kept_at_least_pct", "quality kept, at least", "至少保留的质量", "%"),
     ("ppl_delta", "perplexity change", "困惑度变化", ""))))

_add(ClaimDef(
    "zero3_100b",
    "ZeRO-3 with CPU/NVMe offload cuts a 100B-parameter training run from 32 A100s to 8.",
    "ZeRO-3（配合 CPU/NVMe 卸载）可把千亿参数模型训练的 GPU 需求从 32 块 A100 降到 8 块。",
    "采用ZeRO-3数据并行技术，可将千亿参数模型训练的GPU需求从32块A100降至8块",
    (InputSpec("params_b", 100.0, lo=0.1, hi=100000, unit="B"), InputSpec("num_layers", 80, "int", lo=1, hi=1024),
     InputSpec("gpu", "a100-80gb-sxm", "gpu"), InputSpec("seq_len", 4096, "int", lo=128, hi=1_048_576, unit="tokens"),
     InputSpec("micro_batch", 1, "int", lo=1, hi=1024),
     InputSpec("claimed_from_gpus", 32, "int", lo=1, hi=100000), InputSpec("claimed_to_gpus", 8, "int", lo=1, hi=100000),
     InputSpec("host_ram_gib_per_node", _host_ram_default, lo=1, hi=1e6, unit="GiB"),
     InputSpec("gpus_per_node", 8, "int", lo=1, hi=64)),
    _c_zero3, ("gpucost.plan.zero_memory", "gpucost.plan.min_gpus_for", "gpucost.plan.linear_speed"),
    (("min_gpus_zero3_offload", "GPUs with ZeRO-3 + offload", "ZeRO-3 + 卸载所需 GPU", ""),
     ("min_gpus_zero3", "GPUs with ZeRO-3", "ZeRO-3 所需 GPU", ""),
     ("min_gpus_without_zero3", "GPUs without ZeRO-3 (tensor/pipeline)", "不用 ZeRO-3（张量/流水线并行）", ""),
     ("slowdown_x", "slower than the larger cluster", "比大集群慢", "×"))))

_add(ClaimDef(
    "idle_reclaim",
    "Reclaiming GPUs that stay under 20 % busy for 30 minutes saves the money they idle away.",
    "GPU 连续 30 分钟使用率低于 20 % 时回收，可省下空闲的费用。",
    "连续30分钟使用率<20%时触发资源回收",
    (InputSpec("gpu", "a100-80gb-sxm", "gpu"), InputSpec("gpus", 4, "int", lo=1, hi=100000),
     InputSpec("busy_pct", 30.0, lo=1, hi=99, unit="%"), InputSpec("job_minutes", 120.0, lo=1, hi=100000, unit="min"),
     InputSpec("idle_util_pct", 20.0, lo=1, hi=100, unit="%"),
     InputSpec("idle_for_minutes", 30.0, lo=0, hi=10000, unit="min"),
     _CUR, InputSpec("min_recovered_pct", 50.0, lo=0, hi=100, unit="%")),
    _c_idle, ("gpucost.monitor.summarize", "gpucost.monitor.card_value"),
    (("saved_money_per_month", "reclaimed per month", "每月可回收", "{currency}"),
     ("idle_cost_money_per_month", "idle cost per month", "每月空闲成本", "{currency}"),
     ("recovered_pct", "share of the idle cost reclaimed", "收回的空闲成本比例", "%"))))

_add(ClaimDef(
    "startup_first_year",
    "A start-up's 2 × RTX 4090 (local) + 1 cloud A100 costs about ¥80 000 in the first year.",
    "初创团队 2 块 RTX 4090（本地）+ 1 块云端 A100，首年投入约 8 万元。",
    "硬件：2块RTX 4090（本地）+ 1块A100（云端）… 成本：首年投入约8万元",
    (InputSpec("scenario", "startup", "scenario"), InputSpec("region", "CN", "str"),
     InputSpec("owned_count", 2, "int", lo=1, hi=1000), InputSpec("condition", "new", "choice", choices=("new", "used")),
     InputSpec("a100_hours", float(HOURS_PER_YEAR), lo=0, hi=float(HOURS_PER_YEAR), unit="h"),
     InputSpec("a100_pricing", "reserved-1y", "choice", choices=("on-demand", "spot", "reserved-1y")), _CUR,
     InputSpec("claimed_cny", 80000.0, lo=1, hi=1e9, unit="CNY"),
     InputSpec("tolerance_pct", TOLERANCE["amount_pct"], lo=0, hi=100, unit="%")),
    _c_startup, ("gpucost.tco.resolve", "gpucost.tco.evaluate"),
    (("total_money", "first year", "首年合计", "{currency}"),
     ("claimed_money", "claimed", "说法", "{currency}"),
     ("a100_hours_within_claim", "A100 hours the claim allows", "说法允许的 A100 机时", "h"))))

_add(ClaimDef(
    "midsize_spot_reserved",
    "Mixing spot and reserved instances cuts a mid-size company's GPU bill by about 55 %.",
    "中型企业通过竞价实例 + 预留实例混合模式，年度 GPU 支出降低 55 %。",
    "通过竞价实例+预留实例混合模式，年度GPU支出降低55%",
    (InputSpec("scenario", "midsize", "scenario"), InputSpec("provider", "aws", "provider"),
     InputSpec("reserved_gpus", lambda cat: int(_scenario_value("midsize", "hybrid.configured_base") or 0), "int",
               lo=0, hi=100000),
     InputSpec("months", 12, "int", lo=1, hi=120, unit="months"), _CUR,
     InputSpec("claimed_pct", 55.0, lo=0, hi=100, unit="%"),
     InputSpec("tolerance_pp", TOLERANCE["share_pp"], lo=0, hi=100, unit="pp")),
    _c_midsize, ("gpucost.tco.evaluate (hybrid: reserved-1y base + spot bursts)",),
    (("mix_cut_pct", "bill below on-demand", "账单比按需低", "%"),
     ("best_mix_cut_pct", "best mix", "最优组合", "%"),
     ("best_reserved_gpus", "GPUs to reserve (best)", "最优预留 GPU 数", ""))))

_add(ClaimDef(
    "t4_cluster_performance",
    "8 used T4s reach about 60 % of an A100 cluster's training performance.",
    "8 块二手 T4 的训练性能接近 A100 集群的 60 %。",
    "8块T4（二手市场采购）… 性能接近A100集群的60%",
    (InputSpec("t4_count", 8, "int", lo=1, hi=4096), InputSpec("reference_gpu", "a100-40gb-sxm", "gpu"),
     InputSpec("reference_count", 8, "int", lo=1, hi=4096), InputSpec("model", "llama-3.2-1b", "model"),
     InputSpec("claimed_pct", 60.0, lo=0, hi=1000, unit="%"),
     InputSpec("tolerance_pp", TOLERANCE["near_pp"], lo=0, hi=100, unit="pp")),
    _c_t4_perf, ("gpucost.speed.training_time",),
    (("training_share_pct", "T4 cluster / A100 cluster", "T4 集群 / A100 集群", "%"),
     ("dense_tflops_share_pct", "dense FP16 TFLOPS share", "稠密 FP16 算力占比", "%"),
     ("bandwidth_share_pct", "memory bandwidth share", "显存带宽占比", "%"))))

_add(ClaimDef(
    "t4_cluster_price",
    "8 used T4s cost about ¥30 000.",
    "8 块二手 T4 约 3 万元。",
    "8块T4（二手市场采购）… 3万元实现16卡并行训练能力",
    (InputSpec("t4_count", 8, "int", lo=1, hi=4096), InputSpec("t4_used_price", None, "optfloat", lo=0, unit="{currency}"),
     _CUR, InputSpec("claimed_cny", 30000.0, lo=1, hi=1e9, unit="CNY"),
     InputSpec("tolerance_pct", TOLERANCE["amount_pct"], lo=0, hi=100, unit="%")),
    _c_t4_price, ("gpucost.cards.price_summary",),
    (("total_money", "8 cards", "8 块卡", "{currency}"), ("claimed_money", "claimed", "说法", "{currency}"))))

_add(ClaimDef(
    "hybrid_cuts_60pct",
    "A hybrid (local + cloud) architecture with scheduling and containers cuts total cost by more than 60 %.",
    "混合架构（本地 + 云端）、动态调度和容器化可将综合成本降低 60 % 以上。",
    "通过混合架构设计（本地+云端）、动态资源调度、容器化部署等技术手段，可将综合成本降低60%以上",
    (InputSpec("scenario", "midsize", "scenario"),
     InputSpec("baseline", "on-demand", "choice",
               choices=("on-demand", "buy-new", "buy-used", "lease", "spot", "reserved-1y", "reserved-3y")),
     InputSpec("horizon_months", 0, "int", lo=0, hi=120, unit="months"), _CUR,
     InputSpec("claimed_pct", 60.0, lo=0, hi=100, unit="%")),
    _c_hybrid, ("gpucost.tco.evaluate (cheapest hybrid)",),
    (("cut_pct", "hybrid below the baseline", "混合方案比基准低", "%"),
     ("hybrid_money", "hybrid", "混合方案", "{currency}"),
     ("baseline_money", "baseline", "基准", "{currency}"))))


# --------------------------------------------------------------------------------------------------
# Inputs and evaluation
# --------------------------------------------------------------------------------------------------

def claim_ids() -> list[str]:
    return list(CLAIMS)


def get_claim(claim_id: str) -> ClaimDef:
    if claim_id not in CLAIMS:
        raise UnknownNameError("claim", claim_id, CLAIMS)
    return CLAIMS[claim_id]


def input_choices(spec: InputSpec, catalog: Catalog) -> tuple:
    """The values a choice-like input may take (GPU ids, models, formats, providers, scenarios, …)."""
    if spec.kind == "choice":
        return tuple(spec.choices)
    if spec.kind == "gpu":
        return tuple(catalog.gpus["id"])
    if spec.kind == "gpu_or_any":
        return _gpu_or_any(catalog)
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
    return ()


def default_inputs(claim_id: str, catalog: Catalog | None = None) -> dict:
    cat = catalog or Catalog()
    return {s.name: s.default_value(cat) for s in get_claim(claim_id).inputs}


def _coerce(claim_id: str, spec: InputSpec, value, cat: Catalog):
    """Check and convert one input; raise GpucostError naming the claim and the input."""
    where = f"claim {claim_id}: input '{spec.name}'"
    k = spec.kind
    if k == "optfloat" and (value is None or (isinstance(value, str) and not value.strip())):
        return None
    if k in ("float", "int", "optfloat"):
        try:
            v = float(str(value).replace(",", "")) if isinstance(value, str) else float(value)
        except (TypeError, ValueError):
            raise GpucostError(f"{where}: '{value}' is not a number") from None
        if not math.isfinite(v):
            raise GpucostError(f"{where}: must be a finite number, not {value}")
        if k == "int":
            if v != math.floor(v):
                raise GpucostError(f"{where}: must be a whole number, not {value}")
            v = int(v)
        if spec.lo is not None and v < spec.lo:
            raise GpucostError(f"{where}: must be at least {spec.lo:g}, not {value}")
        if spec.hi is not None and v > spec.hi:
            raise GpucostError(f"{where}: must be at most {spec.hi:g}, not {value}")
        return v
    if k == "bool":
        if isinstance(value, str):
            low = value.strip().lower()
            if low in ("1", "true", "yes", "y", "on"):
                return True
            if low in ("0", "false", "no", "n", "off"):
                return False
            raise GpucostError(f"{where}: '{value}' is not true or false")
        return bool(value)
    text = "" if value is None else str(value).strip()
    if k in ("gpu", "gpu_or_any"):
        if k == "gpu_or_any" and text in ("", "any", "all"):
            return ""
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
    if k == "provider":
        if text in ("", "any", "all"):
            return ""
        known = _providers(cat)[1:]
        match = [p for p in known if p.lower() == text.lower()]
        if not match:
            raise UnknownNameError("provider", text, known)
        return match[0]
    if k == "scenario":
        if not text:
            raise GpucostError(f"{where}: give a scenario name")
        load_scenario(text)  # raises UnknownNameError with the closest names
        return text
    if k == "choice":
        choices = input_choices(spec, cat)
        if text not in choices:
            raise UnknownNameError(f"value of {where}", text, choices)
        return text
    return text


def resolve_inputs(claim_id: str, catalog: Catalog | None = None, **given) -> dict:
    """The claim's inputs: defaults from the data, replaced by ``given``, each checked."""
    cat = catalog or Catalog()
    d = get_claim(claim_id)
    specs = {s.name: s for s in d.inputs}
    for k in given:
        if k not in specs:
            raise UnknownNameError(f"input of claim {claim_id}", k, specs)
    out = {}
    for name, spec in specs.items():
        raw = given[name] if name in given else spec.default_value(cat)
        out[name] = _coerce(claim_id, spec, raw, cat)
    return out


def evaluate(claim_id: str, catalog: Catalog | None = None, **inputs) -> ClaimResult:
    """Compute one claim with its engine for ``inputs`` (the others at their defaults)."""
    cat = catalog or Catalog()
    d = get_claim(claim_id)
    vals = resolve_inputs(claim_id, cat, **inputs)
    out = d.fn(cat, **vals)
    verdict = out["verdict"]
    if verdict not in VERDICTS:  # pragma: no cover - a programming error
        raise ValueError(f"claim {claim_id}: verdict {verdict!r}")
    computed = dict(out["computed"])
    cur = computed.get("currency", vals.get("currency", ""))
    numbers = []
    for key, en, zh, unit in d.numbers:
        if key in computed:
            numbers.append(MappingProxyType({"key": key, "label": en, "label_zh": zh, "value": computed[key],
                                             "unit": unit.format(currency=cur)}))
    cond_en, cond_zh = out["condition"]
    return ClaimResult(id=d.id, claim=d.claim, claim_zh=d.claim_zh, quote_zh=d.quote_zh,
                       inputs=MappingProxyType(vals), computed=MappingProxyType(computed), numbers=tuple(numbers),
                       verdict=verdict, condition=cond_en, condition_zh=cond_zh, engines=d.engines,
                       sources=tuple(s for s in out.get("sources", ()) if s), chart=out.get("chart"))


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


__all__ = ["VERDICTS", "TOLERANCE", "CLAIMS", "InputSpec", "ClaimDef", "ClaimResult", "compare", "in_range",
           "at_least", "claim_ids", "get_claim", "input_choices", "default_inputs", "resolve_inputs", "evaluate",
           "evaluate_all", "split_overrides", "parse_setting", "price_table"]
