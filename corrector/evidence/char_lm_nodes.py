"""The compact format of the character LM: each n-gram is a node keyed by its parent node and one id.

An n-gram (x1 x2 .. xk) of order k >= 2 is stored as the key ``parent * V + x1``, where ``parent`` is the node
(slot) of its suffix (x2 .. xk) in the order-(k-1) table and V the number of ids; a unigram's node is its id. The
keys of order k lie in [0, N(k-1) * V), ``key_bits`` bits, far fewer than a whole packed n-gram's 64. Each order's
table hashes its keys with a bijection of ``key_bits`` bits: the top ``bucket_bits`` bits of the hash pick a bucket
and the rest (the tag, <= 16 bits) is stored, so that bucket + tag identify the key exactly (no false hits) in one
uint32 word per n-gram::

    word = tag << 16 | prob code << 8 | backoff code      (codes index per-order 256-entry codebooks)

A node's number is its slot in its order's table, which is what the next order's keys use: scoring P(w | h) walks
the n-gram (w), (h1 w), (h2 h1 w) .. and the context (h1), (h2 h1) .. one order at a time, each step one hashed
lookup, as the stored n-grams are closed under suffixes. Per n-gram this is 4 bytes plus about 0.7 for the bucket
offsets, against 8 + 1 for ``char-ngram-backoff-v2`` (``corrector/evidence/char_lm.py``), whose reading and query
conventions (ids, PAD, backoff semantics, the unigram arrays, ``vocab.txt``) it shares.

Files: meta.json (``orders``: per order k >= 2 its ``entries``, ``key_bits``, ``bucket_bits``), vocab.txt,
codepoints.npy, unigram_logprob.npy, unigram_bow.npy, prob_codebook.npy, bow_codebook.npy, and per order k:
``words{k}.npy`` uint32 (N + pad), ``base{k}.npy`` uint32 (first slot of every 64 buckets), ``off{k}.npy`` uint8
(each bucket's start relative to its block's base).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from corrector.evidence.char_lm_base import BLOCK_BITS, CharLMBase, FloatArray, IntArray
from corrector.types import CorrectorError

FORMAT = "char-ngram-nodes-v3"
MIX1 = 0x9E3779B97F4A7C15
MIX2 = 0xBF58476D1CE4E5B9
TAG_BITS = 16  # bits of a word left for the tag
PAD_WORDS = 8  # words after each table, so reading a few slots past a bucket's start never leaves the array
U64 = npt.NDArray[np.uint64]


def mix(keys: npt.ArrayLike, bits: int) -> U64:
    """A bijection of the integers below 2^bits (odd multiplications mod 2^bits and xor-shifts are invertible)."""
    mask = np.uint64((1 << bits) - 1)
    s = np.uint64((bits + 1) // 2)
    h = (np.asarray(keys, dtype=np.uint64) * np.uint64(MIX1)) & mask
    h ^= h >> s
    h = (h * np.uint64(MIX2)) & mask
    h ^= h >> s
    return h


def unmix(h: npt.ArrayLike, bits: int) -> U64:
    """Inverse of ``mix``."""
    mask = np.uint64((1 << bits) - 1)
    s = (bits + 1) // 2
    x = np.asarray(h, dtype=np.uint64).copy()
    for _ in range(2):
        y = x.copy()  # undo x ^= x >> s: y = x ^ (x >> s) ^ (x >> 2s) ^ ...
        t = s
        while t < bits:
            y ^= x >> np.uint64(t)
            t += s
        x = y
        x = (x * np.uint64(pow(MIX2 if _ == 0 else MIX1, -1, 1 << bits))) & mask
    return x


class Order:
    """One order's table: find node keys, read their codes."""

    def __init__(self, k: int, spec: dict[str, Any], words: np.ndarray, base: np.ndarray, off: np.ndarray):
        self.k = k
        self.entries = int(spec["entries"])
        self.key_bits = int(spec["key_bits"])
        self.bucket_bits = int(spec["bucket_bits"])
        self.tag_bits = self.key_bits - self.bucket_bits
        if not 0 <= self.tag_bits <= TAG_BITS or self.bucket_bits < 1:
            raise CorrectorError(f"order {k}: unsupported layout {self.key_bits}/{self.bucket_bits}")
        self.words = np.asarray(words)
        self.base = np.asarray(base)
        self.off = np.asarray(off)
        self._shift = np.uint64(self.tag_bits)
        self._tag_mask = np.uint64((1 << self.tag_bits) - 1)

    def starts(self, bucket: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        return self.base.take(bucket >> BLOCK_BITS).astype(np.int64) + self.off.take(bucket)

    def find(self, keys: U64) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.int64]]:
        """(found, slot) of each node key."""
        h = mix(keys, self.key_bits)
        bk = (h >> self._shift).astype(np.int64)
        tag = (h & self._tag_mask).astype(np.uint32)
        s = self.starts(bk)
        length = self.starts(bk + 1) - s
        w = self.words
        sh = np.uint32(16)
        m0 = ((w.take(s) >> sh) == tag) & (length > 0)
        m1 = ((w.take(s + 1) >> sh) == tag) & (length > 1)
        hit = m0 | m1
        idx = s + m1
        rest = np.flatnonzero(~hit & (length > 2))
        j = 2
        while rest.size:
            f = (w.take(s[rest] + j) >> sh) == tag[rest]
            r = rest[f]
            hit[r] = True
            idx[r] = s[r] + j
            j += 1
            rest = rest[~f]
            rest = rest[length[rest] > j]
        return hit, idx


class NodeCharLM(CharLMBase):
    """A character LM in the compact node format (module docstring); scores like ``char_lm.CharLM``."""

    def __init__(self, path: Path, meta: dict[str, Any], arrays: dict[str, np.ndarray]):  # noqa: D107
        self.path = path
        self.meta = meta
        self.order = int(meta["order"])
        self.vocab_size = int(meta["vocab_size"])
        self.smoothing = str(meta["smoothing"])
        self.missing_bow = np.float32(meta["missing_bow"])
        self.quantised = True
        self._prob_cb = np.ascontiguousarray(arrays["prob_codebook"], dtype=np.float32)
        self._bow_cb = np.ascontiguousarray(arrays["bow_codebook"], dtype=np.float32)
        self._uni_p = np.asarray(arrays["unigram_logprob"], dtype=np.float32)
        self._uni_b = np.asarray(arrays["unigram_bow"], dtype=np.float32)
        self._codepoints = np.asarray(arrays["codepoints"], dtype=np.int32)
        self._orders = {k: Order(k, meta["orders"][str(k)], arrays[f"words{k}"], arrays[f"base{k}"],
                                 arrays[f"off{k}"]) for k in range(2, self.order + 1)}
        self._lut: IntArray | None = None

    @classmethod
    def load_dir(cls, p: Path, meta: dict[str, Any], mmap: bool = True) -> NodeCharLM:
        names = ["unigram_logprob", "unigram_bow", "codepoints", "prob_codebook", "bow_codebook"]
        names += [f"{kind}{k}" for k in range(2, int(meta["order"]) + 1) for kind in ("words", "base", "off")]
        arrays: dict[str, np.ndarray] = {}
        for name in names:
            f = p / f"{name}.npy"
            if not f.is_file():
                raise CorrectorError(f"character LM at {p} is incomplete: {f.name} is missing")
            arrays[name] = np.load(f, mmap_mode="r" if mmap else None, allow_pickle=False)
        return cls(p, meta, arrays)

    def _value(self, is_prob: bool, k: int, slots: npt.NDArray[np.int64]) -> FloatArray:
        w = self._orders[k].words.take(slots)
        if is_prob:
            return self._prob_cb[k].take((w >> np.uint32(8)) & np.uint32(0xFF))
        return self._bow_cb[k].take(w & np.uint32(0xFF))

    def _extend(self, k: int, keys: U64, ids: npt.NDArray[np.int64]) -> U64:
        """A node's key: the slot of its suffix (the order below) times V, plus its first id."""
        return keys * np.uint64(self.vocab_size) + ids.astype(np.uint64)

    def _find(self, k: int, keys: U64) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.int64], U64]:
        found, idx = self._orders[k].find(keys)
        return found, idx, idx.astype(np.uint64)  # the next order's keys start from the slot

    def _node(self, ids: list[int]) -> int | None:
        """The slot of the n-gram ``ids`` (order >= 2) in its table, or None."""
        node = ids[-1]
        for k in range(2, len(ids) + 1):
            found, idx = self._orders[k].find(np.array([node * self.vocab_size + ids[-k]], dtype=np.uint64))
            if not found[0]:
                return None
            node = int(idx[0])
        return node

    def entry(self, ids: npt.ArrayLike) -> tuple[float, float] | None:
        g = np.asarray(ids, dtype=np.int64).ravel()
        k = g.shape[0]
        if not 1 <= k <= self.order or g.min() < 0 or g.max() >= self.vocab_size:
            raise ValueError(f"an n-gram of 1..{self.order} ids in [0, {self.vocab_size}) expected")
        if k == 1:
            return float(self._uni_p[g[0]]), float(self._uni_b[g[0]])
        node = self._node(g.tolist())
        if node is None:
            return None
        at = np.array([node], dtype=np.int64)
        return float(self._value(True, k, at)[0]), float(self._value(False, k, at)[0])

    def stored_ngrams(self) -> dict[int, tuple[IntArray, FloatArray, FloatArray]]:
        """Every stored n-gram, decoded from the tables (each order in slot order)."""
        V = self.vocab_size
        out: dict[int, tuple[IntArray, FloatArray, FloatArray]] = {
            1: (np.arange(V, dtype=np.int32)[:, None], self._uni_p.copy(), self._uni_b.copy())}
        ids_below = np.arange(V, dtype=np.int32)[:, None]
        for k in range(2, self.order + 1):
            t = self._orders[k]
            slots = np.arange(t.entries, dtype=np.int64)
            starts = t.starts(np.arange((1 << t.bucket_bits) + 1, dtype=np.int64))
            bucket = (np.searchsorted(starts, slots, side="right") - 1).astype(np.uint64)
            tag = (np.asarray(t.words[: t.entries]) >> np.uint32(16)).astype(np.uint64)
            key = unmix((bucket << np.uint64(t.tag_bits)) | tag, t.key_bits)
            parent, first = (key // np.uint64(V)).astype(np.int64), (key % np.uint64(V)).astype(np.int32)
            ids = np.concatenate((first[:, None], ids_below[parent]), axis=1)
            out[k] = (ids, self._value(True, k, slots), self._value(False, k, slots))
            ids_below = ids
        return out
