"""Shared test set-up. Tests leave no trace: HOME, IPYTHONDIR and JUPYTER_* point at a temporary folder
for the whole run (subprocesses inherit them), removed at the end."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
NOTEBOOKS = ROOT / "notebooks"
RECORD_MIME = "application/vnd.gpucost+json"

_SANDBOX = Path(tempfile.mkdtemp(prefix="gpucost-tests-"))
atexit.register(shutil.rmtree, _SANDBOX, ignore_errors=True)
for var, sub in {"HOME": "home", "IPYTHONDIR": "ipython", "JUPYTER_CONFIG_DIR": "jupyter-config",
                 "JUPYTER_DATA_DIR": "jupyter-data", "JUPYTER_RUNTIME_DIR": "jupyter-runtime",
                 "XDG_CACHE_HOME": "cache", "XDG_CONFIG_HOME": "config", "XDG_DATA_HOME": "data", "MPLCONFIGDIR": "mpl",
                 "HF_HOME": "hf"}.items():
    (_SANDBOX / sub).mkdir(parents=True, exist_ok=True)
    os.environ[var] = str(_SANDBOX / sub)
os.environ.pop("GPUCOST_DATA_DIR", None)
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("JUPYTER_PLATFORM_DIRS", "1")


@pytest.fixture(scope="session")
def sandbox() -> Path:
    return _SANDBOX


def run_cli(*args: str, env: dict | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    """Run ``python -m gpucost ARGS`` as a user would; returns the completed process (text mode)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "gpucost", *args], capture_output=True, text=True,
                          env=full_env, timeout=timeout, cwd=str(_SANDBOX))


def cli_json(*args: str, env: dict | None = None):
    proc = run_cli(*args, "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture
def data_copy(tmp_path: Path) -> Path:
    """A writable copy of the bundled tables, for tests that corrupt one file."""
    dst = tmp_path / "data"
    shutil.copytree(DATA, dst)
    return dst


def run_notebook(name: str, parameters: dict, tmp_path: Path) -> dict:
    """Run notebooks/NAME with papermill and return the record the page displayed."""
    import papermill as pm

    out = tmp_path / f"out-{name}"
    nb = pm.execute_notebook(str(NOTEBOOKS / name), str(out), parameters=parameters, kernel_name="python3",
                             cwd=str(NOTEBOOKS), progress_bar=False, log_output=False)
    records = [o["data"][RECORD_MIME] for c in nb["cells"] if c["cell_type"] == "code"
               for o in c.get("outputs", []) if RECORD_MIME in o.get("data", {})]
    assert records, f"{name} displayed no {RECORD_MIME} record"
    rec = records[-1]
    return json.loads(rec) if isinstance(rec, str) else rec


# ------------------------------------------------------------------------------------------------
# Real-browser fixtures: one Voila server and one headless Chromium for the whole run, both stopped
# at the end (nothing is left running after the suite).
# ------------------------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def voila_server():
    from .browser import VoilaServer, chromium_path

    if chromium_path() is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed (.ci/run installs Debian's chromium)")
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    srv = VoilaServer(pool_size=1)
    srv.wait_preheated(len(list(NOTEBOOKS.glob("*.ipynb"))))
    srv.wait_idle()  # the pools' kernels have run their notebooks
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def chromium_browser(voila_server):
    from playwright.sync_api import sync_playwright

    from .browser import CHROMIUM_ARGS, chromium_path

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def browser_page(chromium_browser):
    ctx = chromium_browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = ctx.new_page()
    pg.set_default_navigation_timeout(180000)
    pg.set_default_timeout(120000)
    yield pg
    ctx.close()


# hypothesis: the same cases on every run (a CI failure can be re-run), and no example database written
# into the repository (tests leave no trace)
from hypothesis import settings as _hypothesis_settings  # noqa: E402

_hypothesis_settings.register_profile("gpucost", derandomize=True, database=None, print_blob=True)
_hypothesis_settings.load_profile("gpucost")


def pytest_collection_modifyitems(config, items):
    """Tests marked ``internet`` run only when asked for (GPUCOST_INTERNET_TESTS=1): no other test reaches
    the network, and CI never does."""
    if os.environ.get("GPUCOST_INTERNET_TESTS") == "1":
        return
    skip = pytest.mark.skip(reason="reaches the internet: GPUCOST_INTERNET_TESTS=1 ./dev test -m internet")
    for item in items:
        if "internet" in item.keywords:
            item.add_marker(skip)


def files_on_disk(roots, skip: tuple[str, ...]) -> dict[str, tuple[int, int]]:
    """(size, mtime) of every file under ``roots`` whose path contains none of ``skip``: compared before
    and after a visitor's actions to show nothing was written (app and tampering tests)."""
    out = {}
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if not any(s in os.path.join(dirpath, d) for s in skip)]
            for f in filenames:
                p = os.path.join(dirpath, f)
                if any(s in p for s in skip):
                    continue
                try:
                    st = os.stat(p)
                except OSError:
                    continue
                out[p] = (st.st_size, st.st_mtime_ns)
    return out
