"""Claims about cards: the RTX 4090's FP16, training speed and price against an A100; cards under 16 GB
and a 70B model; used ex-cloud A100s; eight used T4s against an A100 cluster."""

from __future__ import annotations

import math
import statistics
from urllib.parse import urlparse

from gpucost.catalog import Catalog
from gpucost.claims.core import (
    T,
    at_least,
    compare,
    first_source,
    gpu_source,
    num,
    price_table,
    result,
    unsupported,
)
from gpucost.claims.core import (
    gpu as rec,
)
from gpucost.errors import GpucostError
from gpucost.pricing import street_quotes


def rtx4090_fp16(cat: Catalog, gpu: str, claimed_tflops: float, tolerance_pct: float) -> dict:
    g = rec(cat, gpu)
    dense = g.fp16_tflops if g.fp16_tflops is not None else math.nan
    fp32 = g.fp32_tflops if g.fp32_tflops is not None else math.nan
    verdict = "unsupported" if not math.isfinite(dense) else compare(dense, claimed_tflops, dense * tolerance_pct / 100)
    near_fp32 = math.isfinite(fp32) and abs(claimed_tflops - fp32) <= fp32 * tolerance_pct / 100
    computed = {"fp16_dense_tensor_tflops": dense, "fp32_tflops": fp32, "claimed_tflops": claimed_tflops,
                "claim_over_dense_fp16_pct": claimed_tflops / dense * 100 if dense else math.nan,
                "claim_matches_fp32_rate": near_fp32}
    p = {"name": g.name, "claim": claimed_tflops, "dense": dense, "fp32": fp32,
         "ratio": dense / claimed_tflops if claimed_tflops else math.nan}
    variant = ("unsupported" if verdict == "unsupported" else "holds" if verdict == "holds"
               else "fp32" if near_fp32 else "other")
    chart = {"kind": "bar", "x": [T("claims_x_claim"), "FP32", T("claims_x_fp16_tensor")],
             "y": [claimed_tflops, fp32, dense], "y_title": "TFLOPS"}
    return result(computed, verdict, T(f"claim_rtx4090_fp16_tflops_c_{variant}", **p), chart, [gpu_source(cat, gpu)])


def rtx4090_training(cat: Catalog, gpu: str, reference_gpu: str, model: str, mode: str,
                     claimed_gap_pct: float) -> dict:
    from gpucost import memory, speed
    from gpucost.models import catalog_spec
    from gpucost.quant import get_format

    spec = catalog_spec(model, cat)
    est, mem, fits, peaks = {}, {}, {}, {}
    for key, gid in (("gpu", gpu), ("reference", reference_gpu)):
        g = rec(cat, gid)
        peaks[key] = g.require_training_tflops()
        est[key] = speed.training_time(spec, g, mode=mode, tokens=1e9, gpus=1, catalog=cat)
        fmt = get_format("bnb-nf4-dq" if mode == "qlora" else g.training_precision, cat)
        mem[key] = memory.estimate(spec, fmt, memory.Setup(mode=mode, context=2048, batch=1)).total_gib
        fits[key] = mem[key] <= g.vram_gib
    a, b = est["gpu"].tokens_per_s, est["reference"].tokens_per_s
    share = a / b * 100
    bound = 100 - claimed_gap_pct
    verdict = at_least(share, bound)
    computed = {"gpu_tokens_per_s": a, "reference_tokens_per_s": b, "speed_share_pct": share,
                "gap_pct": 100 - share, "claimed_gap_pct": claimed_gap_pct, "mfu": est["gpu"].mfu,
                "gpu_training_memory_gib": mem["gpu"], "reference_training_memory_gib": mem["reference"],
                "fits_gpu": fits["gpu"], "fits_reference": fits["reference"],
                "hours_per_1b_tokens_gpu": est["gpu"].hours, "hours_per_1b_tokens_reference": est["reference"].hours,
                "gpu_dense_tflops": peaks["gpu"], "reference_dense_tflops": peaks["reference"]}
    ng, nr = rec(cat, gpu).name, rec(cat, reference_gpu).name
    p = {"gpu": ng, "ref": nr, "model": spec.id, "mode": mode, "share": share, "gap": claimed_gap_pct,
         "slower": 100 - share, "bound": bound, "tf_gpu": peaks["gpu"], "tf_ref": peaks["reference"],
         "max_ref": peaks["gpu"] / bound * 100}
    chart = {"kind": "bar", "x": [ng, nr], "y": [a, b], "y_title": T("claims_y_training_tps")}
    return result(computed, verdict, T(f"claim_rtx4090_training_vs_a100_c_{'holds' if verdict == 'holds' else 'no'}",
                                       **p), chart,
                  [gpu_source(cat, gpu), gpu_source(cat, reference_gpu),
                   f"engine_efficiency.csv training MFU {est['gpu'].mfu:.3f}"])


def rtx4090_price(cat: Catalog, gpu: str, reference_gpu: str, condition: str, currency: str,
                  claimed_multiple_x: float, tolerance_pct: float) -> dict:
    ps = price_table(cat, currency)
    col = f"price_{condition}"
    pa, pb = num(ps.loc[gpu, col]), num(ps.loc[reference_gpu, col])
    ga, gb = rec(cat, gpu), rec(cat, reference_gpu)
    multiple = pb / pa if (pa > 0 and pb > 0) else math.nan
    verdict = compare(multiple, claimed_multiple_x, claimed_multiple_x * tolerance_pct / 100)
    ta, tb = ga.fp16_tflops or math.nan, gb.training_tflops or math.nan
    computed = {"currency": currency, "gpu_price_money": pa, "reference_price_money": pb,
                "price_multiple_x": multiple, "price_share_pct": pa / pb * 100 if pb else math.nan,
                "claimed_multiple_x": claimed_multiple_x,
                "gpu_money_per_dense_tflops": pa / ta if ta else math.nan,
                "reference_money_per_dense_tflops": pb / tb if tb else math.nan}
    cond_word = T(f"claims_condition_{condition}")
    if verdict == "unsupported":
        cond = T("claim_rtx4090_price_vs_a100_c_unsupported", name=ga.name if not pa > 0 else gb.name, cond=cond_word)
    else:
        cond = T(f"claim_rtx4090_price_vs_a100_c_{verdict}", a=ga.name, b=gb.name, x=multiple, cond=cond_word,
                 cur=currency, pa=computed["gpu_money_per_dense_tflops"], pb=computed["reference_money_per_dense_tflops"])
    srcs = [f"prices.csv {gid} {condition}: {first_source(ps.loc[gid, col + '_source'])} ({ps.loc[gid, col + '_as_of']})"
            if price > 0 else f"prices.csv: no {condition} price for {gid}"
            for gid, price in ((gpu, pa), (reference_gpu, pb))]
    chart = {"kind": "bar", "x": [ga.name, gb.name], "y": [pa, pb], "y_title": T("claims_y_price", cur=currency)}
    return result(computed, verdict, cond, chart, srcs)


# --------------------------------------------------------------------------------------------------
# Cards under 16 GB and a 70B model
# --------------------------------------------------------------------------------------------------

def largest_under(catalog: Catalog, limit_gib: float) -> float:
    g = catalog.gpus
    under = g[g["vram_gib"] < limit_gib]["vram_gib"]
    return float(under.max()) if len(under) else limit_gib / 2


def _smallest_formats(cat: Catalog, spec, context: int) -> list[tuple]:
    from gpucost import memory
    from gpucost.quant import formats, weights_file_gib

    rows = []
    for fid, fmt in formats(cat).items():
        eng = "llama.cpp" if fmt.is_gguf else "transformers"
        try:
            e = memory.estimate(spec, fmt, memory.Setup(mode="inference", engine=eng, context=int(context)))
        except GpucostError:
            continue
        rows.append((e.total_gib, fid, eng, weights_file_gib(spec, fmt), fmt.bits_per_weight))
    return sorted(rows)


def _offload_layers(cat: Catalog, spec, fid: str, context: int, vram_gib: float) -> tuple[int, float]:
    """The most layers of ``fid`` llama.cpp keeps on a card of ``vram_gib`` (-ngl) and the CPU RAM left;
    (-1, nan) when not even the non-layer part fits."""
    from gpucost import memory
    from gpucost.quant import formats

    fmt = formats(cat)[fid]

    def est(n):
        return memory.estimate(spec, fmt, memory.Setup(mode="inference", engine="llama.cpp", context=int(context),
                                                       gpu_layers=int(n)))
    if est(0).total_gib > vram_gib:
        return -1, math.nan
    lo, hi = 0, spec.num_layers
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if est(mid).total_gib <= vram_gib else (lo, mid)
    if est(hi).total_gib <= vram_gib:
        lo = hi
    return lo, est(lo).cpu_gib


def vram16_70b(cat: Catalog, model: str, vram_gib: float, context: int, allow_cpu_offload: bool) -> dict:
    from gpucost.models import catalog_spec

    spec = catalog_spec(model, cat)
    rows = _smallest_formats(cat, spec, context)
    best_total, best_fmt, _eng, best_weights, best_bits = rows[0]
    fits_gpu_only = best_total <= vram_gib
    gguf = [r for r in rows if r[2] == "llama.cpp"]
    offload_fmt = gguf[0][1] if gguf else ""
    layers_on_gpu, cpu_gib = _offload_layers(cat, spec, offload_fmt, context, vram_gib) if gguf else (0, math.nan)
    runs_with_offload = layers_on_gpu >= 0 and bool(gguf)
    verdict = ("overstated" if fits_gpu_only else "depends" if allow_cpu_offload and runs_with_offload else "holds")
    computed = {"vram_gib": vram_gib, "smallest_format": best_fmt, "smallest_format_bits_per_weight": best_bits,
                "smallest_weights_gib": best_weights, "smallest_total_gib": best_total,
                "fits_on_gpu_alone": fits_gpu_only, "offload_format": offload_fmt,
                "layers_on_gpu": max(layers_on_gpu, 0), "layers_total": spec.num_layers,
                "layers_on_gpu_pct": max(layers_on_gpu, 0) / spec.num_layers * 100,
                "cpu_ram_needed_gib": cpu_gib, "runs_with_cpu_offload": runs_with_offload}
    p = {"model": spec.id, "fmt": best_fmt, "bits": best_bits, "total": best_total, "vram": vram_gib,
         "ofmt": offload_fmt, "layers": layers_on_gpu, "all": spec.num_layers, "cpu": cpu_gib,
         "no_offload": T("claims_no_offload_allowed") if not allow_cpu_offload else ""}
    top = rows[:8]
    chart = {"kind": "bar", "x": [r[1] for r in top], "y": [r[0] for r in top], "ref": vram_gib,
             "ref_label": f"{vram_gib:g} GiB", "y_title": T("claims_y_inference_gib")}
    return result(computed, verdict, T(f"claim_vram_under_16gb_70b_c_{verdict}", **p), chart,
                  [f"models.csv {spec.id}", "quant_formats.csv bits_per_weight; gpucost.quant GGUF tensor types"])


# --------------------------------------------------------------------------------------------------
# Used ex-cloud A100 against new
# --------------------------------------------------------------------------------------------------

def _quotes(cat: Catalog, gpu: str, currency: str):
    """The card's street prices its price in the user's market is taken from (:func:`street_quotes`)."""
    q = street_quotes(cat, currency)
    return q[q["chosen"] & (q["gpu_id"] == gpu)]


def _per_source_discounts(cat: Catalog, gpu: str, currency: str) -> list[tuple[str, float]]:
    """(source, used below new %) for each source quoting both a new and a used price of the card (of
    the quotes its price in the user's market is taken from)."""
    p = _quotes(cat, gpu, currency)
    out: list[tuple[str, float]] = []
    for src, g in p.groupby("source", sort=True):
        vals = g["value"]
        n = vals[(g["condition"] == "new").to_numpy()]
        u = vals[(g["condition"] == "used").to_numpy()]
        if len(n) and len(u):
            out.append((str(src), float((1 - statistics.median(u) / statistics.median(n)) * 100)))
    return out


def used_a100(cat: Catalog, gpu: str, statistic: str, currency: str, claimed_pct: float,
              tolerance_pp: float) -> dict:
    ps = price_table(cat, currency)
    new, used = num(ps.loc[gpu, "price_new"]), num(ps.loc[gpu, "price_used"])
    median_discount = (1 - used / new) * 100 if (new > 0 and used > 0) else math.nan
    per_source = _per_source_discounts(cat, gpu, currency)
    same_source = statistics.median([d for _, d in per_source]) if per_source else math.nan
    value = median_discount if statistic == "median" else same_source
    verdict = compare(value, claimed_pct, tolerance_pp)
    p = _quotes(cat, gpu, currency)
    computed = {"currency": currency, "price_new_median_money": new, "price_used_median_money": used,
                "discount_median_pct": median_discount, "discount_same_source_pct": same_source,
                "sources_with_both": len(per_source), "discount_pct": value, "claimed_pct": claimed_pct,
                "price_rows_new": int((p["condition"] == "new").sum()),
                "price_rows_used": int((p["condition"] == "used").sum())}
    name = rec(cat, gpu).name
    if verdict == "unsupported":
        cond = T(f"claim_used_a100_discount_c_unsupported_{statistic.replace('-', '_')}", name=name)
    else:
        vals = [v for v in [median_discount] + [d for _, d in per_source] if math.isfinite(v)]
        lo, hi = min(vals), max(vals)
        split = T("claim_used_a100_discount_split", lo=lo, hi=hi) if hi - lo > tolerance_pp else ""
        cond = T("claim_used_a100_discount_c", name=name, value=value, split=split,
                 how=T(f"claim_used_a100_discount_how_{statistic.replace('-', '_')}"))
    hosts = [urlparse(src).netloc or src[:30] for src, _ in per_source]
    chart = {"kind": "bar", "x": [T("claims_x_median_all")] + hosts, "y": [median_discount] + [d for _, d in per_source],
             "ref": claimed_pct, "ref_label": f"{claimed_pct:g} %", "y_title": T("claims_y_used_below_new")}
    return result(computed, verdict, cond, chart, [f"prices.csv {gpu}: {s}" for s in sorted(set(p["source"]))])


# --------------------------------------------------------------------------------------------------
# Eight used T4s against an A100 cluster
# --------------------------------------------------------------------------------------------------

def t4_perf(cat: Catalog, t4_count: int, reference_gpu: str, reference_count: int, model: str,
            claimed_pct: float, tolerance_pp: float) -> dict:
    from gpucost import speed
    from gpucost.models import catalog_spec

    spec = catalog_spec(model, cat)
    t4, ref = rec(cat, "t4"), rec(cat, reference_gpu)
    et = speed.training_time(spec, t4, mode="full", tokens=1e9, gpus=int(t4_count), catalog=cat)
    er = speed.training_time(spec, ref, mode="full", tokens=1e9, gpus=int(reference_count), catalog=cat)
    share = et.tokens_per_s / er.tokens_per_s * 100
    tf_t4 = t4.require_training_tflops() * t4_count
    tf_ref = ref.require_training_tflops() * reference_count
    bw = t4.mem_bandwidth_gbps * t4_count / (ref.mem_bandwidth_gbps * reference_count) * 100
    verdict = compare(share, claimed_pct, tolerance_pp)
    for_claim = tf_t4 / (claimed_pct / 100) / (tf_ref / reference_count) if claimed_pct > 0 else math.inf
    computed = {"t4_tokens_per_s": et.tokens_per_s, "reference_tokens_per_s": er.tokens_per_s,
                "training_share_pct": share, "dense_tflops_share_pct": tf_t4 / tf_ref * 100,
                "bandwidth_share_pct": bw, "t4_link": et.link, "reference_link": er.link,
                "t4_scaling_efficiency": et.scaling_efficiency, "reference_gpus_for_claim": for_claim}
    cond = T("claim_t4_cluster_performance_c", n=t4_count, model=spec.id, share=share, m=reference_count,
             ref=ref.name, tf_t4=tf_t4, tf_ref=tf_ref, bw=bw, claim=claimed_pct, need=for_claim)
    chart = {"kind": "bar", "x": [f"{t4_count} × T4", f"{reference_count} × {ref.name}"],
             "y": [et.tokens_per_s, er.tokens_per_s], "y_title": T("claims_y_training_tps")}
    return result(computed, verdict, cond, chart, [gpu_source(cat, "t4"), gpu_source(cat, reference_gpu)])


def t4_price(cat: Catalog, t4_count: int, t4_used_price: float | None, currency: str, claimed_cny: float,
             tolerance_pct: float) -> dict:
    ps = price_table(cat, currency)
    sourced = num(ps.loc["t4", "price_used"]) if "t4" in ps.index else math.nan
    price = t4_used_price if t4_used_price is not None else sourced
    claimed = float(cat.convert(claimed_cny, "CNY", currency))
    rows = int((_quotes(cat, "t4", currency)["condition"] == "used").sum())
    if not (price and price > 0):
        return unsupported(T("claim_t4_cluster_price_c_unsupported"),
                           {"currency": currency, "sourced_used_price_rows": rows, "claimed_money": claimed,
                            "price_per_card_money": None, "total_money": None})
    total = price * t4_count
    verdict = compare(total, claimed, claimed * tolerance_pct / 100, higher_is_better=False)
    computed = {"currency": currency, "sourced_used_price_rows": rows, "price_per_card_money": price,
                "price_from": "input" if t4_used_price is not None else "prices.csv", "total_money": total,
                "claimed_money": claimed, "total_over_claim_x": total / claimed}
    srcs = ["your input"] if t4_used_price is not None else [f"prices.csv t4 used: {ps.loc['t4', 'price_used_source']}"]
    return result(computed, verdict, T("claim_t4_cluster_price_c", n=t4_count, price=price, total=total,
                                       cur=currency, claimed=claimed), None, srcs)
