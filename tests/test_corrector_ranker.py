"""The Corrector under a hand-made ranker over hand-set networks (tests/fake_networks.py): probabilities known in
closed form, calibration, the threshold on them. No torch, no ONNX.
"""

from __future__ import annotations

import math

import pytest
from conftest import SAMPLE
from fake_networks import fake_corrector

from corrector import Corrector, Edit


def custom_ranker_corrector(fake_tiny_bundle, weight: float = 8.0, **settings) -> Corrector:
    """Networks that prefer nothing with a ranker that only looks at the custom-pair feature: at a character
    with a custom pair that pair has P = e^w / (e^w + rows - 1); every other choice scores 0."""
    from corrector.rank import HEURISTIC, RankerWeights, Scorer

    ranker = RankerWeights(Scorer({"custom": weight}), Scorer({"custom": weight}), HEURISTIC.shortlist,
                           threshold=0.5, threshold_no_lm=0.5)
    return fake_corrector(fake_tiny_bundle, ranker=ranker, **settings)


CUSTOM_TEXTS = ["今天天汽很好", "未来，汽", "我们去公园散步吧", "", "汽" * 3]


CUSTOM_PAIRS = [("汽", "气"), ("未", "末")]


def test_hand_made_ranker_applies_the_custom_pair_with_its_probability(fake_tiny_bundle):
    fix = custom_ranker_corrector(fake_tiny_bundle, confusions=CUSTOM_PAIRS)
    for text in CUSTOM_TEXTS:
        ex = fix.explain(text, shown=100)
        want = []
        for c in ex.chars:
            if not c.editable:
                continue
            rows = 1 + len(c.candidates)
            assert rows >= 4  # the keep row, the generator's top 5 less perhaps the character itself
            if c.char in "汽未":
                p = math.exp(8.0) / (math.exp(8.0) + rows - 1)
                assert c.candidates[0].score == pytest.approx(p, abs=1e-4)
                assert c.keep_prob == pytest.approx(1 / (math.exp(8.0) + rows - 1), abs=1e-4)
                want.append(Edit(c.position, c.char, dict(CUSTOM_PAIRS)[c.char], round(p, 4),
                                 "pinyin" if c.char == "汽" else "shape"))
            else:  # every choice scores 0: 1 / rows each, below 0.5
                assert [k.score for k in c.candidates] == pytest.approx([1 / rows] * (rows - 1), abs=1e-4)
                assert "not above the threshold 0.5" in c.decision
        assert ex.correction.edits == want
        assert fix.correct(text) == ex.correction
    assert any(fix.correct(t).edits for t in CUSTOM_TEXTS)


def test_calibrated_ranker_reports_confidences_and_thresholds_on_them(fake_tiny_bundle):
    """With a calibration the edits are the same at the mapped threshold, and their confidence and the
    explanation's scores are the calibrated probabilities."""
    from dataclasses import replace

    plain = custom_ranker_corrector(fake_tiny_bundle, confusions=CUSTOM_PAIRS)
    cal = custom_ranker_corrector(fake_tiny_bundle, confusions=CUSTOM_PAIRS)
    scorer = replace(cal.ranker.scorer, calibration=((0.0, 0.5, 0.9, 1.0), (0.0, 0.2, 0.5, 1.0)))
    cal = cal.with_ranker(replace(cal.ranker, scorer=scorer, scorer_no_lm=scorer, threshold=float(scorer.calibrate(0.5)),
                                  threshold_no_lm=float(scorer.calibrate(0.5))))
    for text in CUSTOM_TEXTS:
        a, b = plain.correct(text), cal.correct(text)
        assert [(e.position, e.target) for e in a.edits] == [(e.position, e.target) for e in b.edits]
        for ea, eb in zip(a.edits, b.edits):
            assert eb.confidence == pytest.approx(float(scorer.calibrate(ea.confidence)), abs=1e-3)
            assert eb.confidence < ea.confidence  # this map lowers high probabilities
        ex = cal.explain(text, shown=100)
        for c in ex.chars:
            if c.char == "汽" and c.editable:
                assert c.candidates[0].score == pytest.approx(b.edits[0].confidence, abs=1e-3)
    # a threshold between the calibrated confidence and the raw probability: the confidence decides
    (raw,) = plain.correct("今天天汽很好").edits
    (conf,) = cal.correct("今天天汽很好").edits
    between = (raw.confidence + conf.confidence) / 2
    assert plain.correct("今天天汽很好", threshold=between).edits and not cal.correct("今天天汽很好", threshold=between).edits


def test_hand_made_ranker_threshold_above_the_probability(fake_tiny_bundle):
    fix = custom_ranker_corrector(fake_tiny_bundle, weight=2.0, top_k=5, confusions=CUSTOM_PAIRS)
    text = "今天天汽很好"
    best = fix.explain(text).chars[3].candidates[0]
    # the generator's 5: 汽 itself, then 今天气很 (vocabulary order), 气 among them: keep + 4 rows
    assert best.char == "气" and best.score == pytest.approx(math.exp(2) / (math.exp(2) + 4), abs=1e-4)
    assert [e.position for e in fix.correct(text).edits] == [3]
    assert fix.correct(text, threshold=best.score - 1e-3).edits[0].confidence == pytest.approx(best.score, abs=1e-4)
    assert fix.correct(text, threshold=best.score + 1e-3).edits == []
    assert "not above the threshold" in fix.explain(text, threshold=0.9).chars[3].decision


def test_hand_made_ranker_batch_equals_one_by_one(fake_tiny_bundle):
    fix = custom_ranker_corrector(fake_tiny_bundle, confusions=CUSTOM_PAIRS)
    texts = CUSTOM_TEXTS + [SAMPLE * 3, "，".join(CUSTOM_TEXTS * 5)]
    assert fix.correct_batch(texts) == [fix.correct(t) for t in texts]
    small = custom_ranker_corrector(fake_tiny_bundle, confusions=CUSTOM_PAIRS, batch_size=1)
    assert small.correct_batch(texts) == fix.correct_batch(texts)


def test_a_corrector_is_a_value_derived_never_assigned(fake_tiny_bundle):
    """Nothing is assigned into a Corrector: another ranker or settings make a new one (sharing the networks and
    the evidence), the old one deciding as before; the ranker's shortlist size applies as a bundle holding it would
    load it, below the load's own settings. Folds of cross-fitting derive the same way."""
    from dataclasses import replace

    from training.fitting.crossfit import Folds

    fix = custom_ranker_corrector(fake_tiny_bundle, confusions=CUSTOM_PAIRS)
    with pytest.raises(AttributeError, match="a Corrector is a value"):
        fix.ranker = fix.ranker
    before = fix.correct_batch(CUSTOM_TEXTS)
    assert any(c.edits for c in before)
    quiet = fix.with_ranker(replace(fix.ranker, threshold=1.0, threshold_no_lm=1.0))
    assert not any(c.edits for c in quiet.correct_batch(CUSTOM_TEXTS))
    assert fix.correct_batch(CUSTOM_TEXTS) == before
    assert quiet.networks is fix.networks and quiet.evidence is fix.evidence
    r16 = replace(fix.ranker, meta={"shortlist": 16})
    assert fix.config.shortlist == 8 and fix.with_ranker(r16).config.shortlist == 16
    assert fix.with_settings(shortlist=4).with_ranker(r16).config.shortlist == 4  # the load's settings win
    assert fix.with_ranker(r16).config.confusions == fix.config.confusions
    with pytest.raises(ValueError, match="shortlist"):
        fix.with_settings(shortlist=0)
    folds = Folds([fix])
    derived = folds.with_ranker(r16)
    assert folds.fixes[0] is fix and derived.fixes[0].ranker is r16 and derived.fixes[0].networks is fix.networks


def test_the_threshold_is_resolved_with_the_other_settings(fake_tiny_bundle):
    """config.in_force fills a threshold nobody set with the bundle's for the call's use_lm (the tiny bundle has no
    LM, so the no-LM one), on the confidence scale; a Corrector's own config leaves it unset so calls can pick."""
    from dataclasses import replace

    fix = custom_ranker_corrector(fake_tiny_bundle)
    fix = fix.with_ranker(replace(fix.ranker, threshold=0.6, threshold_no_lm=0.4))
    assert fix.config.threshold is None
    assert fix.prepare(["今天天汽很好"]).settings.threshold == 0.4 == fix.threshold()
    assert fix.prepare(["今天天汽很好"], threshold=0.7).settings.threshold == 0.7
