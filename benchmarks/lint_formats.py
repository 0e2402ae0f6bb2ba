"""The linter on the files people hand in: subtitles with planted homophone slips, and a 100-page Word document
reviewed end to end.

    python benchmarks/lint_formats.py                       # both, with the shipped bundle
    python benchmarks/lint_formats.py --cues 600 --pages 100 --seed 1

Text from the corpus (``news_xwlb``: transcripts of spoken news, the kind of speech subtitles are made of), cut into
sentences of 8-40 characters; it is corpus text, so the language model has counted it (a user's own subtitles do
worse, not better).

**Subtitles**: one sentence a cue, in an SRT file with its timings and, as a control, the same sentences one a
paragraph in a plain-text file. Slips are planted in one cue in three (``lint_precision.Planter``: ``homophone``, a
character replaced by a frequent one of the same reading that makes a non-word, and ``word``, a two-character word
replaced by another frequent word of the same toneless pinyin, half each: the slips speech recognition makes). The
table gives the planted slips found with the right fix at their cue, the findings in the other cues, and the same
for the plain-text control: the reader should cost nothing.

**Word**: ``--pages`` pages of about 600 Chinese characters (paragraphs of corpus sentences in runs of mixed
formatting, a table every ten pages, a header with a page field), one slip planted in every fifth paragraph;
``lint FILE.docx --review OUT.docx`` is timed as a user runs it (model load included, wall and CPU), beside the
reader alone (``word_document``), ``correct_batch`` on the same paragraphs' text, and the review's writing.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _checkout  # noqa: F401
from lint_precision import Planter

from corrector.text.chars import cjk_count, split_sentences

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "data" / "corpus" / "news_xwlb.txt.gz"


def sentences(count: int, seed: int) -> list[str]:
    """``count`` distinct corpus sentences of 8-40 characters, mostly Chinese, from a seeded stretch of the file."""
    rng = random.Random(seed)
    skip = rng.randrange(100_000)
    out: list[str] = []
    seen: set[str] = set()
    with gzip.open(CORPUS, "rt", encoding="utf-8") as f:
        for n, line in enumerate(f):
            if n < skip:
                continue
            for s in split_sentences(line.strip()):
                if 8 <= len(s) <= 40 and cjk_count(s) >= 0.8 * len(s) and s not in seen:
                    seen.add(s)
                    out.append(s)
            if len(out) >= count:
                return out
    return out


def plant(planter: Planter, texts: list[str], every: int) -> list[dict[str, Any]]:
    """Plants a slip in every ``every``-th text (in place), homophone and word in turn; returns them (index,
    position, written, right, kind)."""
    planted: list[dict[str, Any]] = []
    for i in range(0, len(texts), every):
        kind = ("homophone", "word")[len(planted) % 2]
        made = planter.plant(kind, texts[i]) or planter.plant("homophone", texts[i])
        if made is None:
            continue
        at, written = made
        planted.append({"index": i, "position": at, "written": written, "right": texts[i][at], "kind": kind})
        texts[i] = texts[i][:at] + written + texts[i][at + 1:]
    return planted


def lint(path: Path, *extra: str) -> tuple[list[dict[str, Any]], float, float, str]:
    """The findings of ``lint path`` as a user runs it (no cache), its wall and CPU seconds, and its stderr."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "corrector", "lint", str(path), "--format", "json", "--no-progress",
                           "--no-cache", *extra], cwd=path.parent, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(f"lint {path} failed ({done.returncode}): {done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return json.loads(done.stdout)["findings"], wall, cpu, done.stderr


def srt_time(seconds: float) -> str:
    ms = round(seconds * 1000)
    return f"{ms // 3_600_000:02d}:{ms // 60_000 % 60:02d}:{ms // 1000 % 60:02d},{ms % 1000:03d}"


def subtitles(planter: Planter, cues: int, seed: int, folder: Path) -> dict[str, Any]:
    texts = sentences(cues, seed)
    planted = plant(planter, texts, 3)
    srt, lines_of = [], {}
    for i, t in enumerate(texts):
        srt += [str(i + 1), f"{srt_time(i * 3.0)} --> {srt_time(i * 3.0 + 2.5)}", t, ""]
        lines_of[len(srt) - 1] = i  # the 1-based line of cue i's text
    (folder / "talk.srt").write_text("\n".join(srt), encoding="utf-8")
    (folder / "talk.txt").write_text("\n\n".join(texts) + "\n", encoding="utf-8")
    row: dict[str, Any] = {"cues": len(texts), "planted": len(planted)}
    for name in ("talk.srt", "talk.txt"):
        found, wall, cpu, _ = lint(folder / name)
        by_place: dict[tuple[int | None, int], dict[str, Any]] = {}
        for f in found:
            index = lines_of.get(f["line"]) if name.endswith(".srt") else (f["line"] - 1) // 2
            by_place[(index, f["column"] - 1)] = f
        hit = sum(1 for p in planted if by_place.get((p["index"], p["position"]), {}).get("target") == p["right"])
        slipped = {p["index"] for p in planted}
        other = sum(1 for (index, _) in by_place if index not in slipped)
        row[name] = {"found": hit, "other_cue_findings": other, "findings": len(found), "wall_s": round(wall, 1),
                     "cpu_s": round(cpu, 1)}
    return row


def word(planter: Planter, pages: int, seed: int, folder: Path) -> dict[str, Any]:
    from docx import Document as WordFile

    from corrector import Corrector
    from corrector.lint.word import word_document
    from corrector.model_path import default_model_path

    texts = sentences(pages * 25, seed + 1)  # about 24 characters a sentence, 600 a page
    paragraphs = [texts[i:i + 5] for i in range(0, len(texts), 5)]
    flat = ["".join(p) for p in paragraphs]
    planted = plant(planter, flat, 5)
    document = WordFile()
    document.sections[0].header.paragraphs[0].add_run("内部文件")
    rng = random.Random(seed)
    for n, text in enumerate(flat):
        p = document.add_paragraph()
        at = 0
        while at < len(text):  # runs of 3-30 characters, some bold or italic
            step = rng.randint(3, 30)
            run = p.add_run(text[at:at + step])
            run.bold, run.italic = rng.random() < 0.2 or None, rng.random() < 0.1 or None
            at += step
        if n % 50 == 49:
            table = document.add_table(rows=2, cols=2)
            for cell in (c for row in table.rows for c in row.cells):
                cell.text = "表格内容"
    path = folder / "report.docx"
    document.save(str(path))
    chars = sum(map(len, flat))
    t0 = time.perf_counter()
    doc, blocks = word_document(path.name, path.read_bytes())
    read_s = time.perf_counter() - t0
    corrector = Corrector.load(default_model_path())
    block_texts = [b.text for b in blocks]
    corrector.correct_batch(block_texts[:8])  # warm
    t0 = time.perf_counter()
    corrector.correct_batch(block_texts)
    correct_s = time.perf_counter() - t0
    found, wall, cpu, err = lint(path, "--review", str(folder / "reviewed.docx"))
    line_of = {doc.line_text(line): line for line in doc.places}
    by_place = {(f["line"], f["column"] - 1): f for f in found}
    hit = sum(1 for p in planted
              if by_place.get((line_of.get(flat[p["index"]]), p["position"]), {}).get("target") == p["right"])
    return {"pages": pages, "paragraphs": len(flat), "chinese_chars": chars, "planted": len(planted), "found": hit,
            "findings": len(found), "review_wall_s": round(wall, 1), "review_cpu_s": round(cpu, 1),
            "reader_s": round(read_s, 2), "correct_batch_s": round(correct_s, 1),
            "review": err.strip().splitlines()[-1] if err.strip() else ""}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cues", type=int, default=600)
    ap.add_argument("--pages", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", choices=("subtitles", "word"))
    args = ap.parse_args(argv)
    planter = Planter(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if args.only != "word":
            print("subtitles:", json.dumps(subtitles(planter, args.cues, args.seed, folder), ensure_ascii=False))
        if args.only != "subtitles":
            print("word:", json.dumps(word(planter, args.pages, args.seed, folder), ensure_ascii=False))


if __name__ == "__main__":
    main()
