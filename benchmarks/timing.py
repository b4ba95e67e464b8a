"""Shared timing helper for the benchmarks: run a callable N times, print median and p95 (ms)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def measure(name: str, fn: Callable[[], object], *, repeat: int = 50, warmup: int = 3,
            target_ms: float | None = None) -> dict:
    """Time ``fn`` ``repeat`` times after ``warmup`` calls; print and return median/p95 in ms."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    med = statistics.median(times)
    p95 = times[min(len(times) - 1, int(round(0.95 * (len(times) - 1))))]
    verdict = ""
    if target_ms is not None:
        verdict = f"  target <= {target_ms:g} ms: {'met' if p95 <= target_ms else 'MISSED'}"
    print(f"{name:48} median {med:9.2f} ms   p95 {p95:9.2f} ms   (n={repeat}){verdict}")
    return {"name": name, "median_ms": med, "p95_ms": p95, "n": repeat, "target_ms": target_ms}
