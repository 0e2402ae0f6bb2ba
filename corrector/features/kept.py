"""The word forms the real training pairs keep: ``seen``, ``seen_max`` and ``kept_word`` on keep rows
(``corrector/evidence/kept_forms.py`` holds the counts)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from corrector.evidence.kept_forms import KeptForms, PairCounts, kept_word_value, seen_value
from corrector.features.columns import COL
from corrector.features.sites import Sites
from corrector.features.state import Feature, OwnCounts, RowContext, Tables, Vocabulary


class Kept(Feature):
    """The kept-forms features: ``seen`` and ``seen_max`` from the bigrams the pairs wrote correctly, ``kept_word``
    from the words they kept or changed, of the character as written (keep rows; 0 on candidate rows).

    Counted from the real training pairs: :meth:`leave_out` takes each row's own pair out of the counts."""

    columns = ("seen", "seen_max", "kept_word")
    reads = ("sites", "site", "is_keep", "T")
    tables = ("counts", "vocabulary")
    counted = True

    def __init__(self, counts: PairCounts, vocab: Vocabulary):
        self.vocab = vocab
        self.kept = KeptForms(counts, vocab.char_ids, len(vocab))

    @classmethod
    def from_tables(cls, tables: Tables) -> Kept:
        return cls(tables.counts, tables.vocabulary)

    def fill(self, ctx: RowContext, X: np.ndarray) -> None:
        self._fill(ctx, X, None)

    def leave_out(self, ctx: RowContext, X: np.ndarray, own: OwnCounts) -> None:
        """Each count through a site less what its chunk's pair counted itself (floored at 0)."""
        self._fill(ctx, X, own.pairs)

    def _fill(self, ctx: RowContext, X: np.ndarray, own: Sequence[PairCounts] | None) -> None:
        sites = ctx.sites
        if not len(sites):
            return
        if self.kept.has_bigrams:
            left, right = self.kept.bigram_counts(ctx.T, sites.chunk, sites.char, sites.src_id)
            if own is not None:
                own_left, own_right = self._own(own, sites, (len(sites),),
                                                lambda k, at: k.bigram_counts(ctx.T, sites.chunk[at], sites.char[at],
                                                                              sites.src_id[at]))
                left = np.where(left > 0, np.maximum(left - own_left, 0), left)
                right = np.where(right > 0, np.maximum(right - own_right, 0), right)
            X[:, COL["seen"]] = np.where(ctx.is_keep, seen_value(left, right)[ctx.site], 0.0)
            X[:, COL["seen_max"]] = np.where(ctx.is_keep, seen_value(left, right, np.maximum)[ctx.site], 0.0)
        if self.kept.has_words:
            kept, changed = self.kept.word_counts(ctx.T, sites.chunk, sites.char)
            if own is not None:
                own_kept, own_changed = self._own(own, sites, kept.shape,
                                                  lambda k, at: k.word_counts(ctx.T, sites.chunk[at], sites.char[at]))
                counted = kept + changed > 0
                kept = np.where(counted, np.maximum(kept - own_kept, 0), kept)
                changed = np.where(counted, np.maximum(changed - own_changed, 0), changed)
            X[:, COL["kept_word"]] = np.where(ctx.is_keep, kept_word_value(kept, changed)[ctx.site], 0.0)

    def _own(self, own: Sequence[PairCounts], sites: Sites, shape: tuple[int, ...],
             count: Callable[[KeptForms, np.ndarray], tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
        """Per site: ``count`` (a KeptForms lookup at the sites in a mask) of its chunk's own pair counts (0 for
        none), one lookup per chunk."""
        out = (np.zeros(shape, np.float32), np.zeros(shape, np.float32))
        for c in np.unique(sites.chunk).tolist():
            at = sites.chunk == c
            got = count(KeptForms(own[c], self.vocab.char_ids, len(self.vocab)), at)
            for o, g in zip(out, got):
                o[at] = np.maximum(g, 0)
        return out
