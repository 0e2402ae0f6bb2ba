"""Cross-fitting: each fold of the pairs is decoded by a Corrector whose character LM never counted it.

When the bundle's LM also counted the targets of the real training pairs (``training.evidence.char_lm --in-domain``),
scoring those pairs with it (the ranker's training rows), or the dev split's essay-mates, would let a text be
evidence for itself: the ranker would learn to trust the LM more than it deserves on unseen text, and the
threshold chosen on dev would change more clean sentences on a test than on dev. ``training.evidence.char_lm
--in-domain-folds K --fold-out DIR`` writes DIR/fold0 .. fold{K-1}, each LM without one fold's lines
(contiguous blocks of the files, ``training.data.splits.text_folds``); here pairs of fold k go to the Corrector
with DIR/fold{k}.

The same holds for the counts of the real pairs in the candidate table (the confusion prior, the bigrams and
words kept as written): ``training.evidence.candidates --folds K`` writes tables that each leave one fold out, and a
Corrector of fold k reads both its LM and its table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from corrector import Corrector
from corrector.rank import RankerWeights
from corrector.runtime.sessions import Device

from ..data.splits import Pair, split_by_fold, text_folds

T = TypeVar("T")


@dataclass(frozen=True)
class Folds:
    """One Corrector per fold and the fold of each pair: a value, like its Correctors (``with_ranker`` and
    ``with_settings`` make new ones)."""

    fixes: list[Corrector]  # one per fold; a single one when nothing is cross-fitted
    fold_of: dict[str, int] | None = None  # target text -> fold (None: every pair goes to fixes[0])

    @classmethod
    def load(cls, model: Path, lm_folds: Path | None, data: Path, device: Device = "cpu",
             count_folds: Path | None = None, **settings: Any) -> Folds:
        """One Corrector per fold (its LM from ``lm_folds``, its candidate table from ``count_folds``; either may
        be None, not both), all on one set of ONNX sessions; ``settings`` go to ``Corrector.load``."""
        first = Corrector.load(model, device=device, lm=fold_dirs(lm_folds)[0] if lm_folds else None, **settings)
        return cls.over(first, lm_folds, data, count_folds)

    @classmethod
    def over(cls, fix: Corrector, lm_folds: Path | None, data: Path, count_folds: Path | None = None) -> Folds:
        """``fix`` moved to each fold's LM in ``lm_folds`` and each fold's candidate table in ``count_folds``
        (its ONNX sessions and settings shared; the one not given stays ``fix``'s)."""
        lms = fold_dirs(lm_folds) if lm_folds else None
        counts = fold_dirs(count_folds, "candidate table") if count_folds else None
        if lms is None and counts is None:
            raise ValueError("Folds.over needs LM folds, count folds or both")
        if lms is not None and counts is not None and len(lms) != len(counts):
            raise SystemExit(f"{lm_folds} has {len(lms)} LM folds but {count_folds} {len(counts)} candidate tables")
        k = len(lms) if lms is not None else len(counts)  # type: ignore[arg-type]
        fixes = []
        for i in range(k):
            f = fix.with_lm(lms[i]) if lms is not None else fix
            fixes.append(f.with_candidates(counts[i]) if counts is not None else f)
        return cls(fixes, text_folds(data, k))

    def with_ranker(self, ranker: RankerWeights) -> Folds:
        """Every fold's Corrector deciding with ``ranker`` (``Corrector.with_ranker``)."""
        return replace(self, fixes=[fix.with_ranker(ranker) for fix in self.fixes])

    def with_settings(self, **settings: Any) -> Folds:
        """Every fold's Corrector with these settings in force (``Corrector.with_settings``)."""
        return replace(self, fixes=[fix.with_settings(**settings) for fix in self.fixes])

    def parts(self, pairs: Sequence[Pair]) -> list[list[int]]:
        if self.fold_of is None:
            return [list(range(len(pairs)))]
        return split_by_fold(list(pairs), self.fold_of, len(self.fixes))

    def map(self, pairs: Sequence[Pair], fn: Callable[[Corrector, list[Pair]], list[T]]) -> list[T]:
        """``fn(fold's Corrector, its pairs)`` -> one item per pair, put back in the order of ``pairs``."""
        out: list[T | None] = [None] * len(pairs)
        for fix, idx in zip(self.fixes, self.parts(pairs)):
            if idx:
                for i, item in zip(idx, fn(fix, [pairs[i] for i in idx])):
                    out[i] = item
        return out  # type: ignore[return-value]

    def groups(self, pairs: Sequence[Pair]) -> list[tuple[Corrector, list[Pair]]]:
        """(Corrector, its pairs) per fold, for what is pooled rather than aligned (feature tables)."""
        return [(fix, [pairs[i] for i in idx]) for fix, idx in zip(self.fixes, self.parts(pairs)) if idx]


def fold_dirs(folds: Path, what: str = "LM") -> list[Path]:
    """DIR/fold0 .. fold{K-1} of ``training.evidence.char_lm --fold-out DIR`` (or ``training.evidence.candidates --folds K --out
    DIR``), in order."""
    dirs = sorted((d for d in folds.glob("fold*") if d.is_dir() and d.name[4:].isdigit()), key=lambda d: int(d.name[4:]))
    if not dirs or [d.name for d in dirs] != [f"fold{k}" for k in range(len(dirs))]:
        made_by = "training.evidence.char_lm --fold-out" if what == "LM" else "training.evidence.candidates --folds K"
        raise SystemExit(f"{folds}: expected fold0 .. fold{{K-1}} {what} folders ({made_by})")
    return dirs
