"""Word documents built for the tests with python-docx: body text in several runs with mixed formatting, a table, a
header with a page-number field, a footnote, an image and a comment, each sentence given by the test."""

from __future__ import annotations

import io
import struct
import zlib
from pathlib import Path

from docx import Document
from docx.opc.constants import RELATIONSHIP_TYPE as RT
from docx.opc.packuri import PackURI
from docx.opc.part import Part
from docx.oxml import OxmlElement, parse_xml
from docx.oxml.ns import qn
from docx.shared import Inches

W_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
FOOTNOTES_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.footnotes+xml"


def png(width: int = 4, height: int = 4) -> bytes:
    """A small grey PNG."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    raw = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def _field(paragraph, instruction: str, shown: str) -> None:
    """A complex field (``PAGE``, say) showing ``shown``."""
    for kind, text in (("begin", None), ("instr", instruction), ("separate", None), ("shown", shown), ("end", None)):
        run = paragraph.add_run()
        if kind == "instr":
            el = OxmlElement("w:instrText")
            el.text = text
            run._r.append(el)
        elif kind == "shown":
            run.text = text
        else:
            el = OxmlElement("w:fldChar")
            el.set(qn("w:fldCharType"), kind)
            run._r.append(el)


def _footnote(document, paragraph, text: str) -> None:
    """A footnote holding ``text``, referenced at the end of ``paragraph`` (python-docx writes no footnotes)."""
    xml = (f'<w:footnotes xmlns:w="{W_NS}">'
           '<w:footnote w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p></w:footnote>'
           '<w:footnote w:type="continuationSeparator" w:id="0"><w:p><w:r><w:continuationSeparator/></w:r></w:p>'
           '</w:footnote>'
           f'<w:footnote w:id="1"><w:p><w:r><w:t>{text}</w:t></w:r></w:p></w:footnote></w:footnotes>')
    part = Part(PackURI("/word/footnotes.xml"), FOOTNOTES_TYPE, xml.encode(), document.part.package)
    document.part.relate_to(part, RT.FOOTNOTES)
    run = paragraph.add_run()
    ref = OxmlElement("w:footnoteReference")
    ref.set(qn("w:id"), "1")
    run._r.append(ref)


def _revision(paragraph, deleted: str, inserted: str) -> None:
    """Another author's tracked change at the end of ``paragraph``: ``deleted`` replaced by ``inserted``."""
    xml = (f'<w:root xmlns:w="{W_NS}"><w:del w:id="901" w:author="审稿人" w:date="2026-01-01T00:00:00Z"><w:r>'
           f'<w:delText>{deleted}</w:delText></w:r></w:del><w:ins w:id="902" w:author="审稿人" '
           f'w:date="2026-01-01T00:00:00Z"><w:r><w:t>{inserted}</w:t></w:r></w:ins></w:root>')
    for el in list(parse_xml(xml)):
        paragraph._p.append(el)


def build(path: Path, *, body: list[list[tuple[str, str]]], cell: str = "", header: str = "", field: str = "1",
          footnote: str = "", comment: str = "", image: bool = True, alt: str = "",
          revision: tuple[str, str] | None = None) -> Path:
    """A .docx at ``path``: ``body`` paragraphs, each a list of (text, style) runs (style: "", "b", "i" or "bi");
    a 1x2 table with ``cell`` in its second cell; ``header`` followed by a PAGE field showing ``field``;
    ``footnote`` on the first paragraph; an image (its description ``alt``) after the first paragraph; ``comment``
    on the last run; another author's ``revision`` (deleted, inserted) at the end of the last paragraph."""
    document = Document()
    paragraphs = []
    for runs in body:
        p = document.add_paragraph()
        for text, style in runs:
            run = p.add_run(text)
            run.bold, run.italic = "b" in style or None, "i" in style or None
        paragraphs.append(p)
    if image:
        pic = document.add_paragraph().add_run()
        pic.add_picture(io.BytesIO(png()), width=Inches(0.5))
        if alt:
            for el in pic._r.iter(qn("wp:docPr")):
                el.set("descr", alt)
    table = document.add_table(rows=1, cols=2)
    table.cell(0, 0).text = "项目"
    table.cell(0, 1).text = cell
    head = document.sections[0].header.paragraphs[0]
    head.add_run(header)
    _field(head, "PAGE", field)
    if footnote:
        _footnote(document, paragraphs[0], footnote)
    if revision:
        _revision(paragraphs[-1], *revision)
    if comment:
        last = paragraphs[-1].runs[-1]
        document.add_comment(last, text=comment, author="审稿人", initials="S")
    document.save(str(path))
    return path


def part_xml(path: Path, name: str = "word/document.xml") -> str:
    """One part's XML."""
    import zipfile

    return zipfile.ZipFile(path).read(name).decode("utf-8")
