"""One threshold scale with and without the LM: the shipped confidences judged where they were not fitted.

    python benchmarks/confidence_scale.py [--model DIR] [--data ../shared/data] [--report out.json]

The bundle's two calibration maps (decoding with the character LM and without it) were fitted on LEMON's four dev
domains. Here every edit the bundle makes at threshold 0.05 on SIGHAN-15 and on the dev split (neither fitted on),
decoding with the LM and without it, is binned by its confidence (bins of 0.1 up to 1.0: how often edits of that
confidence are right) and, for thresholds 0.5 to 0.9, the share of the edits at or above it that are right. One
scale means the same threshold keeps edits that are right about as often in both modes.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import _checkout  # noqa: F401  (training/ is imported from the checkout)
import numpy as np

from training.data.csc_data import read_pairs
from training.data.location import default_data
from training.fitting.calibration_map import reliability_table
from training.fitting.sweep import dev_edits

THRESHOLDS = (0.5, 0.6, 0.7, 0.8, 0.9)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, default=None)
    ap.add_argument("--data", type=Path, default=default_data())
    ap.add_argument("--dev", type=Path, default=Path("runs/dev_split.tsv"), help="the dev split (training.data.splits)")
    ap.add_argument("--report", type=Path, default=None)
    args = ap.parse_args()
    from corrector import Corrector

    fix = Corrector.load(args.model)
    sets = {"sighan15_test": read_pairs(args.data / "csc" / "sighan15_test.tsv")}
    if args.dev.is_file():
        sets["dev_split"] = read_pairs(args.dev)
    report: dict = {}
    for name, pairs in sets.items():
        for use_lm in (True, False):
            conf, right = dev_edits(fix, pairs, use_lm=use_lm)
            table, ece = reliability_table(conf, right)
            above = {t: (int((conf >= t).sum()), round(float(right[conf >= t].mean()), 3) if (conf >= t).any() else None)
                     for t in THRESHOLDS}
            key = f"{name} {'with' if use_lm else 'without'} the LM"
            report[key] = {"edits": len(conf), "ece": ece, "bins": table, "right_at_or_above": above}
            print(f"\n{key}: {len(conf)} edits, ECE {ece:.3f}")
            print("| confidence | edits | mean confidence | share right |\n|---|---:|---:|---:|")
            for b in table:
                print(f"| {b['bin']} | {b['edits']} | {b['mean_confidence']:.3f} | {b['share_correct']:.3f} |")
            print("| threshold | edits at or above | share right |\n|---:|---:|---:|")
            for t, (n, share) in above.items():
                print(f"| {t:.1f} | {n} | {share if share is not None else '-'} |")
    if args.report:
        args.report.write_text(json.dumps(report, indent=1), encoding="utf-8")


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
