"""The web app in a real browser: time to interactive per page (navigation → first result visible) with a
preheated kernel, interaction latency (input change → updated result), and memory per kernel.

Targets (issue 6, 2-core machine): <= 3 s to interactive with a preheated kernel, <= 300 ms per interaction.
Run: .venv/bin/python benchmarks/bench_app.py [--repeat N]   (needs Debian's chromium)
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.browser import CHROMIUM_ARGS, VoilaServer, chromium_path, wait_ready  # noqa: E402

# page → (an interaction: JS-free playwright steps, a JS predicate that is true once the result updated)
INTERACTIONS = {
    "01_card_choice.ipynb": (
        lambda p, i: p.select_option(".gc-precision select", ["fp8", "bf16"][i % 2]),
        "() => document.querySelector('.gc-chart').innerText.includes(['FP8','BF16'][{i} % 2])"),
}
LANG_TOGGLE = (
    lambda p, i: p.click(".gc-lang button:has-text('" + ["简体中文", "English"][i % 2] + "')"),
    "() => document.querySelector('.gc-nav').innerText.includes(['选卡','Card choice'][{i} % 2])")


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def rss_mib(pid: int) -> float:
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def kernel_pids(root_pid: int) -> list[int]:
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            cmd = open(f"/proc/{d}/cmdline", "rb").read().replace(b"\0", b" ").decode()
            pgid = os.getpgid(int(d))
        except (OSError, ProcessLookupError):
            continue
        if pgid == os.getpgid(root_pid) and "ipykernel" in cmd:
            pids.append(int(d))
    return pids


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    if chromium_path() is None:
        sys.exit("needs Debian's chromium (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    pages = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
    srv = VoilaServer(pool_size=1)
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
            print(f"{'page':34} {'TTI median':>10} {'TTI p95':>8} {'interact median':>16} {'p95':>7}  (n)")
            for nb in pages:
                tti, lat = [], []
                for _ in range(args.repeat):
                    time.sleep(2.0)  # let the pool preheat the next kernel
                    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
                    page = ctx.new_page()
                    t0 = time.perf_counter()
                    page.goto(srv.page(nb))
                    wait_ready(page)
                    tti.append(time.perf_counter() - t0)
                    act, done = INTERACTIONS.get(nb, LANG_TOGGLE)
                    for i in range(1, 4):
                        t0 = time.perf_counter()
                        act(page, i)
                        page.wait_for_function(done.replace("{i}", str(i)), timeout=30000)
                        lat.append((time.perf_counter() - t0) * 1000)
                    ctx.close()
                print(f"{nb:34} {statistics.median(tti):9.2f}s {pct(tti, .95):7.2f}s "
                      f"{statistics.median(lat):14.0f}ms {pct(lat, .95):6.0f}ms  ({len(tti)}, {len(lat)})")
            browser.close()
        mem = [rss_mib(p) for p in kernel_pids(srv.proc.pid)]
        if mem:
            print(f"kernels alive: {len(mem)}; RSS per kernel: median {statistics.median(mem):.0f} MiB, "
                  f"max {max(mem):.0f} MiB; voila server {rss_mib(srv.proc.pid):.0f} MiB")
        print("targets: TTI <= 3 s with a preheated kernel; interaction <= 300 ms")
    finally:
        srv.stop()


if __name__ == "__main__":
    main()
