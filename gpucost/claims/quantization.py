"""Claims about formats and scale: 8-bit quantization's memory, speed and accuracy; ZeRO-3 and a
100B-parameter model."""

from __future__ import annotations

import math
from dataclasses import replace

from gpucost.catalog import Catalog
from gpucost.claims.core import T, compare, gpu_source, in_range, num, result, unsupported
from gpucost.claims.core import gpu as rec


def engine_for(fmt) -> str:
    return "llama.cpp" if fmt.is_gguf else "transformers"


def int8_memory(cat: Catalog, model: str, base_format: str, quant_format: str, context: int,
                claimed_pct: float, tolerance_pp: float) -> dict:
    from gpucost import memory
    from gpucost.models import catalog_spec
    from gpucost.quant import get_format, weights_file_gib

    spec = catalog_spec(model, cat)
    fb, fq = get_format(base_format, cat), get_format(quant_format, cat)
    eb = memory.estimate(spec, fb, memory.Setup(mode="inference", engine=engine_for(fb), context=int(context)))
    eq = memory.estimate(spec, fq, memory.Setup(mode="inference", engine=engine_for(fq), context=int(context)))
    bits_cut = (1 - fq.bits_per_weight / fb.bits_per_weight) * 100
    wb, wq = weights_file_gib(spec, fb), weights_file_gib(spec, fq)
    weights_cut = (1 - wq / wb) * 100
    total_cut = (1 - eq.total_gib / eb.total_gib) * 100
    computed = {"bits_per_weight_base": fb.bits_per_weight, "bits_per_weight_quant": fq.bits_per_weight,
                "bits_cut_pct": bits_cut, "weights_base_gib": wb, "weights_quant_gib": wq,
                "weights_cut_pct": weights_cut, "total_base_gib": eb.total_gib, "total_quant_gib": eq.total_gib,
                "total_cut_pct": total_cut, "claimed_pct": claimed_pct}
    cond = T("claim_int8_memory_c", fb=fb.id, fq=fq.id, bb=fb.bits_per_weight, bq=fq.bits_per_weight, bits=bits_cut,
             weights=weights_cut, model=spec.id, total=total_cut, ctx=context)
    parts = ("weights", "kv_cache", "activations", "overhead")
    chart = {"kind": "stack", "x": [fb.id, fq.id],
             "series": [{"name": T(f"claims_part_{p}"), "y": [getattr(eb.per_gpu, p), getattr(eq.per_gpu, p)]}
                        for p in parts], "y_title": "GiB"}
    return result(computed, compare(total_cut, claimed_pct, tolerance_pp), cond, chart,
                  [f"quant_formats.csv {fb.id}, {fq.id} bits_per_weight", f"models.csv {spec.id}"])


def _measured_decode(cat: Catalog, model: str, quant: str, gpu: str, engine: str) -> float:
    b = cat.table("benchmarks")
    hit = b[(b["category"] == "decode_speed") & (b["model_id"] == model) & (b["quant"] == quant)
            & (b["gpu_id"] == gpu) & (b["engine"] == engine) & (b["num_gpus"].fillna(1) == 1)
            & (b["batch"].fillna(1) == 1) & (b["unit"] == "tokens/s")]
    return float(hit["measured"].iloc[0]) if len(hit) else math.nan


def int8_speed(cat: Catalog, model: str, gpu: str, base_format: str, quant_format: str, batch: int,
               claimed_low_x: float, claimed_high_x: float) -> dict:
    from gpucost import speed
    from gpucost.models import catalog_spec
    from gpucost.quant import get_format

    spec = catalog_spec(model, cat)
    fb, fq = get_format(base_format, cat), get_format(quant_format, cat)
    g = rec(cat, gpu)
    engine = "llama.cpp" if (fb.is_gguf or fq.is_gguf) else "vllm"
    eff = speed.engine_efficiency(engine, cat)
    sb = speed.speed(spec, fb, g, batch=int(batch), context=1024, engine=engine, catalog=cat, eff=eff)
    sq = speed.speed(spec, fq, g, batch=int(batch), context=1024, engine=engine, catalog=cat, eff=eff)
    x = sq.decode_tokens_per_s / sb.decode_tokens_per_s
    mb, mq = (_measured_decode(cat, spec.id, fb.id, gpu, engine), _measured_decode(cat, spec.id, fq.id, gpu, engine))
    computed = {"engine": engine, "base_tokens_per_s": sb.decode_tokens_per_s,
                "quant_tokens_per_s": sq.decode_tokens_per_s, "speedup_x": x,
                "bytes_ratio_x": sb.bytes_per_step / sq.bytes_per_step, "bound": sq.bound,
                "measured_base_tokens_per_s": mb, "measured_quant_tokens_per_s": mq,
                "measured_speedup_x": mq / mb if mb > 0 else math.nan}
    measured = T("claim_int8_speed_measured", x=mq / mb) if mb > 0 and mq > 0 else T("claim_int8_speed_unmeasured")
    cond = T("claim_int8_speed_c", bound=T(f"claims_bound_{sq.bound.replace('-', '_')}"), fb=fb.id, fq=fq.id,
             ratio=computed["bytes_ratio_x"], x=x, gpu=g.name, batch=batch, engine=engine, measured=measured)
    chart = {"kind": "bar", "x": [fb.id, fq.id], "y": [sb.decode_tokens_per_s, sq.decode_tokens_per_s],
             "y_title": T("claims_y_decode_tps")}
    return result(computed, in_range(x, claimed_low_x, claimed_high_x), cond, chart,
                  [gpu_source(cat, gpu), f"engine_efficiency.csv {engine}", f"quant_formats.csv {fb.id}, {fq.id}"])


def int8_accuracy(cat: Catalog, quant_format: str, claimed_pct: float, tolerance_pp: float) -> dict:
    from gpucost.quant import get_format

    fq = get_format(quant_format, cat)
    q = cat.table("quant_formats").set_index("id").loc[fq.id]
    delta = num(q["ppl_delta"])
    if not math.isfinite(delta):
        return unsupported(T("claim_int8_accuracy_c_unsupported", fmt=fq.id),
                           {"ppl_delta": None, "quality_kept_at_least_pct": None})
    # perplexity is at least 1, so ppl_base / ppl_quant = 1 / (1 + delta / ppl_base) >= 1 / (1 + delta)
    kept = 100 / (1 + max(delta, 0.0))
    verdict = compare(kept, claimed_pct, tolerance_pp) if kept >= claimed_pct - tolerance_pp else "depends"
    computed = {"ppl_delta": delta, "quality_kept_at_least_pct": kept, "claimed_pct": claimed_pct}
    cond = T(f"claim_int8_accuracy_c_{'depends' if verdict == 'depends' else 'kept'}", fmt=fq.id, delta=delta,
             model=str(q["ppl_delta_model"]), claim=claimed_pct, kept=kept)
    return result(computed, verdict, cond, None, [f"quant_formats.csv {fq.id} ppl_delta: {q['ppl_delta_source']}"])


# --------------------------------------------------------------------------------------------------
# ZeRO-3 and a 100B-parameter model
# --------------------------------------------------------------------------------------------------

#: the architecture a "dense model of N parameters and L layers" is given: Llama 3 70B's (GQA, gated MLP,
#: its intermediate/hidden ratio and vocabulary), scaled in width to the parameter count
REFERENCE_DENSE_MODEL = "llama-3-70b"


def host_ram_default(cat: Catalog) -> float:
    """The memory of the smallest 8-GPU A100 80GB cloud server in cloud_offers.csv [GiB]."""
    o = cat.offers
    o = o[(o["gpu_id"] == "a100-80gb-sxm") & (o["AcceleratorCount"] == 8) & o["MemoryGiB"].notna()]
    return float(o["MemoryGiB"].min()) if len(o) else 1024.0


def dense_model(cat: Catalog, params_b: float, num_layers: int):
    """A dense model of ``params_b`` billion parameters and ``num_layers`` layers shaped like the reference
    model: the width (a multiple of the head size) whose counted parameters come closest."""
    from gpucost.models import catalog_spec, count_parameters

    ref = catalog_spec(REFERENCE_DENSE_MODEL, cat)
    ratio_ff, group = ref.intermediate_size / ref.hidden_size, ref.num_attention_heads // ref.num_kv_heads

    def shaped(heads: int):
        h = heads * ref.head_dim
        s = replace(ref, id=f"dense-{params_b:g}b", name=f"dense {params_b:g}B", num_layers=int(num_layers),
                    hidden_size=h, num_attention_heads=heads, num_kv_heads=max(1, round(heads / group)),
                    intermediate_size=int(round(h * ratio_ff / 256)) * 256, max_context=0)
        total, active = count_parameters(s)
        return replace(s, params_total=total, params_active=active)

    return min((shaped(n) for n in range(1, 2048)), key=lambda s: abs(s.params_total - params_b * 1e9))


def zero3(cat: Catalog, params_b: float, num_layers: int, gpu: str, seq_len: int, micro_batch: int,
          claimed_from_gpus: int, claimed_to_gpus: int, host_ram_gib_per_node: float, gpus_per_node: int) -> dict:
    from gpucost import memory, speed
    from gpucost.plan import fit_strategies
    from gpucost.quant import get_format

    spec = dense_model(cat, params_b, num_layers)
    g = rec(cat, gpu)
    fmt = get_format(g.training_precision, cat)
    setup = memory.Setup(mode="full", context=int(seq_len), batch=int(micro_batch))
    fits = fit_strategies(spec, fmt, g, setup, max_gpus=4096)
    counts = {name: n for name, (_st, n, _e) in fits.items()}
    tp = fits.get("tp_pp")
    baseline_name, baseline = (tp[0].name, tp[1]) if tp else ("none", None)
    n_off = counts["zero3+cpu"]
    job_cpu = memory.estimate(spec, fmt, replace(setup, zero=3, offload="cpu", gpus=int(claimed_to_gpus))).cpu_gib
    node_cpu = job_cpu * min(int(gpus_per_node), int(claimed_to_gpus)) / int(claimed_to_gpus)
    cpu_fits = node_cpu <= host_ram_gib_per_node
    tps = {n: speed.training_time(spec, g, mode="full", tokens=1e9, gpus=int(n), seq=int(seq_len),
                                  micro_batch=int(micro_batch), zero=3, catalog=cat).tokens_per_s
           for n in {int(claimed_to_gpus), int(claimed_from_gpus)}}
    slow = tps[int(claimed_from_gpus)] / tps[int(claimed_to_gpus)]
    verdict = "holds" if n_off is not None and n_off <= claimed_to_gpus else "overstated"
    computed = {"params_b": spec.params_total / 1e9, "num_layers": num_layers, "hidden_size": spec.hidden_size,
                "min_gpus_dp": counts["dp"], "min_gpus_zero1": counts["zero1"], "min_gpus_zero2": counts["zero2"],
                "min_gpus_zero3": counts["zero3"], "min_gpus_zero3_offload": n_off,
                "min_gpus_without_zero3": baseline, "layout_without_zero3": baseline_name,
                "cpu_ram_per_node_gib": node_cpu, "host_ram_per_node_gib": host_ram_gib_per_node,
                "cpu_offload_fits_host": cpu_fits,
                "hours_per_1b_tokens_at_claimed_to": 1e9 / tps[int(claimed_to_gpus)] / 3600,
                "hours_per_1b_tokens_at_claimed_from": 1e9 / tps[int(claimed_from_gpus)] / 3600,
                "slowdown_x": slow}
    p = {"name": g.name, "base_name": baseline_name, "base": baseline, "z3": counts["zero3"], "off": n_off,
         "to": claimed_to_gpus, "frm": claimed_from_gpus, "slow": slow, "params": params_b,
         "where": T("claim_zero3_100b_to_cpu", ram=node_cpu) if cpu_fits
         else T("claim_zero3_100b_to_nvme", ram=node_cpu, host=host_ram_gib_per_node),
         "n_off": n_off if n_off else T("claims_more_than", n=4096)}
    chart = {"kind": "bar", "x": [baseline_name, "ZeRO-3", T("claims_x_zero3_offload")],
             "y": [baseline, counts["zero3"], n_off], "y_title": T("claims_y_gpus_needed"), "ref": claimed_to_gpus,
             "ref_label": f"{claimed_to_gpus}"}
    return result(computed, verdict, T(f"claim_zero3_100b_c_{verdict}", **p), chart,
                  [gpu_source(cat, gpu), "gpucost.memory (one training-memory model: ZeRO stages, offload, "
                   "tensor/pipeline parallel)", f"architecture shaped like {REFERENCE_DENSE_MODEL} (models.csv)",
                   "host RAM: cloud_offers.csv MemoryGiB of 8-GPU A100 80GB servers"])
