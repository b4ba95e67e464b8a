"""gpucost serve: cards, capacity and cost per 1M input/output tokens to serve a load within latency
targets, next to the APIs of the same model."""

from __future__ import annotations

import argparse

from gpucost.commands import add_market, add_spec, catalog_for
from gpucost.specs import DEFAULTS, ENGINES

NAME = "serve"
HELP = "serving a load (requests/s, tokens per request, TTFT/TPOT targets): cards, capacity, cost per 1M tokens"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, metavar="M", help="catalog id, Hugging Face repo id or alias")
    p.add_argument("--gpu", required=True, metavar="ID", help="catalog id or name")
    add_spec(p, "--gpus", "gpus", help="cards per replica (tensor parallel)")
    p.add_argument("--engine", default=None, choices=ENGINES, help=f"default: llama.cpp for GGUF, else {DEFAULTS.engine}")
    p.add_argument("--quant", default="bf16", metavar="Q", help="weight format (default bf16)")
    p.add_argument("--kv-dtype", default="fp16", choices=["fp16", "bf16", "fp8"], help="KV-cache element type")
    add_spec(p, "--rps", "requests_per_s", metavar="R")
    add_spec(p, "--tokens-per-day", "tokens_per_day", metavar="T")
    add_spec(p, "--peak-ratio", "peak_ratio", metavar="X")
    add_spec(p, "--input-tokens", "input_tokens")
    add_spec(p, "--output-tokens", "output_tokens")
    add_spec(p, "--prefix-hit", "prefix_hit", metavar="F")
    add_spec(p, "--ttft-ms", "ttft_ms", metavar="MS")
    add_spec(p, "--tpot-ms", "tpot_ms", metavar="MS")
    add_spec(p, "--ttft-stat", "ttft_stat")
    p.add_argument("--currency", default=DEFAULTS.currency, metavar="C")
    add_market(p)
    p.add_argument("--fits", action="store_true",
                   help="instead of a load: what fits one replica — the most concurrent sequences per context "
                        "length, and the longest context per number of concurrent users")
    p.add_argument("--json", action="store_true", help="print JSON")


def run(args: argparse.Namespace):
    from gpucost.models import resolve_model
    from gpucost.quant import get_format
    from gpucost.records import gpu as gpu_record
    from gpucost.serving import Load, fit_table, plan_serving

    cat = catalog_for(args)
    spec = resolve_model(args.model, catalog=cat)
    fmt = get_format(args.quant, cat)
    engine = args.engine or ("llama.cpp" if fmt.is_gguf else DEFAULTS.engine)
    if args.fits:
        return fit_table(spec, fmt, gpu_record(cat, args.gpu), gpus=args.gpus, engine=engine,
                         kv_dtype=args.kv_dtype).to_dict()
    if args.tokens_per_day is not None:
        load = Load.from_tokens_per_day(args.tokens_per_day, args.input_tokens, args.output_tokens,
                                        args.prefix_hit, args.peak_ratio)
    else:
        load = Load(args.rps, args.input_tokens, args.output_tokens, args.prefix_hit, args.peak_ratio)
    return plan_serving(spec, fmt, gpu_record(cat, args.gpu), load, gpus=args.gpus, engine=engine,
                        kv_dtype=args.kv_dtype, ttft_ms=args.ttft_ms, tpot_ms=args.tpot_ms, catalog=cat,
                        currency=args.currency.upper(), ttft_stat=args.ttft_stat).to_dict()


def _m(v) -> str:
    return "—" if v is None else f"{v:,.3f}"


def _render_fits(r) -> str:
    lines = [f"{r['model']} · {r['quant']} · {r['engine']} · KV {r['kv_dtype']} on {r['gpus_per_replica']} × "
             f"{r['gpu']} (model maximum {r['max_context']:,} tokens)",
             "context [tokens]  KV per sequence [GiB]  free for KV [GiB]  concurrent sequences"]
    lines += [f"{x['context']:>16,}  {x['kv_per_sequence_gib']:>21.3f}  {x['kv_pool_gib']:>17.1f}  "
              f"{x['max_concurrency']:>20,}" for x in r["by_context"]]
    lines.append("concurrent users  longest context [tokens]")
    lines += [f"{x['concurrency']:>16,}  {x['longest_context']:>24,}" for x in r["by_concurrency"]]
    return "\n".join(lines)


def render_text(r) -> str:
    if "by_context" in r:
        return _render_fits(r)
    ld = r["load"]
    lines = [f"{r['model']} · {r['quant']} · {r['engine']} on replicas of {r['gpus_per_replica']} × {r['gpu']}: "
             f"{ld['requests_per_s']:g} req/s × ({ld['input_tokens']} in + {ld['output_tokens']} out) tokens",
             f"KV cache: {r['kv_per_sequence_gib']:.3f} GiB per sequence, {r['kv_pool_gib']:.1f} GiB free → at most "
             f"{r['max_concurrency']} sequences per replica"]
    pt = r["point"]
    if pt is None:
        lines.append("no configuration meets the targets: " + "; ".join(r["notes"]))
        return "\n".join(lines)
    band = r["capacity_band"]
    lines += [f"operating point: {pt['batch']} in flight, TPOT {pt['tpot_ms']:.1f} ms, TTFT {pt['ttft_ms']:.0f} ms, "
              f"{pt['requests_per_s']:.2f} req/s per replica"
              + (f" (8 in 10 published runs: {band['low']:.2f}–{band['high']:.2f})" if band else ""),
              f"fleet: {r['replicas']} replica(s) = {r['cards']} card(s), {r['utilization'] * 100:.0f} % utilized; "
              f"at the peak, prefills take {r['prefill_utilization'] * 100:.0f} % of a replica and the "
              f"{'mean' if r['ttft_stat'] == 'mean' else r['ttft_stat']} TTFT with queueing is {r['ttft_queued_ms']:,.0f} ms",
              f"cost per 1M tokens [{r['currency']}] input / output: "
              + ", ".join(f"{b} {_m(r['cost_per_1m_input'][b])} / {_m(r['cost_per_1m_output'][b])}"
                          for b in r["cost_per_1m_input"]),
              f"per month [{r['currency']}]: " + ", ".join(f"{b} {_m(v)}" for b, v in r["monthly_cost"].items())]
    for basis, e in r.get("break_even", {}).items():
        lines.append(f"break-even with {e['api']} ({basis}): one replica is cheaper above {e['requests_per_s']:.2f} "
                     f"req/s on average ({e['tokens_per_month'] / 1e6:,.0f}M tokens a month, "
                     f"{e['utilization'] * 100:.0f} % of its capacity)")
    for a in r["apis"][:8]:
        lines.append(f"API {a['provider']} {a['api_model']} ({a['tier']}): {a['input_per_1m']:.3f} / "
                     f"{a['output_per_1m']:.3f} per 1M in/out → {a['monthly_cost']:,.0f} per month ({a['as_of']})")
    lines += [f"note: {n}" for n in r["notes"]]
    return "\n".join(lines)
