"""Count which of 的, 地, 得 edited text writes between each kind of word (corrector/evidence/particles.py).

    python -m training.evidence.particles --corpus ../shared/data/corpus --out BUNDLE/dictionary/particles.json

Reads the edited corpus files (``--files``: People's Daily, the news broadcasts' transcripts, laws, news feeds), at
most ``--max-chars`` characters of each, in file order. A word's class is jieba's part-of-speech tag of it (its
dictionary, ``dict.txt``), in the table's twelve classes. Each particle is segmented with the characters around it
as the decoder segments it (``segment_around``: a particle inside a word, as in 目的 or 觉得, is no slot); the words
beside a slot are kept with their classes, and those seen there at least ``--min-count`` times with how often each
particle stood after and before them. Deterministic: the same files give the same table.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from corrector.evidence.dictionary import segment_around
from corrector.evidence.particles import OTHER, PARTICLES, ParticleTable, word_class
from training.data.text_files import read_lines

EDITED = ("rmrb-2019-2020.txt.xz", "news_xwlb.txt.gz", "laws.txt.gz", "news_rss.txt.gz")


def jieba_words() -> dict[str, str]:
    """Every word of jieba's dictionary with a count -> its tag."""
    import jieba

    tags: dict[str, str] = {}
    with open(Path(jieba.__file__).parent / "dict.txt", encoding="utf-8") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3 and int(parts[1]) > 0:
                tags[parts[0]] = parts[2]
    return tags


def lines_of(paths: Iterable[Path], max_chars: int) -> Iterator[str]:
    for path in paths:
        n = 0
        for line in read_lines([path]):
            yield line.rstrip("\n")
            n += len(line)
            if n >= max_chars:
                break


def slots(text: str) -> Iterator[tuple[str, str, str]]:
    """(word before, the particle, word after) of each particle slot of ``text`` (no part of a word)."""
    for i, ch in enumerate(text):
        if ch in PARTICLES:
            left, word, right, _ = segment_around(text, i)
            if len(word) == 1:
                yield left, ch, right


def count(paths: list[Path], max_chars: int, min_count: int) -> ParticleTable:
    """The words beside a slot with their classes, and the particles after and before each word seen beside one
    at least ``min_count`` times."""
    tags = jieba_words()
    left: dict[str, list[int]] = {}
    right: dict[str, list[int]] = {}
    for text in lines_of(paths, max_chars):
        for before, ch, after in slots(text):
            k = PARTICLES.index(ch)
            left.setdefault(before, [0, 0, 0])[k] += 1
            right.setdefault(after, [0, 0, 0])[k] += 1
    classes = {w: word_class(tags[w]) for w in sorted(set(left) | set(right)) if w in tags}
    classes = {w: c for w, c in classes.items() if c != OTHER}

    def kept(m: dict[str, list[int]]) -> dict[str, tuple[int, int, int]]:
        return {w: (v[0], v[1], v[2]) for w, v in sorted(m.items()) if sum(v) >= min_count}

    return ParticleTable(classes, kept(left), kept(right))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, required=True, help="the corpus folder")
    ap.add_argument("--files", nargs="+", default=list(EDITED), help="which of its files (default: the edited ones)")
    ap.add_argument("--max-chars", type=int, default=20_000_000, help="characters read from each file at most")
    ap.add_argument("--min-count", type=int, default=3, help="times a word stands beside a particle to be kept")
    ap.add_argument("--out", type=Path, required=True, help="the table (a bundle's dictionary/particles.json)")
    a = ap.parse_args(argv)
    paths = [a.corpus / f for f in a.files]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise SystemExit(f"no such corpus file: {', '.join(missing)}")
    t0 = time.time()
    table = count(paths, a.max_chars, a.min_count)
    table.save(a.out)
    n = sum(sum(v) for v in table.left.values())
    print(f"{n:,} particle slots counted, {len(table.classes):,} words' classes, {len(table.left):,} and "
          f"{len(table.right):,} words' counts "
          f"-> {a.out} ({time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main()
