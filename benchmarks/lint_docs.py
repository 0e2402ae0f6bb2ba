"""``python -m corrector lint`` on a real documents tree with planted slips: positions, traps, --fix, speed.

    python benchmarks/lint_docs.py                                  # ../shared/data/docs/oi-wiki, 150 pages planted
    python benchmarks/lint_docs.py --pages 425 --json docs.json

A copy of the tree is made and, in each of ``--pages`` pages (every page in turn), one erroneous sentence of
wang271k_dev (one slip, its correction known) is planted as a new prose paragraph after the page's first paragraph,
and other erroneous sentences as traps where they are not prose: a fenced code block, inline code, a bare URL and a
link target, an HTML attribute, and YAML front matter; plus a few HTML pages of the same kind (prose paragraphs;
traps in script, style, pre, code, a data attribute and a comment). Then:

1. findings: each planted slip found at its line and column with its correction, against ``correct_batch`` on the
   same sentences as plain text; no finding inside any trap;
2. ``--fix`` on another copy: every byte outside the fixed characters unchanged;
3. speed over the whole tree: a cold run (empty cache, the model loaded), a cached re-run, and ``correct_batch`` alone
   on the same prose blocks (characters per second).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _checkout  # noqa: F401

from corrector.lint.document import Document
from corrector.lint.extract import blocks_of, kind_of

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"


def one_slip_pairs(path: Path, seed: int) -> list[tuple[str, str, int]]:
    """(source, target, position) of the pairs with exactly one changed character, 12-40 characters, in a seeded
    order."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        s, t = line.split("\t")[:2]
        diff = [i for i, (a, b) in enumerate(zip(s, t)) if a != b]
        if len(s) == len(t) and 12 <= len(s) <= 40 and len(diff) == 1 and "`" not in s + t:
            out.append((s, t, diff[0]))
    random.Random(seed).shuffle(out)
    return out


def plant(text: str, prose: str, traps: list[str]) -> tuple[str, int, list[tuple[int, int]]]:
    """``text`` with ``prose`` as a new paragraph after its first paragraph and ``traps[0..6]`` as front matter, a
    fenced code block, inline code, a bare URL, a link target and an HTML attribute: the new text, the prose
    sentence's offset and the traps' (start, end) offsets."""
    front = f"---\ntitle: {traps[0]}\n---\n\n"
    doc = front + text
    blocks = blocks_of(Document("p.md", doc), "markdown")
    first = next((b for b in blocks if len(b.text) > 20 and b.pieces[-1].start is not None), None)
    end = doc.find("\n\n", first.pieces[-1].start) if first is not None else -1
    at = (end if end >= 0 else len(doc.rstrip("\n")))
    doc = doc[:at] + "\n\n" + prose + doc[at:]
    prose_at = at + 2
    tail = (f"\n\n```text\n{traps[1]}\n```\n\n行内的代码 `{traps[2]}` 在这里。\n\n网址 https://example.com/{traps[3]} 和"
            f"[链接](https://example.com/{traps[4]})。\n\n<span data-x=\"{traps[5]}\" title=\"\">这里没有错。</span>\n")
    base = len(doc.rstrip("\n"))
    doc = doc.rstrip("\n") + tail
    spans = [(len("---\ntitle: "), len("---\ntitle: ") + len(traps[0]))]
    for t in traps[1:6]:
        i = doc.index(t, base)
        spans.append((i, i + len(t)))
    return doc, prose_at, spans


HTML_PAGE = """<!DOCTYPE html>
<html><head><title>页面</title><style>/* {t0} */ p {{ color: red }}</style>
<script>var note = "{t1}";</script></head>
<body>
<p>{prose}</p>
<pre>{t2}</pre>
<p>代码 <code>{t3}</code> 之后。</p>
<div data-note="{t4}">这里没有错。</div>
<!-- {t5} -->
</body></html>
"""


def run_lint(tree: Path, *more: str) -> tuple[dict[str, Any], float]:
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "corrector", "lint", ".", "--format", "json", "--no-progress",
                           *more], cwd=tree, capture_output=True, text=True, env=_env())
    seconds = time.perf_counter() - t0
    if done.returncode not in (0, 1):
        raise SystemExit(f"lint failed ({done.returncode}): {done.stderr[-2000:]}")
    return json.loads(done.stdout), seconds


def _env() -> dict[str, str]:
    import os

    return {**os.environ, "PYTHONPATH": str(REPO)}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=Path, default=DATA / "docs" / "oi-wiki")
    ap.add_argument("--pairs", type=Path, default=DATA / "csc" / "wang271k_dev.tsv")
    ap.add_argument("--pages", type=int, default=150, help="pages that get a planted slip and traps (default 150)")
    ap.add_argument("--html", type=int, default=10, help="HTML pages added (default 10)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, help="also write the results here")
    args = ap.parse_args(argv)
    listed = one_slip_pairs(args.pairs, args.seed)
    pairs = iter(listed)  # each planted prose slip a different sentence
    rng = random.Random(args.seed + 1)

    def traps_for(avoid: str) -> list[str]:  # six different sentences for one page's traps (pages may share them)
        return [s for s, _, _ in rng.sample([p for p in listed if p[0] != avoid], 6)]
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "tree"
        shutil.copytree(args.docs, tree)
        pages = sorted(p for p in tree.rglob("*.md"))
        gold: list[dict[str, Any]] = []  # the planted slips: path, offset, source, target, sentence
        traps: dict[str, list[tuple[int, int]]] = {}
        for page in pages[:args.pages]:
            text = page.read_text(encoding="utf-8")
            s, t, i = next(pairs)
            trap_sentences = traps_for(s)
            new, at, spans = plant(text, s, trap_sentences)
            page.write_text(new, encoding="utf-8")
            rel = page.relative_to(tree).as_posix()
            gold.append({"path": rel, "offset": at + i, "source": s[i], "target": t[i], "sentence": s, "at": i})
            traps[rel] = spans
        for k in range(args.html):
            s, t, i = next(pairs)
            ts = traps_for(s)
            page = tree / "planted" / f"page{k}.html"
            page.parent.mkdir(exist_ok=True)
            text = HTML_PAGE.format(prose=s, **{f"t{j}": ts[j] for j in range(6)})
            page.write_text(text, encoding="utf-8")
            rel = page.relative_to(tree).as_posix()
            gold.append({"path": rel, "offset": text.index(s) + i, "source": s[i], "target": t[i], "sentence": s,
                         "at": i})
            traps[rel] = [(text.index(x), text.index(x) + len(x)) for x in ts]
        files = [p for p in tree.rglob("*") if p.is_file() and kind_of(p.name)]
        total_chars = sum(len(p.read_text(encoding="utf-8")) for p in files)
        fix_tree = Path(tmp) / "fix"
        shutil.copytree(tree, fix_tree)

        cold, cold_s = run_lint(tree)
        cached, cached_s = run_lint(tree)
        assert cached["findings"] == cold["findings"]
        findings = cold["findings"]
        docs = {rel: Document(rel, (tree / rel).read_text(encoding="utf-8")) for rel in traps}
        by_place = {(f["path"], f["line"], f["column"]): f for f in findings}
        in_traps = []
        for f in findings:
            if f["path"] in traps:
                off = f["offset"]
                if any(a <= off < b for a, b in traps[f["path"]]):
                    in_traps.append(f)
        lint_hits = 0
        for g in gold:
            line, col = docs[g["path"]].line_col(g["offset"]) if g["path"] in docs else (0, 0)
            f = by_place.get((g["path"], line, col))
            lint_hits += bool(f and f["target"] == g["target"])
        from corrector import Corrector

        corrector = Corrector.load()
        plain = corrector.correct_batch([g["sentence"] for g in gold])
        batch_hits = sum(any(e.position == g["at"] and e.target == g["target"] for e in c.edits)
                         for g, c in zip(gold, plain))
        # correct_batch alone on the same prose blocks, for the speed comparison
        texts = [b.text for p in files for b in blocks_of(Document(p.name, p.read_text(encoding="utf-8")),
                                                          kind_of(p.name) or "text")]
        t0 = time.perf_counter()
        corrector.correct_batch(texts)
        batch_s = time.perf_counter() - t0
        prose_chars = sum(map(len, texts))

        fixed, _ = run_lint(fix_tree, "--fix")
        changed_outside = 0
        fixed_chars = 0
        for p in files:
            rel = p.relative_to(tree).as_posix()
            before, after = (tree / rel).read_bytes(), (fix_tree / rel).read_bytes()
            if before == after:
                continue
            a, b = before.decode(), after.decode()
            if len(a) != len(b):
                changed_outside += 1
                continue
            diff = [i for i in range(len(a)) if a[i] != b[i]]
            fixable = {f["offset"] for f in findings if f["path"] == rel and f["fix"]}
            changed_outside += len(set(diff) - fixable)
            fixed_chars += len(diff)
        out = {
            "files": len(files), "characters": total_chars, "prose_characters": prose_chars,
            "planted": len(gold), "found_by_lint": lint_hits, "found_by_correct_batch": batch_hits,
            "findings": len(findings), "findings_in_traps": len(in_traps), "trap_spans": sum(map(len, traps.values())),
            "fixable": sum(f["fix"] for f in findings), "fixed_characters": fixed_chars,
            "changed_outside_fixes": changed_outside,
            "cold_s": round(cold_s, 2), "cached_s": round(cached_s, 2), "correct_batch_s": round(batch_s, 2),
            "cold_files_per_s": round(len(files) / cold_s, 1), "cold_chars_per_s": round(total_chars / cold_s),
            "cold_prose_chars_per_s": round(prose_chars / cold_s),
            "correct_batch_chars_per_s": round(prose_chars / batch_s),
            "cached_files_per_s": round(len(files) / cached_s), "trap_examples": in_traps[:5],
        }
    for name, value in out.items():
        print(f"{name:28} {value}")
    if args.json:
        args.json.write_text(json.dumps(out, ensure_ascii=False, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
