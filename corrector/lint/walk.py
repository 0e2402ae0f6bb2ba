"""Which files to check: the paths given, folders walked as git sees them (``.gitignore``, ``.git/info/exclude`` and
the global excludes, through ``git ls-files`` when the folder is in a repository; the ``.gitignore`` files read with
``pathspec`` otherwise), less ``.electra-csc-ignore`` and the ``exclude`` patterns, and only files of a kind that is
read (``extract.kind_of``) and prose: a model bundle's folder (a ``manifest.json`` beside a ``ranker.json``) and a
plain-text file that is a list (a vocabulary, a word list, a dictionary: ``word_list``) are data, not prose. A file
found in a folder over ``max_bytes`` (8 MB; a Word document or a book 100 MB) is not read either, but reported
(``Walked.too_large``). A file named on the command line is checked even when excluded, not prose or large, unless
``--force-exclude``."""

from __future__ import annotations

import functools
import os
import subprocess
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .extract import kind_of

IGNORE_FILE = ".electra-csc-ignore"
MAX_BYTES = 8_000_000  # larger files are generated or data, not prose somebody writes
CONTAINER_MAX_BYTES = 100_000_000  # a Word document or a book: most of its bytes are images and fonts
ALWAYS_SKIPPED = {".git", ".hg", ".svn", ".electra-csc-cache", "node_modules", "__pycache__", ".venv", ".tox"}


@dataclass(frozen=True)
class Target:
    path: Path  # as it will be opened
    shown: str  # as it is reported (relative to the current folder when under it, with /)
    relative: str  # relative to the configuration's root, with / (for its patterns)
    kind: str


@dataclass
class Walked:
    targets: list[Target]  # the files to check, each once, in a stable order
    too_large: list[str] = field(default_factory=list)  # files over MAX_BYTES, as shown, not read


class WalkError(Exception):
    """A path that does not exist or cannot be listed, said in one line."""


def targets(paths: Iterable[Path], root: Path, include: Iterable[str] = (), exclude: Iterable[str] = (),
            force_exclude: bool = False, changed: set[Path] | None = None) -> Walked:
    """The files to check, each once, in a stable order, and those left out for their size."""
    from pathspec import GitIgnoreSpec  # the 'lint' extra

    ignore_lines = list(exclude)
    if (root / IGNORE_FILE).is_file():
        ignore_lines += (root / IGNORE_FILE).read_text(encoding="utf-8").splitlines()
    include = list(include)
    excluded, included = GitIgnoreSpec.from_lines(ignore_lines), GitIgnoreSpec.from_lines(include)
    here = Path.cwd().resolve()
    seen: dict[Path, Target] = {}
    too_large: set[str] = set()
    for given in paths:
        if not given.exists():
            raise WalkError(f"{given}: no such file or folder")
        named = given.is_file()
        for path in ([given] if named else _walk(given)):
            resolved = path.resolve()
            if resolved in seen or (changed is not None and resolved not in changed):
                continue
            relative = _relative(resolved, root)
            if (not named or force_exclude) and (excluded.match_file(relative) or
                                                 (include and not included.match_file(relative))):
                continue
            kind = kind_of(path.name)
            if kind is None or (not named and (_in_bundle(resolved.parent) or
                                               (kind == "text" and word_list(path)))):
                continue
            shown = _shown(path, resolved, here)
            if not named and _too_large(path, kind):  # (the warning says: name it to read it)
                too_large.add(shown)
                continue
            seen[resolved] = Target(path, shown, relative, kind)
    return Walked(sorted(seen.values(), key=lambda t: t.shown), sorted(too_large))


LIST_LINES = 20  # a plain-text file of at least this many lines ...
LIST_SHARE = 0.9  # ... this share of them short and without a sentence's punctuation is a list, not prose
SENTENCE_MARKS = set("，。！？；：、,.!?;:")


def word_list(path: Path, head: int = 65_536) -> bool:
    """Whether the plain-text file at ``path`` is a list (a vocabulary, a word or stop-word list, a dictionary of
    ``word freq tag`` lines), judged on its first ``head`` bytes: at least LIST_LINES lines, LIST_SHARE of them at
    most 32 characters with no sentence punctuation."""
    try:
        with open(path, "rb") as f:
            text = f.read(head).decode("utf-8", errors="replace")
    except OSError:
        return False
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) < LIST_LINES:
        return False
    listed = sum(1 for line in lines if len(line) <= 32 and not SENTENCE_MARKS & set(line))
    return listed >= LIST_SHARE * len(lines)


@functools.lru_cache(maxsize=4096)
def _in_bundle(folder: Path) -> bool:
    """Whether ``folder`` (resolved) is inside a model bundle (a folder with ``manifest.json`` and ``ranker.json``)."""
    for here in (folder, *folder.parents):
        if (here / "manifest.json").is_file() and (here / "ranker.json").is_file():
            return True
    return False


def _walk(folder: Path) -> Iterator[Path]:
    listed = _git_files(folder)
    if listed is not None:
        yield from (folder / p for p in listed if not ALWAYS_SKIPPED & set(Path(p).parts))
        return
    from pathspec import GitIgnoreSpec

    specs: list[tuple[Path, GitIgnoreSpec]] = []
    for here, dirs, files in os.walk(folder):
        base = Path(here)
        if (base / ".gitignore").is_file():
            specs.append((base, GitIgnoreSpec.from_lines((base / ".gitignore").read_text(encoding="utf-8",
                                                                                       errors="replace").splitlines())))

        def ignored(p: Path, is_dir: bool) -> bool:
            for top, spec in specs:
                if p.is_relative_to(top):
                    rel = p.relative_to(top).as_posix() + ("/" if is_dir else "")
                    if spec.match_file(rel):
                        return True
            return False

        dirs[:] = sorted(d for d in dirs if d not in ALWAYS_SKIPPED and not ignored(base / d, True))
        for name in sorted(files):
            if not ignored(base / name, False):
                yield base / name


def _git_files(folder: Path) -> list[str] | None:
    """The files git would track in ``folder`` (tracked, and untracked but not ignored), or None outside a repository
    or without git."""
    try:
        done = subprocess.run(["git", "-C", str(folder), "ls-files", "-z", "--cached", "--others",
                               "--exclude-standard", "--deduplicate", "."], capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    names = [n for n in done.stdout.decode("utf-8", "surrogateescape").split("\0") if n]
    return [n for n in names if (folder / n).is_file()]  # (a deleted file is still listed as tracked)


def changed_since(ref: str, where: Path) -> set[Path]:
    """The files changed since git revision ``ref`` (committed, staged or not) and the untracked ones."""
    def git(*args: str, at: Path = where) -> list[str]:
        done = subprocess.run(["git", "-C", str(at), *args], capture_output=True)
        if done.returncode != 0:
            raise WalkError(f"--changed-since {ref}: {done.stderr.decode(errors='replace').strip().splitlines()[-1:]}")
        return [n for n in done.stdout.decode("utf-8", "surrogateescape").split("\0") if n]

    top = Path(git("rev-parse", "--show-toplevel")[0].strip())
    names = git("diff", "-z", "--name-only", "--diff-filter=ACMR", ref, "--", at=top) + git(
        "ls-files", "-z", "--others", "--exclude-standard", at=top)
    return {(top / n).resolve() for n in names}


def _relative(resolved: Path, root: Path) -> str:
    try:
        return resolved.relative_to(root.resolve()).as_posix()
    except ValueError:
        return resolved.as_posix()


def _shown(path: Path, resolved: Path, here: Path) -> str:
    """The path as reported: relative to the current folder ``here`` when under it, with /."""
    try:
        return resolved.relative_to(here).as_posix()
    except ValueError:
        return path.as_posix()


def max_bytes(kind: str | None) -> int:
    """The size above which a file of ``kind`` is not read."""
    return CONTAINER_MAX_BYTES if kind in ("word", "epub") else MAX_BYTES


def _too_large(path: Path, kind: str) -> bool:
    try:
        return path.stat().st_size > max_bytes(kind)
    except OSError:
        return True
