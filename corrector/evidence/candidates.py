"""Static candidate lists per source character, written by ``training.evidence.candidates``.

For every source character: the characters it may have been typed for (graded pinyin similarity
above a floor, shape neighbours, and every pair seen in real training errors), each with its graded
pinyin similarity, shape similarity and how often real errors wrote the source for it. The same folder holds
the word forms the real pairs keep (``corrector.evidence.kept_forms.PairCounts``) and the foreign names' characters
(``corrector.evidence.foreign_names.load_name_shares``): each read by its own loader.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from corrector.types import CorrectorError

CANDIDATES_NPZ = "candidates.npz"
CANDIDATES_JSON = "candidates.json"


class CandidateTable:
    def __init__(self, sources: list[str], offsets: np.ndarray, candidates: list[str] | np.ndarray,
                 pinyin: np.ndarray, shape: np.ndarray, count: np.ndarray, written: np.ndarray | None = None,
                 variants: frozenset[tuple[str, str]] = frozenset()):
        self.row = {c: i for i, c in enumerate(sources)}
        # how often each source character was written in the real training pairs (right or wrong)
        self.written = np.zeros(len(sources), np.float32) if written is None else written.astype(np.float32)
        self.variants = variants  # (a, b): the same character in two scripts; never a candidate of each other
        self.offsets = offsets
        # a list, or a numpy array of one-character strings: ``load`` keeps the array (a list of millions of
        # strings is slow to make and large); ``candidates`` makes the list on first use
        self._candidates = candidates
        self.pinyin = pinyin.astype(np.float32)
        self.shape = shape.astype(np.float32)
        self.count = count.astype(np.float32)

    @classmethod
    def load(cls, directory: str | Path) -> CandidateTable:
        path = Path(directory) / CANDIDATES_NPZ
        if not path.is_file():
            raise CorrectorError(f"candidate table {path} is missing; build it with `python -m training.evidence.candidates`")
        try:
            z = np.load(path, allow_pickle=False)
            written = z["written"] if "written" in z.files else None
            variants = frozenset((p[0], p[1]) for p in z["variants"].tolist()) if "variants" in z.files else frozenset()
            return cls(z["sources"].tolist(), z["offsets"], z["candidates"], z["pinyin"], z["shape"],
                       z["count"], written, variants)
        except (OSError, KeyError, ValueError) as e:
            raise CorrectorError(f"cannot read candidate table {path}: {e}") from None

    @classmethod
    def empty(cls) -> CandidateTable:
        """No static candidates (a bundle without a table): only the generator's and the user's."""
        z = np.zeros(0, dtype=np.float32)
        return cls([], np.zeros(1, dtype=np.int32), [], z, z, z)

    @property
    def candidates(self) -> list[str]:
        if isinstance(self._candidates, list):
            return self._candidates
        listed: list[str] = self._candidates.tolist()
        self._candidates = listed
        return listed

    def candidate_chars(self) -> np.ndarray:
        """The candidates as a numpy array of strings (the table's own array when ``load`` read it)."""
        c = self._candidates
        return c if isinstance(c, np.ndarray) else np.array(c, dtype=str)

    def written_count(self, source: str) -> float:
        i = self.row.get(source)
        return 0.0 if i is None else float(self.written[i])

    def lookup(self, source: str) -> slice:
        """The slice of ``candidates``/``pinyin``/``shape``/``count`` that belongs to ``source`` (may be empty)."""
        i = self.row.get(source)
        if i is None:
            return slice(0, 0)
        return slice(int(self.offsets[i]), int(self.offsets[i + 1]))

    def pair(self, source: str, candidate: str) -> tuple[float, float, float] | None:
        """(pinyin, shape, count) of one pair, or None when ``candidate`` is not on ``source``'s list."""
        sl = self.lookup(source)
        try:
            k = self.candidates.index(candidate, sl.start, sl.stop)
        except ValueError:
            return None
        return float(self.pinyin[k]), float(self.shape[k]), float(self.count[k])
