import pytest

from training.fitting.metrics import csc_metrics


def test_perfect():
    r = csc_metrics([("我门好", "我们好", "我们好"), ("很好", "很好", "很好")])
    assert r["sentence_detection"]["f1"] == 1.0
    assert r["sentence_correction"]["f1"] == 1.0
    assert r["char_correction"]["f1"] == 1.0
    assert r["false_positive_rate"] == 0.0


def test_over_correction_is_a_detection_miss():
    # the gold error is fixed, but one more character changed: not exactly the gold positions
    r = csc_metrics([("我门好", "我们好", "我们号")])
    assert r["sentence_detection"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0}
    assert r["sentence_correction"]["f1"] == 0.0
    assert r["char_detection"]["precision"] == 0.5
    assert r["char_detection"]["recall"] == 1.0


def test_wrong_character_detects_but_does_not_correct():
    r = csc_metrics([("我门好", "我们好", "我闷好")])
    assert r["sentence_detection"]["f1"] == 1.0
    assert r["sentence_correction"]["f1"] == 0.0
    assert r["char_correction"]["recall"] == 0.0


def test_clean_sentence_changed_counts_as_false_positive():
    r = csc_metrics([("今天很好", "今天很好", "今天狠好"), ("我门好", "我们好", "我们好")])
    assert r["false_positive_rate"] == 1.0
    assert r["sentence_correction"]["precision"] == 0.5  # 1 right out of 2 changed sentences
    assert r["sentence_correction"]["recall"] == 1.0


def test_untouched_error_sentence_is_a_recall_miss():
    r = csc_metrics([("我门好", "我们好", "我门好")])
    assert r["sentence_correction"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0}
    assert r["counts"]["sentences_with_errors"] == 1


def test_length_mismatch_rejected():
    with pytest.raises(ValueError):
        csc_metrics([("ab", "ab", "abc")])
