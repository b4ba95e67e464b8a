"""The estimators' error on chosen documents of the validation corpus — e.g. the documents a round added,
judged before any change was made to the estimators with them in view.

Usage (repo root): PYTHONPATH=. .venv/bin/python tools/judge_documents.py PREFIX [PREFIX ...]
Rows whose id starts with one of the prefixes are judged (speed rows with factors refitted without their
document, as everywhere); prints a Markdown table per category and engine: rows estimated / documents,
median and p90 absolute error, and the median signed error (+: the estimate is above the measurement).
Training rows that do not say which memory statistic they print are judged against the allocated peak (the
corpus's rule); as a sensitivity, not a judgement, the script also prints their error had each been what
nvidia-smi shows (the reserved peak and the CUDA context).
"""

from __future__ import annotations

import sys

import numpy as np

from gpucost.catalog import Catalog
from gpucost.errors import GpucostError
from gpucost.validation import validate
from gpucost.validation.corpus import comparison_value, row_estimate


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    r = validate()
    new = r[r["id"].astype(str).str.startswith(tuple(argv))]
    ok = new[new["role"] == "validation"]
    print(f"{len(new)} rows of {new['source_id'].nunique()} documents; {len(ok)} estimated, "
          f"from {ok['source_id'].nunique()} documents\n")
    print("| category | engine | rows / documents | median abs error | p90 | median signed |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for by in (["category"], ["category", "engine"]):
        for key, g in ok.groupby(by):
            key = key if isinstance(key, tuple) else (key,)
            e = g["error_pct"]
            print(f"| {key[0]} | {key[1] if len(key) > 1 else 'all'} | {len(g)} / {g['source_id'].nunique()} | "
                  f"{e.abs().median():.1f} % | {np.percentile(e.abs(), 90):.1f} % | {e.median():+.1f} % |")
    _unknown_statistic(ok)
    return 0


def _unknown_statistic(ok) -> None:
    """Training rows of an unstated statistic: their error against the allocated peak (as judged) and, had each
    been an nvidia-smi reading, against the reserved peak and the CUDA context."""
    unk = ok[(ok["category"] == "training_memory") & (ok["measure_kind"].isin(["", "unknown", "nan"]))]
    if unk.empty:
        return
    cat = Catalog()
    rows = cat.table("benchmarks").set_index("id", drop=False)
    alt = []
    for rid in unk["id"]:
        row = {**rows.loc[rid].to_dict(), "measure_kind": "nvidia_smi"}
        try:
            alt.append((row_estimate(row, cat) / comparison_value(row)[0] - 1) * 100)
        except GpucostError:
            continue
    if not alt:
        return
    print(f"\ntraining rows that do not say what they measured: {len(unk)} / {unk['source_id'].nunique()} documents; "
          f"median signed {unk['error_pct'].median():+.1f} % against the allocated peak (as judged), "
          f"{np.median(alt):+.1f} % had each been an nvidia-smi reading (reserved peak + CUDA context)")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
