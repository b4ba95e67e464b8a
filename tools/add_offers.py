"""Add transcribed cloud offers to the bundled snapshot (data/cloud_offers.csv), checked the way
``gpucost prices update`` checks what it pulls.

    PYTHONPATH=. .venv/bin/python tools/add_offers.py STAGED.csv [STAGED.csv ...] [--write]

A staged file has the snapshot's columns (SkyPilot's names plus currency, gpu_id, source, as_of, notes,
provider_kind, retrieved_on). Each row goes through the update's own steps: its accelerator name is
resolved to a catalog GPU by :func:`gpucost.offers.resolve_gpu`, or as the snapshot already maps the same
instance (a row whose transcribed gpu_id the resolver
contradicts is reported and left out; a name the resolver cannot place keeps the transcriber's id, whose
notes say how the card was identified), its market by :func:`gpucost.markets.market_of` and its provider kind by
:func:`gpucost.markets.provider_kind` when the row names none. Rows without a catalog GPU, an on-demand or
spot price, or a date the price held are left out and listed. Of one provider's offers of one card (same
count, same kind), only the newest observation is kept. Without ``--write`` nothing is written.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from gpucost.catalog import Catalog, bundled_data_dir
from gpucost.markets import market_of, provider_kind
from gpucost.offers import resolve_gpu

#: regions a transcriber wrote that mean "no region stated" (the offer counts in every market but China)
NO_REGION = {"", "global", "any", "secure", "community", "nan"}


def check(staged: pd.DataFrame, catalog: Catalog, bundled: pd.DataFrame | None = None) -> tuple[pd.DataFrame, list[str]]:
    # an instance the snapshot already maps (from its own catalog row, e.g. SkyPilot's GpuInfo with the
    # card's memory and form factor) resolves to that card
    known = {} if bundled is None else dict(zip(zip(bundled["provider"], bundled["InstanceType"], strict=True),
                                                bundled["gpu_id"], strict=True))
    keep, why = [], []
    for i, r in staged.fillna("").iterrows():
        row = dict(r)
        label = f"{row['provider']} {row['InstanceType']} ({row['as_of'] or 'undated'})"
        if not str(row["as_of"]).strip():
            why.append(f"{label}: no date the price held")
            continue
        if not (str(row["Price"]).strip() or str(row["SpotPrice"]).strip()):
            why.append(f"{label}: no price")
            continue
        if str(row["Region"]).strip().lower() in NO_REGION:
            row["Region"] = "global"
        resolved = known.get((row["provider"], row["InstanceType"])) or resolve_gpu(
            str(row["AcceleratorName"]), None, str(row["InstanceType"]), catalog)
        gid = str(row["gpu_id"]).strip()
        if not gid:
            why.append(f"{label}: no catalog GPU ({row['AcceleratorName']!r}, resolver: {resolved})")
            continue
        if resolved is not None and resolved != gid:
            why.append(f"{label}: transcribed as {gid}, the resolver says {resolved}")
            continue
        if gid not in set(catalog.gpus["id"]):
            why.append(f"{label}: {gid} is not in gpus.csv")
            continue
        if not str(row["provider_kind"]).strip():
            row["provider_kind"] = provider_kind(str(row["provider"]))
        row["_market"] = market_of(str(row["Region"]), str(row["currency"]))
        row["_order"] = i
        keep.append(row)
    out = pd.DataFrame(keep)
    if len(out):
        out = out.sort_values("as_of").drop_duplicates(
            ["provider", "gpu_id", "AcceleratorCount", "provider_kind", "_market"], keep="last")
        out = out.sort_values("_order").drop(columns=["_market", "_order"])
    return out, why


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("staged", nargs="+", type=Path)
    ap.add_argument("--write", action="store_true", help="append the checked rows to data/cloud_offers.csv")
    args = ap.parse_args(argv)
    catalog = Catalog()
    path = bundled_data_dir() / "cloud_offers.csv"
    bundled = pd.read_csv(path, dtype=str, keep_default_na=False)
    staged = pd.concat([pd.read_csv(p, dtype=str, keep_default_na=False) for p in args.staged],
                       ignore_index=True)[list(bundled.columns)]
    rows, why = check(staged, catalog, bundled)
    key = ["provider", "InstanceType", "Region", "as_of"]   # a newer observation of an offer is added
    known = set(map(tuple, bundled[key].to_numpy()))
    new = rows[[tuple(k) not in known for k in rows[key].to_numpy()]] if len(rows) else rows
    for line in why:
        print("left out:", line, file=sys.stderr)
    print(f"{len(new)} offers to add ({len(staged)} staged, {len(why)} left out, "
          f"{len(rows) - len(new)} already bundled at that date); providers: {', '.join(sorted(set(new.get('provider', []))))}")
    if args.write and len(new):
        pd.concat([bundled, new], ignore_index=True).to_csv(path, index=False)
        print(f"written: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
