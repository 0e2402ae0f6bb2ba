"""Prose in HTML, found by the standard library's parser: text, and the ``alt`` and ``title`` attributes.

Never checked: tags and other attributes, comments, and what ``script``, ``style``, ``pre``, ``code``, ``kbd``,
``samp``, ``textarea`` and ``math`` hold (inline ``code`` stays in its sentence as context). Block-level tags end a
block. Entities are context only (a fix cannot be written into one).
"""

from __future__ import annotations

import html
from html.parser import HTMLParser

from .document import Block, Piece, block_of
from .prose import without_urls

SKIPPED = {"script", "style", "pre", "code", "kbd", "samp", "textarea", "math", "svg", "template"}
INLINE_SKIPPED = {"code", "kbd", "samp"}  # kept in the sentence as context
BLOCK_TAGS = {"address", "article", "aside", "blockquote", "body", "br", "caption", "dd", "details", "div", "dl", "dt",
              "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "head", "header", "hr",
              "html", "li", "main", "nav", "ol", "p", "pre", "section", "summary", "table", "tbody", "td", "tfoot",
              "th", "thead", "title", "tr", "ul", "option", "button", "label"}
ATTRIBUTES = ("alt", "title")


class _Prose(HTMLParser):
    def __init__(self, text: str, base: int, attributes: bool):
        super().__init__(convert_charrefs=False)
        self.text, self.base, self.attributes = text, base, attributes
        self.starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]
        self.blocks: list[Block] = []
        self.pieces: list[Piece] = []
        self.skipping: list[str] = []  # the skipped elements open here

    def here(self) -> int:
        line, col = self.getpos()
        return self.starts[line - 1] + col

    def flush(self) -> None:
        if (b := block_of(self.pieces)) is not None:
            self.blocks.append(b)
        self.pieces = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in BLOCK_TAGS:
            self.flush()
        if tag in SKIPPED:
            self.skipping.append(tag)
            return
        if self.skipping or not self.attributes:
            return
        raw, start = self.get_starttag_text() or "", self.here()
        for name, value in attrs:
            if name in ATTRIBUTES and value and (at := raw.find(value)) >= 0 and (
                    b := block_of(without_urls(value, self.base + start + at))) is not None:
                self.blocks.append(b)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag in SKIPPED:
            self.skipping.pop()

    def handle_endtag(self, tag: str) -> None:
        if tag in self.skipping:
            while self.skipping and self.skipping.pop() != tag:
                pass
        if tag in BLOCK_TAGS:
            self.flush()

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            self.pieces += without_urls(data, self.base + self.here())
        elif all(t in INLINE_SKIPPED for t in self.skipping):
            self.pieces.append(Piece(data, None, prose=False))

    def handle_entityref(self, name: str) -> None:
        if not self.skipping:
            self.pieces.append(Piece(html.unescape(f"&{name};"), None, prose=False))

    def handle_charref(self, name: str) -> None:
        if not self.skipping:
            self.pieces.append(Piece(html.unescape(f"&#{name};"), None, prose=False))


def html_blocks(text: str, base: int = 0, attributes: bool = True) -> list[Block]:
    """The prose of HTML ``text`` lying at document offset ``base`` (``attributes``: ``alt`` and ``title`` too)."""
    parser = _Prose(text, base, attributes)
    parser.feed(text)
    parser.close()
    parser.flush()
    return parser.blocks
