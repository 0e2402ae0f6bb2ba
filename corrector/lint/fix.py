"""``--fix`` and ``--diff``: the fixable findings (at or above the fix confidence) written into their files.

Each file is read again just before it is written, and a fix is made only where it still holds the character that was
checked; the text around the fixes is written back byte for byte (encoding, BOM, line endings), atomically.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .check import Finding
from .document import Document, DocumentError, write_atomically


@dataclass
class Fixed:
    fixed: list[Finding]  # made (or, with --diff, shown)
    stale: list[Finding]  # the file no longer held what was checked there
    diff: str


def apply(findings: Sequence[Finding], paths: dict[str, Path], write: bool) -> Fixed:
    """The fixable ``findings`` made in their files (``paths``: each shown path's file); with ``write`` False, only
    their unified diff."""
    by_file: dict[str, list[Finding]] = {}
    for f in findings:
        if f.fix:
            by_file.setdefault(f.path, []).append(f)
    fixed: list[Finding] = []
    stale: list[Finding] = []
    diffs: list[str] = []
    for shown, todo in sorted(by_file.items()):
        path = paths[shown]
        try:
            doc = Document.read(path, shown)
        except DocumentError:
            stale += todo
            continue
        chars = list(doc.text)
        made = []
        for f in sorted(todo, key=lambda f: f.offset):
            if doc.text[f.offset:f.offset + len(f.source)] != f.source or len(f.source) != len(f.target):
                stale.append(f)
                continue
            chars[f.offset:f.offset + len(f.source)] = list(f.target)
            made.append(f)
        if not made:
            continue
        new = "".join(chars)
        if write:
            write_atomically(path, doc.encode(new))
        else:
            diffs.append("".join(difflib.unified_diff(doc.text.splitlines(keepends=True), new.splitlines(keepends=True),
                                                      f"a/{shown}", f"b/{shown}")))
        fixed += made
    return Fixed(fixed, stale, "".join(diffs))
