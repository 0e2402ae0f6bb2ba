"""Masked-LM evidence: would a masked language model's view of a suspect character help where the decoder's own
evidence runs out?

    python benchmarks/masked_evidence.py --mlm RUN/generator \
        --data ../shared/data/csc/lemon_dev/{enc,mec,cot,gam}.tsv runs/dev_split.tsv

The bundle's public stages (prepare, score, decide) give, per file, every error character at a site (is its gold among
all the candidates, as in benchmarks/candidate_recall.py?) and every site whose best candidate has a first-round
probability above 0.05: the decisions the threshold makes. A masked language model (an ``ElectraForMaskedLM`` folder
with its vocab.txt, such as a pretraining run's generator) then reads each of those characters masked, in a window
of 40 characters either side:

- recall: the gold among the masked LM's 10 and 20 most probable characters, over all error characters and over
  those no candidate source proposes;
- separation: for each file, a logistic model of "the best candidate is the right edit", fitted on the other
  files, from the decoder's probability alone and with the masked LM's log-probabilities of the candidate and of the
  character as written (and their difference) added: ROC AUC per file, and the right edits it ranks above 75%
  precision, all files pooled.

Needs torch and transformers (the train extra).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import _checkout  # noqa: F401  (training/ and service/ are imported from the checkout)
import numpy as np
from candidate_recall import gold_views  # type: ignore[import-not-found]  # run as a script

from corrector import Corrector
from training.data.csc_data import read_pairs

WINDOW = 40  # characters either side of the masked one
MIN_P = 0.05  # a site's best candidate above this probability is a decision worth scoring


def decoder_view(fix: Corrector, pairs: list[tuple[str, str]]) -> tuple[list, list]:
    """(error characters: (text, position, gold, gold among all candidates), decisions: (text, position, source,
    best candidate, gold, its first-round probability)) of one file, from the bundle's public stages."""
    errors, decisions = [], []
    for v in gold_views(fix, pairs):
        for s, (t, i, source, gold) in enumerate(zip(v.text, v.pos, v.source, v.gold)):
            if source != gold:
                errors.append((t, i, gold, v.reached(s, v.all_of)))
            if v.best_p[s] > MIN_P:
                best = fix.vocab[int(v.scored.rows.vid[v.best_row[s]])]
                decisions.append((t, i, source, best, gold, float(v.best_p[s])))
    return errors, decisions


class MaskedLM:
    """An ElectraForMaskedLM folder read with torch: log-probabilities at one masked character of a text."""

    def __init__(self, folder: Path, threads: int):
        import torch
        from transformers import ElectraForMaskedLM

        from corrector.text.tokenize import build_tokenizer, read_vocab

        if threads:
            torch.set_num_threads(threads)
        self.torch = torch
        self.model = ElectraForMaskedLM.from_pretrained(folder).eval()
        self.tok = build_tokenizer(folder / "vocab.txt")
        self.vid = read_vocab(folder / "vocab.txt")
        self.mask = self.vid["[MASK]"]

    def logprobs(self, items: list[tuple[str, int]], batch: int = 256) -> list[np.ndarray | None]:
        """For each (text, character index): the log-probabilities there with it masked; None where the character
        is not one token of its own."""
        from corrector.text.tokenize import encode

        torch = self.torch
        out: list[np.ndarray | None] = [None] * len(items)
        seqs = []
        for k, (text, i) in enumerate(items):
            lo = max(0, i - WINDOW)
            enc = encode(self.tok, text[lo : i + WINDOW], 2 * WINDOW + 8)
            if (i - lo) not in enc.char_pos:
                continue
            t = enc.char_pos.index(i - lo)
            ids = list(enc.ids)
            ids[t] = self.mask
            seqs.append((k, ids, t))
        for b in range(0, len(seqs), batch):
            part = seqs[b : b + batch]
            width = max(len(ids) for _, ids, _ in part)
            x = torch.zeros(len(part), width, dtype=torch.long)
            att = torch.zeros_like(x)
            for r, (_, ids, _) in enumerate(part):
                x[r, : len(ids)] = torch.tensor(ids)
                att[r, : len(ids)] = 1
            with torch.no_grad():
                h = self.model.electra(input_ids=x, attention_mask=att).last_hidden_state
                h = h[torch.arange(len(part)), torch.tensor([t for _, _, t in part])]
                logits = self.model.generator_lm_head(self.model.generator_predictions(h)).float()
                lp = torch.log_softmax(logits, -1).numpy()
            for r, (k, _, _) in enumerate(part):
                out[k] = lp[r]
        return out

    def at(self, lp: np.ndarray | None, ch: str) -> float | None:
        return None if lp is None or ch not in self.vid else float(lp[self.vid[ch]])


def fit_logistic(X: np.ndarray, y: np.ndarray, l2: float = 1e-3, iters: int = 100):
    """Logistic regression by Newton's method on standardised features; returns the fitted probability function."""
    mu, sd = X.mean(0), X.std(0) + 1e-9
    Z = np.c_[np.ones(len(X)), (X - mu) / sd]
    w = np.zeros(Z.shape[1])
    ridge = l2 * np.diag(np.r_[0.0, np.ones(Z.shape[1] - 1)])
    for _ in range(iters):
        p = 1 / (1 + np.exp(-Z @ w))
        step = np.linalg.solve((Z * (p * (1 - p))[:, None]).T @ Z + ridge, Z.T @ (p - y) + ridge @ w)
        w -= step
        if np.abs(step).max() < 1e-9:
            break
    return lambda X2: 1 / (1 + np.exp(-(np.c_[np.ones(len(X2)), (X2 - mu) / sd] @ w)))


def roc_auc(y: np.ndarray, score: np.ndarray) -> float:
    """Mann-Whitney AUC, ties counted half."""
    _, inverse, counts = np.unique(score, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)
    ranks = (ends - (counts - 1) / 2.0)[inverse]  # average 1-based rank of each tie group
    pos = int(y.sum())
    return float((ranks[y].sum() - pos * (pos + 1) / 2) / max(pos * (len(y) - pos), 1))


def right_at_precision(y: np.ndarray, score: np.ndarray, precision: float = 0.75) -> int:
    """The most right edits among the top of ``score`` at which the share right is still at least ``precision``."""
    tp = np.cumsum(y[np.argsort(-score, kind="stable")])
    ok = np.flatnonzero(tp / np.arange(1, len(y) + 1) >= precision)
    return int(tp[ok.max()]) if len(ok) else 0


def separation(rows: list[dict], columns: list[str]) -> dict:
    files = list(dict.fromkeys(r["file"] for r in rows))  # in the order given
    f = np.array([r["file"] for r in rows])
    y = np.array([r["right"] for r in rows], dtype=bool)
    X = np.array([[r[c] for c in columns] for r in rows], dtype=np.float64)
    pred = np.zeros(len(rows))
    for name in files:
        test = f == name
        pred[test] = fit_logistic(X[~test], y[~test].astype(np.float64))(X[test])
    return {"auc": {name: round(roc_auc(y[f == name], pred[f == name]), 3) for name in files},
            "right_at_0.75": right_at_precision(y, pred)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mlm", type=Path, required=True, help="an ElectraForMaskedLM folder with its vocab.txt")
    ap.add_argument("--data", type=Path, nargs="+", required=True, help="source<TAB>target files")
    ap.add_argument("--model", default=None, help="bundle directory (default: the bundled default)")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--out", type=Path, default=None, help="write the report as JSON here too")
    a = ap.parse_args()
    fix = Corrector.load(a.model, threads=a.threads)
    mlm = MaskedLM(a.mlm, a.threads)
    recall, rows = {}, []
    print("| file | error chars | gold in the masked LM's top 10 / 20 | none proposes it | of those, in its top 10 / 20 |")
    print("|---|---:|---:|---:|---:|")
    for path in a.data:
        pairs = read_pairs(path)
        errors, decisions = decoder_view(fix, pairs)
        lps = mlm.logprobs([(pairs[t][0], i) for t, i, _, _ in errors])
        rank = np.array([(lp > lp[mlm.vid[g]]).sum() if lp is not None and g in mlm.vid else 1 << 30
                         for lp, (_, _, g, _) in zip(lps, errors)])
        missed = np.array([not inside for _, _, _, inside in errors], dtype=bool)
        r = {"error_chars": len(errors), "top10": float((rank < 10).mean()), "top20": float((rank < 20).mean()),
             "none_proposes": int(missed.sum()), "of_those_top10": int((rank[missed] < 10).sum()),
             "of_those_top20": int((rank[missed] < 20).sum())}
        recall[path.name] = r
        print(f"| {path.name} | {r['error_chars']} | {r['top10']:.1%} / {r['top20']:.1%} | {r['none_proposes']} | "
              f"{r['of_those_top10']} / {r['of_those_top20']} |", flush=True)
        lps = mlm.logprobs([(pairs[t][0], i) for t, i, *_ in decisions])
        for (_, _, src, cand, gold, p), lp in zip(decisions, lps):
            mc, ms = mlm.at(lp, cand), mlm.at(lp, src)
            if mc is None or ms is None:
                continue
            q = min(max(p, 1e-6), 1 - 1e-6)
            rows.append({"file": path.name, "right": cand == gold and src != gold, "p_logit": float(np.log(q / (1 - q))),
                         "mlm_candidate": mc, "mlm_written": ms, "mlm_gain": mc - ms})
    report: dict[str, Any] = {"recall": recall, "decisions": len(rows), "right": int(sum(r["right"] for r in rows)),
              "decoder": separation(rows, ["p_logit"]),
              "decoder_and_masked_lm": separation(rows, ["p_logit", "mlm_candidate", "mlm_written", "mlm_gain"])}
    print(f"\n{report['decisions']} decisions ({report['right']} right edits), each file by a fit on the others:")
    print("| evidence | " + " | ".join(f"AUC {n}" for n in report["decoder"]["auc"]) + " | right edits at 75% precision |")
    print("|---|" + "---:|" * (len(report["decoder"]["auc"]) + 1))
    for key, label in (("decoder", "the decoder's probability"), ("decoder_and_masked_lm", "+ the masked LM")):
        s = report[key]
        print(f"| {label} | " + " | ".join(f"{v:.3f}" for v in s["auc"].values()) + f" | {s['right_at_0.75']} |")
    if a.out:
        a.out.write_text(json.dumps(report, ensure_ascii=False, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
