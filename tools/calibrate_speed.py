"""Refit the speed factors of data/engine_efficiency.csv from the benchmark rows each row names, and
show them beside the stored values (tests/test_speed.py checks they agree).

Usage (repo root): .venv/bin/python tools/calibrate_speed.py
"""

from __future__ import annotations

from gpucost.speed import efficiency_table
from gpucost.validation import calibrate


def main() -> int:
    stored = efficiency_table()
    fitted = calibrate()
    print(f"{'engine':14} {'factor':22} {'stored':>10} {'fitted':>10}  calibration rows")
    for engine, vals in fitted.items():
        for col, v in vals.items():
            print(f"{engine:14} {col:22} {getattr(stored[engine], col):>10.4f} {v:>10.4f}  "
                  f"{';'.join(stored[engine].calibration_rows)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
