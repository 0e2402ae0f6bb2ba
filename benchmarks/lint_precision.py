"""What ``python -m corrector lint`` reports on real documentation trees, and how much of it is right.

    python benchmarks/lint_precision.py                               # every tree in ../shared/data/docs
    python benchmarks/lint_precision.py --config off.toml             # another configuration (e.g. terms = 0)
    python benchmarks/lint_precision.py --trees hello-algo easy-rl --out runs/lint

Each tree is copied, slips are planted in its prose (``--plant``, below), and the copy is linted as a user would
(``lint TREE --format json``, the linter's defaults unless ``--config``, no cache). For each tree the table gives
its files, its Chinese characters, the findings outside the planted slips, findings per 10,000 Chinese characters,
the planted slips found with the right fix by kind, and the linter's speed in Chinese characters per CPU-second (the
command's own CPU time, model load included).

Planted slips (seeded, one per sentence, each a prose sentence of 12-80 characters of a Markdown page, as the
linter extracts it): ``homophone`` (one character of a dictionary word replaced by a frequent character of the
same reading, making a non-word: 已经 -> 以经), ``shape`` (the same with a look-alike: 已经 -> 己经), ``de`` (a
structural 地 or 得, as jieba's tagger marks them, written 的: 认真地 -> 认真的, 跑得快 -> 跑的快) and ``word`` (one
character of a two-character dictionary word replaced so that it becomes another frequent word of the same
toneless pinyin: 记录 -> 纪录, the IME's whole-word slip). A planted slip is found when a finding at its line and
column suggests the character it replaced. ``--out`` writes each tree's findings as a TSV (one row each: path, line, column, written, suggested,
confidence, 20 characters either side) to be judged.

A judged list (``--judged``, default ``benchmarks/data/lint_judged.tsv``) holds findings somebody read and judged:
``tree<TAB>path<TAB>line<TAB>written<TAB>suggested<TAB>verdict<TAB>note``, verdict ``slip`` (a real slip and the
right fix) or ``false`` (a false alarm: the text was right, or the fix is wrong). Every finding that matches a judged
row (tree, path, line, written and suggested) counts as judged, and the table gives how many are slips; a judged
slip that is no longer reported counts as missed. Judged on the text alone, with the page's neighbouring lines: a
finding is a slip only where the written character is wrong in mainland usage and the suggestion is the fix.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _checkout  # noqa: F401

from corrector.lint.document import Document
from corrector.lint.extract import blocks_of
from corrector.text.chars import cjk_count, is_cjk, split_sentences

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO.parent / "shared" / "data" / "docs"
JUDGED = REPO / "benchmarks" / "data" / "lint_judged.tsv"
WINDOW = 20
KINDS = {"homophone": 8, "shape": 8, "de": 4, "word": 6}  # slips planted in each tree, by kind


class Planter:
    """Makes one slip of a kind in a sentence, or None (see the module's docstring)."""

    def __init__(self, seed: int):
        import jieba
        import jieba.posseg
        from pypinyin import lazy_pinyin

        from corrector.bundle import SIMILARITY_DIR, Bundle
        from corrector.evidence.similarity import SimilarityTables
        from corrector.model_path import default_model_path

        self.rng = random.Random(seed)
        self.freq = jieba.dt.FREQ if jieba.dt.initialized else (jieba.dt.initialize() or jieba.dt.FREQ)
        self.cut, self.tagged, self.pinyin = jieba.lcut, jieba.posseg.lcut, lazy_pinyin
        self.tables = SimilarityTables.load(Bundle.load(default_model_path()).file(SIMILARITY_DIR))
        self.by_sound: dict[str, list[str]] = {}
        for w, n in self.freq.items():
            if len(w) == 2 and n >= 100 and all(is_cjk(c) for c in w):
                self.by_sound.setdefault("".join(lazy_pinyin(w)), []).append(w)

    def word(self, w: str) -> bool:
        return self.freq.get(w, 0) > 0

    def plant(self, kind: str, sentence: str) -> tuple[int, str] | None:
        """(position in ``sentence``, the character written there) of a slip of ``kind``, or None."""
        if kind == "de":
            pos, spots = 0, []
            for t in self.tagged(sentence):
                if (t.word, t.flag) in (("地", "uv"), ("得", "ud")):
                    spots.append(pos)
                pos += len(t.word)
            return (self.rng.choice(spots), "的") if spots else None
        pos, words = 0, []
        for w in self.cut(sentence, HMM=False):
            if len(w) in ((2,) if kind == "word" else (2, 3, 4)) and self.word(w) and all(is_cjk(c) for c in w):
                words.append((pos, w))
            pos += len(w)
        self.rng.shuffle(words)
        for start, w in words:
            for i in self.rng.sample(range(len(w)), len(w)):
                for c in self._replacements(kind, w, i):
                    return start + i, c
        return None

    def _replacements(self, kind: str, w: str, i: int) -> list[str]:
        if kind == "word":
            return [o[i] for o in self.by_sound.get("".join(self.pinyin(w)), [])
                    if o != w and o[1 - i] == w[1 - i] and self.freq[o] >= 1000][:1]
        near = (self.tables.pinyin_neighbours(w[i], 30) if kind == "homophone" else
                [(c, sim) for c, sim in self.tables.shape_neighbours(w[i], 30) if sim >= 0.6])
        out = [c for c, sim in near if sim >= 0.99 or kind == "shape"]
        out = [c for c in out if self.tables.frequency(c) >= 2000 and not self.word(w[:i] + c + w[i + 1:])]
        return self.rng.sample(out[:5], min(1, len(out)))


def plant_tree(tree: Path, planter: Planter, kinds: dict[str, int]) -> list[dict[str, Any]]:
    """Plants ``kinds`` slips in the Markdown pages of ``tree`` (a copy: changed in place) and returns them (path,
    line, column, kind, written, right)."""
    sentences = []
    for page in sorted(tree.rglob("*.md")):
        doc = Document(page.relative_to(tree).as_posix(), page.read_text(encoding="utf-8", errors="replace"))
        for block in blocks_of(doc, "markdown"):
            at = 0
            for sent in split_sentences(block.text):
                if 12 <= len(sent) <= 80 and cjk_count(sent) >= 0.7 * len(sent):
                    sentences.append((page, block, at, sent))
                at += len(sent)
    planter.rng.shuffle(sentences)
    todo = [k for k, n in kinds.items() for _ in range(n)]
    planted: list[dict[str, Any]] = []
    used: set[tuple[Path, int]] = set()
    texts: dict[Path, list[str]] = {}
    for page, block, at, sent in sentences:
        if not todo:
            break
        for kind in dict.fromkeys(todo):
            made = planter.plant(kind, sent)
            offset = block.locate(at + made[0], 1) if made else None
            if made is None or offset is None:
                continue
            chars = texts.setdefault(page, list(page.read_text(encoding="utf-8", errors="replace")))
            line = "".join(chars[:offset]).count("\n") + 1
            if (page, line) in used or chars[offset] != sent[made[0]]:
                continue
            used.add((page, line))
            column = offset - ("".join(chars[:offset]).rfind("\n") + 1) + 1
            planted.append({"path": page.relative_to(tree).as_posix(), "line": line, "column": column, "kind": kind,
                            "written": made[1], "right": chars[offset]})
            chars[offset] = made[1]
            todo.remove(kind)
            break
    for page, chars in texts.items():
        page.write_text("".join(chars), encoding="utf-8")
    return planted


def lint(tree: Path, config: Path | None) -> tuple[list[dict[str, Any]], float, float]:
    """The findings of ``lint tree`` (run from an empty folder, no cache), its wall time and its CPU time."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as here:
        done = subprocess.run([sys.executable, "-m", "corrector", "lint", str(tree), "--format", "json",
                               "--no-progress", "--no-cache", *(["--config", str(config)] if config else [])],
                              cwd=here, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(f"lint {tree} failed ({done.returncode}): {done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return json.loads(done.stdout)["findings"], wall, cpu


def relative(path: str, tree: Path) -> str:
    """A finding's path (as lint shows it, run elsewhere: the path it was given) relative to its tree."""
    return Path(path).relative_to(tree).as_posix()


def read_judged(path: Path) -> dict[tuple[str, str, int, str, str], str]:
    if not path.is_file():
        return {}
    out = {}
    with path.open(encoding="utf-8") as f:
        for row in csv.reader(f, delimiter="\t"):
            if row and not row[0].startswith("#") and len(row) >= 6:
                out[(row[0], row[1], int(row[2]), row[3], row[4])] = row[5]
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=Path, default=DOCS, help="a folder of documentation trees")
    ap.add_argument("--trees", nargs="*", help="these trees only (default: every folder in --docs)")
    ap.add_argument("--config", type=Path, help="the linter's configuration file for every tree (--config)")
    ap.add_argument("--judged", type=Path, default=JUDGED)
    ap.add_argument("--out", type=Path, help="write each tree's findings here as TREE.tsv")
    ap.add_argument("--json", type=Path, help="also write the table here")
    ap.add_argument("--no-plant", action="store_true", help="lint the trees as they are")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    planter = None if args.no_plant else Planter(args.seed)
    judged = read_judged(args.judged)
    docs = args.docs.resolve()
    trees = [docs / t for t in args.trees] if args.trees else sorted(p for p in docs.iterdir() if p.is_dir())
    rows = []
    print("| tree | files | Chinese characters | findings | per 10,000 | judged | slips | false alarms | judged slips "
          "missed | planted found (homophone, shape, de, word) | characters per CPU-second |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|")
    for tree in trees:
        pages = sorted(tree.rglob("*.md"))
        chars = sum(cjk_count(p.read_text(encoding="utf-8", errors="replace")) for p in pages)
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp) / tree.name
            shutil.copytree(tree, copy)
            planted = plant_tree(copy, planter, KINDS) if planter else []
            found, wall, cpu = lint(copy, args.config)
        at = {(p["path"], p["line"], p["column"]): p for p in planted}
        findings = []
        for f in found:
            f["path"] = str(tree / Path(f["path"]).relative_to(copy))
            p = at.get((relative(f["path"], tree), f["line"], f["column"]))
            if p is None:
                findings.append(f)
            elif f["target"] == p["right"]:
                p["found"] = True
        by_kind = {k: (sum(1 for p in planted if p["kind"] == k and p.get("found")),
                       sum(1 for p in planted if p["kind"] == k)) for k in KINDS}
        seen = set()
        verdicts = []
        for f in findings:
            key = (tree.name, relative(f["path"], tree), f["line"], f["source"], f["target"])
            seen.add(key)
            verdicts.append(judged.get(key))
        missed = sum(1 for k, v in judged.items() if k[0] == tree.name and v == "slip" and k not in seen)
        row = {"tree": tree.name, "files": len(pages), "chars": chars, "findings": len(findings),
               "per_10k": round(len(findings) / chars * 10_000, 2) if chars else 0.0,
               "judged": sum(v is not None for v in verdicts), "slips": verdicts.count("slip"),
               "false": verdicts.count("false"), "missed": missed, "wall_s": round(wall, 1),
               "chars_per_cpu_s": round(chars / cpu) if cpu else 0, "planted": by_kind,
               "planted_found": sum(f for f, _ in by_kind.values()), "planted_all": len(planted),
               "planted_slips": planted}
        rows.append(row)
        print(f"| {row['tree']} | {row['files']} | {chars:,} | {row['findings']} | {row['per_10k']} | {row['judged']} | "
              f"{row['slips']} | {row['false']} | {missed} | {row['planted_found']} of {len(planted)} ("
              f"{', '.join(f'{a}/{b}' for a, b in by_kind.values())}) | {row['chars_per_cpu_s']:,} |", flush=True)
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
            with (args.out / f"{tree.name}.tsv").open("w", encoding="utf-8") as out:
                for f in findings:
                    start = f["column"] - 1 - f.get("context_start", 0)
                    ctx = f["context"]
                    out.write("\t".join([tree.name, relative(f["path"], tree), str(f["line"]), f["source"],
                                         f["target"], f"{f['confidence']:.2f}",
                                         ctx[max(0, start - WINDOW):start].replace("\t", " "),
                                         ctx[start:start + WINDOW].replace("\t", " ")]) + "\n")
    total = {k: sum(r[k] for r in rows) for k in ("findings", "judged", "slips", "false", "missed", "chars",
                                                   "planted_found", "planted_all")}
    kinds = {k: [sum(r["planted"][k][j] for r in rows) for j in (0, 1)] for k in KINDS}
    print(f"| all | {sum(r['files'] for r in rows)} | {total['chars']:,} | {total['findings']} | "
          f"{round(total['findings'] / max(1, total['chars']) * 10_000, 2)} | {total['judged']} | {total['slips']} | "
          f"{total['false']} | {total['missed']} | {total['planted_found']} of {total['planted_all']} ("
          f"{', '.join(f'{a}/{b}' for a, b in kinds.values())}) | |")
    if args.json:
        args.json.write_text(json.dumps({"trees": rows, "total": total, "kinds": kinds}, indent=1),
                             encoding="utf-8")


if __name__ == "__main__":
    main()
