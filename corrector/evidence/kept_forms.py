"""Word forms that real corrected text keeps: counts from the real training pairs, looked up per site.

``candidates/bigrams.npz`` counts each two-character sequence written correctly; ``candidates/words.npz``
counts each two- or three-character word kept as written and corrected (``training.evidence.candidates``). They give
the keep rows three features: ``seen`` (the rarer of a character's two bigrams with its neighbours, as
written), ``seen_max`` (the commoner) and ``kept_word`` (the best kept-to-changed ratio of the words
through it): a form the annotators keep (甚么, 报导, 部份 in Taiwan-style text) is evidence against an
edit that the corpus LM alone wants.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from corrector.evidence.lookup import lookup_sorted
from corrector.types import CorrectorError

BIGRAMS_NPZ = "bigrams.npz"  # optional: the bigrams written correctly in the real training pairs, with counts
WORDS_NPZ = "words.npz"  # optional: the words kept as written and the words changed in the real training pairs
WORD_WINDOWS = ((-1, 2), (0, 2), (-2, 3), (-1, 3), (0, 3))  # (offset of the first character, length) through a site


@dataclass
class PairCounts:
    """What the real training pairs write and keep, as ``training.evidence.candidates`` counted it."""

    # how often each two-character sequence was written correctly (>= 2 times)
    bigrams: dict[str, int] = field(default_factory=dict)
    # per two- or three-character word: (times kept as written, times changed)
    words: dict[str, tuple[int, int]] = field(default_factory=dict)

    @classmethod
    def load(cls, directory: str | Path) -> PairCounts:
        """``directory``'s bigrams.npz and words.npz (either may be missing: no counts of that kind)."""
        d = Path(directory)
        try:
            bigrams, words = {}, {}
            if (d / BIGRAMS_NPZ).is_file():
                b = np.load(d / BIGRAMS_NPZ, allow_pickle=False)
                bigrams = dict(zip(b["bigrams"].tolist(), b["count"].tolist()))
            if (d / WORDS_NPZ).is_file():
                w = np.load(d / WORDS_NPZ, allow_pickle=False)
                words = dict(zip(w["words"].tolist(), zip(w["kept"].tolist(), w["changed"].tolist())))
        except (OSError, KeyError, ValueError) as e:
            raise CorrectorError(f"cannot read the pair counts in {d}: {e}") from None
        return cls(bigrams, words)


class KeptForms:
    """The counts as sorted integer keys over vocab ids (a * V + b; three characters: (a * V + b) * V + c)."""

    def __init__(self, counts: PairCounts, char_id: dict[str, int] | CharIds, V: int):
        self.V = V
        ids = char_id if isinstance(char_id, CharIds) else CharIds(char_id)
        # the bigrams whose two characters are in the vocabulary, by key (distinct bigrams have distinct keys)
        pair = ids.columns(list(counts.bigrams), 2)
        ok = (pair >= 0).all(axis=1)
        keys = word_key([pair[ok, 0], pair[ok, 1]], V)
        order = np.argsort(keys, kind="stable")
        self.bigram_keys = keys[order]
        self.bigram_count = np.array(list(counts.bigrams.values()), dtype=np.float32).reshape(-1)[ok][order]
        self.word_keys: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        words = list(counts.words)
        word_counts = np.array(list(counts.words.values()), dtype=np.int64).reshape(-1, 2)
        length = np.char.str_len(np.array(words, dtype=str)) if words else np.zeros(0, np.int64)
        chars = ids.columns(words, 3)
        for n in (2, 3):
            ok = (length == n) & (chars[:, :n] >= 0).all(axis=1)
            keys = word_key([chars[ok, j] for j in range(n)], V)
            order = np.argsort(keys, kind="stable")
            kept, changed = word_counts[ok][order].T
            self.word_keys[n] = (keys[order], kept.astype(np.float32), changed.astype(np.float32))

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
        for n in sorted({n for _, n in WORD_WINDOWS}):  # the windows of one length in one lookup
            js = [j for j, (_, m) in enumerate(WORD_WINDOWS) if m == n]
            ids = [T[chunk[None, :], pos[None, :] + np.array([WORD_WINDOWS[j][0] + k for j in js])[:, None]]
                   for k in range(n)]  # n x (windows, sites)
            valid = np.all([x >= 0 for x in ids], axis=0)
            key = np.where(valid, word_key(ids, self.V), -1)
            keys, k_count, c_count = self.word_keys[n]
            kept[:, js] = lookup_sorted(keys, k_count, key).T
            changed[:, js] = lookup_sorted(keys, c_count, key).T
        return kept, changed


class CharIds:
    """Characters to vocab ids, vectorised over arrays of strings (no Python loop over millions of them)."""

    def __init__(self, char_id: dict[str, int]):
        singles = {ord(c): i for c, i in char_id.items() if len(c) == 1 and c != "\x00"}
        self.lut = np.full(max(singles, default=0) + 2, -1, dtype=np.int64)  # code point -> id; the last: -1
        self.lut[list(singles)] = list(singles.values())

    def columns(self, strings, width: int) -> np.ndarray:
        """(len(strings), width) int64: the id of each string's first ``width`` characters, -1 for a character
        with no id and past the string's end (numpy strings cannot hold U+0000: it reads as the end)."""
        codes = _code_points(strings)[:, :width]
        ids = self._ids(codes)
        return np.pad(ids, ((0, 0), (0, width - ids.shape[1])), constant_values=-1) if ids.shape[1] < width else ids

    def __call__(self, strings) -> np.ndarray:
        """The id of each one-character string, -1 for any other string or a character with no id."""
        codes = _code_points(strings)
        if codes.shape[1] == 0:
            return np.full(len(codes), -1, dtype=np.int64)
        ids = self._ids(codes[:, 0])
        return ids if codes.shape[1] == 1 else np.where(codes[:, 1] == 0, ids, -1)

    def _ids(self, codes: np.ndarray) -> np.ndarray:
        return self.lut[np.minimum(codes, len(self.lut) - 1)]  # 0 (no character) and unknown ones: -1


def _code_points(strings) -> np.ndarray:
    """(len(strings), longest) uint32 code points of each string, 0 past its end."""
    arr = np.ascontiguousarray(np.asarray(strings, dtype=str).reshape(-1) if len(strings) else np.zeros(0, "<U1"))
    return arr.view(np.uint32).reshape(len(arr), arr.dtype.itemsize // 4)


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
