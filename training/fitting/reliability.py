"""How often a bundle's edits are right at each confidence: the reliability table (and plot) on the dev split.

    python -m training.fitting.reliability --model BUNDLE --data ../shared/data [--fit-lm-folds DIR] [--plot PNG]
    python -m training.fitting.reliability --model BUNDLE --data ../shared/data --pairs sighan15_test.tsv

The edits applied at threshold 0.05, bucketed by confidence: mean confidence against the share that is right
(``calibration_map.reliability_table``). With ``--fit-lm-folds`` or ``--fit-count-folds`` the dev split is
decoded with the folds, as the calibration was fitted; ``--pairs`` checks another set instead (an out-of-sample
check of the calibration, which is fitted on dev), with the bundle's own LM. Prints one JSON row per bin; writes
nothing into the bundle.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from corrector import Corrector

from ..data.csc_data import read_pairs
from ..data.splits import dev_pairs
from .calibration_map import reliability_table
from .crossfit import Folds
from .sweep import dev_edits


def reliability(fix: Corrector | Folds, pairs: list[tuple[str, str]], png: Path | None, bins: int = 10) -> list[dict]:
    """Applied edits on the pairs at threshold 0.05, bucketed by confidence: mean confidence vs share correct."""
    table, _ = reliability_table(*dev_edits(fix, pairs), bins)
    if png is not None and table:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(4, 4))
        ax.plot([0, 1], [0, 1], "k:", lw=1)
        ax.plot([r["mean_confidence"] for r in table], [r["share_correct"] for r in table], "o-")
        for r in table:
            ax.annotate(str(r["edits"]), (r["mean_confidence"], r["share_correct"]), fontsize=7)
        ax.set_xlabel("edit confidence (mean in bin)")
        ax.set_ylabel("share of edits that are right")
        ax.set_title("reliability on the dev split")
        fig.tight_layout()
        fig.savefig(png, dpi=120)
    return table



def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, required=True, help="bundle with a fitted ranker.json")
    ap.add_argument("--data", type=Path, required=True, help="the shared data folder (holds csc/)")
    ap.add_argument("--holdout", type=int, default=1000, help="sighan_train pairs held out as the dev split")
    ap.add_argument("--fit-lm-folds", type=Path, help="cross-fitting LM folds the dev split is decoded with")
    ap.add_argument("--fit-count-folds", type=Path, help="cross-fitting candidate tables the dev split is decoded with")
    ap.add_argument("--pairs", type=Path, help="a source<TAB>target file to use instead of the dev split")
    ap.add_argument("--plot", type=Path, help="reliability plot PNG")
    a = ap.parse_args(argv)
    pairs = read_pairs(a.pairs) if a.pairs else dev_pairs(a.data, a.holdout)
    fix = Corrector.load(a.model, device="cpu")
    crossfit = (a.fit_lm_folds or a.fit_count_folds) and not a.pairs
    for row in reliability(Folds.over(fix, a.fit_lm_folds, a.data, a.fit_count_folds) if crossfit else fix, pairs,
                           a.plot):
        print(json.dumps(row))


if __name__ == "__main__":
    main()
