"""``python -m corrector lint`` on subtitles (.srt, .vtt, .ass) and LaTeX: the slips planted in cue text and prose are
found at their cue, line and column, none in the traps (timings, cue settings, tags, styles, math, commands,
``\\cite`` keys, labels, verbatim), and ``--fix`` changes only the fixed characters."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from corrector.lint import command_line as command
from corrector.lint.document import Document
from corrector.lint.extract import blocks_of, read_documents

ROOT = Path(__file__).resolve().parents[1]

SRT = ("1\n00:00:01,000 --> 00:00:03,500\n他以经走了，\n<i>我们明天在见</i>。\n\n"
       "2\n00:00:04,000 --> 00:00:05,000 X1:100\n{\\an8}以经说过了\n\n")
VTT = ("WEBVTT - 以经\n\nNOTE 以经 这是注释\n\nSTYLE\n::cue { color: red } /* 以经 */\n\n"
       "intro\n00:01.000 --> 00:03.000 align:start\n<v 以经>他以经走了&amp;<00:02.000>明天在见\n\n"
       "00:04.000 --> 00:05.000\n一切都好\n")
ASS = ("[Script Info]\nTitle: 以经\nScriptType: v4.00+\n\n[V4+ Styles]\nFormat: Name, Fontname\nStyle: 以经,Arial\n\n"
       "[Events]\nFormat: Layer, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text\n"
       "Comment: 0,0:00:00.00,0:00:01.00,Default,,0,0,0,,以经不读\n"
       "Dialogue: 0,0:00:01.00,0:00:03.00,以经,以经,0,0,0,,{\\i1}他以经走了{\\i0}\\N明天在见\n")
TEX = ("\\documentclass{article}\n\\usepackage{ctex}\n\\begin{document}\n\\section{他以经走了}\n"
       "我们\\textbf{以经}完成，见\\ref{fig:以经}和\\cite{wang以经}，$以经+1$ 与 \\[以经\\]。% 以经\n"
       "\\label{sec:以经}\n\\begin{verbatim}\n以经\n\\end{verbatim}\n\\begin{equation}\n\\text{以经}\n\\end{equation}\n"
       "明天在见。\n\\end{document}\n")


@pytest.fixture
def folder(here) -> Path:
    (here / ".electra-csc.toml").write_text("terms = 0\n", encoding="utf-8")  # (以经 recurs on purpose)
    return here


def findings(capsys, name: str) -> list[tuple[int, int, str, str]]:
    assert command.main(["--no-progress", name, "--format", "json", "--no-cache"]) == 1
    return [(f["line"], f["column"], f["word"] + "→" + f["word_target"], f["place"])
            for f in json.loads(capsys.readouterr().out)["findings"]]


@pytest.mark.parametrize("name,text,expected", [
    ("a.srt", SRT, [(3, 2, "以经→已经", "cue 1 (00:00:01,000), character 2"),
                    (4, 8, "在见→再见", "cue 1 (00:00:01,000), character 8"),
                    (8, 7, "以经→已经", "cue 2 (00:00:04,000), character 7")]),
    ("a.vtt", VTT, [(10, 8, "以经→已经", "cue intro (00:01.000), character 8"),
                    (10, 30, "在见→再见", "cue intro (00:01.000), character 30")]),
    ("a.ass", ASS, [(12, 54, "以经→已经", "cue 1 (0:00:01.00), character 54"),
                    (12, 67, "在见→再见", "cue 1 (0:00:01.00), character 67")]),
    ("a.tex", TEX, [(4, 11, "以经→已经", ""), (5, 11, "以经→已经", ""), (13, 3, "在见→再见", "")]),
])
def test_planted_slips_are_found_and_the_traps_are_not_read(fake, folder, capsys, name, text, expected):
    (folder / name).write_text(text, encoding="utf-8")
    got = findings(capsys, name)
    assert [(line, column, change, place) for line, column, change, place in got] == expected
    for line, column, _, _ in got:  # each where the file holds the slip
        assert text.split("\n")[line - 1][column - 1] in "以在"


@pytest.mark.parametrize("name,text", [("a.srt", SRT), ("a.vtt", VTT), ("a.ass", ASS), ("a.tex", TEX)])
def test_fix_changes_only_the_fixed_characters(fake, folder, capsys, name, text):
    (folder / name).write_bytes(text.replace("\n", "\r\n").encode("utf-8"))
    assert command.main(["--no-progress", name, "--fix", "--no-cache"]) == 1  # 在见 (0.6) is left
    after = (folder / name).read_bytes().decode("utf-8")
    expected = list(text.replace("\n", "\r\n"))
    doc = Document.from_bytes(name, text.replace("\n", "\r\n").encode("utf-8"))
    for block in read_documents(name, "subtitles" if name[-3:] != "tex" else "latex", doc.encode())[0].blocks or \
            blocks_of(doc, "latex"):
        at = block.text.find("以经")
        while at >= 0:
            offset = block.locate(at)
            if offset is not None:
                expected[offset] = "已"
            at = block.text.find("以经", at + 1)
    assert after == "".join(expected) and after != text.replace("\n", "\r\n")
    assert after.replace("已经", "以经") == text.replace("\n", "\r\n")


@pytest.mark.slow
def test_no_finding_in_a_trap_with_a_model_that_edits_every_character(forced_bundle, folder):
    """The tiny model that edits every character it may: whatever it proposes lies in cue text or prose."""
    prose = {"a.srt": "他以经走了，我们明天在见。以经说过了", "a.vtt": "他以经走了明天在见一切都好",
             "a.ass": "他以经走了明天在见", "a.tex": "他以经走了我们以经完成，见和，与。明天在见。"}
    for name, text in (("a.srt", SRT), ("a.vtt", VTT), ("a.ass", ASS), ("a.tex", TEX)):
        (folder / name).write_text(text, encoding="utf-8")
        done = subprocess.run([sys.executable, "-m", "corrector", "lint", name, "--model", str(forced_bundle),
                               "--format", "json", "--no-cache"], capture_output=True, text=True, cwd=folder,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert done.returncode in (0, 1), done.stderr
        got = json.loads(done.stdout)["findings"]
        assert got, name
        for f in got:
            assert f["source"] in prose[name], (name, f)
            line = text.split("\n")[f["line"] - 1]
            assert not line.startswith(("Comment:", "Style:", "Title:", "NOTE", "\\label", "WEBVTT")), (name, f)
            before = line[:f["column"] - 1]
            assert before.count("{") == before.count("}") or name == "a.tex", (name, f)  # never inside {\i1}
            assert before.count("<") == before.count(">") and before.count("$") % 2 == 0, (name, f)


def test_inline_directives_in_the_formats_comments(fake, folder, capsys):
    """LaTeX's ``%``, ASS's ``;`` lines and WebVTT's NOTE blocks carry the same directives as other comments."""
    (folder / "a.tex").write_text("% electra-csc: disable-next-line\n他以经走了。\n我们以经到了。\n", encoding="utf-8")
    (folder / "a.ass").write_text(ASS.replace("Dialogue:", "; electra-csc: disable-next-line\nDialogue:"),
                                encoding="utf-8")
    (folder / "a.vtt").write_text("WEBVTT\n\nNOTE electra-csc: disable\n\n00:01.000 --> 00:02.000\n他以经走了\n\n"
                                "NOTE electra-csc: enable\n\n00:03.000 --> 00:04.000\n我们以经到了\n", encoding="utf-8")
    assert [line for line, *_ in findings(capsys, "a.tex")] == [3]
    assert command.main(["--no-progress", "a.ass", "--no-cache"]) == 0
    capsys.readouterr()
    assert [line for line, *_ in findings(capsys, "a.vtt")] == [11]


def test_cached_findings_keep_their_cue(fake, folder, capsys):
    (folder / "a.srt").write_text(SRT, encoding="utf-8")
    argv = ["--no-progress", "a.srt", "--format", "json"]
    assert command.main(argv) == 1
    first = json.loads(capsys.readouterr().out)["findings"]
    calls = len(fake.calls)
    assert command.main(argv) == 1
    assert json.loads(capsys.readouterr().out)["findings"] == first and len(fake.calls) == calls  # from the cache
    assert first[0]["place"] == "cue 1 (00:00:01,000), character 2"
