"""`gpucost rules`: the Prometheus rules file, checked by the real promtool (Debian's prometheus package):
`promtool check rules` and `promtool test rules` with series where the idle alert fires after its duration
and not before, and the memory alert fires above its threshold. Prices from the tiny test catalog."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import textwrap

import pytest
import yaml

from gpucost.rules import RuleOptions, alert_rules, rules_yaml

from .conftest import ROOT, run_cli

TINY = ROOT / "tests" / "fixtures" / "tiny_catalog"
ENV = {"GPUCOST_DATA_DIR": str(TINY)}


def promtool() -> str:
    exe = shutil.which("promtool")
    if exe is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("promtool is missing in CI: .ci/run installs Debian's prometheus package")
        pytest.skip("promtool is not installed (apt-get install prometheus gives it)")
    return exe


def write_rules(tmp_path, *args) -> str:
    proc = run_cli("rules", *args, env=ENV)
    assert proc.returncode == 0, proc.stderr
    (tmp_path / "rules.yml").write_text(proc.stdout, encoding="utf-8")
    return proc.stdout


# -- promtool ----------------------------------------------------------------------------------------

@pytest.mark.promtool
@pytest.mark.parametrize("args", [(), ("--gpu", "a100-80gb-sxm", "--kwh-price", "0.3", "--prof"),
                                  ("--idle-util", "10", "--idle-for", "1h30m", "--mem-high", "95",
                                   "--mem-for", "0s", "--gpu", "rtx-3060-12gb", "--currency", "CNY")])
def test_promtool_check_rules_accepts_the_output(tmp_path, args):
    write_rules(tmp_path, *args)
    proc = subprocess.run([promtool(), "check", "rules", str(tmp_path / "rules.yml")], capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS" in proc.stdout + proc.stderr


IDLE_TEXT = ("GPU 0 (NVIDIA A100-SXM4-80GB) on node1 has been under 20% busy for 30m (now 5%). An idle "
             "A100 80GB SXM is worth 1.79 USD per hour (the lowest cloud on-demand price per GPU-hour in the "
             "gpucost catalog; lambda gpu_1x_a100_sxm4_80gb, as of 2025-01-01): every idle hour is that much "
             "money doing nothing.")
MEM_TEXT = ("GPU 0 (NVIDIA A100-SXM4-80GB) on node1 has used more than 90% of its memory for 5m (now 92.77%): "
            "the next allocation may fail with out of memory; shrink the batch or context, quantize, or move "
            "the job to a larger card.")
UNIT_TESTS = """
rule_files: [rules.yml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      # GPU 0: 5 % busy all along (idle); 76000 of 81920 MiB used = 92.77 %; 60 W
      - series: 'DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="node1",modelName="NVIDIA A100-SXM4-80GB"}'
        values: '5x60'
      - series: 'DCGM_FI_DEV_FB_USED{gpu="0",Hostname="node1",modelName="NVIDIA A100-SXM4-80GB"}'
        values: '76000x60'
      - series: 'DCGM_FI_DEV_FB_FREE{gpu="0",Hostname="node1",modelName="NVIDIA A100-SXM4-80GB"}'
        values: '5920x60'
      - series: 'DCGM_FI_DEV_POWER_USAGE{gpu="0",Hostname="node1",modelName="NVIDIA A100-SXM4-80GB"}'
        values: '60x60'
      # GPU 1: 80 % busy (never idle); 73728 of 81920 MiB = exactly 90 %: not above the threshold
      - series: 'DCGM_FI_DEV_GPU_UTIL{gpu="1",Hostname="node1",modelName="NVIDIA A100-SXM4-80GB"}'
        values: '80x60'
      - series: 'DCGM_FI_DEV_FB_USED{gpu="1",Hostname="node1",modelName="NVIDIA A100-SXM4-80GB"}'
        values: '73728x60'
      - series: 'DCGM_FI_DEV_FB_FREE{gpu="1",Hostname="node1",modelName="NVIDIA A100-SXM4-80GB"}'
        values: '8192x60'
      # GPU 2: idle for 20 minutes, then busy: idle never lasts 30 minutes
      - series: 'DCGM_FI_DEV_GPU_UTIL{gpu="2",Hostname="node1",modelName="NVIDIA A100-SXM4-80GB"}'
        values: '5x20 80x40'
    alert_rule_test:
      - eval_time: 29m
        alertname: GpuIdle
        exp_alerts: []
      - eval_time: 30m
        alertname: GpuIdle
        exp_alerts:
          - exp_labels: {severity: warning, gpu: "0", Hostname: node1, modelName: NVIDIA A100-SXM4-80GB}
            exp_annotations:
              summary: GPU 0 (NVIDIA A100-SXM4-80GB) on node1 is idle
              description: "IDLE_TEXT"
      - eval_time: 4m
        alertname: GpuMemoryPressure
        exp_alerts: []
      - eval_time: 5m
        alertname: GpuMemoryPressure
        exp_alerts:
          - exp_labels: {severity: warning, gpu: "0", Hostname: node1, modelName: NVIDIA A100-SXM4-80GB}
            exp_annotations:
              summary: "GPU 0 (NVIDIA A100-SXM4-80GB) on node1: memory above 90%"
              description: "MEM_TEXT"
    promql_expr_test:
      # idle cards cost their hourly value now (1.79 USD/h), busy ones nothing; GPU 2 is idle at 10 min
      - expr: gpucost:gpu_idle_cost:per_hour
        eval_time: 10m
        exp_samples:
          - labels: 'gpucost:gpu_idle_cost:per_hour{gpu="0",Hostname="node1",modelName="NVIDIA A100-SXM4-80GB",currency="USD",gpucost_gpu_id="a100-80gb-sxm"}'
            value: 1.79
          - labels: 'gpucost:gpu_idle_cost:per_hour{gpu="1",Hostname="node1",modelName="NVIDIA A100-SXM4-80GB",currency="USD",gpucost_gpu_id="a100-80gb-sxm"}'
            value: 0
          - labels: 'gpucost:gpu_idle_cost:per_hour{gpu="2",Hostname="node1",modelName="NVIDIA A100-SXM4-80GB",currency="USD",gpucost_gpu_id="a100-80gb-sxm"}'
            value: 1.79
      # 60 W = 0.06 kW; at 0.30 USD/kWh that is 0.018 USD per hour
      - expr: gpucost:gpu_energy_cost:per_hour
        eval_time: 10m
        exp_samples:
          - labels: 'gpucost:gpu_energy_cost:per_hour{gpu="0",Hostname="node1",modelName="NVIDIA A100-SXM4-80GB",currency="USD"}'
            value: 0.018
""".replace("IDLE_TEXT", IDLE_TEXT).replace("MEM_TEXT", MEM_TEXT)


@pytest.mark.promtool
def test_promtool_unit_tests_idle_after_the_duration_and_memory_above_the_threshold(tmp_path):
    write_rules(tmp_path, "--gpu", "a100-80gb-sxm", "--idle-util", "20", "--idle-for", "30m", "--mem-high", "90",
                "--mem-for", "5m", "--kwh-price", "0.30")
    (tmp_path / "tests.yml").write_text(textwrap.dedent(UNIT_TESTS), encoding="utf-8")
    proc = subprocess.run([promtool(), "test", "rules", "tests.yml"], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS" in proc.stdout + proc.stderr


@pytest.mark.promtool
def test_promtool_sees_a_longer_duration(tmp_path):
    """With --idle-for 45m the same idle series has not fired at 44m and has at 45m."""
    write_rules(tmp_path, "--idle-for", "45m")
    (tmp_path / "tests.yml").write_text(textwrap.dedent("""
        rule_files: [rules.yml]
        evaluation_interval: 1m
        tests:
          - interval: 1m
            input_series:
              - series: 'DCGM_FI_DEV_GPU_UTIL{gpu="3",Hostname="n",modelName="X"}'
                values: '0x60'
            alert_rule_test:
              - eval_time: 44m
                alertname: GpuIdle
                exp_alerts: []
              - eval_time: 45m
                alertname: GpuIdle
                exp_alerts:
                  - exp_labels: {severity: warning, gpu: "3", Hostname: n, modelName: X}
                    exp_annotations:
                      summary: GPU 3 (X) on n is idle
                      description: "GPU 3 (X) on n has been under 20% busy for 45m (now 0%). Its hourly cost is not stated: run `gpucost rules --gpu ID` with the card of this fleet to have it here."
        """), encoding="utf-8")
    proc = subprocess.run([promtool(), "test", "rules", "tests.yml"], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# -- the document itself ----------------------------------------------------------------------------

def test_rules_follow_the_options():
    doc = yaml.safe_load(rules_yaml(RuleOptions(idle_util_pct=10, idle_for="1h30m", mem_high_pct=95,
                                                mem_for="2m", use_prof=True)))
    rules = {r.get("alert") or r.get("record"): r for r in doc["groups"][0]["rules"]}
    assert rules["GpuIdle"]["expr"] == "DCGM_FI_DEV_GPU_UTIL < 10" and rules["GpuIdle"]["for"] == "1h30m"
    assert rules["GpuEngineIdle"]["expr"] == "DCGM_FI_PROF_GR_ENGINE_ACTIVE < 0.1"
    assert rules["GpuMemoryPressure"]["expr"].endswith("> 95") and rules["GpuMemoryPressure"]["for"] == "2m"
    assert "DCGM_FI_DEV_FB_USED" in rules["GpuMemoryPressure"]["expr"]
    assert "DCGM_FI_DEV_FB_FREE" in rules["GpuMemoryPressure"]["expr"]
    assert rules["gpucost:gpu_power:kilowatts"]["expr"] == "DCGM_FI_DEV_POWER_USAGE / 1000"
    assert "gpucost:gpu_idle_cost:per_hour" not in rules  # no card given: no cost rule


def test_idle_annotation_states_the_amortized_value_when_there_is_no_cloud_price():
    proc = run_cli("rules", "--gpu", "rtx-3060-12gb", env=ENV)
    doc = yaml.safe_load(proc.stdout)
    idle = next(r for r in doc["groups"][0]["rules"] if r.get("alert") == "GpuIdle")
    # tiny catalog: new 329 USD, used 200 four years after release: rho = (200/329)^(1/4) a year, so over
    # 3 years the card loses 329 × (1 − rho³) = 102.4 USD, 0.0039 USD an hour of 3 × 8760
    hourly = 329 * (1 - ((200 / 329) ** (1 / 4)) ** 3) / (3 * 8760)
    assert f"{hourly:.3f} USD per hour" in idle["annotations"]["description"]
    assert "resells for after 3 years" in idle["annotations"]["description"]


def test_json_output_is_the_same_document():
    proc = run_cli("rules", "--json", "--idle-for", "10m", env=ENV)
    assert proc.returncode == 0
    doc = json.loads(proc.stdout)
    assert doc == alert_rules(RuleOptions(idle_for="10m"))


@pytest.mark.parametrize("args, words", [
    (("--idle-for", "30 minutes"), "bad duration '30 minutes'"),
    (("--mem-for", "5"), "bad duration '5'"),
    (("--idle-util", "0"), "--idle-util"),
    (("--mem-high", "120"), "--mem-high"),
    (("--gpu", "rtx-4099"), "closest: rtx-4090"),
    (("--gpu", "rtx-4090", "--currency", "XYZ"), "unknown currency"),
])
def test_bad_rules_input_exits_2_with_one_line(args, words):
    proc = run_cli("rules", *args, env=ENV)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and words in proc.stderr and proc.stdout == ""
