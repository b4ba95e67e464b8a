"""gpucost claims: common GPU-cost rules of thumb, each computed with gpucost's engines, with a verdict."""

from __future__ import annotations

import argparse

from gpucost.commands import add_market, catalog_for

NAME = "claims"
HELP = "check common GPU-cost rules of thumb (spot discounts, 8-bit memory, ZeRO-3, …) with a computed verdict"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--id", action="append", default=None, metavar="ID",
                   help="only this claim (repeatable); --list shows the ids and their inputs")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="change an input: INPUT=VALUE for every claim that has it (currency=USD), or "
                        "CLAIM.INPUT=VALUE for one (reserved_1y_saving.utilization_pct=50); repeatable")
    p.add_argument("--currency", default=None, metavar="C", help="money in this currency (default CNY, the article's)")
    add_market(p)
    p.add_argument("--list", action="store_true", help="list the claims and their inputs with defaults")
    p.add_argument("--json", action="store_true", help="print JSON")


def run(args: argparse.Namespace):
    from gpucost import claims

    cat = catalog_for(args)
    ids = args.id
    if ids:
        for i in ids:
            claims.get_claim(i)
    if args.list:
        out = []
        for cid in ids or claims.claim_ids():
            d = claims.get_claim(cid)
            defaults = claims.default_inputs(cid, cat)
            out.append({"id": cid, "claim": d.claim, "claim_zh": d.claim_zh,
                        "inputs": [{**s.to_dict(), "default": defaults[s.name]} for s in d.inputs]})
        return {"claims": out}
    overrides: dict = {}
    if args.currency:
        cat.fx_rate(args.currency)  # refused even when the chosen claims have no money in them
        overrides["currency"] = args.currency
    for text in args.set:
        k, v = claims.parse_setting(text)
        overrides[k] = v
    results = claims.evaluate_all(cat, ids=ids, **overrides)
    return [r.to_dict() for r in results]


def _fmt(v) -> str:
    if isinstance(v, bool) or v is None:
        return "—" if v is None else str(v).lower()
    if isinstance(v, float):
        return "—" if v != v else (f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}")
    return str(v)


def render_text(result) -> str:
    if isinstance(result, dict) and "claims" in result:
        lines = []
        for c in result["claims"]:
            lines.append(f"{c['id']}: {c['claim']}")
            for s in c["inputs"]:
                unit = f" [{s['unit']}]" if s["unit"] else ""
                lines.append(f"    {s['name']} = {_fmt(s['default'])}{unit}")
        return "\n".join(lines)
    lines = [f"{'claim':26} {'verdict':12} key numbers"]
    for r in result:
        nums = ", ".join(f"{n['label']} {_fmt(n['value'])}{(' ' + n['unit']) if n['unit'] else ''}"
                         for n in r["numbers"][:3])
        lines.append(f"{r['id']:26} {r['verdict']:12} {nums}")
        lines.append(f"{'':26} {'':12} {r['condition']}")
    return "\n".join(lines)
