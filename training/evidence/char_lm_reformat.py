"""A quantised character LM written again in the node format, scoring exactly as before.

    python -m training.evidence.char_lm --reformat data/electra_models/default/lm --out runs/lm/nodes

The hashed format (``char-ngram-backoff-v2``) stores each n-gram in 9 bytes, the node format in about 4.7
(``corrector/evidence/char_lm_nodes.py``). Every stored n-gram is read back with its values, which keep their codes
in the same codebooks (``char_lm_write.write_nodes(books=...)``): the two models give the same log-probability to
every window, so a bundle's LM can change format without its decoder changing a single answer. The meta is the
source's (its build, corpus files, held-out figures), with the format's fields and size written anew.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from corrector.adapt.interpolate import base_counts
from corrector.evidence.char_lm import N_SPECIALS, CharLM
from corrector.evidence.char_lm_base import pack
from corrector.evidence.char_lm_estimate import Tables
from corrector.evidence.char_lm_write import write_nodes


def reformat(src: Path, out: Path) -> dict:
    """Write the quantised LM at ``src`` into ``out`` in the node format; the new meta."""
    t0 = time.time()
    lm = CharLM.load(src, mmap=False)
    if not isinstance(lm, CharLM) or not lm.quantised:
        raise SystemExit(f"{src}: --reformat reads a quantised LM in the hashed format ({lm.meta.get('format')})")
    stored = lm.stored_ngrams()
    V = lm.vocab_size
    keys = [pack(stored[k][0], V) for k in range(1, lm.order + 1)]
    tables = Tables(keys, [stored[k][1].astype(np.float64) for k in range(1, lm.order + 1)],
                    [stored[k][2].astype(np.float64) for k in range(1, lm.order + 1)], [])
    prob_books, bow_books = lm.codebooks()
    books = {k: (prob_books[k], bow_books[k]) for k in range(2, lm.order + 1)}
    meta = write_nodes(out, tables, V, lm.codepoints[N_SPECIALS:], base_counts(lm)[N_SPECIALS:],
                       float(lm.missing_bow), books=books)
    old = {k: v for k, v in lm.meta.items() if k not in ("format", "hash_bits", "block_bits", "guarded", "entries")}
    meta = {**old, **meta, "smoothing": lm.smoothing, "reformatted_from": lm.meta.get("format")}
    meta["size_bytes"] = int(sum(f.stat().st_size for f in out.iterdir() if f.suffix == ".npy"))
    meta["reformat_seconds"] = round(time.time() - t0, 1)
    (out / "meta.json").write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return meta
