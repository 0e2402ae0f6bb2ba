"""P(written | intended) as a pretraining corruption table, from the decoder's candidate table.

    python -m training.data.confusion_prior --candidates runs/candidates --vocab runs/data/vocab.txt \\
        --out runs/confusion_prior.npy [--slots 32]

Writes an int32 (vocab_size, slots) array: per token, the ids of the characters written for it in real
errors or that sound or look like it, each repeated in proportion to its weight (-1 pads), so that
pretraining's uniform pick among a row's slots (``training.networks.pretrain --confusion-rate``) draws a
spelling-like corruption the way real errors happen. A character ``a`` written for ``b`` weighs

    count(a written for b in the real training pairs) + PRIOR * sim(a, b) / sum of sim(x, b) over every x,
    sim(a, b) = SOUND * pinyin(a, b)**SHARPNESS + SHAPE * shape(a, b)**SHARPNESS

so the similar-looking and -sounding characters of ``b`` share PRIOR pseudo-observations: real
confusions dominate where there are many, and a character with many homophones (yi, shi) does not
drown them. The counts come from ``training.data.splits.train_pairs`` (never the dev split or a test set).
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import numpy as np

from corrector.evidence.candidates import CandidateTable
from corrector.text.tokenize import read_vocab_list

PRIOR = 3.0  # pseudo-observations shared by the similar characters of each intended one
SOUND = 1.0  # same sound ...
SHAPE = 0.6  # ... weighs more than a look-alike
SHARPNESS = 4  # near-identical readings or glyphs only


def prior_weights(table: CandidateTable) -> dict[str, dict[str, float]]:
    """intended -> {written: weight} over every pair of the table (the table is keyed by what was written)."""
    count: dict[str, dict[str, float]] = defaultdict(dict)
    sim: dict[str, dict[str, float]] = defaultdict(dict)
    for written in table.row:
        sl = table.lookup(written)
        for k in range(sl.start, sl.stop):
            b = table.candidates[k]
            count[b][written] = float(table.count[k])
            sim[b][written] = SOUND * float(table.pinyin[k]) ** SHARPNESS + SHAPE * float(table.shape[k]) ** SHARPNESS
    out: dict[str, dict[str, float]] = {}
    for b in count:
        total = sum(sim[b].values())
        w = {a: count[b][a] + (PRIOR * sim[b][a] / total if total > 0 else 0.0) for a in count[b]}
        out[b] = {a: x for a, x in w.items() if x > 0}
    return out


def apportion(weights: dict[str, float], slots: int) -> list[str]:
    """``slots`` entries, each key as many times as its share of the total weight (largest remainders;
    ties by key, so the result is deterministic). Keys too light for one slot are left out."""
    total = sum(weights.values())
    if total <= 0:
        return []
    quota = {k: slots * w / total for k, w in weights.items()}
    n = {k: int(q) for k, q in quota.items()}
    left = slots - sum(n.values())
    for k in sorted(quota, key=lambda k: (-(quota[k] - n[k]), k))[:left]:
        n[k] += 1
    return [k for k in sorted(n) for _ in range(n[k])]


def build(table: CandidateTable, vocab: list[str], slots: int = 32) -> np.ndarray:
    vid = {t: i for i, t in enumerate(vocab) if len(t) == 1}
    out = np.full((len(vocab), slots), -1, dtype=np.int32)
    for intended, weights in prior_weights(table).items():
        if intended not in vid:
            continue
        row = [vid[a] for a in apportion({a: w for a, w in weights.items() if a in vid}, slots)]
        out[vid[intended], : len(row)] = row
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--candidates", type=Path, required=True, help="candidate table dir (training.evidence.candidates)")
    ap.add_argument("--vocab", type=Path, required=True, help="the networks' vocab.txt")
    ap.add_argument("--out", type=Path, required=True, help=".npy to write")
    ap.add_argument("--slots", type=int, default=32)
    a = ap.parse_args(argv)
    arr = build(CandidateTable.load(a.candidates), read_vocab_list(a.vocab), a.slots)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    np.save(a.out, arr)
    rows = int((arr[:, 0] >= 0).sum())
    meta = {"slots": a.slots, "rows_with_confusions": rows, "prior": PRIOR, "sound": SOUND, "shape": SHAPE,
            "sharpness": SHARPNESS,
            "candidates": str(a.candidates.name)}
    a.out.with_suffix(".json").write_text(json.dumps(meta, indent=1), encoding="utf-8")
    print(f"{rows:,} of {len(arr):,} tokens have spelling-like corruptions → {a.out}")


if __name__ == "__main__":
    main()
