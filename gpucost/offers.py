"""Cloud offers from the catalogs people publish, in the user's market.

* **Markets**: an offer's market comes from its region (and currency): ``china`` (a CNY price or a
  mainland region), ``us``, ``eu``, ``apac``, else ``other``; "global" regions and marketplaces with no
  region count for every market but China. Prices a page or command uses are chosen within the user's market when the
  card has offers there (as its street prices are: one market for renting and buying), else from anywhere, named.
* **Provider kinds**: hyperscaler, neocloud, marketplace.
* **Names**: a catalog's accelerator name ("A100", "RTX4070", "H100") is resolved to a gpus.csv id with
  the card's memory and the instance name (PCIe, NVL), never by guessing: an ambiguous or unknown name is
  reported as unmapped.
* **Formats**: SkyPilot's ``vms.csv`` (read by header: InstanceType, AcceleratorName, AcceleratorCount,
  Price, SpotPrice, Region, GpuInfo) and dstack gpuhunt's catalog items (its v2 CSV, read with gpuhunt's
  own ``storage.load``).
"""

from __future__ import annotations

import ast
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass

import pandas as pd

from gpucost.catalog import Catalog, derived, normalize_name
from gpucost.markets import (  # noqa: F401 - re-exported: the market names offers are read with
    AUTO,
    MARKET_CHOICES,
    MARKETS,
    PROVIDER_KINDS,
    USER_MARKETS,
    Market,
    default_market,
    in_market,
    market_for,
    market_of,
    provider_kind,
)
from gpucost.records import gpu_records
from gpucost.serialize import Record, number

# --------------------------------------------------------------------------------------------------
# Accelerator names → gpus.csv ids
# --------------------------------------------------------------------------------------------------

def _name_keys(catalog: Catalog) -> list[tuple[str, str]]:
    def build(gpus):
        out = []
        for gid, name, aliases in zip(gpus["id"], gpus["name"], gpus["aliases"].fillna(""), strict=True):
            for k in {gid, name, *[a for a in str(aliases).split(";") if a.strip()]}:
                out.append((normalize_name(k), str(gid)))
        return out
    return derived(catalog.gpus, "offer_name_keys", build)


def resolve_gpu(name: str, memory_gib: float | None, instance: str, catalog: Catalog) -> str | None:
    """The gpus.csv id of an accelerator as a price catalog names it, or None when unknown or ambiguous."""
    key = normalize_name(name)
    if len(key) < 2:
        return None
    keys = _name_keys(catalog)
    exact = {gid for k, gid in keys if k == key}
    cands = exact | {gid for k, gid in keys if len(key) >= 3 and k.startswith(key)}
    recs = gpu_records(catalog)
    if memory_gib and memory_gib > 0:  # GB or GiB as the catalog writes it: 12 % tolerance
        cands = {g for g in cands if abs(recs[g].vram_gib - memory_gib) <= 0.12 * memory_gib}
    text = f"{name} {instance}".lower()
    if len(cands) > 1 and "nvl" not in key:
        cands = {g for g in cands if "nvl" not in g} or cands
    if len(cands) > 1:
        pcie = "pci" in text
        cands = {g for g in cands if (recs[g].form_factor == "pcie") == pcie} or cands
    if len(cands) > 1 and exact & cands:
        cands = exact & cands
    return next(iter(cands)) if len(cands) == 1 else None


# --------------------------------------------------------------------------------------------------
# Offers
# --------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Offer(Record):
    """One price of one instance: per GPU-hour, in its currency, observed at a time."""

    provider: str
    provider_kind: str
    instance: str
    gpu_name: str
    gpu_id: str | None        # None: not resolved (reported, not priced)
    gpu_count: float
    region: str
    market: str
    spot: bool
    price_per_gpu_hour: float
    currency: str
    observed_at: str          # ISO date-time the price was valid (read from the catalog at that time)
    source: str


def gpu_memory_candidates(info: str) -> list[float]:
    """Per-GPU memory [GiB] a SkyPilot GpuInfo (a Python or JSON literal) may mean, most likely first: the
    catalogs disagree — MemoryInfo.SizeInMiB is per GPU (lambda), for all GPUs (vast, primeintellect) or
    in GB (runpod, shadeform) — so both readings are tried against the card's memory by the resolver."""
    text = str(info or "").strip()
    if not text or text.lower() == "nan":
        return []
    data = None
    for parse in (ast.literal_eval, json.loads, lambda t: json.loads(t.replace('""', '"').strip('"'))):
        try:
            data = parse(text)
            break
        except (ValueError, SyntaxError, TypeError):
            continue
    if not isinstance(data, dict):
        return []
    gpus = data.get("Gpus")
    first = gpus[0] if isinstance(gpus, list) and gpus and isinstance(gpus[0], dict) else {}
    size = number((first.get("MemoryInfo") or {}).get("SizeInMiB"))
    count = max(number(first.get("Count")) or 1.0, 1.0)
    if size is None or size <= 0:
        return []
    mib = [size, size / count] if count > 1 else [size]
    out = [m / 1024 for m in mib] + [m for m in mib if m < 1024]   # MiB, else a GB figure written as MiB
    return [m for m in dict.fromkeys(out) if m >= 1]


def skypilot_offers(vms: pd.DataFrame, provider: str, observed_at: str, source: str,
                    catalog: Catalog) -> list[Offer]:
    """Offers of one SkyPilot ``vms.csv`` (read by header; on-demand and spot rows)."""
    out = []
    cols = set(vms.columns)
    for r in vms.to_dict(orient="records"):
        name = str(r.get("AcceleratorName") or "").strip()
        count = number(r.get("AcceleratorCount"))
        if not name or name.lower() == "nan" or not count or count <= 0:
            continue
        inst = str(r.get("InstanceType") or "")
        info = str(r.get("GpuInfo") or "") if "GpuInfo" in cols else ""
        mems = gpu_memory_candidates(info)
        hint = f"{inst} {info}"  # GpuInfo's own name may say PCIe ('A100 PCIe' on RunPod)
        gid = next((g for g in (resolve_gpu(name, m, hint, catalog) for m in mems) if g), None) if mems \
            else resolve_gpu(name, None, hint, catalog)
        region = str(r.get("Region") or "")
        for spot, col in ((False, "Price"), (True, "SpotPrice")):
            price = number(r.get(col))
            if price is None or not math.isfinite(price) or price <= 0:
                continue
            out.append(Offer(provider=provider, provider_kind=provider_kind(provider), instance=inst, gpu_name=name,
                             gpu_id=gid, gpu_count=count, region=region, market=market_of(region), spot=spot,
                             price_per_gpu_hour=price / count, currency="USD", observed_at=observed_at,
                             source=source))
    return out


def gpuhunt_offers(items: Iterable, observed_at: str, source: str, catalog: Catalog) -> list[Offer]:
    """Offers of gpuhunt catalog items (``gpuhunt.CatalogItem``: price per instance-hour in USD)."""
    out = []
    for it in items:
        count = float(getattr(it, "gpu_count", 0) or 0)
        name = str(getattr(it, "gpu_name", "") or "")
        price = number(getattr(it, "price", None))
        if count <= 0 or not name or price is None or not math.isfinite(price) or price <= 0:
            continue
        provider = str(it.provider)
        inst = str(it.instance_name)
        region = str(it.location or "")
        out.append(Offer(provider=provider, provider_kind=provider_kind(provider), instance=inst, gpu_name=name,
                         gpu_id=resolve_gpu(name, number(it.gpu_memory), inst, catalog), gpu_count=count,
                         region=region, market=market_of(region), spot=bool(it.spot),
                         price_per_gpu_hour=price / count, currency="USD", observed_at=observed_at,
                         source=source))
    return out


__all__ = ["MARKETS", "USER_MARKETS", "MARKET_CHOICES", "PROVIDER_KINDS", "Market", "market_for", "Offer", "market_of", "default_market", "in_market", "provider_kind", "resolve_gpu",
           "skypilot_offers", "gpuhunt_offers"]
