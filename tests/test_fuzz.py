"""Fuzzing the command line and its file inputs (issue 19): whatever a careless or hostile user types, gpucost
answers exit 0 with finite, non-negative figures, or exit 2 with one line and no traceback — nothing else.

Flags are drawn from the real parser (every option of every subcommand, so a new flag is fuzzed the day it
is added) with values that broke the CLI before: 0, negatives, NaN, ±inf, 1e308, 1e-308, huge integers,
fractions where integers are expected, empty strings, unknown names. Files are drawn the same way: a
config.json with edge values in its size keys, a trace CSV, a scenario YAML, and one edited cell in a
``GPUCOST_DATA_DIR`` table. Runs in-process (``gpucost.cli.main``) so that hundreds of cases take seconds;
hypothesis is derandomized (tests/conftest.py), so CI sees the same cases every run.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import re
import shutil

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from gpucost.cli import build_parser, main

from .conftest import DATA

SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

#: numbers that broke or bent the CLI before, and ordinary ones
EDGE_NUMBERS = ["0", "-0", "1", "2", "7", "-1", "-5.5", "0.5", "2.5", "1e-308", "1e308", "1e999", "-1e308",
                "nan", "NaN", "inf", "-inf", "Infinity", "99999999999999999999", "1e12", "100000000", "", "abc",
                "0x10", "1,000", " 3 "]
NUMBER = st.one_of(st.sampled_from(EDGE_NUMBERS), st.integers(-10**6, 10**9).map(str),
                   st.floats(allow_nan=True, allow_infinity=True).map(repr))
#: names a user could type for each name flag: valid, near misses, junk
NAMES = {
    "--gpu": ["rtx-4090", "h100-sxm", "a100-80gb", "RTX 4090", "h100", "nope", "", "../../etc/passwd"],
    "--model": ["llama-3-8b", "qwen2.5-7b", "Llama 3 70B", "llama", "no/such-repo", ""],
    "--quant": ["bf16", "fp16", "q4_k_m", "awq", "bnb-nf4-dq", "int3", ""],
    "--currency": ["USD", "CNY", "EUR", "usd", "XXX", ""],
    "--vendor": ["NVIDIA", "AMD", "nvidia", "acme", ""],
    "--sort": ["price", "vram", "nope", ""],
    "--strategy": ["zero3", "zero2", "fsdp", "ddp", "nope"],
    "--idle-for": ["10m", "1h", "0m", "-5m", "forever", ""],
    "--mem-for": ["5m", "1h", "0s", "x"],
    "--policy": ["fixed", "autoscale", "spot"],
    "--workload": ["20:35", "20:35:latency", "0:0", "-1:50", "1e308:50", "80:101", "x"],
    "--set": ["claimed_low_pct=50", "claimed_low_pct=-1", "claimed_high_pct=inf", "provider=gcp",
              "interruption_bucket=>20%", "gpu=h100-sxm", "claimed_gap_pct=1e308", "nope=1", "x"],
    "--id": ["spot_discount", "int8_memory", "spot-discount", "nope"],
    "--scenario": ["developer", "midsize", "nope"],
}
#: what each command needs to do anything at all (the fuzzed flags come on top and may replace them)
BASE = {
    ("gpus",): [],
    ("fit",): ["--model", "llama-3-8b", "--quant", "bf16"],
    ("speed",): ["--model", "llama-3-8b", "--gpu", "rtx-4090", "--quant", "q4_k_m"],
    ("serve",): ["--model", "llama-3-8b", "--gpu", "rtx-4090"],
    ("tco",): ["--scenario", "developer"],
    ("rules",): [],
    ("probe",): [],
    ("plan", "train"): ["--model", "llama-3-8b", "--gpu", "h100-sxm"],
    ("plan", "share"): ["--gpu", "a100-80gb", "--workload", "20:35"],
    ("plan", "scale"): ["--trace", str(DATA / "traces" / "sample_jobs.csv"), "--gpu", "a100-80gb"],
    ("claims",): ["--id", "spot_discount"],
    ("prices", "show"): ["--gpu", "rtx-4090"],
}
#: flags not fuzzed: they reach the network (prices update), wait (probe --watch), or only select output files
SKIP = {"--help", "--json", "--watch", "--k8s-config", "--mig-parted-config", "--deepspeed-config", "--nvme-path",
        "--config", "--trace", "--skypilot", "--namespace"}
#: figures that are a cost, a price or a bill: never negative (a saving or a difference may be)
COST_KEY = re.compile(r"(cost|price|bill|usd|per_1m|per_hour|spend)", re.I)
SIGNED_KEY = re.compile(r"(saving|delta|diff|change|vs_|margin|npv|break|gain|residual|resale|offset)", re.I)


def _subparser(path: tuple[str, ...]) -> argparse.ArgumentParser:
    parser = build_parser()
    for name in path:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[name]
    return parser


def _flag_values(action: argparse.Action) -> st.SearchStrategy | None:
    flag = action.option_strings[-1]
    if flag in SKIP or not flag.startswith("--"):
        return None
    if action.nargs == 0:  # a switch
        return st.just([flag])
    if action.choices:
        return st.sampled_from([*map(str, action.choices), "bogus", ""]).map(lambda v: [flag, v])
    if flag in NAMES:
        return st.sampled_from(NAMES[flag]).map(lambda v: [flag, v])
    return NUMBER.map(lambda v: [flag, v])


def argv_strategy(path: tuple[str, ...]) -> st.SearchStrategy[list[str]]:
    parser = _subparser(path)
    flags = [s for a in parser._actions if a.option_strings and (s := _flag_values(a)) is not None]
    return st.lists(st.one_of(flags), min_size=1, max_size=4).map(
        lambda chosen: [*path, *BASE[path], *[tok for pair in chosen for tok in pair]])


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(argv)
        except SystemExit as exc:  # argparse: exit 2 (bad flag)
            rc = exc.code if isinstance(exc.code, int) else 1
    return rc, out.getvalue(), err.getvalue()


def _numbers(obj, key: str = ""):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _numbers(v, f"{key}.{k}")
    elif isinstance(obj, list):
        for v in obj:
            yield from _numbers(v, key)
    elif isinstance(obj, (int, float)) and not isinstance(obj, bool):
        yield key, obj


def check_answer(argv: list[str], rc: int, out: str, err: str) -> None:
    """The contract: exit 0 with finite, non-negative figures, or exit 2 with one line and no traceback."""
    event(f"exit {rc}")
    assert "Traceback" not in err and "Traceback" not in out, (argv, err[-400:])
    assert rc in (0, 2), (argv, rc, err[-400:])
    if rc == 2:
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert len(lines) == 1, (argv, err)
        assert lines[0].startswith("gpucost"), (argv, err)
        return
    if "--json" not in argv:
        assert out.strip(), argv
        return
    doc = json.loads(out, parse_constant=lambda c: pytest.fail(f"{argv}: {c} in the JSON"))
    for key, value in _numbers(doc):
        assert math.isfinite(value), (argv, key, value)
        leaf = key.rsplit(".", 1)[-1]
        if COST_KEY.search(leaf) and not SIGNED_KEY.search(key):
            assert value >= 0, (argv, key, value)


@pytest.mark.parametrize("path", list(BASE), ids=" ".join)
def test_flags(path):
    examples = 15 if path == ("claims",) else 40  # one claim check takes about a second

    @settings(SETTINGS, max_examples=examples)
    @given(argv=argv_strategy(path), as_json=st.booleans())
    def check(argv, as_json):
        argv = [*argv, "--json"] if as_json else argv
        check_answer(argv, *run(argv))

    check()


# ------------------------------------------------------------------------------------------------
# Files: config.json, trace CSV, scenario YAML, a table override
# ------------------------------------------------------------------------------------------------

CONFIG_KEYS = ["hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
               "intermediate_size", "vocab_size", "head_dim", "max_position_embeddings", "sliding_window",
               "num_local_experts", "num_experts_per_tok"]
JSON_VALUE = st.one_of(NUMBER.map(lambda s: _json_literal(s)), st.none(), st.booleans(), st.just("12"),
                       st.just([4096]), st.just({"a": 1}))


def _json_literal(token: str):
    try:
        return json.loads(token)  # "1e999" stays a float literal json.loads turns into inf
    except ValueError:
        try:
            return float(token)
        except ValueError:
            return token


BASE_CONFIG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
               "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
               "intermediate_size": 14336, "vocab_size": 128256, "max_position_embeddings": 8192,
               "torch_dtype": "bfloat16"}


@SETTINGS
@given(edits=st.dictionaries(st.sampled_from(CONFIG_KEYS), JSON_VALUE, min_size=1, max_size=3),
       command=st.sampled_from([["fit", "--quant", "bf16"], ["speed", "--gpu", "rtx-4090", "--quant", "q4_k_m"]]))
def test_config_json(tmp_path_factory, edits, command):
    path = tmp_path_factory.mktemp("cfg") / "config.json"
    path.write_text(json.dumps({**BASE_CONFIG, **edits}, allow_nan=True))
    argv = [*command, "--config", str(path), "--json"]
    check_answer(argv, *run(argv))


TRACE_VALUE = st.one_of(NUMBER, st.just("2026-01-01T00:00"))


@SETTINGS
@given(rows=st.lists(st.tuples(NUMBER, NUMBER, NUMBER), min_size=0, max_size=4),
       policy=st.sampled_from(["fixed", "autoscale", "spot"]))
def test_trace_csv(tmp_path_factory, rows, policy):
    path = tmp_path_factory.mktemp("trace") / "trace.csv"
    path.write_text("arrival_hour,gpu_hours,gpus\n" + "".join(f"{a},{b},{c}\n" for a, b, c in rows))
    argv = ["plan", "scale", "--trace", str(path), "--policy", policy, "--gpu", "a100-80gb", "--json"]
    check_answer(argv, *run(argv))


@SETTINGS
@given(field=st.sampled_from(["horizon_months", "title", "currency", "region", "owned", "demand"]),
       value=st.one_of(NUMBER.map(_json_literal), st.just([1, 2]), st.just({"a": {"b": {"c": 1}}}), st.none()))
def test_scenario_yaml(tmp_path_factory, field, value):
    import yaml

    src = yaml.safe_load((DATA / "scenarios" / "developer.yaml").read_text())
    src[field] = value
    path = tmp_path_factory.mktemp("scn") / "mine.yaml"
    path.write_text(yaml.safe_dump(src, allow_unicode=True))
    argv = ["tco", "--config", str(path), "--json"]
    check_answer(argv, *run(argv))


TABLE_CELLS = {"gpus.csv": ["vram_gib", "mem_bandwidth_gbps", "bf16_tflops", "tdp_w", "fp32_tflops"],
               "prices.csv": ["price"], "cloud_offers.csv": ["Price", "SpotPrice", "AcceleratorCount", "ReservedPrice1y"]}


@SETTINGS
@given(table=st.sampled_from(sorted(TABLE_CELLS)), data=st.data())
def test_table_override(tmp_path_factory, table, data):
    import pandas as pd

    column = data.draw(st.sampled_from(TABLE_CELLS[table]))
    value = data.draw(NUMBER)
    folder = tmp_path_factory.mktemp("data")
    df = pd.read_csv(DATA / table, dtype=str, keep_default_na=False)
    row = data.draw(st.integers(0, len(df) - 1))
    df.loc[row, column] = value
    df.to_csv(folder / table, index=False)
    command = data.draw(st.sampled_from([["gpus", "--json"], ["gpus", "--rank", "--json"],
                                         ["fit", "--model", "llama-3-8b", "--quant", "bf16", "--json"],
                                         ["tco", "--scenario", "developer", "--json"]]))
    old = os.environ.get("GPUCOST_DATA_DIR")
    os.environ["GPUCOST_DATA_DIR"] = str(folder)
    try:
        check_answer([*command, f"[{table} row {row} {column}={value!r}]"], *run(command))
    finally:
        if old is None:
            os.environ.pop("GPUCOST_DATA_DIR", None)
        else:
            os.environ["GPUCOST_DATA_DIR"] = old
        shutil.rmtree(folder, ignore_errors=True)
