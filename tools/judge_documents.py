"""The estimators' error on chosen documents of the validation corpus — e.g. the documents a round added,
judged before any change was made to the estimators with them in view.

Usage (repo root): PYTHONPATH=. .venv/bin/python tools/judge_documents.py PREFIX [PREFIX ...]
Rows whose id starts with one of the prefixes are judged (speed rows with factors refitted without their
document, as everywhere); prints a Markdown table per category and engine: rows estimated / documents,
median and p90 absolute error, and the median signed error (+: the estimate is above the measurement).
"""

from __future__ import annotations

import sys

import numpy as np

from gpucost.validation import validate


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
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
