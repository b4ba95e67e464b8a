"""Print the estimator's measured error table in Markdown (for the README), then the per-row errors.

Usage (repo root): .venv/bin/python tools/error_table.py [--rows]
Every row of data/benchmarks.csv is estimated (gpucost.validation); rows that fitted a factor
(data/engine_efficiency.csv, column calibration_rows) are kept out of the held-out error.
"""

from __future__ import annotations

import sys

from gpucost.validation import markdown_table, summary, validate


def main(argv: list[str]) -> int:
    results = validate()
    print(markdown_table(summary(results)))
    skipped = results[results["role"] == "skipped"]
    if len(skipped):
        print(f"\nSkipped rows ({len(skipped)}): "
              + "; ".join(f"{r.id} ({r.reason})" for r in skipped.itertuples()))
    if "--rows" in argv:
        print("\n| id | category | model | quant | engine | GPU | measured | estimate | error | role |")
        print("| --- | --- | --- | --- | --- | --- | ---: | ---: | ---: | --- |")
        for r in results.itertuples():
            est = "—" if r.estimate is None or r.estimate != r.estimate else f"{r.estimate:,.3f}"
            err = "—" if r.error_pct is None or r.error_pct != r.error_pct else f"{r.error_pct:+.1f} %"
            print(f"| {r.id} | {r.category} | {r.model} | {r.quant} | {r.engine} | {r.gpu} | "
                  f"{r.measured:,.3f} {r.unit} | {est} | {err} | {r.role} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
