"""TCO engine speed (issue 4): one scenario with every option over 60 months <= 20 ms, the tornado
<= 200 ms, a Monte Carlo of 10 000 draws <= 1 s; plus resolving a scenario and the CLI end to end.

Run: .venv/bin/python benchmarks/bench_tco.py
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import measure  # noqa: E402

from gpucost import tco  # noqa: E402
from gpucost.catalog import Catalog  # noqa: E402


def main() -> None:
    cat = Catalog()
    sc = tco.load_scenario("midsize")  # every option priced: owned, lease, on-demand, spot, reserved, hybrid
    inputs = tco.resolve(sc, cat, months=60)
    result = tco.evaluate(inputs)
    print(f"midsize over 60 months: {len(result.options)} options priced, hybrid base "
          f"{result.hybrid.base_gpus} × {result.hybrid.base}")
    measure("evaluate: every option, 60 months", lambda: tco.evaluate(inputs), repeat=200, target_ms=20)
    measure("resolve (catalog + defaults lookups)", lambda: tco.resolve(sc, cat, months=60), repeat=50)
    measure("tornado (8 inputs, both ends, all options)", lambda: tco.tornado(inputs, result), repeat=100,
            target_ms=200)
    measure("Monte Carlo, 10 000 draws", lambda: tco.monte_carlo(inputs, result, draws=10000), repeat=20,
            warmup=2, target_ms=1000)
    measure("gpucost tco --json (subprocess, end to end)",
            lambda: subprocess.run([sys.executable, "-m", "gpucost", "tco", "--scenario", "midsize", "--json"],
                                   check=True, capture_output=True), repeat=10, warmup=1)


if __name__ == "__main__":
    main()
