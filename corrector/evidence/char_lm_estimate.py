"""From text to a character LM's n-gram tables (``training.evidence.char_lm`` builds the corpus's LM with them,
``corrector adapt`` a domain's): the vocabulary and the id stream, n-grams packed into uint64 keys and counted
with sort + run lengths, pruning, and the interpolated modified Kneser-Ney and stupid-backoff estimates in backoff
form. char_lm's docstring describes the estimators.
"""

from __future__ import annotations

import math
import resource
import sys
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from corrector.evidence.char_lm import BOS, EOS, N_SPECIALS, UNK

SB_ALPHA = 0.4
UNIGRAM_BOS_LOGPROB = -99.0


def log(msg: str) -> None:
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


# ---------------------------------------------------------------------------------------------- corpus
def codepoints(lines: Sequence[str]) -> np.ndarray:
    """All code points of the lines joined by '\\n' (uint32)."""
    return np.frombuffer("\n".join(lines).encode("utf-32-le"), dtype="<u4")


def choose_vocab(cps: np.ndarray, vocab_size: int) -> tuple[np.ndarray, np.ndarray, dict[str, float]]:
    """The ``vocab_size`` most frequent code points (ties: lower code point first), their counts, and the
    token coverage at several sizes."""
    return vocab_from_counts(np.bincount(cps, minlength=0x110000).astype(np.int64), vocab_size)


def vocab_from_counts(counts: np.ndarray, vocab_size: int) -> tuple[np.ndarray, np.ndarray, dict[str, float]]:
    """``choose_vocab`` from the count of every code point."""
    counts = counts.copy()
    counts[ord("\n")] = 0
    order = np.lexsort((np.arange(counts.size), -counts))
    nz = int((counts > 0).sum())
    order = order[:nz]
    total = counts.sum()
    cum = np.cumsum(counts[order])
    coverage = {str(k): float(cum[min(k, nz) - 1] / total) for k in (3000, 4000, 5000, 6000, 7000, vocab_size)
                if k <= nz or k == vocab_size}
    coverage["distinct_chars"] = float(nz)
    chosen = order[:vocab_size]
    return chosen.astype(np.int32), counts[chosen], coverage


def make_lut(vocab_cps: np.ndarray) -> np.ndarray:
    lut = np.full(0x110000, UNK, dtype=np.int32)
    lut[vocab_cps] = np.arange(N_SPECIALS, N_SPECIALS + vocab_cps.size, dtype=np.int32)
    return lut


def encode_stream(cps: np.ndarray, lut: np.ndarray) -> np.ndarray:
    """Ids of '\\n'-separated lines as one stream: <s> c .. </s> <s> c .. </s> (int32)."""
    ids = lut[cps]
    nl = cps == ord("\n")
    ids[nl] = EOS
    reps = np.where(nl, 2, 1)
    out = np.repeat(ids, reps)
    # each '\n' became two EOS slots: make the second a BOS
    ends = np.cumsum(reps) - 1
    out[ends[nl]] = BOS
    return np.concatenate(([BOS], out, [EOS])).astype(np.int32)


# ---------------------------------------------------------------------------------------------- counting
def count_all_orders(stream: np.ndarray, order: int, base: int, quiet: bool = False
                     ) -> list[tuple[np.ndarray, np.ndarray]]:
    """For k = 1..order: (sorted unique packed keys uint64, raw counts int64) of the k-grams inside lines."""
    res: list[tuple[np.ndarray, np.ndarray]] = []
    ids = stream.astype(np.uint64)
    not_bos = stream != BOS
    key = ids.copy()
    valid = np.ones(stream.size, dtype=bool)
    B = np.uint64(base)
    for k in range(1, order + 1):
        if k > 1:
            key = key[:-1] * B + ids[k - 1:]
            valid = valid[:-1] & not_bos[k - 1:]
        sel = key[valid]
        sel.sort()
        res.append(run_lengths(sel))
        del sel
        if not quiet:
            log(f"  order {k}: {res[-1][0].size:,} distinct  (peak {peak_rss_mb():.0f} MB)")
    return res


def run_lengths(sorted_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if sorted_keys.size == 0:
        return sorted_keys.copy(), np.zeros(0, dtype=np.int64)
    change = np.empty(sorted_keys.size, dtype=bool)
    change[0] = True
    np.not_equal(sorted_keys[1:], sorted_keys[:-1], out=change[1:])
    starts = np.flatnonzero(change)
    counts = np.diff(np.append(starts, sorted_keys.size))
    return sorted_keys[starts], counts.astype(np.int64)


def first_id(keys: np.ndarray, k: int, base: int) -> np.ndarray:
    return keys // np.uint64(base ** (k - 1)) if k > 1 else keys


def adjusted_counts(counts: list[tuple[np.ndarray, np.ndarray]], base: int) -> list[np.ndarray]:
    """KN counts per order: raw at the top order and for n-grams starting with <s>; otherwise the number of
    distinct ids seen before the n-gram (continuation count)."""
    order = len(counts)
    adj: list[np.ndarray] = []
    for k in range(1, order + 1):
        keys, raw = counts[k - 1]
        if k == order:
            adj.append(raw.copy())
            continue
        up_keys = counts[k][0]
        suf = up_keys % np.uint64(base**k)
        suf.sort()
        skeys, scnt = run_lengths(suf)
        del suf
        a = np.zeros(keys.size, dtype=np.int64)
        pos = np.searchsorted(keys, skeys)
        if skeys.size and not np.array_equal(keys[np.minimum(pos, keys.size - 1)], skeys):
            raise AssertionError("suffix of an n-gram missing from the lower order")
        a[pos] = scnt
        starts_bos = first_id(keys, k, base) == np.uint64(BOS)
        a[starts_bos] = raw[starts_bos]
        if k == 1:
            a[keys == np.uint64(BOS)] = 0  # <s> is never predicted
        adj.append(a)
    return adj


def kn_discounts(adj: np.ndarray) -> tuple[float, float, float]:
    """Chen & Goodman's D1, D2, D3+ from count-of-counts n1..n4 (fallbacks for degenerate tiny corpora)."""
    return discounts_from_counts(np.bincount(np.minimum(adj[adj > 0], 5), minlength=6))


def discounts_from_counts(count_of_counts: np.ndarray) -> tuple[float, float, float]:
    """``kn_discounts`` from the count-of-counts (index c: how many adjusted counts are c; index 5: 5 or more)."""
    cc = count_of_counts.astype(np.float64)
    n1, n2, n3, n4 = cc[1], cc[2], cc[3], cc[4]
    if n1 == 0 or n2 == 0:
        return 0.5, 1.0, 1.5
    y = n1 / (n1 + 2 * n2)
    d1 = 1 - 2 * y * n2 / n1
    d2 = 2 - 3 * y * n3 / n2
    d3 = 3 - 4 * y * n4 / n3 if n3 > 0 else 1.5
    d1 = min(max(d1, 0.05), 0.95)
    d2 = min(max(d2, 0.05), 1.95)
    d3 = min(max(d3, 0.05), 2.95)
    return float(d1), float(d2), float(d3)


# ---------------------------------------------------------------------------------------------- pruning
def keep_masks(counts: list[tuple[np.ndarray, np.ndarray]], prune: Sequence[int], base: int) -> list[np.ndarray]:
    """Per order, which n-grams stay: raw count >= threshold, plus prefixes/suffixes of kept longer ones."""
    order = len(counts)
    masks: list[np.ndarray] = [np.ones(0, dtype=bool)] * order
    for k in range(order, 0, -1):
        keys, raw = counts[k - 1]
        m = raw >= max(1, prune[k - 1]) if k > 1 else np.ones(keys.size, dtype=bool)
        if k < order:
            up = counts[k][0][masks[k]]
            for sub in (up // np.uint64(base), up % np.uint64(base**k)):
                pos = np.searchsorted(keys, sub)
                m[pos] = True
        masks[k - 1] = m
    return masks


# ---------------------------------------------------------------------------------------------- estimation
@dataclass
class Tables:
    """Kept n-grams per order (index 0 = unigrams): sorted keys, ln P, ln backoff (float64)."""

    keys: list[np.ndarray]
    logp: list[np.ndarray]
    logbow: list[np.ndarray]
    discounts: list[tuple[float, float, float]]


def groups(ctx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(group start indices, group id per element) of a sorted array."""
    change = np.empty(ctx.size, dtype=bool)
    if ctx.size:
        change[0] = True
        np.not_equal(ctx[1:], ctx[:-1], out=change[1:])
    starts = np.flatnonzero(change)
    gid = np.cumsum(change) - 1
    return starts, gid


def estimate_kn(counts: list[tuple[np.ndarray, np.ndarray]], masks: list[np.ndarray], base: int) -> Tables:
    order = len(counts)
    adj = adjusted_counts(counts, base)
    keys_out: list[np.ndarray] = []
    p_out: list[np.ndarray] = []
    discounts: list[tuple[float, float, float]] = []
    B = np.uint64(base)
    for k in range(1, order + 1):
        keys, a = counts[k - 1][0], adj[k - 1]
        d1, d2, d3 = kn_discounts(a)
        discounts.append((d1, d2, d3))
        dvec = np.array([0.0, d1, d2, d3], dtype=np.float64)
        disc = dvec[np.minimum(a, 3)]
        n1 = (a == 1).astype(np.float64)
        n2 = (a == 2).astype(np.float64)
        n3 = (a >= 3).astype(np.float64)
        m = masks[k - 1]
        if k == 1:
            total = float(a.sum())
            gamma0 = (d1 * n1.sum() + d2 * n2.sum() + d3 * n3.sum()) / total
            # every id gets a unigram (uniform share for ids never seen), <s> excepted
            full = np.zeros(base, dtype=np.float64)
            full[keys.astype(np.int64)] = np.maximum(a - disc, 0.0) / total
            n_pred = base - 1
            full += gamma0 / n_pred
            full[BOS] = 0.0
            keys_out.append(np.arange(base, dtype=np.uint64))
            p_out.append(full)
            continue
        ctx = keys // B
        starts, gid = groups(ctx)
        c_h = np.add.reduceat(a.astype(np.float64), starts)
        gam = (d1 * np.add.reduceat(n1, starts) + d2 * np.add.reduceat(n2, starts)
               + d3 * np.add.reduceat(n3, starts)) / c_h
        kk = keys[m]
        g = gid[m]
        alpha = (a[m] - disc[m]) / c_h[g]
        suf = kk % np.uint64(base ** (k - 1))
        lower_keys = keys_out[k - 2]
        pos = np.searchsorted(lower_keys, suf)
        if k == 2:
            pos = suf.astype(np.int64)
        p = alpha + gam[g] * p_out[k - 2][pos]
        keys_out.append(kk)
        p_out.append(p)
        del ctx, gid, disc, n1, n2, n3
    logbow = backoffs_renormalised(keys_out, p_out, base)
    logp = [np.log(np.maximum(p, 1e-300)) for p in p_out]
    logp[0][BOS] = UNIGRAM_BOS_LOGPROB
    return Tables(keys_out, logp, logbow, discounts)


def context_and_suffix(keys: list[np.ndarray], k: int, base: int) -> tuple[np.ndarray, np.ndarray]:
    """For every stored (k+1)-gram: the index, among the stored k-grams, of its context (all but its last id) and
    of its suffix (all but its first): where each n-gram's probability goes in its context's sums."""
    up = keys[k]
    ctx, suf = up // np.uint64(base), up % np.uint64(base**k)
    if k == 1:
        return ctx.astype(np.int64), suf.astype(np.int64)
    return np.searchsorted(keys[k - 1], ctx), np.searchsorted(keys[k - 1], suf)


def backoffs_renormalised(keys: list[np.ndarray], p: list[np.ndarray], base: int) -> list[np.ndarray]:
    """ln bow(h) = ln (1 - sum_kept P(w|h)) - ln (1 - sum_kept P(w|h')) for every stored h (0 where h has no
    stored extension); the top order has none."""
    order = len(keys)
    out: list[np.ndarray] = []
    for k in range(1, order + 1):
        if k == order:
            out.append(np.zeros(keys[k - 1].size, dtype=np.float64))
            continue
        ci, si = context_and_suffix(keys, k, base)
        lo = p[k - 1][si]
        n = keys[k - 1].size
        s_hi = np.bincount(ci, weights=p[k], minlength=n)
        s_lo = np.bincount(ci, weights=lo, minlength=n)
        num = np.maximum(1.0 - s_hi, 1e-15)
        den = np.maximum(1.0 - s_lo, 1e-15)
        lb = np.log(num) - np.log(den)
        lb[s_hi == 0] = 0.0
        out.append(lb)
    return out


def estimate_sb(counts: list[tuple[np.ndarray, np.ndarray]], masks: list[np.ndarray], base: int) -> Tables:
    order = len(counts)
    keys_out: list[np.ndarray] = []
    lp_out: list[np.ndarray] = []
    lb_out: list[np.ndarray] = []
    for k in range(1, order + 1):
        keys, raw = counts[k - 1]
        if k == 1:
            full = np.zeros(base, dtype=np.float64)
            full[keys.astype(np.int64)] = raw
            full[BOS] = 0
            full = np.maximum(full, 0.5)  # ids never seen: half a count
            lp = np.log(full / full[np.arange(base) != BOS].sum())
            lp[BOS] = UNIGRAM_BOS_LOGPROB
            keys_out.append(np.arange(base, dtype=np.uint64))
            lp_out.append(lp)
        else:
            starts, gid = groups(keys // np.uint64(base))
            c_h = np.add.reduceat(raw.astype(np.float64), starts)
            m = masks[k - 1]
            keys_out.append(keys[m])
            lp_out.append(np.log(raw[m] / c_h[gid[m]]))
        lb = np.full(keys_out[-1].size, math.log(SB_ALPHA)) if k < order else np.zeros(keys_out[-1].size)
        lb_out.append(lb)
    return Tables(keys_out, lp_out, lb_out, [])

