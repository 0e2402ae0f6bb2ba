"""The prose of a Word document (.docx), with a place for every character: the body (tables included), headers,
footers, footnotes, endnotes and comments, each paragraph one line of the document's text (``Document.text``), in
that order. The runs' text is prose; what a field shows (a page number, a date, a cross-reference), tabs and
breaks are context only; deleted text (``w:delText``), field codes, images and text boxes are not read.

``paragraphs`` walks one part's XML and is shared by the reader (``word_document``) and by the review
(``word_review.py``), so that an offset in the text names the same ``w:t`` element in both.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .document import Block, Document, DocumentError, Piece, block_of

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
MC_FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"
# never read: what an image, a text box or a deletion holds, and the copy kept for older readers
UNREAD = {f"{W}drawing", f"{W}pict", f"{W}object", f"{W}del", f"{W}moveFrom", MC_FALLBACK}
STORIES = (("document", "body"), ("header", "header"), ("footer", "footer"), ("footnotes", "footnote"),
           ("endnotes", "endnote"), ("comments", "comment"))
HEADING_CHARS = 24  # a heading longer than this is shortened in a place
_PART = re.compile(r"^/word/(document|header|footer|footnotes|endnotes|comments)(\d*)\.xml$")


@dataclass(frozen=True)
class Text:
    """One ``w:t`` (prose) or other piece of a paragraph: its text, and the element it comes from."""

    text: str
    element: Any
    prose: bool


@dataclass(frozen=True)
class Paragraph:
    element: Any
    place: str  # where a person finds it: "paragraph 12 under “2.1 方法”", "header 1, paragraph 1", "footnote 2, ..."
    where: str  # Piece.where: "" in running prose, else "heading", "table cell", "header", "footnote", ...
    items: tuple[Text, ...]

    @property
    def text(self) -> str:
        return "".join(t.text for t in self.items)


def story_parts(parts: Any) -> list[tuple[str, str, Any]]:
    """(story, its number, part) of the parts that hold text, in reading order; ``parts`` yields python-docx parts."""
    found = []
    for part in parts:
        if (m := _PART.match(str(part.partname))) is not None:
            found.append((m.group(1), m.group(2), part))
    rank = {name: i for i, (name, _) in enumerate(STORIES)}
    return sorted(found, key=lambda x: (rank[x[0]], int(x[1] or 0)))


def paragraphs(root: Any, story: str, number: str) -> Iterator[Paragraph]:
    """The paragraphs of one part's XML ``root`` in document order, with their pieces."""
    label = dict(STORIES)[story]
    count: dict[str, int] = {}
    tables: dict[int, int] = {}  # a table's number, by its element's id
    heading = ""  # the body's last heading so far: where a person looks in a long document
    for p in root.iter(f"{W}p"):
        if _unread(p, root):
            continue
        holder = _holder(p, story)  # the footnote, endnote or comment holding it, if any
        key = holder.get(f"{W}id", "") if holder is not None else ""
        if holder is not None and holder.get(f"{W}type") not in (None, "normal"):
            continue  # a footnote separator
        count[key] = count.get(key, 0) + 1
        if story == "document":
            place = f"paragraph {count[key]}" + (f" under “{heading}”" if heading else "")
        elif story == "comments":  # numbered as Word shows them, in order
            place = f"{label} {len(count)}, paragraph {count[key]}"
        elif holder is not None:
            place = f"{label} {key}, paragraph {count[key]}"
        else:
            place = f"{label} {number or 1}, paragraph {count[key]}"
        if (cell := _up(p, f"{W}tc", root)) is not None:
            row = cell.getparent()
            table = row.getparent()
            n = tables.setdefault(id(table), len(tables) + 1)
            place += (f" (table {n}, row {table.findall(f'{W}tr').index(row) + 1}, "
                      f"cell {row.findall(f'{W}tc').index(cell) + 1})")
        where = ("table cell" if cell is not None else "heading" if _heading(p) else
                 "" if story == "document" else label)
        items = tuple(_items(p, root))
        if where == "heading" and story == "document":
            text = "".join(t.text for t in items).strip()
            heading = text if len(text) <= HEADING_CHARS else text[:HEADING_CHARS - 1] + "…"
        yield Paragraph(p, place, where, items)


def word_document(path: str, data: bytes) -> tuple[Document, list[Block]]:
    """The document's text (a paragraph a line) and its prose blocks (a paragraph each)."""
    from docx import Document as WordFile  # the 'documents' extra
    from docx.opc.exceptions import PackageNotFoundError

    try:
        word = WordFile(io.BytesIO(data))
    except (PackageNotFoundError, KeyError, ValueError, OSError) as e:
        raise DocumentError(f"{path}: not a Word document ({e})") from None
    lines: list[str] = []
    places: dict[int, str] = {}
    blocks: list[Block] = []
    at = 0
    for story, number, part in story_parts(word.part.package.iter_parts()):
        for para in paragraphs(part_root(part), story, number):
            pieces, inside = [], at
            for t in para.items:
                pieces.append(Piece(t.text, inside, t.prose, para.where))
                inside += len(t.text)
            if (b := block_of(pieces)) is not None:
                blocks.append(b)
            lines.append(para.text.replace("\n", " "))
            places[len(lines)] = para.place
            at = inside + 1
    return Document(path, "\n".join(lines), encoding="docx", places=places), blocks


def part_root(part: Any) -> Any:
    """A part's XML: python-docx's element for the parts it models, else parsed from its bytes (footnotes)."""
    element = getattr(part, "element", None)
    if element is not None:
        return element
    from docx.oxml.parser import parse_xml

    return parse_xml(part.blob)


def _items(p: Any, root: Any) -> Iterator[Text]:
    fields = 0  # complex fields open: what they show is context
    for el in p.iter(f"{W}t", f"{W}tab", f"{W}fldChar", f"{W}fldSimple"):
        if _owner(el) is not p or _unread(el, p):
            continue
        tag = el.tag
        if tag == f"{W}fldChar":
            kind = el.get(f"{W}fldCharType")
            fields += 1 if kind == "begin" else -1 if kind == "end" and fields else 0
        elif tag == f"{W}t" and el.text:
            yield Text(el.text, el, prose=not fields and _up(el, f"{W}fldSimple", p) is None)
        elif tag == f"{W}tab" and el.getparent().tag == f"{W}r":
            yield Text("\t", el, prose=False)


def _owner(el: Any) -> Any:
    """The nearest paragraph holding ``el``."""
    up = el.getparent()
    while up is not None and up.tag != f"{W}p":
        up = up.getparent()
    return up


def _unread(el: Any, stop: Any) -> bool:
    up = el.getparent()
    while up is not None and up is not stop:
        if up.tag in UNREAD:
            return True
        up = up.getparent()
    return False


def _up(el: Any, tag: str, stop: Any) -> Any:
    """The nearest element ``tag`` holding ``el`` below ``stop``, or None."""
    up = el.getparent()
    while up is not None and up is not stop:
        if up.tag == tag:
            return up
        up = up.getparent()
    return None


def _holder(p: Any, story: str) -> Any:
    if story not in ("footnotes", "endnotes", "comments"):
        return None
    tag = {"footnotes": f"{W}footnote", "endnotes": f"{W}endnote", "comments": f"{W}comment"}[story]
    up = p.getparent()
    while up is not None and up.tag != tag:
        up = up.getparent()
    return up


def _heading(p: Any) -> bool:
    style = p.find(f"{W}pPr/{W}pStyle")
    name = (style.get(f"{W}val") or "") if style is not None else ""
    return name.lower().startswith(("heading", "title")) or p.find(f"{W}pPr/{W}outlineLvl") is not None
