"""SIGHAN-style CSC metrics over (source, gold target, predicted target) triples of equal length."""

from __future__ import annotations

from collections.abc import Iterable


def _prf(tp: int, n_pred: int, n_gold: int) -> dict[str, float]:
    p = tp / n_pred if n_pred else 0.0
    r = tp / n_gold if n_gold else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return {"precision": round(p, 4), "recall": round(r, 4), "f1": round(f, 4)}


def csc_metrics(triples: Iterable[tuple[str, str, str]]) -> dict:
    """Strict sentence level (as in SIGHAN/SpellGCN evaluations): a predicted sentence counts for
    detection only if exactly the gold error positions were changed, and for correction only if it
    also equals the gold target. Precision is over sentences the system changed, recall over
    sentences with errors. Character level: over changed positions. Plus the false-positive rate on
    error-free sentences."""
    s = {"det_tp": 0, "cor_tp": 0, "pred": 0, "gold": 0, "clean": 0, "clean_changed": 0}
    c = {"det_tp": 0, "cor_tp": 0, "pred": 0, "gold": 0}
    n = 0
    for src, gold, pred in triples:
        if not (len(src) == len(gold) == len(pred)):
            raise ValueError(f"length mismatch: {src!r} / {gold!r} / {pred!r}")
        n += 1
        gold_pos = {i for i, (a, b) in enumerate(zip(src, gold)) if a != b}
        pred_pos = {i for i, (a, b) in enumerate(zip(src, pred)) if a != b}
        s["pred"] += bool(pred_pos)
        s["gold"] += bool(gold_pos)
        if not gold_pos:
            s["clean"] += 1
            s["clean_changed"] += bool(pred_pos)
        if pred_pos and pred_pos == gold_pos:
            s["det_tp"] += 1
            s["cor_tp"] += pred == gold
        c["pred"] += len(pred_pos)
        c["gold"] += len(gold_pos)
        c["det_tp"] += len(pred_pos & gold_pos)
        c["cor_tp"] += sum(1 for i in pred_pos & gold_pos if pred[i] == gold[i])
    return {
        "sentences": n,
        "sentence_detection": _prf(s["det_tp"], s["pred"], s["gold"]),
        "sentence_correction": _prf(s["cor_tp"], s["pred"], s["gold"]),
        "char_detection": _prf(c["det_tp"], c["pred"], c["gold"]),
        "char_correction": _prf(c["cor_tp"], c["pred"], c["gold"]),
        "false_positive_rate": round(s["clean_changed"] / s["clean"], 4) if s["clean"] else 0.0,
        "counts": {"sentences_with_errors": s["gold"], "sentences_changed": s["pred"], "error_free": s["clean"],
                   "error_free_changed": s["clean_changed"]},
    }
