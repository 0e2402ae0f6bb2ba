"""``python -m corrector lint`` on Word documents and EPUB books: the prose read with its places (body, table,
header, footnote, comment; never a field's result, an image, deleted text), the findings where ``correct_batch``
puts its edits, and ``--review``: a copy in which each fix is a tracked change and each other finding a comment, that
LibreOffice opens and in which accepting every change gives the corrected sentences, and that differs from the
original only in the runs that hold a change or a comment."""

from __future__ import annotations

import copy
import io
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import system_dependency
from lint_fake import lint
from lxml import etree
from word_files import build, part_xml

from corrector.lint.word import W, word_document

ROOT = Path(__file__).resolve().parents[1]
BODY = [[("他", ""), ("以经", "b"), ("走了，", "i"), ("我们明天", ""), ("在见", "bi"), ("。", "")],
        [("一切都好，", "b"), ("没有问题。", "")]]


def traps(path: Path) -> Path:
    """Slips in every place that is not prose: a field's result, an image's description, another author's deleted
    text; and slips in prose in the body, a table cell, the header, a footnote and a comment."""
    return build(path, body=BODY, cell="表格里以经写好", header="页眉以经", field="第以经页", footnote="脚注以经",
                 comment="批注在见", alt="图片以经", revision=("删去的以经", "加上"))


def test_the_prose_of_a_word_document_and_where_each_paragraph_is(here):
    doc, blocks = word_document("a.docx", traps(here / "a.docx").read_bytes())
    lines = doc.text.split("\n")
    assert lines[0] == "他以经走了，我们明天在见。" and lines[1] == "一切都好，没有问题。加上"  # deleted text unread
    assert "图片" not in doc.text  # the image's description is not read
    prose = "".join(p.text for b in blocks for p in b.pieces if p.prose)
    assert "第以经页" in doc.text and "第以经页" not in prose  # a field's result is context
    assert [p for p in doc.places.values()] == [
        "paragraph 1", "paragraph 2", "paragraph 3", "paragraph 4 (table 1, row 1, cell 1)",
        "paragraph 5 (table 1, row 1, cell 2)", "header 1, paragraph 1", "footnote 1, paragraph 1",
        "comment 1, paragraph 1"]
    wheres = {b.text: b.pieces[0].where for b in blocks}
    assert wheres["表格里以经写好"] == "table cell" and wheres["脚注以经"] == "footnote" and wheres["批注在见"] == "comment"
    assert [p.text for p in blocks[0].pieces] == ["他", "以经", "走了，", "我们明天", "在见", "。"]  # runs kept


def test_findings_in_a_word_document_and_its_formats(fake, here, capsys):
    traps(here / "a.docx")
    code, out, err = lint(capsys, "a.docx", "--color", "never")
    assert code == 1 and err == ""
    lines = [line for line in out.splitlines() if not line.startswith(" ")]
    assert lines[0] == "a.docx:1:2: 以经→已经 (0.95, pinyin, at paragraph 1, character 2; or 亦)"
    assert lines[1] == "a.docx:1:11: 在见→再见 (0.60, pinyin, at paragraph 1, character 11)"
    assert "a.docx:5:4: 以经→已经 (0.95, pinyin, in a table cell, at paragraph 5 (table 1, row 1, cell 2), " \
           "character 4; or 亦)" in lines
    assert any("in a header, at header 1, paragraph 1, character 3" in x for x in lines)
    assert any("in a footnote, at footnote 1, paragraph 1, character 3" in x for x in lines)
    assert any("in a comment, at comment 1, paragraph 1, character 3" in x for x in lines)
    assert lines[-1] == "6 findings in 1 of 1 file (4 fixable with --fix)"  # none in the field, image or deletion
    sarif = json.loads(lint(capsys, "a.docx", "--format", "sarif")[1])
    where = sarif["runs"][0]["results"][0]["locations"][0]
    assert where["logicalLocations"] == [{"fullyQualifiedName": "paragraph 1, character 2", "kind": "text"}]
    before = (here / "a.docx").read_bytes()
    code, _, err = lint(capsys, "a.docx", "--fix")
    assert (here / "a.docx").read_bytes() == before
    assert "a.docx: not fixed in place (a Word document; --review OUT.docx writes a copy" in err


def test_review_usage_errors(fake, here, capsys):
    traps(here / "a.docx")
    (here / "b.md").write_text("他以经走了。\n", encoding="utf-8")
    for argv, says in ((["b.md", "--review", "out.docx"], "--review needs one Word document"),
                       (["a.docx", "--review", "a.docx"], "give it another file name"),
                       (["a.docx", "--fix", "--review", "out.docx"], "not allowed with argument")):
        code, out, err = lint(capsys, *argv)
        assert code == 2 and says in err and err.count("\n") == 1, err


def _reject_all(root: etree._Element, comment_ids: set[str]) -> etree._Element:
    """``root`` with electra-csc's changes rejected, its comments' marks removed, and runs of equal properties
    merged (so that a split run reads as it was)."""
    root = copy.deepcopy(root)
    for el in list(root.iter(f"{W}ins", f"{W}del")):
        if el.get(f"{W}author") != "electra-csc":
            continue
        parent = el.getparent()
        if el.tag == f"{W}del":
            at = parent.index(el)
            for i, run in enumerate(list(el)):
                for t in run.iter(f"{W}delText"):
                    t.tag = f"{W}t"
                parent.insert(at + i, run)
        parent.remove(el)
    for el in list(root.iter(f"{W}commentRangeStart", f"{W}commentRangeEnd", f"{W}commentReference")):
        if el.get(f"{W}id") in comment_ids:
            node = el.getparent() if el.tag == f"{W}commentReference" else el
            node.getparent().remove(node)
    for p in root.iter(f"{W}p"):
        runs = [r for r in p if r.tag == f"{W}r"]
        for a, b in zip(runs, runs[1:]):
            same = (a.getnext() is b and dict(a.attrib) == dict(b.attrib) and
                    etree.tostring(a.find(f"{W}rPr") if a.find(f"{W}rPr") is not None else etree.Element("x")) ==
                    etree.tostring(b.find(f"{W}rPr") if b.find(f"{W}rPr") is not None else etree.Element("x")))
            if same and [c.tag for c in a if c.tag != f"{W}rPr"] == [f"{W}t"] and \
                    [c.tag for c in b if c.tag != f"{W}rPr"] == [f"{W}t"]:
                b.find(f"{W}t").text = a.find(f"{W}t").text + b.find(f"{W}t").text
                p.remove(a)
    for t in root.iter(f"{W}t"):
        t.attrib.pop("{http://www.w3.org/XML/1998/namespace}space", None)
    return root


def test_review_writes_tracked_changes_and_comments_and_nothing_else(fake, here, capsys):
    traps(here / "a.docx")
    code, _, err = lint(capsys, "a.docx", "--review", "out.docx")
    assert code == 1
    # 以经 (0.95) in the body, the table, the header and the footnote: tracked changes; 在见 (0.6) in the body: a
    # comment; 在见 in the comment: no comment on a comment
    assert "wrote out.docx: 4 tracked changes, 1 comment" in err
    assert "a.docx:8:3: not marked in the review: a comment stands only in the body" in err
    body = part_xml(here / "out.docx")
    root = etree.fromstring(body.encode())
    deletion = root.find(f".//{W}del[@{W}author='electra-csc']")
    insertion = deletion.getnext()
    assert insertion.tag == f"{W}ins" and insertion.get(f"{W}author") == "electra-csc"
    assert deletion.findtext(f".//{W}delText") == "以" and insertion.findtext(f".//{W}t") == "已"
    assert deletion.find(f"{W}r/{W}rPr/{W}b") is not None and insertion.find(f"{W}r/{W}rPr/{W}b") is not None  # bold kept
    comments = etree.fromstring(part_xml(here / "out.docx", "word/comments.xml").encode())
    ours = [c for c in comments.iter(f"{W}comment") if c.get(f"{W}author") == "electra-csc"]
    assert len(ours) == 1 and "".join(ours[0].itertext()) == "在见→再见 (similar sound, confidence 0.60)"
    assert [c.get(f"{W}author") for c in comments.iter(f"{W}comment")] == ["审稿人", "electra-csc"]  # theirs kept
    # rejecting every change and removing the marks gives back the original, run for run
    original = etree.fromstring(part_xml(here / "a.docx").encode())
    ids = {c.get(f"{W}id") for c in ours}
    assert etree.tostring(_reject_all(root, ids)) == etree.tostring(_reject_all(original, set()))
    assert "审稿人" in body and "删去的以经" in body  # another author's revision untouched
    # every other part reads as it was
    before, after = zipfile.ZipFile(here / "a.docx"), zipfile.ZipFile(here / "out.docx")
    changed = {"word/document.xml", "word/comments.xml", "word/header1.xml", "word/footnotes.xml"}
    for name in before.namelist():
        if name in changed:
            continue
        a, b = before.read(name), after.read(name)
        if name.endswith((".xml", ".rels")):
            a, b = (etree.tostring(etree.fromstring(x), method="c14n") for x in (a, b))
        assert a == b, name


@pytest.mark.slow
def test_libreoffice_opens_the_review_and_accepting_every_change_gives_the_corrections(fake, here, capsys):
    soffice = shutil.which("soffice") or shutil.which("libreoffice")
    system_dependency(soffice is not None, "LibreOffice (libreoffice-writer-nogui) is not installed")
    traps(here / "a.docx")
    assert lint(capsys, "a.docx", "--review", "out.docx")[0] == 1
    profile = here / "profile"
    done = subprocess.run([soffice, "--headless", "--norestore", f"-env:UserInstallation=file://{profile}",
                           "--convert-to", "odt", "--outdir", str(here / "odt"), str(here / "out.docx")],
                          capture_output=True, text=True, timeout=180)
    assert (here / "odt" / "out.odt").is_file(), done.stdout + done.stderr
    content = etree.fromstring(zipfile.ZipFile(here / "odt" / "out.odt").read("content.xml"))
    text_ns = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
    office_ns = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"
    changes = content.find(f".//{{{text_ns}}}tracked-changes")
    regions = changes.findall(f"{{{text_ns}}}changed-region")
    assert len(regions) == 8  # four deletions, four insertions, all read as tracked changes
    # accepting every change: the deletions (kept in the tracked-changes list) go, the insertions stay
    changes.getparent().remove(changes)
    for note in list(content.iter(f"{{{office_ns}}}annotation")):
        note.getparent().remove(note)
    accepted = [("".join(p.itertext())) for p in content.iter(f"{{{text_ns}}}p")]
    assert "他已经走了，我们明天在见。" in "".join(accepted)
    assert "表格里已经写好" in accepted and "脚注已经" in "".join(accepted)
    annotations = etree.fromstring(zipfile.ZipFile(here / "odt" / "out.odt").read("content.xml"))
    said = ["".join(a.itertext()) for a in annotations.iter(f"{{{office_ns}}}annotation")]
    assert any("在见→再见" in s for s in said)


def test_an_epub_book_is_read_chapter_by_chapter(fake, here, capsys):
    book = io.BytesIO()
    with zipfile.ZipFile(book, "w") as z:
        z.writestr("mimetype", "application/epub+zip")
        z.writestr("META-INF/container.xml", '<?xml version="1.0"?><container version="1.0" '
                   'xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles><rootfile '
                   'full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>')
        z.writestr("OEBPS/content.opf", '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" '
                   'version="3.0"><manifest><item id="c2" href="text/ch2.xhtml" media-type="application/xhtml+xml"/>'
                   '<item id="c1" href="text/ch1.xhtml" media-type="application/xhtml+xml"/>'
                   '<item id="css" href="style.css" media-type="text/css"/></manifest>'
                   '<spine><itemref idref="c1"/><itemref idref="c2"/></spine></package>')
        z.writestr("OEBPS/text/ch1.xhtml", "<html><body>\n<h1>第一章</h1>\n<p>他以经走了。</p>\n</body></html>")
        z.writestr("OEBPS/text/ch2.xhtml", "<html><body>\n<p>一切都好。</p>\n<pre>代码以经</pre>\n"
                   "<p>明天在见。</p>\n</body></html>")
        z.writestr("OEBPS/style.css", "p { color: red } /* 以经 */")
    (here / "book.epub").write_bytes(book.getvalue())
    code, out, _ = lint(capsys, "book.epub", "--format", "json")
    found = [(f["path"], f["line"], f["column"]) for f in json.loads(out)["findings"]]
    assert found == [("book.epub!/OEBPS/text/ch1.xhtml", 3, 5), ("book.epub!/OEBPS/text/ch2.xhtml", 4, 6)]
    (here / "bad.epub").write_bytes(b"PK\x03\x04 not a zip")
    code, _, err = lint(capsys, "bad.epub")
    assert code == 2 and "bad.epub: not an EPUB book" in err


def test_without_the_documents_extra_a_word_file_says_so_in_one_line(fake, here, capsys, monkeypatch):
    traps(here / "a.docx")
    (here / "b.md").write_text("他以经走了。\n", encoding="utf-8")
    for name in [m for m in sys.modules if m == "docx" or m.startswith("docx.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "docx", None)
    code, out, err = lint(capsys, ".")
    assert code == 2 and "b.md:1:2: 以经→已经" in out  # the other files are still checked
    assert err.count("\n") == 1 and "a.docx: reading a word file needs the 'documents' extra" in err


@pytest.mark.slow
def test_a_real_corrector_finds_in_a_word_document_what_correct_batch_finds(forced_bundle, forced, here):
    """The tiny model that edits every character it may: every finding is where correct_batch puts an edit in the
    same paragraph's text, and none is in a field's result, an image or deleted text."""
    from corrector.lint.project_config import PUBLISHED

    traps(here / "a.docx")
    (here / ".electra-csc.toml").write_text("terms = 0\n", encoding="utf-8")  # (以经, written six times, is no term)
    done = subprocess.run([sys.executable, "-m", "corrector", "lint", "a.docx", "--model", str(forced_bundle),
                           "--format", "json", "--no-cache"], capture_output=True, text=True, cwd=here,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 1, done.stderr
    got = {(f["line"], f["column"], f["target"]) for f in json.loads(done.stdout)["findings"]}
    doc, blocks = word_document("a.docx", (here / "a.docx").read_bytes())
    expected = set()
    for block in blocks:
        for e in forced.correct_batch([block.text], **dict(PUBLISHED))[0].edits:  # lint's settings
            at = block.locate(e.position, len(e.source))
            if at is not None:
                expected.add((*doc.line_col(at), e.target))
    assert got == expected and got
    field_line = next(n for n, place in doc.places.items() if place.startswith("header"))
    field_at = doc.line_text(field_line).index("第以经页") + 1
    assert not any(line == field_line and column >= field_at for line, column, _ in got)


def test_a_word_document_is_answered_from_the_cache_with_its_places(fake, here, capsys):
    traps(here / "a.docx")
    first = lint(capsys, "a.docx", "--format", "json")[1]
    calls = len(fake.calls)
    assert lint(capsys, "a.docx", "--format", "json")[1] == first and len(fake.calls) == calls
    assert json.loads(first)["findings"][0]["place"] == "paragraph 1, character 2"


def test_a_body_paragraph_is_placed_under_its_heading(here):
    from docx import Document as WordFile

    document = WordFile()
    document.add_paragraph("前言。")
    document.add_heading("第一章 研究方法与实验设计的总体思路和具体步骤说明", level=1)
    document.add_paragraph("第一段。")
    document.add_heading("1.1 数据", level=2)
    document.add_paragraph("第二段。")
    document.save(str(here / "h.docx"))
    doc, blocks = word_document("h.docx", (here / "h.docx").read_bytes())
    assert list(doc.places.values()) == [
        "paragraph 1", "paragraph 2", "paragraph 3 under “第一章 研究方法与实验设计的总体思路和具体步骤…”",
        "paragraph 4 under “第一章 研究方法与实验设计的总体思路和具体步骤…”", "paragraph 5 under “1.1 数据”"]
    assert [b.pieces[0].where for b in blocks] == ["", "heading", "", "heading", ""]
