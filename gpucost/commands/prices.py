"""gpucost prices update|history|show: refresh cloud offers from gpuhunt and SkyPilot into the local price
store, a card's price history, and the offers a market can buy."""

from __future__ import annotations

import argparse
import sys

from gpucost.commands import add_market, catalog_for
from gpucost.specs import DEFAULTS

NAME = "prices"
HELP = "refresh cloud prices (gpuhunt, SkyPilot) into the local store; a card's price history and offers"


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="prices_cmd", metavar="update|history|show", parser_class=type(p))
    sub.required = True
    u = sub.add_parser("update", help="pull current on-demand and spot offers into the local price store",
                       description="Pull offers from dstack gpuhunt's published catalog (GPUHUNT_CATALOG_DIR or "
                                   "GPUHUNT_CATALOG_URL to use another copy) and SkyPilot's vms.csv catalogs, "
                                   "map them to catalog GPUs and record them with the time they were seen.")
    u.add_argument("--skypilot", default=None, metavar="DIR|URL",
                   help="folder or URL holding <cloud>/vms.csv (default: skypilot-catalog on GitHub)")
    u.add_argument("--no-skypilot", action="store_true", help="skip SkyPilot")
    u.add_argument("--no-gpuhunt", action="store_true", help="skip gpuhunt")
    u.add_argument("--provider", action="append", metavar="P", help="gpuhunt provider(s) only (repeat)")
    u.add_argument("--json", action="store_true", help="print JSON")
    h = sub.add_parser("history", help="every price of one card, oldest first: the bundled snapshot's offers at "
                                        "the date each held and every observation of `prices update`")
    h.add_argument("--gpu", required=True, metavar="ID")
    h.add_argument("--currency", default=DEFAULTS.currency, metavar="C", help="price currency")
    add_market(h)
    h.add_argument("--json", action="store_true", help="print JSON")
    s = sub.add_parser("show", help="the cheapest and median on-demand price of one card in a market")
    s.add_argument("--gpu", required=True, metavar="ID")
    s.add_argument("--currency", default=DEFAULTS.currency, metavar="C",
                   help="price currency (with --market auto, CNY means the China market, anything else global)")
    add_market(s)
    s.add_argument("--json", action="store_true", help="print JSON")


def _progress(res, done: int, total: int) -> None:
    """One line per provider as it arrives, with how far the update is (failures are listed after, unless
    every source failed)."""
    if not res.error:
        unmapped = f", unmapped: {', '.join(sorted(res.unmapped))}" if res.unmapped else ""
        sys.stderr.write(f"[{done:>2}/{total}] {res.source:8} {res.provider:16} {res.offers} offers, {res.mapped} "
                         f"mapped to catalog GPUs{unmapped}\n")


def run(args: argparse.Namespace):

    cat = catalog_for(args)
    if args.prices_cmd == "update":
        from gpucost import price_store
        from gpucost.price_update import SKYPILOT_URL, update

        out = update(cat, use_gpuhunt=not args.no_gpuhunt, gpuhunt_only=args.provider,
                     skypilot_base=None if args.no_skypilot else (args.skypilot or SKYPILOT_URL),
                     progress=None if args.json else _progress)
        out["store"] = str(price_store.store_path())
        if not args.json and not out["offline"]:
            for p in out["providers"]:
                if p["error"]:
                    sys.stderr.write(f"{p['source']:8} {p['provider']:16} failed ({p['error']}); kept the others\n")
        return out
    gid = cat.gpu_id(args.gpu)
    if args.prices_cmd == "history":
        from gpucost import price_store
        from gpucost.pricing import price_history

        cur = args.currency.upper()
        df = price_history(cat, gid, cur)
        return {"gpu": gid, "currency": cur, "store": str(price_store.store_path()),
                "observations": df.to_dict(orient="records")}
    from gpucost.pricing import cloud_offers, price_index

    cur = args.currency.upper()
    row = price_index(cat, cur).loc[gid]
    offers = cloud_offers(cat, cur)
    mine = offers[offers["gpu_id"] == gid].sort_values("per_gpu")
    from gpucost.offers import market_for

    market = market_for(cat.market, cur)
    return {"gpu": gid, "currency": cur, "market": market.region, "provider_kinds": list(market.kinds),
            "offer_market": row["cloud_market"], "cheapest": row["cloud_hourly"],
            # the offers the cheapest and the median are taken over (the market's, dated within a year of the
            # newest); none when the card is priced outside the market
            "median": row["cloud_median"],
            "offers_in_market": 0 if str(row["cloud_market"]).startswith("outside") or row["cloud_offers"] != row[
                "cloud_offers"] else int(row["cloud_offers"]),
            "cheapest_offer": row["cloud_offer"], "as_of": row["cloud_as_of"],
            "offers": mine[["provider", "kind", "InstanceType", "per_gpu", "market", "in_market", "kind_ok", "as_of"]]
            .to_dict(orient="records")}


def render_text(r) -> str:
    if "providers" in r:
        if r["offline"]:
            return f"offline: no price catalog could be read, nothing changed in {r['store']}"
        lines = [f"{r['offers_seen']} offers seen, {r['observations_added']} new observations in {r['store']}"]
        lines += [f"{c['gpu']:22} {c['market']:8} {c['was_usd'] if c['was_usd'] is not None else '—'} → "
                  f"{c['now_usd'] if c['now_usd'] is not None else '—'} USD/GPU-h" for c in r["changes"][:40]]
        return "\n".join(lines)
    if "observations" in r:
        if not r["observations"]:
            return f"no price of {r['gpu']} in the snapshot or in {r['store']} (run: gpucost prices update)"
        return "\n".join(f"{o['seen'][:19]:19}  {o['origin']:8} {o['provider']:14} {o['InstanceType'][:30]:30} "
                         f"{o['region'][:18]:18} {'spot' if o['spot'] else 'on-demand':9} {o['per_gpu']:.3f} "
                         f"{r['currency']}/GPU-h{'' if o['in_market'] and o['kind_ok'] else '  (outside your market)'}"
                         for o in r["observations"])
    if r["cheapest"] is None or r["cheapest"] != r["cheapest"]:
        return f"no cloud offer for {r['gpu']}"
    from gpucost.markets import PROVIDER_KINDS

    kinds = r["provider_kinds"]
    where = f"the {r['market']} market" + ("" if len(kinds) == len(PROVIDER_KINDS) else f" ({', '.join(kinds)} only)")
    if not r["offers_in_market"]:
        return (f"{r['gpu']}: no offer in {where}; the cheapest elsewhere is {r['cheapest']:.3f} "
                f"{r['currency']}/GPU-h ({r['cheapest_offer']}, {r['as_of']}, region {r['offer_market']})")
    return (f"{r['gpu']}: cheapest {r['cheapest']:.3f} {r['currency']}/GPU-h ({r['cheapest_offer']}, {r['as_of']}), "
            f"median {r['median']:.3f} over {r['offers_in_market']} offers in {where} "
            f"(cheapest offer's region: {r['offer_market']})")
