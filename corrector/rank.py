"""Candidate filtering and ranking at one suspect position; the step that decides an edit emits it."""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence

import numpy as np

from .config import CorrectorConfig
from .similarity import SimilarityTables
from .types import Candidate, Edit, Reason


class Ranker:
    """Scores candidates as log P_gen(c) + sim_weight·similarity(src, c) + freq_weight·log(1+freq(c)).

    The original character scores with similarity 1, so a candidate must win by more than the
    similarity it lacks (a tolerance band) plus ``margin`` before it replaces the original.
    """

    def __init__(self, vocab: Sequence[str], tables: SimilarityTables):
        self.vocab = list(vocab)
        self.char_id = {t: i for i, t in enumerate(self.vocab) if len(t) == 1}
        from .text import is_cjk

        self.cjk_mask = np.array([len(t) == 1 and is_cjk(t) for t in self.vocab])
        self.tables = tables

    def candidates(self, source: str, logprobs: np.ndarray, cfg: CorrectorConfig,
                   custom: Collection[str] = (), filtered: bool = True) -> list[Candidate]:
        """Top candidates other than ``source``, best first. ``logprobs`` is one row over the vocab."""
        lp = np.where(self.cjk_mask, logprobs, -np.inf)
        k = min(cfg.top_k, int(self.cjk_mask.sum()))
        top = np.argpartition(-lp, k - 1)[:k]
        ids = set(top.tolist()) | {self.char_id[c] for c in custom if c in self.char_id}
        out = []
        for i in ids:
            c = self.vocab[i]
            if c == source:
                continue
            ps, ss = self.tables.pinyin_sim(source, c), self.tables.shape_sim(source, c)
            sim = max(ps, ss)
            is_custom = c in custom
            if filtered and not is_custom and not similar_enough(ps, ss, cfg):
                continue
            score = self._score(float(logprobs[i]), sim, c, cfg) + (cfg.confusion_bonus if is_custom else 0.0)
            out.append(Candidate(c, score, math.exp(float(logprobs[i])), ps, ss))
        out.sort(key=lambda c: -c.score)
        return out

    def decide(self, position: int, source: str, rtd_prob: float, logprobs: np.ndarray,
               cfg: CorrectorConfig, custom: Collection[str] = ()) -> Edit | None:
        cands = self.candidates(source, logprobs, cfg, custom)
        if not cands:
            return None
        src_id = self.char_id.get(source)
        src_lp = float(logprobs[src_id]) if src_id is not None else -30.0
        keep = self._score(src_lp, 1.0, source, cfg)
        best = cands[0]
        if best.score - keep <= cfg.margin:
            return None
        scores = np.array([keep] + [c.score for c in cands])
        p = np.exp(scores - scores.max())
        confidence = float(rtd_prob * p[1] / p.sum())
        return Edit(position, source, best.char, round(confidence, 4), reason_for(best, cfg))

    def _score(self, logprob: float, sim: float, char: str, cfg: CorrectorConfig) -> float:
        s = logprob + cfg.sim_weight * sim
        if cfg.freq_weight:
            s += cfg.freq_weight * math.log1p(self.tables.frequency(char))
        return s


def similar_enough(pinyin_sim: float, shape_sim: float, cfg: CorrectorConfig) -> bool:
    return pinyin_sim >= cfg.min_similarity or shape_sim >= cfg.min_shape_similarity


def reason_for(c: Candidate, cfg: CorrectorConfig) -> Reason:
    """pinyin or shape when the candidate passed on that ground (a zero similarity never counts)."""
    sound = c.pinyin_sim > 0.0 and c.pinyin_sim >= cfg.min_similarity
    shape = c.shape_sim > 0.0 and c.shape_sim >= cfg.min_shape_similarity
    if sound and (not shape or c.pinyin_sim >= c.shape_sim):
        return "pinyin"
    return "shape" if shape else "other"
