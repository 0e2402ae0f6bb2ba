"""Corpus files: plain UTF-8 text, one paragraph a line, as ``.txt``, ``.txt.gz`` or ``.txt.xz``.

Every reader of the corpus (prepare, the LM builder, pair making, the false-positive benchmark) finds and opens its
files here, so a new compression is one line below.
"""

from __future__ import annotations

import gzip
import lzma
from collections.abc import Iterable, Iterator
from pathlib import Path

from corrector.text.files import open_text as open_text

SUFFIXES = (".txt", ".txt.gz", ".txt.xz")


def is_corpus_file(path: Path) -> bool:
    return path.name.endswith(SUFFIXES)


def write_text(path: Path, lines: Iterable[str]) -> None:
    """Write ``lines`` (one a line) compressed by the suffix of ``path``, reproducibly (no time stamp in gzip)."""
    data = "".join(f"{line}\n" for line in lines).encode("utf-8")
    if path.suffix == ".gz":
        with path.open("wb") as fh, gzip.GzipFile(fileobj=fh, mode="wb", mtime=0, filename="") as gz:
            gz.write(data)
    elif path.suffix == ".xz":
        with lzma.open(path, "wb", preset=9) as xz:
            xz.write(data)
    else:
        path.write_bytes(data)


def corpus_files(corpus: Path) -> list[Path]:
    """``corpus`` itself if it is a file, else its corpus files in sorted name order (the order every reader counts
    lines in, so a held-out slice is the same everywhere)."""
    if corpus.is_file():
        return [corpus]
    files = sorted(p for p in corpus.iterdir() if p.is_file() and is_corpus_file(p)) if corpus.is_dir() else []
    if not files:
        raise SystemExit(f"no {', '.join(SUFFIXES)} files in {corpus}")
    return files


def read_lines(paths: Iterable[Path], errors: str = "replace") -> Iterator[str]:
    """Every line of the files in turn, with its line break."""
    for p in paths:
        with open_text(p, errors=errors) as f:
            yield from f


def file_lines(path: Path) -> list[str]:
    """The non-empty lines of one file, without line breaks."""
    with open_text(path) as fh:
        return [x for x in fh.read().split("\n") if x]
