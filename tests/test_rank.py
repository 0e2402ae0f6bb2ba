"""The ranker on hand-built rows with known answers: scores, the softmax per site, the choice of each round."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from corrector.features import COL, FEATURES, Rows
from corrector.rank import (
    HEURISTIC,
    RankerWeights,
    Scorer,
    best_candidates,
    choice_probs,
    pick_round,
    site_starts,
)


def rows_of(site: list[int], values: list[dict[str, float]]) -> Rows:
    """Rows with the named feature values (0 elsewhere); vid = row index."""
    X = np.zeros((len(site), len(FEATURES)), dtype=np.float32)
    for r, v in enumerate(values):
        for name, x in v.items():
            X[r, COL[name]] = x
    return Rows(np.array(site, dtype=np.int64), np.arange(len(site), dtype=np.int64), X)


# ---- Scorer ---------------------------------------------------------------------------------------


def test_linear_score_by_hand():
    s = Scorer({"keep": 2.0, "gen_lp": 1.0, "lm_gain": 0.5})
    rows = rows_of([0, 0], [{"keep": 1, "gen_lp": -1.5, "rtd": 9.0}, {"gen_lp": -0.25, "lm_gain": 3.0}])
    assert s.score(rows.X) == pytest.approx([2.0 - 1.5, -0.25 + 1.5])  # rtd has no weight


def test_hidden_layer_score_by_hand():
    s = Scorer({"keep": 1.0}, hidden={"keep": [1.0, 0.0], "gen_lp": [0.5, -1.0]}, bias=[0.1, -0.2], out=[2.0, -1.0])
    x = [{"keep": 1, "gen_lp": -2.0}, {"gen_lp": 0.4}]
    want = [1.0 * v.get("keep", 0) + 2.0 * math.tanh(v.get("keep", 0) + 0.5 * v["gen_lp"] + 0.1)
            - math.tanh(-v["gen_lp"] - 0.2) for v in x]
    assert s.score(rows_of([0, 0], x).X) == pytest.approx(want)


def test_scorer_dict_round_trip_and_plain_map():
    s = Scorer({"keep": 1.0}, hidden={"rtd": [1.0, 2.0]}, bias=[0.0, 1.0], out=[0.5, 0.5])
    assert Scorer.from_dict(json.loads(json.dumps(s.to_dict()))) == s
    assert Scorer({"keep": 1.0}).to_dict() == {"linear": {"keep": 1.0}}  # no hidden layer, no hidden keys
    assert Scorer.from_dict({"keep": 1, "gen_lp": 2}) == Scorer({"keep": 1.0, "gen_lp": 2.0})


@pytest.mark.parametrize("d, words", [
    ({"linear": {"keep": 1, "bogus": 2}}, ["unknown features", "bogus"]),
    ({"linear": {}, "hidden": {"nope": [1.0]}, "bias": [0], "out": [1]}, ["unknown features", "nope"]),
    ({"linear": {}, "hidden": {"keep": [1.0, 2.0]}, "bias": [0], "out": [1]}, ["hidden"]),
    ({"linear": {}, "hidden": {"keep": [1.0]}, "bias": [0, 0], "out": [1]}, ["hidden"]),
])
def test_scorer_rejects_bad_weights(d, words):
    with pytest.raises(ValueError) as info:
        Scorer.from_dict(d)
    assert all(w in str(info.value) for w in words)


# ---- RankerWeights ----------------------------------------------------------------------------------


def test_ranker_weights_round_trip():
    w = RankerWeights(Scorer({"keep": 1.5}, {"lm_gain": [0.5]}, [0.1], [2.0]), Scorer({"keep": 2.0, "rtd": -1.0}),
                      {"gen_lp": 1.0, "pinyin": 3.0}, threshold=0.6, threshold_no_lm=0.7, meta={"fitted": True})
    d = json.loads(json.dumps(w.to_dict()))
    assert d["features"] == list(FEATURES)
    assert RankerWeights.from_dict(d) == w
    assert RankerWeights.from_dict(HEURISTIC.to_dict()) == HEURISTIC
    assert w.pick(True) is w.scorer and w.pick(False) is w.scorer_no_lm


def test_ranker_weights_defaults():
    """A ranker.json without a no-LM scorer or threshold uses the with-LM ones for both."""
    w = RankerWeights.from_dict({"with_lm": {"keep": 1.0}, "shortlist": {}, "threshold": 0.3})
    assert w.scorer_no_lm == w.scorer == Scorer({"keep": 1.0})
    assert (w.threshold, w.threshold_no_lm) == (0.3, 0.3)


def test_ranker_weights_reject_unknown_names():
    with pytest.raises(ValueError, match="shortlist.*rtd"):  # the shortlist only sees the cheap features
        RankerWeights.from_dict({"with_lm": {"keep": 1.0}, "shortlist": {"rtd": 1.0}})
    with pytest.raises(ValueError, match="bogus"):
        RankerWeights.from_dict({"with_lm": {"keep": 1.0}, "no_lm": {"bogus": 1.0}, "shortlist": {}})


# ---- choice probabilities --------------------------------------------------------------------------


def test_choice_probs_are_a_softmax_per_site():
    s = Scorer({"keep": 1.0, "gen_lp": 1.0})
    rows = rows_of([0, 0, 0, 1, 1, 2], [{"keep": 1, "gen_lp": -1.0}, {"gen_lp": -0.5}, {"gen_lp": -3.0},
                                        {"keep": 1, "gen_lp": -2.0}, {"gen_lp": 1.0}, {"keep": 1}])
    p = choice_probs(rows, s, 3)
    for lo, scores in ((0, [0.0, -0.5, -3.0]), (3, [-1.0, 1.0]), (5, [1.0])):
        z = sum(math.exp(x) for x in scores)
        assert p[lo: lo + len(scores)] == pytest.approx([math.exp(x) / z for x in scores])
    assert np.add.reduceat(p, site_starts(rows, 3)) == pytest.approx([1.0, 1.0, 1.0])
    assert list(site_starts(rows, 3)) == [0, 3, 5]


def test_choice_probs_survive_large_scores():
    rows = rows_of([0, 0], [{"keep": 1}, {"gen_lp": 1.0}])
    p = choice_probs(rows, Scorer({"keep": 1000.0, "gen_lp": 1001.0}), 1)
    assert p == pytest.approx([1 / (1 + math.e), math.e / (1 + math.e)])
    assert len(choice_probs(rows_of([], []), HEURISTIC.scorer, 0)) == 0


# ---- deciding ------------------------------------------------------------------------------------


def test_best_candidates_ignore_keep_rows_and_closed_sites():
    rows = rows_of([0, 0, 0, 1, 1, 1, 2, 3, 3], [{"keep": 1}, {}, {}, {"keep": 1}, {}, {}, {"keep": 1}, {"keep": 1}, {}])
    p = np.array([0.9, 0.04, 0.06, 0.2, 0.5, 0.3, 1.0, 0.1, 0.9])
    row, prob = best_candidates(rows, p, 4, np.array([True, True, True, False]))
    assert list(row) == [2, 4, -1, -1]  # site 0: its keep row is the most probable, yet row 2 is the best
    assert list(prob) == [0.06, 0.5, 0.0, 0.0]  # site 2 has no candidate; site 3 is closed


def test_pick_round_threshold_and_order():
    chunk, char = np.array([0, 0, 1]), np.array([0, 5, 0])
    row, p = np.array([10, 11, 12]), np.array([0.6, 0.9, 0.5])
    assert pick_round(chunk, char, row, p, 0.55, spacing=1) == [1, 0]  # most probable first, 0.5 is not above
    assert pick_round(chunk, char, row, p, 0.6, spacing=1) == [1]  # above, not equal
    assert pick_round(chunk, char, np.array([10, -1, 12]), p, 0.0, spacing=1) == [0, 2]  # no candidate: skipped


def test_pick_round_spacing():
    """Two sites closer than ``spacing`` in one chunk: only the more probable one this round; in different
    chunks, or far enough apart, both."""
    chunk, char = np.array([0, 0, 1, 0]), np.array([3, 5, 4, 8])
    row, p = np.arange(4), np.array([0.8, 0.9, 0.7, 0.6])
    assert pick_round(chunk, char, row, p, 0.5, spacing=3) == [1, 2, 3]  # 3 is 3 from 5: far enough
    assert pick_round(chunk, char, row, p, 0.5, spacing=4) == [1, 2]  # now 8 is too close to 5
    assert pick_round(chunk, char, row, p, 0.5, spacing=1) == [1, 0, 2, 3]


# ---- calibration -----------------------------------------------------------------------------------


KNOTS = ((0.0, 0.2, 0.6, 0.9), (0.0, 0.1, 0.5, 0.7))


def test_calibration_by_hand_and_its_inverse():
    s = Scorer({"keep": 1.0}, calibration=KNOTS)
    assert s.calibrate(0.4) == pytest.approx(0.3)  # half way from (0.2, 0.1) to (0.6, 0.5)
    assert s.calibrate(0.95) == pytest.approx(0.7)  # flat above the last knot
    assert s.uncalibrate(0.3) == pytest.approx(0.4)
    assert s.uncalibrate(0.7) == 1.0  # no confidence is above 0.7: nothing passes
    assert s.uncalibrate(0.0) == 0.0
    p = np.linspace(0.01, 0.89, 50)
    assert np.all(np.diff(s.calibrate(p)) > 0)  # monotone: the order of edits never changes
    for t in (0.0123, 0.333, 0.5555, 0.6789):  # p > uncalibrate(t) exactly where calibrate(p) > t
        q = np.linspace(0.0, 1.0, 1001)
        assert np.array_equal(q > s.uncalibrate(t), s.calibrate(q) > t + 1e-12)
    assert Scorer({"keep": 1.0}).calibrate(p) == pytest.approx(p)  # identity by default


def test_calibration_round_trip_and_rejects_a_decreasing_map():
    s = Scorer({"keep": 1.0}, calibration=KNOTS)
    assert s.to_dict()["calibration"] == {"probability": list(KNOTS[0]), "confidence": list(KNOTS[1])}
    assert Scorer.from_dict(json.loads(json.dumps(s.to_dict()))) == s
    assert "calibration" not in Scorer({"keep": 1.0}).to_dict()
    for bad in ({"probability": [0.0, 0.5], "confidence": [0.5, 0.2]}, {"probability": [0.0], "confidence": [0.0]},
                {"probability": [0.0, 0.5, 1.0], "confidence": [0.0, 0.5]}):
        with pytest.raises(ValueError, match="calibration"):
            Scorer.from_dict({"linear": {"keep": 1.0}, "calibration": bad})


def test_fit_isotonic_pools_violators_by_hand():
    from training.fitting.calibration_map import fit_isotonic

    p = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8])
    right = np.array([0, 1, 0, 0, 1, 1, 0, 1], dtype=float)
    # blocks: {0.1}: 0 | {0.2, 0.3, 0.4}: 1/3 | {0.5, 0.6, 0.7}: 2/3 | {0.8}: 1
    xs, ys = fit_isotonic(p, right)
    assert xs == pytest.approx((0.1, 0.3, 0.6, 0.8)) and ys == pytest.approx((0.0, 1 / 3, 2 / 3, 1.0), abs=1e-6)
    xs, ys = fit_isotonic(p[1:], right[1:])  # the lowest block is right a third of the time: (0, 0) in front
    assert xs == pytest.approx((0.0, 0.3, 0.6, 0.8)) and ys == pytest.approx((0.0, 1 / 3, 2 / 3, 1.0), abs=1e-6)
    assert fit_isotonic(p, np.ones(8)) == ((0.0, 0.45), (0.0, 1.0))  # one block, always right
    assert fit_isotonic(p, np.zeros(8)) == ((0.0, 1.0), (0.0, 1.0))  # a single knot: the identity


def test_fit_isotonic_pools_small_blocks_with_the_closer_neighbour():
    from training.fitting.calibration_map import fit_isotonic

    p = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8])
    right = np.array([0, 1, 0, 0, 1, 1, 0, 1], dtype=float)
    # PAV blocks of 1, 3, 3, 1 edits; min_block 2 pools {0.1} into the next, then {0.8} into the one before
    xs, ys = fit_isotonic(p, right, min_block=2)
    assert xs == pytest.approx((0.0, 0.25, 0.65)) and ys == pytest.approx((0.0, 0.25, 0.75))
    assert fit_isotonic(p, right, min_block=8) == ((0.0, 0.45), (0.0, 0.5))  # one block of all eight


def test_choose_min_block_smooths_a_flat_noisy_map():
    from training.fitting.calibration_map import choose_min_block, fit_isotonic

    rng = np.random.default_rng(1)
    p = rng.uniform(0.05, 0.95, 2000)
    right = (rng.random(len(p)) < 0.5).astype(float)  # the probabilities carry no information
    size = choose_min_block(p, right)
    assert size > 1
    xs, ys = fit_isotonic(p, right, size)
    assert max(ys[1:]) - min(ys[1:]) < 0.25  # near flat, not the staircase of single lucky edits


def test_fit_isotonic_recovers_a_known_map():
    from training.fitting.calibration_map import fit_isotonic

    rng = np.random.default_rng(0)
    p = rng.uniform(0.02, 0.98, 40000)
    true = p**2  # over-confident probabilities
    right = (rng.random(len(p)) < true).astype(float)
    s = Scorer({}, calibration=fit_isotonic(p, right))
    grid = np.linspace(0.1, 0.9, 9)
    assert s.calibrate(grid) == pytest.approx(grid**2, abs=0.05)


def test_fit_blend_recovers_how_much_a_scorer_overweights_the_networks():
    """Sites of two rows whose gold is drawn from softmax(1.0 * gen_lp + 1.0 * pinyin); a scorer that weighs
    gen_lp twice as much as that (as one fitted on pairs the networks memorised would) gets a networks factor
    near 0.5 and a factor near 1 for the rest, and ``blended`` applies them to its named weights."""
    from corrector.rank import Scorer
    from training.fitting.conditional_logit import blended, fit_blend
    from training.fitting.table import Table

    rng = np.random.default_rng(0)
    n = 20_000
    X = np.zeros((2 * n, len(FEATURES)))
    X[:, COL["gen_lp"]] = rng.normal(size=2 * n)
    X[:, COL["pinyin"]] = rng.normal(size=2 * n)
    s = (X[:, COL["gen_lp"]] + X[:, COL["pinyin"]]).reshape(n, 2)
    p_first = 1 / (1 + np.exp(s[:, 1] - s[:, 0]))
    gold = np.where(rng.random(n) < p_first, 0, 1)
    label = np.zeros(2 * n, dtype=bool)
    label[2 * np.arange(n) + gold] = True
    table = Table(X, np.repeat(np.arange(n), 2), label, np.ones(n, bool), np.ones(n, bool))
    scorer = Scorer({"gen_lp": 2.0, "pinyin": 1.0, "gen_lp*pinyin": 0.0})
    factors = fit_blend(table, scorer)
    assert factors["networks"] == pytest.approx(0.5, abs=0.05) and factors["rest"] == pytest.approx(1.0, abs=0.07)
    assert blended(scorer, {"networks": 0.5, "rest": 2.0}).linear == {"gen_lp": 1.0, "pinyin": 2.0, "gen_lp*pinyin": 0.0}
    # three blocks: a product goes to the first block that names one of its features
    three = fit_blend(table, Scorer({"gen_lp": 2.0, "pinyin": 1.0, "lm_gain*rtd": 0.0}), ("networks", "lm"))
    assert three["networks"] == pytest.approx(0.5, abs=0.05) and three["rest"] == pytest.approx(1.0, abs=0.07)
    assert blended(Scorer({"lm_gain": 1.0, "lm_gain*rtd": 1.0}), {"networks": 0.5, "lm": 3.0, "rest": 1.0}).linear \
        == {"lm_gain": 3.0, "lm_gain*rtd": 0.5}
