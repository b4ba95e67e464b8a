"""The layer rule: calculation modules never import ipywidgets, plotly, argparse or pynvml; only
gpucost/probe.py imports pynvml; notebooks stay thin and are committed without outputs; ruff is clean."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import NOTEBOOKS, ROOT

PKG = ROOT / "gpucost"
FRONT_ENDS = {"cli.py", "__main__.py", "probe.py"}  # and the ui/ and commands/ packages
FORBIDDEN = {"ipywidgets", "plotly", "argparse", "pynvml", "IPython", "gpucost.ui", "gpucost.cli",
             "gpucost.commands", "gpucost.probe"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _calc_modules() -> list[Path]:
    """Every module of the package but the front ends: top-level and in the engine subpackages."""
    return sorted(p for p in PKG.rglob("*.py")
                  if p.parent.name not in {"ui", "commands", "jupyter"} and "ui" not in p.relative_to(PKG).parts
                  and not (p.parent == PKG and p.name in FRONT_ENDS))


@pytest.mark.parametrize("path", _calc_modules(), ids=lambda p: str(p.relative_to(PKG)))
def test_calculation_module_imports_no_ui_plotting_argparse_or_nvml(path):
    bad = {m for m in _imports(path) if any(m == f or m.startswith(f + ".") for f in FORBIDDEN)}
    assert not bad, f"{path.name} imports {sorted(bad)}"


def test_only_probe_imports_pynvml():
    users = sorted(str(p.relative_to(ROOT)) for p in PKG.rglob("*.py")
                   if any(m == "pynvml" or m.startswith("pynvml.") for m in _imports(p)))
    assert set(users) <= {"gpucost/probe.py"}, users


def test_import_linter_contract_holds(tmp_path):
    """The same rule, transitively (import-linter), over every calculation module that exists."""
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip("import-linter is not installed")
    sources = "\n    ".join(".".join(("gpucost", *p.relative_to(PKG).with_suffix("").parts))
                             for p in _calc_modules() if p.stem != "__init__")
    def exists(mod: str) -> bool:  # import-linter rejects internal modules that do not exist (yet)
        rel = Path(*mod.split(".")[1:])
        return not mod.startswith("gpucost.") or (PKG / rel).is_dir() or (PKG / f"{rel}.py").is_file()

    forbidden = "\n    ".join(sorted(m for m in FORBIDDEN - {"IPython"} if exists(m)))
    cfg = tmp_path / "importlinter.ini"
    cfg.write_text(f"""[importlinter]
root_package = gpucost
include_external_packages = True

[importlinter:contract:pure]
name = Calculation modules stay pure (no UI, plotting, argparse or NVML)
type = forbidden
source_modules =
    {sources}
forbidden_modules =
    {forbidden}
allow_indirect_imports = False
""")
    proc = subprocess.run([exe, "--config", str(cfg), "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff_is_clean():
    exe = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if exe is None:
        pytest.skip("ruff is not installed")
    proc = subprocess.run([exe, "check", "gpucost", "tests", "benchmarks", "tools"], cwd=ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_finds_no_type_errors(tmp_path):
    """The calculation layer type-checks (pyproject's [tool.mypy]; widget pages are excluded there)."""
    exe = shutil.which("mypy", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip("mypy is not installed")
    proc = subprocess.run([exe, "gpucost", "--cache-dir", str(tmp_path / "cache")], cwd=ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr


@pytest.mark.parametrize("path", sorted(PKG.rglob("*.py")), ids=lambda p: str(p.relative_to(PKG)))
def test_modules_stay_readable(path):
    """No module grows past 900 lines: a bigger one holds more than one concept."""
    assert len(path.read_text(encoding="utf-8").splitlines()) <= 900


def test_no_function_is_a_maze():
    """No function or method above cyclomatic complexity 30 (radon's rank F starts at 41; issue 13 set 30):
    one that grows past it answers more than one question."""
    from radon.complexity import cc_visit

    worst = []
    for path in sorted(PKG.rglob("*.py")):
        for block in cc_visit(path.read_text(encoding="utf-8")):
            for b in [block, *getattr(block, "methods", [])]:
                if b.complexity > 30:
                    worst.append(f"{path.relative_to(PKG)}:{b.lineno} {b.name} {b.complexity}")
    assert not worst, worst


@pytest.mark.parametrize("nb", sorted(NOTEBOOKS.glob("*.ipynb")), ids=lambda p: p.name)
def test_notebooks_are_thin_and_without_outputs(nb):
    cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
    code = [c for c in cells if c["cell_type"] == "code"]
    assert all(not c.get("outputs") for c in code), "committed with outputs"
    assert any("parameters" in c.get("metadata", {}).get("tags", []) for c in code)
    assert len(code) <= 6
    body = "".join("".join(c["source"]) for c in code)
    assert "def " not in body and "class " not in body, "logic belongs in gpucost/, not in the notebook"


def test_every_subpackage_is_installed():
    """pyproject lists packages explicitly: a new subpackage missing there is absent from a pip install."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "gpucost").rglob("__init__.py")}
    assert found - listed == set()
