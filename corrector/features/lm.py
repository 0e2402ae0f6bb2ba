"""The character LM's evidence: ``lm_gain`` (log P of the text with the choice minus as it is now) and ``pair``
(the gain of writing a frequent dictionary word over two adjacent characters whole, ``pairs.WordPairFinder``).
Both read the text as the LM sees it, which the decoder's edits change: they are scored again after each round."""

from __future__ import annotations

import numpy as np

from corrector.features.columns import COL
from corrector.features.lm_text import LMText
from corrector.features.sites import Rows, Sites, WordPairs
from corrector.features.state import Feature, RowContext, Tables


class LMGain(Feature):
    """``lm_gain``: log P(text with the choice) − log P(text as it is now), over the ``order`` LM windows the
    position takes part in (rows get it only when decoding with the LM)."""

    columns = ("lm_gain",)
    reads = ("sites", "site", "vid", "lm_ids")
    tables = ("text",)

    def __init__(self, text: LMText | None):
        self.text = text  # None: a bundle without an LM

    @classmethod
    def from_tables(cls, tables: Tables) -> LMGain:
        return cls(tables.text)

    def fill(self, ctx: RowContext, X: np.ndarray) -> None:
        if ctx.lm_ids is not None and self.text is not None:
            X[:, COL["lm_gain"]] = self.gain(ctx.sites, ctx.site, ctx.vid, ctx.lm_ids, np.ones(len(ctx.site), bool))

    def refresh(self, sites: Sites, rows: Rows, lm_ids: list[np.ndarray], which: np.ndarray) -> None:
        rows.X[which, COL["lm_gain"]] = self.gain(sites, rows.site, rows.vid, lm_ids, which)[which]

    def gain(self, sites: Sites, site: np.ndarray, vid: np.ndarray, lm_ids: list[np.ndarray],
             which: np.ndarray) -> np.ndarray:
        """For the rows in ``which``: the gain. Returns a full-length column (0 elsewhere)."""
        out = np.zeros(len(site), dtype=np.float32)
        sel = np.flatnonzero(which)
        if len(sel) == 0:
            return out
        s = site[sel]
        assert self.text is not None
        total = np.zeros(len(site), dtype=np.float64)
        total[sel] = self.text.window_logprob(sites.chunk[s], sites.char[s], 1, lm_ids, [self.text.vid[vid[sel]]])
        keep_row = np.searchsorted(site, site[sel], side="left")  # each site's keep row comes first
        out[sel] = total[sel] - total[keep_row]
        return out


class PairGain(Feature):
    """``pair``: each candidate row's best LM gain from writing its word pair whole (log P of the text with both
    characters of the word − as it is now), floored at 0; 0 on rows in no pair."""

    columns = ("pair",)
    reads = ("sites", "site", "vid", "pairs", "lm_ids")
    tables = ("text", "vocabulary")

    def __init__(self, text: LMText | None, V: int):
        self.text = text  # None: a bundle without an LM
        self.V = V

    @classmethod
    def from_tables(cls, tables: Tables) -> PairGain:
        return cls(tables.text, len(tables.vocabulary))

    def fill(self, ctx: RowContext, X: np.ndarray) -> None:
        if ctx.lm_ids is not None and self.text is not None:
            X[:, COL["pair"]] = self.gain(ctx.sites, ctx.site, ctx.vid, ctx.pairs, ctx.lm_ids)

    def refresh(self, sites: Sites, rows: Rows, lm_ids: list[np.ndarray], which: np.ndarray) -> None:
        rows.X[:, COL["pair"]] = self.gain(sites, rows.site, rows.vid, rows.pairs, lm_ids)  # what is left to gain

    def gain(self, sites: Sites, site: np.ndarray, vid: np.ndarray, p: WordPairs | None,
             lm_ids: list[np.ndarray]) -> np.ndarray:
        out = np.zeros(len(site), dtype=np.float32)
        if p is None or not len(p) or self.text is None:
            return out
        chunk, char = sites.chunk[p.a], sites.char[p.a]
        now = [np.array([lm_ids[c][i + j] for c, i in zip(chunk.tolist(), char.tolist())], dtype=np.int32)
               for j in (0, 1)]  # the two characters as the LM sees them now: both texts scored in one LM call
        both = self.text.window_logprob(np.concatenate([chunk, chunk]), np.concatenate([char, char]), 2, lm_ids,
                                        [np.concatenate([self.text.vid[p.x], now[0]]),
                                         np.concatenate([self.text.vid[p.y], now[1]])])
        gain = both[: len(chunk)] - both[len(chunk) :]
        V = self.V
        keys = site * V + vid
        order = np.argsort(keys, kind="stable")
        sorted_keys = keys[order]
        for s, v in ((p.a, p.x), (p.a + 1, p.y)):
            pos = np.minimum(np.searchsorted(sorted_keys, s * V + v), len(keys) - 1)
            found = sorted_keys[pos] == s * V + v
            np.maximum.at(out, order[pos[found]], gain[found].astype(np.float32))
        return out
