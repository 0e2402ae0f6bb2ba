"""Unreliable edit pairs: the edits a -> b a bundle's ranker gets wrong most of the time, vetoed.

    python -m training.fitting.pair_veto --model runs/bundle --data ../shared/data [--fit-lm-folds runs/lm/dom10_folds]

The ranker weighs each site's evidence with one set of weights for every pair of characters, so a pair whose
evidence is strong but whose edits the annotators rarely want (甚 -> 什: the corpus LM wants 什么, Taiwan-style
text keeps 甚么; 他 -> 她, which needs who is meant, beyond any window) is made again and again, wrongly. For each
scorer (with the LM and without it) this decodes the real training pairs (``training.data.splits.train_pairs``, never
the dev split or a test set; with ``--fit-lm-folds`` each with the LM that never counted its fold) at the bundle's
threshold and counts each pair's right and wrong edits. A pair made at least ``--min-edits`` times and right less
than ``--max-precision`` of the time, (right + 1) / (edits + 2), goes into the scorer's ``veto`` in ranker.json;
the decoder never makes it (``veto_unreliable_pairs``). Fewer wrong edits leave room under the dev FPR cap, so the
threshold is chosen again on the dev split, with the veto, from a grid around the old one; at the new threshold
the pairs are counted again, until neither the vetoes nor the threshold change (``--rounds``).
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

from corrector import Corrector
from corrector.rank import RankerWeights, Scorer

from ..data.splits import Pair, dev_pairs, train_pairs
from .crossfit import Folds
from .ranker import choose_threshold, summarise, sweep


def pair_counts(folds: Folds, pairs: list[Pair], use_lm: bool) -> tuple[Counter, Counter]:
    """(right, wrong): per "ab", how often the decoder, without any veto, wrote b for a written a."""
    results = folds.map(pairs, lambda f, ps: f.correct_batch([s for s, _ in ps], use_lm=use_lm,
                                                             veto_unreliable_pairs=False))
    right: Counter = Counter()
    wrong: Counter = Counter()
    for (_, t), r in zip(pairs, results):
        for e in r.edits:
            (right if t[e.position] == e.target else wrong)[e.source + e.target] += 1
    return right, wrong


def unreliable(right: Counter, wrong: Counter, min_edits: int, max_precision: float) -> dict[str, tuple[int, int]]:
    """The pairs made at least ``min_edits`` times with (right + 1) / (edits + 2) below ``max_precision``."""
    out = {}
    for pair in sorted(set(right) | set(wrong)):
        r, w = right[pair], wrong[pair]
        if r + w >= min_edits and (r + 1) / (r + w + 2) < max_precision:
            out[pair] = (r, w)
    return out


def threshold_grid(around: float, step: float = 0.025, below: int = 12, above: int = 4) -> list[float]:
    return sorted({round(min(max(around + step * k, 0.01), 0.99), 4) for k in range(-below, above + 1)})


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, required=True, help="bundle with a fitted ranker.json (rewritten)")
    ap.add_argument("--data", type=Path, required=True, help="the shared data folder (holds csc/)")
    ap.add_argument("--out", type=Path, help="where ranker.json goes (default: the bundle's)")
    ap.add_argument("--fit-lm-folds", type=Path, help="cross-fitting LM folds, as for training.fitting.ranker: each training "
                    "and dev pair decoded with the LM that did not count its fold")
    ap.add_argument("--min-edits", type=int, default=5, help="a pair needs at least this many edits to be judged")
    ap.add_argument("--max-precision", type=float, default=0.2, help="veto a pair right less often than this")
    ap.add_argument("--max-fpr", type=float, default=0.08, help="most error-free dev sentences changed")
    ap.add_argument("--rounds", type=int, default=3, help="count, veto and choose again at the new threshold, until "
                    "neither the vetoes nor the threshold change (at most this many rounds)")
    ap.add_argument("--holdout", type=int, default=1000, help="sighan_train pairs held out as the dev split")
    ap.add_argument("--report", type=Path, help="JSON report: every pair's counts, the vetoes, dev before and after")
    a = ap.parse_args(argv)
    if a.rounds < 1:
        ap.error("--rounds needs at least 1")
    t0 = time.time()
    fix = Corrector.load(a.model, device="cpu")
    if fix.ranker.meta.get("fitted") is not True:
        raise SystemExit(f"{a.model}: no fitted ranker.json (training.fitting.ranker first)")
    folds = Folds.over(fix, a.fit_lm_folds, a.data) if a.fit_lm_folds else Folds([fix])
    train, dev = train_pairs(a.data, a.holdout), dev_pairs(a.data, a.holdout)
    ranker: RankerWeights = fix.ranker
    report: dict = {"train_pairs": len(train), "dev_pairs": len(dev), "min_edits": a.min_edits,
                    "max_precision": a.max_precision}
    for key, use_lm in (("with_lm", True), ("no_lm", False)):
        scorer: Scorer = ranker.pick(use_lm)
        old = ranker.threshold if use_lm else ranker.threshold_no_lm
        threshold = old
        previous: dict[str, tuple[int, int]] | None = None
        rounds: list[dict] = []
        for _ in range(a.rounds):  # the vetoes depend on the threshold and the threshold on the vetoes
            ranker = ranker.with_scorer(use_lm, replace(scorer, veto={})).with_threshold(use_lm, threshold)
            folds.set(ranker=ranker)
            right, wrong = pair_counts(folds, train, use_lm)
            veto = unreliable(right, wrong, a.min_edits, a.max_precision)
            if not rounds:
                before = summarise(sweep(folds, dev, [old], use_lm=use_lm))[0]
            ranker = ranker.with_scorer(use_lm, replace(scorer, veto=veto))
            folds.set(ranker=ranker)
            swept = sweep(folds, dev, threshold_grid(threshold), use_lm=use_lm)
            chosen = choose_threshold(swept, a.max_fpr)["threshold"]
            table = summarise(swept)
            best = next(r for r in table if r["threshold"] == chosen)
            rounds.append({"counted_at": threshold, "veto": veto, "threshold": chosen, "dev": table,
                           "pairs": {p: [right[p], wrong[p]] for p in sorted(set(right) | set(wrong),
                                                                             key=lambda p: -(right[p] + wrong[p]))}})
            print(f"{key}, counted at {threshold:.3f}: {len(veto)} pairs vetoed ("
                  + ", ".join(f"{p[0]}→{p[1]} {r}/{r + w}" for p, (r, w) in veto.items())
                  + f"); dev {before['f1']:.3f} / {before['fpr']:.3f} at {old:.3f} -> {best['f1']:.3f} / "
                  f"{best['fpr']:.3f} at {chosen:.3f} ({time.time() - t0:.0f} s)", flush=True)
            done = previous is not None and set(veto) == set(previous) and chosen == threshold  # the counts may move
            previous, threshold = veto, chosen
            ranker = ranker.with_threshold(use_lm, chosen)
            if done:
                break
        folds.set(ranker=ranker)
        report[key] = {"veto": previous, "threshold_before": old, "threshold": threshold, "dev_before": before,
                       "rounds": rounds}
    meta = {**ranker.meta, "veto": {"min_edits": a.min_edits, "max_precision": a.max_precision,
                                    "decoded": "training.data.splits.train_pairs", "max_fpr": a.max_fpr}}
    ranker = replace(ranker, meta=meta)
    out = a.out or a.model / "ranker.json"
    out.write_text(json.dumps(ranker.to_dict(), ensure_ascii=False, indent=1), encoding="utf-8")
    if a.report:
        a.report.write_text(json.dumps(report, ensure_ascii=False, indent=1), encoding="utf-8")
    print(f"→ {out} ({time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main()
