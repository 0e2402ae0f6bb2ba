"""The findings cache: a file whose bytes, settings and bundle are unchanged is not corrected again.

One JSON file per bundle in ``.electra-csc-cache/`` beside the project's configuration (in the user's private cache
folder when there is none; never in the folder the command ran from), mapping
each file's key (sha256 of its bytes, and of the settings that apply to it) to the corrector's edits in it. The
bundle's fingerprint (its manifest and ranker) names the file, so a new model never reads an old answer.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from .check import Raw

FOLDER = ".electra-csc-cache"
VERSION = "3"  # of the extraction and of this format: a change makes every entry a miss
MAX_ENTRIES = 200_000


def bundle_fingerprint(bundle: Path) -> str:
    """sha256 of what decides a bundle's answers, read without loading it (its manifest and ranker)."""
    h = hashlib.sha256(VERSION.encode())
    for name in ("manifest.json", "ranker.json"):
        path = bundle / name
        h.update(path.read_bytes() if path.is_file() else b"-")
    return h.hexdigest()


class Cache:
    def __init__(self, folder: Path, bundle_key: str):
        self.path = folder / f"{bundle_key[:24]}.json"
        self.folder = folder
        try:
            self.entries: dict[str, list[list] | dict[str, int]] = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            self.entries = {}
        self.changed = False

    def get(self, key: str) -> list[Raw] | None:
        rows = self.entries.get(key)
        if not isinstance(rows, list):
            return None
        return [Raw(int(o), s, t, float(c), r, tuple(a), w) for o, s, t, c, r, a, w in rows]

    def put(self, key: str, raws: list[Raw]) -> None:
        self.entries[key] = [[r.offset, r.source, r.target, r.confidence, r.reason, list(r.alternatives), r.where]
                             for r in raws]
        self.changed = True

    def get_words(self, key: str) -> dict[str, int] | None:
        """A file's word counts (``check._word_counts``), or None."""
        hit = self.entries.get(key)
        return hit if isinstance(hit, dict) else None

    def put_words(self, key: str, counts: dict[str, int]) -> None:
        self.entries[key] = counts
        self.changed = True

    def save(self) -> None:
        if not self.changed:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        ignore = self.folder / ".gitignore"
        if not ignore.exists():
            ignore.write_text("# written by electra-csc lint\n*\n", encoding="utf-8")
        if len(self.entries) > MAX_ENTRIES:  # the oldest first out (dicts keep insertion order)
            self.entries = dict(list(self.entries.items())[-MAX_ENTRIES:])
        fd, tmp = tempfile.mkstemp(prefix=".cache.", dir=self.folder)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(self.entries, out, ensure_ascii=False, separators=(",", ":"))
        os.replace(tmp, self.path)
