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
