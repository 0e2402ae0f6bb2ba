"""The features of a choice alone, without its context: what the row is (``keep``, ``rtd``, ``custom``) and the
shortlist's cheap features (``gen_lp``, ``pinyin``, ``shape``, ``confusions``, ``error_rate``, ``freq``), which
also score the candidates before there are rows (``CheapFeature.values``)."""

from __future__ import annotations

import numpy as np

from corrector.evidence.candidates import CandidateTable
from corrector.features.columns import COL, RATE_A, RATE_B
from corrector.features.sites import Sites
from corrector.features.state import Feature, OwnCounts, RowContext, Tables, Vocabulary


class Choice(Feature):
    """What the row is: the character as written (``keep``), the discriminator's P(replaced) on candidate rows,
    and whether the caller asked for the pair (``custom``)."""

    columns = ("keep", "rtd", "custom")
    reads = ("sites", "site", "is_keep", "custom")

    def fill(self, ctx: RowContext, X: np.ndarray) -> None:
        X[:, COL["keep"]] = ctx.is_keep
        X[:, COL["rtd"]] = np.where(ctx.is_keep, 0.0, ctx.sites.rtd[ctx.site])
        X[:, COL["custom"]] = ctx.custom


class CheapFeature(Feature):
    """A feature of the pair (character written, choice) alone, which the shortlist's cheap score weighs."""

    reads = ("sites", "site", "vid", "static", "is_keep")

    def values(self, sites: Sites, site: np.ndarray, vid: np.ndarray, static: np.ndarray) -> dict[str, np.ndarray]:
        """Each column for the pairs (site, vid) (``static``: their candidate-table entry, -1 where none)."""
        raise NotImplementedError

    def fill(self, ctx: RowContext, X: np.ndarray) -> None:
        for name, col in self.values(ctx.sites, ctx.site, ctx.vid, ctx.static).items():
            X[:, COL[name]] = col


class GeneratorLogProb(CheapFeature):
    """``gen_lp``: the generator's log-probability of the choice."""

    columns = ("gen_lp",)

    def values(self, sites: Sites, site: np.ndarray, vid: np.ndarray, static: np.ndarray) -> dict[str, np.ndarray]:
        return {"gen_lp": sites.logprobs.at(site, vid)}


class Similarity(CheapFeature):
    """``pinyin`` and ``shape``: the candidate table's graded similarities (0 for a pair it does not hold); the
    keep row is as similar as can be."""

    columns = ("pinyin", "shape")
    tables = ("candidates",)

    def __init__(self, table: CandidateTable):
        self.table = table

    @classmethod
    def from_tables(cls, tables: Tables) -> Similarity:
        return cls(tables.candidates)

    def values(self, sites: Sites, site: np.ndarray, vid: np.ndarray, static: np.ndarray) -> dict[str, np.ndarray]:
        return {"pinyin": table_column(self.table.pinyin, static), "shape": table_column(self.table.shape, static)}

    def fill(self, ctx: RowContext, X: np.ndarray) -> None:
        super().fill(ctx, X)
        X[ctx.is_keep, COL["pinyin"]] = 1.0
        X[ctx.is_keep, COL["shape"]] = 1.0


class ErrorCounts(CheapFeature):
    """``confusions`` (log(1 + times the real training pairs wrote the character for the choice)) and
    ``error_rate`` (log((that + a) / (times they wrote the character + b))); the keep row has no error rate.

    Counted from the real training pairs: ``own`` (per row, the times the row's own pair counted it, as an error
    and as written) is left out of both counts when given (leave-one-out)."""

    columns = ("confusions", "error_rate")
    tables = ("candidates", "vocabulary")
    counted = True

    def __init__(self, table: CandidateTable, vocab: Vocabulary):
        self.count = table.count
        # per vocab id: how often the character was written in the real training pairs (error_rate's denominator)
        self.written = np.array([table.written_count(t) if len(t) == 1 else 0.0 for t in vocab.tokens],
                                dtype=np.float32)

    @classmethod
    def from_tables(cls, tables: Tables) -> ErrorCounts:
        return cls(tables.candidates, tables.vocabulary)

    def values(self, sites: Sites, site: np.ndarray, vid: np.ndarray, static: np.ndarray,
               own: np.ndarray | None = None) -> dict[str, np.ndarray]:
        count = table_column(self.count, static)
        written = self.written[sites.src_id[site]]
        if own is not None:
            count, written = np.maximum(count - own, 0), np.maximum(written - own, 0)
        return {"confusions": np.log1p(count), "error_rate": np.log((count + RATE_A) / (written + RATE_B))}

    def fill(self, ctx: RowContext, X: np.ndarray) -> None:
        super().fill(ctx, X)
        X[ctx.is_keep, COL["error_rate"]] = 0.0

    def leave_out(self, ctx: RowContext, X: np.ndarray, own: OwnCounts) -> None:
        """The gold candidate rows: their pair one error fewer, its character written once fewer."""
        for name, col in self.values(ctx.sites, ctx.site, ctx.vid, ctx.static, own.gold & ~ctx.is_keep).items():
            X[:, COL[name]] = col
        X[ctx.is_keep, COL["error_rate"]] = 0.0


class Frequency(CheapFeature):
    """``freq``: the choice's log corpus frequency against the character written's."""

    columns = ("freq",)
    tables = ("vocabulary",)

    def __init__(self, vocab: Vocabulary):
        self.logfreq = vocab.logfreq

    @classmethod
    def from_tables(cls, tables: Tables) -> Frequency:
        return cls(tables.vocabulary)

    def values(self, sites: Sites, site: np.ndarray, vid: np.ndarray, static: np.ndarray) -> dict[str, np.ndarray]:
        return {"freq": self.logfreq[vid] - self.logfreq[sites.src_id[site]]}


def table_column(col: np.ndarray, static: np.ndarray) -> np.ndarray:
    """The candidate table's column at each row's entry; 0 for rows not from it."""
    has = static >= 0
    out = np.zeros(len(static), dtype=np.float32)
    out[has] = col[static[has]]
    return out
