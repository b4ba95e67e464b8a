"""The cost of a GPU-hour and of a job: one home for every engine and page.

* **Owned card** (bought new or used): the value it loses over the amortization period — its price minus
  what it still sells for at the end, ``price · ρ^years`` with ρ the share of value a card keeps each year
  (from the catalog's used/new prices and the card's age, :func:`resale_retention`) — spread over the
  hours it is busy (``years × 8760 h × utilization``), plus its power while busy (``TDP × PUE ×
  electricity price``). With ``utilization = 1`` this is the cost of every hour the card is owned.
* **Rented card**: the offer's price per GPU-hour.
* **A job**: GPU-hours × the hourly cost; a served token: the hourly cost of the cards over the tokens
  they produce in an hour.

Defaults (amortization years, utilization, the site's electricity tariff) are defined once in
:mod:`gpucost.specs`; the CLI, the pages and the claims call these functions with them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from datetime import date

import numpy as np

from gpucost.catalog import Catalog, derived
from gpucost.errors import GpucostError, UnknownNameError
from gpucost.markets import market_for
from gpucost.pricing import PRICE_BASES, CardPrices, card_price, card_prices
from gpucost.records import gpu as gpu_record
from gpucost.specs import DEFAULTS
from gpucost.units import HOURS_PER_YEAR, MONTHS_PER_YEAR, SECONDS_PER_HOUR, TOKENS_PER_MILLION, WATTS_PER_KW

#: a card's release is dated to the middle of its release year when the catalog has only the year
RELEASE_MONTH, RELEASE_DAY = 7, 1
#: a used price this soon after release says nothing about a yearly loss of value [years]
MIN_AGE_YEARS = 0.5
#: the electricity tariff of each site (tco_defaults.csv variants)
SITE_TARIFF = {"home": "residential", "office": "commercial", "colocation": "industrial"}
#: the country whose electricity prices a currency's market uses by default (others: US)
CURRENCY_COUNTRY = {"USD": "US", "CNY": "CN"}
DEFAULT_COUNTRY = "US"


@dataclass(frozen=True)
class Ownership:
    """What an owned card's hour costs depends on: the amortization period [years], the share of hours it
    is busy, the electricity price [currency per kWh] and the site's PUE, and whether it is resold at the
    end (``resale``: at the catalog's retention ρ, :func:`resale_retention`)."""

    years: float = DEFAULTS.amortization_years
    utilization: float = DEFAULTS.utilization
    electricity_per_kwh: float | None = None   # None: the market's default (default_electricity_per_kwh)
    pue: float = 1.0
    resale: bool = True

    def check(self) -> None:
        if not (self.years > 0 and math.isfinite(self.years)):
            raise GpucostError(f"the amortization period must be more than 0 years, not {self.years}")
        if not (0 < self.utilization <= 1):
            raise GpucostError(f"utilization must be more than 0 and at most 1, not {self.utilization}")
        if self.electricity_per_kwh is not None and not (0 <= self.electricity_per_kwh < math.inf):
            raise GpucostError(f"the electricity price must be a number >= 0, not {self.electricity_per_kwh}")
        if not (1 <= self.pue < math.inf):
            raise GpucostError(f"PUE must be at least 1, not {self.pue}")


def resale_value(price, retention_per_year, months, fee=0.0):
    """What a card bought at ``price`` sells for after ``months`` (after a selling ``fee`` fraction):
    ``price · (1 − fee) · ρ^(months/12)``. Arrays broadcast."""
    return np.asarray(price, float) * (1.0 - np.asarray(fee, float)) \
        * np.asarray(retention_per_year, float) ** (np.asarray(months, float) / MONTHS_PER_YEAR)


def energy_cost(power_w, hours, price_per_kwh, pue=1.0):
    """Electricity of a load of ``power_w`` for ``hours`` at ``price_per_kwh``, site overhead ``pue``."""
    return np.asarray(power_w, float) / WATTS_PER_KW * np.asarray(pue, float) * np.asarray(hours, float) \
        * np.asarray(price_per_kwh, float)


def owned_cost_per_hour(price, *, years, utilization, retention_per_year=None, power_w=None,
                        electricity_per_kwh=0.0, pue=1.0):
    """Cost of one busy hour of an owned card [currency/h] (see the module docstring). Arrays broadcast;
    ``retention_per_year`` None: no resale; ``power_w`` None: power not counted."""
    price = np.asarray(price, float)
    kept = 0.0 if retention_per_year is None else resale_value(price, retention_per_year, years * MONTHS_PER_YEAR)
    busy_hours = np.asarray(years, float) * HOURS_PER_YEAR * np.asarray(utilization, float)
    power = 0.0 if power_w is None else energy_cost(power_w, 1.0, electricity_per_kwh, pue)
    return (price - kept) / busy_hours + power


def cost_per_million_tokens(tokens_per_s, n_cards, hourly_per_card):
    """Cost of 1M tokens [currency] from ``n_cards`` cards at ``hourly_per_card`` producing
    ``tokens_per_s`` together. Arrays broadcast; NaN where the speed is 0 or missing."""
    tps = np.asarray(tokens_per_s, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.asarray(n_cards, float) * np.asarray(hourly_per_card, float) / (tps * SECONDS_PER_HOUR) \
            * TOKENS_PER_MILLION
    return np.where(tps > 0, out, np.nan)


def job_cost(gpu_hours, hourly_per_gpu):
    """Cost of a job of ``gpu_hours`` at ``hourly_per_gpu`` [currency]."""
    return np.asarray(gpu_hours, float) * np.asarray(hourly_per_gpu, float)


# --------------------------------------------------------------------------------------------------
# From the catalog
# --------------------------------------------------------------------------------------------------

def _retention_of(catalog: Catalog, prices: CardPrices) -> float:
    """(used / new)^(1 / age) of one card in USD, age from mid release year to the used price's date."""
    ry = gpu_record(catalog, prices.gpu).release_year
    new, used = prices.new, prices.used
    if new is None or used is None or not (new.value > 0 and used.value > 0 and ry and used.as_of):
        return math.nan
    age = (date.fromisoformat(used.as_of) - date(int(ry), RELEASE_MONTH, RELEASE_DAY)).days / 365.25
    if age < MIN_AGE_YEARS:
        return math.nan
    return float(min(1.0, (used.value / new.value) ** (1 / age)))


def _retentions(catalog: Catalog, currency: str) -> dict[str, tuple[float, str]]:
    """ρ and how it was derived for every card, from the street prices of the market a user of
    ``currency`` buys in (a ratio: the same in every currency of that market; once per loaded tables and
    market)."""
    market = market_for(catalog.market, currency)
    in_usd = catalog.with_market(market)

    def build(_tables) -> dict[str, tuple[float, str]]:
        prices = card_prices(in_usd, "USD")
        own = {g: _retention_of(catalog, p) for g, p in prices.items()}
        known = [r for r in own.values() if r == r]
        median = float(np.median(known)) if known else math.nan
        out = {}
        for g, r in own.items():
            p = prices[g]
            if r == r and p.new is not None and p.used is not None:
                out[g] = (r, f"derived from the catalog: used {p.used.value:,.0f} USD {p.used.where} / new "
                             f"{p.new.value:,.0f} USD {p.new.where} at the card's age (released "
                             f"{gpu_record(catalog, g).release_year})")
            elif known:
                out[g] = (median, f"median over {len(known)} catalog cards with new and used prices "
                                  "(this card has not both)")
            else:
                out[g] = (math.nan, "no card in the catalog has both a new and a used price")
        return out
    return derived((catalog.gpus, catalog.prices, catalog.offers, catalog.fx), f"resale_retention:{market.region}",
                   build)


def resale_retention(catalog: Catalog, gpu_id: str, currency: str = DEFAULTS.currency) -> tuple[float, str]:
    """Fraction of value a card keeps per year, ρ = (used / new)^(1 / age), from its catalog used and new
    prices (in the market a user of ``currency`` buys in: the catalog's, else the currency's) and its age.
    A card without both prices gets the median ρ of the catalog's cards that have them. Returns (ρ, how it
    was derived)."""
    return _retentions(catalog, currency)[catalog.gpu_id(gpu_id)]


def default_electricity_per_kwh(catalog: Catalog, currency: str, *, site: str = DEFAULTS.site,
                                region: str | None = None) -> tuple[float, str]:
    """The electricity price of a site's tariff [``currency`` per kWh] and where it comes from: the
    tco_defaults.csv row of ``region`` (US-CA, CN, …), else the median of the rows of the currency's
    country (USD: US states, CNY: China)."""
    if site not in SITE_TARIFF:
        raise UnknownNameError("site", site, SITE_TARIFF)
    return derived((catalog.table("tco_defaults"), catalog.fx), f"electricity:{site}:{region}:{currency.upper()}",
                   lambda _: _electricity(catalog, currency, site, region))


def _electricity(catalog: Catalog, currency: str, site: str, region: str | None) -> tuple[float, str]:
    t = catalog.table("tco_defaults")
    rows = t[(t["key"] == "electricity_per_kwh") & (t["variant"] == SITE_TARIFF[site])]
    cur = currency.upper()
    if region:
        exact = rows[rows["region"].str.upper() == region.upper()]
        if len(exact):
            r = exact.iloc[0]
            return float(catalog.convert(r["value"], r["currency"], cur)), f"{r['source']} ({r['as_of']})"
    country = (region or "").split("-")[0].upper() or CURRENCY_COUNTRY.get(cur, DEFAULT_COUNTRY)
    mine = rows[rows["region"].str.upper().str.split("-").str[0] == country]
    if mine.empty:
        mine = rows[rows["region"].str.upper().str.split("-").str[0] == DEFAULT_COUNTRY]
    values = [float(catalog.convert(v, c, cur)) for v, c in zip(mine["value"], mine["currency"], strict=True)]
    if not values:
        raise GpucostError(f"tco_defaults.csv has no {SITE_TARIFF[site]} electricity price")
    how = (f"median of {len(values)} {SITE_TARIFF[site]} electricity prices for {country} in tco_defaults.csv "
           f"({', '.join(sorted(set(mine['region'])))}; {'; '.join(dict.fromkeys(mine['source']))})")
    return float(np.median(values)), how


@dataclass(frozen=True)
class HourlyCost:
    """What one GPU-hour of a card costs on a price basis [currency per GPU-hour].

    ``per_hour`` is per busy hour of an owned card at ``utilization`` (new, used) or the offer's price
    (cloud); ``parts`` split an owned hour into ``capital`` (value lost) and ``power``."""

    gpu: str
    currency: str
    basis: str                   # new | used | cloud
    per_hour: float | None
    price: float | None          # per card (new, used) or per GPU-hour (cloud)
    years: float | None = None
    utilization: float | None = None
    retention_per_year: float | None = None
    electricity_per_kwh: float | None = None
    power_w: float | None = None
    capital_per_hour: float | None = None
    power_per_hour: float | None = None
    source: str = ""
    as_of: str = ""
    notes: tuple[str, ...] = ()


def card_hourly_cost(catalog: Catalog, gpu: str, currency: str = DEFAULTS.currency, basis: str = "new",
                     ownership: Ownership | None = None) -> HourlyCost:
    """The hourly cost of one card of the catalog on ``basis`` (see :class:`HourlyCost`)."""
    if basis not in PRICE_BASES:
        raise UnknownNameError("price basis", basis, PRICE_BASES)
    own = ownership or Ownership()
    own.check()
    g = gpu_record(catalog, gpu)
    cur = currency.upper()
    price, src, asof = card_price(catalog, g.id, cur, basis)
    if basis == "cloud":
        return HourlyCost(g.id, cur, basis, price, price, source=src, as_of=asof)
    if price is None:
        return HourlyCost(g.id, cur, basis, None, None, own.years, own.utilization,
                          notes=(f"no {basis} price for {g.name} in the catalog",))
    notes: list[str] = []
    rho = None
    if own.resale:
        rho, how = resale_retention(catalog, g.id, cur)
        rho = rho if rho == rho else None
        notes.append(f"resale: {how}" if rho is not None else "resale: not counted (no retention figure)")
    kwh = own.electricity_per_kwh
    if kwh is None:
        kwh, how = default_electricity_per_kwh(catalog, cur)
        notes.append(f"electricity: {how}")
    capital = float(owned_cost_per_hour(price, years=own.years, utilization=own.utilization,
                                        retention_per_year=rho))
    power = float(energy_cost(g.tdp_w, 1.0, kwh, own.pue)) if g.tdp_w else 0.0
    if not g.tdp_w:
        notes.append(f"power: not counted (no TDP for {g.name} in gpus.csv)")
    return HourlyCost(g.id, cur, basis, capital + power, price, own.years, own.utilization, rho, kwh, g.tdp_w,
                      capital, power, src, asof, tuple(notes))


def hourly_costs(catalog: Catalog, gpu: str, currency: str = DEFAULTS.currency,
                 ownership: Ownership | None = None) -> dict[str, HourlyCost]:
    """:func:`card_hourly_cost` on every basis (new, used, cloud)."""
    return {b: card_hourly_cost(catalog, gpu, currency, b, ownership) for b in PRICE_BASES}


def token_costs(catalog: Catalog, gpu: str, tokens_per_s, n_cards, currency: str = DEFAULTS.currency,
                ownership: Ownership | None = None) -> dict[str, float | None]:
    """Cost of 1M tokens from ``n_cards`` cards of ``gpu`` producing ``tokens_per_s`` together, on each
    price basis (new, used: owned at ``ownership``; cloud: the offer) [currency]; None without a price."""
    out: dict[str, float | None] = {}
    for basis, h in hourly_costs(catalog, gpu, currency, ownership).items():
        v = None if h.per_hour is None else float(cost_per_million_tokens(tokens_per_s, n_cards, h.per_hour))
        out[basis] = v if v is not None and math.isfinite(v) else None
    return out


def job_costs(catalog: Catalog, gpu: str, hours: float, n_cards: int, currency: str = DEFAULTS.currency,
              ownership: Ownership | None = None) -> dict[str, float | None]:
    """Cost of a job that runs ``hours`` on ``n_cards`` cards of ``gpu``, on each price basis [currency]."""
    return {basis: None if h.per_hour is None else float(job_cost(hours * n_cards, h.per_hour))
            for basis, h in hourly_costs(catalog, gpu, currency, ownership).items()}


def calendar_ownership(ownership: Ownership | None = None) -> Ownership:
    """The same assumptions, counted over every hour the card is owned (utilization 1)."""
    return replace(ownership or Ownership(), utilization=1.0)


__all__ = ["Ownership", "HourlyCost", "resale_value", "energy_cost", "owned_cost_per_hour",
           "cost_per_million_tokens", "job_cost", "resale_retention", "default_electricity_per_kwh",
           "card_hourly_cost", "hourly_costs", "token_costs", "job_costs", "calendar_ownership", "SITE_TARIFF"]
