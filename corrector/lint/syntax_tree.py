"""Prose in source code read with tree-sitter, where it is installed: the language's own grammar instead of Pygments'
lexer (``code.py``), for files whose grammar is importable, either from ``tree_sitter_language_pack`` or as the
grammar's own package (``tree_sitter_python``, ``tree_sitter_javascript``, ...).

Comments are nodes whose type names a comment; strings are the content nodes of string literals (``string_content``,
``string_fragment``), so interpolations (``f"{x}"``, `` `${x}` ``) are left out and escapes are context. Comments in a
row with nothing but white space between them are one block; each string literal is one.
"""

from __future__ import annotations

import bisect
import functools
import importlib
from collections.abc import Iterable
from pathlib import PurePath
from typing import Any

from .document import Block, Piece, block_of
from .prose import without_urls

GRAMMARS = {  # file suffix -> tree-sitter language name
    ".py": "python", ".pyi": "python", ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript",
    ".jsx": "javascript", ".ts": "typescript", ".tsx": "tsx", ".go": "go", ".rs": "rust", ".java": "java",
    ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".rb": "ruby", ".sh": "bash",
    ".bash": "bash", ".cs": "c_sharp", ".kt": "kotlin", ".swift": "swift", ".php": "php", ".lua": "lua",
    ".scala": "scala",
}
CONTENT = {"string_content", "string_fragment", "raw_string_content", "quoted_content", "string_value"}
ESCAPES = {"escape_sequence"}
INTERPOLATIONS = {"interpolation", "template_substitution", "string_interpolation"}  # context, as written


@functools.lru_cache(maxsize=64)
def parser_for(name: str) -> Any | None:
    """A tree-sitter parser for a file called ``name``, or None (no grammar installed for it, or no tree-sitter)."""
    lang = GRAMMARS.get(PurePath(name).suffix.lower())
    if lang is None:
        return None
    try:
        from tree_sitter import Language, Parser
    except ImportError:
        return None
    try:
        from tree_sitter_language_pack import get_language

        return Parser(get_language(lang))
    except Exception:  # not installed, or without this grammar
        pass
    try:
        module = importlib.import_module(f"tree_sitter_{'typescript' if lang == 'tsx' else lang}")
        make = getattr(module, f"language_{lang}", None) or module.language
        return Parser(Language(make()))
    except Exception:
        return None


def tree_blocks(text: str, parser: Any, parts: Iterable[str]) -> list[Block]:
    """The comments and strings (``parts``) of ``text`` as ``parser`` reads it."""
    data = text.encode("utf-8")
    starts: list[int] = []  # the byte offset of each character
    at = 0
    for c in text:
        starts.append(at)
        at += len(c.encode("utf-8"))

    def char(byte: int) -> int:
        return bisect.bisect_left(starts, byte)

    wanted = set(parts)
    blocks: list[Block] = []
    comment: list[Piece] = []
    last_end = -1

    def flush_comment() -> None:
        nonlocal comment
        if (b := block_of(comment)) is not None:
            blocks.append(b)
        comment = []

    def visit(node: Any) -> None:
        nonlocal last_end
        kind = node.type
        if "comment" in kind:
            if "comments" in wanted:
                if comment and data[last_end:node.start_byte].strip():
                    flush_comment()
                start = char(node.start_byte)
                comment.extend(without_urls(text[start:char(node.end_byte)], start))
                last_end = node.end_byte
            return
        if "string" in kind and node.is_named and kind not in CONTENT:
            if "strings" in wanted:
                pieces = _string_pieces(node, text, char)
                if (b := block_of(pieces)) is not None:
                    blocks.append(b)
            return
        if comment and node.child_count == 0 and node.start_byte >= last_end and data[last_end:node.start_byte].strip():
            flush_comment()
        for child in node.children:
            visit(child)

    visit(parser.parse(data).root_node)
    flush_comment()
    return blocks


def _string_pieces(node: Any, text: str, char: Any) -> list[Piece]:
    """A string literal's content as pieces: content nodes are prose, escapes context, the rest (quotes,
    interpolations) left out; a literal without content nodes is read whole, less its quotes."""
    out: list[Piece] = []

    def walk(n: Any) -> None:
        if n.type in CONTENT:
            start, end = char(n.start_byte), char(n.end_byte)
            inner = [c for c in n.children if c.type in ESCAPES]
            at = start
            for e in inner:  # (tree-sitter-python nests escapes inside the content)
                es, ee = char(e.start_byte), char(e.end_byte)
                out.extend(without_urls(text[at:es], at))
                out.append(Piece(text[es:ee], None, prose=False))
                at = ee
            out.extend(without_urls(text[at:end], at))
        elif n.type in ESCAPES or n.type in INTERPOLATIONS:
            out.append(Piece(text[char(n.start_byte):char(n.end_byte)], None, prose=False))
        else:
            for c in n.children:
                walk(c)

    walk(node)
    if not out and node.child_count == 0:
        start, end = char(node.start_byte), char(node.end_byte)
        body = text[start:end]
        quote = len(body) - len(body.lstrip("\"'`"))
        out = without_urls(body[quote:len(body) - quote], start + quote) if len(body) > 2 * quote else []
    return out
