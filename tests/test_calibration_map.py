"""The logistic confidence map: fitted on edits with known answers, strictly increasing from 0 to 1, and a
threshold no edit could reach is refused."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from fake_networks import fake_corrector

from corrector import CorrectorError
from corrector.rank import HEURISTIC
from training.fitting.calibration_map import (
    fit_calibration,
    fit_logistic,
    logistic_knots,
    logit,
    reliability_table,
)


def test_the_fit_recovers_known_parameters():
    rng = np.random.default_rng(0)
    p = rng.uniform(0.01, 0.999, 20000)
    right = rng.uniform(size=p.size) < 1 / (1 + np.exp(-(0.7 * logit(p) - 0.4)))
    a, b = fit_logistic(p, right, l2=0.0)
    assert a == pytest.approx(0.7, abs=0.05) and b == pytest.approx(-0.4, abs=0.07)


def test_the_map_keeps_the_order_all_the_way_up():
    (xs, ys), params = fit_calibration(np.array([0.1, 0.2, 0.6, 0.9, 0.95, 0.99, 0.999]), np.array([0, 0, 1, 0, 1, 1, 1]))
    assert params["form"] == "logistic" and params["a"] > 0
    assert (xs[0], ys[0], xs[-1], ys[-1]) == (0.0, 0.0, 1.0, 1.0)
    assert all(np.diff(xs) > 0) and all(np.diff(ys) > 0)
    c = np.interp([0.5, 0.9, 0.99, 0.999, 0.99999], xs, ys)
    assert all(np.diff(c) > 0) and c[-1] > 0.95  # a near-certain edit scores near 1, no two tie


def test_edits_that_do_not_order_cannot_be_fitted():
    with pytest.raises(ValueError, match="right and wrong"):
        fit_logistic(np.array([0.2, 0.9]), np.array([1, 1]))
    with pytest.raises(ValueError, match="do not order"):
        fit_logistic(np.array([0.1] * 50 + [0.9] * 50), np.array([1] * 50 + [0] * 50), l2=0.0)


def test_knots_of_the_identity_are_the_identity():
    xs, ys = logistic_knots(1.0, 0.0)
    assert np.allclose(xs, ys, atol=1e-9)


def test_reliability_bins_reach_one():
    rows, ece = reliability_table(np.array([0.05, 0.5, 0.95, 1.0]), np.array([0, 1, 1, 1]))
    assert [r["bin"] for r in rows] == ["0.0-0.1", "0.4-0.5", "0.9-1.0"]
    assert rows[2]["edits"] == 2 and ece == pytest.approx((0.05 + 0.5 + 0.05) / 4, abs=1e-4)


def test_a_threshold_above_the_highest_confidence_is_refused(fake_tiny_bundle):
    """A ranker whose map stops at 0.84 can never make an edit at threshold 0.9: the call says so."""
    scorer = replace(HEURISTIC.pick(False), calibration=((0.0, 0.5, 0.99), (0.0, 0.4, 0.84)))
    capped = replace(HEURISTIC.with_scorer(False, scorer), threshold_no_lm=0.5)
    fix = fake_corrector(fake_tiny_bundle, ranker=capped)
    assert fix.correct("今天天汽很好", threshold=0.84).source == "今天天汽很好"
    with pytest.raises(CorrectorError, match=r"threshold 0.9 is above the highest confidence .*\(0.84\)"):
        fix.correct("今天天汽很好", threshold=0.9)
    fake_corrector(fake_tiny_bundle).correct("今天天汽很好", threshold=1.0)  # a map that reaches 1: allowed
