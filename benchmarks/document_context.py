"""What a document's own evidence costs on the native dev sets: each set read as one document.

    python benchmarks/document_context.py                       # the five native dev domains
    python benchmarks/document_context.py --sets cot gam --min-terms 3 --min-bigrams 8

``python -m corrector lint`` keeps as written what the checked files write again and again: their terms (words,
``terms``) and the pairs of characters they write side by side (``bigrams``; corrector/evidence/terms.py). A slip
written as often would be kept too. To see what that costs in recall, each dev set's source sentences (slips
included) are taken as one document, its terms and bigrams counted over them as lint counts a tree's, and the set
is corrected without them, with the terms alone and with both (the library's defaults otherwise). Strict sentence-level figures, as
``training.fitting.evaluate`` prints them.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import _checkout  # noqa: F401

from corrector import Corrector
from corrector.evidence.terms import BIGRAM_MIN_COUNT, MIN_COUNT, bigram_counts, recurring, term_counts
from training.data.csc_data import read_pairs
from training.fitting.evaluate import run

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "csc"
SETS = {"enc": "lemon_dev/enc.tsv", "mec": "lemon_dev/mec.tsv", "cot": "lemon_dev/cot.tsv",
        "gam": "lemon_dev/gam.tsv", "cscd_ns": "cscd_ns_dev.tsv"}


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DATA, help="the csc/ folder of the shared data")
    ap.add_argument("--sets", nargs="+", choices=sorted(SETS), default=list(SETS))
    ap.add_argument("--min-terms", type=int, default=MIN_COUNT, help="terms: words written this often (0: none)")
    ap.add_argument("--min-bigrams", type=int, default=BIGRAM_MIN_COUNT, help="bigrams: pairs written this often (0: none)")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    return ap


def main() -> None:
    args = parser().parse_args()
    fix = Corrector.load()
    out = {}
    print("| set | sentences | terms | bigrams | without: P / R / F1, FPR | terms | terms and bigrams |")
    print("|---|---:|---:|---:|---|---|---|")
    for name in args.sets:
        pairs = read_pairs(args.data / SETS[name])
        sources = [s for s, _ in pairs]
        own = {"terms": recurring(term_counts(sources), args.min_terms),
               "bigrams": recurring(bigram_counts(sources), args.min_bigrams)}
        arms: list[dict[str, Any]] = [{}, {"terms": own["terms"]}, dict(own)]
        figures = [run(fix, pairs, **{k: v for k, v in arm.items() if v}) for arm in arms]
        cells = [f"{r['sentence_correction']['precision']:.3f} / {r['sentence_correction']['recall']:.3f} / "
                 f"{r['sentence_correction']['f1']:.3f}, {100 * r['false_positive_rate']:.1f}%" for r in figures]
        print(f"| {name} | {len(pairs):,} | {len(own['terms']):,} | {len(own['bigrams']):,} | {' | '.join(cells)} |",
              flush=True)
        out[name] = {"terms": len(own["terms"]), "bigrams": len(own["bigrams"]),
                     **dict(zip(("without", "terms", "both"), figures))}
    if args.json:
        args.json.write_text(json.dumps(out, indent=1, ensure_ascii=False), encoding="utf-8")


if __name__ == "__main__":
    main()
