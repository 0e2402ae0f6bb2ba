"""Which parser reads a file, by its name: Markdown, HTML, plain text, data files, gettext catalogues, subtitles,
LaTeX, Word documents, EPUB books, or source code (tree-sitter's grammar where one is installed, else any language
Pygments knows). A file of none of these kinds is not checked."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
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
SUBTITLES = {".srt", ".vtt", ".ass", ".ssa"}
LATEX = {".tex", ".ltx"}
WORD = {".docx"}
EPUB = {".epub"}
KINDS = ("markdown", "html", "text", "data", "gettext", "subtitles", "latex", "word", "epub", "code")
DOCUMENT_MODULES = {"docx", "lxml", "pylatexenc"}  # the 'documents' extra: Word documents and LaTeX


def kind_of(name: str) -> str | None:
    """The kind of a file called ``name`` (one of KINDS), or None when it is not checked."""
    suffix = PurePath(name).suffix.lower()
    for kind, suffixes in (("markdown", MARKDOWN), ("html", HTML), ("text", TEXT), ("data", DATA_SUFFIXES),
                           ("gettext", GETTEXT), ("subtitles", SUBTITLES), ("latex", LATEX), ("word", WORD),
                           ("epub", EPUB)):
        if suffix in suffixes:
            return kind
    return "code" if suffix and lexer_for(name) is not None else None


@dataclass(frozen=True)
class Read:
    """One document read from a file: a text file is one; an EPUB book is one per chapter (named ``book!/chapter``)."""

    shown: str
    kind: str  # how its blocks are found
    doc: Document
    data: bytes  # what its answer depends on (the chapter's bytes, for a book)
    blocks: tuple[Block, ...] | None = None  # found while reading (a Word document's)


def read_documents(shown: str, kind: str, data: bytes) -> list[Read]:
    """The documents in a file's bytes ``data``, read as ``kind``."""
    if kind == "latex":
        import pylatexenc  # noqa: F401  # the 'documents' extra, said here once for the file (read in blocks_of)
    if kind == "word":
        from .word import word_document

        doc, blocks = word_document(shown, data)
        return [Read(shown, kind, doc, data, tuple(blocks))]
    if kind == "epub":
        from .epub import chapters

        return [Read(d.path, "html", d, d.text.encode("utf-8")) for d in chapters(shown, data)]
    doc = Document.from_bytes(shown, data)
    if kind == "subtitles":  # read now: the cues' places are the document's, also when its findings are cached
        from .subtitles import subtitle_blocks

        return [Read(shown, kind, doc, data, tuple(subtitle_blocks(doc)))]
    return [Read(shown, kind, doc, data)]


def blocks_of(doc: Document, kind: str, parts: Iterable[str] = PARTS) -> list[Block]:
    """The prose blocks of ``doc`` read as ``kind``."""
    if kind == "markdown":
        return markdown_blocks(doc)
    if kind == "html":
        return html_blocks(doc.text)
    if kind == "text":
        return paragraphs(doc.text)
    if kind == "subtitles":
        from .subtitles import subtitle_blocks

        return subtitle_blocks(doc)
    if kind == "latex":
        from .latex import latex_blocks

        return latex_blocks(doc.text)
    if kind == "code" and (parser := parser_for(doc.path)) is not None:
        return tree_blocks(doc.text, parser, parts)
    lexer = lexer_for(doc.path if kind == "code" else f"x{PurePath(doc.path).suffix or '.json'}")
    if lexer is None:
        return []
    return code_blocks(doc.text, lexer, parts, data=kind == "data", gettext=kind == "gettext")
