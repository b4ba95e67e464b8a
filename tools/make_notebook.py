"""Write a thin page notebook: a title, a tagged `parameters` cell, build + display + record.

Usage (from the repo root): python tools/make_notebook.py  — rewrites every notebook listed in PAGES.
Notebooks are committed without outputs; Voila and papermill run them.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

ROOT = Path(__file__).resolve().parents[1]

PAGES = {
    "01_card_choice.ipynb": dict(
        title="# Card choice\nWhich card gives me the most for my money?",
        params='''# Parameters (papermill: papermill 01_card_choice.ipynb out.ipynb -p precision fp8)
min_vram_gib: float = 0.0  # minimum memory per card [GiB]
precision: str = "bf16"  # fp32 | fp16 | bf16 | fp8 | int8 (dense tensor throughput)
budget: float = 0.0  # max price per card in the display currency (per GPU-hour for cloud); 0 = none
price_basis: str = "new"  # new | used | cloud
sort_by: str = "tflops_per_1k"  # tflops_per_1k | gbps_per_1k | vram_per_1k | tflops_per_watt | price
vendor: str = ""  # NVIDIA | AMD | Intel | Huawei; "" = any
lang: str = "en"  # en | zh
currency: str = ""  # display currency; "" = the language's (USD for en, CNY for zh)''',
        build='''from gpucost.ui.card_choice import CardChoicePage

page = CardChoicePage(min_vram_gib=min_vram_gib, precision=precision, budget=budget or None,
                      price_basis=price_basis, sort_by=sort_by, vendor=vendor, lang=lang,
                      currency=currency or None)
page.display()''',
    ),
}


def write(name: str, spec: dict) -> None:
    nb = new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    params = new_code_cell(spec["params"])
    params.metadata["tags"] = ["parameters"]
    record = new_code_cell("page.record()  # the page's numbers, machine-readable (read back by tests)")
    record.metadata["tags"] = ["record"]
    record.metadata["jupyter"] = {"source_hidden": True}
    nb.cells = [new_markdown_cell(spec["title"]), params, new_code_cell(spec["build"]), record]
    for i, c in enumerate(nb.cells):
        c["id"] = f"cell-{i}"
    nbformat.write(nb, ROOT / "notebooks" / name)


if __name__ == "__main__":
    names = sys.argv[1:] or list(PAGES)
    for n in names:
        write(n, PAGES[n])
        print("wrote notebooks/" + n)
