"""Context without the LM: ``word`` and ``word4`` (the best dictionary word through the choice) and ``name`` (the
character may belong to a name)."""

from __future__ import annotations

import numpy as np

from corrector.evidence.kept_forms import word_key
from corrector.evidence.lookup import lookup_sorted
from corrector.features.columns import COL, PLACE_SUFFIXES, SURNAMES
from corrector.features.state import Dictionary, Feature, RowContext, Tables


class Word(Feature):
    """``word``: the best log(1 + jieba frequency) of a 2- or 3-character word through the choice; ``word4``: of a
    4-character one (set phrases and idioms, 一筹莫展) (vectorised: the dictionary's words as sorted integer keys)."""

    columns = ("word", "word4")
    reads = ("sites", "site", "vid", "T")
    tables = ("dictionary", "vocabulary")

    def __init__(self, dictionary: Dictionary, V: int):
        self.dictionary = dictionary
        self.V = V
        self._keys: dict[int, tuple[np.ndarray, np.ndarray]] | None = None

    @classmethod
    def from_tables(cls, tables: Tables) -> Word:
        return cls(tables.dictionary, len(tables.vocabulary))

    def fill(self, ctx: RowContext, X: np.ndarray) -> None:
        keys = self._word_keys()
        V, site, vid = self.V, ctx.site, ctx.vid
        four = len(keys[4][0]) > 0  # a dictionary written before four-character words has none: word4 stays 0
        T = ctx.T  # two columns of -1 a side; three for the four-character windows
        if four:
            T = np.full((ctx.T.shape[0], ctx.T.shape[1] + 2), -1, dtype=ctx.T.dtype)
            T[:, 1:-1] = ctx.T
        c, pos = ctx.sites.chunk[site], ctx.sites.char[site] + (3 if four else 2)
        l2, l1, r1, r2 = (T[c, pos + d] for d in (-2, -1, 1, 2))
        windows: dict[str, tuple[tuple[np.ndarray, ...], ...]] = {
            "word": ((l1, vid), (vid, r1), (l2, l1, vid), (l1, vid, r1), (vid, r1, r2))}
        if four:
            l3, r3 = T[c, pos - 3], T[c, pos + 3]
            windows["word4"] = ((l3, l2, l1, vid), (l2, l1, vid, r1), (l1, vid, r1, r2), (vid, r1, r2, r3))
        for column, ids_of in windows.items():
            out = np.zeros(len(site), dtype=np.float32)
            for n in sorted({len(ids) for ids in ids_of}):  # the windows of one length in one lookup
                ids = [np.stack(w) for w in zip(*(ids for ids in ids_of if len(ids) == n))]  # n x (windows, rows)
                valid = np.all([x >= 0 for x in ids], axis=0)
                k, freq = keys[n]
                out = np.maximum(out, lookup_sorted(k, freq, np.where(valid, word_key(ids, V), -1)).max(axis=0))
            X[:, COL[column]] = out

    def _word_keys(self) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        """Word length -> (its keys, sorted, and their log(1 + frequency))."""
        if self._keys is None:
            table = self.dictionary.table()
            self._keys = {n: table.log_counts(n) for n in (2, 3, 4)}
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
