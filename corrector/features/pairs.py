"""Word pairs: a frequent dictionary word that sounds like two adjacent characters as written, both of them
different (建缸 → 健康, 心腹 → 幸福: an IME slip of a whole word). Their characters join the shortlist; the
``pair`` feature (``lm.PairGain``) is the LM's gain from writing the word whole."""

from __future__ import annotations

from itertools import product

import numpy as np

from corrector.evidence.similarity import SimilarityTables, fuzzy_key, split_reading
from corrector.features.columns import PAIR_MIN_FREQ
from corrector.features.sites import Sites, WordPairs
from corrector.features.state import Dictionary, Vocabulary


class WordPairFinder:
    """The word pairs of a batch's sites, from the dictionary's frequent two-character words of proposable
    characters by their readings' fuzzy keys (the index is built on first use)."""

    def __init__(self, vocab: Vocabulary, tables: SimilarityTables, dictionary: Dictionary):
        self.vocab = vocab
        self.tables = tables
        self.dictionary = dictionary
        self._pair_index: dict[tuple[str, str], list[tuple[int, int]]] | None = None
        self._keys_of: dict[str, tuple[str, ...]] = {}

    def __call__(self, sites: Sites) -> WordPairs:
        """Every frequent two-character dictionary word (x, y) that sounds like two adjacent sites' characters
        as written (toneless, fuzzy: ``similarity.fuzzy_key``), with both of them different."""
        adj = np.flatnonzero((sites.chunk[1:] == sites.chunk[:-1]) & (sites.char[1:] == sites.char[:-1] + 1))
        index = self._pairs()
        found: set[tuple[int, int, int]] = set()
        for k in adj.tolist():
            ka, kb = self._fuzzy_keys(sites.src[k]), self._fuzzy_keys(sites.src[k + 1])
            xa, yb = int(sites.src_id[k]), int(sites.src_id[k + 1])
            for key in product(ka, kb):
                found.update((k, x, y) for x, y in index.get(key, ()) if x != xa and y != yb)
        a, x, y = (np.array(col, dtype=np.int64) for col in zip(*sorted(found))) if found else \
            (np.zeros(0, np.int64),) * 3
        return WordPairs(a, x, y)

    def _fuzzy_keys(self, ch: str) -> tuple[str, ...]:
        keys = self._keys_of.get(ch)
        if keys is None:
            keys = tuple(dict.fromkeys(fuzzy_key(split_reading(r)[0]) for r in self.tables.readings(ch)))
            self._keys_of[ch] = keys
        return keys

    def _pairs(self) -> dict[tuple[str, str], list[tuple[int, int]]]:
        """Frequent two-character dictionary words of proposable characters by (fuzzy key, fuzzy key)."""
        if self._pair_index is None:
            index: dict[tuple[str, str], list[tuple[int, int]]] = {}
            words = self.dictionary.table()
            V, proposable, tokens = len(self.vocab), self.vocab.proposable, self.vocab.tokens
            frequent = words.keys[2][words.counts[2] >= PAIR_MIN_FREQ]
            x_ids, y_ids = frequent // V, frequent % V
            both = proposable[x_ids] & proposable[y_ids]
            for x, y in zip(x_ids[both].tolist(), y_ids[both].tolist()):
                for key in product(self._fuzzy_keys(tokens[x]), self._fuzzy_keys(tokens[y])):
                    index.setdefault(key, []).append((x, y))
            self._pair_index = index
        return self._pair_index
