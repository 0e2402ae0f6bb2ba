"""The character LM's evidence: ``lm_gain`` (log P of the text with the choice minus as it is now) and ``pair``
(the gain of writing a frequent dictionary word over two adjacent characters whole), and the word pairs."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import product

import numpy as np

from corrector.evidence.char_lm import BOS, EOS, PAD
from corrector.evidence.similarity import fuzzy_key, split_reading
from corrector.features.columns import COL, PAIR_MIN_FREQ
from corrector.features.sites import Rows, Sites, WordPairs
from corrector.features.state import Tables


class LMFeatures(Tables):
    """Mixin of ``Evidence``: the LM features (rows get them only when decoding with the LM)."""

    def fill_lm(self, ctx, X: np.ndarray) -> None:
        if ctx.lm_ids is None or self.lm is None:
            return
        rows = Rows(ctx.site, ctx.vid, X, ctx.pairs)
        X[:, COL["lm_gain"]] = self.lm_gain(ctx.sites, rows, ctx.lm_ids, np.ones(len(rows), bool))
        X[:, COL["pair"]] = self.pair_gain(ctx.sites, rows, ctx.lm_ids)

    def lm_ids(self, texts: Sequence[str]) -> list[np.ndarray]:
        assert self.lm is not None
        return [self.lm.encode(t) for t in texts]

    def lm_gain(self, sites: Sites, rows: Rows, lm_ids: list[np.ndarray], which: np.ndarray) -> np.ndarray:
        """For the rows in ``which``: log P(text with the choice) − log P(text as it is now), over the
        ``order`` LM windows the position takes part in. Returns a full-length column (0 elsewhere)."""
        out = np.zeros(len(rows), dtype=np.float32)
        sel = np.flatnonzero(which)
        if len(sel) == 0:
            return out
        s = rows.site[sel]
        total = np.zeros(len(rows), dtype=np.float64)
        total[sel] = self._window_logprob(sites.chunk[s], sites.char[s], 1, lm_ids, [self.lm_vid[rows.vid[sel]]])
        keep_row = np.searchsorted(rows.site, rows.site[sel], side="left")  # each site's keep row comes first
        out[sel] = total[sel] - total[keep_row]
        return out

    def _window_logprob(self, chunk: np.ndarray, char: np.ndarray, span: int, lm_ids: list[np.ndarray],
                        new: list[np.ndarray]) -> np.ndarray:
        """Per query: the log-probability of the LM windows that contain any of the ``span`` characters from
        ``char`` on in its chunk (as ``lm_ids`` has it), with ``new[j]`` (LM ids) written at ``char + j``."""
        lm = self.lm
        assert lm is not None
        n = lm.order
        chunks = sorted({int(c) for c in chunk})
        slot = {c: k for k, c in enumerate(chunks)}
        width = max(len(lm_ids[c]) for c in chunks) + 2 * n + span
        M = np.full((len(chunks), width), PAD, dtype=np.int32)
        length = np.zeros(len(chunks), dtype=np.int64)
        for c, j in slot.items():
            ids = lm_ids[c]
            M[j, n - 1] = BOS
            M[j, n : n + len(ids)] = ids
            M[j, n + len(ids)] = EOS
            length[j] = len(ids)
        k = np.array([slot[int(c)] for c in chunk], dtype=np.int64)
        q = n + char  # the first changed character's coordinate in M
        t = q[:, None] + np.arange(n + span - 1)[None, :]  # the targets whose windows contain a changed one
        valid = t <= (n + length[k])[:, None]  # up to and including </s>
        idx = t[:, :, None] + np.arange(-(n - 1), 1)[None, None, :]
        idx = np.minimum(idx, width - 1)
        W = M[k[:, None, None], idx]
        for j, ids in enumerate(new):
            W = np.where(idx == (q + j)[:, None, None], ids[:, None, None], W)
        filler = np.array([PAD] * (n - 1) + [EOS], dtype=np.int32)  # windows past </s>: scored, then masked
        W = np.where(valid[:, :, None], W, filler[None, None, :])
        lp = lm.logprob(W.reshape(-1, n)).reshape(len(q), -1)
        return np.where(valid, lp, 0.0).sum(1)

    def pair_gain(self, sites: Sites, rows: Rows, lm_ids: list[np.ndarray]) -> np.ndarray:
        """The ``pair`` column: each candidate row's best LM gain from writing its word pair whole (log P of the
        text with both characters of the word − as it is now), floored at 0; 0 on rows in no pair."""
        out = np.zeros(len(rows), dtype=np.float32)
        p = rows.pairs
        if p is None or not len(p) or self.lm is None:
            return out
        chunk, char = sites.chunk[p.a], sites.char[p.a]
        now = [np.array([lm_ids[c][i + j] for c, i in zip(chunk.tolist(), char.tolist())], dtype=np.int32)
               for j in (0, 1)]  # the two characters as the LM sees them now: both texts scored in one LM call
        both = self._window_logprob(np.concatenate([chunk, chunk]), np.concatenate([char, char]), 2, lm_ids,
                                    [np.concatenate([self.lm_vid[p.x], now[0]]),
                                     np.concatenate([self.lm_vid[p.y], now[1]])])
        gain = both[: len(chunk)] - both[len(chunk) :]
        V = len(self.vocab)
        keys = rows.site * V + rows.vid
        order = np.argsort(keys, kind="stable")
        sorted_keys = keys[order]
        for s, v in ((p.a, p.x), (p.a + 1, p.y)):
            pos = np.minimum(np.searchsorted(sorted_keys, s * V + v), len(keys) - 1)
            found = sorted_keys[pos] == s * V + v
            np.maximum.at(out, order[pos[found]], gain[found].astype(np.float32))
        return out

    def word_pairs(self, sites: Sites) -> WordPairs:
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
        """Frequent two-character dictionary words of proposable characters by (fuzzy key, fuzzy key); built
        on first use."""
        if self._pair_index is None:
            index: dict[tuple[str, str], list[tuple[int, int]]] = {}
            words = self._dictionary()
            V = len(self.vocab)
            frequent = words.keys[2][words.counts[2] >= PAIR_MIN_FREQ]
            x_ids, y_ids = frequent // V, frequent % V
            both = self.proposable[x_ids] & self.proposable[y_ids]
            for x, y in zip(x_ids[both].tolist(), y_ids[both].tolist()):
                for key in product(self._fuzzy_keys(self.vocab[x]), self._fuzzy_keys(self.vocab[y])):
                    index.setdefault(key, []).append((x, y))
            self._pair_index = index
        return self._pair_index


def _vocab_lm_ids(vocab: Sequence[str], lm) -> np.ndarray:
    """Vocab id -> the LM's id of the character (multi-character tokens map to the LM's unknown)."""
    singles = [t if len(t) == 1 else "\x00" for t in vocab]
    return lm.encode("".join(singles)).astype(np.int32)
