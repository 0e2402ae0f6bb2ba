"""What every feature module reads: the tables ``Evidence`` holds (declared here, set in ``Evidence.__init__``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from corrector.evidence.candidates import CandidateTable
from corrector.evidence.dictionary import WordTable
from corrector.evidence.kept_forms import KeptForms
from corrector.evidence.similarity import SimilarityTables
from corrector.features.sites import Sites


class Tables:
    vocab: list[str]
    char_id: dict[str, int]  # single-character tokens -> vocab id
    table: CandidateTable  # the candidate table (real confusions, graded sound and shape)
    tables: SimilarityTables
    lm: Any  # the character LM (CharLM or KenLMCharLM), or None
    lm_vid: np.ndarray  # vocab id -> the LM's id (only with an LM)
    cand_vid: np.ndarray  # the vocab id of each candidate-table entry (-1: not in the vocabulary)
    table_order: np.ndarray  # candidate-table entries sorted by source row * V + vid ...
    table_keys: np.ndarray  # ... and those keys
    logfreq: np.ndarray  # per vocab id: log(1 + corpus frequency)
    proposable: np.ndarray  # per vocab id: the generator may propose it
    proposable_span: tuple[int, int]
    written: np.ndarray  # per vocab id: times written in the real training pairs
    kept: KeptForms
    _words: WordTable | None
    _wkeys: tuple[np.ndarray, ...] | None
    _pair_index: dict[tuple[str, str], list[tuple[int, int]]] | None
    _keys_of: dict[str, tuple[str, ...]]
    _traditional: np.ndarray
    _variant_keys: np.ndarray | None

    def _char_ids(self, sites: Sites, texts: Sequence[str]) -> np.ndarray:
        """The chunks' characters as vocab ids, two columns of -1 on each side (and -1 where not in the vocab)."""
        n_chunks = int(sites.chunk.max()) + 1 if len(sites) else 0
        width = max((len(t) for t in texts[:n_chunks]), default=0) + 4
        T = np.full((max(n_chunks, 1), width), -1, dtype=np.int64)
        for c in range(n_chunks):
            T[c, 2 : 2 + len(texts[c])] = [self.char_id.get(ch, -1) for ch in texts[c]]
        return T

    def _dictionary(self) -> WordTable:
        """jieba's two- and three-character words: the bundle's table, else read from jieba now."""
        if self._words is None:
            self._words = WordTable.from_jieba(self.char_id, len(self.vocab))
        return self._words
