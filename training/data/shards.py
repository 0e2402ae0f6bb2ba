"""Streams of token windows from the shards written by ``training.data.prepare``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from corrector.text.tokenize import SPECIAL_IDS, read_vocab_list


class TokenWindows:
    """Random windows of ``seq_len`` tokens: [CLS] + tokens from a sentence start (sentences packed,
    each followed by [SEP]). Sampling is driven by the caller's numpy Generator, so resuming the
    generator's state resumes the data order exactly."""

    def __init__(self, data_dir: Path, split: str, seq_len: int):
        self.tokens = np.memmap(data_dir / f"{split}.bin", dtype=np.uint16, mode="r")
        self.starts = np.load(data_dir / f"{split}_starts.npy")
        self.seq_len = seq_len
        if len(self.starts) == 0:
            raise ValueError(f"{data_dir}/{split}.bin holds no sentences")

    def batch(self, rng: np.random.Generator, batch_size: int) -> np.ndarray:
        out = np.zeros((batch_size, self.seq_len), dtype=np.int64)
        out[:, 0] = SPECIAL_IDS["[CLS]"]
        picks = rng.integers(0, len(self.starts), size=batch_size)
        n = len(self.tokens)
        for row, i in enumerate(picks):
            s = int(self.starts[i])
            window = self.tokens[s : min(n, s + self.seq_len - 1)]
            out[row, 1 : 1 + len(window)] = window
        return out


def load_vocab_list(data_dir: Path) -> list[str]:
    return read_vocab_list(data_dir / "vocab.txt")


def load_meta(data_dir: Path) -> dict:
    return json.loads((data_dir / "meta.json").read_text(encoding="utf-8"))
