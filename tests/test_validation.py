"""The estimators against every published measurement in data/benchmarks.csv, with the issue's bounds on
the median absolute error of the held-out rows (rows not used to fit any factor)."""

from __future__ import annotations

import pytest

from gpucost.catalog import Catalog
from gpucost.speed import efficiency_table
from gpucost.validation import BOUNDS, CATEGORIES, convert, markdown_table, summary, validate


@pytest.fixture(scope="module")
def results():
    return validate(Catalog())


@pytest.fixture(scope="module")
def summ(results):
    return summary(results).set_index("category")


def test_units_are_converted_explicitly():
    assert convert(14.38, "GB") == (pytest.approx(14.38e9 / 2**30), "GiB")   # 13.39 GiB
    assert convert(37235.11, "MiB") == (pytest.approx(37235.11 / 1024), "GiB")
    assert convert(18.9, "GiB") == (18.9, "GiB")
    assert convert(115.42, "tokens/s") == (115.42, "tokens/s")


def test_every_row_is_estimated_or_skipped_for_a_stated_reason(results):
    assert len(results) == len(Catalog().table("benchmarks"))
    skipped = results[results["role"] == "skipped"]
    assert skipped["reason"].str.len().gt(0).all()
    # what is skipped today: rows whose model is not in models.csv (Qwen v1, GPT-3-style MFU rows)
    assert skipped["reason"].str.contains("not in models.csv").all()
    est = results[results["role"] != "skipped"]
    assert est["estimate"].notna().all() and (est["estimate"] > 0).all()


def test_calibration_rows_are_kept_out_of_the_held_out_error(results):
    calib = {r for e in efficiency_table().values() for r in e.calibration_rows}
    marked = set(results.loc[results["role"] == "calibration", "id"])
    assert marked == calib & set(results["id"])
    assert not (marked & set(results.loc[results["role"] == "validation", "id"]))


def test_held_out_decode_rows_include_models_and_cards_not_used_to_calibrate(results):
    dec = results[results["category"] == "decode_speed"]
    cal, val = dec[dec["role"] == "calibration"], dec[dec["role"] == "validation"]
    assert set(val["model"]) - set(cal["model"])   # e.g. Llama 2, Qwen2.5-1.5B/3B/14B
    assert set(val["gpu"]) - set(cal["gpu"])       # e.g. RTX 3090, L40S, H100 PCIe, RTX A6000


@pytest.mark.parametrize("category", ["file_size", "inference_memory", "training_memory", "decode_speed"])
def test_median_absolute_error_within_the_bound(summ, category):
    row = summ.loc[category]
    assert row["validation_rows"] >= 5, "too few held-out rows to judge"
    assert row["median_abs_error_pct"] <= BOUNDS[category], markdown_table(summ.reset_index())


def test_markdown_error_table_lists_every_category(summ):
    md = markdown_table(summ.reset_index())
    for cat in CATEGORIES:
        assert f"| {cat} |" in md
    assert md.count("\n") == len(CATEGORIES) + 1
