"""tools/used_documents.py: the list of files a research helper is told to avoid, and the check of its rows."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pandas as pd

from .conftest import ROOT

_spec = importlib.util.spec_from_file_location("used_documents", ROOT / "tools" / "used_documents.py")
used_documents = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(used_documents)


def test_another_commit_of_a_notebook_url_encoded_is_the_same_file():
    a = "https://github.com/unslothai/notebooks/blob/bdda2efc/nb/Llama3.1_(8B)-Alpaca.ipynb"
    b = "https://github.com/unslothai/notebooks/blob/0123abcd/nb/Llama3.1_%288B%29-Alpaca.ipynb#cell-3"
    assert used_documents.file_key(a) == used_documents.file_key(b) == "unslothai/notebooks:nb/Llama3.1_(8B)-Alpaca.ipynb"
    other = "https://github.com/unslothai/notebooks/blob/bdda2efc/nb/Qwen2.5_(7B)-Alpaca.ipynb"
    assert used_documents.file_key(other) != used_documents.file_key(a)


def test_every_file_of_a_many_file_document_is_listed():
    bench = pd.DataFrame({"source_id": ["nb", "nb", "doc"], "source": [
        "https://github.com/o/r/blob/c1/nb/A.ipynb", "https://github.com/o/r/blob/c2/nb/B.ipynb",
        "https://example.org/post#table-2 ; https://github.com/o/r/blob/c3/docs/x.md"]})
    assert used_documents.used_files(bench) == {"o/r:nb/A.ipynb": {"nb"}, "o/r:nb/B.ipynb": {"nb"},
                                                "https://example.org/post": {"doc"}, "o/r:docs/x.md": {"doc"}}


def test_the_check_names_a_row_that_repeats_a_corpus_file(tmp_path):
    # tmy029 reads ljm565/universal-llm-trainer's docs/gpu_test.md, which no other document of the corpus reads
    again = "https://github.com/ljm565/universal-llm-trainer/blob/80a217ec/docs/gpu_test.md"
    rows = pd.DataFrame({"id": ["new001", "new002"],
                         "source": [again, "https://github.com/nobody/nothing/blob/abc/README.md"]})
    path = tmp_path / "rows.csv"
    rows.to_csv(path, index=False)
    proc = subprocess.run([sys.executable, "tools/used_documents.py", "--check", str(path)], cwd=ROOT,
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == ["new001\tuniversal-llm-trainer-gpu-test"]
    assert "1 of 2 rows" in proc.stderr
