"""Serving engine: one plan (KV capacity, operating point over the batch sizes, replicas, costs, APIs) and
`gpucost serve --json` end to end; the "what fits" table; the full sweep — every catalog card's plan and its
20-point cost-against-load curve. Targets (issue 18): one serving answer ≤ 20 ms, the sweep ≤ 200 ms.

Run: .venv/bin/python benchmarks/bench_serving.py
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import measure  # noqa: E402

from gpucost.catalog import Catalog  # noqa: E402
from gpucost.errors import GpucostError  # noqa: E402
from gpucost.models import catalog_spec  # noqa: E402
from gpucost.quant import get_format  # noqa: E402
from gpucost.records import (
    gpu,  # noqa: E402
    gpu_records,  # noqa: E402
)
from gpucost.serving import Load, cost_curve, fit_table, plan_serving  # noqa: E402


def main() -> None:
    cat = Catalog()
    spec, fmt = catalog_spec("llama-3.1-8b", cat), get_format("bf16", cat)
    h100 = gpu(cat, "h100-sxm")
    plan_serving(spec, fmt, h100, Load(5, 1000, 200), catalog=cat)
    measure("plan_serving (llama-3.1-8b, H100, TPOT 50 ms)",
            lambda: plan_serving(spec, fmt, h100, Load(5, 1000, 200), tpot_ms=50, catalog=cat), repeat=30,
            target_ms=20)
    measure("plan_serving (llama-3.1-8b, RTX 4090, 20 req/s, p90 TTFT 400 ms)",
            lambda: plan_serving(spec, fmt, gpu(cat, "rtx-4090"), Load(20, 1000, 200), ttft_ms=400, ttft_stat="p90",
                                 catalog=cat), repeat=30, target_ms=20)
    big = catalog_spec("llama-3.1-70b", cat)
    measure("plan_serving (llama-3.1-70b, 4 × H100, no target)",
            lambda: plan_serving(big, fmt, h100, Load(20, 2000, 400), gpus=4, catalog=cat), repeat=30, target_ms=20)
    rtx = gpu(cat, "rtx-4090")
    measure("fit_table (llama-3.1-8b, RTX 4090: 9 contexts, 9 concurrencies by bisection)",
            lambda: fit_table(spec, fmt, rtx), repeat=30, target_ms=20)
    cards = list(gpu_records(cat).values())

    def sweep() -> None:
        for g in cards:
            try:
                plan = plan_serving(spec, fmt, g, Load(5, 1000, 200), tpot_ms=50, catalog=cat)
            except GpucostError:  # a card without a dense throughput figure
                continue
            cost_curve(plan, points=20)

    measure(f"full sweep: {len(cards)} cards × (plan + 20-point cost curve)", sweep, repeat=10, target_ms=200)
    measure("gpucost serve --json (subprocess, end to end)",
            lambda: subprocess.run([sys.executable, "-m", "gpucost", "serve", "--model", "llama-3.1-8b", "--gpu",
                                    "h100-sxm", "--rps", "5", "--json"], check=True, capture_output=True),
            repeat=5, warmup=1)


if __name__ == "__main__":
    main()
