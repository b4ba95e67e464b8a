"""The one cost of a GPU-hour (gpucost.economics), computed by hand from the catalog's figures."""

from __future__ import annotations

import math
from datetime import date

import pytest

from gpucost import economics as ec
from gpucost.catalog import Catalog
from gpucost.errors import GpucostError


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return Catalog()


def test_owned_hour_by_hand():
    # 1600 bought, kept 3 years at rho 0.8: sells for 1600 × 0.8^3 = 819.2; 780.8 lost over
    # 3 × 8760 × 0.5 = 13,140 busy hours = 0.059422 per hour; 450 W at 0.15 per kWh, PUE 1.2: 0.081 per hour
    got = ec.owned_cost_per_hour(1600, years=3, utilization=0.5, retention_per_year=0.8, power_w=450,
                                 electricity_per_kwh=0.15, pue=1.2)
    assert got == pytest.approx(780.8 / 13140 + 0.45 * 1.2 * 0.15)
    # no resale, no power: the straight-line price over the busy hours
    assert ec.owned_cost_per_hour(1600, years=3, utilization=1.0) == pytest.approx(1600 / 26280)


def test_tokens_and_jobs_by_hand():
    # 2 cards at 2.00 an hour serving 1000 tokens/s together: 4.00 per 3.6M tokens
    assert ec.cost_per_million_tokens(1000, 2, 2.0) == pytest.approx(4 / 3.6)
    assert math.isnan(float(ec.cost_per_million_tokens(0, 1, 2.0)))
    assert ec.job_cost(10, 2.5) == 25


def test_resale_value_and_energy_by_hand():
    assert ec.resale_value(1000, 0.9, 24, fee=0.1) == pytest.approx(1000 * 0.9 * 0.81)
    assert ec.energy_cost(500, 10, 0.2, pue=1.5) == pytest.approx(0.5 * 1.5 * 10 * 0.2)


def test_card_hourly_cost_reads_the_catalog(cat):
    import csv

    from .conftest import DATA

    rows = list(csv.DictReader(open(DATA / "prices.csv", encoding="utf-8")))
    quotes = [r for r in rows if r["gpu_id"] == "rtx-4090" and r["condition"] == "new"
              and r["currency"] == "USD" and r["channel"] != "server-quote"]
    # the quotes of the year up to the newest (2026: 1,800 to 2,800; the 2022 launch MSRP is left out)
    newest = max(date.fromisoformat(r["as_of"]) for r in quotes)
    new_usd = sorted(float(r["price"]) for r in quotes if (newest - date.fromisoformat(r["as_of"])).days <= 365)
    median = (new_usd[(len(new_usd) - 1) // 2] + new_usd[len(new_usd) // 2]) / 2
    h = ec.card_hourly_cost(cat, "RTX 4090", "USD", "new", ec.Ownership(electricity_per_kwh=0.1))
    assert h.price == pytest.approx(median)
    rho, _ = ec.resale_retention(cat, "rtx-4090")
    want_capital = median * (1 - rho**3) / (3 * 8760 * 0.5)
    assert h.capital_per_hour == pytest.approx(want_capital)
    assert h.power_per_hour == pytest.approx(0.450 * 0.1)  # 450 W TDP (gpus.csv) at 0.1 per kWh
    assert h.per_hour == pytest.approx(want_capital + 0.045)


def test_ownership_rejects_nonsense(cat):
    for bad in (ec.Ownership(years=0), ec.Ownership(utilization=0), ec.Ownership(utilization=1.5),
                ec.Ownership(electricity_per_kwh=-1), ec.Ownership(pue=0.5), ec.Ownership(years=math.inf)):
        with pytest.raises(GpucostError):
            ec.card_hourly_cost(cat, "rtx-4090", "USD", "new", bad)


def test_spot_hazard_by_hand():
    from gpucost.spot import interruption_rate_per_hour, spot_bucket

    # 10 % of instances interrupted within a 730-hour month: λ = −ln(0.9) / 730
    assert interruption_rate_per_hour(0.1) == pytest.approx(-math.log(0.9) / 730)
    b = spot_bucket(Catalog(), "5-10%")
    assert (b.per_month, b.low, b.high) == (0.075, 0.05, 0.10)
    assert b.rate_per_hour == pytest.approx(-math.log(1 - 0.075) / 730)
