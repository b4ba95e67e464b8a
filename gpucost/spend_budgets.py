"""Monthly GPU budgets per user or project, and where a showback bill stands against them.

A budget file is YAML::

    currency: USD        # the budgets' currency (converted through fx.csv to the bill's)
    by: project          # user | project (a Kubernetes namespace from Prometheus)
    budgets:
      team-a: 300
      team-b: 1200

or CSV with columns ``name,monthly_budget`` and optionally ``currency`` and ``by`` (the same in every row).

:func:`budget_status` compares a bill with the budgets: what each has spent, and at the current rate
(the spending so far over the part of the period that has passed) what it will have spent by the end of
the period; a budget is for a calendar month, so over a period of another length it is scaled by the
period's hours over an average month's (730 h).
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from gpucost.errors import DataError, GpucostError
from gpucost.serialize import Record
from gpucost.specs import SPECS
from gpucost.units import HOURS_PER_MONTH, SECONDS_PER_HOUR

BUDGET_GROUPINGS = ("user", "project")


@dataclass(frozen=True)
class Budgets(Record):
    """Monthly budgets [``currency`` per month] of users or projects (``by``), read from ``source``."""

    by: str
    currency: str
    amounts: dict[str, float]
    source: str = ""


def _amount(v, file: str, row: int | None, column: str) -> float:
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise DataError(f"'{v}' is not a number", file=file, row=row, column=column) from None
    if not (math.isfinite(x) and x >= 0):
        raise DataError(f"a budget must be a number >= 0, not {v}", file=file, row=row, column=column)
    return x


def _by(v, file: str, row: int | None = None) -> str:
    by = str(v or SPECS["showback_by"].default).strip()
    if by not in BUDGET_GROUPINGS:
        raise DataError(f"by '{by}' must be one of {', '.join(BUDGET_GROUPINGS)}", file=file, row=row, column="by")
    return by


def read_budgets(path) -> Budgets:
    """A budget file (YAML or CSV, by its extension; see the module docstring)."""
    p = Path(path)
    if not p.is_file():
        raise GpucostError(f"{p}: file not found")
    name = p.name
    if p.suffix.lower() == ".csv":
        return _read_csv(p)
    import yaml

    try:
        doc = yaml.safe_load(p.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise DataError(f"not YAML: {str(exc).splitlines()[0]}", file=name) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("budgets"), dict) or not doc["budgets"]:
        raise DataError("needs a 'budgets:' mapping of names to monthly amounts", file=name, column="budgets")
    amounts = {str(k): _amount(v, name, None, f"budgets.{k}") for k, v in doc["budgets"].items()}
    return Budgets(_by(doc.get("by"), name), str(doc.get("currency") or "USD").upper(), amounts, name)


def _read_csv(p: Path) -> Budgets:
    name = p.name
    with p.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise DataError("no rows", file=name)
    for col in ("name", "monthly_budget"):
        if col not in rows[0]:
            raise DataError(f"no '{col}' column (a budget CSV has name,monthly_budget[,currency][,by])",
                            file=name, column=col)
    amounts: dict[str, float] = {}
    currencies, bys = set(), set()
    for i, r in enumerate(rows, start=1):
        who = (r.get("name") or "").strip()
        if not who:
            raise DataError("empty name", file=name, row=i, column="name")
        if who in amounts:
            raise DataError(f"'{who}' has a budget in an earlier row", file=name, row=i, column="name")
        amounts[who] = _amount(r.get("monthly_budget"), name, i, "monthly_budget")
        currencies.add(str(r.get("currency") or "USD").strip().upper())
        bys.add(_by(r.get("by"), name, i))
    if len(currencies) > 1 or len(bys) > 1:
        raise DataError("every row needs the same currency and by", file=name,
                        column="currency" if len(currencies) > 1 else "by")
    return Budgets(bys.pop(), currencies.pop(), amounts, name)


@dataclass(frozen=True)
class BudgetStatus(Record):
    """One budget against a bill [the bill's currency]: ``budget`` for the bill's period, ``spent`` so far,
    ``projected`` by the period's end at the current rate; ``over`` already, ``will_pass`` by the end."""

    name: str
    budget: float
    spent: float
    projected: float
    used_share: float | None
    over: bool
    will_pass: bool


def budget_status(bill, budgets: Budgets, *, rate: float = 1.0, now: datetime | None = None) -> tuple[BudgetStatus, ...]:
    """Each budget of ``budgets`` against ``bill`` (a :class:`gpucost.showback.Bill` grouped the same way).
    ``rate``: the bill's currency per unit of the budgets' (from fx.csv); ``now``: how much of the period has
    passed (default: the clock; a period in the past has passed whole)."""
    if bill.by != budgets.by:
        raise GpucostError(f"the budgets are per {budgets.by} ({budgets.source}): bill --by {budgets.by}")
    start, end = bill.period.start, bill.period.end
    at = min(max(now or datetime.now(UTC), start), end)
    passed_h = (at - start).total_seconds() / SECONDS_PER_HOUR
    scale = bill.period.hours / HOURS_PER_MONTH if not _calendar_month(start, end) else 1.0
    spent = {ln.name: ln.cost for ln in bill.lines}
    out = []
    for name, monthly in budgets.amounts.items():
        budget = round(monthly * rate * scale, 2)
        s = spent.get(name, 0.0)
        projected = round(s * bill.period.hours / passed_h, 2) if passed_h > 0 else s
        out.append(BudgetStatus(name, budget, s, projected, s / budget if budget > 0 else None, s > budget,
                                projected > budget))
    return tuple(out)


def _calendar_month(start: datetime, end: datetime) -> bool:
    nxt = datetime(start.year + (start.month == 12), start.month % 12 + 1, 1, tzinfo=start.tzinfo)
    return start.day == 1 and start.hour == start.minute == start.second == 0 and end == nxt


__all__ = ["Budgets", "BudgetStatus", "read_budgets", "budget_status", "BUDGET_GROUPINGS"]
