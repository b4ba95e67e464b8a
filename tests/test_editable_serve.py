"""An editable install serves the app: after ``pip install -e .``, a plain ``voila notebooks/`` from the
repository root (what a contributor or a Binder-like host runs, without ./dev and its JUPYTER_PATH and
JUPYTER_CONFIG_PATH) renders the start page with gpucost's template and applies the server's rules.

The install goes into a virtual environment of its own, made here from this interpreter: it sees the
packages of the environment running the tests (so nothing is downloaded) but not any gpucost installed
there nor that environment's Jupyter files of gpucost (its ``share/jupyter`` is mirrored without them), so
only the editable install can supply the template. Nothing is written to the test environment, and the
checkout gains only what .gitignore already ignores."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import site
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from .browser import free_port
from .conftest import ROOT

pytestmark = pytest.mark.timeout(900)

#: what only gpucost's template puts in a page (gpucost/ui/jupyter/voila/templates/gpucost/index.html.j2)
TEMPLATE_MARKER = "window.__gpucostPlotly"


def _parent_sites() -> list[str]:
    """The folders this interpreter imports packages from beyond the standard library, the checkout
    itself left out (the editable install is what must put gpucost on the path)."""
    std = {Path(p).resolve() for p in (sys.base_prefix, sys.prefix)}
    out = []
    for p in [*site.getsitepackages(), *sys.path]:
        if not p or not os.path.isdir(p):
            continue
        r = Path(p).resolve()
        if r == ROOT or str(p) in out:
            continue
        # the standard library (the new environment has its own) but not site-packages under the prefixes
        if any(r.is_relative_to(s) for s in std) and "site-packages" not in r.parts:
            continue
        out.append(str(p))
    return out


def _mirror(src: Path, dst: Path) -> None:
    """``src`` linked into ``dst`` file by file (whole folders where nothing of gpucost is inside), every
    path naming gpucost left out."""
    if not src.is_dir():
        return
    for entry in sorted(src.iterdir()):
        if "gpucost" in entry.name:
            continue
        target = dst / entry.name
        if entry.is_dir() and not entry.is_symlink() and any("gpucost" in p.name for p in entry.rglob("*")):
            target.mkdir(parents=True, exist_ok=True)
            _mirror(entry, target)
        else:
            dst.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(FileExistsError):
                target.symlink_to(entry)


def _venv(tmp: Path) -> Path:
    """A virtual environment that imports the test environment's packages (its Jupyter data and config
    mirrored without gpucost's), with an editable finder ahead of any gpucost installed there."""
    env_dir = tmp / "venv"
    try:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True,
                       capture_output=True, timeout=120)
    except (subprocess.SubprocessError, OSError) as exc:
        pytest.skip(f"cannot create a virtual environment here ({exc})")
    py = env_dir / "bin" / "python"
    sp = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip())
    # after the editable install's own .pth (names sort '__editable__…' first): the test environment's
    # folders, then the editable finder moved ahead of the path finder, which would find a gpucost installed
    # there first (a contributor's fresh environment has no other gpucost)
    (sp / "zz-test-environment.pth").write_text(
        "import site, sys; list(map(site.addsitedir, " + repr(_parent_sites()) + ")); "
        "sys.meta_path.sort(key=lambda f: getattr(f, '__name__', '') != '_EditableFinder')\n", "utf-8")
    for sub in ("share/jupyter", "etc/jupyter"):
        _mirror(Path(sys.prefix) / sub, env_dir / sub)
    return env_dir


def _env(tmp: Path, env_dir: Path) -> dict[str, str]:
    """A user's shell: the new environment first on PATH, home and Jupyter folders empty, and none of the
    variables ./dev serve sets (nor PYTHONPATH)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("JUPYTER_PATH", "JUPYTER_CONFIG_PATH", "PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    for var in ("HOME", "JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR", "IPYTHONDIR"):
        (tmp / var.lower()).mkdir(exist_ok=True)
        env[var] = str(tmp / var.lower())
    env["PATH"] = str(env_dir / "bin") + os.pathsep + env.get("PATH", "")
    env["VIRTUAL_ENV"] = str(env_dir)
    return env


def _git_status() -> set[str]:
    if not (ROOT / ".git").exists() or shutil.which("git") is None:
        return set()
    out = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=all"],
                         capture_output=True, text=True, check=True).stdout
    return set(out.splitlines())


def _get(url: str, within_s: float) -> tuple[int | None, str]:
    """(status, body) of a GET that must be complete within ``within_s`` (a page whose template is missing
    never completes: Voilà's renderer fails after the headers); (None, "") when it is not."""
    got: list[tuple[int, str]] = []

    def fetch() -> None:
        try:
            resp = urllib.request.urlopen(url, timeout=within_s)  # noqa: S310 - localhost
            got.append((resp.status, resp.read().decode("utf-8", "replace")))
        except urllib.error.HTTPError as exc:
            got.append((exc.code, exc.read().decode("utf-8", "replace")))
        except Exception as exc:  # noqa: BLE001 - the server went away mid-page: no answer
            got.append((-1, repr(exc)))

    t = threading.Thread(target=fetch, daemon=True)   # ends with the server's sockets at the latest
    t.start()
    t.join(within_s)
    return got[0] if got else (None, "")


def _post(url: str, form: dict, cookie: str) -> int:
    req = urllib.request.Request(url, data=urllib.parse.urlencode(form).encode(), method="POST",  # noqa: S310
                                 headers={"Cookie": cookie, "Content-Type": "application/x-www-form-urlencoded",
                                          "X-XSRFToken": form["_xsrf"]})
    try:
        return urllib.request.urlopen(req, timeout=30).status  # noqa: S310 - localhost
    except urllib.error.HTTPError as exc:
        return exc.code


def test_pip_install_e_then_voila_notebooks_serves_the_app(tmp_path):
    pytest.importorskip("voila")
    before, parent = _git_status(), {p: sorted(os.listdir(p)) for p in site.getsitepackages() if os.path.isdir(p)}
    env_dir = _venv(tmp_path)
    env = _env(tmp_path, env_dir)
    py = str(env_dir / "bin" / "python")
    probe = "import importlib.util as u; raise SystemExit(not (u.find_spec('wheel') or " \
            "u.find_spec('setuptools.command.bdist_wheel')))"
    if subprocess.run([py, "-c", probe], env=env, cwd=tmp_path).returncode:
        pytest.skip("an editable install without downloads needs setuptools >= 70.1 or wheel in the test "
                    "environment (requirements-test.txt pins wheel)")
    pip = subprocess.run([py, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index",
                          "--ignore-installed", "--disable-pip-version-check", "-q", "-e", str(ROOT)],
                         env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert pip.returncode == 0, pip.stdout + pip.stderr
    # the checkout's gpucost, through the editable install (the checkout is not on the path otherwise)
    where = subprocess.run([py, "-c", "import gpucost, gpucost.ui as u; print(gpucost.__file__)"], env=env,
                           cwd=tmp_path, capture_output=True, text=True, check=True).stdout.strip()
    assert Path(where) == ROOT / "gpucost" / "__init__.py"
    # `voila` as its console script runs it (the script's folder first on sys.path, not the working folder)
    launcher = env_dir / "bin" / "voila"
    launcher.write_text(f"#!{py}\nimport sys\nfrom voila.app import main\nsys.exit(main())\n", "utf-8")
    launcher.chmod(0o755)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = open(tmp_path / "voila.log", "w")  # noqa: SIM115 - closed below
    # no preheated kernels (seven notebooks' worth on a shared machine): the page is run when asked for
    proc = subprocess.Popen([str(launcher), "notebooks/", "--no-browser", f"--port={port}", "--Voila.ip=127.0.0.1",
                             "--VoilaConfiguration.preheat_kernel=False"], cwd=ROOT, env=env, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.time() + 120
        while True:
            assert proc.poll() is None, (tmp_path / "voila.log").read_text(errors="replace")
            try:
                urllib.request.urlopen(url + "/voila/tree", timeout=5)  # noqa: S310 - localhost
                break
            except urllib.error.HTTPError:
                break                                   # it answers (the page below says how)
            except OSError:
                assert time.time() < deadline, "voila did not start within 120 s"
                time.sleep(0.5)
        status, html = _get(url + "/voila/render/00_start.ipynb", within_s=180)
        logged = (tmp_path / "voila.log").read_text(errors="replace")
        assert status == 200, logged[-3000:]
        assert TEMPLATE_MARKER in html, "the start page is not rendered with gpucost's template"
        # the server's rules (gpucost/ui/server.py) are on: the page's kernel is not shut down by a request
        # that makes up tornado's double-submit token but lacks the page's own token
        config = json.loads(re.search(r'<script id="jupyter-config-data" type="application/json">(.*?)</script>',
                                      html, re.S).group(1))
        forged = {"_xsrf": "chosen-by-the-client"}
        assert _post(f"{url}/voila/api/shutdown/{config['kernelId']}", forged, "_xsrf=chosen-by-the-client") == 403
    finally:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)
        log.close()
    # nothing left in the checkout that git would show, nothing added to the test environment
    assert _git_status() == before
    assert {p: sorted(os.listdir(p)) for p in parent} == parent
