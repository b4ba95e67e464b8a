"""Every page notebook, run headless with papermill; assertions on the numbers each page records."""

from __future__ import annotations

import pytest

from .conftest import NOTEBOOKS, cli_json, run_notebook

pytestmark = [pytest.mark.notebook, pytest.mark.timeout(300)]

ALL = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))


@pytest.mark.parametrize("name", ALL)
def test_every_notebook_runs_in_both_languages_and_records_a_result(name, tmp_path):
    for lang in ("en", "zh"):
        rec = run_notebook(name, {"lang": lang}, tmp_path)
        assert rec["lang"] == lang
        assert rec["error"] is None, rec["error"]


def test_card_choice_page_agrees_with_the_cli(tmp_path):
    rec = run_notebook("01_card_choice.ipynb", {"min_vram_gib": 40.0, "precision": "fp8",
                                                "price_basis": "new"}, tmp_path)
    cli = cli_json("gpus", "--rank", "--min-vram", "40", "--precision", "fp8", "--basis", "new")
    assert rec["ranked_ids"] == [c["id"] for c in cli["cards"]]
    assert rec["frontier"] == cli["frontier"]
    assert rec["chart_points"] == len(rec["ranked_ids"]) > 0
    for c in rec["cards"]:
        assert c["vram_gib"] >= 40
        assert c["tflops_per_1k"] == pytest.approx(c["throughput"] / c["price"] * 1000)


def test_card_choice_page_in_chinese_uses_cny_and_chinese_text(tmp_path):
    rec = run_notebook("01_card_choice.ipynb", {"lang": "zh", "min_vram_gib": 24.0}, tmp_path)
    assert rec["currency"] == "CNY"
    assert all(c["currency"] == "CNY" for c in rec["cards"])
    assert "张卡符合条件" in rec["summary"]


def test_card_choice_page_shows_bad_budget_as_message_not_traceback(tmp_path):
    rec = run_notebook("01_card_choice.ipynb", {"budget": -5.0}, tmp_path)
    # the field says what is wrong; the ranking is computed without a budget and marked out of date
    assert rec["stale"] and "'-5' is out of range" in rec["invalid"]["budget"]
    assert rec["need"]["budget"] is None and rec["ranked_ids"]
