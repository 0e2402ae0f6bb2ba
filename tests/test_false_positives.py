"""benchmarks/false_positives.py: a data folder without the edited corpus files gives an "n/a" row, not a crash."""

from __future__ import annotations

import gzip
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]


def test_rows_of_the_false_positive_table(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import false_positives as fp

    with gzip.open(tmp_path / "essays.txt.gz", "wt", encoding="utf-8") as f:
        f.write("这是一个没有被编辑过的句子。\n" * 400)
    assert fp.corpus_sentences(tmp_path, 100) == []  # none of the edited files
    assert fp.row("held-out corpus", []) == "| held-out corpus | 0 | n/a | |"
    edit = SimpleNamespace(source="的", target="地")
    results = [SimpleNamespace(edits=[edit]), SimpleNamespace(edits=[]), SimpleNamespace(edits=[]),
               SimpleNamespace(edits=[])]
    assert fp.row("dev", results) == "| dev | 4 | 25.0% | 的→地 (1) |"
