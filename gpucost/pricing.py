"""What a card costs: its street price new and used and its cloud price per GPU-hour, in one currency.

The one place the engines read prices from. One market governs buying and renting: the catalog's
:class:`~gpucost.markets.Market`, else the currency's (CNY → China, else global — anywhere outside
mainland China). A card's street price is the median of its quotes from that market (each prices.csv
row's market comes from its region and currency, :func:`gpucost.markets.street_market`), converted
through fx.csv — so one market's prices in USD, EUR and CNY differ by exactly one exchange rate — of the
quotes dated within a year of its newest one, so that a 2022 launch price does not pull a 2026 street
price down (the date shown is that newest quote's); whole-server quotes (channel ``server-quote``) are
left out. A card with no quote in the market is priced from its quotes elsewhere, converted, marked
"outside". The cloud price is the lowest on-demand price per GPU-hour over the offers the user's market
can buy of the kinds they rent from, dated within a year of the card's newest such offer, with the
market's median and offer count next to it; a card with no offer in the market gets the cheapest it can
rent elsewhere, marked "outside". Offers are the bundled snapshot plus what ``gpucost prices update``
recorded in the local store. Cached per loaded tables, currency, market and store state.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta

import pandas as pd

from gpucost import price_store
from gpucost.catalog import Catalog, derived
from gpucost.errors import UnknownNameError
from gpucost.markets import in_market, market_for, market_of, provider_kind, street_market

PRICE_BASES = ("new", "used", "cloud")
#: a street price is the median of a card's quotes dated within this many days of its newest quote
PRICE_WINDOW_DAYS = 365
#: the pages warn about cloud offers older than this many days, and street prices older than a year
CLOUD_STALE_DAYS = 90
STREET_STALE_DAYS = 365
#: price basis → the price_summary column holding it
BASIS_COLUMN = {"new": "price_new", "used": "price_used", "cloud": "cloud_hourly"}


def street_quotes(catalog: Catalog, currency: str) -> pd.DataFrame:
    """Every per-card street price (prices.csv rows; whole-server quotes, channel ``server-quote``, are the
    price of a machine, not of a card, and left out) with its ``value`` in ``currency``, its ``market``
    (:func:`~gpucost.markets.street_market`), whether the user's market admits it (``in_market``, the rule
    of offers: :func:`~gpucost.markets.in_market`) and whether the card's price on its condition is taken
    from it (``chosen``: the card's in-market quotes when it has any; else, as for offers, its quotes from
    outside mainland China for a user outside it; else any — a China-only card such as the H20 keeps a
    price, marked outside). Cached per loaded tables, currency and market."""
    cur = currency.upper()
    market = market_for(catalog.market, cur)

    def build(_t) -> pd.DataFrame:
        prices = catalog.prices
        rates = catalog.fx.set_index("currency")["per_usd"]
        rows = prices[prices["channel"].fillna("").str.lower() != "server-quote"].copy()
        rows["value"] = rows["price"] * (rates[cur] / rows["currency"].map(rates).to_numpy())
        rows["market"] = [street_market(r, c) for r, c in zip(rows["region"], rows["currency"], strict=True)]
        rows["in_market"] = [in_market(m, market.region) for m in rows["market"]]
        # 0: in the market; 1: elsewhere but outside China (or the user is in China); 2: China only
        tier = 2 - rows["in_market"].astype(int) - ((market.region == "china") | (rows["market"] != "china"))
        rows["chosen"] = tier == tier.groupby([rows["gpu_id"], rows["condition"]]).transform("min")
        return rows
    return derived((catalog.prices, catalog.fx), f"street_quotes:{cur}:{market.region}", build)


def _summary(catalog: Catalog, currency: str) -> pd.DataFrame:
    market = market_for(catalog.market, currency)
    out = pd.DataFrame(index=pd.Index(catalog.gpus["id"], name="id"))
    quotes = street_quotes(catalog, currency)
    for cond in ("new", "used"):
        rows = quotes[quotes["chosen"] & (quotes["condition"] == cond)]
        dated = pd.to_datetime(rows["as_of"].astype(str), errors="coerce")
        newest = dated.groupby(rows["gpu_id"]).transform("max")
        rows = rows[dated >= newest - pd.Timedelta(days=PRICE_WINDOW_DAYS)]
        g = rows.groupby("gpu_id")
        out[f"price_{cond}"] = g["value"].median()
        out[f"price_{cond}_source"] = g["source"].agg(lambda s: " ; ".join(dict.fromkeys(s)))
        out[f"price_{cond}_as_of"] = g["as_of"].max()
        # the market the price is from (the user's, else "outside <it>") and whether every quote it is
        # taken from is in the display currency (else it moves with the exchange rate)
        out[f"price_{cond}_market"] = g["in_market"].all().map(
            {True: market.region, False: "outside " + market.region})
        out[f"price_{cond}_local"] = g["currency"].agg(lambda s: bool((s == currency).all()))
    o = within_reach(cloud_offers(catalog, currency), market.region).sort_values("per_gpu")
    g = o.groupby("gpu_id")
    best = g.first()
    out["cloud_hourly"] = best["per_gpu"]
    out["cloud_median"] = g["per_gpu"].median()
    out["cloud_offers"] = g.size()
    out["cloud_source"] = best["source"]
    out["cloud_as_of"] = best["as_of"]
    out["cloud_offer"] = best["provider"] + " " + best["InstanceType"]
    out["cloud_market"] = best["market"].replace("", "global").where(best["in_market"],
                                                                      "outside " + market.region)
    return out


def within_reach(o: pd.DataFrame, region: str) -> pd.DataFrame:
    """The offers (rows with gpu_id, market, in_market, kind_ok, as_of) a user of ``region`` is priced from:
    of a kind they rent from; a card's in-market offers when it has any, else the ones they can rent at all
    (a mainland-China offer only for China), named "outside"; dated within a year of the card's newest such
    offer (as for street prices: a 2018 list price is not what a card rents for when a 2026 offer exists)."""
    o = o[o["kind_ok"] & ((region == "china") | (o["market"] != "china"))]
    o = o[o["in_market"] | ~o.groupby("gpu_id")["in_market"].transform("any")]
    dated = pd.to_datetime(o["as_of"].astype(str), errors="coerce")
    return o[dated >= dated.groupby(o["gpu_id"]).transform("max") - pd.Timedelta(days=PRICE_WINDOW_DAYS)]


def _newest_bundled(catalog: Catalog) -> pd.DataFrame:
    """The bundled snapshot, the newest quote of each offer (provider, instance, region) only."""
    b = catalog.offers.assign(_d=catalog.offers["as_of"].astype(str)).sort_values("_d", kind="stable")
    return b.drop_duplicates(["provider", "InstanceType", "Region"], keep="last").drop(columns="_d")


def _kinds(b: pd.DataFrame) -> list[str]:
    """Each bundled row's provider kind (its column, else the provider's)."""
    return [str(k) if isinstance(k, str) and k else provider_kind(str(p))
            for k, p in zip(b.get("provider_kind", pd.Series("", index=b.index)), b["provider"], strict=True)]


def _markets(b: pd.DataFrame) -> list[str]:
    """Each bundled row's market, from its region and currency."""
    return [market_of(r, c) for r, c in zip(b["Region"].fillna(""), b["currency"], strict=True)]


def _admit(o: pd.DataFrame, catalog: Catalog, currency: str) -> pd.DataFrame:
    """``o`` (with market and kind columns) with whether the user's region market and provider kinds admit
    each row (``in_market``, ``kind_ok``)."""
    market = market_for(catalog.market, currency)
    return o.assign(in_market=[in_market(m, market.region) for m in o["market"]],
                    kind_ok=o["kind"].isin(market.kinds))


def offer_rows(catalog: Catalog, currency: str) -> pd.DataFrame:
    """The bundled snapshot's offer rows (every column: on-demand, spot and reserved prices per instance)
    that the user's market prices from (:func:`within_reach`) — what a TCO scenario chooses its cloud
    prices among."""
    b = _newest_bundled(catalog)
    b = _admit(b.assign(market=_markets(b), kind=_kinds(b)), catalog, currency)
    return within_reach(b, market_for(catalog.market, currency).region)


def cloud_offers(catalog: Catalog, currency: str) -> pd.DataFrame:
    """Every on-demand offer per GPU-hour in ``currency``: the bundled snapshot (cloud_offers.csv) and the
    newest observation of each offer in the local price store (``gpucost prices update``), each with its
    market and provider kind, whether it is in the user's region market (``in_market``: the catalog's
    market, else the currency's) and whether its kind is one the user rents from (``kind_ok``)."""
    rates = catalog.fx.set_index("currency")["per_usd"]
    # the same offer (provider, instance, region) quoted at several dates: the newest quote holds
    b = _newest_bundled(catalog)
    bundled = pd.DataFrame({
        "gpu_id": b["gpu_id"], "provider": b["provider"], "InstanceType": b["InstanceType"],
        "per_gpu": b["Price"] / b["AcceleratorCount"] * (rates[currency] / b["currency"].map(rates).to_numpy()),
        "market": _markets(b), "kind": _kinds(b), "source": b["source"], "as_of": b["as_of"].astype(str)})
    frames = [bundled]
    seen = price_store.latest()
    if len(seen):
        od = seen[~seen["spot"] & seen["gpu_id"].isin(catalog.gpus["id"])]
        frames.append(pd.DataFrame({
            "gpu_id": od["gpu_id"], "provider": od["provider"], "InstanceType": od["instance"],
            "per_gpu": od["price_per_gpu_hour"] * (rates[currency] / od["currency"].map(rates).to_numpy()),
            "market": od["market"], "kind": od["provider_kind"], "source": od["source"],
            "as_of": od["observed_at"].str[:10]}))
    return _admit(pd.concat(frames, ignore_index=True).dropna(subset=["per_gpu"]), catalog, currency)


def price_history(catalog: Catalog, gpu_id: str, currency: str) -> pd.DataFrame:
    """Every price ever seen for one card, oldest first, per GPU-hour in ``currency``: each bundled offer at
    the date it held (``origin`` "snapshot") and every observation ``gpucost prices update`` recorded
    (``origin`` "store", with its time), on-demand and spot, each with its market and whether the user's
    market and provider kinds admit it (``in_market``, ``kind_ok``)."""
    rates = catalog.fx.set_index("currency")["per_usd"]
    b = catalog.offers[catalog.offers["gpu_id"] == gpu_id]
    frames = []
    for spot, col in ((False, "Price"), (True, "SpotPrice")):
        if col not in b.columns:
            continue
        rows = b[b[col].notna()]
        frames.append(pd.DataFrame({
            "seen": rows["as_of"].astype(str), "origin": "snapshot", "provider": rows["provider"],
            "InstanceType": rows["InstanceType"], "region": rows["Region"].fillna("").astype(str), "spot": spot,
            "per_gpu": rows[col] / rows["AcceleratorCount"] * (rates[currency] / rows["currency"].map(rates).to_numpy()),
            "market": _markets(rows), "kind": _kinds(rows), "source": rows["source"]}))
    seen = price_store.history(gpu_id)
    if len(seen):
        frames.append(pd.DataFrame({
            "seen": seen["observed_at"], "origin": "store", "provider": seen["provider"],
            "InstanceType": seen["instance"], "region": seen["region"], "spot": seen["spot"].astype(bool),
            "per_gpu": seen["price_per_gpu_hour"] * (rates[currency] / seen["currency"].map(rates).to_numpy()),
            "market": seen["market"], "kind": seen["provider_kind"], "source": seen["source"]}))
    h = pd.concat([f for f in frames if len(f)], ignore_index=True) if any(len(f) for f in frames) else \
        pd.DataFrame(columns=["seen", "origin", "provider", "InstanceType", "region", "spot", "per_gpu", "market",
                              "kind", "source"])
    return _admit(h, catalog, currency).sort_values(["seen", "per_gpu"], kind="stable").reset_index(drop=True)


def history_summary(h: pd.DataFrame, today: date | None = None) -> dict:
    """What a :func:`price_history` says in one line: prices on record, how many the user's market admits,
    the newest of those (ISO date, None when none) and its age in days."""
    mine = h[h["in_market"] & h["kind_ok"]]
    newest = str(mine["seen"].max())[:10] if len(mine) else ""
    age = ((today or date.today()) - date.fromisoformat(newest)).days if newest else None
    return {"points": len(h), "in_market": len(mine), "newest": newest or None, "age_days": age}


def market_summary(catalog: Catalog, currency: str, today: date | None = None) -> dict:
    """The user's market as the pages state it: its region, the offers it admits, the newest offer's date,
    how many are older than :data:`CLOUD_STALE_DAYS`, how many cards are priced outside it for renting
    (``cards_outside``) and for buying (``street_outside``: a new or used street price from elsewhere)."""
    market = market_for(catalog.market, currency)
    o = cloud_offers(catalog, currency)
    mine = o[o["in_market"] & o["kind_ok"]]
    dates = pd.to_datetime(mine["as_of"], errors="coerce")
    cutoff = pd.Timestamp((today or date.today()) - timedelta(days=CLOUD_STALE_DAYS))
    ps = price_index(catalog, currency)

    def outside(col: str) -> pd.Series:
        return ps[col].astype(str).str.startswith("outside")
    street = outside("price_new_market") | outside("price_used_market")
    return {"region": market.region, "offers": len(mine), "newest": str(dates.max().date()) if len(mine) else None,
            "stale": int((dates < cutoff).sum()), "cards_outside": int(outside("cloud_market").sum()),
            "street_outside": int(street.sum())}


def price_summary(catalog: Catalog, currency: str) -> pd.DataFrame:
    """Per GPU (one row per catalog card, column ``id``): price_new, price_used, cloud_hourly in
    ``currency``, each with its source and as-of date (see the module docstring)."""
    return price_index(catalog, currency).reset_index()


def price_index(catalog: Catalog, currency: str) -> pd.DataFrame:
    """:func:`price_summary` indexed by GPU id (computed once per loaded tables and currency; read-only)."""
    currency = currency.upper()
    catalog.fx_rate(currency)  # raises on an unknown currency
    tables = (catalog.gpus, catalog.prices, catalog.offers, catalog.fx)
    key = f"price_summary:{currency}:{market_for(catalog.market, currency).key}:{price_store.stamp()}"
    return derived(tables, key, lambda _t: _summary(catalog, currency))


def card_table(catalog: Catalog, currency: str = "USD") -> pd.DataFrame:
    """The gpus table joined with its prices in ``currency`` (see :func:`price_summary`)."""
    return derived((catalog.gpus, catalog.prices, catalog.offers, catalog.fx),
                   f"card_table:{currency.upper()}:{market_for(catalog.market, currency).key}:{price_store.stamp()}",
                   lambda _t: catalog.gpus.merge(price_summary(catalog, currency), on="id", how="left"))


@dataclass(frozen=True)
class Quote:
    """One price of a card: the value (per card, or per GPU-hour for cloud), its sources and as-of date, the
    market it is from (the user's, or "outside <it>") and whether it is taken only from quotes in the
    display currency (``local``; else it moves with the exchange rate)."""

    value: float
    source: str
    as_of: str
    market: str = ""
    local: bool = True

    @property
    def where(self) -> str:
        """The market in words: "in the global market", "from outside the china market"."""
        if self.market.startswith("outside "):
            return f"from outside the {self.market.removeprefix('outside ')} market"
        return f"in the {self.market} market" if self.market else ""


@dataclass(frozen=True)
class CardPrices:
    """A card's prices in one currency (None where the catalog has none)."""

    gpu: str
    currency: str
    new: Quote | None
    used: Quote | None
    cloud: Quote | None
    cloud_offer: str = ""

    def basis(self, name: str) -> Quote | None:
        if name not in PRICE_BASES:
            raise UnknownNameError("price basis", name, PRICE_BASES)
        return getattr(self, name)


def _quote(r: dict, col: str, src_col: str, asof_col: str, market_col: str = "", local_col: str = "") -> Quote | None:
    v = r.get(col)
    if v is None or v != v:
        return None
    local = r.get(local_col, True) if local_col else True
    return Quote(float(v), str(r.get(src_col) or ""), str(r.get(asof_col) or ""),
                 str(r.get(market_col) or "") if market_col else "", bool(local) if local == local else True)


def card_prices(catalog: Catalog, currency: str) -> dict[str, CardPrices]:
    """Every catalog card's :class:`CardPrices` in ``currency`` (once per loaded tables and currency)."""
    cur = currency.upper()

    def build(_t) -> dict[str, CardPrices]:
        out = {}
        for r in price_summary(catalog, cur).to_dict(orient="records"):
            cloud = _quote(r, "cloud_hourly", "cloud_source", "cloud_as_of", "cloud_market")
            offer = str(r.get("cloud_offer") or "") if cloud else ""
            if cloud is not None:
                cloud = Quote(cloud.value, f"{offer}: {cloud.source}", cloud.as_of, cloud.market)
            new, used = (_quote(r, f"price_{c}", f"price_{c}_source", f"price_{c}_as_of", f"price_{c}_market",
                                f"price_{c}_local") for c in ("new", "used"))
            out[str(r["id"])] = CardPrices(str(r["id"]), cur, new, used, cloud, offer)
        return out
    key = f"card_prices:{cur}:{market_for(catalog.market, cur).key}:{price_store.stamp()}"
    return derived((catalog.gpus, catalog.prices, catalog.offers, catalog.fx), key, build)


def card_price(catalog: Catalog, gpu_id: str, currency: str, basis: str) -> tuple[float | None, str, str]:
    """(price, source, as-of) of one card on a basis (new, used: per card; cloud: per GPU-hour)."""
    prices = card_prices(catalog, currency).get(gpu_id)
    q = prices.basis(basis) if prices is not None else None
    return (None, "", "") if q is None else (q.value, q.source, q.as_of)
