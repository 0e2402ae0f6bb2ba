"""The with-LM threshold, chosen on dev under two caps: the dev split's FPR and the share of known-correct
sentences changed (the ``threshold`` step of ``training.fitting.fit``, which writes ranker.json; ``add_arguments``
declares its flags, ``fit`` returns the threshold).

The ``ranker`` and ``veto`` steps choose the threshold with the most dev F1 at a dev FPR cap. The dev
split's error-free sentences are sighan_train's essays; users' text is also news full of names and other regions'
word forms, which the corrector must leave alone. So this also decodes the target side of
``csc/wang271k_dev.tsv`` (the second dev set: news, every sentence correct) and keeps only the thresholds that
change at most ``--max-changed`` of it, then takes the most dev F1 among them. Both sets are dev sets (no test set
is read). The networks and features are computed once per set; each threshold only decides again
(``training.fitting.sweep``).

``--choose-on FILE ...`` adds development sets of what users write (``csc/lemon_dev/*.tsv``: native speakers'
errors in mainland text): the threshold is then the one with the most mean F1 over the dev split and those sets,
among those that also change at most ``--max-fpr-each`` of each added set's correct sentences.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from corrector import Corrector
from corrector.rank import RankerWeights, Scorer

from ..data.csc_data import read_pairs
from ..data.native_dev import CSCD_NS_FPR_CAP, LEMON_FPR_CAP
from ..data.splits import dev_pairs
from .crossfit import Folds
from .sweep import summarise, sweep


def grid(text: str) -> list[float]:
    """'0.4:0.7:0.01' -> [0.4, 0.41, ..., 0.7]; '0.4,0.5' -> [0.4, 0.5]."""
    try:
        if ":" in text:
            lo, hi, step = (float(x) for x in text.split(":"))
            values = [round(lo + k * step, 4) for k in range(int(round((hi - lo) / step)) + 1)]
        else:
            values = [float(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected LO:HI:STEP or comma-separated numbers, got {text!r}") from None
    if not values or not all(0.0 < v < 1.0 for v in values):
        raise argparse.ArgumentTypeError(f"thresholds lie in (0, 1), got {text!r}")
    return values


def choose(dev_rows: list[dict], changed: list[float], max_fpr: float, max_changed: float,
           others: Sequence[list[dict]] = (), max_fpr_each: float | Sequence[float] = 1.0) -> dict | None:
    """The dev row with the most sentence correction F1 (with ``others``, the mean F1 of the dev split and each
    other set's row at the same threshold) among those with dev FPR <= max_fpr, every other set's FPR <= its cap
    (``max_fpr_each``: one for all, or one per set), and a share of correct sentences changed <= max_changed (ties:
    the higher threshold); None when no row meets them all."""
    def f1(i: int) -> float:
        return float(np.mean([rows[i]["sentence_correction"]["f1"] for rows in (dev_rows, *others)]))

    caps = [max_fpr_each] * len(others) if isinstance(max_fpr_each, float | int) else list(max_fpr_each)
    ok = [i for i, (r, c) in enumerate(zip(dev_rows, changed)) if r["false_positive_rate"] <= max_fpr
          and c <= max_changed and all(rows[i]["false_positive_rate"] <= cap for rows, cap in zip(others, caps))]
    return dev_rows[max(ok, key=lambda i: (f1(i), dev_rows[i]["threshold"]))] if ok else None


def add_arguments(ap: argparse.ArgumentParser) -> None:
    """The threshold step's flags (the data, --holdout, --max-fpr and --fit-lm-folds are the command's)."""
    ap.add_argument("--correct", type=Path, default=None,
                    help="source<TAB>target file whose targets are the correct sentences (default: "
                    "DATA/csc/wang271k_dev.tsv)")
    ap.add_argument("--max-changed", type=float, default=0.05, help="most correct sentences changed")
    ap.add_argument("--choose-on", type=Path, nargs="*", default=[],
                    help="more dev pair files (e.g. DATA/csc/lemon_dev/*.tsv): choose on the mean F1 of the dev "
                    "split and these, each of them changing at most --max-fpr-each of its correct sentences")
    ap.add_argument("--max-fpr-each", type=float, default=LEMON_FPR_CAP, help="most correct sentences of each "
                    "--choose-on set changed")
    ap.add_argument("--max-fpr-cscd-ns", type=float, default=CSCD_NS_FPR_CAP, help="the same for a --choose-on "
                    "set named cscd_ns_dev.tsv, whose correct sentences a detector picked as suspicious")
    ap.add_argument("--grid", type=grid, default=grid("0.30:0.80:0.01"), help="thresholds tried (LO:HI:STEP)")


def fit(fix: Corrector, folds: Folds, ranker: RankerWeights, a: argparse.Namespace) -> tuple[
        dict[bool, tuple[Scorer, float]], dict, dict]:
    """The with-LM scorer and its threshold chosen under both caps (``choose``), the rule (for the ranker's meta)
    and the step's report (every threshold's figures). ``fix`` and ``folds`` decode with ``ranker``: ``folds`` the
    dev split (each pair with the LM that did not count it, under ``--fit-lm-folds``), ``fix`` the other sets."""
    if not fix.has_lm:
        raise SystemExit(f"{a.model}: no character LM, so no with-LM threshold to choose")
    correct_file = a.correct or a.data / "csc" / "wang271k_dev.tsv"
    correct = list(dict.fromkeys(t for _, t in read_pairs(correct_file)))
    dev_rows = sweep(folds, dev_pairs(a.data, a.holdout), a.grid)
    changed = [r["false_positive_rate"] for r in sweep(fix, [(t, t) for t in correct], a.grid)]
    others = {path.stem: sweep(fix, read_pairs(path), a.grid) for path in a.choose_on}
    other_rows = {name: summarise(rows) for name, rows in others.items()}
    table = [{**row, "changed": round(c, 4), **{f"{name}_{k}": rows[i][k] for name, rows in other_rows.items()
                                                 for k in ("f1", "fpr")}}
             for i, (row, c) in enumerate(zip(summarise(dev_rows), changed))]
    for row in table:
        print(f"{row['threshold']:.3f}: dev F1 {row['f1']:.3f} FPR {row['fpr']:.3f}, "
              f"{correct_file.name} targets changed {row['changed']:.3f}"
              + "".join(f"; {name} F1 {row[name + '_f1']:.3f} FPR {row[name + '_fpr']:.3f}" for name in others))
    caps = [a.max_fpr_cscd_ns if name == "cscd_ns_dev" else a.max_fpr_each for name in others]
    best = choose(dev_rows, changed, a.max_fpr, a.max_changed, list(others.values()), caps)
    if best is None:
        raise SystemExit(f"no threshold of the grid keeps dev FPR <= {a.max_fpr}, {correct_file.name}'s targets "
                         f"changed <= {a.max_changed}" + (f" and each --choose-on set's FPR <= {a.max_fpr_each}"
                                                          if others else ""))
    rule = {"max_fpr": a.max_fpr, "max_changed": a.max_changed, "correct": correct_file.name,
            "dev_lm": "cross-fitted folds" if a.fit_lm_folds else "the bundle's", "before": ranker.threshold,
            **({"choose_on": sorted(others), "max_fpr_each": a.max_fpr_each,
                "max_fpr_cscd_ns": a.max_fpr_cscd_ns,
                "objective": "mean F1 of the dev split and the choose_on sets"} if others else {})}
    chosen = next(r for r in table if r["threshold"] == best["threshold"])
    print(f"threshold {ranker.threshold} -> {best['threshold']}: dev F1 {chosen['f1']:.3f} at FPR "
          f"{chosen['fpr']:.3f}, {chosen['changed']:.3f} of {correct_file.name}'s targets changed", flush=True)
    return {True: (ranker.scorer, best["threshold"])}, rule, {"chosen": best["threshold"], "table": table}
