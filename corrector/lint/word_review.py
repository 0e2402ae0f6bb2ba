"""``lint FILE.docx --review OUT.docx``: a copy of a Word document in which every finding is marked where it stands,
for a reviewer to accept or reject: a finding at or above the fix confidence as a tracked change (``w:del`` of the
character as written, ``w:ins`` of the suggestion, by the author ``electra-csc``), one below it as a comment naming
the suggestion, its confidence and its reason.

Only the runs that hold a finding change: such a run is split at the finding's characters, each part keeping the
run's properties (``w:rPr``) and attributes. Everything else (formatting, styles, images, fields, existing revisions
and comments) is written back as it was read. A finding inside an existing revision is left unmarked (changing
another author's revision would alter it), as is a comment outside the body: Word refuses one in a header or footer,
LibreOffice one in a footnote.
"""

from __future__ import annotations

import copy
import io
import itertools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .check import Finding
from .word import Text, W, paragraphs, part_root, story_parts

AUTHOR, INITIALS = "electra-csc", "CSC"
REVISIONS = {f"{W}ins", f"{W}del", f"{W}moveTo", f"{W}moveFrom"}
XML_SPACE = "{http://www.w3.org/XML/1998/namespace}space"


@dataclass
class Reviewed:
    changes: int = 0  # tracked changes written
    comments: int = 0  # comments written
    left: list[tuple[Finding, str]] = field(default_factory=list)  # not marked, and why


def review(data: bytes, findings: Sequence[Finding], out: Path, *, now: datetime | None = None) -> Reviewed:
    """Writes to ``out`` the Word document ``data`` with ``findings`` (read from these very bytes) marked."""
    from docx import Document as WordFile  # the 'documents' extra
    from docx.text.run import Run

    word = WordFile(io.BytesIO(data))
    when = (now or datetime.now(timezone.utc)).strftime("%Y-%m-%dT%H:%M:%SZ")
    done = Reviewed()
    # the same walk as the reader, so that an offset names the same w:t element
    index: list[tuple[int, Text, str]] = []  # (offset of the piece, the piece, its story)
    parts = [(story, number, part, part_root(part)) for story, number, part in story_parts(word.part.package.iter_parts())]
    at = 0
    for story, number, _part, root in parts:
        for para in paragraphs(root, story, number):
            for t in para.items:
                index.append((at, t, story))
                at += len(t.text)
            at += 1
    by_element: dict[int, tuple[int, Text, list[Finding]]] = {}  # by w:t element: its offset, the piece, its findings
    for f in findings:
        hit = next(((start, t, story) for start, t, story in index if start <= f.offset < start + len(t.text)), None)
        if hit is None or not hit[1].prose or hit[1].text[f.offset - hit[0]:f.offset - hit[0] + len(f.source)] != f.source:
            done.left.append((f, "the document does not hold it there"))
            continue
        start, t, story = hit
        if _in_revision(t.element):
            done.left.append((f, "inside a tracked change"))
            continue
        if not f.fix and story != "document":
            done.left.append((f, "a comment stands only in the body (one in a header or a footnote is refused by "
                                 "Word or by LibreOffice)"))
            continue
        by_element.setdefault(id(t.element), (start, t, []))[2].append(f)
    ids = _next_id(root for *_, root in parts)
    for base, t, found in by_element.values():
        at_cut = {f.offset - base: f for f in found}
        cuts = {c for f in found for c in (f.offset - base, f.offset - base + len(f.source))}
        for a, run in _split(t.element, cuts):  # one run per segment, in order
            here = at_cut.get(a)
            if here is None:
                continue
            if here.fix:
                _track(run, here.target, next(ids), next(ids), when)
                done.changes += 1
            else:
                word.add_comment(Run(run, word), text=_comment_text(here), author=AUTHOR, initials=INITIALS)
                done.comments += 1
    from lxml import etree

    for _story, _number, part, root in parts:
        if getattr(part, "element", None) is None:  # kept as bytes by python-docx: written back from its XML
            part._blob = etree.tostring(root, xml_declaration=True, encoding="UTF-8", standalone=True)
    word.save(str(out))
    return done


def _comment_text(f: Finding) -> str:
    from .report import REASON_WORDS

    also = f"; or {'/'.join(f.alternatives)}" if f.alternatives else ""
    return f"{f.change} ({REASON_WORDS.get(f.reason, f.reason)}, confidence {f.confidence:.2f}{also})"


def _in_revision(el: Any) -> bool:
    up = el.getparent()
    while up is not None and up.tag != f"{W}p":
        if up.tag in REVISIONS:
            return True
        up = up.getparent()
    return False


def _next_id(roots: Iterable[Any]) -> Iterator[int]:
    """Revision ids above every ``w:id`` in the document's parts."""
    top = 0
    for root in roots:
        for el in root.iter():
            value = el.get(f"{W}id")
            if value is not None and value.lstrip("-").isdigit():
                top = max(top, int(value))
    return itertools.count(top + 1)


def _split(t: Any, cuts: set[int]) -> list[tuple[int, Any]]:
    """Splits the run holding ``w:t`` element ``t`` so that its text's ``cuts`` fall between runs; returns the runs
    holding ``t``'s text, one per segment, each with the segment's start in that text (the first run also holds what
    came before ``t`` in the run, the last what came after). Each new run keeps the run's attributes and a copy of
    its properties."""
    run = t.getparent()
    props = run.find(f"{W}rPr")
    content = [c for c in run if c is not props]
    k = content.index(t)
    text = t.text or ""
    bounds = sorted({0, *(c for c in cuts if 0 < c < len(text)), len(text)})
    pieces = [text[a:b] for a, b in zip(bounds, bounds[1:])]
    runs = []
    for i, piece in enumerate(pieces):
        new = copy.copy(run)  # the run's tag and attributes (its children are replaced below)
        for child in list(new):
            new.remove(child)
        if props is not None:
            new.append(copy.deepcopy(props))
        for c in content[:k] if i == 0 else []:
            new.append(c)
        new.append(_text_element(f"{W}t", piece))
        for c in content[k + 1:] if i == len(pieces) - 1 else []:
            new.append(c)
        runs.append(new)
    parent = run.getparent()
    at = parent.index(run)
    parent.remove(run)
    for i, new in enumerate(runs):
        parent.insert(at + i, new)
    return list(zip(bounds, runs))


def _text_element(tag: str, text: str) -> Any:
    from docx.oxml import OxmlElement

    el = OxmlElement(tag.replace(W, "w:"))
    el.text = text
    if text != text.strip():
        el.set(XML_SPACE, "preserve")
    return el


def _track(run: Any, target: str, del_id: int, ins_id: int, when: str) -> None:
    """Turns ``run`` (holding exactly the characters as written) into a tracked deletion of them followed by a
    tracked insertion of ``target``, both with the run's properties."""
    from docx.oxml import OxmlElement

    parent = run.getparent()
    at = parent.index(run)
    inserted = copy.deepcopy(run)
    for t in run.findall(f"{W}t"):
        t.tag = f"{W}delText"
    for t in inserted.findall(f"{W}t"):
        t.text = target
    deletion, insertion = OxmlElement("w:del"), OxmlElement("w:ins")
    for el, n in ((deletion, del_id), (insertion, ins_id)):
        el.set(f"{W}id", str(n))
        el.set(f"{W}author", AUTHOR)
        el.set(f"{W}date", when)
    parent.remove(run)
    deletion.append(run)
    insertion.append(inserted)
    parent.insert(at, deletion)
    parent.insert(at + 1, insertion)
