"""Character classes and sentence splitting shared by inference and training."""

from __future__ import annotations

import re

# CJK Unified Ideographs and their extensions (A..H), plus compatibility ideographs.
_CJK_RANGES = (
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xF900, 0xFAFF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2EBEF),
    (0x2F800, 0x2FA1F),
    (0x30000, 0x323AF),
)

SENTENCE_END = "。！？；!?;…\n"
CLAUSE_END = "，、,：:"


def is_cjk(ch: str) -> bool:
    """True for a single Han character (the only kind of character we ever edit)."""
    if len(ch) != 1:
        return False
    cp = ord(ch)
    return any(lo <= cp <= hi for lo, hi in _CJK_RANGES)


def cjk_count(text: str) -> int:
    return sum(1 for ch in text if is_cjk(ch))


_SENTENCE_TAIL = re.compile(f"[{re.escape(SENTENCE_END)}]+[”’」』）)]*")


def split_sentences(text: str) -> list[str]:
    """Split after sentence-final punctuation (closing quotes stay with their sentence), in linear time.

    The pieces concatenate back to exactly ``text``.
    """
    pieces = []
    start = 0
    for m in _SENTENCE_TAIL.finditer(text):
        pieces.append(text[start : m.end()])
        start = m.end()
    if start < len(text):
        pieces.append(text[start:])
    return pieces


def chunk_spans(text: str, max_chars: int) -> list[tuple[int, int]]:
    """Cut ``text`` into ``(start, end)`` spans of at most ``max_chars`` characters.

    Cuts go after sentence punctuation first, then after clause punctuation, and only
    as a last resort in the middle of a run of characters. The spans tile the text.
    """
    if max_chars < 1:
        raise ValueError("max_chars must be >= 1")
    spans: list[tuple[int, int]] = []
    start = 0
    n = len(text)
    while start < n:
        end = min(start + max_chars, n)
        if end < n:
            window = text[start:end]
            cut = _last_cut(window, SENTENCE_END)
            if cut is None:
                cut = _last_cut(window, CLAUSE_END)
            if cut is not None and cut > 0:
                end = start + cut
        spans.append((start, end))
        start = end
    return spans


def sentence_chunk_spans(text: str, max_chars: int) -> list[tuple[int, int]]:
    """One span per sentence (``split_sentences``); only a sentence longer than ``max_chars`` is cut
    further (``chunk_spans``). The spans tile the text.

    A sentence's chunks therefore depend on that sentence alone, never on what comes before or after
    it: the model gives it the same context, and so the same edits, alone or inside a long text.
    """
    if max_chars < 1:
        raise ValueError("max_chars must be >= 1")
    spans: list[tuple[int, int]] = []
    start = 0
    for sentence in split_sentences(text):
        spans += [(start + s, start + e) for s, e in chunk_spans(sentence, max_chars)]
        start += len(sentence)
    return spans


def _last_cut(window: str, marks: str) -> int | None:
    for i in range(len(window) - 1, -1, -1):
        if window[i] in marks:
            return i + 1
    return None
