"""A file's text as stored, and the prose found in it: ``Document``, ``Block`` and ``Piece``.

A document keeps its bytes' encoding, BOM and line endings, so that a fix writes back exactly what was read except
the fixed characters. Positions are offsets into its text in code points (a ``str`` index); ``line_col`` turns one
into the 1-based line and column that editors and CI show (a ``\\r\\n`` ends a line like ``\\n``).
"""

from __future__ import annotations

import bisect
import codecs
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ENCODINGS = ("utf-8", "gb18030")  # tried in order; a UTF-8 BOM or a UTF-16 BOM decides at once
CONTAINERS = ("docx", "epub")


class DocumentError(Exception):
    """A file that cannot be read or written as text, said in one line."""


@dataclass(frozen=True)
class Piece:
    """Part of a block's text. ``start`` is its offset in the document, or None when its text is not the file's
    own (an entity or an escape decoded, a placeholder); ``prose`` False for what is shown to the corrector as context
    only (inline code, math, a URL): an edit there is dropped."""

    text: str
    start: int | None
    prose: bool = True
    where: str = ""  # "" for running prose, else what the text is (heading, link text, table cell, label, ...)


@dataclass(frozen=True)
class Block:
    """One text for the corrector (a paragraph, a heading, a table cell, a comment): its pieces in order."""

    pieces: tuple[Piece, ...]

    @property
    def text(self) -> str:
        return "".join(p.text for p in self.pieces)

    def where(self, position: int) -> str:
        """``Piece.where`` of the piece that holds ``position`` of the block's text ("" for running prose)."""
        at = 0
        for p in self.pieces:
            if at <= position < at + len(p.text):
                return p.where
            at += len(p.text)
        return ""

    def locate(self, position: int, length: int = 1) -> int | None:
        """The document offset of ``position`` in the block's text, when the ``length`` characters there lie in one
        prose piece that is the file's own text; else None."""
        at = 0
        for p in self.pieces:
            if at <= position < at + len(p.text):
                inside = position - at
                if p.prose and p.start is not None and inside + length <= len(p.text):
                    return p.start + inside
                return None
            at += len(p.text)
        return None


def block_of(pieces: list[Piece]) -> Block | None:
    """A block of ``pieces`` (empty ones dropped), or None when none of it is prose."""
    kept = tuple(p for p in pieces if p.text)
    return Block(kept) if any(p.prose and p.text.strip() for p in kept) else None


@dataclass
class Document:
    """A file's text and how it was stored."""

    path: str  # as given or found (relative to where the walk started), or "-" for stdin
    text: str
    encoding: str = "utf-8"  # "docx" or "epub": text read out of a container, which is never written back
    bom: bool = False
    places: dict[int, str] = field(default_factory=dict)  # by 1-based line: where a person finds it, where the line
    #                                                       number alone does not say (a Word paragraph, a subtitle cue)
    _starts: list[int] = field(default_factory=list, repr=False)

    @classmethod
    def from_bytes(cls, path: str, data: bytes) -> Document:
        if data.startswith(codecs.BOM_UTF8):
            return cls(path, _decode(path, data[3:], "utf-8"), "utf-8", bom=True)
        for bom, name in ((codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be")):
            if data.startswith(bom):
                return cls(path, _decode(path, data[2:], name), name, bom=True)
        if b"\x00" in data[:8192]:
            raise DocumentError(f"{path}: a binary file, not text")
        for name in ENCODINGS:
            try:
                return cls(path, data.decode(name), name)
            except UnicodeDecodeError:
                continue
        raise DocumentError(f"{path}: neither UTF-8 nor GB18030 text")

    @classmethod
    def read(cls, path: Path, shown: str | None = None) -> Document:
        try:
            data = path.read_bytes()
        except OSError as e:
            raise DocumentError(f"{shown or path}: {e.strerror or e}") from None
        return cls.from_bytes(shown or str(path), data)

    def encode(self, text: str | None = None) -> bytes:
        """``text`` (default: the document's) in the document's encoding, with its BOM."""
        body = (self.text if text is None else text).encode(self.encoding)
        if not self.bom:
            return body
        return (codecs.BOM_UTF8 if self.encoding == "utf-8" else
                codecs.BOM_UTF16_LE if self.encoding == "utf-16-le" else codecs.BOM_UTF16_BE) + body

    def line_col(self, offset: int) -> tuple[int, int]:
        """1-based line and column (code points) of ``offset``."""
        if not self._starts:
            self._starts = [0] + [i + 1 for i, c in enumerate(self.text) if c == "\n"]
        line = bisect.bisect_right(self._starts, offset) - 1
        return line + 1, offset - self._starts[line] + 1

    @property
    def container(self) -> bool:
        """Read out of a container (a Word document, an EPUB book): its text is not the file's bytes."""
        return self.encoding in CONTAINERS

    def place(self, line: int, column: int) -> str:
        """Where a person finds ``line``:``column`` when the line number alone does not say ("" otherwise)."""
        return f"{self.places[line]}, character {column}" if line in self.places else ""

    def line_text(self, line: int) -> str:
        """The text of 1-based ``line``, without its line ending."""
        self.line_col(0)
        start = self._starts[line - 1]
        end = self._starts[line] - 1 if line < len(self._starts) else len(self.text)
        return self.text[start:end].rstrip("\r")


def write_atomically(path: Path, data: bytes) -> None:
    """Replace ``path``'s content with ``data`` in one step (a temporary file beside it, renamed over it), keeping
    its permissions."""
    mode = path.stat().st_mode & 0o7777
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _decode(path: str, data: bytes, encoding: str) -> str:
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as e:
        raise DocumentError(f"{path}: not valid {encoding} ({e.reason} at byte {e.start})") from None
