"""Card choice engine speed: rank the whole catalog for one need (target <= 10 ms in-process),
and `gpucost gpus --json` end to end as a subprocess (target < 1 s).

Run: .venv/bin/python benchmarks/bench_cards.py
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import measure  # noqa: E402

from gpucost.cards import Need, card_table, rank_cards  # noqa: E402
from gpucost.catalog import Catalog  # noqa: E402


def main() -> None:
    cat = Catalog()
    table = card_table(cat, "USD")
    need = Need(min_vram_gib=24, precision="bf16", price_basis="new")
    measure("rank_cards (whole catalog, one need)", lambda: rank_cards(need, cat, table=table),
            repeat=200, target_ms=10)
    measure("card_table + rank_cards (currency change)",
            lambda: rank_cards(need, cat, table=card_table(cat, "CNY")), repeat=100)
    measure("gpucost gpus --json (subprocess, end to end)",
            lambda: subprocess.run([sys.executable, "-m", "gpucost", "gpus", "--json"], check=True,
                                   capture_output=True), repeat=10, warmup=1, target_ms=1000)
    measure("gpucost --help (subprocess)",
            lambda: subprocess.run([sys.executable, "-m", "gpucost", "--help"], check=True,
                                   capture_output=True), repeat=10, warmup=1)


if __name__ == "__main__":
    main()
