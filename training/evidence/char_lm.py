"""Estimate a character n-gram LM from the corpus and write it in the format ``corrector.char_lm`` reads.

    python -m training.evidence.char_lm --corpus ../shared/data/corpus --out DIR [--order 5] [--smoothing kn|sb]
        [--prune 0,0,5,8,10] [--vocab-size 7128] [--quant 8] [--holdout-every 200]

Everything is vectorised numpy: text -> int ids, n-grams packed into uint64 keys (first id most significant,
base B = vocabulary size incl. specials), counted with sort + run lengths.

Smoothing
  kn  interpolated modified Kneser-Ney (Chen & Goodman 1998): three discounts per order from the
      count-of-counts of that order's (adjusted) counts; lower orders use continuation counts N1+(. h w)
      except for n-grams that start with <s> (nothing can precede it), which keep raw counts (as KenLM).
      Unigrams interpolate with the uniform distribution over every predictable id (all but <s>).
      Written in backoff form: ln P(w | h) of each stored n-gram and ln backoff(h) of each context.
  sb  stupid backoff (Brants et al. 2007): relative frequencies, a constant backoff of 0.4 per step.

Pruning: ``--prune`` gives a minimum raw count per order (0/1 = keep all).  Prefixes and suffixes of every
kept n-gram are kept too, so contexts exist and backoff is well defined.  For KN the backoff weight of every
context is then recomputed so that each conditional distribution sums to one again:

    bow(h) = (1 - sum_{w kept} P(w | h)) / (1 - sum_{w kept} P(w | h'))

(with nothing pruned this is exactly the interpolation weight gamma(h)).

Quantisation: ``--quant 8`` stores ln P and ln backoff of orders >= 2 as uint8 codes into per-order
256-entry codebooks (equal-count bins, each code = mean of its bin; for backoffs code 0 is exactly 0),
like KenLM's ``-q 8 -b 8``; unigrams and keys stay exact.  ``--quant 0`` stores float32 values.

A deterministic slice of the corpus lines (every ``--holdout-every``-th line over the files in sorted name
order) is held out: excluded from all counting, and used for the held-out perplexity in ``meta.json``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import resource
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from corrector.char_lm import (
    BLOCK_BITS,
    BOS,
    EOS,
    FORMAT,
    N_SPECIALS,
    PAD,
    PROBE,
    SPECIALS,
    STORED_BITS,
    UNK,
    CharLM,
    key_offsets,
    mix,
)

DEFAULT_VOCAB = 7128  # the most that keeps 5-gram keys (+ the lower orders' key ranges) inside uint64
SB_ALPHA = 0.4
UNIGRAM_BOS_LOGPROB = -99.0


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


# ---------------------------------------------------------------------------------------------- corpus
def read_corpus(corpus: Path, holdout_every: int) -> tuple[list[str], list[str], list[str]]:
    """(train lines, held-out lines, file names). Every ``holdout_every``-th line (global count) is held out."""
    files = sorted(corpus.glob("*.txt.gz")) if corpus.is_dir() else [corpus]
    if not files:
        raise SystemExit(f"no *.txt.gz files in {corpus}")
    lines: list[str] = []
    for f in files:
        with gzip.open(f, "rt", encoding="utf-8") as fh:
            lines.extend(x for x in fh.read().split("\n") if x)
    held: list[str] = []
    if holdout_every > 0:
        held = lines[holdout_every - 1:: holdout_every]
        del lines[holdout_every - 1:: holdout_every]
    return lines, held, [f.name for f in files]


def codepoints(lines: Sequence[str]) -> np.ndarray:
    """All code points of the lines joined by '\\n' (uint32)."""
    return np.frombuffer("\n".join(lines).encode("utf-32-le"), dtype="<u4")


def choose_vocab(cps: np.ndarray, vocab_size: int) -> tuple[np.ndarray, np.ndarray, dict[str, float]]:
    """The ``vocab_size`` most frequent code points (ties: lower code point first), their counts, and the
    token coverage at several sizes."""
    counts = np.bincount(cps, minlength=0x110000).astype(np.int64)
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
def count_all_orders(stream: np.ndarray, order: int, base: int) -> list[tuple[np.ndarray, np.ndarray]]:
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
    cc = np.bincount(np.minimum(adj[adj > 0], 5), minlength=6).astype(np.float64)
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


def backoffs_renormalised(keys: list[np.ndarray], p: list[np.ndarray], base: int) -> list[np.ndarray]:
    """ln bow(h) = ln (1 - sum_kept P(w|h)) - ln (1 - sum_kept P(w|h')) for every stored h (0 where h has no
    stored extension); the top order has none."""
    order = len(keys)
    out: list[np.ndarray] = []
    for k in range(1, order + 1):
        if k == order:
            out.append(np.zeros(keys[k - 1].size, dtype=np.float64))
            continue
        up = keys[k]
        ctx = up // np.uint64(base)
        suf = up % np.uint64(base**k)
        if k == 1:
            ci = ctx.astype(np.int64)
            lo = p[0][suf.astype(np.int64)]
        else:
            ci = np.searchsorted(keys[k - 1], ctx)
            lo = p[k - 1][np.searchsorted(keys[k - 1], suf)]
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


# ---------------------------------------------------------------------------------------------- writing
def quantise(values: np.ndarray, bits: int, exact_zero: bool) -> tuple[np.ndarray, np.ndarray]:
    """Equal-count bins over the sorted values; codebook entry = mean of its bin. With ``exact_zero``,
    code 0 is reserved for values that are exactly 0."""
    nb = 1 << bits
    codes = np.zeros(values.size, dtype=np.uint8)
    book = np.zeros(nb, dtype=np.float64)
    sel = np.flatnonzero(values != 0.0) if exact_zero else np.arange(values.size)
    first = 1 if exact_zero else 0
    nbins = nb - first
    if sel.size:
        v = values[sel]
        srt = np.argsort(v, kind="stable")
        bins = (np.arange(v.size, dtype=np.int64) * nbins) // v.size
        c = np.empty(v.size, dtype=np.int64)
        c[srt] = bins
        sums = np.bincount(bins, weights=v[srt], minlength=nbins)
        cnt = np.bincount(bins, minlength=nbins)
        means = np.where(cnt > 0, sums / np.maximum(cnt, 1), 0.0)
        book[first:] = means
        codes[sel] = (c + first).astype(np.uint8)
    return codes, book


def write_model(out: Path, t: Tables, base: int, vocab_cps: np.ndarray, vocab_counts: np.ndarray,
                quant: int, missing_bow: float) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.npy"):
        old.unlink()
    order = len(t.keys)
    offs = key_offsets(order, base)
    all_keys, all_p, all_b = [], [], []
    for k in range(2, order + 1):
        all_keys.append(t.keys[k - 1] + np.uint64(offs[k]))
        all_p.append(t.logp[k - 1])
        all_b.append(t.logbow[k - 1])
    h = mix(np.concatenate(all_keys) if all_keys else np.zeros(0, dtype=np.uint64))
    e = h.size
    # 2^hash_bits buckets, 1 < entries per bucket <= 2 (and at least 2^16 buckets: bucket + 48 stored bits = h)
    hash_bits = max(64 - STORED_BITS, int(math.ceil(math.log2(max(e, 2) / 2.0))))
    n_buckets = 1 << hash_bits
    bk = (h >> np.uint64(64 - hash_bits)).astype(np.int64)
    perm = np.argsort(h, kind="stable")
    bc = np.bincount(bk, minlength=n_buckets)
    starts = np.concatenate(([0], np.cumsum(bc)))
    block_base = starts[:: 1 << BLOCK_BITS]
    if block_base.size != (n_buckets >> BLOCK_BITS) + 1:
        raise AssertionError("bucket blocks misaligned")
    rel = starts - np.repeat(block_base, 1 << BLOCK_BITS)[: n_buckets + 1]
    if rel.max() > 255:
        raise SystemExit(f"a block of {1 << BLOCK_BITS} buckets holds {rel.max()} entries (> 255); "
                         "this should not happen with <= 2 entries per bucket")
    codes = np.zeros(e, dtype=np.uint64)
    if quant:
        pbook = np.zeros((order + 1, 256), dtype=np.float32)
        bbook = np.zeros((order + 1, 256), dtype=np.float32)
        pos = 0
        for i, k in enumerate(range(2, order + 1)):
            n = all_p[i].size
            pc, book = quantise(all_p[i], quant, exact_zero=False)
            pbook[k, : book.size] = book
            bc_, book = quantise(all_b[i], quant, exact_zero=True)
            bbook[k, : book.size] = book
            codes[pos:pos + n] = (pc.astype(np.uint64) << np.uint64(8)) | bc_.astype(np.uint64)
            pos += n
        np.save(out / "prob_codebook.npy", pbook)
        np.save(out / "bow_codebook.npy", bbook)
    else:
        z32 = np.zeros(PROBE, dtype=np.float32)
        np.save(out / "prob.npy", np.concatenate((np.concatenate(all_p).astype(np.float32)[perm], z32)))
        np.save(out / "bow.npy", np.concatenate((np.concatenate(all_b).astype(np.float32)[perm], z32)))
    words = (h << np.uint64(64 - STORED_BITS)) | codes
    max_bucket = int(bc.max()) if bc.size else 0
    guarded = guard_holds(starts, n_buckets, hash_bits, max(max_bucket, 1) + 1)
    pad_words = max(PROBE, max_bucket + 1)
    np.save(out / "table.npy", np.concatenate((words[perm], np.zeros(pad_words, dtype=np.uint64))))
    np.save(out / "bucket_base.npy", block_base.astype(np.uint32))
    np.save(out / "bucket_off.npy", rel.astype(np.uint8))
    np.save(out / "unigram_logprob.npy", t.logp[0].astype(np.float32))
    np.save(out / "unigram_bow.npy", t.logbow[0].astype(np.float32))
    cps = np.concatenate((np.full(N_SPECIALS, -1, dtype=np.int32), vocab_cps.astype(np.int32)))
    np.save(out / "codepoints.npy", cps)
    with open(out / "vocab.txt", "w", encoding="utf-8") as fh:
        for i, s in enumerate(SPECIALS):
            fh.write(f"{i}\t{s}\t0\n")
        for i, (cp, c) in enumerate(zip(vocab_cps.tolist(), vocab_counts.tolist())):
            ch = chr(cp)
            tok = ch if ch.isprintable() and not ch.isspace() else f"U+{cp:04X}"
            fh.write(f"{i + N_SPECIALS}\t{tok}\t{c}\n")
    return {
        "format": FORMAT,
        "order": order,
        "vocab_size": base,
        "missing_bow": missing_bow,
        "ngrams": [int(x.size) for x in t.keys],
        "entries": int(e),
        "hash_bits": hash_bits,
        "block_bits": BLOCK_BITS,
        "max_bucket": max_bucket,
        "guarded": guarded,
        "quant_bits": quant,
        "smoothing": "sb" if missing_bow else "kn",
    }


def guard_holds(starts: np.ndarray, n_buckets: int, hash_bits: int, window: int) -> bool:
    """Whether the reader may skip bucket lengths: from every bucket's first slot, the next ``window`` slots
    (the padding after the table counts as bucket n_buckets) lie in buckets less than 2^(hash_bits-16) after
    it, so the bucket bits inside a stored word tell its bucket apart from the query's."""
    guard = 1 << (hash_bits - 16)
    if guard < 2:
        return False
    e = int(starts[-1])
    slot_bucket = np.repeat(np.arange(n_buckets, dtype=np.int64), np.diff(starts))
    last = starts[:-1] + window - 1
    at = np.where(last < e, slot_bucket[np.minimum(last, max(e - 1, 0))] if e else n_buckets, n_buckets)
    return bool(((at - np.arange(n_buckets)) < guard).all())


# ---------------------------------------------------------------------------------------------- evaluation
def heldout_windows(lines: Sequence[str], lut: np.ndarray, order: int) -> np.ndarray:
    """(T, order) windows predicting every id of every held-out line after its <s> (</s> included)."""
    stream = encode_stream(codepoints(lines), lut) if lines else np.zeros(0, dtype=np.int32)
    is_bos = stream == BOS
    line_start = np.maximum.accumulate(np.where(is_bos, np.arange(stream.size), 0))
    t = np.flatnonzero(~is_bos)
    offs = np.arange(-(order - 1), 1)
    pos = t[:, None] + offs[None, :]
    win = stream[np.maximum(pos, 0)]
    win[pos < line_start[t][:, None]] = PAD
    return win.astype(np.int32)


def perplexity(lm: CharLM, windows: np.ndarray, chunk: int = 200_000) -> float:
    tot = 0.0
    for i in range(0, windows.shape[0], chunk):
        tot += float(lm.logprob(windows[i:i + chunk]).sum(dtype=np.float64))
    return math.exp(-tot / max(1, windows.shape[0]))


def normalised_sample(lm: CharLM, windows: np.ndarray, n: int = 1000) -> dict[str, float]:
    """On every k-th held-out window (n of them): the perplexity as scored, the perplexity after dividing
    each score by its context's total over the whole vocabulary, and that mean total. Kneser-Ney sums to
    one (up to quantisation); stupid backoff does not, so only the normalised figure compares."""
    if windows.shape[0] == 0:
        return {}
    sel = windows[:: max(1, windows.shape[0] // n)][:n]
    ids = np.array([i for i in range(lm.vocab_size) if i != BOS], dtype=np.int32)
    lp = lm.logprob(sel).astype(np.float64)
    log_z = np.empty(sel.shape[0])
    for i, row in enumerate(sel):
        q = np.repeat(row[None, :], ids.size, axis=0)
        q[:, -1] = ids
        s = lm.logprob(q).astype(np.float64)
        log_z[i] = np.log(np.exp(s - s.max()).sum()) + s.max()
    return {"sample_windows": int(sel.shape[0]),
            "sample_perplexity": round(math.exp(-lp.mean()), 4),
            "sample_perplexity_normalised": round(math.exp(-(lp - log_z).mean()), 4),
            "sample_mean_total_probability": round(float(np.exp(log_z).mean()), 5)}


def evaluate(dirs: Sequence[Path], corpus: Path, holdout_every: int) -> int:
    """Held-out figures of built LMs (same held-out lines as the build), printed as JSON lines."""
    _, held, _ = read_corpus(corpus, holdout_every)
    for d in dirs:
        lm = CharLM.load(d)
        lut = make_lut(lm.codepoints[N_SPECIALS:])
        win = heldout_windows(held, lut, lm.order)
        res = {"lm": str(d), "order": lm.order, "smoothing": lm.smoothing, "prune": lm.meta.get("prune"),
               "ngrams": lm.meta.get("ngrams"), "size_bytes": lm.size_bytes(),
               "heldout_perplexity": round(perplexity(lm, win), 4), **normalised_sample(lm, win)}
        print(json.dumps(res, ensure_ascii=False), flush=True)
    return 0


# ---------------------------------------------------------------------------------------------- main
def parse_prune(s: str, order: int) -> list[int]:
    v = [int(x) for x in s.split(",")] if s else []
    v = (v + [v[-1] if v else 0] * order)[:order]
    return v


@dataclass
class Variant:
    out: Path
    order: int
    smoothing: str
    prune: list[int]
    quant: int = 8


def in_domain_lines(data: Path, holdout: int, folds: int = 0, without_fold: int = -1) -> list[str]:
    """The correct (target) sides of the real training pairs (``training.data.splits.train_pairs``: the dev split
    and every test set excluded), one line each; with ``folds``, those outside fold ``without_fold``
    (``training.data.splits.text_folds``)."""
    from ..data.splits import text_folds, train_pairs

    targets = [t for _, t in train_pairs(data, holdout)]
    if folds:
        fold_of = text_folds(data, folds)
        targets = [t for t in targets if fold_of.get(t, 0) != without_fold]
    return targets


@dataclass
class Counted:
    """The raw n-gram counts of one training text and what the estimates and meta.json need beside them."""

    ngrams: list[tuple[np.ndarray, np.ndarray]]  # per order: sorted packed keys, raw counts
    base: int
    vocab_cps: np.ndarray
    vocab_counts: np.ndarray
    coverage: dict[str, float]
    lut: np.ndarray
    held: list[str]
    files: list[str]
    n_tokens: int
    in_domain: dict | None  # lines, weight, source (None: the corpus alone)
    seconds: float


def count(corpus: Path, max_order: int, vocab_size: int, holdout_every: int, in_domain: Sequence[str] = (),
          in_domain_weight: int = 0) -> Counted:
    """Count the corpus (less its held-out lines) plus ``in_domain`` lines ``in_domain_weight`` times each,
    up to ``max_order``; the vocabulary is the most frequent characters of that text."""
    t0 = time.time()
    key_offsets(max_order, vocab_size + N_SPECIALS)  # raises if the keys do not fit
    train, held, files = read_corpus(corpus, holdout_every)
    extra = list(in_domain) if in_domain_weight > 0 else []
    train.extend(extra * in_domain_weight)
    log(f"read {len(train):,} training lines ({len(extra):,} in-domain lines x {in_domain_weight}), "
        f"{len(held):,} held out ({time.time() - t0:.1f}s)")
    cps = codepoints(train)
    del train
    vocab_cps, vocab_counts, coverage = choose_vocab(cps, vocab_size)
    base = vocab_cps.size + N_SPECIALS  # fewer when the corpus has fewer distinct characters
    log(f"vocab {vocab_cps.size} chars: coverage {coverage}")
    lut = make_lut(vocab_cps)
    stream = encode_stream(cps, lut)
    del cps
    n_tokens = int((stream != BOS).sum())
    log(f"{stream.size:,} ids ({time.time() - t0:.1f}s); counting")
    ngrams = count_all_orders(stream, max_order, base)
    del stream
    for k, (_, raw) in enumerate(ngrams, 1):
        ths = (1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 30, 50)
        log(f"  order {k}: n-grams with count >= t: " + ", ".join(f"{t}:{int((raw >= t).sum()):,}" for t in ths))
    meta = ({"lines": len(extra), "weight": in_domain_weight,
             "source": "targets of the real training pairs (dev split held out)"} if extra else None)
    return Counted(ngrams, base, vocab_cps, vocab_counts, coverage, lut, held, files, n_tokens, meta,
                   time.time() - t0)


def without(c: Counted, lines: Sequence[str], weight: int, fold: tuple[int, int]) -> Counted:
    """``c`` less ``weight`` times the counts of ``lines`` (in-domain lines it counted): n-grams never cross
    a line, so this is exactly the count of the text without them, over ``c``'s vocabulary."""
    t0 = time.time()
    cps = codepoints(lines)
    stream = encode_stream(cps, c.lut)
    ngrams = []
    for (keys, raw), (sub_keys, sub_raw) in zip(c.ngrams, count_all_orders(stream, len(c.ngrams), c.base)):
        at = np.searchsorted(keys, sub_keys)
        if sub_keys.size and (at.max() >= keys.size or not np.array_equal(keys[at], sub_keys)):
            raise ValueError("the lines to take out were not counted")
        left = raw.copy()
        left[at] -= weight * sub_raw
        if (left < 0).any():
            raise ValueError("the lines to take out were not counted that often")
        keep = left > 0
        ngrams.append((keys[keep], left[keep]))
    ids = c.lut[cps]
    taken = np.bincount(ids[ids >= N_SPECIALS] - N_SPECIALS, minlength=c.vocab_cps.size)
    if c.in_domain is None:
        raise ValueError("no in-domain lines were counted")
    meta = {**c.in_domain, "lines": c.in_domain["lines"] - len(lines), "fold": list(fold)}
    return Counted(ngrams, c.base, c.vocab_cps, c.vocab_counts - weight * taken, c.coverage, c.lut, c.held,
                   c.files, c.n_tokens - weight * int((stream != BOS).sum()), meta, c.seconds + time.time() - t0)


def build(corpus: Path, variants: Sequence[Variant], vocab_size: int, holdout_every: int,
          in_domain: Sequence[str] = (), in_domain_weight: int = 0) -> list[dict]:
    """Count once (up to the highest order asked for), then estimate and write every variant. ``in_domain``
    lines are counted ``in_domain_weight`` times each on top of the corpus (never held out)."""
    c = count(corpus, max(v.order for v in variants), vocab_size, holdout_every, in_domain, in_domain_weight)
    return write_variants(c, variants, holdout_every)


def write_variants(c: Counted, variants: Sequence[Variant], holdout_every: int) -> list[dict]:
    """Estimate, write and evaluate (held-out perplexity) each variant from the counts."""
    metas = []
    for v in variants:
        t1 = time.time()
        cnt = c.ngrams[: v.order]
        masks = keep_masks(cnt, v.prune, c.base)
        log(f"{v.out}: order {v.order} {v.smoothing} prune {v.prune}: kept {[int(m.sum()) for m in masks]}")
        if v.smoothing == "kn":
            tables = estimate_kn(cnt, masks, c.base)
            missing_bow = 0.0
        else:
            tables = estimate_sb(cnt, masks, c.base)
            missing_bow = math.log(SB_ALPHA)
        del masks
        meta = write_model(v.out, tables, c.base, c.vocab_cps, c.vocab_counts, v.quant, missing_bow)
        build_s = c.seconds + time.time() - t1
        (v.out / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
        lm = CharLM.load(v.out)
        win = heldout_windows(c.held, c.lut, v.order)
        ppl = perplexity(lm, win)
        n_unk = int((win[:, -1] == UNK).sum())
        size = sum(f.stat().st_size for f in v.out.iterdir() if f.is_file() and f.suffix == ".npy")
        meta.update({
            "smoothing": v.smoothing,
            "prune": v.prune,
            "discounts": tables.discounts,
            "sb_alpha": SB_ALPHA if v.smoothing == "sb" else None,
            "size_bytes": int(size),
            "heldout_perplexity": round(ppl, 4),
            **normalised_sample(lm, win),
            "heldout_perplexity_note": None if v.smoothing == "kn" else
            "stupid backoff scores do not sum to one: this 'perplexity' is not comparable with KN's",
            "heldout_tokens": int(win.shape[0]),
            "heldout_unk_tokens": n_unk,
            "heldout": f"every {holdout_every}th line of the files in sorted order (1-based)",
            "train_tokens": c.n_tokens,
            "vocab_coverage": c.coverage,
            "corpus_files": c.files,
            "in_domain": c.in_domain,
            "build_seconds": round(build_s, 1),
            "peak_rss_mb": round(peak_rss_mb(), 1),
        })
        (v.out / "meta.json").write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        log(f"  -> {size / 1e6:.1f} MB, held-out perplexity {ppl:.3f}")
        metas.append(meta)
        del tables
    return metas


def convert(from_arpa: Path | None, to_arpa: Path | None, out: Path, quant: int, corpus: Path,
            holdout_every: int) -> int:
    from training.evidence.char_lm_arpa import arpa_to_tables, write_arpa

    t0 = time.time()
    if to_arpa is not None:
        counts = write_arpa(to_arpa, out)
        print(json.dumps({"out": str(out), "ngrams": counts, "seconds": round(time.time() - t0, 1)}))
        return 0
    assert from_arpa is not None
    tables, vocab_cps, order, added = arpa_to_tables(from_arpa)
    base = vocab_cps.size + N_SPECIALS
    meta = write_model(out, tables, base, vocab_cps, np.zeros(vocab_cps.size, dtype=np.int64), quant, 0.0)
    meta.update({"smoothing": "arpa", "source": str(from_arpa), "added_for_closure": added[1:],
                 "prune": None})
    (out / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    if corpus.is_dir():
        _, held, _ = read_corpus(corpus, holdout_every)
        lm = CharLM.load(out)
        win = heldout_windows(held, make_lut(vocab_cps), order)
        meta["heldout_perplexity"] = round(perplexity(lm, win), 4)
        meta["heldout"] = f"every {holdout_every}th line of {corpus} (sorted files, 1-based)"
    meta["size_bytes"] = int(sum(f.stat().st_size for f in out.iterdir() if f.suffix == ".npy"))
    meta["build_seconds"] = round(time.time() - t0, 1)
    (out / "meta.json").write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps({k: meta.get(k) for k in ("order", "ngrams", "added_for_closure", "size_bytes",
                                                "heldout_perplexity")}))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="--out, --order, --smoothing, --prune and --quant may be repeated to write several "
                                        "models from one counting pass (single values apply to all).")
    ap.add_argument("--corpus", type=Path, default=Path("../shared/data/corpus"))
    ap.add_argument("--out", type=Path, action="append", required=True)
    ap.add_argument("--order", type=int, action="append")
    ap.add_argument("--smoothing", choices=("kn", "sb"), action="append")
    ap.add_argument("--prune", action="append", help="minimum raw count per order, comma-separated "
                    "(default 0,0,5,8,10: about 60 MB at order 5)")
    ap.add_argument("--vocab-size", type=int, default=DEFAULT_VOCAB, help="characters, specials excluded")
    ap.add_argument("--quant", type=int, choices=(0, 8), action="append", help="8 (default) or 0 = float32")
    ap.add_argument("--holdout-every", type=int, default=200)
    ap.add_argument("--from-arpa", type=Path, help="convert this ARPA model (e.g. KenLM's) into --out")
    ap.add_argument("--to-arpa", type=Path, help="write the LM directory given here as ARPA text to --out")
    ap.add_argument("--evaluate", action="store_true", help="only print held-out figures of the --out LMs")
    ap.add_argument("--in-domain", type=Path, metavar="DATA",
                    help="the shared data folder: also count the correct sides of its real training pairs (the "
                         "dev split held out; --in-domain-weight times each), so forms the corpus lacks but "
                         "correct CSC text keeps (甚么, 妳) are not 'fixed'")
    ap.add_argument("--in-domain-weight", type=int, default=10)
    ap.add_argument("--in-domain-holdout", type=int, default=1000, help="sighan_train pairs held out as the dev split")
    ap.add_argument("--in-domain-folds", type=int, default=0, metavar="K",
                    help="also write K cross-fitting LMs to --fold-out/fold0 .. fold{K-1}, each without one fold's "
                         "in-domain lines (contiguous blocks of the files: essays stay whole), for training.fitting.ranker "
                         "--fit-lm-folds")
    ap.add_argument("--fold-out", type=Path, help="where the --in-domain-folds LMs go")
    args = ap.parse_args(argv)
    n = len(args.out)
    if args.evaluate:
        return evaluate(args.out, args.corpus, args.holdout_every)
    if args.from_arpa or args.to_arpa:
        if n != 1:
            ap.error("--from-arpa / --to-arpa take one --out")
        return convert(args.from_arpa, args.to_arpa, args.out[0], (args.quant or [8])[0], args.corpus,
                       args.holdout_every)

    def each(xs: list | None, default: object) -> list:
        xs = xs or [default]
        if len(xs) not in (1, n):
            ap.error(f"give 1 or {n} values per option (one per --out)")
        return xs * n if len(xs) == 1 else xs

    orders, smooth, prunes = each(args.order, 5), each(args.smoothing, "kn"), each(args.prune, "0,0,5,8,10")
    quants = each(args.quant, 8)
    if min(orders) < 2:
        ap.error("--order must be >= 2")
    variants = [Variant(o, k, s, parse_prune(p, k), q)
                for o, k, s, p, q in zip(args.out, orders, smooth, prunes, quants)]
    extra = in_domain_lines(args.in_domain, args.in_domain_holdout) if args.in_domain else []
    weight = args.in_domain_weight if args.in_domain else 0
    if args.in_domain_folds and not (args.in_domain and args.fold_out):
        ap.error("--in-domain-folds needs --in-domain and --fold-out")
    counted = count(args.corpus, max(v.order for v in variants), args.vocab_size, args.holdout_every, extra, weight)
    metas = write_variants(counted, variants, args.holdout_every)
    K = args.in_domain_folds
    for k in range(K):  # each fold's LM: the same counts less that fold's in-domain lines
        kept = set(in_domain_lines(args.in_domain, args.in_domain_holdout, K, k))
        home = args.fold_out / f"fold{k}"
        fold_variants = [Variant(home / v.out.name if n > 1 else home, v.order, v.smoothing, v.prune, v.quant)
                         for v in variants]
        write_variants(without(counted, [t for t in extra if t not in kept], weight, (k, K)), fold_variants,
                       args.holdout_every)
    keys = ("order", "smoothing", "prune", "ngrams", "size_bytes", "heldout_perplexity", "build_seconds",
            "peak_rss_mb")
    for v, meta in zip(variants, metas):
        print(json.dumps({"out": str(v.out), **{k: meta[k] for k in keys}}, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
