"""Bytes per n-gram of character LMs against KenLM's binary formats for the same n-gram counts.

    python benchmarks/lm_bytes.py data/electra_models/default/lm runs/lm/kn5

For each LM directory (its meta.json's n-gram counts and the size of its arrays), the size KenLM's
``build_binary`` would give the same counts, from the record layouts of its source (lm/trie.cc, lm/search_hashed):

* probing (``build_binary probing``, multiplier 1.5): unigrams 8 bytes (prob, backoff); every other n-gram a
  hash-table slot of 16 bytes (64-bit key, prob, backoff; 12 at the top order, which has no backoff), 1.5 slots each;
* trie (``build_binary trie``): unigrams 16 bytes; an n-gram of a middle order ``w + 31 + 32 + p`` bits (word index,
  prob without its sign, backoff, pointer into the next order), of the top order ``w + 31``;
* trie ``-q 8 -b 8``: the same with 8-bit prob and backoff codes (``w + 16 + p``; top ``w + 8``);

where w is the bits of the largest word index and p the bits of the next order's size (no pointer compression,
``-a 0``). Prints a markdown table.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def kenlm_bytes(ngrams: list[int]) -> dict[str, float]:
    """Sizes in bytes of KenLM's formats for these n-gram counts (index 0: unigrams)."""
    V, order = ngrams[0], len(ngrams)
    w = V.bit_length()
    probing = 8.0 * V
    trie = {"trie": 16.0 * (V + 2), "trie -q 8 -b 8": 16.0 * (V + 2)}
    for k in range(2, order + 1):
        n = ngrams[k - 1]
        top = k == order
        probing += 1.5 * n * (12 if top else 16)
        p = 0 if top else ngrams[k].bit_length()
        trie["trie"] += (n + 1) * (w + 31 + (0 if top else 32 + p)) / 8
        trie["trie -q 8 -b 8"] += (n + 1) * (w + 8 + (0 if top else 8 + p)) / 8
    return {"probing": probing, **trie}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("lm", type=Path, nargs="+", help="LM directories (training.evidence.char_lm)")
    a = ap.parse_args(argv)
    print("| LM | format | order | n-grams | MB | bytes / n-gram | KenLM probing | KenLM trie | KenLM trie -q 8 -b 8 |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for d in a.lm:
        meta = json.loads((d / "meta.json").read_text(encoding="utf-8"))
        ngrams = [int(x) for x in meta["ngrams"]]
        total = sum(ngrams)
        size = sum(p.stat().st_size for p in d.iterdir() if p.suffix == ".npy")
        ken = kenlm_bytes(ngrams)
        cells = " | ".join(f"{ken[k] / total:.2f}" for k in ("probing", "trie", "trie -q 8 -b 8"))
        print(f"| {d} | {meta['format']} | {meta['order']} | {total:,} | {size / 1e6:.1f} | {size / total:.2f} | {cells} |")


if __name__ == "__main__":
    main()
