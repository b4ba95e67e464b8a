"""``gpucost prices update``: pull current on-demand and spot offers from dstack's gpuhunt catalog (its
offline providers, published hourly) and SkyPilot's ``vms.csv`` catalogs, map them to gpus.csv ids and
add them to the local price store. A provider that fails is reported and the others go on; with no
network at all nothing is changed and one line says so.

Sources: ``gpuhunt`` honours ``GPUHUNT_CATALOG_DIR`` (a folder of ``<provider>.csv`` in its v2 format) and
``GPUHUNT_CATALOG_URL``; SkyPilot is a folder or URL with ``<cloud>/vms.csv`` under it.
"""

from __future__ import annotations

import io
import logging
import os
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from gpucost.catalog import Catalog
from gpucost.offers import Offer, gpuhunt_offers, skypilot_offers

SKYPILOT_URL = "https://raw.githubusercontent.com/skypilot-org/skypilot-catalog/master/catalogs/v9"
#: SkyPilot clouds with GPU offers (catalogs/v9/<cloud>/vms.csv)
SKYPILOT_CLOUDS = ("aws", "gcp", "azure", "oci", "lambda", "runpod", "nebius", "vast", "cudo", "fluidstack",
                   "paperspace", "ibm", "hyperbolic", "shadeform", "primeintellect", "seeweb", "verda", "mithril",
                   "do", "yotta")
TIMEOUT_S = 20


@dataclass
class ProviderResult:
    source: str          # gpuhunt | skypilot
    provider: str
    offers: int = 0
    mapped: int = 0
    unmapped: dict[str, int] = field(default_factory=dict)   # accelerator name → offers
    error: str = ""

    def to_dict(self) -> dict:
        return {"source": self.source, "provider": self.provider, "offers": self.offers, "mapped": self.mapped,
                "unmapped": self.unmapped, "error": self.error}


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _tally(res: ProviderResult, offers: list[Offer]) -> list[Offer]:
    res.offers = len(offers)
    res.mapped = sum(o.gpu_id is not None for o in offers)
    for o in offers:
        if o.gpu_id is None:
            res.unmapped[o.gpu_name] = res.unmapped.get(o.gpu_name, 0) + 1
    return offers


def _read_text(location: str) -> str:
    if location.startswith(("http://", "https://")):
        with urllib.request.urlopen(location, timeout=TIMEOUT_S) as resp:  # noqa: S310 - a catalog URL
            return resp.read().decode("utf-8")
    return Path(location).read_text(encoding="utf-8")


def skypilot(base: str, clouds: Iterable[str], catalog: Catalog, observed_at: str) -> Iterable[
        tuple[ProviderResult, list[Offer]]]:
    """Each cloud's offers from ``<base>/<cloud>/vms.csv`` (a folder or a URL)."""
    local = not base.startswith(("http://", "https://"))
    for cloud in clouds:
        res = ProviderResult("skypilot", cloud)
        loc = str(Path(base) / cloud / "vms.csv") if local else f"{base.rstrip('/')}/{cloud}/vms.csv"
        if local and not Path(loc).is_file():
            continue
        try:
            vms = pd.read_csv(io.StringIO(_read_text(loc)), dtype=str, keep_default_na=False)
            when = observed_at if not local else datetime.fromtimestamp(
                Path(loc).stat().st_mtime, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            yield res, _tally(res, skypilot_offers(vms, cloud, when, f"SkyPilot catalog {loc}", catalog))
        except Exception as exc:  # noqa: BLE001 - one provider's failure must not stop the others
            res.error = f"{type(exc).__name__}: {exc}"[:200]
            yield res, []


def gpuhunt_providers() -> list[str]:
    from gpuhunt._internal.catalog import OFFLINE_PROVIDERS

    return list(OFFLINE_PROVIDERS)


def gpuhunt(providers: Iterable[str], catalog: Catalog, observed_at: str) -> Iterable[
        tuple[ProviderResult, list[Offer]]]:
    """Each gpuhunt offline provider's offers (its published catalog, or ``GPUHUNT_CATALOG_DIR``)."""
    import gpuhunt as gh
    from gpuhunt._internal import storage

    logging.getLogger("gpuhunt").setLevel(logging.CRITICAL)   # failures are reported per provider below
    local = os.environ.get("GPUHUNT_CATALOG_DIR") or None
    cat = None
    for p in providers:
        res = ProviderResult("gpuhunt", p)
        try:
            if local is not None:
                path = Path(local) / f"{p}.csv"
                if not path.is_file():
                    continue
                with open(path, encoding="utf-8", newline="") as fh:
                    items = list(storage.load(fh, provider=p))
            else:
                if cat is None:
                    cat = gh.Catalog(balance_resources=False, auto_reload=False)
                    cat.load()
                if p not in cat.catalog:
                    raise RuntimeError("its catalog could not be downloaded")
                items = cat.query(provider=[p])
            src = f"dstack gpuhunt catalog ({p}{', ' + local if local else ''})"
            yield res, _tally(res, gpuhunt_offers(items, observed_at, src, catalog))
        except Exception as exc:  # noqa: BLE001
            res.error = f"{type(exc).__name__}: {exc}"[:200]
            yield res, []


def update(catalog: Catalog, *, use_gpuhunt: bool = True, gpuhunt_only: Iterable[str] | None = None,
           skypilot_base: str | None = SKYPILOT_URL, clouds: Iterable[str] = SKYPILOT_CLOUDS,
           store: Path | None = None, progress: Callable[[ProviderResult, int, int], None] | None = None) -> dict:
    """Pull every source, record what was seen; returns the per-provider results and what changed in
    each card's cheapest on-demand price per market."""
    from gpucost import price_store

    before = price_store.latest(store)
    now = _now()
    results, offers = [], []
    sources = []
    hunt = list(gpuhunt_only or gpuhunt_providers()) if use_gpuhunt else []
    clouds = list(clouds) if skypilot_base else []
    # a local folder holds some providers only: those are the ones there are to read
    local_hunt = os.environ.get("GPUHUNT_CATALOG_DIR")
    if local_hunt:
        hunt = [p for p in hunt if (Path(local_hunt) / f"{p}.csv").is_file()]
    if skypilot_base and not skypilot_base.startswith(("http://", "https://")):
        clouds = [c for c in clouds if (Path(skypilot_base) / c / "vms.csv").is_file()]
    if hunt:
        sources.append(gpuhunt(hunt, catalog, now))
    if clouds:
        sources.append(skypilot(skypilot_base or "", clouds, catalog, now))
    total = len(hunt) + len(clouds)
    for src in sources:
        for res, got in src:
            results.append(res)
            offers += got
            if progress:
                progress(res, len(results), total)
    added = price_store.record(offers, store) if offers else 0
    after = price_store.latest(store)
    return {"observed_at": now, "providers": [r.to_dict() for r in results], "offers_seen": len(offers),
            "observations_added": added, "offline": bool(results) and all(r.error for r in results),
            "changes": _changes(before, after)}


def _cheapest(df: pd.DataFrame) -> dict[tuple[str, str], float]:
    od = df[~df["spot"]] if len(df) else df
    if not len(od):
        return {}
    g = od.groupby(["gpu_id", "market"])["price_per_gpu_hour"].min().reset_index()
    return {(str(a), str(b)): float(v) for a, b, v in zip(g["gpu_id"], g["market"], g["price_per_gpu_hour"],
                                                           strict=True)}


def _changes(before: pd.DataFrame, after: pd.DataFrame) -> list[dict]:
    b, a = _cheapest(before), _cheapest(after)
    out = []
    for key in sorted(set(a) | set(b)):
        old, new = b.get(key), a.get(key)
        if old is None or new is None or abs(new - old) > 1e-9:
            out.append({"gpu": key[0], "market": key[1] or "global", "was_usd": old, "now_usd": new})
    return out


__all__ = ["update", "ProviderResult", "SKYPILOT_URL", "SKYPILOT_CLOUDS", "gpuhunt_providers"]
