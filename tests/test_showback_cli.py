"""`gpucost showback` as a user runs it: from each source (a sacct export, a usage CSV, a real Prometheus,
the probe's demo), its JSON and CSV, and one line with exit 2 on bad input. Amounts worked out by hand from
the fixtures (see tests/test_showback_sources.py for the same numbers through the engine)."""

from __future__ import annotations

import pytest

from gpucost.catalog import Catalog
from gpucost.economics import calendar_ownership, card_hourly_cost

from .conftest import ROOT, cli_json, run_cli
from .test_showback_sources import prometheus_url  # noqa: F401 - the fixture (a real prometheus)

FIX = ROOT / "tests" / "fixtures" / "showback"
SACCT = str(FIX / "sacct_2026-11.txt")


def names_costs(out: dict) -> dict[str, float]:
    return {ln["name"]: ln["cost"] for ln in out["lines"]}


def test_last_months_bill_from_sacct_at_my_hourly_price():
    out = cli_json("showback", "--from", "csv", SACCT, "--gpus-per-node", "4", "--hourly", "1",
                   "--period", "2026-11", "--by", "project", "--idle", "separate")
    # 1.00 per GPU-hour: physics 20 + 144 GPU-h, chemistry 24 + 4; 2 nodes × 4 GPUs × 720 h = 5760.00
    assert names_costs(out) == {"physics": 164.0, "chemistry": 28.0, "(idle)": 5568.0}
    assert out["total"] == 5760.0 and out["period"]["hours"] == 720
    assert out["source"] == "sacct sacct_2026-11.txt"


def test_owned_cards_cost_what_economics_says():
    out = cli_json("showback", "--from", "csv", SACCT, "--gpus-per-node", "4", "--gpu", "a100-80gb-sxm",
                   "--period", "2026-11", "--idle", "spread")
    h = card_hourly_cost(Catalog(), "a100-80gb-sxm", "USD", "new", calendar_ownership())
    node_cents = round(4 * h.per_hour * 720 * 100)
    assert out["total_cents"] == 2 * node_cents == sum(ln["cost_cents"] for ln in out["lines"])
    assert {c["basis"] for c in out["cards"]} == {"owned"}
    assert out["cards"][0]["per_hour"] == pytest.approx(4 * h.per_hour)


def test_generic_csv_as_csv_output():
    proc = run_cli("showback", "--from", "csv", str(FIX / "usage_ws1.csv"), "--hourly", "1", "--csv",
                   "--idle", "separate")
    assert proc.returncode == 0, proc.stderr
    rows = [ln.split(",")[:2] for ln in proc.stdout.splitlines()]
    assert rows == [["user", "cost_usd"], ["alice", "0.80"], ["bob", "0.40"], ["(idle)", "0.80"],
                    ["(total)", "2.00"]]


def test_probe_demo_bills_several_users():
    out = cli_json("showback", "--from", "probe", "--demo", "--watch", "3600", "--interval", "60",
                   "--hourly", "1", "--idle", "separate")
    # the demo's hour: see test_demo_processes_of_several_users_become_a_bill
    assert names_costs(out) == {"carol": 0.35, "alice": 0.23, "bob": 0.11, "dave": 0.08, "(idle)": 1.23}


@pytest.mark.promtool
def test_prometheus_bill_by_namespace(prometheus_url):  # noqa: F811
    out = cli_json("showback", "--from", "prometheus", prometheus_url, "--period",
                   "2026-11-02T00:00..2026-11-02T02:00", "--step", "300", "--by", "project", "--idle", "separate",
                   "--hourly", "1")
    assert names_costs(out) == {"team-a": 2.06, "team-b": 1.44, "(idle)": 4.50}
    # the cards' model comes from dcgm-exporter's modelName label
    assert {c["gpu_id"] for c in out["cards"]} == {"a100-80gb-sxm"}


def test_text_output_has_the_lines_and_the_total():
    proc = run_cli("showback", "--from", "csv", str(FIX / "usage_ws1.csv"), "--hourly", "1", "--idle", "separate")
    assert proc.returncode == 0, proc.stderr
    assert "alice" in proc.stdout and "total" in proc.stdout and "2.00 USD" in proc.stdout


@pytest.mark.parametrize("args, words", [
    (("--from", "slurm", "x"), "unknown --from source 'slurm'"),
    (("--from", "csv"), "--from csv takes a FILE"),
    (("--from", "probe", "extra"), "--from probe takes no argument"),
    (("--from", "prometheus", "http://127.0.0.1:9"), "needs --period"),
    (("--from", "csv", "nope.csv"), "nope.csv: file not found"),
    (("--from", "csv", SACCT), "--gpus-per-node"),
    (("--from", "csv", SACCT, "--gpus-per-node", "4", "--period", "2026-11"), "--gpu ID"),
    (("--from", "csv", SACCT, "--gpus-per-node", "4", "--hourly", "1", "--period", "2026-13"), "bad period"),
    (("--from", "csv", SACCT, "--gpus-per-node", "4", "--gpu", "a100-80gb-sxm", "--currency", "XYZ"),
     "unknown currency"),
    (("--from", "csv", SACCT, "--gpus-per-node", "4", "--gpu", "a100-80gb-sxn"), "closest: a100-80gb-sxm"),
    (("--from", "csv", SACCT, "--idle", "pro-rata"), "--idle"),
    (("--from", "csv", SACCT, "--hourly", "-1"), "--hourly"),
    (("--from", "csv", SACCT, "--hourly", "1", "--rented"), "not allowed with"),
    (("--from", "prometheus", "http://127.0.0.1:9", "--period", "2026-11"), "cannot reach Prometheus"),
])
def test_bad_input_exits_2_with_one_line(args, words):
    proc = run_cli("showback", *args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert words in proc.stderr


def test_bad_csv_cell_names_file_row_and_column(tmp_path):
    f = tmp_path / "use.csv"
    f.write_text("time,card,sm_pct\n2026-11-01T00:00Z,g,10\n2026-11-01T00:01Z,g,lots\n", encoding="utf-8")
    proc = run_cli("showback", "--from", "csv", str(f), "--hourly", "1")
    assert proc.returncode == 2
    assert proc.stderr.strip() == ("gpucost showback: use.csv, row 2 (line 3), column 'sm_pct': 'lots' is not "
                                   "a number")


def test_probe_without_a_gpu_says_so():
    from gpucost import probe

    if probe.is_available():
        pytest.skip("this machine has an NVIDIA GPU")
    proc = run_cli("showback", "--from", "probe", "--watch", "1", "--interval", "1")
    assert proc.returncode == 2
    assert proc.stderr.startswith("gpucost showback: no NVIDIA GPU found: ")
    assert len(proc.stderr.strip().splitlines()) == 1
