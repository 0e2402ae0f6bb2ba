"""How well each way of calibrating confidences carries to text it was not fitted on: leave one LEMON domain out.

    python benchmarks/calibration_lodo.py [--model DIR] [--data ../shared/data] [--report out.json]

Decodes the four lemon_dev domains and SIGHAN-15 once with the bundle's ranker uncalibrated (every edit at
threshold 0.05, as ``training.fitting.calibrate`` collects them). For each domain in turn, the isotonic map
(``calibration_map.fit_isotonic``, its block size cross-fitted) and the logistic map (``calibration_map``) are fitted on the
other three domains' edits and judged on the held-out one: reliability bins of width 0.1 up to 1.0, the expected
calibration error (ECE, weighted by edits), the Brier score, the highest confidence either map can give, and how
many distinct confidences the held-out edits get. Both maps fitted on all four domains are then judged on
SIGHAN-15 (never fitted on).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

import _checkout  # noqa: F401  (training/ and service/ are imported from the checkout)
import numpy as np

from corrector.rank import IDENTITY
from training.data.csc_data import read_pairs
from training.data.location import default_data
from training.fitting.calibration_map import (
    choose_min_block,
    fit_calibration,
    fit_isotonic,
    reliability_table,
)
from training.fitting.sweep import dev_edits

DOMAINS = ("enc", "mec", "cot", "gam")


def maps(p: np.ndarray, right: np.ndarray) -> dict[str, tuple[tuple[float, ...], tuple[float, ...]]]:
    return {"isotonic": fit_isotonic(p, right, choose_min_block(p, right)), "logistic": fit_calibration(p, right)[0]}


def judge(knots: tuple[tuple[float, ...], tuple[float, ...]], p: np.ndarray, right: np.ndarray) -> dict:
    c = np.interp(p, *knots)
    table, ece = reliability_table(c, right)
    return {"ece": ece, "brier": round(float(((c - right) ** 2).mean()), 4),
            "top_confidence": round(float(knots[1][-1]), 4), "distinct": int(len(np.unique(np.round(c, 4)))),
            "bins": table}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, default=None)
    ap.add_argument("--data", type=Path, default=default_data())
    ap.add_argument("--report", type=Path, default=None)
    args = ap.parse_args()
    from corrector import Corrector

    fix = Corrector.load(args.model)
    fix = fix.with_ranker(fix.ranker.with_scorer(True, replace(fix.ranker.pick(True), calibration=IDENTITY)))
    sets = {d: read_pairs(args.data / "csc" / "lemon_dev" / f"{d}.tsv") for d in DOMAINS}
    sets["sighan15_test"] = read_pairs(args.data / "csc" / "sighan15_test.tsv")
    edits = {name: dev_edits(fix, pairs) for name, pairs in sets.items()}
    report: dict = {}
    print("| held out | edits | map | ECE | Brier | top confidence | distinct confidences |")
    print("|---|---:|---|---:|---:|---:|---:|")
    for held in [*DOMAINS, "sighan15_test"]:
        fit_on = [d for d in DOMAINS if d != held]
        p = np.concatenate([edits[d][0] for d in fit_on])
        right = np.concatenate([edits[d][1] for d in fit_on])
        report[held] = {}
        for form, knots in maps(p, right).items():
            r = judge(knots, *edits[held])
            report[held][form] = r
            print(f"| {held} | {len(edits[held][0])} | {form} | {r['ece']:.3f} | {r['brier']:.3f} | "
                  f"{r['top_confidence']:.3f} | {r['distinct']} |")
    for form in ("isotonic", "logistic"):
        print(f"\nSIGHAN-15, {form} map fitted on the four domains:")
        print("| bin | edits | mean confidence | share right |\n|---|---:|---:|---:|")
        for b in report["sighan15_test"][form]["bins"]:
            print(f"| {b['bin']} | {b['edits']} | {b['mean_confidence']:.3f} | {b['share_correct']:.3f} |")
    if args.report:
        args.report.write_text(json.dumps(report, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
