"""The word forms the real training pairs keep: ``seen``, ``seen_max`` and ``kept_word`` on keep rows
(``corrector/evidence/kept_forms.py`` holds the counts)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from corrector.evidence.kept_forms import kept_word_value, seen_value
from corrector.features.columns import COL
from corrector.features.sites import Sites
from corrector.features.state import Tables


class KeptFeatures(Tables):
    """Mixin of ``Evidence``: the kept-forms features."""

    def fill_kept(self, ctx, X: np.ndarray) -> None:
        n = len(ctx.sites)
        if self.kept.has_bigrams and n:
            self.set_seen(X, ctx.is_keep, ctx.site, *self.kept.bigram_counts(ctx.T, ctx.sites.chunk, ctx.sites.char,
                                                                             ctx.sites.src_id))
        if self.kept.has_words and n:
            kept_word = kept_word_value(*self.kept.word_counts(ctx.T, ctx.sites.chunk, ctx.sites.char))
            X[:, COL["kept_word"]] = np.where(ctx.is_keep, kept_word[ctx.site], 0.0)

    @staticmethod
    def set_seen(X: np.ndarray, is_keep: np.ndarray, site: np.ndarray, left: np.ndarray, right: np.ndarray) -> None:
        """The keep rows' ``seen`` and ``seen_max`` from each site's (left, right) bigram counts; 0 elsewhere."""
        X[:, COL["seen"]] = np.where(is_keep, seen_value(left, right)[site], 0.0)
        X[:, COL["seen_max"]] = np.where(is_keep, seen_value(left, right, np.maximum)[site], 0.0)

    def seen_counts(self, sites: Sites, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Per site: how often its bigram with the left and with the right neighbour, as written, was written
        correctly in the real training pairs (-1 where there is no such neighbour)."""
        return self.kept.bigram_counts(self._char_ids(sites, texts), sites.chunk, sites.char, sites.src_id)

    def word_counts(self, sites: Sites, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(kept, changed), each (sites, 5): the training pairs' counts of the words through each site as written
        (:meth:`KeptForms.word_counts`)."""
        return self.kept.word_counts(self._char_ids(sites, texts), sites.chunk, sites.char)
