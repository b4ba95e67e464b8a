"""Rules-of-thumb engine speed: every claim evaluated with its engine (target: well under 1 s for all,
in-process, warm catalog), each claim alone (what one input change on page 06 costs), and
`gpucost claims --json` end to end as a subprocess.

Run: .venv/bin/python benchmarks/bench_claims.py
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import measure  # noqa: E402

from gpucost import claims  # noqa: E402
from gpucost.catalog import Catalog  # noqa: E402


def main() -> None:
    cat = Catalog()
    claims.evaluate_all(cat)  # load tables and scenarios once
    measure("evaluate_all (every claim, warm catalog)", lambda: claims.evaluate_all(cat), repeat=20,
            target_ms=500)
    for cid in claims.claim_ids():
        measure(f"  evaluate {cid}", lambda cid=cid: claims.evaluate(cid, cat), repeat=10, warmup=1)
    measure("evaluate_all (cold: new catalog, tables from disk)", lambda: claims.evaluate_all(Catalog()),
            repeat=5, warmup=1)
    measure("gpucost claims --json (subprocess, end to end)",
            lambda: subprocess.run([sys.executable, "-m", "gpucost", "claims", "--json"], check=True,
                                   capture_output=True), repeat=5, warmup=1, target_ms=5000)


if __name__ == "__main__":
    main()
