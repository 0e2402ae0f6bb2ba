"""An EPUB book's chapters: the XHTML files of its spine, in reading order, each read as HTML and named by the book
and the chapter's path inside it (``book.epub!/OEBPS/ch01.xhtml``, as a zip entry is named in a jar: URL), so that a finding's line is the chapter file's."""

from __future__ import annotations

import io
import posixpath
import zipfile
from dataclasses import replace
from xml.etree import ElementTree

from .document import Document, DocumentError

CONTAINER = "META-INF/container.xml"
XHTML = {"application/xhtml+xml", "text/html"}


def chapters(path: str, data: bytes) -> list[Document]:
    """The chapters of the EPUB ``data`` in spine order, as documents named ``path!/chapter``."""
    try:
        book = zipfile.ZipFile(io.BytesIO(data))
        root = ElementTree.fromstring(book.read(CONTAINER))
        opf_path = next(e.get("full-path") for e in root.iter() if e.tag.endswith("rootfile"))
        if not opf_path:
            raise ValueError("no package document")
        opf = ElementTree.fromstring(book.read(opf_path))
    except (zipfile.BadZipFile, KeyError, StopIteration, ValueError, ElementTree.ParseError) as e:
        raise DocumentError(f"{path}: not an EPUB book ({e or type(e).__name__})") from None
    base = posixpath.dirname(opf_path)
    items = {e.get("id"): e for e in opf.iter() if e.tag.endswith("}item")}
    order = [e.get("idref") for e in opf.iter() if e.tag.endswith("}itemref")]
    out = []
    for ref in order:
        item = items.get(ref)
        if item is None or item.get("media-type") not in XHTML or not item.get("href"):
            continue
        name = posixpath.normpath(posixpath.join(base, item.get("href", "")))
        try:
            text = Document.from_bytes(f"{path}!/{name}", book.read(name))
        except KeyError:
            raise DocumentError(f"{path}: the chapter {name} is missing from the book") from None
        out.append(replace(text, encoding="epub"))
    return out
