"""Cutting a long text into pieces the scheduler can interleave with other requests' work, without
changing any decision: the corrector already works chunk by chunk (``corrector.text.sentence_chunk_spans``:
each sentence on its own), so a cut at one of its chunk boundaries gives the pieces exactly the chunks the
whole text gets. Cuts go only after sentence or clause punctuation (jieba never joins a word across it) and never
inside a protected word; a text without such a place stays whole.
"""

from __future__ import annotations

from collections.abc import Iterable

from corrector.text import CLAUSE_END, SENTENCE_END, sentence_chunk_spans

CUT_AFTER = frozenset(SENTENCE_END + CLAUSE_END)


def piece_spans(text: str, limit: int, chunk_chars: int | None, protect: Iterable[str] = ()) -> list[tuple[int, int]]:
    """``(start, end)`` pieces tiling ``text``, each at most ``limit`` characters where the text allows.

    ``chunk_chars`` is the corrector's chunk size (None: unknown, never cut).
    """
    if len(text) <= limit or not chunk_chars:
        return [(0, len(text))]
    blocked = _inside_protected(text, protect)
    pieces: list[tuple[int, int]] = []
    start = 0
    last_cut: int | None = None
    for _, end in sentence_chunk_spans(text, chunk_chars):
        if end - start > limit and last_cut is not None and last_cut > start:
            pieces.append((start, last_cut))
            start = last_cut
        if end < len(text) and text[end - 1] in CUT_AFTER and end not in blocked:
            last_cut = end
    pieces.append((start, len(text)))
    return pieces


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
