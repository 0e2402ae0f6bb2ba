"""Which parser reads a file, by its name: Markdown, HTML, plain text, data files, gettext catalogues, or source
code (tree-sitter's grammar where one is installed, else any language Pygments knows). A file of none of these kinds
is not checked."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import PurePath

from .code import DATA_SUFFIXES, PARTS, code_blocks, lexer_for
from .document import Block, Document
from .html import html_blocks
from .markdown import markdown_blocks
from .prose import paragraphs
from .syntax_tree import parser_for, tree_blocks

MARKDOWN = {".md", ".markdown", ".mdown", ".mkd", ".mdx"}
HTML = {".html", ".htm", ".xhtml"}
TEXT = {".txt", ".text", ".rst", ".adoc", ".org"}
GETTEXT = {".po", ".pot"}
KINDS = ("markdown", "html", "text", "data", "gettext", "code")


def kind_of(name: str) -> str | None:
    """The kind of a file called ``name`` (one of KINDS), or None when it is not checked."""
    suffix = PurePath(name).suffix.lower()
    for kind, suffixes in (("markdown", MARKDOWN), ("html", HTML), ("text", TEXT), ("data", DATA_SUFFIXES),
                           ("gettext", GETTEXT)):
        if suffix in suffixes:
            return kind
    return "code" if suffix and lexer_for(name) is not None else None


def blocks_of(doc: Document, kind: str, parts: Iterable[str] = PARTS) -> list[Block]:
    """The prose blocks of ``doc`` read as ``kind``."""
    if kind == "markdown":
        return markdown_blocks(doc)
    if kind == "html":
        return html_blocks(doc.text)
    if kind == "text":
        return paragraphs(doc.text)
    if kind == "code" and (parser := parser_for(doc.path)) is not None:
        return tree_blocks(doc.text, parser, parts)
    lexer = lexer_for(doc.path if kind == "code" else f"x{PurePath(doc.path).suffix or '.json'}")
    if lexer is None:
        return []
    return code_blocks(doc.text, lexer, parts, data=kind == "data", gettext=kind == "gettext")
