"""The bundled tables and the loader: provenance, datasheet spot checks, and every bad-input case."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from gpucost.catalog import SCHEMAS, Catalog, load_skypilot_vms, load_table
from gpucost.errors import DataError, UnknownNameError

from .conftest import DATA, ROOT, cli_json, run_cli


def _rows(path: Path) -> list[dict]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("name", [n for n in SCHEMAS if (DATA / f"{n}.csv").exists()])
def test_every_bundled_row_has_source_and_date(name):
    rows = _rows(DATA / f"{name}.csv")
    assert rows, name
    for i, r in enumerate(rows, start=1):
        assert r["source"].strip(), f"{name}.csv row {i} has no source"
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", r["as_of"].strip()), f"{name}.csv row {i} as_of"
    load_table(name)  # and the loader accepts it


def test_catalog_has_at_least_40_accelerators_with_required_cards():
    gpus = load_table("gpus")
    assert len(gpus) >= 40
    ids = set(gpus["id"])
    for gid in ["rtx-3060-12gb", "rtx-3090", "rtx-4060-ti-16gb", "rtx-4070-ti-super", "rtx-4080-super",
                "rtx-4090", "rtx-5080", "rtx-5090", "rtx-a6000", "rtx-6000-ada", "p100-16gb", "v100-16gb",
                "v100-32gb", "t4", "a10", "a10g", "a30", "a40", "l4", "l40", "l40s", "a100-40gb-pcie",
                "a100-80gb-pcie", "a100-40gb-sxm", "a100-80gb-sxm", "h100-pcie", "h100-sxm", "h100-nvl",
                "h200", "b200", "rx-7900-xtx", "radeon-pro-w7900", "mi210", "mi250", "mi300x"]:
        assert gid in ids, gid


# Spot checks against the vendors' datasheets (memory GB, bandwidth GB/s, dense BF16 TFLOPS, TDP W):
#  H100 SXM: NVIDIA H100 datasheet — 80 GB, 3.35 TB/s, BF16 1979 TFLOPS with sparsity → 989.5 dense, 700 W
#  A100 80GB SXM: NVIDIA A100 datasheet — 80 GB, 2039 GB/s, BF16 312 (dense; 624 sparse), 400 W
#  RTX 4090: Ada Lovelace architecture whitepaper — 24 GB, 1008 GB/s, FP16/BF16 tensor with FP32
#            accumulate 165.2 dense, 450 W
#  L4: NVIDIA L4 datasheet — 24 GB, 300 GB/s, BF16 242 with sparsity → 121 dense, 72 W
#  T4: NVIDIA T4 datasheet — 16 GB, 320 GB/s, FP16 tensor 65 TFLOPS, no BF16, 70 W
#  MI300X: AMD Instinct MI300X datasheet — 192 GB, 5.3 TB/s, BF16 1307.4 dense, 750 W
SPOT = {
    "h100-sxm": (80, 3350, 989.5, 700),
    "a100-80gb-sxm": (80, 2039, 312, 400),
    "rtx-4090": (24, 1008, 165.2, 450),
    "l4": (24, 300, 121, 72),
    "t4": (16, 320, None, 70),
    "mi300x": (192, 5300, 1307.4, 750),
}


@pytest.mark.parametrize("gid", list(SPOT))
def test_spot_check_against_datasheets(gid):
    g = Catalog().gpu(gid)
    vram, bw, bf16, tdp = SPOT[gid]
    assert g["vram_gib"] == pytest.approx(vram, rel=0.01)
    assert g["mem_bandwidth_gbps"] == pytest.approx(bw, rel=0.01)
    assert g["tdp_w"] == pytest.approx(tdp, rel=0.01)
    if bf16 is None:
        assert g["bf16_tflops"] != g["bf16_tflops"]  # NaN: Turing has no BF16
    else:
        assert g["bf16_tflops"] == pytest.approx(bf16, rel=0.01)


@pytest.mark.parametrize("name,expected", [
    ("RTX 4090", "rtx-4090"), ("NVIDIA GeForce RTX 4090", "rtx-4090"), ("A100 80GB SXM", "a100-80gb-sxm"),
    ("NVIDIA A100-SXM4-80GB", "a100-80gb-sxm"), ("Tesla T4", "t4"), ("NVIDIA H200", "h200"),
    ("h100-sxm", "h100-sxm"),
])
def test_gpu_names_as_people_and_nvml_write_them(name, expected):
    assert Catalog().gpu_id(name) == expected


def test_unknown_gpu_gets_closest_names():
    with pytest.raises(UnknownNameError, match=r"unknown GPU 'RTX 4099'; closest: .*4090"):
        Catalog().gpu_id("RTX 4099")


def test_every_offer_and_price_refers_to_a_catalog_gpu_and_known_currency():
    cat = Catalog()
    ids = set(cat.gpus["id"])
    assert set(cat.offers["gpu_id"]) <= ids and set(cat.prices["gpu_id"]) <= ids
    assert {"USD", "CNY", "EUR"} <= set(cat.fx["currency"])
    assert {"USD", "CNY"} <= set(cat.prices["currency"])
    providers = {p.lower() for p in cat.offers["provider"]}
    for p in ["aws", "gcp", "azure", "lambda", "runpod", "vast"]:
        assert any(p in q for q in providers), p
    assert len(set(cat.offers[cat.offers["currency"] == "CNY"]["provider"])) >= 1  # AWS China, dated


def test_every_price_is_dated_when_it_was_true_not_when_it_was_read():
    # issue 17: rows whose only date was the day the page was read (notes "undated source, read …") are
    # redated from another document or dropped; the V100 rows citing an AI chat page are gone
    cat = Catalog()
    for name, df in (("prices", cat.prices), ("cloud_offers", cat.offers)):
        notes = df["notes"].fillna("").astype(str)
        unresolved = df[notes.str.contains("undated source, read") & ~notes.str.contains("redated")]
        assert unresolved.empty, (name, unresolved[["gpu_id", "source"]].to_dict("records"))
        assert not df["source"].astype(str).str.contains("claude.ai").any(), name


def test_currency_round_trip_is_stable():
    cat = Catalog()
    for cur in cat.currencies():
        assert cat.convert(cat.convert(1234.5, "USD", cur), cur, "USD") == pytest.approx(1234.5)


# ------------------------------------------------------------------------------------------------
# Bad files, through GPUCOST_DATA_DIR and the CLI: exit 2, one line naming file, row and column.
# ------------------------------------------------------------------------------------------------

def _edit(path: Path, row: int | None, column: str, value: str) -> None:
    rows = _rows(path)
    header = list(rows[0].keys())
    if row is None:  # rename a column
        header = [value if h == column else h for h in header]
        rows = [{(value if k == column else k): v for k, v in r.items()} for r in rows]
    else:
        rows[row - 1][column] = value
    with path.open("w", newline="", encoding="utf-8") as f:
        wr = csv.DictWriter(f, fieldnames=header)
        wr.writeheader()
        wr.writerows(rows)


BAD_CASES = [
    # (file, row, column, new value, expected message fragment)
    ("gpus.csv", 3, "vram_gib", "lots", "row 3 (line 4), column 'vram_gib': 'lots' is not a number"),
    ("gpus.csv", 5, "tdp_w", "-450", "row 5 (line 6), column 'tdp_w': -450 must be greater than zero"),
    ("gpus.csv", 2, "mem_bandwidth_gbps", "0", "column 'mem_bandwidth_gbps': 0 must be greater than zero"),
    ("gpus.csv", None, "vram_gib", "vram_gb", "missing column 'vram_gib'; found 'vram_gb' — misspelt?"),
    ("gpus.csv", 4, "vendor", "Nvidai", "'Nvidai' is not one of NVIDIA, AMD, Intel, Huawei (closest: NVIDIA)"),
    ("gpus.csv", 2, "as_of", "last year", "column 'as_of': 'last year' is not a date"),
    ("gpus.csv", 2, "source", "", "column 'source': empty, a value is required"),
    ("prices.csv", 2, "currency", "USX", "column 'currency': unknown currency 'USX'"),
    ("prices.csv", 1, "gpu_id", "rtx-4099", "column 'gpu_id': unknown gpus id 'rtx-4099'; closest: rtx-4090"),
    ("cloud_offers.csv", 2, "gpu_id", "h100-sxn", "column 'gpu_id': unknown gpus id 'h100-sxn'"),
    ("fx.csv", 2, "per_usd", "0", "column 'per_usd': 0 must be greater than zero"),
    # inf used to pass every "> 0" check and silently move answers (issue 19)
    ("prices.csv", 1, "price", "inf", "column 'price': 'inf' is not a finite number"),
    ("gpus.csv", 2, "vram_gib", "1e308", "column 'vram_gib': 1e308 is out of range (at most 1e+12)"),
]


@pytest.mark.parametrize("fname,row,column,value,expected", BAD_CASES)
def test_bad_table_gives_one_line_and_exit_2(data_copy, fname, row, column, value, expected):
    _edit(data_copy / fname, row, column, value)
    proc = run_cli("gpus", "--json", env={"GPUCOST_DATA_DIR": str(data_copy)})
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert fname in lines[0]
    assert expected in lines[0]


def test_duplicate_id(data_copy):
    rows = _rows(data_copy / "gpus.csv")
    dup = rows[1]["id"]
    _edit(data_copy / "gpus.csv", 4, "id", dup)
    with pytest.raises(DataError, match=rf"row 4 \(line 5\), column 'id': duplicate id '{dup}'"):
        load_table("gpus", data_dir=data_copy)


def test_empty_and_header_only_files(data_copy):
    (data_copy / "fx.csv").write_text("")
    with pytest.raises(DataError, match="fx.csv: the file is empty"):
        load_table("fx", data_dir=data_copy)
    (data_copy / "fx.csv").write_text("currency,per_usd,source,as_of,notes\n")
    with pytest.raises(DataError, match="header but no rows"):
        load_table("fx", data_dir=data_copy)


def test_user_prices_replace_bundled_and_other_tables_fall_back(tmp_path):
    (tmp_path / "prices.csv").write_text(
        "gpu_id,condition,price,currency,region,channel,source,as_of,notes\n"
        "rtx-4090,new,1000,USD,US,retail,my quote,2026-11-01,\n")
    out = cli_json("gpus", env={"GPUCOST_DATA_DIR": str(tmp_path)})
    by_id = {g["id"]: g for g in out}
    assert by_id["rtx-4090"]["price_new"] == 1000
    assert by_id["h100-sxm"]["price_new"] is None  # only the user's prices are used
    assert len(out) >= 40  # gpus.csv came from the bundled data


def test_unknown_table_name_lists_valid_names():
    with pytest.raises(UnknownNameError, match="valid tables: gpus, prices"):
        load_table("gpu")


# ------------------------------------------------------------------------------------------------
# SkyPilot vms.csv import (fixtures copied from the real catalog: see tests/fixtures/README.md)
# ------------------------------------------------------------------------------------------------

SKY = sorted((ROOT / "tests" / "fixtures").glob("skypilot_*_vms_sample.csv"))


@pytest.mark.parametrize("path", SKY, ids=[p.name for p in SKY])
def test_skypilot_vms_loads_as_cloud_offers(path):
    raw = _rows(path)
    offers = load_skypilot_vms(path, provider=path.name.split("_")[1])
    assert len(offers) > 0
    assert list(offers.columns) == list(SCHEMAS["cloud_offers"])
    # every folded row's on-demand price is the lowest over its zones in the raw file
    for _, o in offers.iterrows():
        zone_prices = [float(r["Price"]) for r in raw
                       if (r["InstanceType"] or f"{r['AcceleratorName']} x{float(r['AcceleratorCount']):g} (GPU only)")
                       == o["InstanceType"] and r["AcceleratorName"] == o["AcceleratorName"]
                       and r.get("Region", "") == o["Region"] and r["Price"]]
        if zone_prices:
            assert o["Price"] == pytest.approx(min(zone_prices))
        else:
            assert o["Price"] != o["Price"]  # NaN stays empty
    assert offers["gpu_id"].isin(Catalog().gpus["id"]).all()


def test_skypilot_file_in_data_dir_is_used_as_cloud_offers(tmp_path):
    if not SKY:
        pytest.skip("no SkyPilot fixture")
    (tmp_path / "cloud_offers.csv").write_bytes(SKY[0].read_bytes())
    offers = load_table("cloud_offers", data_dir=tmp_path)
    assert len(offers) > 0 and (offers["currency"] == "USD").all()
