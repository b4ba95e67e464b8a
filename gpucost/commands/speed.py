"""gpucost speed: decode and prefill tokens/s of a model on a card, and the cost of 1M tokens."""

from __future__ import annotations

import argparse

from gpucost.commands import add_market, add_spec, catalog_for
from gpucost.specs import DEFAULTS, ENGINES

NAME = "speed"
HELP = "decode and prefill tokens/s of a model on a card (bandwidth/compute rooflines, calibrated engines)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--model", metavar="M", help="catalog id, Hugging Face repo id or alias")
    src.add_argument("--config", metavar="FILE", help="a local Hugging Face config.json")
    p.add_argument("--quant", required=True, metavar="Q", help="weight format (bf16, fp8, awq, q4_k_m, …)")
    p.add_argument("--gpu", required=True, metavar="ID", help="catalog id or name ('RTX 4090', 'A100 80GB SXM')")
    add_spec(p, "--gpus", "gpus")
    add_spec(p, "--batch", "batch")
    add_spec(p, "--context", "context", help="tokens in the KV cache (and prompt length for prefill)")
    p.add_argument("--engine", default=None, choices=ENGINES,
                   help=f"default: llama.cpp for GGUF formats, else {DEFAULTS.engine}")
    p.add_argument("--parallel", default=None, choices=["tensor", "layer"], help="multi-GPU split (engine default)")
    p.add_argument("--backend", default=None, choices=["cuda", "rocm", "vulkan", "metal", "sycl", "hpu"],
                   help="llama.cpp's GPU backend (default: the card vendor's: CUDA on NVIDIA, ROCm on AMD)")
    p.add_argument("--link", default="auto", choices=["auto", "nvlink", "pcie"], help="link between the cards")
    add_spec(p, "--cpu-moe", "cpu_moe", metavar="N")
    add_spec(p, "--host-bw", "host_bw_gbps", metavar="GBPS", dest="host_bw_gbps")
    p.add_argument("--currency", default=DEFAULTS.currency, metavar="C", help="currency of the cost per 1M tokens")
    add_market(p)
    p.add_argument("--json", action="store_true", help="print JSON")


def run(args: argparse.Namespace):
    from gpucost.bands import speed_band
    from gpucost.economics import Ownership, token_costs
    from gpucost.models import resolve_model
    from gpucost.quant import get_format
    from gpucost.records import gpu as gpu_record
    from gpucost.speed import speed

    cat = catalog_for(args)
    spec = resolve_model(args.model, config=args.config, catalog=cat)
    fmt = get_format(args.quant, cat)
    gpu = gpu_record(cat, args.gpu)
    engine = args.engine or ("llama.cpp" if fmt.is_gguf else DEFAULTS.engine)
    est = speed(spec, fmt, gpu, gpus=args.gpus, batch=args.batch, context=args.context, engine=engine,
                parallel=args.parallel, link=args.link, catalog=cat, backend=args.backend, cpu_moe=args.cpu_moe,
                host_bw_gbps=args.host_bw_gbps)
    out = est.to_dict()
    out["band"] = speed_band(est, cat)
    own = Ownership()
    out["cost_per_1m_tokens"] = token_costs(cat, gpu.id, est.decode_tokens_per_s, args.gpus, args.currency, own)
    out["currency"] = args.currency.upper()
    out["cost_assumptions"] = {"amortize_years": own.years, "utilization": own.utilization,
                               "power": "card TDP at the market's default electricity price"}
    return out


def _fmt(v, nd=1) -> str:
    return "—" if v is None else f"{v:,.{nd}f}"


def render_text(r) -> str:
    lines = [f"{r['model']} · {r['quant']} on {r['gpus']} × {r['gpu']} ({r['engine']}, {r['parallel']}, "
             f"batch {r['batch']}, context {r['context']})",
             f"decode  {_fmt(r['decode_tokens_per_s'])} tokens/s ({_fmt(r['decode_tokens_per_s_per_seq'])} per sequence), "
             f"bound: {r['bound']}",
             f"prefill {_fmt(r['prefill_tokens_per_s'], 0)} tokens/s",
             *[f"{k.split('_')[0]} {b['band']} (measured / estimated on {b['rows']} published rows, {b['engine']}): "
               f"{_fmt(b['low'])}–{_fmt(b['high'])} tokens/s" for k, b in r.get("band", {}).items()],
             f"rooflines: bandwidth {_fmt(r['bandwidth_roofline_tokens_per_s'])}, compute "
             f"{_fmt(r['compute_roofline_tokens_per_s'])} tokens/s",
             "cost per 1M tokens [" + r["currency"] + "]: " + ", ".join(
                 f"{k} {_fmt(v, 3)}" for k, v in r["cost_per_1m_tokens"].items())]
    lines += [f"note: {n}" for n in r["notes"]]
    return "\n".join(lines)
