"""The Binder files follow repo2docker's rules (checked statically: no Docker engine here)."""

from __future__ import annotations

import json
import os
import re

from .conftest import ROOT


def test_runtime_is_python_311_or_newer():
    m = re.fullmatch(r"python-(\d+)\.(\d+)\s*", (ROOT / "binder" / "runtime.txt").read_text())
    assert m and (int(m.group(1)), int(m.group(2))) >= (3, 11)


def test_requirements_install_the_pinned_runtime_and_the_package_itself():
    lines = [ln.strip() for ln in (ROOT / "binder" / "requirements.txt").read_text().splitlines()
             if ln.strip() and not ln.startswith("#")]
    assert "-r ../requirements.txt" in lines  # nested -r is relative to this file
    assert "." in lines  # the package itself, from the repo root where repo2docker runs pip
    pinned = [ln for ln in (ROOT / "requirements.txt").read_text().splitlines()
              if ln.strip() and not ln.startswith("#")]
    assert all("==" in ln for ln in pinned), "runtime pins must be exact"
    for pkg in ("jupyterlab", "ipywidgets", "voila", "pandas", "plotly", "anywidget", "nvidia-ml-py",
                "papermill"):
        assert any(ln.lower().startswith(pkg + "==") for ln in pinned), pkg
    assert not any(ln.lower().startswith("pynvml") for ln in pinned), "pynvml is deprecated: nvidia-ml-py"


def test_post_build_is_executable_and_voila_config_is_public_safe():
    post = ROOT / "binder" / "postBuild"
    assert os.access(post, os.X_OK)
    cfg = json.loads((ROOT / "voila.json").read_text())
    vc = cfg["VoilaConfiguration"]
    assert vc["show_tracebacks"] is False
    assert vc["preheat_kernel"] is True
    assert any("csv" in pat for pat in vc["file_denylist"])
    # issue 19: the kernel of a tab that closed without saying so is freed within about a minute (checked
    # every 20 s); a kernel whose tab is still connected is never culled, however long its visitor reads
    mkm = cfg["MappingKernelManager"]
    assert mkm["cull_idle_timeout"] + mkm["cull_interval"] <= 90 and mkm["cull_connected"] is False


def test_readme_badges_open_voila_and_lab():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "urlpath=voila%2Frender%2Fnotebooks%2F00_start.ipynb" in readme
    assert "urlpath=lab" in readme
