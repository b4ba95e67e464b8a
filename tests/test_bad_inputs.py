"""The last bad inputs of issue 26: each exits 2 with one line naming the value (flag, file, row, column, the
allowed range or the closest names), or is accepted by a stated rule; and a property over every numeric
column of every table: a non-finite or extreme value is refused naming its file, row and column, or (where
the column admits it) loads — never a traceback, never a value outside the column's bounds."""

from __future__ import annotations

import contextlib
import csv
import functools
import io
import json
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpucost.catalog import SCHEMAS, bundled_data_dir, column_bounds, load_table
from gpucost.cli import main
from gpucost.errors import DataError

from .conftest import DATA, run_cli


def run(argv: list[str]) -> tuple[int, str, str]:
    """``gpucost ARGV`` in this process (a subprocess costs a second of imports): exit code, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(argv)
        except SystemExit as exc:  # argparse's exit 2
            rc = exc.code if isinstance(exc.code, int) else 1
    return rc, out.getvalue(), err.getvalue()


def one_line_error(rc: int, out: str, err: str, *fragments: str) -> None:
    assert rc == 2, (rc, err[-500:])
    assert out == "", out[-300:]
    assert err.count("\n") == 1 and len(err.splitlines()) == 1, err   # splitlines: \u2028, \x85 count too
    assert "Traceback" not in err
    for f in fragments:
        assert f in err, (f, err)


@functools.cache
def _bundled_rows(table: str) -> tuple[tuple[str, ...], ...]:
    text = (bundled_data_dir() / f"{table}.csv").read_text(encoding="utf-8-sig")
    return tuple(tuple(r) for r in csv.reader(io.StringIO(text)))


def _rows(table: str) -> list[list[str]]:
    """The bundled table's rows as text (a copy to edit), header first."""
    return [list(r) for r in _bundled_rows(table)]


def _write(path: Path, rows: list[list[str]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(rows)
    return path


def _override(folder: Path, table: str, edits: dict[tuple[str, str], str], key: str = "id") -> tuple[Path, int]:
    """DIR/<table>.csv: the bundled table with ``edits`` {(row's key value, column): new text}; the 1-based
    data row of the (last) edited row."""
    rows = _rows(table)
    head = rows[0]
    row = 0
    for (k, col), value in edits.items():
        row = next(i for i, r in enumerate(rows[1:], 1) if r[head.index(key)] == k)
        rows[row][head.index(col)] = value
    folder.mkdir(exist_ok=True)
    return _write(folder / f"{table}.csv", rows), row


# ------------------------------------------------------------------------------------------------
# The cases of issue 26
# ------------------------------------------------------------------------------------------------

def test_a_tiny_measured_speed_is_refused_by_the_table(tmp_path):
    """benchmarks.csv ds03 (the developer scenario's serving job) at 1e-300 tokens/s used to ask np.arange for
    10^300 candidate bases (a traceback in tco/core.py plan_hybrid)."""
    _, row = _override(tmp_path / "d", "benchmarks", {("ds03", "measured"): "1e-300"})
    p = run_cli("tco", "--scenario", "developer", env={"GPUCOST_DATA_DIR": str(tmp_path / "d")})
    one_line_error(p.returncode, p.stdout, p.stderr, "benchmarks.csv", f"row {row} ", "column 'measured'",
                   "1e-300 is out of range (1e-06 to 1e+12)")


def test_the_engine_refuses_a_job_no_fleet_can_serve(tmp_path):
    """The same arithmetic guarded where it is done: a speed the scenario gives itself (its spec admits any
    positive number) that makes one job need more than 100,000 cards busy all month."""
    import yaml

    sc = yaml.safe_load((DATA / "scenarios" / "developer.yaml").read_text(encoding="utf-8"))
    job = sc["demand"]["jobs"][1]
    job.pop("benchmark")
    job["tokens_per_second_per_gpu"] = 1e-300
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(sc, allow_unicode=True), encoding="utf-8")
    # 3,000,000 tokens / 1e-300 tokens/s / 3600 s = 8.333e302 GPU-hours; 100,000 cards × 730 h = 73,000,000
    one_line_error(*run(["tco", "--config", str(path)]), "tiny.yaml", "job 'local assistant'",
                   "8.333e+302 GPU-hours", "at most 73,000,000")


def test_the_hybrid_base_is_searched_up_to_the_most_cards_any_input_takes():
    from types import SimpleNamespace as NS

    from gpucost.specs import MAX_GPUS
    from gpucost.tco.core import _base_range

    P = NS(owned=NS(max_utilization=1.0), cloud=NS(relative_speed=1.0),
           hybrid=NS(headroom_fraction=0.3, configured_base_gpus=1))
    # 7,300 GPU-hours at 730 h a card: 10 cards; 30 % headroom: ceil(13) + 1 = 14
    assert _base_range(P, "owned-new", 7300.0) == 14
    assert _base_range(P, "owned-new", 8.3e302) == MAX_GPUS == 100_000
    assert _base_range(P, "owned-new", math.nan) == MAX_GPUS


def test_a_tiny_cloud_price_is_refused_not_ranked(tmp_path):
    _, row = _override(tmp_path / "d", "cloud_offers", {("g4dn.xlarge", "Price"): "1e-300"}, key="InstanceType")
    p = run_cli("gpus", "--rank", "--basis", "cloud", env={"GPUCOST_DATA_DIR": str(tmp_path / "d")})
    one_line_error(p.returncode, p.stdout, p.stderr, "cloud_offers.csv", f"row {row} ", "column 'Price'",
                   "1e-300 is out of range (0.01 to 1e+12 an instance-hour")


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "Infinity", "-1", "1e6"])
def test_min_vram_is_a_finite_amount_of_memory(value):
    one_line_error(*run(["gpus", f"--min-vram={value}"]), "--min-vram", f"'{value}'", "between 0 and 100,000 GiB")


def test_budget_is_finite_too():
    one_line_error(*run(["gpus", "--budget", "nan"]), "--budget", "'nan'")


def test_monte_carlo_takes_a_whole_number_however_written():
    rc, out, err = run(["tco", "--scenario", "developer", "--monte-carlo", "1e3", "--seed", "1", "--json"])
    assert rc == 0, err
    assert json.loads(out)["monte_carlo"]["draws"] == 1000
    one_line_error(*run(["tco", "--scenario", "developer", "--monte-carlo", "1000.5"]), "--monte-carlo",
                   "'1000.5' is not a whole number")
    one_line_error(*run(["tco", "--scenario", "developer", "--monte-carlo", "1e3.5"]), "--monte-carlo", "'1e3.5'")


def test_a_count_flag_says_it_takes_whole_numbers():
    rc, out, _ = run(["tco", "--help"])
    assert rc == 0 and "a whole number (1e3 = 1000)" in " ".join(out.split())


@pytest.mark.parametrize("argv", [["rules"], ["rules", "--gpu", "h100-sxm"], ["claims", "--id", "spot_discount"]])
def test_an_unknown_currency_is_refused_with_the_known_ones(argv):
    one_line_error(*run([*argv, "--currency", "XYZ"]), "unknown currency 'XYZ'", "fx.csv has USD, EUR, GBP, CNY, JPY")


def test_plan_resolves_a_card_name_as_every_other_command():
    from gpucost.catalog import Catalog

    rc, out, err = run(["plan", "train", "--model", "llama-3-8b", "--gpu", "B300", "--json"])
    assert rc == 0, err
    rc2, out2, _ = run(["speed", "--model", "llama-3-8b", "--gpu", "B300", "--quant", "bf16", "--json"])
    assert json.loads(out)["gpu"] == json.loads(out2)["gpu"] == Catalog().gpu_id("B300") == "b300"
    plan_err = run(["plan", "train", "--model", "llama-3-8b", "--gpu", "B30O"])
    speed_err = run(["speed", "--model", "llama-3-8b", "--gpu", "B30O", "--quant", "bf16"])
    one_line_error(*plan_err, "unknown GPU 'B30O'; closest: b300")
    assert plan_err[2].removeprefix("gpucost plan: ") == speed_err[2].removeprefix("gpucost speed: ")


def test_a_claim_region_must_have_an_electricity_price():
    one_line_error(*run(["claims", "--id", "startup_first_year", "--set", "startup_first_year.region=MARS"]),
                   "unknown region 'MARS'", "CN, US-CA")
    rc, out, err = run(["claims", "--id", "startup_first_year", "--set", "region=us-tx", "--json"])
    assert rc == 0, err
    assert json.loads(out)[0]["inputs"]["region"] == "US-TX"


def test_more_experts_per_token_than_experts_is_refused(tmp_path):
    cfg = {"architectures": ["MixtralForCausalLM"], "model_type": "mixtral", "hidden_size": 4096,
           "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
           "vocab_size": 32000, "num_local_experts": 8, "num_experts_per_tok": 9, "torch_dtype": "bfloat16"}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    one_line_error(*run(["fit", "--config", str(path), "--quant", "bf16"]), "config.json",
                   "num_experts_per_tok is 9", "only 8 experts")
    path.write_text(json.dumps({**cfg, "num_experts_per_tok": 8}))
    assert run(["fit", "--config", str(path), "--quant", "bf16"])[0] == 0


def test_a_scenario_naming_an_unknown_provider_is_refused(tmp_path):
    import yaml

    sc = yaml.safe_load((DATA / "scenarios" / "developer.yaml").read_text(encoding="utf-8"))
    sc["cloud"]["providers"] = ["runpod", "vsat"]
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(sc, allow_unicode=True), encoding="utf-8")
    one_line_error(*run(["tco", "--config", str(path)]), "mine.yaml", "cloud.providers", "unknown provider 'vsat'",
                   "closest: vast")


@pytest.mark.parametrize("price", ["nan", "cheap", "-0.5", "1e-300"])
def test_a_skypilot_vms_csv_with_a_bad_price_names_its_row(tmp_path, monkeypatch, price):
    src = Path(__file__).parent / "fixtures" / "skypilot_aws_vms_sample.csv"
    rows = [list(r) for r in csv.reader(io.StringIO(src.read_text(encoding="utf-8")))]
    head = rows[0]
    row = next(i for i, r in enumerate(rows[1:], 1) if r[head.index("AcceleratorName")])
    rows[row][head.index("Price")] = price
    (tmp_path / "d").mkdir()
    _write(tmp_path / "d" / "cloud_offers.csv", rows)
    monkeypatch.setenv("GPUCOST_DATA_DIR", str(tmp_path / "d"))
    one_line_error(*run(["gpus", "--rank", "--basis", "cloud"]), "cloud_offers.csv", f"row {row} ",
                   "column 'Price'", price)


def test_a_skypilot_zero_price_is_no_price():
    """SkyPilot writes 0.00 where a zone has no spot price (its Vast catalog); the update reads it so too."""
    t = load_table("cloud_offers", path=Path(__file__).parent / "fixtures" / "skypilot" / "vast" / "vms.csv")
    assert t["SpotPrice"].isna().all() and (t["Price"] > 0).all()


def test_a_name_with_a_newline_is_echoed_on_one_line():
    p = run_cli("fit", "--model", "llama\n3", "--quant", "bf16")
    one_line_error(p.returncode, p.stdout, p.stderr, "unknown model 'llama\\n3'")


@pytest.mark.parametrize("argv,fragment", [
    (["fit", "--model", "llama\u2028x\x1b[2J", "--quant", "bf16"], "'llama\\u2028x\\x1b[2J'"),
    (["tco", "--scenario", "dev\r\neloper"], "'dev\\r\\neloper'"),
    (["tco", "--scenario", "developer", "--monte-carlo", "1\n2"], "'1\\n2'"),      # argparse's own message
    (["speed", "--model", "llama-3-8b", "--quant", "bf\x0b16", "--gpu", "h100"], "'bf\\x0b16'"),
])
def test_control_characters_in_any_echoed_value_are_escaped(argv, fragment):
    one_line_error(*run(argv), fragment)


# ------------------------------------------------------------------------------------------------
# Every numeric column of every table: non-finite and extreme values
# ------------------------------------------------------------------------------------------------

NUMERIC = [(t, c) for t, schema in SCHEMAS.items() for c, kind in schema.items()
           if kind.rstrip("?") in ("num+", "num0", "num", "int+", "int0")]
EXTREMES = ["nan", "inf", "-inf", "1e-300", "1e300", "-1e300"]


def _small_copy(folder: Path, table: str, column: str, values: list[str], tag: str) -> Path:
    """The table's header and its first len(values) rows (the last one repeated where the table has fewer, as
    data/allocator.csv's one row), with ``values`` in ``column``, row by row."""
    rows = _bundled_rows(table)
    j = rows[0].index(column)
    body = [list(rows[min(i, len(rows) - 1)]) for i in range(1, len(values) + 1)]
    for r, v in zip(body, values, strict=True):
        r[j] = v
    return _write(folder / f"{table}-{tag}.csv", [list(rows[0]), *body])


def _within_bounds(df, table: str) -> None:
    """No number the engines read from ``df`` is outside its column's stated bounds."""
    for col, kind in SCHEMAS[table].items():
        if kind.rstrip("?") in ("num+", "num0", "num", "int+", "int0"):
            b = column_bounds(table, col)
            vals = [float(v) for v in df[col] if v == v]
            assert all(b.admits(v) for v in vals), (table, col, [v for v in vals if not b.admits(v)])


def test_the_numeric_columns_are_all_covered():
    assert len(NUMERIC) > 80 and ("cloud_offers", "Price") in NUMERIC and ("benchmarks", "measured") in NUMERIC


@pytest.mark.parametrize("table", sorted(SCHEMAS))
def test_the_bundled_tables_are_within_their_bounds(table):
    _within_bounds(load_table(table), table)


@pytest.mark.parametrize("table,column", NUMERIC, ids=[f"{t}.{c}" for t, c in NUMERIC])
def test_non_finite_and_extreme_values_are_refused_by_row_and_column(tmp_path, table, column):
    """nan, ±inf, 1e-300 and ±1e300 in one column: each row refused (none of them is admitted by any column:
    finite, at most 1e12 in size, non-zero at least 1e-6), with the file, the row and the column."""
    n = min(len(EXTREMES), max(len(_bundled_rows(table)) - 1, 2))
    for k in range(0, len(EXTREMES), n):
        chunk = EXTREMES[k:k + n]
        assert not any(column_bounds(table, column).admits(float(v)) for v in chunk)
        path = _small_copy(tmp_path, table, column, chunk, str(k))
        with pytest.raises(DataError) as info:
            load_table(table, path=path)
        e = info.value
        assert (e.file, e.row, e.column) == (str(path), 1, column), str(e)
        assert str(e).startswith(f"{path}, row 1 (line 2), column '{column}': ")
        refused = {r for r, c, _ in e.problems if c == column}
        assert refused == set(range(1, len(chunk) + 1)), (chunk, e.problems)
        assert {c for _, c, _ in e.problems} == {column}, e.problems   # the rest of the copy is valid


NUMBER_TEXT = st.one_of(st.sampled_from(EXTREMES + ["0", "-0", "1", "2.5", "1e-6", "9e-7", "0.01", "0.009",
                                                     "1e12", "1.0000001e12", "-3"]),
                        st.floats(allow_nan=True, allow_infinity=True).map(repr),
                        st.integers(-10**13, 10**13).map(str))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(where=st.sampled_from(NUMERIC), text=NUMBER_TEXT)
def test_any_number_in_any_column_loads_within_bounds_or_is_refused_by_name(tmp_path_factory, where, text):
    table, column = where
    head, first = _bundled_rows(table)[:2]
    path = _small_copy(tmp_path_factory.mktemp("t"), table, column, [first[head.index(column)], text], "h")
    admitted = column_bounds(table, column).admits(float(text))
    try:
        df = load_table(table, path=path)
    except DataError as e:
        assert not admitted, (table, column, text, str(e))
        assert (e.file, e.row, e.column) == (str(path), 2, column), str(e)
        assert f"row 2 (line 3), column '{column}'" in str(e)
        return
    assert admitted, (table, column, text)
    assert math.isclose(float(df[column].iloc[1]), float(text), rel_tol=1e-12)
    _within_bounds(df, table)
