"""Prose in source code and data files, found by Pygments' lexers (every common language).

Source code: comments and string literals (``parts``: which of the two). Escapes and interpolations are context
only; preprocessor lines and shebangs are not prose. A run of line comments with nothing but white space between
them is one block, so a sentence wrapped over several ``//`` lines reads whole. Data files (JSON, YAML, TOML):
string values only, never keys. Gettext catalogues (``.po``): the ``msgstr`` strings only.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .document import Block, Piece, block_of
from .prose import without_urls

DATA_SUFFIXES = {".json", ".jsonc", ".json5", ".yaml", ".yml", ".toml"}
PARTS = ("comments", "strings")


def lexer_for(name: str) -> Any | None:
    """Pygments' lexer for a file called ``name``, or None when it has none."""
    from pygments.lexers import get_lexer_for_filename  # the 'lint' extra
    from pygments.util import ClassNotFound

    try:
        return get_lexer_for_filename(name, stripnl=False, stripall=False, ensurenl=False)
    except ClassNotFound:
        return None


def _kind(ttype: Any) -> str | None:
    """'comment', 'string', 'context' (an escape, an interpolation: in the string, not prose), 'key', 'msg' (a
    gettext keyword) or None."""
    from pygments.token import Comment, Literal, Name, String

    if ttype in Comment.Preproc or ttype in Comment.PreprocFile or ttype in Comment.Hashbang:
        return None
    if ttype in Comment:
        return "comment"
    if ttype in String.Escape or ttype in String.Interpol or ttype in String.Affix:
        return "context"
    if ttype in String or ttype in Literal.Scalar.Plain:
        return "string"
    if ttype in Name.Tag:
        return "key"
    if ttype in Name.Variable:
        return "msg"
    return None


def code_blocks(text: str, lexer: Any, parts: Iterable[str] = PARTS, data: bool = False,
                gettext: bool = False) -> list[Block]:
    """The prose of ``text`` as ``lexer`` reads it: comments and strings for code (``parts``), string values only for
    data files (``data``), the ``msgstr`` strings for gettext catalogues (``gettext``)."""
    wanted = {"string"} if data or gettext else {"comment" if p == "comments" else "string" for p in parts}
    blocks: list[Block] = []
    pieces: list[Piece] = []
    current: str | None = None  # the kind of the block being gathered
    in_msgstr = False

    def flush() -> None:
        nonlocal pieces, current
        if (b := block_of(pieces)) is not None:
            blocks.append(b)
        pieces, current = [], None

    kinds: dict[Any, str | None] = {}  # a lexer emits few token types: each is classified once
    for index, ttype, value in lexer.get_tokens_unprocessed(text):
        if ttype not in kinds:
            kinds[ttype] = _kind(ttype)
        kind = kinds[ttype]
        if gettext and kind == "msg":
            in_msgstr = value.startswith("msgstr")
        if kind == "context" and current == "string":
            pieces.append(Piece(value, None, prose=False))
            continue
        if kind == "key" or (gettext and not in_msgstr and kind == "string"):
            flush()
            continue
        if kind in wanted and kind is not None:
            if current != kind:
                flush()
                current = kind
            pieces += without_urls(value, index)
            continue
        if not value.strip() and current == "comment":
            continue  # white space between line comments: the same block
        if current is not None:
            flush()
    flush()
    return blocks
