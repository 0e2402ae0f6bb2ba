"""Dev and SIGHAN-15 F1 of the decoder with each of several character LMs (same networks and ranker).

    python benchmarks/lm_sizes.py --model data/electra_models/default --data ../shared/data \\
        --lm runs/lm/kn5_small runs/lm/kn5 runs/lm/sb5 runs/lm/kn4

Each LM replaces the bundle's (``Corrector.load(..., lm=DIR)``); the ranker's weights stay, its
threshold is re-chosen on the dev split for each (best sentence correction F1 with at most
``--max-fpr`` of the dev's error-free sentences changed). Prints a markdown table with the LM's
size, order, smoothing and held-out perplexity (from its meta.json; stupid backoff does not
normalise, so its perplexity does not compare).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import _checkout  # noqa: F401  (training/ and service/ are imported from the checkout)

from corrector import Corrector
from training.data.csc_data import read_pairs
from training.data.location import default_data
from training.data.splits import dev_pairs
from training.fitting.sweep import choose_threshold, sweep

GRID = [0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, default=Path("data/electra_models/default"))
    ap.add_argument("--data", type=Path, default=default_data())
    ap.add_argument("--lm", type=Path, nargs="+", required=True)
    ap.add_argument("--max-fpr", type=float, default=0.08)
    a = ap.parse_args(argv)
    dev, test = dev_pairs(a.data), read_pairs(a.data / "csc" / "sighan15_test.tsv")
    print("| LM | order | smoothing | size MB | held-out ppl | threshold | dev F1 / FPR | SIGHAN-15 F1 / FPR |")
    print("|---|---:|---|---:|---:|---:|---|---|")
    for lm in a.lm:
        fix = Corrector.load(a.model, device="cpu", lm=lm)
        best = choose_threshold(sweep(fix, dev, GRID), a.max_fpr)
        t = sweep(fix, test, [best["threshold"]])[0]
        meta = json.loads((lm / "meta.json").read_text(encoding="utf-8"))
        size = sum(p.stat().st_size for p in lm.iterdir() if p.is_file()) / 1e6
        print(f"| {lm.name} | {meta['order']} | {meta['smoothing']} | {size:.1f} | {meta.get('heldout_perplexity', '')} "
              f"| {best['threshold']} | {best['sentence_correction']['f1']:.3f} / {best['false_positive_rate']:.3f} "
              f"| {t['sentence_correction']['f1']:.3f} / {t['false_positive_rate']:.3f} |", flush=True)


if __name__ == "__main__":
    main()
