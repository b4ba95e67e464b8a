"""Many users on one Voila server: ten browser sessions of the card-choice page, one every STAGGER seconds,
all kept open until each has rendered and answered a precision change. Prints time to render and to answer
(median / p95 / max) and the memory of each session's kernel. The correctness of the same run is tested in
tests/test_load.py (there with 1 s between arrivals).

Run: .venv/bin/python benchmarks/bench_load.py [--sessions 10] [--stagger 4] [--stagger 1]   (needs chromium)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.browser import VoilaServer, _descendants, chromium_path, kernel_rss_mib, run_sessions  # noqa: E402


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=10)
    ap.add_argument("--stagger", type=float, action="append", help="seconds between arrivals (repeatable)")
    args = ap.parse_args()
    if chromium_path() is None:
        sys.exit("needs Debian's chromium (apt-get install chromium)")
    srv = VoilaServer()
    try:
        pages = len(list((ROOT / "notebooks").glob("*.ipynb")))
        srv.wait_preheated(pages)
        srv.wait_idle()
        rest = sum(kernel_rss_mib(None, pid=p) for p in _descendants(srv.proc.pid))
        print(f"at rest: Voila and its {pages} preheated kernels {rest:.0f} MiB", flush=True)
        for stagger in args.stagger or [4.0, 1.0]:
            srv.wait_idle()
            res = asyncio.run(run_sessions(srv.page("01_card_choice.ipynb"), args.sessions, stagger))
            rend = [r["rendered_s"] for r in res]
            ans = [r["answered_s"] * 1000 for r in res]
            mem = [r["kernel_mib"] for r in res]
            print(f"{args.sessions} sessions, one every {stagger:g} s: render median {statistics.median(rend):.1f} s, "
                  f"p95 {pct(rend, .95):.1f} s, max {max(rend):.1f} s; answer median {statistics.median(ans):.0f} ms, "
                  f"p95 {pct(ans, .95):.0f} ms; kernel per session {statistics.median(mem):.0f} MiB "
                  f"(Voila server {kernel_rss_mib(None, pid=srv.proc.pid):.0f} MiB)", flush=True)
    finally:
        srv.stop()
    print(f"machine: {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
