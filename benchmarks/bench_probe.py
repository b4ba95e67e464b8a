"""GPU probe speed, against the fake NVML (gpucost.fake_nvml) unless --real is given.

Targets (issue #5): one probe of all GPUs <= 50 ms after initialization; sampling at 1 Hz costs under 2 % of
one core. The CPU cost is measured two ways: CPU time per sample (probe.sample + the sampler's record) ×
1 sample/s, and the CPU time of a real 1 Hz sampler run divided by its wall time.

Run: .venv/bin/python benchmarks/bench_probe.py [--real] [--seconds 5]
With --real it reads this machine's GPUs through the real NVML (needs a driver; see
tools/device_probe_check.sh); the fake's cost is Python only, the real one adds the driver's ioctls.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import measure  # noqa: E402

from gpucost import monitor, probe  # noqa: E402
from gpucost.catalog import Catalog  # noqa: E402


def cpu_per_sample_ms(n: int = 2000) -> tuple[float, float]:
    """Median and p95 CPU time [ms] of one sample of all GPUs (NVML reads + Sample records)."""
    times = []
    for _ in range(n):
        t0 = time.process_time_ns()
        [monitor.Sample.from_mapping(0.0, m) for m in probe.sample()]
        times.append((time.process_time_ns() - t0) / 1e6)
    times.sort()
    return statistics.median(times), times[int(0.95 * (len(times) - 1))]


def sampler_cpu_pct(seconds: float) -> float:
    """CPU time of a real 1 Hz sampler run over its wall time [% of one core]."""
    c0, w0 = time.process_time(), time.perf_counter()
    monitor.run_sampler(probe.sample, seconds, 1.0)
    return 100 * (time.process_time() - c0) / (time.perf_counter() - w0)


def bench(label: str, seconds: float) -> None:
    cat = Catalog()
    r = probe.probe()  # the first probe starts NVML
    if not r.available:
        print(f"{label}: no GPU ({r.reason})")
        return
    n = len(r.gpus)
    print(f"-- {label}: {n} GPU(s): {', '.join(sorted({g.name or '?' for g in r.gpus}))}")
    measure(f"probe() all {n} GPUs", probe.probe, repeat=200, target_ms=50)
    measure(f"probe(processes=True) all {n} GPUs", lambda: probe.probe(processes=True), repeat=100,
            target_ms=50)
    measure(f"probe() + catalog match, {n} GPUs",
            lambda: probe.probe(match=lambda nm, mb: monitor.match_gpu(cat, nm, mb)), repeat=100, target_ms=50)
    measure(f"sample() all {n} GPUs (wall)", probe.sample, repeat=500)
    med, p95 = cpu_per_sample_ms()
    verdict = "met" if p95 / 1000 * 1 * 100 < 2 else "MISSED"
    print(f"{'CPU per sample, ' + str(n) + ' GPUs':48} median {med:9.3f} ms   p95 {p95:9.3f} ms   "
          f"→ at 1 Hz {med / 10:.3f} % (p95 {p95 / 10:.3f} %) of one core  target < 2 %: {verdict}")
    pct = sampler_cpu_pct(seconds)
    print(f"{'1 Hz sampler for ' + format(seconds, 'g') + ' s (CPU / wall)':48} {pct:9.3f} % of one core"
          f"   target < 2 %: {'met' if pct < 2 else 'MISSED'}")
    samples = [monitor.Sample(t, i, 50, 40, 1000, 2000, 300) for t in range(3600) for i in range(n)]
    measure(f"summarize 1 h at 1 Hz, {n} GPUs", lambda: monitor.summarize(samples, 1.0), repeat=10, warmup=1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--real", action="store_true", help="use this machine's NVML instead of the fake")
    ap.add_argument("--seconds", type=float, default=5.0, help="length of the real 1 Hz sampler run")
    args = ap.parse_args()
    if args.real:
        probe.set_nvml(None)
        bench("real NVML", args.seconds)
        return
    for label, fake in (("fake NVML, RTX 4090 + A100", probe.fake("two_gpus")),
                        ("fake NVML, 8 x H100 (HGX)", probe.fake("fleet", n=8))):
        probe.set_nvml(fake)
        bench(label, args.seconds)
    probe.set_nvml(None)


if __name__ == "__main__":
    main()
