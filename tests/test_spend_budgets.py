"""Monthly GPU budgets (gpucost.spend_budgets): the file, where a bill stands against them, `gpucost showback
--budget`, and `gpucost rules --budget` alerting when a namespace will pass its budget this month at the
current rate, checked by the real promtool. Amounts worked out by hand next to each assertion."""

from __future__ import annotations

import subprocess
import textwrap
from datetime import UTC, datetime

import pandas as pd
import pytest
import yaml

from gpucost.errors import DataError, GpucostError
from gpucost.rules import RuleOptions, alert_rules
from gpucost.showback import CardRate, allocate, parse_period, usage_frame
from gpucost.spend_budgets import Budgets, budget_status, read_budgets

from .conftest import ROOT, cli_json, run_cli
from .test_rules import promtool

SACCT = str(ROOT / "tests" / "fixtures" / "showback" / "sacct_2026-11.txt")


def write(tmp_path, name: str, text: str):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text), encoding="utf-8")
    return p


def test_budget_files_yaml_and_csv(tmp_path):
    y = read_budgets(write(tmp_path, "b.yml", """
        currency: eur
        by: project
        budgets: {team-a: 300, team-b: 1200.5}
        """))
    assert (y.by, y.currency, y.amounts) == ("project", "EUR", {"team-a": 300.0, "team-b": 1200.5})
    c = read_budgets(write(tmp_path, "b.csv", "name,monthly_budget\nalice,50\nbob,75\n"))
    assert (c.by, c.currency, c.amounts) == ("user", "USD", {"alice": 50.0, "bob": 75.0})


@pytest.mark.parametrize("name, text, row, column", [
    ("b.csv", "name,monthly_budget\nalice,lots\n", 1, "monthly_budget"),
    ("b.csv", "name,monthly_budget\nalice,5\nalice,6\n", 2, "name"),
    ("b.csv", "name,monthly_budget\nalice,-5\n", 1, "monthly_budget"),
    ("b.csv", "name,budget\nalice,5\n", None, "monthly_budget"),
    ("b.yml", "budgets: {team-a: many}\n", None, "budgets.team-a"),
    ("b.yml", "by: pod\nbudgets: {team-a: 1}\n", None, "by"),
    ("b.yml", "currency: USD\n", None, "budgets"),
])
def test_bad_budget_files_name_file_row_and_column(tmp_path, name, text, row, column):
    with pytest.raises(DataError) as e:
        read_budgets(write(tmp_path, name, text))
    assert (e.value.file, e.value.row, e.value.column) == (name, row, column)


def _bill(period, hours_used: int, by="user"):
    # ana uses a whole card (100 % SM) for ``hours_used`` hours from the period's start, at 2.00/h
    t0 = pd.Timestamp(period.start)
    rows = [dict(card="g", start=t0 + pd.Timedelta(hours=h), duration_s=3600, user="ana", project="p",
                 sm_pct=100) for h in range(hours_used)]
    return allocate(usage_frame(rows), {"g": CardRate(None, 2.0, "USD", "given")}, period=period, by=by,
                    idle="separate")


def test_status_of_a_month_that_has_passed():
    bill = _bill(parse_period("2026-11"), 100)  # ana spent 200.00
    (s,) = budget_status(bill, Budgets("user", "USD", {"ana": 150.0}), now=datetime(2026, 12, 3, tzinfo=UTC))
    assert (s.spent, s.budget, s.projected, s.over, s.will_pass) == (200.0, 150.0, 200.0, True, True)


def test_status_part_way_through_the_month_projects_the_current_rate():
    # 10 days into November (240 h) ana has spent 2.00 × 100 h = 200.00: at that rate 200 × 720/240 = 600.00
    bill = _bill(parse_period("2026-11"), 100)
    now = datetime(2026, 11, 11, tzinfo=UTC)
    (s,) = budget_status(bill, Budgets("user", "USD", {"ana": 500.0}), now=now)
    assert (s.spent, s.projected, s.over, s.will_pass) == (200.0, 600.0, False, True)
    assert s.used_share == pytest.approx(0.4)


def test_status_scales_a_monthly_budget_to_another_period_and_converts_the_currency():
    # a 73-hour period is a tenth of an average month (730 h): 100 EUR a month → 10 EUR → at 1.1 USD per EUR, 11.00
    period = parse_period("2026-11-01T00:00..2026-11-04T01:00")
    bill = _bill(period, 5)
    (s,) = budget_status(bill, Budgets("user", "EUR", {"ana": 100.0}), rate=1.1,
                         now=datetime(2026, 12, 1, tzinfo=UTC))
    assert s.budget == 11.0 and s.spent == 10.0 and not s.will_pass
    with pytest.raises(GpucostError, match="--by project"):
        budget_status(bill, Budgets("project", "USD", {"p": 1.0}))


def test_showback_budget_from_the_cli(tmp_path):
    b = write(tmp_path, "b.csv", "name,monthly_budget,by\nphysics,150,project\nchemistry,100,project\n")
    out = cli_json("showback", "--from", "csv", SACCT, "--gpus-per-node", "4", "--hourly", "1", "--period",
                   "2026-11", "--by", "project", "--idle", "separate", "--budget", str(b))
    # physics spent 164.00 of 150.00, chemistry 28.00 of 100.00 (November has passed: projected = spent)
    got = {s["name"]: (s["spent"], s["budget"], s["over"]) for s in out["budgets"]}
    assert got == {"physics": (164.0, 150.0, True), "chemistry": (28.0, 100.0, False)}
    proc = run_cli("showback", "--from", "csv", SACCT, "--gpus-per-node", "4", "--hourly", "1", "--budget", str(b))
    assert proc.returncode == 2 and "--by project" in proc.stderr and len(proc.stderr.splitlines()) == 1


# -- alert rules ---------------------------------------------------------------------------------------

BUDGETS = "currency: USD\nby: project\nbudgets: {team-a: 300, team-b: 1000}\n"


def test_budget_rules_document(tmp_path):
    opts = RuleOptions(use_prof=True, budgets=read_budgets(write(tmp_path, "b.yml", BUDGETS)), budget_hourly=1.5)
    rules = alert_rules(opts)["groups"][0]["rules"]
    rec = next(r for r in rules if r.get("record") == "gpucost:namespace_gpu_cost:per_hour")
    assert rec["expr"] == 'sum by (namespace) (DCGM_FI_PROF_GR_ENGINE_ACTIVE{namespace!=""}) * 1.5'
    alerts = [r for r in rules if r.get("alert") == "GpuNamespaceOverBudget"]
    assert [a["labels"]["budget"] for a in alerts] == ["300", "1000"]
    assert alerts[0]["expr"] == ('avg_over_time(gpucost:namespace_gpu_cost:per_hour{namespace="team-a"}[6h]) '
                                 "* 24 * scalar(days_in_month()) > 300")
    with pytest.raises(GpucostError, match="--gpu ID or --hourly"):
        alert_rules(RuleOptions(budgets=opts.budgets))
    with pytest.raises(GpucostError, match="by project"):
        alert_rules(RuleOptions(budgets=Budgets("user", "USD", {"ana": 1.0}), budget_hourly=1.0))
    with pytest.raises(GpucostError, match="not a Kubernetes namespace"):
        alert_rules(RuleOptions(budgets=Budgets("project", "USD", {'a"b': 1.0}), budget_hourly=1.0))


UNIT = """
rule_files: [rules.yml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      # team-a: two pods, 50 % and 25 % of a card's engine time: 0.75 card × 1.00/h. promtool's clock starts
      # on 1970-01-01, a 31-day month: 0.75 × 24 × 31 = 558 a month, over its 300
      - series: 'DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="0",Hostname="n",modelName="X",namespace="team-a",pod="a0"}'
        values: '0.5x120'
      - series: 'DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="1",Hostname="n",modelName="X",namespace="team-a",pod="a1"}'
        values: '0.25x120'
      # team-b: 0.5 card → 372 a month, under its 1000; the card without a pod is nobody's
      - series: 'DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="2",Hostname="n",modelName="X",namespace="team-b",pod="b0"}'
        values: '0.5x120'
      - series: 'DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="3",Hostname="n",modelName="X"}'
        values: '0.9x120'
    promql_expr_test:
      - expr: gpucost:namespace_gpu_cost:per_hour
        eval_time: 10m
        exp_samples:
          - labels: 'gpucost:namespace_gpu_cost:per_hour{namespace="team-a",currency="USD"}'
            value: 0.75
          - labels: 'gpucost:namespace_gpu_cost:per_hour{namespace="team-b",currency="USD"}'
            value: 0.5
    alert_rule_test:
      - eval_time: 59m
        alertname: GpuNamespaceOverBudget
        exp_alerts: []
      - eval_time: 60m
        alertname: GpuNamespaceOverBudget
        exp_alerts:
          - exp_labels: {severity: warning, budget: "300", namespace: team-a, currency: USD}
            exp_annotations:
              summary: Namespace team-a will pass its GPU budget this month at the current rate
              description: "At the mean rate of the last 6h, the GPUs of namespace team-a cost 558 USD in a whole month, over its monthly budget of 300 USD (SM share × 1 USD per card-hour)."
"""


@pytest.mark.promtool
def test_promtool_budget_alert_fires_for_the_namespace_over_its_budget(tmp_path):
    write(tmp_path, "b.yml", BUDGETS)
    proc = run_cli("rules", "--budget", str(tmp_path / "b.yml"), "--hourly", "1", "--prof")
    assert proc.returncode == 0, proc.stderr
    (tmp_path / "rules.yml").write_text(proc.stdout, encoding="utf-8")
    check = subprocess.run([promtool(), "check", "rules", "rules.yml"], cwd=tmp_path, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    write(tmp_path, "tests.yml", UNIT)
    test = subprocess.run([promtool(), "test", "rules", "tests.yml"], cwd=tmp_path, capture_output=True, text=True)
    assert test.returncode == 0, test.stdout + test.stderr


def test_rules_budget_at_the_cost_showback_uses(tmp_path):
    from gpucost.catalog import Catalog
    from gpucost.showback import card_rate

    write(tmp_path, "b.yml", BUDGETS)
    doc = yaml.safe_load(run_cli("rules", "--budget", str(tmp_path / "b.yml"), "--gpu", "a100-80gb-sxm").stdout)
    rec = next(r for r in doc["groups"][0]["rules"] if r.get("record") == "gpucost:namespace_gpu_cost:per_hour")
    per_hour = card_rate(Catalog(), "a100-80gb-sxm", "USD").per_hour
    assert rec["expr"] == f'sum by (namespace) (DCGM_FI_DEV_GPU_UTIL{{namespace!=""}}) / 100 * {per_hour:.6g}'
    proc = run_cli("rules", "--budget", str(tmp_path / "b.yml"))
    assert proc.returncode == 2 and "--gpu ID or --hourly" in proc.stderr
