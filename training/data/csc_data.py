"""CSC pairs (``source<TAB>target``) → aligned token ids, labels and batches for fine-tuning."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from corrector.text.tokenize import build_tokenizer, encode_batch, read_vocab


def read_pairs(path: Path, limit: int = 0) -> list[tuple[str, str]]:
    """Pairs of equal length; other lines are skipped."""
    pairs = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) >= 2 and len(parts[0]) == len(parts[1]) and parts[0]:
                pairs.append((parts[0], parts[1]))
                if limit and len(pairs) >= limit:
                    break
    return pairs


@dataclass
class EncodedPairs:
    """Ragged arrays: per pair, source token ids, target token ids and editable mask."""

    src: list[np.ndarray]
    tgt: list[np.ndarray]
    editable: list[np.ndarray]

    def __len__(self) -> int:
        return len(self.src)


ENCODE_BLOCK = 4096  # pairs tokenised at a time: the tokenizer's objects for millions of pairs would not fit in memory


def encode_pairs(pairs: list[tuple[str, str]], vocab_path: Path, max_tokens: int) -> EncodedPairs:
    """Target ids differ from source ids only at editable (single CJK character) tokens whose
    character changed and whose new character is in the vocab. Ids are kept as uint16 (the vocabulary has fewer
    than 65,536 entries), tokenised ``ENCODE_BLOCK`` pairs at a time, so 2M pairs take about 1 GB."""
    tok = build_tokenizer(vocab_path)
    vocab = read_vocab(vocab_path)
    if len(vocab) > np.iinfo(np.uint16).max + 1:  # ids 0 .. len - 1
        raise ValueError(f"{vocab_path}: {len(vocab)} entries do not fit uint16 ids")
    src, tgt, edit = [], [], []
    for start in range(0, len(pairs), ENCODE_BLOCK):
        block = pairs[start : start + ENCODE_BLOCK]
        for (s, t), enc in zip(block, encode_batch(tok, [s for s, _ in block], max_tokens)):
            ids = np.asarray(enc.ids, dtype=np.uint16)
            target = ids.copy()
            pos = np.asarray(enc.char_pos, dtype=np.int32)
            editable = pos >= 0
            for k in np.flatnonzero(editable):
                c = t[pos[k]]
                if c != s[pos[k]] and c in vocab:
                    target[k] = vocab[c]
            src.append(ids)
            tgt.append(target)
            edit.append(editable)
    return EncodedPairs(src, tgt, edit)


def collate(data: EncodedPairs, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    width = max(len(data.src[i]) for i in idx)
    src = np.zeros((len(idx), width), np.int64)
    tgt = np.zeros((len(idx), width), np.int64)
    editable = np.zeros((len(idx), width), bool)
    for r, i in enumerate(idx):
        n = len(data.src[i])
        src[r, :n], tgt[r, :n], editable[r, :n] = data.src[i], data.tgt[i], data.editable[i]
    return src, tgt, editable
