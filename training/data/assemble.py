"""Assemble the data folder from its public sources: fetch each repository at its pinned commit, read the listed files
and write the folder's layout (``csc/*.tsv``, ``corpus/*.txt.gz`` or ``.txt.xz``).

    python -m training.data.assemble --out ../shared/data                  # every file of sources.toml
    python -m training.data.assemble --out DATA --only csc/                # the sentence pairs only (seconds)
    python -m training.data.assemble --out DATA --mirror file:///srv/git   # repositories from a mirror
    python -m training.data.assemble --out DATA --list                     # what would be fetched, nothing runs

``training/data/sources.toml`` says, for every output file, the repository, commit, paths and reader (transcribed from
the data folder's README, which describes each source). The rules:

* sentence pairs: pairs whose sides differ in length are dropped; duplicates are dropped from training files; a
  training pair either side of which contains the target of an evaluation sentence (10 characters or more, after
  NFKC, whitespace removal and lower-casing) is dropped;
* text: HTML tags removed and entities unescaped, control and zero-width characters removed, whitespace collapsed;
  lines with fewer than 8 CJK characters, traditional-dominant lines and Japanese/Korean lines dropped; exact
  duplicates dropped within and across files (in the order of sources.toml); every line containing the target of an
  evaluation sentence dropped (the same rule).

The published folder was decontaminated against private held-out test sets as well, and its corpus draws on sources
this script does not read yet (its README lists them), so an assembled corpus is the same kind of text, not the same
bytes; the evaluation sets are the same pairs. Each repository's pinned commit is fetched with ``git``, alone and
without history (``--mirror`` replaces ``https://github.com``); nothing else is downloaded.
"""

from __future__ import annotations

import argparse
import csv
import fnmatch
import html
import io
import json
import re
import subprocess
import sys
import unicodedata
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from corrector.text.chars import is_cjk

from .text_files import write_text

SOURCES = Path(__file__).with_name("sources.toml")
GITHUB = "https://github.com"
MIN_CJK = 8  # a corpus line needs at least this many CJK characters
MIN_EVAL = 10  # an evaluation sentence this long or longer decontaminates what contains it
_TAGS = re.compile(r"<[^>]+>")
_BLOCKS = re.compile(r"(?i)<\s*(?:/p|br\s*/?|/div|/li|/h[1-6]|/tr)\s*>")
_SPACE = re.compile(r"[\s\u3000\u00a0]+")
_INVISIBLE = re.compile(r"[\u200b-\u200f\u2028-\u202e\u2060-\u2064\ufeff\x00-\x08\x0b-\x1f\x7f]")
_KANA_HANGUL = re.compile(r"[\u3040-\u30ff\u31f0-\u31ff\uac00-\ud7af\u1100-\u11ff]")


class AssembleError(Exception):
    """Something the user can fix (a failed fetch, a missing path), said in one line."""


def load_sources(path: Path = SOURCES) -> list[dict[str, Any]]:
    from training.build import RecipeError, toml

    try:
        entries = toml().loads(path.read_text(encoding="utf-8"))["file"]
    except RecipeError as error:
        raise AssembleError(str(error)) from None
    for e in entries:
        missing = {"out", "repo", "commit", "paths", "reader"} - set(e)
        if missing:
            raise AssembleError(f"{path}: the entry for {e.get('out', '?')} lacks {', '.join(sorted(missing))}")
    return entries


# ---- fetching ------------------------------------------------------------------------------------------------

def fetch(repo: str, commit: str, raw: Path, mirror: str = GITHUB) -> Path:
    """The repository's worktree at ``commit`` under ``raw``: that commit alone is fetched, without history (a
    snapshot, a fraction of a full clone), once; later runs reuse it. Each fetch says its size on stderr."""
    where = raw / repo
    if not (where / ".git").is_dir():
        where.mkdir(parents=True, exist_ok=True)
        _git(["init", "--quiet", str(where)], repo)
    have = subprocess.run(["git", "-C", str(where), "cat-file", "-e", f"{commit}^{{commit}}"], capture_output=True)
    if have.returncode != 0:
        _git(["-C", str(where), "fetch", "--quiet", "--depth", "1", f"{mirror.rstrip('/')}/{repo}", commit], repo)
        packed = sum(f.stat().st_size for f in (where / ".git" / "objects").rglob("*") if f.is_file())
        print(f"fetched {repo}@{commit[:12]}: {packed / 1e6:,.1f} MB", file=sys.stderr, flush=True)
    _git(["-C", str(where), "-c", "advice.detachedHead=false", "checkout", "--quiet", "--force", commit], repo)
    return where


def _git(args: list[str], repo: str) -> None:
    done = subprocess.run(["git", *args], capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["git failed"])[-1]
        raise AssembleError(f"cannot fetch {repo}: {last}")


def source_files(root: Path, entry: dict[str, Any]) -> list[Path]:
    """The entry's files in ``root``, each glob's matches sorted, minus its ``exclude`` globs; a path that matches
    nothing is an error (the pinned commit does not have it)."""
    out: list[Path] = []
    for pattern in entry["paths"]:
        found = sorted(p for p in root.glob(pattern) if p.is_file() and ".git" not in p.parts)
        if not found:
            raise AssembleError(f"{entry['repo']}@{entry['commit'][:12]} has no {pattern}")
        out += [p for p in found if not any(fnmatch.fnmatch(p.relative_to(root).as_posix(), x)
                                            for x in entry.get("exclude", ()))]
    return list(dict.fromkeys(out))


# ---- readers -------------------------------------------------------------------------------------------------

def read_pairs(path: Path, reader: str) -> Iterator[tuple[str, str]]:
    text = path.read_text(encoding="utf-8")
    for line in text.splitlines():
        if reader == "labelled":
            parts = line.split("\t")
            if len(parts) >= 3:
                yield parts[1], parts[2]
        elif reader == "spaced":
            src, _, tgt = line.partition("\t")
            yield src.replace(" ", ""), tgt.replace(" ", "")
        elif reader == "halves":
            mid = len(line) // 2
            if len(line) % 2 == 1 and line[mid] == " ":
                yield line[:mid], line[mid + 1 :]
        elif reader == "jsonl":
            if line.strip():
                record = json.loads(line)
                yield str(record["source"]), str(record["target"])
        else:
            raise AssembleError(f"unknown pair reader {reader!r}")


def read_text(path: Path, entry: dict[str, Any]) -> Iterator[str]:
    reader = entry["reader"]
    text = path.read_text(encoding=entry.get("encoding", "utf-8"), errors="replace")
    if reader == "lines":
        yield from text.splitlines()
    elif reader == "markdown":
        yield from _markdown_lines(text)
    elif reader in ("json", "html_json"):
        fields = entry["field"] if isinstance(entry["field"], list) else [entry["field"]]
        for v in _json_values(text, fields):
            yield from (_html_lines(v) if reader == "html_json" else str(v).splitlines())
    elif reader in ("csv", "tsv"):
        table = list(csv.reader(io.StringIO(text), delimiter="," if reader == "csv" else "\t"))
        wanted = entry.get("columns", [entry.get("column")])
        if all(isinstance(c, int) for c in wanted):  # columns by number: no header, the first row is data
            cols = list(wanted)
        else:
            header, table = (table[0], table[1:]) if table else ([], [])
            cols = [header.index(c) for c in wanted if c in header]
        for row in table:
            yield from (row[c] for c in cols if c < len(row))
    else:
        raise AssembleError(f"unknown text reader {reader!r}")


def _json_values(text: str, fields: list[str]) -> Iterator[Any]:
    """The values at ``fields`` (dotted paths) of a JSON document, or of each record of a JSON-lines file, record by
    record."""
    docs = [json.loads(text)] if text.lstrip().startswith(("{", "[")) and "\n{" not in text.strip() else \
        [json.loads(line) for line in text.splitlines() if line.strip()]
    for doc in docs:
        records = doc if isinstance(doc, list) else [doc]
        for record in records:
            for field in fields:
                yield from _walk(record, field.split("."))


def _walk(value: Any, steps: list[str]) -> Iterator[Any]:
    if not steps:
        if value is not None:
            yield value
        return
    step, rest = steps[0], steps[1:]
    many = step.endswith("[]")
    key = step[:-2] if many else step
    if isinstance(value, list):
        for v in value:
            yield from _walk(v, steps)
        return
    if not isinstance(value, dict) or key not in value:
        return
    inner = value[key]
    if many and isinstance(inner, list):
        for v in inner:
            yield from _walk(v, rest)
    else:
        yield from _walk(inner, rest)


def _html_lines(value: Any) -> Iterator[str]:
    yield from _BLOCKS.sub("\n", str(value)).splitlines()


def _markdown_lines(text: str) -> Iterator[str]:
    if text.startswith("---\n"):  # front matter
        end = text.find("\n---", 4)
        text = text[end + 4 :] if end > 0 else text
    fenced = False
    for line in re.sub(r"(?s)<!--.*?-->", "", text).splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced or re.fullmatch(r"\s*\|?[\s:|-]+\|?\s*", line):  # code, table separator rows
            continue
        line = re.sub(r"!\[[^\]]*\]\([^)]*\)", "", line)  # images
        line = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", line)  # links keep their text
        line = re.sub(r"(\*\*|__|`)", "", line)  # emphasis and inline code marks
        line = line.lstrip("#>*- ").replace("|", " ")
        yield line


# ---- cleaning and decontamination ----------------------------------------------------------------------------

def clean(line: str) -> str:
    """A line of text as the corpus holds it: no tags or entities, no invisible characters, one space between runs."""
    line = html.unescape(_TAGS.sub("", line))
    return _SPACE.sub(" ", _INVISIBLE.sub("", line)).strip()


def keep_text(line: str) -> bool:
    """At least MIN_CJK CJK characters, not traditional-dominant, not Japanese or Korean."""
    from corrector.text.script import traditional_only

    cjk = [c for c in line if is_cjk(c)]
    if len(cjk) < MIN_CJK:
        return False
    traditional = sum(traditional_only(c) for c in cjk)
    if traditional >= 5 or (traditional >= 2 and traditional >= 0.1 * len(cjk)):
        return False
    foreign = len(_KANA_HANGUL.findall(line))
    return not (foreign >= 3 and foreign >= 0.1 * len(cjk))


def normalise(text: str) -> str:
    return "".join(unicodedata.normalize("NFKC", text).split()).lower()


class Contamination:
    """Whether a text contains an evaluation sentence's target (MIN_EVAL characters or more, normalised), found
    through the targets' first MIN_EVAL characters: one dictionary lookup per position."""

    def __init__(self, targets: Iterable[str]):
        self.by_prefix: dict[str, list[str]] = {}
        for t in {normalise(t) for t in targets}:
            if len(t) >= MIN_EVAL:
                self.by_prefix.setdefault(t[:MIN_EVAL], []).append(t)

    def __call__(self, text: str) -> bool:
        t = normalise(text)
        for i in range(len(t) - MIN_EVAL + 1):
            for target in self.by_prefix.get(t[i : i + MIN_EVAL], ()):
                if t.startswith(target, i):
                    return True
        return False


# ---- building ------------------------------------------------------------------------------------------------

def assemble(out: Path, raw: Path, entries: list[dict[str, Any]], evaluation: list[dict[str, Any]],
             mirror: str = GITHUB, log: Any = sys.stderr) -> dict[str, int]:
    """Build every entry's file under ``out`` (fetching into ``raw``), decontaminated against the targets of the
    ``evaluation`` entries' pairs; lines or pairs written per file."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for e in entries:
        groups.setdefault(e["out"], []).append(e)
    pairs_of: dict[int, list[tuple[str, str]]] = {}  # each entry's pairs, read once

    def pairs(e: dict[str, Any]) -> list[tuple[str, str]]:
        if id(e) not in pairs_of:
            pairs_of[id(e)] = _pairs_of(e, raw, mirror)
        return pairs_of[id(e)]

    contaminated = Contamination(t for e in evaluation for _, t in pairs(e))
    seen: set[str] = set()  # corpus lines, across files
    written: dict[str, int] = {}
    for name, group in groups.items():
        path = out / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if name.startswith("csc/"):
            rows = [p for e in group for p in pairs(e)]
            if group[0].get("role") == "training":
                rows = list(dict.fromkeys(p for p in rows if not (contaminated(p[0]) or contaminated(p[1]))))
            path.write_text("".join(f"{s}\t{t}\n" for s, t in rows), encoding="utf-8")
            written[name] = len(rows)
        else:
            lines = []
            for e in group:
                root = fetch(e["repo"], e["commit"], raw, mirror)
                for f in source_files(root, e):
                    for line in map(clean, read_text(f, e)):
                        if line not in seen and keep_text(line) and not contaminated(line):
                            seen.add(line)
                            lines.append(line)
            write_text(path, lines)  # compressed by its suffix: .txt.gz or .txt.xz
            written[name] = len(lines)
        print(f"{name}: {written[name]:,}", file=log)
    return written


def _pairs_of(entry: dict[str, Any], raw: Path, mirror: str) -> list[tuple[str, str]]:
    """The entry's pairs of equal length, in file order."""
    root = fetch(entry["repo"], entry["commit"], raw, mirror)
    return [(s, t) for f in source_files(root, entry) for s, t in read_pairs(f, entry["reader"])
            if len(s) == len(t) and s]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, help="the data folder to write (e.g. ../shared/data); not with --list")
    ap.add_argument("--raw", type=Path, default=None, help="where the repositories' snapshots go (default: OUT/.sources)")
    ap.add_argument("--sources", type=Path, default=SOURCES, help="the sources file (default: training/data/sources.toml)")
    ap.add_argument("--only", action="append", default=[], metavar="PREFIX",
                    help="only the files whose name starts so (csc/, corpus/laws); repeatable")
    ap.add_argument("--mirror", default=GITHUB, help=f"where repositories are fetched from (default {GITHUB})")
    ap.add_argument("--list", action="store_true", help="print what would be fetched and written, and stop")
    args = ap.parse_args(argv)
    if args.out is None and not args.list:
        ap.error("--out is required (the data folder to write), except with --list")
    try:
        entries = load_sources(args.sources)
        chosen = [e for e in entries if not args.only or any(e["out"].startswith(p) for p in args.only)]
        if args.list:
            for e in chosen:
                print(f"{e['out']}\t{args.mirror.rstrip('/')}/{e['repo']}@{e['commit']}\t{' '.join(e['paths'])}")
            return
        evaluation = [e for e in entries if e["out"].startswith("csc/") and e.get("role") != "training"]
        assemble(args.out, args.raw or args.out / ".sources", chosen, evaluation, args.mirror)
    except (AssembleError, OSError, ValueError) as e:
        sys.exit(f"error: {e}")


if __name__ == "__main__":
    main()
