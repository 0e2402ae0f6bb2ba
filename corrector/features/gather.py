"""Gather: each site's candidates (the table's shortlist by the cheap score, the generator's top-k, the caller's
pairs, word pairs), scored for the shortlist by the cheap features (``cheap.CheapFeature``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from corrector.evidence.candidates import CandidateTable
from corrector.features.cheap import CheapFeature
from corrector.features.columns import CHEAP, GEN_MARGIN
from corrector.features.sites import Sites, WordPairs
from corrector.features.state import Vocabulary
from corrector.runtime.sessions import LogProbs


class Gather:
    """Each site's candidates from the candidate table, the generator and the caller, cut to a shortlist."""

    def __init__(self, vocab: Vocabulary, table: CandidateTable, cheap: Sequence[CheapFeature]):
        self.vocab = vocab
        self.table = table
        self.cheap = tuple(cheap)
        self.cand_vid = vocab.char_ids(table.candidate_chars())  # the vocab id of each entry (-1: not in it)
        # the entries sorted by source row * V + vid, and those keys
        V = len(vocab)
        keys = np.repeat(np.arange(len(table.offsets) - 1, dtype=np.int64) * V, np.diff(table.offsets))
        keys += self.cand_vid  # row * V + vid, in place: two fewer arrays of the table's length
        keys[self.cand_vid < 0] = -1
        self.table_order = np.argsort(keys, kind="stable")
        self.table_keys = keys[self.table_order]
        self._variant_keys: np.ndarray | None = None  # see script_filter

    def script_filter(self, vids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(for each of ``vids``: a traditional-only character, which simplified text never writes; the sorted keys
        src * V + vid of the table's script variants that involve one: 於/于, 後/后). Two simplified characters
        with different uses (着/著) are candidates of each other."""
        if self._variant_keys is None:
            V, char_id = len(self.vocab), self.vocab.char_id
            pairs = [(char_id[a], char_id[b]) for a, b in self.table.variants if a in char_id and b in char_id]
            traditional = self.vocab.is_traditional(np.array(pairs, dtype=np.int64).reshape(-1, 2)).tolist()
            self._variant_keys = np.array(sorted(a * V + b for (a, b), (ta, tb) in zip(pairs, traditional) if ta or tb),
                                          dtype=np.int64)
        return self.vocab.is_traditional(vids), self._variant_keys

    def shortlist(self, sites: Sites, weights: dict[str, float], size: int, top_k: int,
                  custom: dict[str, set[str]], pairs: WordPairs | None = None) -> tuple[np.ndarray, ...]:
        """(site, vid, static row index or -1, custom flag) of each site's ``size`` best candidates by the cheap
        score, plus every character of ``pairs`` (which, like the user's pairs, the size never cuts)."""
        n = len(sites)
        if n == 0:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty, empty, np.zeros(0, bool)
        # static candidates: each site's table slice, cut to its ``size`` best by the cheap score
        src_row = np.array([self.table.row.get(s, -1) for s in sites.src], dtype=np.int64)
        offsets = np.asarray(self.table.offsets, dtype=np.int64)
        safe = np.where(src_row >= 0, src_row, 0) if len(offsets) > 1 else np.zeros(n, np.int64)
        ok = (src_row >= 0) & (len(offsets) > 1)
        starts = np.where(ok, offsets[safe], 0)
        lens = np.where(ok, offsets[np.minimum(safe + 1, len(offsets) - 1)] - starts, 0)
        site_s = np.repeat(np.arange(n), lens)
        idx_s = np.repeat(starts - np.concatenate(([0], np.cumsum(lens)[:-1])), lens) + np.arange(lens.sum())
        vid_s = self.cand_vid[idx_s]
        score_s = self._cheap_score(sites, site_s, vid_s, idx_s, weights)
        score_s[(vid_s < 0) | (vid_s == sites.src_id[site_s])] = -np.inf
        keep_s = _top_per_segment(score_s, lens, size) & np.isfinite(score_s)
        site_s, vid_s, idx_s = site_s[keep_s], vid_s[keep_s], idx_s[keep_s]
        # dynamic: the generator's top-k proposable characters (with their table row when they have one) ...
        site_d, vid_d = self.generator_top(sites.logprobs, top_k)
        idx_d = self.table_index(src_row[site_d], vid_d)
        # ... and the user's pairs
        cs, cv = [], []
        for i, s in enumerate(sites.src):
            for c in custom.get(s, ()):
                if c in self.vocab.char_id:
                    cs.append(i)
                    cv.append(self.vocab.char_id[c])
        site_c, vid_c = np.array(cs, np.int64), np.array(cv, np.int64)
        # ... and both characters of each word pair
        no_pairs = WordPairs(*(np.zeros(0, np.int64),) * 3)
        p = pairs if pairs is not None else no_pairs
        site_p, vid_p = np.concatenate([p.a, p.a + 1]), np.concatenate([p.x, p.y])
        site = np.concatenate([site_s, site_d, site_c, site_p])
        vid = np.concatenate([vid_s, vid_d, vid_c, vid_p])
        static = np.concatenate([idx_s, idx_d, self.table_index(src_row[site_c], vid_c),
                                 self.table_index(src_row[site_p], vid_p)])
        is_custom = np.concatenate([np.zeros(len(site_s) + len(site_d), bool), np.ones(len(site_c), bool),
                                    np.zeros(len(site_p), bool)])
        forced = np.concatenate([np.zeros(len(site_s) + len(site_d) + len(site_c), bool), np.ones(len(site_p), bool)])
        keep = (vid >= 0) & (vid != sites.src_id[site])
        traditional, variant_keys = self.script_filter(np.maximum(vid, 0))  # the user's own pairs excepted: never
        keep &= is_custom | ~traditional  # a traditional-only character, never another script's form of one
        if len(variant_keys):
            keep &= is_custom | ~np.isin(sites.src_id[site] * len(self.vocab) + vid, variant_keys)
        site, vid, static, is_custom, forced = site[keep], vid[keep], static[keep], is_custom[keep], forced[keep]
        # one row per (site, vid), custom and forced flags merged
        key = site * len(self.vocab) + vid
        order = np.argsort(key, kind="stable")
        key, site, vid, static = key[order], site[order], vid[order], static[order]
        is_custom, forced = is_custom[order], forced[order]
        first = np.concatenate(([True], key[1:] != key[:-1]))[: len(key)]  # no candidates at all: empty
        if len(key):
            starts = np.flatnonzero(first)
            is_custom, forced = np.logical_or.reduceat(is_custom, starts), np.logical_or.reduceat(forced, starts)
        site, vid, static = site[first], vid[first], static[first]
        # the best ``size`` per site by the cheap score (custom pairs always stay)
        score = self._cheap_score(sites, site, vid, static, weights) + 1e6 * is_custom
        order = np.lexsort((vid, -score, site))
        site, vid, static, is_custom, forced = site[order], vid[order], static[order], is_custom[order], forced[order]
        group_start = np.searchsorted(site, site, side="left")
        rank = np.arange(len(site)) - group_start
        keep = (rank < size) | is_custom | forced  # more custom pairs than ``size`` for one character: all stay
        return site[keep], vid[keep], static[keep], is_custom[keep]

    def _cheap_score(self, sites: Sites, site: np.ndarray, vid: np.ndarray, static: np.ndarray,
                     weights: dict[str, float]) -> np.ndarray:
        vid = np.maximum(vid, 0)
        feats: dict[str, Any] = {name: col for f in self.cheap for name, col in f.values(sites, site, vid, static).items()}
        return sum(weights.get(name, 0.0) * feats[name] for name in CHEAP).astype(np.float64)

    def table_index(self, src_row: np.ndarray, vid: np.ndarray) -> np.ndarray:
        """The table entry of each (source row, candidate vid) pair, -1 where the table has none."""
        if len(vid) == 0 or len(self.table_keys) == 0:
            return np.full(len(vid), -1, np.int64)
        key = src_row * len(self.vocab) + vid
        pos = np.minimum(np.searchsorted(self.table_keys, key), len(self.table_keys) - 1)
        found = (self.table_keys[pos] == key) & (src_row >= 0)
        return np.where(found, self.table_order[pos], -1)

    def generator_top(self, logprobs: LogProbs, top_k: int) -> tuple[np.ndarray, np.ndarray]:
        """(site, vid) of each site's ``top_k`` most probable proposable characters, among those within
        GEN_MARGIN nats of the site's best (far less work than a partition over the whole vocabulary)."""
        if top_k == 0 or len(logprobs) == 0:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty
        lo, hi = self.vocab.proposable_span  # proposable ids all lie in [lo, hi): scan only that window
        site, vid = np.nonzero(logprobs.logits[:, lo:hi] > (logprobs.best - GEN_MARGIN)[:, None])
        vid = vid + lo
        ok = self.vocab.proposable[vid]
        site, vid = site[ok], vid[ok]
        lp = logprobs.at(site, vid)
        order = np.lexsort((vid, -lp, site))
        site, vid = site[order], vid[order]
        rank = np.arange(len(site)) - np.searchsorted(site, site, side="left")
        keep = rank < top_k
        return site[keep].astype(np.int64), vid[keep].astype(np.int64)


def _top_per_segment(score: np.ndarray, lens: np.ndarray, k: int) -> np.ndarray:
    """Boolean mask of the ``k`` highest scores within each consecutive segment of the given lengths."""
    keep = np.zeros(len(score), dtype=bool)
    start = 0
    for n in lens.tolist():
        if n <= k:
            keep[start : start + n] = True
        else:
            seg = score[start : start + n]
            keep[start + np.argpartition(-seg, k - 1)[:k]] = True
        start += n
    return keep
