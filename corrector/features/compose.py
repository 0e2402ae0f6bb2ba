"""``Evidence``: everything a choice is scored on except the networks' raw outputs, which come in with the sites.

The features come from the modules of this package; ``REGISTRY`` says which module fills which columns, in order.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from corrector.evidence.candidates import CandidateTable
from corrector.evidence.dictionary import WordTable
from corrector.evidence.kept_forms import CharIds, KeptForms, PairCounts
from corrector.evidence.similarity import SimilarityTables
from corrector.features.columns import COL, FEATURES
from corrector.features.gather import CandidateFeatures
from corrector.features.kept import KeptFeatures
from corrector.features.lm import LMFeatures, _vocab_lm_ids
from corrector.features.sites import Rows, Sites, WordPairs
from corrector.features.words import WordFeatures


@dataclass(frozen=True)
class RowContext:
    """The rows being scored, for the modules that fill their columns."""

    sites: Sites
    texts: Sequence[str]
    site: np.ndarray
    vid: np.ndarray
    static: np.ndarray  # the candidate table's entry of each row, -1 where none
    is_keep: np.ndarray
    custom: np.ndarray
    T: np.ndarray  # the chunks as vocab ids (WordFeatures._char_ids)
    lm_ids: list[np.ndarray] | None
    pairs: WordPairs | None


def _fill_choice(ev: Evidence, ctx: RowContext, X: np.ndarray) -> None:
    """What the row is: the character as written (``keep``), the discriminator's P(replaced) on candidate rows,
    and whether the caller asked for the pair (``custom``)."""
    X[:, COL["keep"]] = ctx.is_keep
    X[:, COL["rtd"]] = np.where(ctx.is_keep, 0.0, ctx.sites.rtd[ctx.site])
    X[:, COL["custom"]] = ctx.custom


# (the columns, the function that fills them), in the order they are filled
REGISTRY: tuple[tuple[tuple[str, ...], Callable[[Evidence, RowContext, np.ndarray], None]], ...] = (
    (("gen_lp", "pinyin", "shape", "confusions", "error_rate", "freq"), CandidateFeatures.fill_cheap),
    (("keep", "rtd", "custom"), _fill_choice),
    (("name",), WordFeatures.fill_name),
    (("word",), WordFeatures.fill_word),
    (("seen", "seen_max", "kept_word"), KeptFeatures.fill_kept),
    (("lm_gain", "pair"), LMFeatures.fill_lm),
)


class Evidence(CandidateFeatures, WordFeatures, KeptFeatures, LMFeatures):
    """Everything a choice is scored on except the networks' raw outputs, which come in with the sites."""

    def __init__(self, vocab: Sequence[str], candidates: CandidateTable, tables: SimilarityTables, lm=None,
                 words: WordTable | None = None, counts: PairCounts | None = None):
        """``words``: jieba's words as the bundle stores them (``corrector.evidence.dictionary``); None: read from jieba
        at first use. ``counts``: the word forms the real training pairs keep (None: none)."""
        from corrector.text.chars import is_cjk

        self.vocab = list(vocab)
        self.char_id = {t: i for i, t in enumerate(self.vocab) if len(t) == 1}
        self.table = candidates
        self.lm = lm
        char_ids = CharIds(self.char_id)  # vectorised char_id lookups
        self.cand_vid = char_ids(candidates.candidate_chars())
        self.logfreq = np.array([math.log1p(tables.frequency(t)) if len(t) == 1 else 0.0 for t in self.vocab],
                                dtype=np.float32)
        # the generator may propose any frequent CJK character (any CJK character when the bundle has no
        # character frequencies, e.g. one exported from a Hugging Face pair)
        freq = np.array([tables.frequency(t) if len(t) == 1 else 0 for t in self.vocab])
        cjk = np.array([len(t) == 1 and is_cjk(t) for t in self.vocab])
        self.proposable = cjk & (freq > 0) if (freq > 0).any() else cjk
        # the word forms the real training pairs keep: seen, seen_max, kept_word
        self.kept = KeptForms(counts if counts is not None else PairCounts(), char_ids, len(self.vocab))
        # per vocab id: how often the character was written in the real training pairs (error_rate's denominator)
        self.written = np.array([candidates.written_count(t) if len(t) == 1 else 0.0 for t in self.vocab],
                                dtype=np.float32)
        ids = np.flatnonzero(self.proposable)
        self.proposable_span = (int(ids.min()), int(ids.max()) + 1) if len(ids) else (0, 0)
        self._words = words
        self.tables = tables
        self._pair_index = None
        self._keys_of = {}
        self._wkeys = None
        V = len(self.vocab)
        keys = np.repeat(np.arange(len(candidates.offsets) - 1, dtype=np.int64) * V, np.diff(candidates.offsets))
        keys += self.cand_vid  # row * V + vid, in place: two fewer arrays of the table's length
        keys[self.cand_vid < 0] = -1
        self.table_order = np.argsort(keys, kind="stable")
        self.table_keys = keys[self.table_order]
        self._traditional = np.zeros(len(self.vocab), dtype=np.int8)  # see script_filter: 0 unknown, 1 no, 2 yes
        self._variant_keys = None  # see script_filter
        if lm is not None:
            self.lm_vid = _vocab_lm_ids(self.vocab, lm)

    def with_lm(self, lm) -> Evidence:
        """The same evidence over another character LM (None: without one); the LM-free tables are shared."""
        other = copy.copy(self)
        other.lm = lm
        if lm is not None:
            other.lm_vid = _vocab_lm_ids(self.vocab, lm)
        elif hasattr(other, "lm_vid"):
            del other.lm_vid
        return other

    def with_candidates(self, candidates: CandidateTable, counts: PairCounts) -> Evidence:
        """The same evidence over another candidate table and pair counts (a fold of cross-fitting): built again
        from them, sharing the vocabulary, the similarity tables, the LM and the dictionary's words."""
        return Evidence(self.vocab, candidates, self.tables, self.lm, self._words, counts)

    def rows(self, sites: Sites, texts: Sequence[str], shortlist: tuple[np.ndarray, ...],
             lm_ids: list[np.ndarray] | None, pairs: WordPairs | None = None) -> Rows:
        """The feature matrix: each site's keep row, then its shortlisted candidates (``pairs``: the word pairs
        the shortlist was given, for the ``pair`` feature); every column filled by its module (``REGISTRY``)."""
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
        ctx = RowContext(sites, texts, site, vid, static, is_keep, custom, self._char_ids(sites, texts), lm_ids, pairs)
        for _, fill in REGISTRY:
            fill(self, ctx, X)
        return Rows(site, vid, X, pairs)
