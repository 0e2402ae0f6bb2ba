"""Write estimated n-gram tables in the compact node format (``corrector.evidence.char_lm_nodes`` describes it and
reads it): each order's n-grams keyed by (their suffix's slot, their first id), hashed into buckets of <= 2 on
average, one uint32 word each (a <= 16-bit tag and two 8-bit codes into per-order codebooks).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from corrector.evidence.char_lm_base import BLOCK_BITS
from corrector.evidence.char_lm_nodes import FORMAT, PAD_WORDS, TAG_BITS, mix

from .char_lm_estimate import Tables
from .char_lm_table import quantise, write_unigrams


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


def write_nodes(out: Path, t: Tables, base: int, vocab_cps: np.ndarray, vocab_counts: np.ndarray,
                missing_bow: float) -> dict:
    """Write ``t`` (keys packed first id most significant, as ``char_lm_estimate`` gives them) into ``out``."""
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
            h = mix(node, key_bits)
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
        "format": FORMAT,
        "order": order,
        "vocab_size": base,
        "missing_bow": missing_bow,
        "ngrams": [int(x.size) for x in t.keys],
        "entries": int(sum(x.size for x in t.keys[1:])),
        "orders": specs,
        "quant_bits": 8,
        "smoothing": "sb" if missing_bow else "kn",
    }
