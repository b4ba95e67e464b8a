"""gpucost gpus: the accelerator catalog with prices, filtered and sorted, or ranked for a need."""

from __future__ import annotations

import argparse

from gpucost.commands import add_market, add_spec, catalog_for
from gpucost.precisions import PRECISION_COLUMN

NAME = "gpus"
HELP = "list the GPU catalog with new, used and cloud prices (or rank cards for a need)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_spec(p, "--min-vram", "min_vram_gib", metavar="GIB")
    p.add_argument("--vendor", metavar="V", help="NVIDIA, AMD, Intel or Huawei")
    p.add_argument("--sort", default=None, metavar="METRIC",
                   help="vram_gib (default), mem_bandwidth_gbps, bf16_tflops, price_new, tflops_per_1k, "
                        "gbps_per_1k, vram_per_1k, tflops_per_watt, …")
    p.add_argument("--currency", default="USD", metavar="C", help="display currency (USD, CNY, EUR, …)")
    add_market(p)
    p.add_argument("--rank", action="store_true",
                   help="rank cards for a need (with --precision, --basis, --budget) instead of listing")
    p.add_argument("--precision", default="bf16", choices=list(PRECISION_COLUMN))
    p.add_argument("--basis", default="new", choices=["new", "used", "cloud"], help="price basis for --rank")
    add_spec(p, "--budget", "price", metavar="PRICE", help="max price per card (per GPU-hour for cloud)")
    p.add_argument("--host", default="any", choices=["any", "pc", "server"],
                   help="where the card runs: pc (a PCIe card for a desktop/workstation) or server "
                        "(PCIe server, SXM/OAM baseboard, rack); for --rank")
    p.add_argument("--json", action="store_true", help="print JSON")


def run(args: argparse.Namespace):
    from gpucost.cards import Need, gpu_list, rank_cards

    cat = catalog_for(args)
    if args.rank:
        vendors = (args.vendor,) if args.vendor else ()
        need = Need(min_vram_gib=args.min_vram, precision=args.precision, budget=args.budget,
                    price_basis=args.basis, currency=args.currency.upper(), vendors=vendors, host=args.host)
        return rank_cards(need, cat, sort_by=args.sort or "tflops_per_1k")
    return gpu_list(cat, currency=args.currency, min_vram_gib=args.min_vram, vendor=args.vendor,
                    sort_by=args.sort or "vram_gib")


def _fmt(v, nd=0) -> str:
    return "—" if v is None or v != v else f"{v:,.{nd}f}"


def render_text(result) -> str:
    if hasattr(result, "cards"):
        lines = [f"{'#':>3} {'card':28} {'VRAM':>6} {'price':>10} {'TFLOPS/1k':>10} {'GB/s/1k':>9}  frontier"]
        for c in result.cards:
            lines.append(f"{c.rank:>3} {c.name[:28]:28} {c.vram_gib:>6g} {_fmt(c.price):>10} "
                         f"{c.tflops_per_1k:>10.2f} {c.gbps_per_1k:>9.1f}  {'*' if c.on_frontier else ''}")
        return "\n".join(lines)
    lines = [f"{'id':22} {'VRAM GiB':>8} {'GB/s':>6} {'BF16':>7} {'TDP':>5} {'new':>10} {'used':>10} "
             f"{'cloud/h':>8}"]
    for r in result:
        lines.append(f"{r['id'][:22]:22} {r['vram_gib']:>8g} {_fmt(r['mem_bandwidth_gbps']):>6} "
                     f"{_fmt(r['bf16_tflops'], 1):>7} {_fmt(r['tdp_w']):>5} {_fmt(r['price_new']):>10} "
                     f"{_fmt(r['price_used']):>10} {_fmt(r['cloud_hourly'], 2):>8}")
    lines.append(f"prices in {result[0]['currency'] if result else ''}")
    return "\n".join(lines)
