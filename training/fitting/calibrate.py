"""Calibrate a bundle's edit confidences on your own text's dev pairs, keeping the edits it makes.

    python -m training.fitting.calibrate --model BUNDLE --on my_dev.tsv [--report calibration.json]
    python -m training.fitting.calibrate --model BUNDLE --data ../shared/data --fit-lm-folds runs/lm/folds \\
        --on ../shared/data/csc/lemon_dev/*.tsv        # with the dev split too, as docs/experiments measured it

``training.fitting.ranker`` calibrates on the dev split alone (learners' essays). How often an edit of a given
confidence is right differs by domain (lemon_dev, 2026-11-27: applied edits were right 82% of the time in contracts,
41% in game text, at the same mean confidence 0.79), and a confidence is what a user filters and highlights by. This
decodes every ``--on`` set (and, with ``--data``, the dev split, each pair with the LM fold that did not count it)
at threshold 0.05 with the probabilities uncalibrated, pools their edits, and fits a logistic map of "the edit is
right" on the probability's log-odds (``calibration_map``: strictly increasing from 0 to 1, so confidences keep
the ranker's order all the way up). Both scorers (with and without the LM) are calibrated again, and each threshold
moves with its calibration (the same probability, its new confidence), so the same edits are made: only what a
confidence means changes (a scorer whose threshold's probability falls outside the new knots, where the map is
flat, keeps its calibration). Writes the bundle's ranker.json, the rule in its meta.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from corrector import Corrector
from corrector.rank import IDENTITY, RankerWeights

from ..data.csc_data import read_pairs
from ..data.splits import dev_pairs
from .calibration_map import fit_calibration
from .crossfit import Folds
from .ranker import dev_edits


def recalibrate(ranker: RankerWeights, use_lm: bool, edits: tuple[np.ndarray, np.ndarray]) -> tuple[RankerWeights, dict]:
    """The ranker with scorer ``pick(use_lm)`` calibrated on ``edits`` (uncalibrated probability, right) and its
    threshold moved to make the same edits; and what was done."""
    scorer = ranker.pick(use_lm)
    old = ranker.threshold if use_lm else ranker.threshold_no_lm
    p, right = edits
    if not len(p):
        return ranker, {"edits": 0, "share_right": 0.0, "kept": "no edits", "threshold": [old, old]}
    try:
        cal, params = fit_calibration(p, right)
    except ValueError as e:  # all right, all wrong, or ordered the wrong way round: nothing to say
        return ranker, {"edits": len(p), "share_right": round(float(right.mean()), 4), "kept": str(e),
                        "threshold": [old, old]}
    probability = scorer.uncalibrate(old)
    new_scorer = replace(scorer, calibration=cal)
    # the new confidence of the old threshold's probability: calibrate(p) > new exactly where p > probability
    # (both knot rows strictly increase), unless the probability lies on a flat end of the map
    done = {"edits": len(p), "share_right": round(float(right.mean()), 4), **params, "knots": len(cal[0])}
    if not cal[0][0] < probability < cal[0][-1]:  # too few edits around it to say what it means: as it was
        return ranker, {**done, "kept": f"the threshold's probability {probability:.4f} is outside the knots "
                                        f"({cal[0][0]:.4f} .. {cal[0][-1]:.4f})", "threshold": [old, old]}
    new = round(float(new_scorer.calibrate(probability)), 4)
    return ranker.with_scorer(use_lm, new_scorer).with_threshold(use_lm, new), {**done, "threshold": [old, new]}


def collect(fix: Corrector, folds: Folds, sets: dict[str, list[tuple[str, str]]], dev: list[tuple[str, str]],
            use_lm: bool) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
    """(probability, right) of every edit at threshold 0.05 (``ranker.dev_edits``) on the dev split and the sets,
    pooled; the Correctors' scorers are uncalibrated, so the probability is the ranker's own."""
    ps, rights, counts = [], [], {}
    for name, pairs in [*([("dev split", dev)] if dev else []), *sets.items()]:
        p, right = dev_edits(folds if name == "dev split" else fix, pairs, use_lm=use_lm)
        ps.append(p)
        rights.append(right)
        counts[name] = len(p)
    return np.concatenate(ps), np.concatenate(rights), counts


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, required=True, help="bundle with a fitted ranker.json (rewritten)")
    ap.add_argument("--data", type=Path, help="the shared data folder (holds csc/): its dev split joins the sets")
    ap.add_argument("--fit-lm-folds", type=Path, help="cross-fitting LM folds for the dev split (as the ranker stage)")
    ap.add_argument("--on", type=Path, nargs="+", required=True,
                    help="source<TAB>target dev pairs of the text the confidences are for (pooled)")
    ap.add_argument("--holdout", type=int, default=1000, help="sighan_train pairs held out as the dev split")
    ap.add_argument("--report", type=Path, help="JSON report of what was done")
    a = ap.parse_args(argv)
    if a.fit_lm_folds and not a.data:
        raise SystemExit("--fit-lm-folds decodes the dev split: give --data too")
    t0 = time.time()
    fix = Corrector.load(a.model, device="cpu")
    if fix.ranker.meta.get("fitted") is not True:
        raise SystemExit(f"{a.model}: no fitted ranker.json (training.fitting.ranker first)")
    folds = Folds.over(fix, a.fit_lm_folds, a.data) if a.fit_lm_folds else Folds([fix])
    sets = {path.stem: read_pairs(path) for path in a.on}
    dev = dev_pairs(a.data, a.holdout) if a.data else []
    shipped = fix.ranker
    ranker, report = shipped, {}
    for key, use_lm in (("with_lm", True), ("no_lm", False)):
        if use_lm and not fix.has_lm:
            continue
        raw = shipped.with_scorer(use_lm, replace(shipped.pick(use_lm), calibration=IDENTITY))
        folds.set(ranker=raw)
        fix.ranker = raw
        p, right, counts = collect(fix, folds, sets, dev, use_lm)
        ranker, done = recalibrate(ranker, use_lm, (p, right))
        report[key] = {**done, "edits_by_set": counts}
        print(f"{key}: {len(p)} edits ({counts}), logistic a={done.get('a')} b={done.get('b')}; "
              f"threshold {done['threshold'][0]} -> {done['threshold'][1]}"
              + (f"; calibration kept: {done['kept']}" if "kept" in done else "") + f" ({time.time() - t0:.0f} s)",
              flush=True)
    on = [*(["dev split"] if dev else []), *sorted(sets)]
    rule = {"on": on, "edits_from": 0.05,
            **({"dev_lm": "cross-fitted folds" if a.fit_lm_folds else "the bundle's"} if dev else {}), **report}
    ranker = replace(ranker, meta={**ranker.meta, "calibration_rule": rule})
    (a.model / "ranker.json").write_text(json.dumps(ranker.to_dict(), ensure_ascii=False, indent=1), encoding="utf-8")
    if a.report:
        a.report.write_text(json.dumps(rule, ensure_ascii=False, indent=1), encoding="utf-8")
    print(f"calibrated on {', '.join(on)} → {a.model / 'ranker.json'} ({time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main()
