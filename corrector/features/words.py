"""Context without the LM: ``word`` (the best dictionary word through the choice) and ``name`` (the character may
belong to a name)."""

from __future__ import annotations

import numpy as np

from corrector.evidence.kept_forms import word_key
from corrector.evidence.lookup import lookup_sorted
from corrector.features.columns import COL, PLACE_SUFFIXES, SURNAMES
from corrector.features.state import Dictionary, Feature, RowContext, Tables


class Word(Feature):
    """``word``: the best log(1 + jieba frequency) of a 2- or 3-character word through the choice (vectorised:
    the dictionary's words as sorted integer keys)."""

    columns = ("word",)
    reads = ("sites", "site", "vid", "T")
    tables = ("dictionary", "vocabulary")

    def __init__(self, dictionary: Dictionary, V: int):
        self.dictionary = dictionary
        self.V = V
        self._keys: tuple[np.ndarray, ...] | None = None

    @classmethod
    def from_tables(cls, tables: Tables) -> Word:
        return cls(tables.dictionary, len(tables.vocabulary))

    def fill(self, ctx: RowContext, X: np.ndarray) -> None:
        k2, f2, k3, f3 = self._word_keys()
        V, T, site, vid = self.V, ctx.T, ctx.site, ctx.vid
        c, pos = ctx.sites.chunk[site], ctx.sites.char[site] + 2
        l2, l1, r1, r2 = T[c, pos - 2], T[c, pos - 1], T[c, pos + 1], T[c, pos + 2]
        out = np.zeros(len(site), dtype=np.float32)
        for ids, keys, freq in (((l1, vid), k2, f2), ((vid, r1), k2, f2), ((l2, l1, vid), k3, f3),
                                ((l1, vid, r1), k3, f3), ((vid, r1, r2), k3, f3)):
            valid = np.all([x >= 0 for x in ids], axis=0)
            out = np.maximum(out, lookup_sorted(keys, freq, np.where(valid, word_key(ids, V), -1)))
        X[:, COL["word"]] = out

    def _word_keys(self) -> tuple[np.ndarray, ...]:
        """(2-character keys, their log(1 + frequency), 3-character keys, theirs), keys sorted."""
        if self._keys is None:
            self._keys = (*self.dictionary.table().log_counts(2), *self.dictionary.table().log_counts(3))
        return self._keys


class Name(Feature):
    """``name`` (candidate rows): 1 when the character may belong to a name."""

    columns = ("name",)
    reads = ("sites", "texts", "site", "is_keep")

    def fill(self, ctx: RowContext, X: np.ndarray) -> None:
        sites = ctx.sites
        name_like = np.array([_name_like(ctx.texts[c], i) for c, i in zip(sites.chunk, sites.char)], dtype=np.float32)
        X[:, COL["name"]] = np.where(ctx.is_keep, 0.0, name_like[ctx.site] if len(sites) else 0.0)


def _name_like(text: str, i: int) -> float:
    """1 when the character may belong to a name: one or two after a common surname, or before a
    place-name suffix."""
    if (i >= 1 and text[i - 1] in SURNAMES) or (i >= 2 and text[i - 2] in SURNAMES):
        return 1.0
    return 1.0 if i + 1 < len(text) and text[i + 1] in PLACE_SUFFIXES else 0.0
