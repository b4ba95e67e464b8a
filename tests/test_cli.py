"""The gpucost command line as a user runs it (a subprocess, JSON on stdout)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from .conftest import cli_json, run_cli


def test_help_lists_every_subcommand():
    proc = run_cli("--help")
    assert proc.returncode == 0
    from gpucost.commands import COMMANDS

    for name in COMMANDS:
        assert name in proc.stdout


def test_help_does_not_import_heavy_libraries():
    code = ("import sys; from gpucost.cli import build_parser; build_parser(); "
            "print(sorted(m for m in ('pandas','numpy','plotly','ipywidgets','pynvml') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_gpus_json_fields_and_provenance():
    out = cli_json("gpus")
    assert len(out) >= 40
    for g in out:
        for key in ("id", "name", "vendor", "vram_gib", "mem_bandwidth_gbps", "bf16_tflops", "fp8_tflops",
                    "tdp_w", "price_new", "price_used", "currency", "source", "as_of"):
            assert key in g
        assert g["source"] and g["as_of"]
    # default order: most memory first
    vram = [g["vram_gib"] for g in out]
    assert vram == sorted(vram, reverse=True)


def test_gpus_filters_sort_and_currency():
    out = cli_json("gpus", "--min-vram", "80", "--vendor", "nvidia", "--sort", "mem_bandwidth_gbps")
    assert out and all(g["vram_gib"] >= 80 and g["vendor"] == "NVIDIA" for g in out)
    bw = [g["mem_bandwidth_gbps"] for g in out]
    known = [b for b in bw if b is not None]
    assert known == sorted(known, reverse=True)
    assert bw[:len(known)] == known          # cards without a published figure (A800, H800 PCIe) come last
    usd = {g["id"]: g for g in cli_json("gpus", "--currency", "USD")}
    eur = {g["id"]: g for g in cli_json("gpus", "--currency", "EUR")}
    rate = {r["currency"]: r["per_usd"] for r in _fx()}["EUR"]
    # a card whose new prices are all in USD: its EUR price is the USD one converted through fx.csv
    only_usd = _cards_with_only_usd_new_prices()
    assert only_usd
    for gid in only_usd:
        assert eur[gid]["currency"] == "EUR"
        assert eur[gid]["price_new"] == pytest.approx(usd[gid]["price_new"] * rate)


def _cards_with_only_usd_new_prices() -> list[str]:
    import csv

    from .conftest import DATA

    cur: dict[str, set] = {}
    with open(DATA / "prices.csv", newline="") as f:
        for r in csv.DictReader(f):
            if r["condition"] == "new":
                cur.setdefault(r["gpu_id"], set()).add(r["currency"])
    return [g for g, c in cur.items() if c == {"USD"}]


def _fx():
    import csv

    from .conftest import DATA

    with open(DATA / "fx.csv", newline="") as f:
        return [dict(r, per_usd=float(r["per_usd"])) for r in csv.DictReader(f)]


def test_rank_json_matches_need():
    out = cli_json("gpus", "--rank", "--min-vram", "24", "--precision", "fp8", "--basis", "new")
    assert out["need"]["precision"] == "fp8"
    assert out["cards"], "some FP8 card with >= 24 GiB has a new price"
    per = [c["tflops_per_1k"] for c in out["cards"]]
    assert per == sorted(per, reverse=True)
    assert all(c["vram_gib"] >= 24 for c in out["cards"])


def test_rank_by_fp4_lists_blackwell_cards_at_their_dense_fp4_rate():
    """FP4 tensor math is Blackwell's (compute capability 10 and 12): a GeForce RTX 5090 ranks at half NVIDIA's
    3352 "AI TOPS" (FP4 with sparsity), an RTX 4090 (Ada, FP8 but no FP4) is left out, not ranked at 16 bits."""
    out = cli_json("gpus", "--rank", "--precision", "fp4", "--basis", "new")
    ranked = {c["id"]: c["throughput"] for c in out["cards"]}
    assert ranked["rtx-5090"] == 1676
    assert ranked["rtx-pro-6000-blackwell"] == 2015.2
    excluded = {e["id"]: e["reason"] for e in out["excluded"]}
    assert "rtx-4090" not in ranked and "FP4" in excluded["rtx-4090"]


def test_bad_options_exit_2_with_one_line():
    for args in (["gpus", "--sort", "speed"], ["gpus", "--vendor", "Nvidai"], ["gpus", "--currency", "XYZ"],
                 ["gpus", "--min-vram", "lots"], ["gpus", "--min-vram", "-1"], ["nosuchcommand"]):
        proc = run_cli(*args, "--json")
        assert proc.returncode == 2, args
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert "Traceback" not in proc.stderr
    proc = run_cli("gpus", "--vendor", "Nvidai")
    assert "closest: NVIDIA" in proc.stderr


def test_python_dash_m_and_console_script_agree():
    import shutil
    from pathlib import Path

    exe = shutil.which("gpucost", path=str(Path(sys.executable).parent))
    a = json.loads(run_cli("gpus", "--json").stdout)
    if exe:
        b = json.loads(subprocess.run([exe, "gpus", "--json"], capture_output=True, text=True).stdout)
        assert a == b
