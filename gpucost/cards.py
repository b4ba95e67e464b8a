"""Card choice: which accelerator gives the most for the money, for a user's need.

Pure calculations over catalog tables (pandas frames in, records out).

Metrics (``precision`` selects the throughput column; all throughput is dense):

* ``tflops_per_1k``  — dense TFLOPS (TOPS for int8) per 1 000 units of the display currency of the card's
  price; for the cloud basis, per 1 unit of currency per GPU-hour.
* ``gbps_per_1k``   — memory bandwidth [GB/s] per 1 000 of currency (per 1 currency/hour in the cloud).
* ``vram_per_1k``   — memory [GiB] per 1 000 of currency (per 1 currency/hour in the cloud).
* ``tflops_per_watt`` — dense TFLOPS per watt of board power (TDP).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

from gpucost.catalog import Catalog, derived
from gpucost.errors import GpucostError, UnknownNameError
from gpucost.i18n import Message
from gpucost.precisions import MIN_COMPUTE_CAPABILITY, PRECISION_COLUMN
from gpucost.pricing import card_table
from gpucost.serialize import Record
from gpucost.specs import SPECS

PRICE_BASES = ("new", "used", "cloud")
#: where a card runs (gpus.csv host_type): "pc" — a PCIe card for a desktop or workstation you build;
#: "server" — a PCIe server, an SXM/OAM module on an 8-way baseboard, or a rack system
HOST_GROUPS = {"any": (), "pc": ("desktop", "workstation"),
               "server": ("pcie_server", "baseboard_server", "rack")}
METRICS = ("tflops_per_1k", "gbps_per_1k", "vram_per_1k", "tflops_per_watt")
SORTABLE = METRICS + ("vram_gib", "mem_bandwidth_gbps", "fp32_tflops", "fp16_tflops", "bf16_tflops",
                      "fp8_tflops", "fp4_tflops", "int8_tops", "tdp_w", "price", "price_new", "price_used",
                      "cloud_hourly", "release_year", "name")
#: the model and format behind the "too small for a 70B model even at 4 bits" warning
REFERENCE_70B_MODEL = "llama-3-70b"
REFERENCE_4BIT_FORMAT = "q4_k_m"


@dataclass(frozen=True)
class Need:
    """What the user needs from a card.

    min_vram_gib : float  [GiB] per card
    precision    : str    fp32 | bf16 | fp16 | fp8 | int8
    budget       : float | None  [display currency] per card (new/used) or per GPU-hour (cloud)
    price_basis  : str    new | used | cloud
    currency     : str    display currency (ISO code in fx.csv)
    vendors      : tuple  vendor names to keep (empty: all)
    segments     : tuple  consumer / workstation / datacenter to keep (empty: all)
    host         : str    any | pc | server (:data:`HOST_GROUPS`)
    """

    min_vram_gib: float = 0.0
    precision: str = "bf16"
    budget: float | None = None
    price_basis: str = "new"
    currency: str = "USD"
    vendors: tuple[str, ...] = ()
    segments: tuple[str, ...] = ()
    host: str = "any"

    def check(self) -> None:
        if self.host not in HOST_GROUPS:
            raise UnknownNameError("host", self.host, HOST_GROUPS)
        if self.precision not in PRECISION_COLUMN:
            raise UnknownNameError("precision", self.precision, PRECISION_COLUMN)
        if self.price_basis not in PRICE_BASES:
            raise UnknownNameError("price basis", self.price_basis, PRICE_BASES)
        SPECS["min_vram_gib"].check(self.min_vram_gib, "minimum VRAM")
        if self.budget is not None:
            SPECS["price"].check(self.budget, "budget")


@dataclass(frozen=True)
class CardScore(Record):
    """One ranked card. Prices in ``currency``; ``price`` is the one of the chosen basis."""

    rank: int
    id: str
    name: str
    vendor: str
    segment: str
    vram_gib: float
    mem_bandwidth_gbps: float
    throughput: float
    price: float
    currency: str
    price_basis: str
    tflops_per_1k: float
    gbps_per_1k: float
    vram_per_1k: float
    tflops_per_watt: float
    on_frontier: bool
    price_source: str
    price_as_of: str
    warnings: tuple[Message, ...] = ()
    form_factor: str = ""
    host_type: str = ""



@dataclass(frozen=True)
class Ranking:
    need: Need
    cards: tuple[CardScore, ...]
    excluded: tuple[tuple[str, str], ...] = field(default=())  # (id, reason)
    sort_by: str = "tflops_per_1k"

    @property
    def frontier(self) -> tuple[str, ...]:
        return tuple(c.id for c in self.cards if c.on_frontier)

    def to_dict(self) -> dict:
        return {"need": asdict(self.need), "sort_by": self.sort_by,
                "cards": [c.to_dict() for c in self.cards],
                "frontier": list(self.frontier),
                "excluded": [{"id": i, "reason": r} for i, r in self.excluded]}


# --------------------------------------------------------------------------------------------------

def weights_gib(params_b: float, bits_per_weight: float) -> float:
    """Weight memory [GiB] of ``params_b`` billion parameters at ``bits_per_weight``."""
    return params_b * 1e9 * bits_per_weight / 8 / 2**30


def reference_70b_4bit_gib(catalog: Catalog) -> float | None:
    """Weights of the reference 70B model at the reference 4-bit format, from models/quant tables."""
    try:
        models, quants = catalog.table("models"), catalog.table("quant_formats")
    except GpucostError:
        return None

    def build(_t) -> float | None:
        m = models[models["id"] == REFERENCE_70B_MODEL]["params_total_b"]
        q = quants[quants["id"] == REFERENCE_4BIT_FORMAT]["bits_per_weight"]
        return weights_gib(float(m.iloc[0]), float(q.iloc[0])) if len(m) and len(q) else None
    return derived((models, quants), "reference_70b_4bit_gib", build)


def card_warnings(row, need: Need, big_model_gib: float | None) -> tuple[Message, ...]:
    """Warnings that matter when choosing this card (sentences of locales/*/messages.json)."""
    w: list[Message] = []
    nvlink = row.get("nvlink_gbps")
    no_link = nvlink is None or (isinstance(nvlink, float) and math.isnan(nvlink))
    if row.get("form_factor") in ("sxm", "oam", "superchip"):
        w.append(Message("cw_module", form=Message(f"form_{row['form_factor']}"),
                         host=Message("host_rack" if row.get("host_type") == "rack" else "host_baseboard_server")))
    if row["vendor"] == "NVIDIA" and row["segment"] == "consumer":
        w.append(Message("cw_geforce", nolink=Message("cw_geforce_nolink") if no_link else ""))
    elif no_link and row["segment"] != "consumer":
        w.append(Message("cw_no_link"))
    cc = row.get("compute_capability")
    if row["vendor"] == "NVIDIA" and cc == cc and cc is not None:
        if cc < MIN_COMPUTE_CAPABILITY["fp8"]:
            w.append(Message("cw_no_fp8", cc=f"{cc:g}"))
        if cc < MIN_COMPUTE_CAPABILITY["bf16"]:
            w.append(Message("cw_no_bf16", cc=f"{cc:g}"))
    if row["vendor"] == "AMD":
        w.append(Message("cw_amd"))
    if row["vendor"] in ("Intel", "Huawei"):
        w.append(Message("cw_own_stack", vendor=row["vendor"]))
    if big_model_gib is not None and row["vram_gib"] < big_model_gib:
        w.append(Message("cw_small_70b", gib=f"{big_model_gib:.1f}", n=math.ceil(big_model_gib / row["vram_gib"])))
    if row["segment"] in ("consumer", "workstation"):
        w.append(Message("cw_desktop_power", w2=f"{2 * row['tdp_w']:.0f}", w4=f"{4 * row['tdp_w']:.0f}"))
    return tuple(w)


def pareto_frontier(price: np.ndarray, perf: np.ndarray) -> np.ndarray:
    """Mask of points not dominated by another (lower-or-equal price and higher-or-equal perf)."""
    n = len(price)
    mask = np.zeros(n, dtype=bool)
    order = np.lexsort((-perf, price))  # by price asc, then perf desc
    best = -np.inf
    for i in order:
        if perf[i] > best:
            mask[i] = True
            best = perf[i]
    return mask


def rank_cards(need: Need, catalog: Catalog | None = None, *, table: pd.DataFrame | None = None,
               sort_by: str = "tflops_per_1k") -> Ranking:
    """Rank the catalog's cards for ``need``; ``table`` (from :func:`card_table`) saves a reload."""
    need.check()
    if sort_by not in SORTABLE:
        raise UnknownNameError("sort metric", sort_by, SORTABLE)
    catalog = catalog or Catalog()
    t = table if table is not None else card_table(catalog, need.currency)
    perf_col = PRECISION_COLUMN[need.precision]
    price_col = {"new": "price_new", "used": "price_used", "cloud": "cloud_hourly"}[need.price_basis]
    scale = 1.0 if need.price_basis == "cloud" else 1000.0

    n = len(t)
    reasons = np.array([""] * n, dtype=object)

    def exclude(mask, why) -> None:
        mask = np.asarray(mask, dtype=bool) & (reasons == "")
        reasons[mask] = why

    vendor = t["vendor"].to_numpy()
    if need.vendors:
        exclude(~np.isin(np.char.lower(vendor.astype(str)), [v.lower() for v in need.vendors]),
                Message("cx_vendor"))
    if need.segments:
        exclude(~np.isin(t["segment"].to_numpy(), list(need.segments)), Message("cx_segment"))
    if need.host != "any":
        exclude(~np.isin(t["host_type"].to_numpy(), list(HOST_GROUPS[need.host])),
                Message("cx_server_only" if need.host == "pc" else "cx_pc_card"))
    vram = t["vram_gib"].to_numpy(float)
    perf_all = t[perf_col].to_numpy(float)
    price_all = t[price_col].to_numpy(float)
    exclude(vram < need.min_vram_gib, Message("cx_vram", gib=f"{need.min_vram_gib:g}"))
    exclude(np.isnan(perf_all), Message("cx_no_precision", prec=need.precision.upper()))
    exclude(np.isnan(price_all), Message(f"cx_no_price_{need.price_basis}"))
    if need.budget is not None:
        exclude(price_all > need.budget, Message("cx_budget", budget=f"{need.budget:g}", cur=need.currency))

    idx = np.flatnonzero(reasons == "")
    price, perf = price_all[idx], perf_all[idx]
    bw = t["mem_bandwidth_gbps"].to_numpy(float)[idx]
    tdp = t["tdp_w"].to_numpy(float)[idx]
    metrics = {
        "price": price, "throughput": perf, "tflops_per_1k": perf / price * scale,
        "gbps_per_1k": bw / price * scale, "vram_per_1k": vram[idx] / price * scale,
        "tflops_per_watt": perf / tdp,
    }
    frontier = pareto_frontier(price, perf)
    ascending = sort_by in ("price", "price_new", "price_used", "cloud_hourly", "tdp_w", "name")
    key = metrics[sort_by] if sort_by in metrics else t[sort_by].to_numpy()[idx]
    ids = t["id"].to_numpy()[idx]
    if key.dtype.kind == "f":
        k = np.where(np.isnan(key), np.inf, key if ascending else -key)
        order = np.lexsort((ids, k))
    else:
        order = np.array(sorted(range(len(idx)), key=lambda j: (str(key[j]), ids[j]), reverse=not ascending),
                         dtype=int)

    big = reference_70b_4bit_gib(catalog) if catalog is not None else None
    src_col = {"new": "price_new_source", "used": "price_used_source", "cloud": "cloud_source"}[
        need.price_basis]
    asof_col = {"new": "price_new_as_of", "used": "price_used_as_of", "cloud": "cloud_as_of"}[
        need.price_basis]
    records = t.iloc[idx].to_dict(orient="records")
    cards = []
    for rank, j in enumerate(order, start=1):
        r = records[j]
        cards.append(CardScore(
            rank=rank, id=r["id"], name=r["name"], vendor=r["vendor"], segment=r["segment"],
            vram_gib=float(r["vram_gib"]), mem_bandwidth_gbps=float(r["mem_bandwidth_gbps"]),
            throughput=float(perf[j]), price=float(price[j]), currency=need.currency.upper(),
            price_basis=need.price_basis, tflops_per_1k=float(metrics["tflops_per_1k"][j]),
            gbps_per_1k=float(metrics["gbps_per_1k"][j]), vram_per_1k=float(metrics["vram_per_1k"][j]),
            tflops_per_watt=float(metrics["tflops_per_watt"][j]), on_frontier=bool(frontier[j]),
            price_source=str(r[src_col]), price_as_of=str(r[asof_col]),
            warnings=card_warnings(r, need, big), form_factor=str(r.get("form_factor") or ""),
            host_type=str(r.get("host_type") or "")))
    excluded = tuple((str(i), str(why)) for i, why in zip(t["id"], reasons, strict=True) if why)
    return Ranking(need=need, cards=tuple(cards), excluded=excluded, sort_by=sort_by)


def gpu_list(catalog: Catalog | None = None, *, currency: str = "USD", min_vram_gib: float = 0.0,
             vendor: str | None = None, sort_by: str = "vram_gib") -> list[dict]:
    """The catalog's cards with their prices, as plain records (what ``gpucost gpus --json`` prints)."""
    catalog = catalog or Catalog()
    if sort_by not in SORTABLE:
        raise UnknownNameError("sort metric", sort_by, SORTABLE)
    min_vram_gib = SPECS["min_vram_gib"].check(min_vram_gib, "minimum VRAM")
    t = card_table(catalog, currency)
    if vendor:
        vendors = sorted(set(t["vendor"]))
        match = [v for v in vendors if v.lower() == vendor.lower()]
        if not match:
            raise UnknownNameError("vendor", vendor, vendors)
        t = t[t["vendor"] == match[0]]
    t = t[t["vram_gib"] >= min_vram_gib]
    if sort_by in METRICS:
        perf = t["bf16_tflops"].fillna(t["fp16_tflops"])
        price = t["price_new"]
        t = t.assign(tflops_per_1k=perf / price * 1000, gbps_per_1k=t["mem_bandwidth_gbps"] / price * 1000,
                     vram_per_1k=t["vram_gib"] / price * 1000, tflops_per_watt=perf / t["tdp_w"])
    ascending = sort_by in ("price", "price_new", "price_used", "cloud_hourly", "tdp_w", "name")
    if sort_by == "price":
        sort_by = "price_new"
    t = t.sort_values([sort_by, "id"], ascending=[ascending, True], na_position="last")
    cols = ["id", "name", "vendor", "segment", "architecture", "compute_capability", "vram_gib",
            "mem_bandwidth_gbps", "fp32_tflops", "fp16_tflops", "bf16_tflops", "fp8_tflops", "fp4_tflops", "int8_tops",
            "tdp_w", "nvlink_gbps", "mig_max_instances", "price_new", "price_used", "cloud_hourly",
            "cloud_offer", "cloud_market", "cloud_median", "cloud_as_of", "source", "as_of", "price_new_source", "price_new_as_of",
            "price_new_market", "price_used_source", "price_used_as_of", "price_used_market"]
    recs = []
    for r in t[cols].to_dict(orient="records"):
        r = {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}
        r["currency"] = currency.upper()
        recs.append(r)
    return recs
