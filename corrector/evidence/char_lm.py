"""Character n-gram language model: memory-mapped backoff tables scored with vectorised numpy.

Written by ``python -m training.evidence.char_lm``; read here with numpy only (nothing is loaded at import).

Files in an LM directory::

    meta.json              order, smoothing, pruning, sizes, held-out perplexity, hash parameters
    vocab.txt              id, token (U+XXXX for whitespace / unprintable), training count
    codepoints.npy         int32 (V,)  code point of each id; -1 for <unk>, <s>, </s>
    unigram_logprob.npy    float32 (V,) ln P(w)        (<s> is never predicted: -99)
    unigram_bow.npy        float32 (V,) ln backoff(w)
    table.npy              uint64 (E+4,) one word per stored n-gram of order 2..N, grouped by hash bucket:
                           (low 48 bits of h) << 16 | prob code << 8 | backoff code, where h = ``mix(key)``
                           of the packed n-gram (``pack``/``key_offsets``); then padding words (0).  ``mix`` is a
                           bijection and the bucket is the top ``hash_bits`` (>= 16) bits of h, so bucket + the
                           stored 48 bits identify the n-gram exactly: no false hits.
    bucket_base.npy        uint32 (nb/64+1,) first entry of every block of 64 buckets
    bucket_off.npy         uint8 (nb+1,)  start of each bucket relative to its block's base
    prob_codebook.npy      float32 (N+1, 256) per-order code -> ln P(w | h) (rows 0 and 1 unused)
    bow_codebook.npy       float32 (N+1, 256) per-order code -> ln backoff(h w); code 0 is exactly 0
    (unquantised builds, ``--quant 0``, have prob.npy and bow.npy, float32 (E+4,), aligned with table.npy)

Ids: 0 = <unk>, 1 = <s>, 2 = </s>, 3.. = characters by falling training frequency.

Query convention (``logprob``): each row is a window of ``order`` ids, the last one predicted from the ones
before it.  Positions with no token are ``PAD`` (-1) and may only stand on the left, so a sentence start is
written ``[PAD, PAD, <s>, c1, c2]`` = ln P(c2 | <s> c1) for order 5, and the first character is
``[PAD, PAD, PAD, <s>, c1]`` = ln P(c1 | <s>).  Nothing precedes <s>; a PAD is "no context", never a token.
The probability is the standard backoff one (ARPA semantics): the longest stored n-gram that ends in the
predicted id gives ln P, plus the ln backoff weights of every longer (non-PAD) context that was not matched;
a context missing from the table has weight ``meta["missing_bow"]`` (0 for Kneser-Ney, ln 0.4 for stupid
backoff).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from corrector.evidence.char_lm_base import (
    BLOCK_BITS,
    MAX_CODEPOINT,
    CharLMBase,
    FloatArray,
    IntArray,
    U64Array,
    unpack,
)
from corrector.evidence.char_lm_vocab import BOS, EOS, N_SPECIALS, PAD, SPECIALS, UNK, token_name
from corrector.types import CorrectorError

__all__ = ["BLOCK_BITS", "BOS", "EOS", "MAX_CODEPOINT", "N_SPECIALS", "PAD", "SPECIALS", "UNK", "CharLM", "CharLMBase",
           "FloatArray", "IntArray", "key_offsets", "token_name"]

FORMAT = "char-ngram-backoff-v2"
MIX1 = np.uint64(0x9E3779B97F4A7C15)
MIX2 = np.uint64(0xBF58476D1CE4E5B9)
PROBE = 4  # bucket slots read for every query when bucket lengths are checked
STORED_BITS = 48  # bits of h kept in a table word; the bucket (top hash_bits >= 64 - 48) gives the rest



def key_offsets(order: int, base: int) -> list[int]:
    """Offset added to the packed key of each order so that all orders share one key space.

    A k-gram (i_1 .. i_k) packs as sum_j i_j * B^(k-j) (first id most significant) + offset[k].  Order
    ``order`` uses [0, B^order), order ``order-1`` the next B^(order-1) values, and so on down to 2.
    Python ints: exact. Requires sum_{k=2..order} B^k <= 2^64.
    """
    offs = [0] * (order + 1)
    acc = 0
    for k in range(order, 1, -1):
        offs[k] = acc
        acc += base**k
    if acc > 2**64:
        raise ValueError(f"order {order} with {base} ids does not fit 64-bit keys")
    return offs


def mix(keys: U64Array) -> U64Array:
    """A bijection of uint64 (odd multiplications and xor-shifts are invertible) that spreads the keys."""
    h = np.asarray(keys, dtype=np.uint64) * MIX1
    h ^= h >> np.uint64(32)
    h *= MIX2
    h ^= h >> np.uint64(29)
    return h


def unmix(h: U64Array) -> U64Array:
    """Inverse of ``mix``."""
    x = np.asarray(h, dtype=np.uint64).copy()
    x ^= (x >> np.uint64(29)) ^ (x >> np.uint64(58))
    x *= np.uint64(pow(int(MIX2), -1, 2**64))
    x ^= x >> np.uint64(32)
    x *= np.uint64(pow(int(MIX1), -1, 2**64))
    return x


class CharLM(CharLMBase):
    """A loaded character n-gram LM. ``CharLM.load(dir)`` memory-maps the arrays; scoring is batched numpy."""

    def __init__(self, path: Path, meta: dict[str, Any], arrays: dict[str, np.ndarray]):
        self.path = path
        self.meta = meta
        self.order: int = int(meta["order"])
        self.vocab_size: int = int(meta["vocab_size"])  # ids, specials included
        self.smoothing: str = str(meta["smoothing"])
        self.missing_bow = np.float32(meta["missing_bow"])
        self._table: U64Array = np.asarray(arrays["table"])
        self._base = np.asarray(arrays["bucket_base"])
        self._off = np.asarray(arrays["bucket_off"])
        self._shift = np.uint64(64 - int(meta["hash_bits"]))
        self._guarded = bool(meta.get("guarded", False))
        self._guard = 1 << (int(meta["hash_bits"]) - 16)
        self.quantised = "prob" not in arrays
        if self.quantised:
            self._prob_cb = np.ascontiguousarray(arrays["prob_codebook"], dtype=np.float32)
            self._bow_cb = np.ascontiguousarray(arrays["bow_codebook"], dtype=np.float32)
        else:
            self._prob = np.asarray(arrays["prob"])
            self._bow = np.asarray(arrays["bow"])
        self._uni_p = np.asarray(arrays["unigram_logprob"], dtype=np.float32)
        self._uni_b = np.asarray(arrays["unigram_bow"], dtype=np.float32)
        self._codepoints = np.asarray(arrays["codepoints"], dtype=np.int32)
        if int(meta["block_bits"]) != BLOCK_BITS or not 64 - STORED_BITS <= int(meta["hash_bits"]) <= 40:
            raise CorrectorError(f"{path}: unsupported hash layout {meta['hash_bits']}/{meta['block_bits']}")
        offs = key_offsets(self.order, self.vocab_size)
        self._offs = [np.uint64(o) for o in offs]
        self._mults = [np.uint64(self.vocab_size**j) for j in range(self.order)]
        self._lut: IntArray | None = None

    # ------------------------------------------------------------------ loading
    @classmethod
    def load(cls, path: str | Path, mmap: bool = True) -> CharLMBase:
        p = Path(path)
        if p.suffix in (".arpa", ".klm", ".bin") or p.name.endswith(".arpa.gz"):
            from corrector.evidence.char_lm_kenlm import KenLMCharLM

            return KenLMCharLM.load(p)  # type: ignore[return-value]
        meta_path = p / "meta.json"
        if not meta_path.is_file():
            raise CorrectorError(f"no character LM at {p} (missing meta.json)")
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        from corrector.evidence.char_lm_nodes import FORMAT as NODES

        if meta.get("format") == NODES:
            from corrector.evidence.char_lm_nodes import NodeCharLM

            return NodeCharLM.load_dir(p, meta, mmap)
        if meta.get("format") != FORMAT:
            raise CorrectorError(f"{meta_path}: LM format {meta.get('format')!r}, this reader reads {FORMAT!r} and "
                                 f"{NODES!r}; rebuild it with python -m training.evidence.char_lm")
        names: tuple[str, ...] = ("table", "bucket_base", "bucket_off", "unigram_logprob", "unigram_bow",
                                  "codepoints")
        names += ("prob", "bow") if (p / "prob.npy").is_file() else ("prob_codebook", "bow_codebook")
        arrays: dict[str, np.ndarray] = {}
        for name in names:
            f = p / f"{name}.npy"
            if not f.is_file():
                raise CorrectorError(f"character LM at {p} is incomplete: {f.name} is missing")
            arrays[name] = np.load(f, mmap_mode="r" if mmap else None, allow_pickle=False)
        return cls(p, meta, arrays)

    # ------------------------------------------------------------------ text -> ids
    # ------------------------------------------------------------------ scoring
    def _starts(self, bucket: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        return self._base.take(bucket >> BLOCK_BITS).astype(np.int64) + self._off.take(bucket)

    def _lookup(self, q: U64Array) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.int64]]:
        """Find packed keys: (found, table index)."""
        return self._lookup_guarded(q) if self._guarded else self._lookup_bounded(q)

    def _lookup_guarded(self, q: U64Array) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.int64]]:
        """Without reading bucket ends. A table word carries the low ``hash_bits - 16`` bits of its bucket
        (inside the 48 stored bits), and the writer checked (meta ``guarded``) that the slots read from any
        bucket's start on lie within ``2^(hash_bits-16)`` buckets of it: so a word from another bucket never
        equals the query's tag, and a word whose bucket bits differ ends the bucket."""
        h = mix(q)
        bk = (h >> self._shift).view(np.int64)
        tag = h << np.uint64(64 - STORED_BITS)
        s = self._starts(bk)
        t = self._table
        hi = np.uint64(((1 << STORED_BITS) - 1) << (64 - STORED_BITS))
        m0 = (t.take(s) & hi) == tag
        w1 = t.take(s + 1)
        m1 = (w1 & hi) == tag
        hit = m0 | m1
        idx = s + m1
        bsh = np.uint64(80 - (64 - int(self._shift)))  # word bits [80 - hash_bits, 64) = low bucket bits
        bmask = np.int64(self._guard - 1)
        rest = np.flatnonzero(~hit & ((w1 >> bsh).view(np.int64) == (bk & bmask)))
        j = 2
        while rest.size:
            w = t.take(s[rest] + j)
            f = (w & hi) == tag[rest]
            r = rest[f]
            hit[r] = True
            idx[r] = s[r] + j
            j += 1
            rest = rest[~f & ((w >> bsh).view(np.int64) == (bk[rest] & bmask))]
        return hit, idx

    def _lookup_bounded(self, q: U64Array) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.int64]]:
        """The first ``PROBE`` slots of each key's bucket are read for every query (masked by the bucket's
        length), the rest of the (rare) longer buckets only for what is still unresolved."""
        h = mix(q)
        bk = (h >> self._shift).view(np.int64)  # < 2^40
        tag = h << np.uint64(64 - STORED_BITS)
        s = self._starts(bk)
        length = self._starts(bk + 1) - s
        hi = np.uint64(((1 << STORED_BITS) - 1) << (64 - STORED_BITS))
        t = self._table
        m0 = ((t.take(s) & hi) == tag) & (length > 0)
        m1 = ((t.take(s + 1) & hi) == tag) & (length > 1)
        m2 = ((t.take(s + 2) & hi) == tag) & (length > 2)
        m3 = ((t.take(s + 3) & hi) == tag) & (length > 3)
        hit = m0 | m1 | m2 | m3
        idx = s + m1 + m2.view(np.int8) * np.int8(2) + m3.view(np.int8) * np.int8(3)
        rest = np.flatnonzero(length > PROBE)
        if rest.size:
            rest = rest[~hit[rest]]
            j = PROBE
            while rest.size:
                f = (t.take(s[rest] + j) & hi) == tag[rest]
                r = rest[f]
                hit[r] = True
                idx[r] = s[r] + j
                j += 1
                rest = rest[~f]
                rest = rest[length[rest] > j]
        return hit, idx

    def _value(self, is_prob: bool, k: int, ix: npt.NDArray[np.int64]) -> FloatArray:
        if not self.quantised:
            return (self._prob if is_prob else self._bow).take(ix)
        w = self._table.take(ix)
        if is_prob:
            return self._prob_cb[k].take((w >> np.uint64(8)) & np.uint64(0xFF))
        return self._bow_cb[k].take(w & np.uint64(0xFF))

    def _extend(self, k: int, keys: U64Array, ids: npt.NDArray[np.int64]) -> U64Array:
        """A packed n-gram's key: its first id is the most significant digit."""
        return keys + ids.astype(np.uint64) * self._mults[k - 1]

    def _find(self, k: int, keys: U64Array) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.int64], U64Array]:
        found, idx = self._lookup(keys + self._offs[k])
        return found, idx, keys

    def entry(self, ids: npt.ArrayLike) -> tuple[float, float] | None:
        """(ln P, ln backoff) stored for the n-gram ``ids`` (1..order ids), or None if it is not stored.
        For inspection and tests; score with ``logprob``."""
        g = np.asarray(ids, dtype=np.int64).ravel()
        k = g.shape[0]
        if not 1 <= k <= self.order or g.min() < 0 or g.max() >= self.vocab_size:
            raise ValueError(f"an n-gram of 1..{self.order} ids in [0, {self.vocab_size}) expected")
        if k == 1:
            return float(self._uni_p[g[0]]), float(self._uni_b[g[0]])
        key = sum(int(x) * self.vocab_size ** (k - 1 - i) for i, x in enumerate(g.tolist())) + int(self._offs[k])
        found, idx = self._lookup(np.array([key], dtype=np.uint64))
        if not found[0]:
            return None
        return float(self._value(True, k, idx)[0]), float(self._value(False, k, idx)[0])

    def codebooks(self) -> tuple[np.ndarray, np.ndarray]:
        """(probability, backoff) codebooks of a quantised model, one row of 256 per order."""
        if not self.quantised:
            raise ValueError(f"{self.path}: the model stores float32 values, not codes")
        return self._prob_cb, self._bow_cb

    def stored_ngrams(self) -> dict[int, tuple[IntArray, FloatArray, FloatArray]]:
        """Every stored n-gram, decoded from the table: {order: (ids (M, order), ln P, ln backoff)}, each
        order sorted by packed key. For export and inspection (reads the whole table)."""
        n, V = self.order, self.vocab_size
        out: dict[int, tuple[IntArray, FloatArray, FloatArray]] = {
            1: (np.arange(V, dtype=np.int32)[:, None], self._uni_p.copy(), self._uni_b.copy())}
        e = int(self.meta["entries"])
        hb = 64 - int(self._shift)
        nb = 1 << hb
        starts = self._starts(np.arange(nb + 1, dtype=np.int64))
        bucket = (np.searchsorted(starts, np.arange(e), side="right") - 1).astype(np.uint64)
        words = self._table[:e]
        low = (words >> np.uint64(64 - STORED_BITS)) & np.uint64((1 << (64 - hb)) - 1)
        keys = unmix((bucket << np.uint64(64 - hb)) | low)
        ix = np.arange(e)
        for k in range(2, n + 1):
            lo = self._offs[k]
            sel = np.flatnonzero((keys >= lo) & (keys - lo < np.uint64(V**k)))
            packed = keys[sel] - lo
            srt = np.argsort(packed)
            sel, packed = sel[srt], packed[srt]
            out[k] = (unpack(packed, k, V), self._value(True, k, ix[sel]), self._value(False, k, ix[sel]))
        return out

