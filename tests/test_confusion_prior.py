"""training.data.confusion_prior: P(written | intended) slots for pretraining's spelling-like corruptions."""

from __future__ import annotations

import numpy as np

from corrector.evidence.candidates import CandidateTable
from training.data.confusion_prior import PRIOR, apportion, build, prior_weights


def table() -> CandidateTable:
    """Written 汽: meant 气 (3 real errors, same sound) or 七 (sound only); written 起: meant 气 (1 real error)."""
    return CandidateTable(["汽", "起"], np.array([0, 2, 3]), ["气", "七", "气"], pinyin=np.array([1.0, 1.0, 0.0]),
                          shape=np.array([0.0, 0.0, 0.0]), count=np.array([3, 0, 1]))


def test_weights_are_real_counts_plus_a_shared_similarity_prior_keyed_by_the_intended_character():
    w = prior_weights(table())
    assert w["气"] == {"汽": 3 + PRIOR, "起": 1.0}  # 汽 has all of 气's similarity (起 neither sounds nor looks like it)
    assert w["七"] == {"汽": PRIOR}


def test_apportion_is_proportional_and_deterministic():
    assert apportion({"a": 3.0, "b": 1.0}, 8) == ["a"] * 6 + ["b"] * 2
    assert apportion({"a": 1.0, "b": 1.0, "c": 1.0}, 4) == ["a", "a", "b", "c"]  # the remainder: ties by key
    assert apportion({"a": 100.0, "b": 0.001}, 4) == ["a"] * 4  # too light for a slot
    assert apportion({}, 4) == []


def test_build_rows_by_vocab_id():
    vocab = ["[PAD]", "气", "汽", "起", "七", "x"]
    arr = build(table(), vocab, slots=9)
    assert arr.shape == (6, 9) and arr.dtype == np.int32
    row = arr[1].tolist()  # 气: 汽 weighs 6, 起 1 -> 9 * 6/7 = 7.7 and 1.3 slots
    assert row.count(2) == 8 and row.count(3) == 1
    assert arr[4].tolist() == [2] * 9  # 七: only ever 汽
    assert (arr[[0, 2, 3, 5]] == -1).all()  # nothing was meant as these
