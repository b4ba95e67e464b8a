"""Write data/traces/sample_jobs.csv: a small job trace sampled from the published statistics of the
Helios *Venus* cluster (SenseTime, SC '21). See data/traces/README.md for what is published and what is
assumed. Deterministic (fixed seed). Usage (repo root): python tools/make_sample_trace.py
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "data" / "traces" / "sample_jobs.csv"
SOURCE = ("https://github.com/S-Lab-System-Group/HeliosArtifact/blob/main/analysis/"
          "1_compare%20with%20Philly%20trace/helios_cluster_summary.csv (Venus row), sampled")
AS_OF = "2026-11-29"

# Published (helios_cluster_summary.csv, row Venus)
VENUS_GPU_JOBS = 125_303
VENUS_MEAN_RUN_S = 13_040.598
VENUS_MEDIAN_RUN_S = 204.0
VENUS_MEAN_GPUS = 6.736
VENUS_MEDIAN_GPUS = 1.0
# Published (HeliosData README): the traces cover April to September 2020
TRACE_DAYS = 183  # 2020-04-01 .. 2020-09-30
# Assumptions of this sample (stated in data/traces/README.md)
ARRIVAL_SCALE = 1 / 20  # a team-sized slice of the cluster's arrival rate
P_ONE_GPU = 0.55  # the median is 1 GPU, so at least half the jobs use one GPU
MULTI_GPU_SIZES = np.array([2, 4, 8, 16, 32, 64])
N_JOBS = 1000
SEED = 20200401


def _multi_gpu_weights() -> np.ndarray:
    """Geometric weights w**k over 2..64 GPUs, w solved so the mean GPUs per job is the published 6.736."""
    target = (VENUS_MEAN_GPUS - P_ONE_GPU) / (1 - P_ONE_GPU)
    lo, hi = 0.01, 5.0
    for _ in range(200):
        w = (lo + hi) / 2
        p = w ** np.arange(1, 7)
        mean = float((p / p.sum()) @ MULTI_GPU_SIZES)
        lo, hi = (w, hi) if mean < target else (lo, w)
    p = w ** np.arange(1, 7)
    return p / p.sum()


def main() -> None:
    rng = np.random.default_rng(SEED)
    rate_per_hour = VENUS_GPU_JOBS / (TRACE_DAYS * 24) * ARRIVAL_SCALE
    arrivals = np.cumsum(rng.exponential(1 / rate_per_hour, N_JOBS))
    arrivals -= arrivals[0]
    mu = math.log(VENUS_MEDIAN_RUN_S)
    sigma = math.sqrt(2 * math.log(VENUS_MEAN_RUN_S / VENUS_MEDIAN_RUN_S))
    run_h = rng.lognormal(mu, sigma, N_JOBS) / 3600
    multi = _multi_gpu_weights()
    sizes = np.concatenate([[1], MULTI_GPU_SIZES])
    probs = np.concatenate([[P_ONE_GPU], (1 - P_ONE_GPU) * multi])
    gpus = rng.choice(sizes, N_JOBS, p=probs)
    lines = ["job_id,arrival_hour,gpu_hours,gpus,source,as_of"]
    for i, (a, r, g) in enumerate(zip(arrivals, run_h, gpus, strict=True), start=1):
        lines.append(f'{i},{a:.4f},{max(r * g, 1e-4):.4f},{g},"{SOURCE}",{AS_OF}')
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}: {N_JOBS} jobs over {arrivals[-1]:.0f} h; "
          f"rate {rate_per_hour:.4f}/h; lognormal mu={mu:.4f} sigma={sigma:.4f}; "
          f"P(gpus)={dict(zip(sizes.tolist(), np.round(probs, 4).tolist(), strict=True))}; "
          f"sample median run {np.median(run_h) * 3600:.0f} s, mean run {run_h.mean() * 3600:.0f} s, "
          f"mean gpus {gpus.mean():.3f}, offered load {(run_h * gpus).sum() / arrivals[-1]:.1f} GPUs")


if __name__ == "__main__":
    main()
