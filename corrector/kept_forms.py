"""Word forms that real corrected text keeps: counts from the real training pairs, looked up per site.

``candidates/bigrams.npz`` counts each two-character sequence written correctly; ``candidates/words.npz``
counts each two- or three-character word kept as written and corrected (``training.candidates``). They give
the keep rows three features: ``seen`` (the rarer of a character's two bigrams with its neighbours, as
written), ``seen_max`` (the commoner) and ``kept_word`` (the best kept-to-changed ratio of the words
through it): a form the annotators keep (甚么, 报导, 部份 in Taiwan-style text) is evidence against an
edit that the corpus LM alone wants.
"""

from __future__ import annotations

import numpy as np

from .candidates import CandidateTable
from .lookup import lookup_sorted

WORD_WINDOWS = ((-1, 2), (0, 2), (-2, 3), (-1, 3), (0, 3))  # (offset of the first character, length) through a site


class KeptForms:
    """The counts as sorted integer keys over vocab ids (a * V + b; three characters: (a * V + b) * V + c)."""

    def __init__(self, candidates: CandidateTable, char_id: dict[str, int], V: int):
        self.V = V
        seen = sorted((char_id[b[0]] * V + char_id[b[1]], n) for b, n in candidates.bigrams.items()
                      if b[0] in char_id and b[1] in char_id)
        self.bigram_keys = np.array([k for k, _ in seen], dtype=np.int64)
        self.bigram_count = np.array([n for _, n in seen], dtype=np.float32)
        self.word_keys: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        for n in (2, 3):
            entries = sorted((word_key([char_id[ch] for ch in w], V), k, c) for w, (k, c) in candidates.words.items()
                             if len(w) == n and all(ch in char_id for ch in w))
            arr = np.array(entries, dtype=np.int64).reshape(-1, 3)
            self.word_keys[n] = (arr[:, 0], arr[:, 1].astype(np.float32), arr[:, 2].astype(np.float32))

    @property
    def has_bigrams(self) -> bool:
        return len(self.bigram_keys) > 0

    @property
    def has_words(self) -> bool:
        return any(len(k[0]) for k in self.word_keys.values())

    def bigram_counts(self, T: np.ndarray, chunk: np.ndarray, char: np.ndarray,
                      src_id: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per site: how often its bigram with the left and with the right neighbour, as written, was written
        correctly (-1 where there is no such neighbour). ``T``: the chunks' vocab ids, two columns of -1 each side."""
        V, pos = self.V, char + 2
        left, right = T[chunk, pos - 1], T[chunk, pos + 1]
        out = []
        for key, ok in ((left * V + src_id, left >= 0), (src_id * V + right, right >= 0)):
            out.append(np.where(ok, lookup_sorted(self.bigram_keys, self.bigram_count, np.where(ok, key, -1)), -1.0))
        return out[0], out[1]

    def word_counts(self, T: np.ndarray, chunk: np.ndarray, char: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(kept, changed), each (sites, 5): the counts of the words through each site as written, in the order
        of :data:`WORD_WINDOWS` (0 and 0 where the window leaves the chunk or was not counted)."""
        pos = char + 2
        kept = np.zeros((len(char), len(WORD_WINDOWS)), np.float32)
        changed = np.zeros_like(kept)
        for j, (a, n) in enumerate(WORD_WINDOWS):
            ids = [T[chunk, pos + a + k] for k in range(n)]
            valid = np.all([x >= 0 for x in ids], axis=0)
            key = np.where(valid, word_key(ids, self.V), -1)
            keys, k_count, c_count = self.word_keys[n]
            kept[:, j] = lookup_sorted(keys, k_count, key)
            changed[:, j] = lookup_sorted(keys, c_count, key)
        return kept, changed


def word_key(ids, V: int):
    """The integer key of a word from its characters' vocab ids (ints or arrays)."""
    key = ids[0]
    for x in ids[1:]:
        key = key * V + x
    return key


def seen_value(left: np.ndarray, right: np.ndarray, pick=np.minimum) -> np.ndarray:
    """The ``seen`` feature from (left, right) bigram counts, -1 meaning no neighbour: log(1 + the smaller)
    (``pick=np.maximum``: the larger, ``seen_max``)."""
    both = np.where(left < 0, right, np.where(right < 0, left, pick(left, right)))
    return np.log1p(np.maximum(both, 0.0)).astype(np.float32)


def kept_word_value(kept: np.ndarray, changed: np.ndarray) -> np.ndarray:
    """The ``kept_word`` feature from per-window (kept, changed) counts: the best log((kept + 1) / (changed + 1))
    over the windows counted at all; 0 for a site with none."""
    counted = (kept + changed) > 0
    value = np.where(counted, np.log((kept + 1.0) / (changed + 1.0)), -np.inf)
    best = value.max(axis=1)
    return np.where(np.isfinite(best), best, 0.0).astype(np.float32)
