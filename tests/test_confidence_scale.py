"""One threshold scale with and without the LM, on the shipped bundle. Before: with the LM no edit could score above
0.8396 (an isotonic map's flat top), so --threshold 0.85 or 0.9 changed nothing, and the two decoding modes' numbers
meant different things. Both maps are now calibrated on the same held-out edits (benchmarks/confidence_scale.py
measures what a threshold keeps in either mode: at 0.9, edits right 92% / 93% of the time on SIGHAN-15)."""

from __future__ import annotations

import numpy as np
import pytest

from corrector import Corrector


@pytest.fixture(scope="module")
def shipped() -> Corrector:
    return Corrector.load(threads=2)


@pytest.mark.parametrize("use_lm", [True, False])
def test_both_maps_run_from_zero_to_one_strictly_increasing(shipped, use_lm):
    probs, confidences = shipped.ranker.pick(use_lm).calibration
    assert np.all(np.diff(probs) > 0) and np.all(np.diff(confidences) > 0)  # no flat top, no ties it adds
    assert confidences[0] < 0.01 and confidences[-1] > 0.99
    assert 0 < shipped.threshold(shipped.config.with_overrides(use_lm=use_lm)) < confidences[-1]


@pytest.mark.parametrize("use_lm", [True, False])
def test_a_threshold_of_0_9_makes_edits_in_either_mode_and_only_at_or_above_it(shipped, use_lm):
    text = "他以经知道自己错了，我门一起去吃饭吧。"
    edits = shipped.correct(text, threshold=0.9, use_lm=use_lm).edits
    assert edits and all(e.confidence >= 0.9 for e in edits)
    lower = shipped.correct(text, threshold=0.3, use_lm=use_lm).edits
    assert {e.position for e in edits} <= {e.position for e in lower}  # a higher threshold keeps a subset
