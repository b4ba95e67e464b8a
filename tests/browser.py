"""Helpers for the real-browser tests: a Voila server on a free localhost port and headless Debian Chromium
driven by Playwright (``executable_path``; never a browser download)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage",
                 # several pages at once: keep background pages' timers and rendering running
                 "--disable-background-timer-throttling", "--disable-renderer-backgrounding",
                 "--disable-backgrounding-occluded-windows"]


def chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser"):
        p = shutil.which(name)
        if p:
            return p
    return None


def free_port() -> int:
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class VoilaServer:
    """``voila notebooks/`` with the repo's voila.json, on 127.0.0.1:PORT; stopped (whole process group)
    by :meth:`stop`."""

    def __init__(self, pool_size: int = 1, extra_args: list[str] | None = None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        voila = Path(sys.executable).parent / "voila"
        args = [str(voila), "notebooks/", "--no-browser", f"--port={self.port}", "--Voila.ip=127.0.0.1",
                f"--VoilaKernelManager.kernel_pools_config={{'default': {{'pool_size': {pool_size}}}}}",
                *(extra_args or [])]
        self.log = open(os.environ.get("HOME", "/tmp") + f"/voila-{self.port}.log", "w")  # noqa: SIM115
        from gpucost.ui import JUPYTER_CONFIG, JUPYTER_DATA

        # the template and the server's rules from the package, as ./dev serve finds them (an editable install
        # has no share/jupyter)
        env = {**os.environ, "JUPYTER_PATH": os.pathsep.join(filter(None, (str(JUPYTER_DATA),
                                                                          os.environ.get("JUPYTER_PATH")))),
               "JUPYTER_CONFIG_PATH": os.pathsep.join(filter(None, (str(JUPYTER_CONFIG),
                                                                    os.environ.get("JUPYTER_CONFIG_PATH"))))}
        self.proc = subprocess.Popen(args, cwd=ROOT, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True, env=env)
        deadline = time.time() + 90
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"voila exited with {self.proc.returncode}; see {self.log.name}")
            try:
                urllib.request.urlopen(self.url + "/voila/tree", timeout=2)  # noqa: S310 - localhost
                return
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise RuntimeError("voila did not start within 90 s")

    def wait_preheated(self, count: int, timeout_s: float = 240) -> None:
        """Wait until Voila says the kernel pools of ``count`` notebooks are filled (first paint is then
        what a user of a running server gets)."""
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            self.log.flush()
            text = Path(self.log.name).read_text(errors="replace")
            if len(set(re.findall(r"Kernel pool of (\S+) is filled", text))) >= count:
                return
            time.sleep(0.5)

    def wait_idle(self, quiet_pct: float = 5.0, window_s: float = 0.5, timeout_s: float = 120) -> None:
        """Wait until Voila and its kernels use less than ``quiet_pct`` % of a core for two windows in a row
        (a used kernel's replacement is started and has run its notebook)."""
        tick = os.sysconf("SC_CLK_TCK")
        deadline, quiet, last = time.time() + timeout_s, 0, _cpu_ticks(self.proc.pid)
        while time.time() < deadline and quiet < 2:
            time.sleep(window_s)
            now = _cpu_ticks(self.proc.pid)
            quiet = quiet + 1 if (now - last) / tick / window_s * 100 < quiet_pct else 0
            last = now

    def page(self, notebook: str, query: str = "") -> str:
        return f"{self.url}/voila/render/{notebook}{query}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=5)
        self.log.close()
        # kept with the screenshots: what the server said is the first thing to read when a browser test fails
        with contextlib.suppress(OSError):
            ARTIFACTS.mkdir(exist_ok=True)
            shutil.copyfile(self.log.name, ARTIFACTS / "voila.log")


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                ppid = int(Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(d))
    out, stack = [], [pid]
    while stack:
        p = stack.pop()
        out.append(p)
        stack.extend(children.get(p, []))
    return out


def _cpu_ticks(pid: int) -> int:
    """utime + stime of ``pid`` and all its descendants [clock ticks]."""
    total = 0
    for p in _descendants(pid):
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            continue
    return total


def kernel_rss_mib(kernel_id: str | None, pid: int | None = None) -> float:
    """Resident memory [MiB] of the kernel with this id (found by its connection file), or of ``pid``."""
    if pid is None and kernel_id:
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    cmd = Path(f"/proc/{d}/cmdline").read_bytes()
                except OSError:
                    continue
                if f"kernel-{kernel_id}.json".encode() in cmd:
                    pid = int(d)
                    break
    if pid is None:
        return 0.0
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def wait_ready(page, timeout_ms: int = 60000) -> None:
    """Wait until the page's results area is shown with its content."""
    # textContent, polled every 50 ms: innerText on every animation frame lays the page out each time,
    # which slowed down the very rendering it waits for on the bigger pages
    page.wait_for_function(
        "() => { const r = document.querySelector('.gc-results');"
        " return !!r && r.checkVisibility() && r.textContent.trim().length > 20 }", timeout=timeout_ms,
        polling=50)


def assert_no_traceback(page) -> None:
    text = page.inner_text("body")
    for bad in ("Traceback", "Error executing", "There was an error when executing cell",
                "KeyError", "NameError", "Exception"):
        assert bad not in text, f"'{bad}' shown in the page"


# ------------------------------------------------------------------------------------------------
# Many sessions at once (tests/test_load.py, benchmarks/bench_load.py)
# ------------------------------------------------------------------------------------------------

PRECISIONS = ["fp8", "fp16", "int8", "fp32", "fp8", "fp16", "int8", "fp32", "fp8", "fp16"]
# textContent, polled every 100 ms: innerText on every animation frame in ten pages at once lays them all
# out continuously and starves the very rendering being waited for
READY = ("() => { const r = document.querySelector('.gc-summary'); "
         "return !!r && r.checkVisibility() && r.textContent.includes('cards match') }")


async def _session(browser, url: str, i: int, all_open, stagger_s: float, timeout_ms: int) -> dict:
    await asyncio.sleep(stagger_s * i)
    ctx = await browser.new_context(viewport={"width": 1200, "height": 900})
    pg = await ctx.new_page()
    pg.set_default_timeout(timeout_ms)
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)[:200]))
    pg.on("console", lambda m: m.type in ("error", "warning") and "Unsatisfied version" not in m.text
          and errors.append(m.text[:200]))
    step = "render"
    try:
        t0 = time.perf_counter()
        await pg.goto(url)
        await pg.wait_for_function(READY, polling=100)
        rendered = time.perf_counter() - t0
        step = "answer"
        prec = PRECISIONS[i % len(PRECISIONS)]
        t1 = time.perf_counter()
        await pg.select_option(".gc-precision select", prec)
        await pg.wait_for_function(
            f"() => document.querySelector('.gc-chart').textContent.includes('{prec.upper()} throughput')",
            polling=100)
        answered = time.perf_counter() - t1
        step = "wait for the others"
        # longer than any one session's own steps: a session that is stuck reports its own failure
        await asyncio.wait_for(all_open.wait(), 3 * timeout_ms / 1000)
        config = json.loads(await pg.text_content("#jupyter-config-data"))
        # read after every session has made its own change: what another visitor chose must not show here
        return {"rendered_s": rendered, "answered_s": answered, "chart": await pg.text_content(".gc-chart"),
                "precision": await pg.input_value(".gc-precision select"),
                "traceback": "Traceback" in await pg.inner_text("body"), "kernel": config["kernelId"],
                "kernel_mib": kernel_rss_mib(config["kernelId"])}
    except asyncio.BrokenBarrierError:
        raise  # another session failed: its own error is the one reported
    except Exception as exc:
        ARTIFACTS.mkdir(exist_ok=True)
        await pg.screenshot(path=str(ARTIFACTS / f"load-session-{i}.png"))
        (ARTIFACTS / f"load-session-{i}.html").write_text(await pg.content())
        await all_open.abort()  # the others stop waiting for this one
        seen = {sel: ((await pg.text_content(sel, timeout=1000)) or "")[:160]
                for sel in (".gc-summary", ".gc-chart .gtitle")
                if await pg.query_selector(sel)}
        raise AssertionError(f"session {i} failed at '{step}': {exc}; the page shows {seen}; "
                             f"its console: {errors[-5:]}") from None
    finally:
        await pg.close(run_before_unload=True)  # as closing the tab does: the kernel is shut down
        await ctx.close()


async def run_sessions(url: str, sessions: int, stagger_s: float, timeout_ms: int = 180000) -> list[dict]:
    """``sessions`` browser sessions of the card-choice page at ``url``, one every ``stagger_s`` seconds, all
    kept open until every one has rendered and answered a precision change (see tests/test_load.py)."""
    from playwright.async_api import async_playwright

    all_open = asyncio.Barrier(sessions)
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        try:
            out = await asyncio.gather(*(_session(browser, url, i, all_open, stagger_s, timeout_ms)
                                         for i in range(sessions)), return_exceptions=True)
        finally:
            await browser.close()
    failed = [r for r in out if isinstance(r, BaseException) and not isinstance(r, asyncio.BrokenBarrierError)]
    if failed:
        raise failed[0]
    return out
