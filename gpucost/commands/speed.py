"""gpucost speed: decode and prefill tokens/s of a model on a card, and the cost of 1M tokens."""

from __future__ import annotations

import argparse

NAME = "speed"
HELP = "decode and prefill tokens/s of a model on a card (bandwidth/compute rooflines, calibrated engines)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--model", metavar="M", help="catalog id, Hugging Face repo id or alias")
    src.add_argument("--config", metavar="FILE", help="a local Hugging Face config.json")
    p.add_argument("--quant", required=True, metavar="Q", help="weight format (bf16, fp8, awq, q4_k_m, …)")
    p.add_argument("--gpu", required=True, metavar="ID", help="catalog id or name ('RTX 4090', 'A100 80GB SXM')")
    p.add_argument("--gpus", type=int, default=1, metavar="N", help="number of cards")
    p.add_argument("--batch", type=int, default=1, metavar="N", help="concurrent sequences")
    p.add_argument("--context", type=int, default=1024, metavar="N", help="tokens in the KV cache (and prompt length "
                                                                          "for prefill)")
    p.add_argument("--engine", default=None, choices=["transformers", "vllm", "llama.cpp", "tensorrt-llm"],
                   help="default: llama.cpp for GGUF formats, else vllm")
    p.add_argument("--parallel", default=None, choices=["tensor", "layer"], help="multi-GPU split (engine default)")
    p.add_argument("--link", default="auto", choices=["auto", "nvlink", "pcie"], help="link between the cards")
    p.add_argument("--currency", default="USD", metavar="C", help="currency of the cost per 1M tokens")
    p.add_argument("--json", action="store_true", help="print JSON")


def run(args: argparse.Namespace):
    import math

    from gpucost.cards import card_table
    from gpucost.catalog import Catalog
    from gpucost.models import resolve_model
    from gpucost.quant import get_format
    from gpucost.speed import DEFAULT_AMORTIZE_YEARS, DEFAULT_UTILIZATION, cost_per_million_tokens, speed

    cat = Catalog()
    spec = resolve_model(args.model, config=args.config, catalog=cat)
    fmt = get_format(args.quant, cat)
    gid = cat.gpu_id(args.gpu)
    table = card_table(cat, args.currency.upper()).set_index("id")
    gpu = table.loc[gid].to_dict()
    gpu["id"] = gid
    engine = args.engine or ("llama.cpp" if fmt.is_gguf else "vllm")
    est = speed(spec, fmt, gpu, gpus=args.gpus, batch=args.batch, context=args.context, engine=engine,
                parallel=args.parallel, link=args.link, catalog=cat)
    out = est.to_dict()
    costs = {}
    for basis, col in (("cloud", "cloud_hourly"), ("new", "price_new"), ("used", "price_used")):
        price = gpu.get(col)
        if price is None or (isinstance(price, float) and math.isnan(price)):
            costs[basis] = None
        else:
            costs[basis] = float(cost_per_million_tokens(est.decode_tokens_per_s, args.gpus, basis=basis, price=price))
    out["cost_per_1m_tokens"] = costs
    out["currency"] = args.currency.upper()
    out["cost_assumptions"] = {"amortize_years": DEFAULT_AMORTIZE_YEARS, "utilization": DEFAULT_UTILIZATION,
                               "power": "not included"}
    return out


def _fmt(v, nd=1) -> str:
    return "—" if v is None else f"{v:,.{nd}f}"


def render_text(r) -> str:
    lines = [f"{r['model']} · {r['quant']} on {r['gpus']} × {r['gpu']} ({r['engine']}, {r['parallel']}, "
             f"batch {r['batch']}, context {r['context']})",
             f"decode  {_fmt(r['decode_tokens_per_s'])} tokens/s ({_fmt(r['decode_tokens_per_s_per_seq'])} per sequence), "
             f"bound: {r['bound']}",
             f"prefill {_fmt(r['prefill_tokens_per_s'], 0)} tokens/s",
             f"rooflines: bandwidth {_fmt(r['bandwidth_roofline_tokens_per_s'])}, compute "
             f"{_fmt(r['compute_roofline_tokens_per_s'])} tokens/s",
             "cost per 1M tokens [" + r["currency"] + "]: " + ", ".join(
                 f"{k} {_fmt(v, 3)}" for k, v in r["cost_per_1m_tokens"].items())]
    lines += [f"note: {n}" for n in r["notes"]]
    return "\n".join(lines)
