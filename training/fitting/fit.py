"""Fit the decoder's ranker and write the bundle's ranker.json, threshold included: the one writer of that file.

    python -m training.fitting.fit --model BUNDLE --data ../shared/data --fit-lm-folds runs/lm/folds \\
        --steps ranker,veto,threshold,calibration --blend-on-dev --synthetic-pairs runs/synthetic.tsv \\
        --max-changed 0.10 --choose-on ../shared/data/csc/lemon_dev/*.tsv \\
        --calibrate-on ../shared/data/csc/lemon_dev/*.tsv --out runs/ranker.json --report runs/fit.json
    python -m training.fitting.fit --model BUNDLE --steps calibration --calibrate-on mine.tsv

The steps, in this order (``--steps`` names those to run; each reads what the one before chose):

1. ``ranker`` (``training.fitting.ranker``): the shortlist's and both scorers' weights, fitted on the real training
   pairs; their thresholds chosen and their calibration fitted on the dev split. Without it, the bundle's fitted
   ranker.json is the start.
2. ``veto`` (``training.fitting.pair_veto``): the edit pairs each scorer gets mostly wrong on the training pairs,
   vetoed, and its threshold chosen again on the dev split.
3. ``threshold`` (``training.fitting.threshold``): the with-LM threshold chosen again under a second cap, the share
   of correct sentences changed (and ``--choose-on`` sets).
4. ``calibration`` (``training.fitting.calibrate``): both scorers calibrated again on ``--calibrate-on`` sets, each
   threshold moved with its calibration (the same edits made).

Each step returns what it chose (weights, vetoes, thresholds, calibrations) and the rule it followed; the ranker is
put together here and written once (``--out``, default the bundle's ranker.json), each step's rule in its meta and
each step's figures in ``--report``. Between steps every Corrector decodes with the ranker chosen so far, as a
bundle holding it would load. ``--fit-lm-folds`` decodes the training pairs and the dev split, in every step, each
pair with the LM that never counted its fold (``training.fitting.crossfit``).
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path

from corrector import Corrector
from corrector.rank import RankerWeights, Scorer

from . import calibrate, pair_veto, ranker, threshold
from .crossfit import Folds

STEPS = ("ranker", "veto", "threshold", "calibration")


def steps(text: str) -> tuple[str, ...]:
    """'ranker,veto' -> ("ranker", "veto"): known steps, in their order."""
    named = [s for s in text.split(",") if s]
    unknown = set(named) - set(STEPS)
    if unknown or not named:
        raise argparse.ArgumentTypeError(f"steps are a comma list of {', '.join(STEPS)}, got {text!r}")
    return tuple(s for s in STEPS if s in named)


def chosen_into(weights: RankerWeights, chosen: dict[bool, tuple[Scorer, float]], rule_name: str,
                rule: dict) -> RankerWeights:
    """``weights`` with each scorer and threshold a step chose (with the LM: True), its rule in the meta."""
    for use_lm, (scorer, cut) in chosen.items():
        weights = weights.with_scorer(use_lm, scorer).with_threshold(use_lm, cut)
    return replace(weights, meta={**weights.meta, rule_name: rule})


def parser() -> argparse.ArgumentParser:
    """The command's flags (the recipe checks its commands against them)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, required=True, help="bundle with candidates/ and lm/")
    ap.add_argument("--data", type=Path, help="the shared data folder (holds csc/); the calibration step alone, on "
                    "--calibrate-on sets, needs none")
    ap.add_argument("--steps", type=steps, default=steps("ranker,veto"), help=f"which of {','.join(STEPS)} to run "
                    "(default: ranker,veto); without ranker, the bundle's fitted ranker.json is the start")
    ap.add_argument("--out", type=Path, help="where ranker.json goes (default: the bundle's)")
    ap.add_argument("--report", type=Path, help="JSON report: each step's figures")
    ap.add_argument("--holdout", type=int, default=1000, help="sighan_train pairs held out as the dev split "
                    "(as training.data.make_csc_data --holdout, same seed)")
    ap.add_argument("--max-fpr", type=float, default=0.08, help="most error-free dev sentences changed, for every "
                    "threshold chosen")
    ap.add_argument("--fit-lm-folds", type=Path, help="cross-fitting LM folds (training.evidence.char_lm "
                    "--in-domain-folds K --fold-out DIR): each training pair and each dev pair is decoded with the LM "
                    "that did not count its fold; the bundle's LM counted them all")
    for step in (ranker, pair_veto, threshold, calibrate):  # each step's own flags
        step.add_arguments(ap)
    return ap


def main(argv: list[str] | None = None) -> None:
    ap = parser()
    a = ap.parse_args(argv)
    if a.fit_lm and a.fit_lm_folds:
        ap.error("give --fit-lm or --fit-lm-folds, not both")
    if a.data is None and (a.steps != ("calibration",) or a.calibrate_on_dev or a.fit_lm_folds):
        ap.error("--data is needed: the steps decode the training pairs or the dev split")
    t0 = time.time()
    fix = Corrector.load(a.model, device="cpu")
    decoding = Folds.over(fix, a.fit_lm_folds, a.data) if a.fit_lm_folds else Folds([fix])
    report: dict = {}
    if "ranker" in a.steps:
        weights, report["ranker"] = ranker.fit(fix, decoding, a)
    elif fix.ranker.meta.get("fitted") is True:
        weights = fix.ranker
    else:
        raise SystemExit(f"{a.model}: no fitted ranker.json to start from (--steps ranker first)")
    if "veto" in a.steps:  # every Corrector decodes with the weights so far, as a bundle holding them would load
        fix, decoding = fix.with_ranker(weights), decoding.with_ranker(weights)
        chosen, rule, report["veto"] = pair_veto.fit(decoding, weights, a)
        weights = chosen_into(weights, chosen, "veto", rule)
    if "threshold" in a.steps:  # every Corrector decodes with the weights so far, as a bundle holding them would load
        fix, decoding = fix.with_ranker(weights), decoding.with_ranker(weights)
        chosen, rule, report["threshold"] = threshold.fit(fix, decoding, weights, a)
        weights = chosen_into(weights, chosen, "threshold_rule", rule)
    if "calibration" in a.steps:  # every Corrector decodes with the weights so far, as a bundle holding them would load
        fix, decoding = fix.with_ranker(weights), decoding.with_ranker(weights)
        chosen, report["calibration"] = calibrate.fit(fix, decoding, weights, a)
        weights = chosen_into(weights, chosen, "calibration_rule", report["calibration"])
    out = a.out or a.model / "ranker.json"
    weights.save(out)
    if a.report:
        a.report.write_text(json.dumps(report, ensure_ascii=False, indent=1), encoding="utf-8")
    print(f"{', '.join(a.steps)}: threshold {weights.threshold} (no LM {weights.threshold_no_lm}) → {out} "
          f"({time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main()
