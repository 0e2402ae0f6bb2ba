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


def pack(ids: npt.ArrayLike, base: int) -> U64Array:
    """The packed keys of (M, k) ids, first id most significant: sum_j ids_j * base^(k-1-j) (the builder's keys)."""
    a = np.asarray(ids)
    key = np.zeros(a.shape[0], dtype=np.uint64)
    for j in range(a.shape[1]):
        key = key * np.uint64(base) + a[:, j].astype(np.uint64)
    return key


def unpack(keys: U64Array, k: int, base: int) -> IntArray:
    """The (M, k) ids of packed k-gram keys (``pack``'s inverse)."""
    B = np.uint64(base)
    return np.stack([(keys // B ** np.uint64(k - 1 - j)) % B for j in range(k)], axis=1).astype(np.int32)


class CharLMBase:
    """A loaded character n-gram LM: load one with ``CharLM.load(dir)``, whatever its format."""

    path: Path
    meta: dict[str, Any]
    order: int
    vocab_size: int  # ids, specials included
    smoothing: str
    missing_bow: np.float32
    _uni_p: FloatArray  # ln P of every id
    _uni_b: FloatArray  # ln backoff of every id
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
        """Natural-log P(last id | the previous order-1 ids) for each row of an (N, order) int array.

        PAD (-1) marks "no token" and may only stand left of the real ids (see ``char_lm``'s module docstring).
        Lookups go up one order at a time and only where they can succeed: the stored n-grams are closed
        under prefixes and suffixes, so (h_k .. h_1 w) can only exist if (h_k-1 .. h_1 w) and the
        context (h_k .. h_1) do. Each step prepends one id to the n-gram found so far and to the context
        (``_extend``), in the format's own keys. Result = ln P of the longest match + the ln backoffs of the
        contexts longer than the match's context, kept as ``cum`` (sum of all context backoffs seen) minus
        ``below`` (the part up to the match's own context).
        """
        n = self.order
        cols, avail = self._columns(ngrams)
        N = cols.shape[1]
        if N == 0:
            return np.zeros(0, dtype=np.float32)
        best = self._uni_p.take(cols[n - 1])
        if n < 2:
            return best
        h1_ok = avail >= 2
        cum = np.where(h1_ok, self._uni_b.take(np.maximum(cols[n - 2], 0)), np.float32(0)).astype(np.float32)
        below = np.zeros(N, dtype=np.float32)
        sb = self.missing_bow != 0
        ng_ok = np.ones(N, dtype=bool)
        ctx_ok = h1_ok
        g = cols[n - 1].astype(np.uint64)  # the longest n-gram found so far ending in the predicted id (its key)
        c = np.maximum(cols[n - 2], 0).astype(np.uint64)  # the context found so far
        for k in range(2, n + 1):
            need_g = np.flatnonzero(ng_ok & ctx_ok & (avail >= k))
            q = self._extend(k, g.take(need_g), cols[n - k].take(need_g))
            if k < n:
                ctx_valid = avail >= k + 1
                need_c = np.flatnonzero(ctx_ok & ctx_valid)
                q = np.concatenate((q, self._extend(k, c.take(need_c), cols[n - 1 - k].take(need_c))))
            found, idx, key = self._find(k, q)
            n_g = need_g.shape[0]
            fg = found[:n_g]
            r = need_g[fg]
            best[r] = self._value(True, k, idx[:n_g][fg])
            below[r] = cum[r]
            g[r] = key[:n_g][fg]
            ng_ok = np.zeros(N, dtype=bool)
            ng_ok[r] = True
            if k < n:
                fc = found[n_g:]
                r = need_c[fc]
                if sb:  # every valid context backs off, stored or not
                    cum[ctx_valid] += self.missing_bow
                    cum[r] += self._value(False, k, idx[n_g:][fc]) - self.missing_bow
                else:
                    cum[r] += self._value(False, k, idx[n_g:][fc])
                c[r] = key[n_g:][fc]
                ctx_ok = np.zeros(N, dtype=bool)
                ctx_ok[r] = True
        return best + (cum - below)

    def _extend(self, k: int, keys: U64Array, ids: npt.NDArray[np.int64]) -> U64Array:
        """The keys of the order-``k`` n-grams made by putting ``ids`` before the order-(k-1) n-grams ``keys``."""
        raise NotImplementedError

    def _find(self, k: int, keys: U64Array) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.int64], U64Array]:
        """(found, table index, the key the next order extends) of each order-``k`` key."""
        raise NotImplementedError

    def _value(self, is_prob: bool, k: int, ix: npt.NDArray[np.int64]) -> FloatArray:
        """ln P (is_prob) or ln backoff of table entries ``ix`` of order ``k``."""
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
