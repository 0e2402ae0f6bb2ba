"""``Evidence``: everything a choice is scored on except the networks' raw outputs, which come in with the sites.

It holds the feature objects (``state.Feature``: each declares the columns it fills, what of the rows it reads and
the bundle's tables it was built from), built from the bundle's tables once at load, and fills the rows' columns
with them in ``SOURCES`` order; ``refresh`` scores the text-dependent ones again after a round of edits, and
``leave_out`` the counted ones without the rows' own pairs (training's leave-one-out).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import replace
from typing import TypeVar

import numpy as np

from corrector.evidence.candidates import CandidateTable
from corrector.evidence.dictionary import WordTable
from corrector.evidence.kept_forms import PairCounts
from corrector.evidence.particles import ParticleTable
from corrector.evidence.similarity import SimilarityTables
from corrector.features.cheap import (
    CheapFeature,
    Choice,
    ErrorCounts,
    Frequency,
    GeneratorLogProb,
    Similarity,
)
from corrector.features.columns import FEATURES
from corrector.features.gather import Gather
from corrector.features.kept import Kept
from corrector.features.lm import LMGain, PairGain
from corrector.features.lm_text import LMText
from corrector.features.pairs import WordPairFinder
from corrector.features.particle import Particle
from corrector.features.sites import Rows, Sites, WordPairs
from corrector.features.state import TABLES, Dictionary, Feature, OwnCounts, RowContext, Tables, Vocabulary
from corrector.features.words import Name, Word

# the feature objects' kinds, in the order they fill their columns (adding evidence: one kind here, its columns
# in ``columns.FEATURES``, its weight in the bundle's ranker)
SOURCES: tuple[type[Feature], ...] = (GeneratorLogProb, Similarity, ErrorCounts, Frequency, Choice, Name, Word, Kept,
                                      LMGain, PairGain, Particle)
F = TypeVar("F", bound=Feature)


class Evidence:
    """Everything a choice is scored on except the networks' raw outputs, which come in with the sites."""

    tables: Tables  # the bundle's tables, which every feature object is built from
    sources: tuple[Feature, ...]  # the feature objects, in ``SOURCES`` order
    gather: Gather  # the candidates, scored for the shortlist by the cheap features

    def __init__(self, vocab: Sequence[str], candidates: CandidateTable, tables: SimilarityTables, lm=None,
                 words: WordTable | None = None, counts: PairCounts | None = None,
                 particles: ParticleTable | None = None):
        """``words``: jieba's words as the bundle stores them (``corrector.evidence.dictionary``); None: read from jieba
        at first use. ``counts``: the word forms the real training pairs keep (None: none). ``particles``: the
        particles' table (``corrector.evidence.particles``; None: none)."""
        vocabulary = Vocabulary(vocab, tables)
        dictionary = Dictionary(words, vocabulary, particles)
        self.find_pairs = WordPairFinder(vocabulary, tables, dictionary)
        self._build(Tables(vocabulary, tables, candidates, counts if counts is not None else PairCounts(), dictionary,
                           LMText(lm, vocabulary.tokens) if lm is not None else None), None)

    def _build(self, tables: Tables, like: Evidence | None) -> None:
        """The feature objects over ``tables``; those of ``like`` built from none of the tables changed are kept."""
        self.tables = tables
        changed = set(TABLES) if like is None else tables.changed(like.tables)
        self.sources = tuple(like.source(kind) if like is not None and not changed & set(kind.tables) else
                             kind.from_tables(tables) for kind in SOURCES)
        self.gather = (like.gather if like is not None and not changed & {"candidates", "vocabulary"} else
                       Gather(tables.vocabulary, tables.candidates,
                              [f for f in self.sources if isinstance(f, CheapFeature)]))

    @property
    def vocabulary(self) -> Vocabulary:
        return self.tables.vocabulary

    @property
    def vocab(self) -> list[str]:
        return self.tables.vocabulary.tokens

    @property
    def dictionary(self) -> Dictionary:
        return self.tables.dictionary

    @property
    def table(self) -> CandidateTable:
        return self.tables.candidates

    @property
    def counts(self) -> PairCounts:
        return self.tables.counts

    @property
    def text(self) -> LMText | None:
        """The character LM over the chunks (None: none)."""
        return self.tables.text

    @property
    def lm(self):
        return self.tables.text.lm if self.tables.text is not None else None

    def source(self, kind: type[F]) -> F:
        """The feature object of that kind."""
        return next(f for f in self.sources if isinstance(f, kind))

    def with_lm(self, lm) -> Evidence:
        """The same evidence over another character LM (None: without one); the LM-free features are shared."""
        if lm is self.lm:
            return self._rebuilt(self.tables)
        return self._rebuilt(replace(self.tables, text=LMText(lm, self.vocab) if lm is not None else None))

    def with_candidates(self, candidates: CandidateTable, counts: PairCounts) -> Evidence:
        """The same evidence over another candidate table and pair counts (a fold of cross-fitting), sharing the
        vocabulary, the similarity tables, the LM and the dictionary's words."""
        return self._rebuilt(replace(self.tables, candidates=candidates, counts=counts))

    def _rebuilt(self, tables: Tables) -> Evidence:
        other = copy.copy(self)
        other._build(tables, self)
        return other

    # ---- the score stage ---------------------------------------------------------------------------------------

    def word_pairs(self, sites: Sites) -> WordPairs:
        """The word pairs of the sites (``pairs.WordPairFinder``)."""
        return self.find_pairs(sites)

    def shortlist(self, sites: Sites, weights: dict[str, float], size: int, top_k: int,
                  custom: dict[str, set[str]], pairs: WordPairs | None = None) -> tuple[np.ndarray, ...]:
        """(site, vid, static row index or -1, custom flag) of each site's ``size`` best candidates by the cheap
        score, plus every character of ``pairs`` (``gather.Gather.shortlist``)."""
        return self.gather.shortlist(sites, weights, size, top_k, custom, pairs)

    def lm_ids(self, texts: Sequence[str]) -> list[np.ndarray]:
        """The texts as the LM sees them (what ``rows`` and ``refresh`` read)."""
        assert self.text is not None
        return self.text.encode(texts)

    def static_features(self, sites: Sites, site: np.ndarray, vid: np.ndarray, static: np.ndarray,
                        own: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """The cheap features of the pairs (site, vid) by name (``static``: their candidate-table entry or -1).
        ``own``: per pair, true where the counts hold it from the pair's own training text (leave-one-out)."""
        out: dict[str, np.ndarray] = {}
        for f in self.gather.cheap:
            out.update(f.values(sites, site, vid, static, own) if own is not None and isinstance(f, ErrorCounts)
                       else f.values(sites, site, vid, static))
        return out

    def rows(self, sites: Sites, texts: Sequence[str], shortlist: tuple[np.ndarray, ...],
             lm_ids: list[np.ndarray] | None, pairs: WordPairs | None = None) -> Rows:
        """The feature matrix: each site's keep row, then its shortlisted candidates (``pairs``: the word pairs
        the shortlist was given, for the ``pair`` feature); every column filled by its feature object."""
        c_site, c_vid, c_static, c_custom = shortlist
        n = len(sites)
        site = np.concatenate([np.arange(n), c_site])
        vid = np.concatenate([sites.src_id, c_vid])
        static = np.concatenate([np.full(n, -1, np.int64), c_static])
        is_keep = np.concatenate([np.ones(n, bool), np.zeros(len(c_site), bool)])
        order = np.lexsort((~is_keep, site))
        site, vid, static, is_keep = site[order], vid[order], static[order], is_keep[order]
        custom = np.concatenate([np.zeros(n, bool), c_custom])[order]
        X = np.zeros((len(site), len(FEATURES)), dtype=np.float32)
        ctx = RowContext(sites, texts, site, vid, static, is_keep, custom, self.vocabulary.chunk_ids(sites, texts),
                         lm_ids, pairs)
        for f in self.sources:
            f.fill(ctx, X)
        return Rows(site, vid, X, pairs, static)

    # ---- after the score stage ---------------------------------------------------------------------------------

    def refresh(self, sites: Sites, rows: Rows, lm_ids: list[np.ndarray], edited: Sequence[int],
                edit_rows: Sequence[int], open_sites: np.ndarray) -> bool:
        """After a round of edits (site ``edited[j]`` now written as row ``edit_rows[j]`` chooses): the edits
        written into ``lm_ids`` (in place), then the features that read it scored again in ``rows.X``, on the rows
        of the open sites within the LM's order of an edit. False when no open site is that near (nothing scored)."""
        assert self.text is not None
        edited_ = np.asarray(edited, dtype=np.int64)
        self.text.write(lm_ids, sites.chunk[edited_], sites.char[edited_], rows.vid[np.asarray(edit_rows, np.int64)])
        spacing = self.text.lm.order
        near = np.zeros(len(sites), dtype=bool)
        for s in edited_.tolist():
            near |= (sites.chunk == sites.chunk[s]) & (np.abs(sites.char - sites.char[s]) < spacing)
        near &= open_sites
        if not near.any():
            return False
        which = near[rows.site]
        for f in self.sources:
            if "lm_ids" in f.reads:
                f.refresh(sites, rows, lm_ids, which)
        return True

    def leave_out(self, sites: Sites, texts: Sequence[str], rows: Rows, own: OwnCounts) -> None:
        """Training's leave-one-out: the rows' columns read from counts of the real training pairs (``counted``
        features) filled again in ``rows.X`` without what the rows' own pairs added to them (``own``)."""
        assert rows.static is not None
        is_keep = np.zeros(len(rows), bool)
        is_keep[np.searchsorted(rows.site, np.arange(len(sites)), side="left")] = True  # each site's first row
        ctx = RowContext(sites, texts, rows.site, rows.vid, rows.static, is_keep, np.zeros(len(rows), bool),
                         self.vocabulary.chunk_ids(sites, texts), None, rows.pairs)
        for f in self.sources:
            if f.counted:
                f.leave_out(ctx, rows.X, own)
