"""The Voila template ships inside the package, so an editable install (``pip install -e .``, which
installs no ``share/jupyter`` files) serves the same app as a wheel: ./dev serve puts the package's
Jupyter data directory on JUPYTER_PATH."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

from gpucost.ui import JUPYTER_DATA, TEMPLATE_DIR

from .conftest import ROOT


def test_voila_finds_the_template_and_plotly_in_the_package_alone():
    from voila.paths import collect_static_paths, collect_template_paths

    paths = collect_template_paths(["voila", "nbconvert"], "gpucost", prune=True, root_dirs=[str(JUPYTER_DATA)])
    assert str(TEMPLATE_DIR) in paths
    conf = json.loads((TEMPLATE_DIR / "conf.json").read_text("utf-8"))
    assert conf["base_template"] == "lab"
    static = collect_static_paths(["voila", "nbconvert"], "gpucost", root_dirs=[str(JUPYTER_DATA)])
    js = TEMPLATE_DIR / "static" / "plotly-basic.min.js"
    assert str(js.parent) in static
    # plotly.js basic 4.1.1, unchanged (gpucost/ui/static/README.md)
    assert hashlib.sha256(js.read_bytes()).hexdigest() == \
        "99784e3abfb07b142a15e521a439e6d9addceadb3f79553fd24c72774f0649ba"


def test_the_launcher_puts_the_package_template_on_jupyter_path():
    script = (ROOT / "dev").read_text("utf-8")
    assert "u.JUPYTER_DATA" in script and "export JUPYTER_PATH" in script
    # what the launcher computes is the package's directory, whatever the install
    out = subprocess.run([sys.executable, "-c",
                          "import gpucost.ui as u; print(u.JUPYTER_DATA)"], capture_output=True, text=True,
                         cwd=ROOT, check=True).stdout.strip()
    assert out.endswith(os.path.join("gpucost", "ui", "jupyter"))


def test_voila_json_names_the_module_that_puts_the_template_and_kernel_on_jupyter_path(tmp_path):
    """What a plain `voila notebooks/` reads from the repository root (voila.json) imports
    gpucost.ui.voila_app: Voilà's default template search then finds gpucost's template and the gpucost
    kernel, once, ahead of the user's JUPYTER_PATH; outside Voilà's own server (a Jupyter server running
    Voilà as an extension, such as Binder's JupyterLab) the kernel shutdown rules are left alone. Run in a
    child process: the import changes its environment."""
    cfg = json.loads((ROOT / "voila.json").read_text("utf-8"))
    assert cfg["VoilaConfiguration"]["kernel_spec_manager_class"] == "gpucost.ui.voila_app.KernelSpecManager"
    code = ("import json, os\n"
            "from traitlets.config import Config\n"
            "from voila.configuration import VoilaConfiguration\n"
            "c = VoilaConfiguration(config=Config(json.load(open('voila.json'))))\n"
            "from voila.paths import collect_template_paths\n"
            "from jupyter_client.kernelspec import KernelSpecManager\n"
            "from voila.shutdown_kernel_handler import VoilaShutdownKernelHandler as H\n"
            "import gpucost.ui.voila_app as v\n"
            "v.register()\n"
            "print(json.dumps({'manager': c.kernel_spec_manager_class.__module__,\n"
            "                  'path': os.environ['JUPYTER_PATH'].split(os.pathsep),\n"
            "                  'templates': collect_template_paths(['voila', 'nbconvert'], 'gpucost', prune=True),\n"
            "                  'kernel': KernelSpecManager().find_kernel_specs().get('gpucost'),\n"
            "                  'rules': getattr(H, '_gpucost_guarded', False)}))\n")
    env = {**os.environ, "JUPYTER_PATH": str(tmp_path)}
    out = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                                    env=env, check=True).stdout)
    assert out["manager"] == "gpucost.ui.voila_app"
    assert out["path"] == [str(JUPYTER_DATA), str(tmp_path)]        # first, once, the user's kept
    assert str(TEMPLATE_DIR) in out["templates"]
    assert out["kernel"] == str(JUPYTER_DATA / "kernels" / "gpucost")
    assert out["rules"] is False
