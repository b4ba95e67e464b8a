"""Write the thin page notebooks from their specs in tools/pages/*.py.

Each spec module defines NAME (the notebook file), TITLE (markdown), PARAMS (the papermill
`parameters` cell: annotated, with a help comment each) and BUILD (import, build, display).
A `page.record()` cell is added last: it displays the page's numbers for tests to read back.
Usage (repo root): python tools/make_notebook.py [NAME ...]. Notebooks are committed without outputs.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_notebook

ROOT = Path(__file__).resolve().parents[1]
SPECS = ROOT / "tools" / "pages"


def load_specs() -> dict[str, object]:
    specs = {}
    for f in sorted(SPECS.glob("*.py")):
        spec = importlib.util.spec_from_file_location(f.stem, f)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        specs[mod.NAME] = mod
    return specs


def write(spec) -> Path:
    nb = new_notebook()
    # the gpucost kernel (gpucost/ui/jupyter/kernels/gpucost): Python 3 without an input history on disk
    nb.metadata["kernelspec"] = {"name": "gpucost", "display_name": "Python 3 (gpucost)", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    params = new_code_cell(spec.PARAMS.strip())
    params.metadata["tags"] = ["parameters"]
    # no markdown title: the page shows its own heading in the visitor's language (shell.Page)
    cells = [params, new_code_cell(spec.BUILD.strip())]
    if getattr(spec, "RECORD", True):
        record = new_code_cell("page.record()  # the page's numbers, machine-readable (read back by tests)")
        record.metadata["tags"] = ["record"]
        record.metadata["jupyter"] = {"source_hidden": True}
        cells.append(record)
    for i, c in enumerate(cells, start=1):
        c["id"] = f"cell-{i}"
    nb.cells = cells
    out = ROOT / "notebooks" / spec.NAME
    nbformat.write(nb, out)
    return out


if __name__ == "__main__":
    specs = load_specs()
    for name in sys.argv[1:] or list(specs):
        print("wrote", write(specs[name]).relative_to(ROOT))
