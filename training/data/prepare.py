"""Corpus → normalised sentences, a 21128-entry WordPiece vocab and uint16 token shards.

    python -m training.data.prepare --corpus ../shared/data/corpus --out runs/data

The same corpus always gives the same vocab (its word pieces: training.data.wordpiece).
Writes to OUT: vocab.txt, char_freq.tsv, sentences.txt (normalised, one per line),
train.bin / val.bin (uint16 token stream, every sentence followed by [SEP]),
train_starts.npy / val_starts.npy (sentence start offsets) and meta.json.
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import re
import unicodedata
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np
from tqdm import tqdm

from corrector.text.chars import chunk_spans, cjk_count, is_cjk, split_sentences
from corrector.text.tokenize import SPECIAL_IDS, VOCAB_SIZE, build_tokenizer, read_vocab_list

from .text_files import corpus_files as corpus_files
from .text_files import read_lines as read_lines
from .wordpiece import pieces, word_counts

_WS = re.compile(r"\s+")


def normalise(line: str) -> str:
    """NFKC (full width → half width, compatibility forms folded) and collapsed whitespace."""
    return _WS.sub(" ", unicodedata.normalize("NFKC", line)).strip()


def sentences(line: str, max_chars: int = 126, min_cjk: int = 4) -> Iterator[str]:
    """Sentences of one normalised paragraph; long ones are cut at clause punctuation."""
    for sent in split_sentences(normalise(line)):
        sent = sent.strip()
        for s, e in chunk_spans(sent, max_chars):
            piece = sent[s:e].strip()
            if cjk_count(piece) >= min_cjk:
                yield piece


def build_vocab(char_freq: collections.Counter[str], sents: list[str], extra_chars: Iterable[str]) -> list[str]:
    """BERT-Chinese layout: [PAD], [unused1..99], [UNK], [CLS], [SEP], [MASK], characters, word pieces."""
    vocab = ["[PAD]"] + [f"[unused{i}]" for i in range(1, 100)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert vocab.index("[MASK]") == SPECIAL_IDS["[MASK]"]
    seen = set(vocab)

    def add(tok: str) -> None:
        if tok not in seen and len(vocab) < VOCAB_SIZE:
            seen.add(tok)
            vocab.append(tok)

    # every printable ASCII character, then every CJK character we know of, most frequent first
    for cp in range(33, 127):
        add(chr(cp).lower())
    cjk = {c for c in char_freq if is_cjk(c)} | {c for c in extra_chars if is_cjk(c)}
    cjk_slots = VOCAB_SIZE - 5000  # leave room for symbols and Latin word pieces
    for c in sorted(cjk, key=lambda c: (-char_freq.get(c, 0), c))[:cjk_slots]:
        add(c)
    # other single characters seen at least 20 times (punctuation, symbols, letters of other scripts)
    for c, n in char_freq.most_common():
        if n >= 20 and not c.isspace():
            add(c.lower())
    # word pieces for the non-CJK words (Latin words, numbers): their alphabet, then the pieces in the order they are
    # learnt (training.data.wordpiece: the same corpus always gives the same pieces)
    for tok in pieces(word_counts([s for s in sents if not all(is_cjk(c) for c in s)]), VOCAB_SIZE, min_frequency=5):
        if len(vocab) >= VOCAB_SIZE:
            break
        if not any(is_cjk(c) for c in tok):
            add(tok)
    i = 100
    while len(vocab) < VOCAB_SIZE:  # tiny corpora: keep the layout, pad with unused slots
        add(f"[unused{i}]")
        i += 1
    return vocab


def lac_chars() -> list[str]:
    """Characters of jieba's bundled LAC-small model (also the source of its embedding warm start)."""
    import jieba

    path = Path(jieba.__file__).parent / "lac_small" / "word.dic"
    if not path.exists():
        return []
    return [line.rstrip("\n").split("\t")[-1] for line in path.open(encoding="utf-8")]


def write_shard(tok, sents: list[str], out: Path, name: str, batch: int = 10000) -> int:
    ids_out: list[np.ndarray] = []
    starts: list[int] = []
    pos = 0
    sep = SPECIAL_IDS["[SEP]"]
    for i in tqdm(range(0, len(sents), batch), desc=f"tokenise {name}", unit="batch"):
        for enc in tok.encode_batch(sents[i : i + batch], add_special_tokens=False):
            arr = np.asarray([*enc.ids, sep], dtype=np.uint16)
            starts.append(pos)
            pos += len(arr)
            ids_out.append(arr)
    flat = np.concatenate(ids_out) if ids_out else np.zeros(0, np.uint16)
    flat.tofile(out / f"{name}.bin")
    np.save(out / f"{name}_starts.npy", np.asarray(starts, dtype=np.int64))
    return int(flat.size)


def parser() -> argparse.ArgumentParser:
    """The command's flags (the recipe checks its commands against them)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, required=True, help="a .txt, .txt.gz or .txt.xz file or a folder of them")
    ap.add_argument("--out", type=Path, required=True, help="output folder")
    ap.add_argument("--extra-chars", type=Path, nargs="*", default=[],
                    help="text/TSV files whose characters must be in the vocab (e.g. CSC training pairs)")
    ap.add_argument("--vocab", type=Path, default=None,
                    help="use this vocab.txt (e.g. a bundle's) instead of building one: new networks then share its "
                         "token layout")
    ap.add_argument("--max-lines", type=int, default=0, help="read at most this many corpus lines (0 = all)")
    ap.add_argument("--val-fraction", type=float, default=0.005)
    ap.add_argument("--seed", type=int, default=1234)
    return ap


def main(argv: list[str] | None = None) -> None:
    ap = parser()
    args = ap.parse_args(argv)

    args.out.mkdir(parents=True, exist_ok=True)
    files = corpus_files(args.corpus)
    sents: list[str] = []
    char_freq: collections.Counter[str] = collections.Counter()
    for n, line in enumerate(tqdm(read_lines(files), desc="read corpus", unit=" lines")):
        if args.max_lines and n >= args.max_lines:
            break
        for s in sentences(line):
            sents.append(s)
            char_freq.update(s)
    if not sents:
        raise SystemExit("the corpus has no usable sentences")

    extra: set[str] = set(lac_chars())
    for p in args.extra_chars:
        extra.update(p.read_text(encoding="utf-8"))
    vocab = read_vocab_list(args.vocab) if args.vocab else build_vocab(char_freq, sents, extra)
    if len(vocab) != VOCAB_SIZE:
        raise SystemExit(f"{args.vocab}: {len(vocab)} entries, expected {VOCAB_SIZE}")
    (args.out / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    with open(args.out / "char_freq.tsv", "w", encoding="utf-8") as f:
        for c, k in char_freq.most_common():
            if is_cjk(c):
                f.write(f"{c}\t{k}\n")

    rng = random.Random(args.seed)
    rng.shuffle(sents)
    (args.out / "sentences.txt").write_text("\n".join(sents) + "\n", encoding="utf-8")
    n_val = max(1, int(len(sents) * args.val_fraction))
    tok = build_tokenizer(args.out / "vocab.txt")
    n_train = write_shard(tok, sents[n_val:], args.out, "train")
    n_valtok = write_shard(tok, sents[:n_val], args.out, "val")
    meta = {
        "vocab_size": len(vocab),
        "corpus_files": [p.name for p in files],
        "sentences": len(sents),
        "train_tokens": n_train,
        "val_tokens": n_valtok,
        "cjk_chars_in_vocab": sum(1 for t in vocab if len(t) == 1 and is_cjk(t)),
        "seed": args.seed,
    }
    (args.out / "meta.json").write_text(json.dumps(meta, ensure_ascii=False, indent=2), encoding="utf-8")
    print(json.dumps(meta, ensure_ascii=False))


if __name__ == "__main__":
    main()
