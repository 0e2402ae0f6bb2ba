"""Confidences: each scorer's calibration fitted again on the edits it makes on dev sets of the text it is for,
keeping the edits it makes (the ``calibration`` step of ``training.fitting.fit``, which writes ranker.json;
``add_arguments`` declares its flags, ``fit`` returns the calibrations and the thresholds they move).

The ``ranker`` step calibrates on the dev split alone (learners' essays). How often an edit of a given
confidence is right differs by domain (lemon_dev, 2026-11-27: applied edits were right 82% of the time in contracts,
41% in game text, at the same mean confidence 0.79), and a confidence is what a user filters and highlights by. This
decodes every ``--calibrate-on`` set (and, with ``--calibrate-on-dev``, the dev split, each pair with the LM fold that
did not count it) at threshold 0.05 with the probabilities uncalibrated, pools their edits, and fits a logistic map
of "the edit is right" on the probability's log-odds (``calibration_map``: strictly increasing from 0 to 1, so
confidences keep the ranker's order all the way up). Both scorers (with and without the LM) are calibrated again,
and each threshold moves with its calibration (the same probability, its new confidence), so the same edits are
made: only what a confidence means changes (a scorer whose threshold's probability falls outside the new knots,
where the map is flat, keeps its calibration). The rule goes into the ranker's meta.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from corrector import Corrector
from corrector.rank import IDENTITY, RankerWeights, Scorer

from ..data.csc_data import read_pairs
from ..data.splits import dev_pairs
from .calibration_map import fit_calibration
from .crossfit import Folds
from .sweep import dev_edits


def recalibrate(scorer: Scorer, threshold: float, edits: tuple[np.ndarray, np.ndarray]) -> tuple[Scorer, float, dict]:
    """``scorer`` calibrated on ``edits`` (uncalibrated probability, right), the threshold that makes the same edits
    as ``threshold`` did, and what was done."""
    old = threshold
    p, right = edits
    if not len(p):
        return scorer, old, {"edits": 0, "share_right": 0.0, "kept": "no edits", "threshold": [old, old]}
    try:
        cal, params = fit_calibration(p, right)
    except ValueError as e:  # all right, all wrong, or ordered the wrong way round: nothing to say
        return scorer, old, {"edits": len(p), "share_right": round(float(right.mean()), 4), "kept": str(e),
                             "threshold": [old, old]}
    probability = scorer.uncalibrate(old)
    new_scorer = replace(scorer, calibration=cal)
    # the new confidence of the old threshold's probability: calibrate(p) > new exactly where p > probability
    # (both knot rows strictly increase), unless the probability lies on a flat end of the map
    done = {"edits": len(p), "share_right": round(float(right.mean()), 4), **params, "knots": len(cal[0])}
    if not cal[0][0] < probability < cal[0][-1]:  # too few edits around it to say what it means: as it was
        return scorer, old, {**done, "kept": f"the threshold's probability {probability:.4f} is outside the knots "
                                             f"({cal[0][0]:.4f} .. {cal[0][-1]:.4f})", "threshold": [old, old]}
    new = round(float(new_scorer.calibrate(probability)), 4)
    return new_scorer, new, {**done, "threshold": [old, new]}


def collect(fix: Corrector, folds: Folds, sets: dict[str, list[tuple[str, str]]], dev: list[tuple[str, str]],
            use_lm: bool) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
    """(probability, right) of every edit at threshold 0.05 (``sweep.dev_edits``) on the dev split and the sets,
    pooled; the Correctors' scorers are uncalibrated, so the probability is the ranker's own."""
    ps, rights, counts = [], [], {}
    for name, pairs in [*([("dev split", dev)] if dev else []), *sets.items()]:
        p, right = dev_edits(folds if name == "dev split" else fix, pairs, use_lm=use_lm)
        ps.append(p)
        rights.append(right)
        counts[name] = len(p)
    return np.concatenate(ps), np.concatenate(rights), counts


def add_arguments(ap: argparse.ArgumentParser) -> None:
    """The calibration step's flags (the data, --holdout and --fit-lm-folds are the command's)."""
    ap.add_argument("--calibrate-on", type=Path, nargs="+", default=[],
                    help="source<TAB>target dev pairs of the text the confidences are for (pooled)")
    ap.add_argument("--calibrate-on-dev", action="store_true", help="the dev split joins the --calibrate-on sets "
                    "(decoded with --fit-lm-folds where given)")


def fit(fix: Corrector, folds: Folds, ranker: RankerWeights, a: argparse.Namespace) -> tuple[
        dict[bool, tuple[Scorer, float]], dict]:
    """Per scorer (with the LM: True, where the bundle has one), ``ranker``'s scorer calibrated again and its
    threshold moved with it; and the rule (for the ranker's meta), which says what was done. ``fix`` decodes the
    sets, ``folds`` the dev split."""
    if not a.calibrate_on and not a.calibrate_on_dev:
        raise SystemExit("the calibration step needs --calibrate-on FILE ... or --calibrate-on-dev")
    t0 = time.time()
    sets = {path.stem: read_pairs(path) for path in a.calibrate_on}
    dev = dev_pairs(a.data, a.holdout) if a.calibrate_on_dev else []
    chosen: dict[bool, tuple[Scorer, float]] = {}
    report = {}
    for key, use_lm in (("with_lm", True), ("no_lm", False)):
        if use_lm and not fix.has_lm:
            continue
        raw = ranker.with_scorer(use_lm, replace(ranker.pick(use_lm), calibration=IDENTITY))
        p, right, counts = collect(fix.with_ranker(raw), folds.with_ranker(raw), sets, dev, use_lm)
        threshold = ranker.threshold_for(use_lm)
        scorer, threshold, done = recalibrate(ranker.pick(use_lm), threshold, (p, right))
        chosen[use_lm] = scorer, threshold
        report[key] = {**done, "edits_by_set": counts}
        print(f"{key}: {len(p)} edits ({counts}), logistic a={done.get('a')} b={done.get('b')}; "
              f"threshold {done['threshold'][0]} -> {done['threshold'][1]}"
              + (f"; calibration kept: {done['kept']}" if "kept" in done else "") + f" ({time.time() - t0:.0f} s)",
              flush=True)
    on = [*(["dev split"] if dev else []), *sorted(sets)]
    return chosen, {"on": on, "edits_from": 0.05,
                    **({"dev_lm": "cross-fitted folds" if a.fit_lm_folds else "the bundle's"} if dev else {}), **report}
