"""Showback allocation speed (issue 27): a month of 1-minute samples for 8 cards and 50 processes
(each process on one card, 6–7 per card, 12 users, 5 projects) allocated into a bill per user.

Target: <= 1 s per bill. Run: .venv/bin/python benchmarks/bench_showback.py [--repeat N]
The samples are made-up numbers (a fixed random seed); only their count and shape matter here.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import measure  # noqa: E402

from gpucost.showback import (  # noqa: E402
    CardRate,
    allocate,
    cost_over_time,
    parse_period,
    sample_durations,
    usage_frame,
)

CARDS, PROCESSES, MINUTES = 8, 50, 30 * 24 * 60


def month_of_samples() -> pd.DataFrame:
    """The raw rows, as a source hands them over (labels as plain strings)."""
    rng = np.random.default_rng(27)
    t = pd.date_range("2026-11-01", periods=MINUTES, freq="1min", tz="UTC")
    proc = np.repeat(np.arange(PROCESSES), MINUTES)
    return pd.DataFrame({
        "card": np.char.add("gpu", (proc % CARDS).astype(str)),
        "start": np.tile(t, PROCESSES),
        "duration_s": 60.0,
        "user": np.char.add("user", (proc % 12).astype(str)),
        "project": np.char.add("project", (proc % 5).astype(str)),
        "pod": np.char.add("pod", proc.astype(str)),
        "sm_pct": rng.uniform(0, 15, PROCESSES * MINUTES),
        "memory_mib": rng.uniform(0, 8000, PROCESSES * MINUTES),
    })


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=10)
    args = ap.parse_args()
    raw = month_of_samples()
    usage = usage_frame(raw)
    rates = {f"gpu{i}": CardRate("a100-80gb-sxm", 1.79, "USD", "given", 81920.0) for i in range(CARDS)}
    nov = parse_period("2026-11")
    print(f"-- {len(usage):,} usage rows ({CARDS} cards, {PROCESSES} processes, {MINUTES:,} minutes)")
    for by in ("user", "pod"):
        for idle in ("spread", "separate"):
            measure(f"allocate by {by}, idle {idle}",
                    lambda by=by, idle=idle: allocate(usage, rates, period=nov, by=by, idle=idle),
                    repeat=args.repeat, warmup=1, target_ms=1000)
    measure("allocate by user, memory rule",
            lambda: allocate(usage, rates, period=nov, rule="memory"), repeat=args.repeat, warmup=1,
            target_ms=1000)
    measure("cost_over_time by user, 30 daily bars", lambda: cost_over_time(usage, rates, nov, bins=30),
            repeat=args.repeat, warmup=1, target_ms=1000)
    measure("usage_frame (a source's rows → the usage frame)", lambda: usage_frame(raw),
            repeat=max(3, args.repeat // 2), warmup=1)
    measure("sample_durations (sampled series → durations)", lambda: sample_durations(usage),
            repeat=max(3, args.repeat // 2), warmup=1)


if __name__ == "__main__":
    main()
