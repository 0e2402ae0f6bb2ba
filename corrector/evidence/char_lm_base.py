"""What every character LM format shares: text to ids, query windows, checked queries, sentence scores.

``corrector.evidence.char_lm`` (the hashed tables, ``char-ngram-backoff-v2``) and ``corrector.evidence.char_lm_nodes``
(the compact node tables) each implement ``logprob``, ``entry`` and ``stored_ngrams`` over their own arrays; the query
conventions are ``char_lm``'s module docstring.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from corrector.evidence.char_lm_vocab import BOS, EOS, PAD, UNK

BLOCK_BITS = 6  # buckets per bucket-base entry: 64 (both formats' hash tables)
MAX_CODEPOINT = 0x110000

IntArray = npt.NDArray[np.int32]
FloatArray = npt.NDArray[np.float32]
U64Array = npt.NDArray[np.uint64]


class CharLMBase:
    """A loaded character n-gram LM: load one with ``CharLM.load(dir)``, whatever its format."""

    path: Path
    meta: dict[str, Any]
    order: int
    vocab_size: int  # ids, specials included
    smoothing: str
    missing_bow: np.float32
    _codepoints: IntArray
    _lut: IntArray | None

    # ------------------------------------------------------------------ text -> ids
    @property
    def lut(self) -> IntArray:
        """Code point -> id table (built on first use; unknown code points -> <unk>)."""
        if self._lut is None:
            lut = np.full(MAX_CODEPOINT, UNK, dtype=np.int32)
            ids = np.arange(self.vocab_size, dtype=np.int32)
            real = self._codepoints >= 0
            lut[self._codepoints[real]] = ids[real]
            self._lut = lut
        return self._lut

    @property
    def codepoints(self) -> IntArray:
        """Code point of every id (-1 for <unk>, <s>, </s>)."""
        return self._codepoints

    def encode(self, text: str) -> IntArray:
        """Ids of the characters of ``text`` (no <s>/</s>); characters outside the vocabulary -> <unk>."""
        cps = np.frombuffer(text.encode("utf-32-le"), dtype="<u4")
        return self.lut[cps]

    def encode_sentence(self, text: str) -> IntArray:
        """``[<s>] + encode(text) + [</s>]``."""
        return np.concatenate(([BOS], self.encode(text), [EOS])).astype(np.int32)

    def windows(self, ids: npt.ArrayLike) -> IntArray:
        """(len(ids)-1, order) query windows predicting ids[1:] from what precedes them, PAD on the left."""
        a = np.asarray(ids, dtype=np.int32)
        padded = np.concatenate((np.full(self.order - 1, PAD, dtype=np.int32), a))
        win = np.lib.stride_tricks.sliding_window_view(padded, self.order)
        return np.ascontiguousarray(win[1:])

    def token_logprobs(self, ids_with_bos_eos: npt.ArrayLike) -> FloatArray:
        """ln P of every id after the first (normally <s> c1 .. cn </s> -> n+1 values)."""
        return self.logprob(self.windows(ids_with_bos_eos))

    def sentence_logprob(self, text: str) -> float:
        return float(self.token_logprobs(self.encode_sentence(text)).sum(dtype=np.float64))

    # ------------------------------------------------------------------ scoring
    def _columns(self, ngrams: npt.ArrayLike) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """The windows checked, as (order, N) columns of ids (column j: the j-th id of every window), and the
        number of real (non-PAD) ids in each window."""
        ng = np.asarray(ngrams)
        n = self.order
        if ng.ndim != 2 or ng.shape[1] != n:
            raise ValueError(f"expected an (N, {n}) array of ids, got shape {ng.shape}")
        if ng.shape[0] == 0:
            return np.zeros((n, 0), dtype=np.int64), np.zeros(0, dtype=np.int64)
        if ng.dtype.kind not in "iu":
            raise ValueError(f"ids must be integers, got {ng.dtype}")
        cols = np.ascontiguousarray(ng.T, dtype=np.int64)
        if cols.min() < PAD or cols.max() >= self.vocab_size:
            raise ValueError(f"ids must lie in [0, {self.vocab_size}) or be PAD ({PAD})")
        pad = cols < 0
        if pad[n - 1].any() or (pad[1:] & ~pad[:-1]).any():
            raise ValueError("PAD may only stand left of the real ids, and the predicted id cannot be PAD")
        return cols, n - pad.sum(axis=0)

    def logprob(self, ngrams: npt.ArrayLike) -> FloatArray:
        """Natural-log P(last id | the previous order-1 ids) for each row of an (N, order) int array."""
        raise NotImplementedError

    def entry(self, ids: npt.ArrayLike) -> tuple[float, float] | None:
        """(ln P, ln backoff) stored for the n-gram ``ids`` (1..order ids), or None if it is not stored."""
        raise NotImplementedError

    def stored_ngrams(self) -> dict[int, tuple[IntArray, FloatArray, FloatArray]]:
        """Every stored n-gram: {order: (ids (M, order), ln P, ln backoff)}."""
        raise NotImplementedError

    # ------------------------------------------------------------------ info
    def size_bytes(self) -> int:
        return int(sum(f.stat().st_size for f in self.path.iterdir() if f.suffix == ".npy"))

    def __repr__(self) -> str:
        return (f"CharLM({self.path}, order={self.order}, smoothing={self.smoothing}, "
                f"vocab={self.vocab_size}, ngrams={self.meta.get('ngrams')})")
