"""``particle``: which of 的, 地 and 得 the words either side of one call for (corrector/evidence/particles.py)."""

from __future__ import annotations

import numpy as np

from corrector.evidence.particles import PARTICLES, ParticleTable
from corrector.features.columns import COL
from corrector.features.state import Feature, RowContext, Tables, Vocabulary


class Particle(Feature):
    """``particle`` (candidate rows where the character as written and the choice are both among 的, 地, 得):
    log P(choice) - log P(written) given the words before and after the slot; 0 elsewhere, where the written one is
    part of a word (目的, 觉得), and for a bundle without the table."""

    columns = ("particle",)
    reads = ("sites", "texts", "site", "vid", "is_keep")
    tables = ("dictionary", "vocabulary")

    def __init__(self, table: ParticleTable | None, vocab: Vocabulary):
        self.table = table
        self.is_particle = np.zeros(len(vocab), dtype=bool)
        self.index = np.full(len(vocab), -1, dtype=np.int64)
        for k, p in enumerate(PARTICLES):
            if (v := vocab.char_id.get(p)) is not None:
                self.is_particle[v], self.index[v] = True, k

    @classmethod
    def from_tables(cls, tables: Tables) -> Particle:
        return cls(tables.dictionary.particles, tables.vocabulary)

    def fill(self, ctx: RowContext, X: np.ndarray) -> None:
        sites, table = ctx.sites, self.table
        if table is None or not len(sites):
            return
        written = self.is_particle[sites.src_id]
        rows = np.flatnonzero(written[ctx.site] & self.is_particle[ctx.vid] & ~ctx.is_keep)
        if not len(rows):
            return
        logp = {s: table.slot_log_probs(ctx.texts[sites.chunk[s]], int(sites.char[s]))
                for s in np.unique(ctx.site[rows]).tolist()}  # one segmentation a site
        for r in rows.tolist():
            s = int(ctx.site[r])
            if (lp := logp[s]) is not None:
                X[r, COL["particle"]] = lp[self.index[ctx.vid[r]]] - lp[self.index[sites.src_id[s]]]
