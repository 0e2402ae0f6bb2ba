"""Character n-gram language model: memory-mapped backoff tables scored with vectorised numpy.

Written by ``python -m training.char_lm``; read here with numpy only (nothing is loaded at import).

Files in an LM directory::

    meta.json              order, smoothing, pruning, sizes, held-out perplexity, hash parameters
    vocab.txt              id, token (U+XXXX for whitespace / unprintable), training count
    codepoints.npy         int32 (V,)  code point of each id; -1 for <unk>, <s>, </s>
    unigram_logprob.npy    float32 (V,) ln P(w)        (<s> is never predicted: -99)
    unigram_bow.npy        float32 (V,) ln backoff(w)
    keys.npy               uint64 (E,)  every stored n-gram of order 2..N, packed (see ``pack``), grouped by bucket
    bucket_offsets.npy     uint32 (nb+1,) entries of bucket b are keys[offsets[b]:offsets[b+1]]
    prob_q.npy, bow_q.npy  uint8 (E,)   quantised ln P(w | h) and ln backoff(h w)
    prob_codebook.npy      float32 (N+1, 256) per-order code -> value (rows 0 and 1 unused)
    bow_codebook.npy       float32 (N+1, 256)
    (unquantised builds have prob.npy, bow.npy float32 (E,) instead of the four files above)

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

from .types import CorrectorError

PAD = -1
UNK, BOS, EOS = 0, 1, 2
SPECIALS = ("<unk>", "<s>", "</s>")
N_SPECIALS = len(SPECIALS)
FORMAT = "char-ngram-backoff-v1"
HASH_MULT = np.uint64(0xBF58476D1CE4E5B9)
MAX_CODEPOINT = 0x110000

IntArray = npt.NDArray[np.int32]
FloatArray = npt.NDArray[np.float32]
U64Array = npt.NDArray[np.uint64]


def key_offsets(order: int, base: int) -> list[int]:
    """Offset added to the packed key of each order so that all orders share one key space.

    Order ``order`` uses [0, B^order), order ``order-1`` the next B^(order-1) values, and so on down to 2.
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


def bucket_of(keys: U64Array, n_buckets: int) -> npt.NDArray[np.int64]:
    """Bucket of each packed key: a 64-bit mix, then its top 32 bits scaled onto [0, n_buckets)."""
    k = np.asarray(keys, dtype=np.uint64)
    h = (k ^ (k >> np.uint64(29))) * HASH_MULT
    h ^= h >> np.uint64(32)
    h = h * HASH_MULT
    return (((h >> np.uint64(32)) * np.uint64(n_buckets)) >> np.uint64(32)).astype(np.int64)


class CharLM:
    """A loaded character n-gram LM. ``CharLM.load(dir)`` memory-maps the arrays; scoring is batched numpy."""

    def __init__(self, path: Path, meta: dict[str, Any], arrays: dict[str, np.ndarray]):
        self.path = path
        self.meta = meta
        self.order: int = int(meta["order"])
        self.vocab_size: int = int(meta["vocab_size"])  # ids, specials included
        self.smoothing: str = str(meta["smoothing"])
        self.missing_bow = np.float32(meta["missing_bow"])
        self._keys: U64Array = np.asarray(arrays["keys"])
        self._offsets = np.asarray(arrays["bucket_offsets"])
        self._n_buckets = int(self._offsets.shape[0] - 1)
        self.quantised = "prob_q" in arrays
        if self.quantised:
            self._prob_q = np.asarray(arrays["prob_q"])
            self._bow_q = np.asarray(arrays["bow_q"])
            self._prob_cb = np.ascontiguousarray(arrays["prob_codebook"], dtype=np.float32).ravel()
            self._bow_cb = np.ascontiguousarray(arrays["bow_codebook"], dtype=np.float32).ravel()
        else:
            self._prob = np.asarray(arrays["prob"])
            self._bow = np.asarray(arrays["bow"])
        self._uni_p = np.asarray(arrays["unigram_logprob"], dtype=np.float32)
        self._uni_b = np.asarray(arrays["unigram_bow"], dtype=np.float32)
        self._codepoints = np.asarray(arrays["codepoints"], dtype=np.int32)
        self._max_bucket = int(meta["max_bucket"])
        self._first_probe = min(int(meta.get("first_probe", 4)), self._max_bucket)
        offs = key_offsets(self.order, self.vocab_size)
        self._offs = [np.uint64(o) for o in offs]
        self._mults = [np.uint64(self.vocab_size**j) for j in range(self.order)]
        self._lut: IntArray | None = None

    # ------------------------------------------------------------------ loading
    @classmethod
    def load(cls, path: str | Path, mmap: bool = True) -> CharLM:
        p = Path(path)
        if p.suffix in (".arpa", ".klm", ".bin") or p.name.endswith(".arpa.gz"):
            from .char_lm_kenlm import KenLMCharLM

            return KenLMCharLM.load(p)  # type: ignore[return-value]
        meta_path = p / "meta.json"
        if not meta_path.is_file():
            raise CorrectorError(f"no character LM at {p} (missing meta.json)")
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        if meta.get("format") != FORMAT:
            raise CorrectorError(f"{meta_path}: unknown LM format {meta.get('format')!r}, expected {FORMAT!r}")
        names: tuple[str, ...] = ("keys", "bucket_offsets", "unigram_logprob", "unigram_bow", "codepoints")
        if (p / "prob.npy").is_file():
            names += ("prob", "bow")
        else:
            names += ("prob_q", "bow_q", "prob_codebook", "bow_codebook")
        arrays: dict[str, np.ndarray] = {}
        for name in names:
            f = p / f"{name}.npy"
            if not f.is_file():
                raise CorrectorError(f"character LM at {p} is incomplete: {f.name} is missing")
            arrays[name] = np.load(f, mmap_mode="r" if mmap else None, allow_pickle=False)
        return cls(p, meta, arrays)

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
    def _lookup(self, q: U64Array) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.int64]]:
        """Find packed keys: (found, entry index). Probes the first few slots of each bucket for all
        queries, then the rest of the (rare) longer buckets only for what is still unresolved."""
        found = np.zeros(q.shape[0], dtype=bool)
        idx = np.zeros(q.shape[0], dtype=np.int64)
        if q.shape[0] == 0 or self._keys.shape[0] == 0:
            return found, idx
        last = self._keys.shape[0] - 1
        b = bucket_of(q, self._n_buckets)
        start = self._offsets[b].astype(np.int64)
        length = self._offsets[b + 1].astype(np.int64) - start
        p1 = self._first_probe
        cand = np.minimum(start[:, None] + np.arange(p1), last)
        eq = self._keys[cand] == q[:, None]
        j = eq.argmax(axis=1)
        found = eq[np.arange(q.shape[0]), j]
        idx = start + j
        rest = np.flatnonzero(~found & (length > p1))
        if rest.size:
            cand = np.minimum(start[rest, None] + np.arange(p1, self._max_bucket), last)
            eq = self._keys[cand] == q[rest, None]
            j = eq.argmax(axis=1)
            f2 = eq[np.arange(rest.size), j]
            found[rest] = f2
            idx[rest] = start[rest] + p1 + j
        return found, idx

    def _value(self, is_prob: bool, k: int, ix: npt.NDArray[np.int64]) -> FloatArray:
        """ln P (is_prob) or ln backoff of entries ``ix`` of order ``k``."""
        if not self.quantised:
            return (self._prob if is_prob else self._bow)[ix]
        cb = self._prob_cb if is_prob else self._bow_cb
        codes = (self._prob_q if is_prob else self._bow_q)[ix]
        return cb[k * 256 + codes.astype(np.int64)]

    def logprob(self, ngrams: npt.ArrayLike) -> FloatArray:
        """Natural-log P(last id | the previous order-1 ids) for each row of an (N, order) int array.

        PAD (-1) marks "no token" and may only stand left of the real ids (see the module docstring).
        """
        ng = np.asarray(ngrams)
        n = self.order
        if ng.ndim != 2 or ng.shape[1] != n:
            raise ValueError(f"expected an (N, {n}) array of ids, got shape {ng.shape}")
        ng = ng.astype(np.int64, copy=False)
        if ng.size and (ng.min() < PAD or ng.max() >= self.vocab_size):
            raise ValueError(f"ids must lie in [0, {self.vocab_size}) or be PAD ({PAD})")
        N = ng.shape[0]
        if N == 0:
            return np.zeros(0, dtype=np.float32)
        w = ng[:, -1]
        if (w < 0).any():
            raise ValueError("the predicted (last) id of a window cannot be PAD")
        # valid[:, k] : the k-gram ending at w (k = 1..n) has no PAD;  PAD only on the left, so a
        # k-gram is valid iff its first id is.
        valid = np.empty((N, n + 1), dtype=bool)
        valid[:, 0] = True
        for k in range(1, n + 1):
            valid[:, k] = valid[:, k - 1] & (ng[:, n - k] >= 0)
        ids_u = np.where(ng >= 0, ng, 0).astype(np.uint64)
        # packed n-gram keys ending at w (order k) and context keys ending at h1 (order k)
        qs: list[U64Array] = []
        sel: list[npt.NDArray[np.int64]] = []
        kinds: list[tuple[str, int]] = []
        gk = ids_u[:, n - 1].copy()
        ck = ids_u[:, n - 2].copy() if n >= 2 else None
        for k in range(2, n + 1):
            gk = gk + ids_u[:, n - k] * self._mults[k - 1]
            rows = np.flatnonzero(valid[:, k])
            qs.append(gk[rows] + self._offs[k])
            sel.append(rows)
            kinds.append(("p", k))
            if k <= n - 1 and ck is not None:
                ck = ck + ids_u[:, n - 1 - k] * self._mults[k - 1]
                # context of length k = ids n-1-k .. n-2; valid iff the (k+1)-gram ending at w is
                rows_c = np.flatnonzero(valid[:, k + 1])
                qs.append(ck[rows_c] + self._offs[k])
                sel.append(rows_c)
                kinds.append(("b", k))
        allq = np.concatenate(qs) if qs else np.zeros(0, dtype=np.uint64)
        found, idx = self._lookup(allq)

        # prob_k[:, k]: ln P from the k-gram (NaN where absent); bow[:, k]: ln backoff of the length-k context
        prob = np.full((N, n + 1), np.nan, dtype=np.float32)
        bow = np.zeros((N, n + 1), dtype=np.float32)
        prob[:, 1] = self._uni_p[w]
        if n >= 2:
            h1 = ng[:, n - 2]
            okh = h1 >= 0
            bow[okh, 1] = self._uni_b[h1[okh]]
        pos = 0
        for (kind, k), rows, q in zip(kinds, sel, qs):
            f = found[pos: pos + q.shape[0]]
            ix = idx[pos: pos + q.shape[0]]
            pos += q.shape[0]
            if kind == "p":
                prob[rows[f], k] = self._value(True, k, ix[f])
            else:
                vals = np.full(rows.shape[0], self.missing_bow, dtype=np.float32)
                vals[f] = self._value(False, k, ix[f])
                bow[rows, k] = vals
        # longest match m; add backoffs of contexts of length m .. n-1
        has = ~np.isnan(prob)
        has[:, 0] = False
        m = n - np.argmax(has[:, ::-1], axis=1)
        # suffix sums of bow over k = m .. n-1
        bsum = np.cumsum(bow[:, ::-1], axis=1, dtype=np.float32)[:, ::-1]  # bsum[:, k] = sum_{j>=k} bow[:, j]
        r = np.arange(N)
        out = prob[r, m] + bsum[r, m]
        return out.astype(np.float32, copy=False)

    # ------------------------------------------------------------------ info
    def size_bytes(self) -> int:
        return int(sum(f.stat().st_size for f in self.path.iterdir() if f.suffix == ".npy"))

    def __repr__(self) -> str:
        return (f"CharLM({self.path}, order={self.order}, smoothing={self.smoothing}, "
                f"vocab={self.vocab_size}, ngrams={self.meta.get('ngrams')})")
