"""Ablation table on a CSC test file: decoding variants of one bundle, plus other bundles.

    python benchmarks/ablations.py --data ../shared/data/csc/sighan15_test.tsv \\
        [--model data/electra_models/default] [--bundle "no pretraining=runs/bundle_scratch" ...]

Every row runs the same Corrector users get, with settings changed from the bundle's tuned
defaults (thresholds are never tuned here). Prints a markdown table.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from corrector import Corrector
from training.csc_data import read_pairs
from training.evaluate import run

NO_FILTER = {"min_similarity": 0.0, "min_shape_similarity": 0.0, "sim_weight": 0.0, "margin": 0.0}


def decoding_variants(defaults: dict) -> list[tuple[str, dict]]:
    """Cumulative rows: top-1, + similarity filter, + verification, + jieba protection; then the
    generator input changed from the bundle's default (unmasked / every suspect masked / hybrid)."""
    off = {"verify": False, "protect_dictionary_words": False}
    jieba_default = bool(defaults.get("protect_dictionary_words", False))
    rows = [
        ("detector + generator top-1", {**NO_FILTER, **off}),
        ("+ pinyin/shape filter and ranking", off),
        ("+ discriminator verification" + ("" if jieba_default else " (default)"),
         {"verify": True, "protect_dictionary_words": False}),
        ("+ jieba dictionary-word protection" + (" (default)" if jieba_default else ""),
         {"verify": True, "protect_dictionary_words": True}),
    ]
    masked, mask_th = bool(defaults.get("mask_suspects", False)), float(defaults.get("mask_threshold", 0.0))
    hybrid_th = mask_th or 0.3  # the shipping procedure's hybrid setting, when the bundle's defaults name none
    hybrid = f"suspects above RTD {hybrid_th:g} masked"
    inputs = {"unmasked": {"mask_suspects": False},
              hybrid: {"mask_suspects": True, "mask_threshold": hybrid_th},
              "every suspect masked": {"mask_suspects": True, "mask_threshold": 0.0}}
    default_input = "unmasked" if not masked else "every suspect masked" if mask_th == 0.0 else hybrid
    for name, settings in inputs.items():
        if name != default_input:
            rows.append((f"default, generator input: {name}", settings))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--model", type=Path, default=None)
    ap.add_argument("--bundle", nargs="*", default=[], metavar="NAME=DIR", help="other bundles, default decoding")
    ap.add_argument("--limit", type=int, default=0)
    args = ap.parse_args()
    pairs = read_pairs(args.data, args.limit)
    base = Corrector.load(args.model, device="cpu")
    rows = [(name, base.bundle.path, settings) for name, settings in decoding_variants(base.bundle.corrector_defaults)]
    for item in args.bundle:
        name, _, path = item.partition("=")
        rows.append((name, Path(path), {}))
    print(f"{len(pairs)} pairs from {args.data.name}; model {base.name} ({base.bundle.path})\n")
    print("| variant | sent. det. P / R / F1 | sent. cor. P / R / F1 | FPR |")
    print("|---|---|---|---|")
    for name, path, settings in rows:
        r = run(Corrector.load(path, device="cpu", **settings), pairs)
        d, c = r["sentence_detection"], r["sentence_correction"]
        print(f"| {name} | {d['precision']:.3f} / {d['recall']:.3f} / {d['f1']:.3f} | "
              f"{c['precision']:.3f} / {c['recall']:.3f} / {c['f1']:.3f} | {r['false_positive_rate']:.3f} |",
              flush=True)


if __name__ == "__main__":
    main()
