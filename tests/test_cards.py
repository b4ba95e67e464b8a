"""Card ranking on a small hand-made catalog, with every expected figure computed by hand here."""

from __future__ import annotations

import pytest

from gpucost.cards import Need, pareto_frontier, rank_cards
from gpucost.catalog import Catalog
from gpucost.errors import GpucostError, UnknownNameError

from .conftest import ROOT

TINY = ROOT / "tests" / "fixtures" / "tiny_catalog"


@pytest.fixture
def cat() -> Catalog:
    return Catalog(data_dir=TINY)


def test_rank_by_tflops_per_1k_in_hand_computed_order(cat):
    r = rank_cards(Need(min_vram_gib=24, precision="bf16", price_basis="new"), cat)
    # by hand: 5090 209.5/1999*1000 = 104.80; 4090 165.2/1599*1000 = 103.31;
    #          A6000 154.8/4650*1000 = 33.29; A100 312/15000*1000 = 20.80; 3060 (12 GiB) and V100 (16) too small
    assert [c.id for c in r.cards] == ["rtx-5090", "rtx-4090", "rtx-a6000", "a100-80gb-sxm"]
    assert r.cards[0].tflops_per_1k == pytest.approx(104.80, abs=0.01)
    assert r.cards[1].tflops_per_1k == pytest.approx(103.31, abs=0.01)
    assert r.cards[3].gbps_per_1k == pytest.approx(2039 / 15000 * 1000)  # the 200 000 server quote is left out
    assert r.cards[2].vram_per_1k == pytest.approx(48 / 4650 * 1000)
    assert r.cards[0].tflops_per_watt == pytest.approx(209.5 / 575)
    # the A6000 costs more than the 5090 and is slower: dominated, off the frontier
    assert set(r.frontier) == {"rtx-4090", "rtx-5090", "a100-80gb-sxm"}
    assert dict(r.excluded)["rtx-3060-12gb"].startswith("less than 24")


def test_min_vram_budget_and_precision_filters(cat):
    r = rank_cards(Need(min_vram_gib=40, precision="bf16"), cat)
    assert [c.id for c in r.cards] == ["rtx-a6000", "a100-80gb-sxm"]
    r = rank_cards(Need(budget=2000), cat)
    assert {c.id for c in r.cards} == {"rtx-4090", "rtx-5090", "rtx-3060-12gb"}
    # V100 has no BF16 (compute capability 7.0): left out for bf16, ranked for fp16
    r = rank_cards(Need(precision="bf16"), cat)
    assert "v100-16gb" in dict(r.excluded)
    r = rank_cards(Need(precision="fp16"), cat)
    assert "v100-16gb" in [c.id for c in r.cards]
    # FP8: only the Ada/Blackwell cards have it
    r = rank_cards(Need(precision="fp8"), cat)
    assert {c.id for c in r.cards} == {"rtx-4090", "rtx-5090"}


def test_display_currency_prefers_local_prices_else_converts(cat):
    r = rank_cards(Need(min_vram_gib=24, currency="CNY"), cat)
    price = {c.id: c.price for c in r.cards}
    assert price["rtx-4090"] == pytest.approx(12999)  # the CNY row itself, not 1599 * 7.1
    assert price["rtx-5090"] == pytest.approx(1999 * 7.1)  # no CNY row: converted through fx.csv
    assert all(c.currency == "CNY" for c in r.cards)


def test_used_price_is_median_and_cloud_price_is_cheapest_per_gpu_hour(cat):
    r = rank_cards(Need(price_basis="used", min_vram_gib=16), cat)
    assert [(c.id, c.price) for c in r.cards] == [("rtx-4090", 1700)]  # median of 1500, 1700, 1900
    r = rank_cards(Need(price_basis="cloud"), cat)
    price = {c.id: c.price for c in r.cards}
    assert price["a100-80gb-sxm"] == pytest.approx(1.79)  # 1.79 < 40.96 / 8 = 5.12
    assert price["rtx-4090"] == pytest.approx(0.69)
    # cloud metric is per 1 currency per GPU-hour: 312 / 1.79
    assert {c.id: c.tflops_per_1k for c in r.cards}["a100-80gb-sxm"] == pytest.approx(312 / 1.79)


def test_warnings_that_matter(cat):
    r = rank_cards(Need(), cat)
    warn = {c.id: " | ".join(c.warnings) for c in r.cards}
    assert "no MIG" in warn["rtx-4090"] and "no NVLink" in warn["rtx-4090"]
    assert "no FP8" in warn["a100-80gb-sxm"]  # compute capability 8.0 < 8.9
    assert "70B" in warn["rtx-4090"]  # 24 GiB < a 70B model's weights at 4 bits
    assert "70B" not in warn["a100-80gb-sxm"]
    assert "2 cards draw 900 W" in warn["rtx-4090"]


def test_bad_needs_are_clear_errors(cat):
    with pytest.raises(UnknownNameError, match="closest: fp8"):
        rank_cards(Need(precision="fp9"), cat)
    with pytest.raises(GpucostError, match="budget"):
        rank_cards(Need(budget=-5), cat)
    with pytest.raises(UnknownNameError, match="currency"):
        rank_cards(Need(currency="XYZ"), cat)


def test_pareto_frontier_by_hand():
    import numpy as np

    price = np.array([1.0, 2.0, 3.0, 4.0])
    perf = np.array([10.0, 5.0, 20.0, 20.0])
    # #1 dominated by #0 (cheaper, faster); #3 dominated by #2 (cheaper, same perf)
    assert pareto_frontier(price, perf).tolist() == [True, False, True, False]
