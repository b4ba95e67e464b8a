"""Helpers for the real-browser tests: a Voila server on a free localhost port and headless Debian Chromium
driven by Playwright (``executable_path``; never a browser download)."""

from __future__ import annotations

import contextlib
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
        self.proc = subprocess.Popen(args, cwd=ROOT, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
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


def wait_ready(page, timeout_ms: int = 60000) -> None:
    """Wait until the page's results area has rendered content."""
    page.wait_for_selector(".gc-results", state="attached", timeout=timeout_ms)
    page.wait_for_function(
        "() => { const r = document.querySelector('.gc-results'); return r && r.innerText.trim().length > 20 }",
        timeout=timeout_ms)


def assert_no_traceback(page) -> None:
    text = page.inner_text("body")
    for bad in ("Traceback", "Error executing", "There was an error when executing cell",
                "KeyError", "NameError", "Exception"):
        assert bad not in text, f"'{bad}' shown in the page"
