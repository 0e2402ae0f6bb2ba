"""The ranker's training rows: feature tables of decoded pairs, one row per choice of a site, the gold one labelled.

``extract_cheap`` gives every candidate of the erroneous characters with the shortlist's cheap features (what the
shortlist's weights are fitted on); ``extract`` gives each site's rows as the Corrector scores them in its first
round (what the ranker is fitted on). The counts of the real pairs a training row reads (confusions, error_rate,
seen, kept_word) must not hold that pair itself: with ``leave_one_out`` the Corrector's evidence fills them without
what the pair added to them (``Evidence.leave_out``, ``Evidence.static_features(own=)``); cross-fitted candidate tables
(``training.evidence.candidates --folds``) need none. Tables are cached as ``.npz`` (``save_table``, ``load_table``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from corrector import Corrector
from corrector.evidence.kept_forms import PairCounts
from corrector.features import COL, FEATURES, OwnCounts
from corrector.stages import Chunk


@dataclass
class Table:
    """Feature rows of many sites with their labels: ``site`` groups rows, ``label`` marks the gold choice."""

    X: np.ndarray
    site: np.ndarray
    label: np.ndarray
    erroneous: np.ndarray  # per site: the gold differs from the character written
    reachable: np.ndarray  # per site: the gold is among the rows
    weight: np.ndarray | None = None  # per site: what it counts for in the fit (None: 1 each; ``thinned``)

    @staticmethod
    def concat(parts: list[Table]) -> Table:
        offset, sites = 0, []
        for p in parts:
            sites.append(p.site + offset)
            offset += len(p.erroneous)
        weight = (np.concatenate([p.site_weights() for p in parts]) if any(p.weight is not None for p in parts)
                  else None)
        return Table(np.concatenate([p.X for p in parts]), np.concatenate(sites),
                     np.concatenate([p.label for p in parts]), np.concatenate([p.erroneous for p in parts]),
                     np.concatenate([p.reachable for p in parts]), weight)

    def site_weights(self) -> np.ndarray:
        return self.weight if self.weight is not None else np.ones(len(self.erroneous))

    def subset(self, keep_sites: np.ndarray) -> Table:
        """The rows of the sites where ``keep_sites`` is true, sites renumbered."""
        new_id = np.cumsum(keep_sites) - 1
        r = keep_sites[self.site]
        return Table(self.X[r], new_id[self.site[r]], self.label[r], self.erroneous[keep_sites],
                     self.reachable[keep_sites], None if self.weight is None else self.weight[keep_sites])

    def thinned(self, max_rows: int, seed: int = 0) -> Table:
        """About ``max_rows`` rows: every site with an error, and a uniform sample of the others (at least as many), each
        weighted by one over the share sampled, so that the fit's likelihood stays an unbiased estimate of the whole
        table's (a small pair flags every character: 1.3M rows from 1,000 pairs, 23 minutes a fit)."""
        if len(self.X) <= max_rows:
            return self
        rows_per_site = np.bincount(self.site, minlength=len(self.erroneous))
        err_rows = int(rows_per_site[self.erroneous].sum())
        clean = np.flatnonzero(~self.erroneous)
        share = min(1.0, max((max_rows - err_rows) / max(int(rows_per_site[clean].sum()), 1),
                             int(self.erroneous.sum()) / max(len(clean), 1)))  # at least as many clean sites as not
        rng = np.random.default_rng(seed)
        keep = self.erroneous.copy()
        keep[clean[rng.random(len(clean)) < share]] = True
        weight = self.site_weights() * np.where(self.erroneous, 1.0, 1.0 / max(share, 1e-9))
        return replace(self, weight=weight).subset(keep)


def _gold(pairs: list[tuple[str, str]], batch, sites) -> list[str]:
    return [pairs[batch[c].text_index][1][batch[c].start + i] for c, i in zip(sites.chunk, sites.char)]


def _own_counts(batch: Sequence[Chunk], pairs: list[tuple[str, str]]) -> list[PairCounts]:
    """Per chunk: what its pair added to the real pairs' counts (``training.evidence.candidates``: the bigrams it
    writes correctly, the words it keeps and changes), the whole pair's, whichever chunk holds the word."""
    from ..evidence.candidates import correct_bigrams, word_counts

    out = []
    for c in batch:
        pair = [pairs[c.text_index]]
        kept, changed = word_counts(pair)
        words = {w: (kept[w], changed[w]) for w in kept.keys() | changed.keys()}
        out.append(PairCounts(dict(correct_bigrams(pair)), words))
    return out


def extract_cheap(fix: Corrector, pairs: list[tuple[str, str]], leave_one_out: bool = True,
                  batch_texts: int = 256) -> Table:
    """Every candidate of every erroneous character with the cheap (shortlist) features only; one row
    per candidate, no keep rows. What the shortlist's weights are fitted on. ``leave_one_out``: the pairs
    were counted in ``fix``'s candidate table (training pairs, without cross-fitted tables)."""
    ev = fix.evidence
    parts = []
    for b in range(0, len(pairs), batch_texts):
        part = pairs[b : b + batch_texts]
        prepared = fix.prepare([s for s, _ in part], protect_dictionary_words=False)
        cfg = prepared.settings
        for batch in prepared.batches:
            sites = fix.sites(batch)
            gold = _gold(part, batch, sites)
            err = np.array([g != s for g, s in zip(gold, sites.src)], dtype=bool)
            if not err.any():
                continue
            sites = sites.take(err)
            gold = [g for g, e in zip(gold, err) if e]
            site, vid, static, _ = ev.shortlist(sites, {}, 1_000_000, cfg.top_k, {})
            label = np.array([fix.vocab[v] == gold[s] for s, v in zip(site.tolist(), vid.tolist())], dtype=bool)
            X = np.zeros((len(site), len(FEATURES)), dtype=np.float32)
            # leave-one-out: the gold pair counted once less, as an error and as written
            for name, col in ev.static_features(sites, site, vid, static, own=label if leave_one_out else None).items():
                X[:, COL[name]] = col
            reach = np.zeros(len(sites), bool)
            reach[site[label]] = True
            parts.append(Table(X, site, label, np.ones(len(sites), bool), reach))
    return Table.concat(parts)


def extract(fix: Corrector, pairs: list[tuple[str, str]], shortlist: int, leave_one_out: bool = True,
            batch_texts: int = 256) -> Table:
    """Rows for every site of the pairs' sources, as the Corrector scores them in its first round."""
    parts = []
    for b in range(0, len(pairs), batch_texts):
        part = pairs[b : b + batch_texts]
        prepared = fix.prepare([s for s, _ in part], shortlist=shortlist, protect_dictionary_words=False)
        for scored in fix.score(prepared, word_pairs=True):  # whatever the bundle's ranker weighs
            batch, sites = scored.chunks, scored.sites
            rows = replace(scored.rows, X=scored.rows.X.copy())  # the leave-one-out counts change it
            gold = _gold(part, batch, sites)
            err = np.array([g != s for g, s in zip(gold, sites.src)], dtype=bool)
            label = np.array([fix.vocab[v] == gold[s] for s, v in zip(rows.site.tolist(), rows.vid.tolist())],
                             dtype=bool)
            if leave_one_out:
                fix.evidence.leave_out(sites, [c.text for c in batch], rows, OwnCounts(label, _own_counts(batch, part)))
            reach = np.zeros(len(sites), bool)
            reach[rows.site[label]] = True
            parts.append(Table(rows.X, rows.site, label, err, reach))
    return Table.concat(parts)


def save_table(t: Table, path: Path) -> None:
    arrays = {"X": t.X, "site": t.site, "label": t.label, "erroneous": t.erroneous, "reachable": t.reachable,
              **({"weight": t.weight} if t.weight is not None else {})}
    np.savez(path, **arrays)  # type: ignore[arg-type]


def load_table(path: Path) -> Table:
    z = np.load(path)
    return Table(z["X"], z["site"], z["label"], z["erroneous"], z["reachable"], z.get("weight", None))

