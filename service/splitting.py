"""Cutting a long text into bounded pieces the scheduler can interleave with other requests' work, without
changing any decision.

The corrector works chunk by chunk (``corrector.text.sentence_chunk_spans``: each sentence on its own, a
sentence longer than the model's window cut into windows), and a text cut at one of those chunk boundaries
gets exactly the chunks the whole text gets. So every cut falls on a chunk boundary:

* preferably after sentence or clause punctuation, outside any protected word (a *soft* cut: jieba never
  joins a word across punctuation, so the piece is corrected exactly as inside the whole text);
* where a run has no such place within the budget, at any chunk boundary (a *hard* cut). Word-level
  protections (dictionary words, foreign names) look at the characters around a position, so
  a piece cut there is run with the whole chunk before it and the whole chunk after it as context, and only
  its core is kept.

A :class:`Cutter` hands a text's pieces out front to back, each as large as the budget of the moment allows
(the scheduler sizes them by the speed it measures), so a piece is at most ``max(budget, 3 * window)``
characters with its context.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from corrector.text import CLAUSE_END, SENTENCE_END, sentence_chunk_spans

CUT_AFTER = frozenset(SENTENCE_END + CLAUSE_END)
# where corrector.text.split_sentences ends a sentence: a run of sentence-final marks and the closing quotes
# after it (tests/test_batching.py checks that the two agree)


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


class Cutter:
    """One text's pieces, front to back. ``window`` is the corrector's chunk size (the model's window,
    ``max_seq_len - 2``); None: unknown, the text is never cut."""

    def __init__(self, text: str, window: int | None, protect: Iterable[str] = ()):
        self.text = text
        n = len(text)
        self.chunks = sentence_chunk_spans(text, window) if window and n else [(0, n)]
        blocked = _inside_protected(text, protect) if len(self.chunks) > 1 else set()
        self.soft = {0, n} | {e for _, e in self.chunks if e < n and text[e - 1] in CUT_AFTER and e not in blocked}
        self.next = 0  # index of the first chunk not handed out

    @property
    def done(self) -> bool:
        return self.next >= len(self.chunks)

    @property
    def left(self) -> int:
        """Characters not handed out yet (context not counted)."""
        return len(self.text) - self.chunks[self.next][0] if not self.done else 0

    def rest_size(self) -> int:
        """What the model would read for everything that is left, in one piece."""
        return len(self.text) - self._lo(self.next)

    def take(self, budget: int) -> Piece:
        """The next piece: as many whole chunks as fit ``budget`` characters with their context (at least one),
        ending after punctuation when any such place fits."""
        i = self.next
        lo = self._lo(i)
        fit = soft = None
        for j in range(i + 1, len(self.chunks) + 1):  # the core would be chunks[i:j]
            end = self.chunks[j - 1][1]
            hi = end if end in self.soft else self.chunks[j][1]
            if hi - lo > budget and fit is not None:
                break
            fit = (j, end, hi)
            if end in self.soft:
                soft = fit
        assert fit is not None
        j, end, hi = soft or fit
        self.next = j
        return Piece(self.chunks[i][0], end, lo, hi)

    def _lo(self, i: int) -> int:
        start = self.chunks[i][0]
        return start if start in self.soft else self.chunks[i - 1][0]


def pieces(text: str, limit: int, window: int | None, protect: Iterable[str] = ()) -> list[Piece]:
    """All of ``text``'s pieces for a fixed budget of ``limit`` characters."""
    cutter = Cutter(text, window, protect)
    out = [cutter.take(limit)]
    while not cutter.done:
        out.append(cutter.take(limit))
    return out


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
