"""Sharing and scaling planner speed (issue 7 targets): a 10 000-job trace simulates in <= 1 s (each policy),
the sharing plan for 100 workloads in <= 100 ms (each mode); plus the training planner and the CLI.

The 10 000-job trace is drawn like data/traces/sample_jobs.csv (see data/traces/README.md), fixed seed.
Run: .venv/bin/python benchmarks/bench_plan.py
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import measure  # noqa: E402

from gpucost import plan  # noqa: E402
from gpucost.catalog import Catalog  # noqa: E402


def trace_10k() -> plan.Trace:
    rng = np.random.default_rng(7)
    n = 10_000
    arrival = np.cumsum(rng.exponential(1 / 1.4265, n))  # jobs/h as the sample (1/20 of Helios Venus)
    run = rng.lognormal(np.log(204.0), 2.8836, n) / 3600  # published median 204 s, mean 13,041 s
    gpus = rng.choice([1, 2, 4, 8, 16, 32, 64], n, p=[0.55, 0.1265, 0.0992, 0.0778, 0.061, 0.0479, 0.0376])
    return plan.Trace(arrival, gpus, run, "10k")


def workloads_100() -> list[plan.Workload]:
    rng = np.random.default_rng(11)
    return [plan.Workload(float(rng.uniform(1, 30)), float(rng.uniform(2, 40)), bool(rng.random() < 0.2))
            for _ in range(100)]


def main() -> None:
    cat = Catalog()
    tr = trace_10k()
    for policy in plan.POLICIES:
        measure(f"simulate_fleet {policy:9} (10 000 jobs)",
                lambda policy=policy: plan.simulate_fleet(tr, policy, price_per_gpu_hour=2.0,
                                                          spot_price_per_gpu_hour=1.0,
                                                          interruption_rate_per_hour=3e-4),
                repeat=5, warmup=1, target_ms=1000)
    measure("commitment_level (10 000 jobs)", lambda: plan.commitment_level(tr, 0.37), repeat=20, target_ms=1000)
    ws = workloads_100()
    plan.plan_share(ws, "a100-80gb-sxm", "mig", cat)  # warm the catalog
    for mode in plan.SHARE_MODES:
        measure(f"plan_share {mode:12} (100 workloads)", lambda mode=mode: plan.plan_share(ws, "a100-80gb-sxm", mode, cat),
                repeat=30, target_ms=100)
    measure("plan_train llama-3.1-70b on a100-80gb-sxm",
            lambda: plan.plan_train("llama-3.1-70b", "a100-80gb-sxm", cat, tokens=1e9), repeat=5, warmup=1)
    measure("gpucost plan scale --trace sample --json (subprocess)",
            lambda: subprocess.run([sys.executable, "-m", "gpucost", "plan", "scale", "--trace", "sample", "--json"],
                                   check=True, capture_output=True), repeat=3, warmup=1)


if __name__ == "__main__":
    main()
