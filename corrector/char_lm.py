"""Character n-gram language model: memory-mapped backoff tables scored with vectorised numpy.

Written by ``python -m training.char_lm``; read here with numpy only (nothing is loaded at import).

Files in an LM directory::

    meta.json              order, smoothing, pruning, sizes, held-out perplexity, hash parameters
    vocab.txt              id, token (U+XXXX for whitespace / unprintable), training count
    codepoints.npy         int32 (V,)  code point of each id; -1 for <unk>, <s>, </s>
    unigram_logprob.npy    float32 (V,) ln P(w)        (<s> is never predicted: -99)
    unigram_bow.npy        float32 (V,) ln backoff(w)
    keys.npy               uint64 (E+4,) every stored n-gram of order 2..N, packed (``key_offsets``), grouped by
                           hash bucket (``bucket_of``), then 4 EMPTY slots; the arrays below are aligned with it
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
HASH_MULT = np.uint64(0x9E3779B97F4A7C15)
PROBE = 4  # bucket slots read for every query; keys.npy ends with this many EMPTY slots
EMPTY = np.uint64(2**64 - 1)  # never a packed key (they stay below sum_k B^k < 2^64 - 1)
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
    """Bucket of each packed key: multiply-xorshift-multiply, then the top 32 bits scaled onto [0, n_buckets)."""
    h = np.asarray(keys, dtype=np.uint64) * HASH_MULT
    h ^= h >> np.uint64(29)
    h *= HASH_MULT
    h >>= np.uint64(32)
    h *= np.uint64(n_buckets)
    h >>= np.uint64(32)
    return h.astype(np.intp)


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
        if int(meta.get("probe", -1)) != PROBE:
            raise CorrectorError(f"{path}: LM written for probe={meta.get('probe')}, this reader needs {PROBE}")
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
        """Find packed keys: (found, entry index). The first ``PROBE`` slots of each key's bucket are read
        for every query (keys.npy carries ``PROBE`` sentinel slots at its end, so no bounds checks); the
        rest of the rare longer buckets only for what is still unresolved."""
        nq = q.shape[0]
        b = bucket_of(q, self._n_buckets)
        s = self._offsets.take(b).astype(np.int64)
        eqs = np.empty((nq, PROBE), dtype=bool)
        for j in range(PROBE):
            np.equal(self._keys.take(s + j if j else s), q, out=eqs[:, j])
        v = eqs.view(np.uint32).ravel()  # PROBE == 4 bools -> one little-endian word; byte j set = slot j
        hit = v != 0
        idx = s + (v > 0xFF) + (v > 0xFFFF) + (v > 0xFFFFFF)
        if self._max_bucket > PROBE:
            rest = np.flatnonzero(~hit)
            if rest.size:
                length = self._offsets.take(b[rest] + 1).astype(np.int64) - s[rest]
                rest = rest[length > PROBE]
                j = PROBE
                while rest.size and j < self._max_bucket:
                    f = self._keys.take(s[rest] + j) == q[rest]
                    r = rest[f]
                    hit[r] = True
                    idx[r] = s[r] + j
                    j += 1
                    rest = rest[~f]
                    rest = rest[self._offsets.take(b[rest] + 1).astype(np.int64) - s[rest] > j]
        return hit, idx

    def _value(self, is_prob: bool, k: int, ix: npt.NDArray[np.int64]) -> FloatArray:
        """ln P (is_prob) or ln backoff of entries ``ix`` of order ``k``."""
        if not self.quantised:
            return (self._prob if is_prob else self._bow).take(ix)
        cb = self._prob_cb if is_prob else self._bow_cb
        codes = (self._prob_q if is_prob else self._bow_q).take(ix)
        return cb.take(codes.astype(np.intp) + k * 256)

    def logprob(self, ngrams: npt.ArrayLike) -> FloatArray:
        """Natural-log P(last id | the previous order-1 ids) for each row of an (N, order) int array.

        PAD (-1) marks "no token" and may only stand left of the real ids (see the module docstring).
        Lookups go up one order at a time and only where they can succeed: the stored n-grams are closed
        under prefixes and suffixes, so (h_k .. h_1 w) can only exist if (h_k-1 .. h_1 w) and the
        context (h_k .. h_1) do.  Result = ln P of the longest match + the ln backoffs of the contexts
        longer than the match's context, kept as ``cum`` (sum of all context backoffs seen) minus
        ``below`` (the part up to the match's own context).
        """
        ng = np.asarray(ngrams)
        n = self.order
        if ng.ndim != 2 or ng.shape[1] != n:
            raise ValueError(f"expected an (N, {n}) array of ids, got shape {ng.shape}")
        N = ng.shape[0]
        if N == 0:
            return np.zeros(0, dtype=np.float32)
        if ng.dtype.kind not in "iu":
            raise ValueError(f"ids must be integers, got {ng.dtype}")
        cols = np.ascontiguousarray(ng.T, dtype=np.int64)  # (n, N): column j = j-th id of every window
        if cols.min() < PAD or cols.max() >= self.vocab_size:
            raise ValueError(f"ids must lie in [0, {self.vocab_size}) or be PAD ({PAD})")
        pad = cols < 0
        if pad[n - 1].any() or (pad[1:] & ~pad[:-1]).any():
            raise ValueError("PAD may only stand left of the real ids, and the predicted id cannot be PAD")
        avail = n - pad.sum(axis=0)  # real ids in each window
        ids = cols.astype(np.uint64)  # PAD -> 2^64-1: only ever used where masked out below
        best = self._uni_p.take(cols[n - 1])
        if n < 2:
            return best
        h1_ok = avail >= 2
        cum = np.where(h1_ok, self._uni_b.take(np.maximum(cols[n - 2], 0)), np.float32(0)).astype(np.float32)
        below = np.zeros(N, dtype=np.float32)
        sb = self.missing_bow != 0
        ng_ok = np.ones(N, dtype=bool)
        ctx_ok = h1_ok
        gk = ids[n - 1].copy()
        ck = ids[n - 2].copy()
        for k in range(2, n + 1):
            mult = self._mults[k - 1]
            gk += ids[n - k] * mult
            need_g = np.flatnonzero(ng_ok & ctx_ok & (avail >= k))
            q = gk.take(need_g)
            if k < n:
                ck += ids[n - 1 - k] * mult
                ctx_valid = avail >= k + 1
                need_c = np.flatnonzero(ctx_ok & ctx_valid)
                q = np.concatenate((q, ck.take(need_c)))
            q += self._offs[k]
            found, idx = self._lookup(q)
            n_g = need_g.shape[0]
            fg = found[:n_g]
            r = need_g[fg]
            best[r] = self._value(True, k, idx[:n_g][fg])
            below[r] = cum[r]
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
                ctx_ok = np.zeros(N, dtype=bool)
                ctx_ok[r] = True
        return best + (cum - below)

    def entry(self, ids: npt.ArrayLike) -> tuple[float, float] | None:
        """(ln P, ln backoff) stored for the n-gram ``ids`` (1..order ids), or None if it is not stored.
        For inspection and tests; score with ``logprob``."""
        g = np.asarray(ids, dtype=np.int64).ravel()
        k = g.shape[0]
        if not 1 <= k <= self.order or g.min() < 0 or g.max() >= self.vocab_size:
            raise ValueError(f"an n-gram of 1..{self.order} ids in [0, {self.vocab_size}) expected")
        if k == 1:
            return float(self._uni_p[g[0]]), float(self._uni_b[g[0]])
        key = sum(int(x) * self.vocab_size ** (k - 1 - i) for i, x in enumerate(g.tolist()))
        found, idx = self._lookup(np.array([key + int(self._offs[k])], dtype=np.uint64))
        if not found[0]:
            return None
        return float(self._value(True, k, idx)[0]), float(self._value(False, k, idx)[0])

    # ------------------------------------------------------------------ info
    def size_bytes(self) -> int:
        return int(sum(f.stat().st_size for f in self.path.iterdir() if f.suffix == ".npy"))

    def __repr__(self) -> str:
        return (f"CharLM({self.path}, order={self.order}, smoothing={self.smoothing}, "
                f"vocab={self.vocab_size}, ngrams={self.meta.get('ngrams')})")
