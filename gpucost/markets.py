"""Where a user can rent, and where an offer is: region markets, provider kinds and the user's choice
(:class:`Market`). Light (no pandas): the command line's parser reads the choices from here.

* **Markets**: an offer's market comes from its region (and currency): ``china`` (a CNY price or a
  mainland region), ``us``, ``eu``, ``apac``, else ``other``; "global" regions and marketplaces with no
  region count for every market but China. A street price (a prices.csv row) has a market by the same
  rule (:func:`street_market`), so one market governs what a user rents and what they buy.
* **Provider kinds**: hyperscaler, neocloud, marketplace.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: where an offer is; a user's market is one of these or "global" (anywhere outside China: a cloud VM in
#: another region of the same world market is rentable; mainland China clouds and marketplaces need a
#: Chinese account and price in CNY)
MARKETS = ("us", "eu", "china", "apac", "other")
USER_MARKETS = ("global", *MARKETS)
#: the market a display currency implies
CURRENCY_MARKET = {"CNY": "china"}
HYPERSCALERS = {"aws", "aws-china", "gcp", "azure", "oci", "ibm", "alibaba", "tencent", "huawei", "baidu"}
MARKETPLACES = {"vast", "vastai", "runpod-community", "primeintellect", "shadeform", "tensordock", "hengyuan",
                "suanjia", "matpool", "autodl", "spheron", "lium"}

_CN = re.compile(r"(^cn-|china|beijing|shanghai|hangzhou|shenzhen|guangzhou|chengdu|ningxia|\bcn\b)", re.I)
_EU = re.compile(r"(^eu|europe|\beu\b|france|germany|netherlands|finland|sweden|norway|iceland|poland|spain|"
                 r"italy|romania|bulgaria|denmark|ireland|uk-|london|frankfurt|paris|amsterdam|stockholm|"
                 r"westeurope|northeurope|francecentral|germanywestcentral|uksouth|swedencentral)", re.I)
_US = re.compile(r"(^us|\bus\b|north america|\bna\b|canada|^ca-|eastus|westus|centralus|southcentralus|"
                 r"northcentralus|virginia|oregon|ohio|texas|california|iowa|utah|georgia|florida|maryland|"
                 r"nevada|arizona|new york|chicago|dallas|seattle)", re.I)
_APAC = re.compile(r"(^ap-|asia|japan|tokyo|osaka|korea|seoul|singapore|india|mumbai|australia|sydney|"
                   r"hong kong|\bhk\b|taiwan|\bas\b|jp|southeastasia|eastasia)", re.I)


def market_of(region: str, currency: str = "USD") -> str:
    """The market an offer belongs to (see module docstring); ``""`` = anywhere but China."""
    r = str(region or "").strip()
    if currency.upper() == "CNY" or _CN.search(r):
        return "china"
    for name, pat in (("eu", _EU), ("us", _US), ("apac", _APAC)):
        if pat.search(r):
            return name
    return "" if r.lower() in ("", "global", "any", "world") else "other"


def street_market(region: str, currency: str = "USD") -> str:
    """The market a street price (a prices.csv row) is from — the rule of an offer's (:func:`market_of`)
    on the row's region and currency: a yuan price or a mainland region (``CN``) is China, ``US`` the US market, ``global`` (a worldwide retail range, an analyst's figure)
    counts for every market but China. The region column is required and transcribed from each source,
    so it decides; the channel (msrp, retail, marketplace, news-report) says how a card is sold, not where,
    and the source URL's host says nothing about it (a Chinese report copied on an English site), so
    neither moves a row to another market."""
    return market_of(region, currency)


def default_market(currency: str) -> str:
    return CURRENCY_MARKET.get(currency.upper(), "global")


#: provider kinds, in the order the pages list them
PROVIDER_KINDS = ("hyperscaler", "neocloud", "marketplace")
#: a user market choice that follows the display currency (CNY → china, else global)
AUTO = "auto"
MARKET_CHOICES = (AUTO, *USER_MARKETS)


@dataclass(frozen=True)
class Market:
    """Where a user can rent: a region market (``auto`` follows the display currency) and the kinds of
    provider they rent from (hyperscalers, neoclouds, marketplaces — hosts renting out their own machines,
    such as Vast or RunPod's community cloud). The region is a preference — a card with no offer there is
    priced where the user can rent, named "outside" —, the provider kinds a rule: an offer of a kind left
    out is never used."""

    region: str = AUTO
    kinds: tuple[str, ...] = PROVIDER_KINDS

    def __post_init__(self) -> None:
        from gpucost.errors import GpucostError, UnknownNameError

        if self.region not in MARKET_CHOICES:
            raise UnknownNameError("market", self.region, MARKET_CHOICES)
        for k in self.kinds:
            if k not in PROVIDER_KINDS:
                raise UnknownNameError("provider kind", k, PROVIDER_KINDS)
        if not self.kinds:
            raise GpucostError(f"choose at least one kind of provider ({', '.join(PROVIDER_KINDS)})")
        object.__setattr__(self, "kinds", tuple(k for k in PROVIDER_KINDS if k in self.kinds))

    def resolved(self, currency: str) -> Market:
        """This choice with ``auto`` replaced by the currency's market."""
        return self if self.region != AUTO else Market(default_market(currency), self.kinds)

    @property
    def key(self) -> str:
        """``us``, ``us:hyperscaler+neocloud``, … (what the pages keep in the URL); :meth:`from_key` reads it."""
        return self.region + ("" if self.kinds == PROVIDER_KINDS else ":" + "+".join(self.kinds))

    @classmethod
    def from_key(cls, text: str) -> Market | None:
        """The market a :attr:`key` names (also the older ``us-no-marketplaces``); None for anything else."""
        text = str(text or "").strip().lower()
        if text.endswith(_NO_MARKETPLACES):
            text = text.removesuffix(_NO_MARKETPLACES) + ":hyperscaler+neocloud"
        region, _, kinds = text.partition(":")
        names = tuple(k for k in kinds.split("+") if k) if kinds else PROVIDER_KINDS
        if region not in MARKET_CHOICES or not names or any(k not in PROVIDER_KINDS for k in names):
            return None
        return cls(region, names)


_NO_MARKETPLACES = "-no-marketplaces"


def market_for(market: Market | None, currency: str) -> Market:
    """The market prices in ``currency`` are chosen in (``None``: follow the currency)."""
    return (market or Market()).resolved(currency)


def in_market(offer_market: str, market: str) -> bool:
    """Whether an offer of ``offer_market`` can be bought in ``market`` ("" = a global offer: outside China)."""
    if market == "global":
        return offer_market != "china"
    return offer_market == market or (offer_market == "" and market != "china")


def provider_kind(provider: str) -> str:
    p = provider.lower()
    if p in HYPERSCALERS:
        return "hyperscaler"
    return "marketplace" if p in MARKETPLACES else "neocloud"


__all__ = ["MARKETS", "USER_MARKETS", "MARKET_CHOICES", "PROVIDER_KINDS", "AUTO", "Market", "market_for", "market_of",
           "street_market", "default_market", "in_market", "provider_kind", "HYPERSCALERS", "MARKETPLACES"]
