"""Prose in Markdown, found by a CommonMark parser (markdown-it-py) with the syntax of MkDocs Material sites.

Checked: the text of paragraphs, headings, table cells, list items, block quotes, admonition titles and bodies, link
texts and image descriptions (a finding in a heading, a table cell, a title, a link text or an image description says
so: ``Piece.where``). Never checked: fenced and indented code, inline code, math (``$...$``, ``$$...$$``),
URLs and link targets, HTML tags and attributes, front matter
(``---`` YAML and MkDocs' ``key: value`` lines at the top). An HTML block's text is read as HTML, its attributes
never. Admonitions (``!!!``, ``???``, ``???+``) and content tabs
(``=== "Tab"``) have indented bodies that CommonMark alone reads as code: their bodies are read as Markdown.
Inline code and math stay in the block's text as context (the sentence reads as rendered); an edit there is dropped.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from .document import Block, Document, Piece, block_of
from .html import html_blocks

_TAB = re.compile(r"^([ \t]*)===(\+?)([ \t]+\")", re.M)  # pymdownx content tabs, read as admonitions
_META_KEY = re.compile(r"[A-Za-z][A-Za-z0-9_-]*:")  # MkDocs (Python-Markdown) meta-data: key: value lines at the top


@functools.lru_cache(maxsize=1)
def parser() -> Any:
    from markdown_it import MarkdownIt  # the 'lint' extra
    from mdit_py_plugins.admon import admon_plugin
    from mdit_py_plugins.dollarmath import dollarmath_plugin
    from mdit_py_plugins.front_matter import front_matter_plugin

    md = MarkdownIt("commonmark", {"linkify": True}).enable(["table", "linkify", "strikethrough"])
    return md.use(front_matter_plugin).use(admon_plugin).use(dollarmath_plugin, double_inline=True)


def _same_length_view(text: str) -> str:
    """``text`` as the parser should read it, every offset unchanged: content tabs written as admonitions (``===`` to
    ``!!!``, ``===+`` to ``???+``), MkDocs meta-data lines blanked."""
    view = _TAB.sub(lambda m: m.group(1) + ("???" if m.group(2) else "!!!") + m.group(2) + m.group(3), text)
    if not _META_KEY.match(view):
        return view
    end = view.find("\n\n")
    end = len(view) if end < 0 else end
    return re.sub(r"[^\n]", " ", view[:end]) + view[end:]


def markdown_blocks(doc: Document) -> list[Block]:
    src = _same_length_view(doc.text)
    starts = [0] + [m.end() for m in re.finditer(r"\n", src)]

    def offset(line: int) -> int:
        return starts[line] if line < len(starts) else len(src)

    blocks: list[Block] = []
    container = ""  # what the next inline token is: a heading, a table cell, an admonition's title, or prose
    for token in parser().parse(src):
        if token.type in CONTAINERS:
            container = CONTAINERS[token.type]
        elif token.type.endswith("_close"):
            container = ""
        if token.type == "inline" and token.map:
            block = _inline_block(token, src, offset(token.map[0]), offset(token.map[1]), container)
            if block is not None:
                blocks.append(block)
        elif token.type == "html_block" and token.map:
            lo, hi = offset(token.map[0]), offset(token.map[1])
            blocks += html_blocks(src[lo:hi], lo, attributes=False)  # Markdown's HTML: its text only
    return blocks


CONTAINERS = {"heading_open": "heading", "th_open": "table cell", "td_open": "table cell",
              "admonition_title_open": "label"}  # block tokens whose text is no running prose, and what it is


def _inline_block(token: Any, src: str, lo: int, hi: int, where: str = "") -> Block | None:
    """The pieces of one inline token, each found in ``src[lo:hi]`` in order (the parser gives lines, not columns);
    ``where``: what its text is (``CONTAINERS``); a link's text is a "link text", an image's an "image description"."""
    pieces: list[Piece] = []
    cursor = lo
    in_url_link = False
    in_link = False

    def find(content: str) -> int | None:
        nonlocal cursor
        at = src.find(content, cursor, hi) if content else -1
        if at < 0:
            return None
        cursor = at + len(content)
        return at

    for child in token.children or []:
        kind = child.type
        if kind == "text":
            at = find(child.content)
            prose = at is not None and not in_url_link
            pieces.append(Piece(child.content, at if prose else None, prose, "link text" if in_link else where))
        elif kind in ("code_inline", "math_inline", "math_inline_double"):
            find(child.content)
            pieces.append(Piece(child.content, None, prose=False))
        elif kind == "image":
            at = find(child.content)
            pieces.append(Piece(child.content, at, at is not None, "image description"))
        elif kind == "link_open":
            in_url_link = child.markup in ("autolink", "linkify")
            in_link = not in_url_link
        elif kind == "link_close":
            in_url_link = in_link = False
        elif kind == "html_inline":
            find(child.content)
    return block_of(pieces)
