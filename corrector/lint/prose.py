"""Shared by the extractors: URLs in free text kept as context only, and plain text cut into paragraphs."""

from __future__ import annotations

import functools
from typing import Any

from .document import Block, Piece, block_of


@functools.lru_cache(maxsize=1)
def _linkify() -> Any:
    from linkify_it import LinkifyIt  # markdown-it's own link finder (the 'lint' extra)

    return LinkifyIt()


def without_urls(text: str, start: int | None, prose: bool = True) -> list[Piece]:
    """``text`` (at document offset ``start``) as pieces, its URLs and e-mail addresses context only."""
    if not prose or start is None or not any(c in text for c in ".:@"):
        return [Piece(text, start, prose)]
    out, at = [], 0
    for m in _linkify().match(text) or []:
        out += [Piece(text[at:m.index], start + at), Piece(text[m.index:m.last_index], None, prose=False)]
        at = m.last_index
    out.append(Piece(text[at:], start + at))
    return [p for p in out if p.text]


def paragraphs(text: str, base: int = 0) -> list[Block]:
    """Plain text at document offset ``base``: one block per paragraph (lines up to a blank line), its lines joined
    without their line breaks (Chinese text wraps without spaces)."""
    blocks: list[Block] = []
    pieces: list[Piece] = []
    at = 0
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        if body.strip():
            pieces += without_urls(body, base + at)
        elif pieces:
            if (b := block_of(pieces)) is not None:
                blocks.append(b)
            pieces = []
        at += len(line)
    if pieces and (b := block_of(pieces)) is not None:
        blocks.append(b)
    return blocks
