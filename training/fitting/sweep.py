"""Decoding pairs at many thresholds: the networks and features computed once, then each threshold decided
(``sweep``); the threshold with the most sentence correction F1 under a cap on the error-free sentences changed
(``choose_threshold``); and every edit made at threshold 0.05 with its confidence and whether it is right
(``dev_edits``, what the calibration and the reliability table are fitted and drawn on). A ``Folds`` decodes each
fold's pairs by its own Corrector (cross-fitting) and pools them."""

from __future__ import annotations

import numpy as np

from corrector import Corrector
from corrector.config import in_force
from corrector.stages import assemble

from .crossfit import Folds
from .metrics import csc_metrics


def sweep(fix: Corrector | Folds, pairs: list[tuple[str, str]], thresholds: list[float], **settings) -> list[dict]:
    """SIGHAN metrics of the decoding at each threshold; the networks and features are computed once. With
    ``Folds``, each fold's pairs are decoded by its own Corrector and the metrics pooled."""
    per_pair = _as_folds(fix).map(pairs, lambda f, ps: list(zip(*_predictions(f, ps, thresholds, **settings))))
    return [{"threshold": th, **csc_metrics((s, t, p[j]) for (s, t), p in zip(pairs, per_pair))}
            for j, th in enumerate(thresholds)]


def _as_folds(fix: Corrector | Folds) -> Folds:
    return fix if isinstance(fix, Folds) else Folds([fix])


def _predictions(fix: Corrector, pairs: list[tuple[str, str]], thresholds: list[float], **settings) -> list[list[str]]:
    """The corrected texts at each threshold (one list per threshold)."""
    prepared = fix.prepare([s for s, _ in pairs], **settings)
    # the decisions need no generator distribution (its features are in the rows): drop it, it is large
    scored = [s.without_logits() for s in fix.score(prepared)]
    out = []
    for th in thresholds:
        cfg = in_force(loaded=prepared.settings, call={"threshold": th})
        out.append([c.target for c in assemble(prepared, [fix.decide(s, cfg) for s in scored])])
    return out


def choose_threshold(rows: list[dict], max_fpr: float) -> dict:
    """The row with the most sentence correction F1 among those changing at most ``max_fpr`` of the error-free
    sentences (all rows when none does; ties: the higher threshold)."""
    ok = [r for r in rows if r["false_positive_rate"] <= max_fpr] or rows
    return max(ok, key=lambda r: (r["sentence_correction"]["f1"], r["threshold"]))


def dev_edits(fix: Corrector | Folds, pairs: list[tuple[str, str]], **settings) -> tuple[np.ndarray, np.ndarray]:
    """(confidence, right) of every edit applied on the pairs at threshold 0.05."""
    results = _as_folds(fix).map(pairs, lambda f, ps: f.correct_batch([s for s, _ in ps], threshold=0.05, **settings))
    conf, right = [], []
    for (_, t), r in zip(pairs, results):
        for e in r.edits:
            conf.append(e.confidence)
            right.append(t[e.position] == e.target)
    return np.array(conf, dtype=np.float64), np.array(right, dtype=np.float64)


def summarise(rows: list[dict]) -> list[dict]:
    """Each row's threshold, sentence correction F1, precision and recall, and FPR: what reports keep."""
    return [{"threshold": r["threshold"], "f1": r["sentence_correction"]["f1"],
             "p": r["sentence_correction"]["precision"], "r": r["sentence_correction"]["recall"],
             "fpr": r["false_positive_rate"]} for r in rows]

