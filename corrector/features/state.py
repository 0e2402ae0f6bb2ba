"""What the feature objects share: the ``Feature`` interface, the rows being scored (``RowContext``), the bundle's
tables they are built from (``Tables``), the vocabulary's per-character tables (``Vocabulary``) and jieba's words
(``Dictionary``, read once)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import ClassVar

import numpy as np

from corrector.evidence.candidates import CandidateTable
from corrector.evidence.dictionary import WordTable
from corrector.evidence.kept_forms import CharIds, PairCounts
from corrector.evidence.particles import ParticleTable
from corrector.evidence.similarity import SimilarityTables
from corrector.features.lm_text import LMText
from corrector.features.sites import Rows, Sites, WordPairs


@dataclass(frozen=True)
class RowContext:
    """The rows being scored: what a feature may read (its ``reads`` names these fields)."""

    sites: Sites
    texts: Sequence[str]
    site: np.ndarray
    vid: np.ndarray
    static: np.ndarray  # the candidate table's entry of each row, -1 where none
    is_keep: np.ndarray
    custom: np.ndarray
    T: np.ndarray  # the chunks as vocab ids (``Vocabulary.chunk_ids``)
    lm_ids: list[np.ndarray] | None
    pairs: WordPairs | None


INPUTS = tuple(f.name for f in fields(RowContext))  # what a feature may declare it reads


class Feature:
    """One source of evidence: fills its ``columns`` (names of ``columns.FEATURES``) of a batch's rows from the
    ``reads`` of the rows (fields of ``RowContext``) and the bundle's ``tables`` it was built from (fields of
    ``Tables``: :meth:`from_tables`), in batched numpy calls.

    A feature that reads ``lm_ids`` (the text as the LM sees it, which the decoder's edits change) is scored
    again after each round (:meth:`refresh`). A ``counted`` feature reads counts of the real training pairs and
    takes the rows' own pairs out of them when asked (:meth:`leave_out`: training scores the pairs the counts
    were made from)."""

    columns: ClassVar[tuple[str, ...]]
    reads: ClassVar[tuple[str, ...]]
    tables: ClassVar[tuple[str, ...]] = ()
    counted: ClassVar[bool] = False

    @classmethod
    def from_tables(cls, tables: Tables) -> Feature:
        """The feature built from the bundle's tables (it keeps those its ``tables`` names)."""
        return cls()

    def fill(self, ctx: RowContext, X: np.ndarray) -> None:
        raise NotImplementedError

    def refresh(self, sites: Sites, rows: Rows, lm_ids: list[np.ndarray], which: np.ndarray) -> None:
        """Score the rows in ``which`` again in ``rows.X`` on the text ``lm_ids`` has now (features reading it)."""
        raise NotImplementedError

    def leave_out(self, ctx: RowContext, X: np.ndarray, own: OwnCounts) -> None:
        """Fill the columns again without what the rows' own pairs added to the counts (features reading them)."""
        raise NotImplementedError


@dataclass(frozen=True)
class OwnCounts:
    """What the rows' own training pairs added to the bundle's pair counts (leave-one-out takes it out)."""

    gold: np.ndarray  # per row: the row is its pair's correction (counted once as an error, its source as written)
    pairs: Sequence[PairCounts]  # per chunk: the bigrams written correctly and the words its pair counted


class Vocabulary:
    """The vocabulary and what each of its characters is: its id, its corpus frequency, whether the generator
    may propose it, whether it is traditional-only (looked up on first use)."""

    def __init__(self, vocab: Sequence[str], tables: SimilarityTables):
        from corrector.text.chars import is_cjk

        self.tokens = list(vocab)
        self.char_id = {t: i for i, t in enumerate(self.tokens) if len(t) == 1}
        self.char_ids = CharIds(self.char_id)  # vectorised char_id lookups
        self.logfreq = np.array([math.log1p(tables.frequency(t)) if len(t) == 1 else 0.0 for t in self.tokens],
                                dtype=np.float32)
        # the generator may propose any frequent CJK character (any CJK character when the bundle has no
        # character frequencies, e.g. one exported from a Hugging Face pair)
        freq = np.array([tables.frequency(t) if len(t) == 1 else 0 for t in self.tokens])
        cjk = np.array([len(t) == 1 and is_cjk(t) for t in self.tokens])
        self.proposable = cjk & (freq > 0) if (freq > 0).any() else cjk
        ids = np.flatnonzero(self.proposable)
        self.proposable_span = (int(ids.min()), int(ids.max()) + 1) if len(ids) else (0, 0)
        self._traditional = np.zeros(len(self.tokens), dtype=np.int8)  # 0 unknown, 1 no, 2 yes

    def __len__(self) -> int:
        return len(self.tokens)

    def chunk_ids(self, sites: Sites, texts: Sequence[str]) -> np.ndarray:
        """The chunks' characters as vocab ids, two columns of -1 on each side (and -1 where not in the vocab)."""
        n_chunks = int(sites.chunk.max()) + 1 if len(sites) else 0
        width = max((len(t) for t in texts[:n_chunks]), default=0) + 4
        T = np.full((max(n_chunks, 1), width), -1, dtype=np.int64)
        for c in range(n_chunks):
            T[c, 2 : 2 + len(texts[c])] = [self.char_id.get(ch, -1) for ch in texts[c]]
        return T

    def is_traditional(self, vids: np.ndarray) -> np.ndarray:
        """For each of ``vids``: a traditional-only character, which simplified text never writes (each character
        looked up with OpenCC the first time it is asked about: the whole vocabulary takes a fifth of a second)."""
        from corrector.text.script import traditional_only

        known = self._traditional[vids]
        if not known.all():
            todo = np.unique(vids[known == 0])
            self._traditional[todo] = [2 if len(self.tokens[i]) == 1 and traditional_only(self.tokens[i]) else 1
                                       for i in todo.tolist()]
            known = self._traditional[vids]
        return known == 2


class Dictionary:
    """jieba's two-, three- and four-character words: the bundle's table, else read from jieba at first use; and
    the particles' table (None: the bundle has none)."""

    def __init__(self, words: WordTable | None, vocab: Vocabulary, particles: ParticleTable | None = None):
        self._words = words
        self._vocab = vocab
        self.particles = particles

    def table(self) -> WordTable:
        if self._words is None:
            self._words = WordTable.from_jieba(self._vocab.char_id, len(self._vocab))
        return self._words


@dataclass(frozen=True)
class Tables:
    """The bundle's tables that the features are built from, one value handed to every feature kind's
    ``Feature.from_tables``. Another LM or a fold's candidate table is another value (``replace``); only the
    features that declare a field that changed are built again (``Feature.tables``)."""

    vocabulary: Vocabulary  # the vocabulary and each character's corpus frequency
    similarity: SimilarityTables  # pinyin and shape similarity, character frequencies
    candidates: CandidateTable  # each character's candidates, their similarities and the real pairs' error counts
    counts: PairCounts  # the word forms the real training pairs keep
    dictionary: Dictionary  # jieba's two-, three- and four-character words and the particles' table
    text: LMText | None  # the character LM over the text (None: decoding without one)

    def changed(self, other: Tables) -> set[str]:
        """The fields that hold another object than ``other``'s."""
        return {f.name for f in fields(self) if getattr(self, f.name) is not getattr(other, f.name)}


TABLES = tuple(f.name for f in fields(Tables))  # what a feature may declare it is built from
