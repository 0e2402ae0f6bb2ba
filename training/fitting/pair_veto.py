"""Unreliable edit pairs: the edits a -> b a ranker gets wrong most of the time, vetoed (the ``veto`` step of
``training.fitting.fit``, which writes ranker.json; ``add_arguments`` declares its flags, ``fit`` returns the
vetoes and the threshold).

The ranker weighs each site's evidence with one set of weights for every pair of characters, so a pair whose
evidence is strong but whose edits the annotators rarely want (甚 -> 什: the corpus LM wants 什么, Taiwan-style
text keeps 甚么; 他 -> 她, which needs who is meant, beyond any window) is made again and again, wrongly. For each
scorer (with the LM and without it) the step decodes the real training pairs (``training.data.splits.train_pairs``,
never the dev split or a test set; with ``--fit-lm-folds`` each with the LM that never counted its fold) at the
ranker's threshold and counts each pair's right and wrong edits. A pair made at least ``--min-edits`` times and right less
than ``--max-precision`` of the time, (right + 1) / (edits + 2), goes into the scorer's ``veto`` in ranker.json;
the decoder never makes it (``veto_unreliable_pairs``). Fewer wrong edits leave room under the dev FPR cap, so the
threshold is chosen again on the dev split, with the veto, from a grid around the old one; at the new threshold
the pairs are counted again, until neither the vetoes nor the threshold change (``--rounds``).
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from dataclasses import replace

from corrector.rank import RankerWeights, Scorer

from ..data.splits import Pair, dev_pairs, train_pairs
from .crossfit import Folds
from .sweep import choose_threshold, summarise, sweep


def pair_counts(folds: Folds, pairs: list[Pair], use_lm: bool, threshold: float) -> tuple[Counter, Counter]:
    """(right, wrong): per "ab", how often the decoder, without any veto, wrote b for a written a at ``threshold``."""
    results = folds.map(pairs, lambda f, ps: f.correct_batch([s for s, _ in ps], use_lm=use_lm, threshold=threshold,
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


def add_arguments(ap: argparse.ArgumentParser) -> None:
    """The veto step's flags (the data, --holdout, --max-fpr and --fit-lm-folds are the command's)."""
    ap.add_argument("--min-edits", type=int, default=5, help="a pair needs at least this many edits to be judged")
    ap.add_argument("--max-precision", type=float, default=0.2, help="veto a pair right less often than this")
    ap.add_argument("--rounds", type=int, default=3, help="count, veto and choose again at the new threshold, until "
                    "neither the vetoes nor the threshold change (at most this many rounds)")


def fit(folds: Folds, ranker: RankerWeights, a: argparse.Namespace) -> tuple[dict[bool, tuple[Scorer, float]], dict,
                                                                        dict]:
    """Per scorer (with the LM: True), ``ranker``'s scorer with its unreliable pairs vetoed and the threshold chosen
    again on the dev split with them; the rule (for the ranker's meta) and the step's report. ``folds`` decode the
    training and dev pairs (each with the LM that did not count its fold, under ``--fit-lm-folds``)."""
    if a.rounds < 1:
        raise SystemExit("--rounds needs at least 1")
    t0 = time.time()
    train, dev = train_pairs(a.data, a.holdout), dev_pairs(a.data, a.holdout)
    chosen: dict[bool, tuple[Scorer, float]] = {}
    report: dict = {"train_pairs": len(train), "dev_pairs": len(dev), "min_edits": a.min_edits,
                    "max_precision": a.max_precision}
    for key, use_lm in (("with_lm", True), ("no_lm", False)):
        scorer = ranker.pick(use_lm)
        old = threshold = ranker.threshold_for(use_lm)
        vetoed: dict[str, tuple[int, int]] | None = None
        rounds: list[dict] = []
        for _ in range(a.rounds):  # the vetoes depend on the threshold and the threshold on the vetoes
            unvetoed = folds.with_ranker(ranker.with_scorer(use_lm, replace(scorer, veto={})))
            right, wrong = pair_counts(unvetoed, train, use_lm, threshold)
            veto = unreliable(right, wrong, a.min_edits, a.max_precision)
            if not rounds:
                before = summarise(sweep(unvetoed, dev, [old], use_lm=use_lm))[0]
            vetoed_folds = folds.with_ranker(ranker.with_scorer(use_lm, replace(scorer, veto=veto)))
            swept = sweep(vetoed_folds, dev, threshold_grid(threshold), use_lm=use_lm)
            best = choose_threshold(swept, a.max_fpr)["threshold"]
            table = summarise(swept)
            at_best = next(r for r in table if r["threshold"] == best)
            rounds.append({"counted_at": threshold, "veto": veto, "threshold": best, "dev": table,
                           "pairs": {p: [right[p], wrong[p]] for p in sorted(set(right) | set(wrong),
                                                                             key=lambda p: -(right[p] + wrong[p]))}})
            print(f"{key}, counted at {threshold:.3f}: {len(veto)} pairs vetoed ("
                  + ", ".join(f"{p[0]}→{p[1]} {r}/{r + w}" for p, (r, w) in veto.items())
                  + f"); dev {before['f1']:.3f} / {before['fpr']:.3f} at {old:.3f} -> {at_best['f1']:.3f} / "
                  f"{at_best['fpr']:.3f} at {best:.3f} ({time.time() - t0:.0f} s)", flush=True)
            done = vetoed is not None and set(veto) == set(vetoed) and best == threshold  # the counts may move
            vetoed, threshold = veto, best
            if done:
                break
        assert vetoed is not None
        chosen[use_lm] = replace(scorer, veto=vetoed), threshold
        ranker = ranker.with_scorer(use_lm, chosen[use_lm][0])
        report[key] = {"veto": vetoed, "threshold_before": old, "threshold": threshold, "dev_before": before,
                       "rounds": rounds}
    rule = {"min_edits": a.min_edits, "max_precision": a.max_precision, "decoded": "training.data.splits.train_pairs",
            "max_fpr": a.max_fpr}
    return chosen, rule, report
