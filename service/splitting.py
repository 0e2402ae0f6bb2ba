"""Cutting a long text into bounded pieces the scheduler can interleave with other requests' work, without
changing any decision.

The corrector works chunk by chunk (``corrector.text.sentence_chunk_spans``: each sentence on its own, a
sentence longer than the model's window cut into windows), and a text cut at one of those chunk boundaries
gets exactly the chunks the whole text gets. So every cut falls on a chunk boundary:

* preferably after sentence or clause punctuation, outside any protected word (a *soft* cut: jieba never
  joins a word across punctuation, so the piece is corrected exactly as inside the whole text);
* where a run has no such place within the limit, at any chunk boundary (a *hard* cut). Word-level
  protections (dictionary words, kept words, foreign names) look at the characters around a position, so
  a piece cut there is run with one extra chunk of context on each side and only its core is kept.

Every piece is therefore at most ``limit`` characters where ``limit`` holds three chunks (a piece with a
hard cut carries two chunks of context), and at most three model windows whatever the text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from corrector.text import CLAUSE_END, SENTENCE_END, chunk_spans

CUT_AFTER = frozenset(SENTENCE_END + CLAUSE_END)
# where corrector.text.split_sentences ends a sentence: a run of sentence-final marks and the closing quotes
# after it (tests/test_batching.py checks that the two agree)
_SENTENCE_TAIL = re.compile(f"[{re.escape(SENTENCE_END)}]+[”’」』）)]*")


@dataclass(frozen=True)
class Piece:
    """``text[lo:hi]`` goes to the model; the result for ``text[start:end]`` (lo <= start <= end <= hi) is kept."""

    start: int
    end: int
    lo: int
    hi: int

    @property
    def size(self) -> int:
        """Characters the model reads for this piece."""
        return self.hi - self.lo


def pieces(text: str, limit: int, window: int | None, protect: Iterable[str] = ()) -> list[Piece]:
    """Pieces whose cores tile ``text``, each at most ``max(limit, 3 * window)`` characters with its context.

    ``window`` is the corrector's chunk size (the model's window, ``max_seq_len - 2``); None: unknown, never cut.
    """
    n = len(text)
    if n <= limit or not window:
        return [Piece(0, n, 0, n)]
    chunks = chunk_boundaries(text, window)
    blocked = _inside_protected(text, protect)
    out: list[Piece] = []
    for start, end in _soft_spans(text, chunks, limit, blocked):
        if end - start <= limit:
            out.append(Piece(start, end, start, end))
        else:
            out += _hard_pieces([c for c in chunks if start <= c[0] < end], limit)
    return out


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """The sentences of ``corrector.text.split_sentences`` as spans, found in linear time (that function's
    regular expression takes quadratic time on a long text without sentence-final punctuation)."""
    spans: list[tuple[int, int]] = []
    start = 0
    for m in _SENTENCE_TAIL.finditer(text):
        spans.append((start, m.end()))
        start = m.end()
    if start < len(text):
        spans.append((start, len(text)))
    return spans


def chunk_boundaries(text: str, window: int) -> list[tuple[int, int]]:
    """``corrector.text.sentence_chunk_spans(text, window)``, in linear time: the corrector's chunks."""
    return [(s + a, s + b) for s, e in sentence_spans(text) for a, b in chunk_spans(text[s:e], window)]


def _soft_spans(text: str, chunks: list[tuple[int, int]], limit: int, blocked: set[int]) -> list[tuple[int, int]]:
    """Spans tiling the text, cut only after punctuation at chunk boundaries, each at most ``limit``
    characters where such a place allows (a longer span has no soft cut inside)."""
    spans: list[tuple[int, int]] = []
    start = 0
    last_cut: int | None = None
    for _, end in chunks:
        if end - start > limit and last_cut is not None and last_cut > start:
            spans.append((start, last_cut))
            start = last_cut
        if end < len(text) and text[end - 1] in CUT_AFTER and end not in blocked:
            last_cut = end
    spans.append((start, len(text)))
    return spans


def _hard_pieces(chunks: list[tuple[int, int]], limit: int) -> list[Piece]:
    """Cut a span (given as its chunks) at chunk boundaries into pieces of at most ``limit`` characters with
    their context: the chunk before a cut core and the chunk after it (none at the span's own ends)."""
    out: list[Piece] = []
    i = 0
    while i < len(chunks):
        lo = chunks[i - 1][0] if i > 0 else chunks[i][0]
        j = i + 1  # the core holds chunks[i:j]; at least one chunk
        while j < len(chunks) and _hi(chunks, j + 1) - lo <= limit:
            j += 1
        out.append(Piece(chunks[i][0], chunks[j - 1][1], lo, _hi(chunks, j)))
        i = j
    return out


def _hi(chunks: list[tuple[int, int]], j: int) -> int:
    """The end of a piece whose core ends with ``chunks[j - 1]``: one chunk further unless that is the last."""
    return chunks[j][1] if j < len(chunks) else chunks[-1][1]


def _inside_protected(text: str, words: Iterable[str]) -> set[int]:
    """Positions p such that a cut before p would split an occurrence of a protected word."""
    out: set[int] = set()
    for w in words:
        if len(w) < 2:
            continue
        at = text.find(w)
        while at >= 0:
            out.update(range(at + 1, at + len(w)))
            at = text.find(w, at + 1)
    return out
