"""The files the validation corpus already reads, for a research helper's list of documents to avoid — and a
check that a helper's rows do not repeat them.

Usage (repo root):
  PYTHONPATH=. .venv/bin/python tools/used_documents.py > used.tsv        # source_id <TAB> file, one line per file
  PYTHONPATH=. .venv/bin/python tools/used_documents.py --check rows.csv  # rows whose file the corpus reads

A file is a GitHub repository and path at any commit (``owner/repo:path``, URL-decoded), else the URL without its
anchor: a document of many files (a repository's notebooks, an engine's example scripts) is listed file by file, and
another commit of a file the corpus reads is the same file. The sixth blind round (docs/corpus/round_2026-12-07_log.md)
was given one URL per document, and 71 of the 122 rows it found repeated rows the corpus had.
"""

from __future__ import annotations

import re
import sys
from urllib.parse import unquote

import pandas as pd

from gpucost.catalog import Catalog

_GITHUB_FILE = re.compile(r"https://github\.com/([^/]+/[^/]+)/(?:blob|tree|raw)/[^/]+/(.+)")


def file_key(url: str) -> str:
    """``owner/repo:path`` of a GitHub file URL (any commit), else the URL without its anchor, lower-cased."""
    u = re.sub(r"#.*", "", unquote(str(url).strip()))
    m = _GITHUB_FILE.match(u)
    return f"{m.group(1).lower()}:{m.group(2)}" if m else u.lower().rstrip("/")


def used_files(bench: pd.DataFrame) -> dict[str, set[str]]:
    """{file: the source_ids of the corpus rows that read it}; a row's ``source`` may name several URLs."""
    out: dict[str, set[str]] = {}
    for sid, src in zip(bench["source_id"], bench["source"], strict=True):
        for part in re.split(r"[\s;]+", str(src)):
            if part.startswith("http"):
                out.setdefault(file_key(part), set()).add(str(sid))
    return out


def main(argv: list[str]) -> int:
    used = used_files(Catalog().table("benchmarks"))
    if argv[:1] == ["--check"] and len(argv) == 2:
        rows = pd.read_csv(argv[1], dtype=str, keep_default_na=False)
        hits = 0
        for rid, src in zip(rows["id"], rows["source"], strict=True):
            docs = used.get(file_key(str(src).split(" ")[0]))
            if docs:
                hits += 1
                print(f"{rid}\t{', '.join(sorted(docs))}")
        print(f"{hits} of {len(rows)} rows read a file the corpus already reads", file=sys.stderr)
        return 1 if hits else 0
    if argv:
        print("\n".join(__doc__.strip().splitlines()[3:6]), file=sys.stderr)
        return 2
    for f, docs in sorted(used.items()):
        print(f"{', '.join(sorted(docs))}\t{f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
