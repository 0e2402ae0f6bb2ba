"""Estimated tables written in the formats ``corrector.evidence.char_lm`` reads: the hashed table of packed keys
with stored hash bits and, with ``quant``, uint8 codes into per-order codebooks (``write_model``), and the compact
node format (``write_nodes``; ``corrector.evidence.char_lm_nodes`` describes it: each order's n-grams keyed by
(their suffix's slot, their first id), hashed into buckets of <= 2 on average, one uint32 word each, a <= 16-bit
tag and two 8-bit codes into per-order codebooks); and held-out scoring of the model read back: the perplexity and
a normalised sample. ``training.evidence.char_lm`` and ``corrector adapt`` write their tables with these.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from corrector.evidence.char_lm import (
    BLOCK_BITS,
    BOS,
    FORMAT,
    N_SPECIALS,
    PAD,
    PROBE,
    SPECIALS,
    STORED_BITS,
    CharLMBase,
    key_offsets,
    mix,
)
from corrector.evidence.char_lm_estimate import Tables, codepoints, encode_stream
from corrector.evidence.char_lm_nodes import FORMAT as NODES_FORMAT
from corrector.evidence.char_lm_nodes import PAD_WORDS, TAG_BITS
from corrector.evidence.char_lm_nodes import mix as node_mix


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
    write_unigrams(out, t, vocab_cps, vocab_counts)
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


def write_unigrams(out: Path, t: Tables, vocab_cps: np.ndarray, vocab_counts: np.ndarray) -> None:
    """What both formats share: the unigram arrays, each id's code point and vocab.txt."""
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


def perplexity(lm: CharLMBase, windows: np.ndarray, chunk: int = 200_000) -> float:
    tot = 0.0
    for i in range(0, windows.shape[0], chunk):
        tot += float(lm.logprob(windows[i:i + chunk]).sum(dtype=np.float64))
    return math.exp(-tot / max(1, windows.shape[0]))


def normalised_sample(lm: CharLMBase, windows: np.ndarray, n: int = 1000) -> dict[str, float]:
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


# ---------------------------------------------------------------------------------------------- node format
def layout(n_keys: int, entries: int) -> tuple[int, int]:
    """(key bits, bucket bits) of an order whose node keys lie below ``n_keys``: buckets for about 1-2 entries
    each, more where the tag would not fit its 16 bits."""
    key_bits = max(1, (n_keys - 1).bit_length())
    bucket_bits = max(1, math.ceil(math.log2(max(entries, 2) / 2.0)), key_bits - TAG_BITS)
    return key_bits, min(bucket_bits, key_bits)


def buckets(bk: np.ndarray, bucket_bits: int) -> tuple[np.ndarray, np.ndarray]:
    """(first slot of every block of 64 buckets, each bucket's start relative to its block), or ValueError when a
    block holds more than 255 entries."""
    nb = 1 << bucket_bits
    starts = np.concatenate(([0], np.cumsum(np.bincount(bk, minlength=nb))))
    block_base = starts[:: 1 << BLOCK_BITS]
    rel = starts - np.repeat(block_base, 1 << BLOCK_BITS)[: nb + 1]
    if rel.max(initial=0) > 255:
        raise ValueError("a block of buckets overflows")
    return block_base.astype(np.uint32), rel.astype(np.uint8)


def codes_in(values: np.ndarray, book: np.ndarray) -> np.ndarray:
    """Each of ``values`` as the code of its entry in ``book`` (values read back from a quantised model: each is
    a codebook entry exactly, so the codes give the same values)."""
    order = np.argsort(book, kind="stable")
    pos = np.minimum(np.searchsorted(book[order], values), book.size - 1)
    codes = order[pos]
    if not np.array_equal(book[codes], values):
        raise ValueError("a value is not an entry of the codebook: not read back from a model quantised with it")
    return codes.astype(np.uint8)


def write_nodes(out: Path, t: Tables, base: int, vocab_cps: np.ndarray, vocab_counts: np.ndarray,
                missing_bow: float, books: dict[int, tuple[np.ndarray, np.ndarray]] | None = None) -> dict:
    """Write ``t`` (keys packed first id most significant, as ``char_lm_estimate`` gives them) into ``out``.
    ``books``: per order k >= 2, the (probability, backoff) codebooks ``t``'s values were read back from (a model
    in another format): the values keep their codes, so the model scores exactly as before; otherwise each order
    is quantised afresh."""
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.npy"):
        old.unlink()
    order = len(t.keys)
    V = base
    pbook = np.zeros((order + 1, 256), dtype=np.float32)
    bbook = np.zeros((order + 1, 256), dtype=np.float32)
    specs: dict[str, dict[str, int]] = {}
    keys_below, slot_below = t.keys[0], np.arange(V, dtype=np.int64)  # a unigram's node is its id
    for k in range(2, order + 1):
        keys = t.keys[k - 1]
        n = keys.size
        span = np.uint64(V ** (k - 1))
        suffix, first = keys % span, keys // span
        at = np.searchsorted(keys_below, suffix)
        if n and (at.max() >= keys_below.size or not np.array_equal(keys_below[at], suffix)):
            raise ValueError(f"order {k}: an n-gram's suffix is not stored (the tables must be closed under suffixes)")
        node = slot_below[at].astype(np.uint64) * np.uint64(V) + first
        key_bits, bucket_bits = layout(keys_below.size * V, n)
        while True:
            h = node_mix(node, key_bits)
            bk = (h >> np.uint64(key_bits - bucket_bits)).astype(np.int64)
            try:
                block_base, rel = buckets(bk, bucket_bits)
                break
            except ValueError:
                bucket_bits += 1
        tag = (h & np.uint64((1 << (key_bits - bucket_bits)) - 1)).astype(np.uint32)
        perm = np.argsort(h, kind="stable")
        slot = np.empty(n, dtype=np.int64)
        slot[perm] = np.arange(n, dtype=np.int64)
        if books is not None:
            pb, bb = (np.asarray(b, dtype=np.float32) for b in books[k])
            pcode = codes_in(t.logp[k - 1].astype(np.float32), pb)
            bcode = codes_in(t.logbow[k - 1].astype(np.float32), bb)
            pbook[k, : pb.size], bbook[k, : bb.size] = pb, bb
        else:
            pcode, book = quantise(t.logp[k - 1], 8, exact_zero=False)
            pbook[k, : book.size] = book
            bcode, book = quantise(t.logbow[k - 1], 8, exact_zero=True)
            bbook[k, : book.size] = book
        words = (tag << np.uint32(16)) | (pcode.astype(np.uint32) << np.uint32(8)) | bcode.astype(np.uint32)
        np.save(out / f"words{k}.npy", np.concatenate((words[perm], np.zeros(PAD_WORDS, dtype=np.uint32))))
        np.save(out / f"base{k}.npy", block_base)
        np.save(out / f"off{k}.npy", rel)
        specs[str(k)] = {"entries": int(n), "key_bits": key_bits, "bucket_bits": bucket_bits}
        keys_below, slot_below = keys, slot
    np.save(out / "prob_codebook.npy", pbook)
    np.save(out / "bow_codebook.npy", bbook)
    write_unigrams(out, t, vocab_cps, vocab_counts)
    return {
        "format": NODES_FORMAT,
        "order": order,
        "vocab_size": base,
        "missing_bow": missing_bow,
        "ngrams": [int(x.size) for x in t.keys],
        "entries": int(sum(x.size for x in t.keys[1:])),
        "orders": specs,
        "quant_bits": 8,
        "smoothing": "sb" if missing_bow else "kn",
    }
