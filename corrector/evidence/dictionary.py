"""jieba's dictionary as the decoder reads it, and a jieba tokenizer whose cache is private.

The ``word``, ``word4`` and ``pair`` features (corrector/features/) look up jieba's words of two to four
characters. Reading jieba's dictionary takes about a second (a prefix dictionary of half a million entries), so a
bundle carries the words the features need as vocabulary-id keys with their counts: ``dictionary/words.npz``, read in
milliseconds (:func:`write_word_table`; ``python -m corrector.evidence.dictionary BUNDLE`` adds it to a bundle). A
bundle without it reads jieba at first use: the same table from the same dictionary.

jieba caches its prefix dictionary with ``marshal`` under one fixed name in the system's temporary directory, where
another user of the machine could plant a file. :func:`tokenizer` caches in this user's private cache directory
(corrector/runtime/user_cache.py), or in a private temporary directory removed at once when there is none.
"""

from __future__ import annotations

import argparse
import logging
import math
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from corrector.bundle import WORDS
from corrector.evidence.kept_forms import CharIds, word_key
from corrector.runtime.user_cache import private_dir
from corrector.types import CorrectorError

LENGTHS = (2, 3, 4)  # the word lengths the features look up (a table written before 4: none of four)

_lock = threading.Lock()
_tokenizer: Any = None


def tokenizer() -> Any:
    """A ``jieba.Tokenizer`` over jieba's default dictionary, initialised (never jieba's shared ``jieba.dt``, whose
    cache is the one under a fixed name in ``/tmp``)."""
    global _tokenizer
    with _lock:
        if _tokenizer is None:
            import jieba

            jieba.setLogLevel(logging.WARNING)  # no "Building prefix dict" chatter on stderr
            tok = jieba.Tokenizer()
            cache = private_dir("jieba")
            if cache is not None:
                tok.tmp_dir = str(cache)
                tok.initialize()
            else:
                with tempfile.TemporaryDirectory() as tmp:  # mode 0700, a name nobody can guess; gone after
                    tok.tmp_dir = tmp
                    tok.initialize()
            _tokenizer = tok
        return _tokenizer


def segment_around(text: str, i: int, window: int = 6) -> tuple[str, str, str, int]:
    """The word before the one holding ``i``, that word, the word after ('' at the text's ends) and where that word
    starts, as jieba (its dictionary, no HMM) segments the ``window`` characters either side of ``i``."""
    start = max(0, i - window)
    words = tokenizer().lcut(text[start:i + window + 1], HMM=False)
    pos = start
    for k, w in enumerate(words):
        if pos <= i < pos + len(w):
            return (words[k - 1] if k > 0 else "", w, words[k + 1] if k + 1 < len(words) else "", pos)
        pos += len(w)
    raise AssertionError("unreachable: the window holds i")


@dataclass(frozen=True)
class WordTable:
    """jieba's words of two, three and four characters that the vocabulary spells, as sorted keys
    (``kept_forms.word_key`` over vocab ids) and their jieba counts (all positive)."""

    keys: Mapping[int, np.ndarray]  # word length -> int64 keys, sorted
    counts: Mapping[int, np.ndarray]  # word length -> int64 counts, aligned with keys

    @classmethod
    def from_counts(cls, counts: Mapping[str, int], char_id: dict[str, int], V: int) -> WordTable:
        """The table of a ``word -> count`` mapping (words counted 0, such as jieba's prefixes, are left out)."""
        words = [(w, f) for w, f in counts.items() if f > 0 and len(w) in LENGTHS]
        ids = CharIds(char_id).columns([w for w, _ in words], max(LENGTHS))
        length = np.array([len(w) for w, _ in words], dtype=np.int64)
        count = np.array([f for _, f in words], dtype=np.int64)
        keys, out = {}, {}
        for n in LENGTHS:
            ok = (length == n) & (ids[:, :n] >= 0).all(axis=1)
            k = word_key([ids[ok, j] for j in range(n)], V)
            order = np.argsort(k, kind="stable")  # distinct words of the vocabulary have distinct keys
            keys[n], out[n] = k[order].astype(np.int64), count[ok][order]
        return cls(keys, out)

    @classmethod
    def from_jieba(cls, char_id: dict[str, int], V: int) -> WordTable:
        return cls.from_counts(tokenizer().FREQ, char_id, V)

    def log_counts(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """(keys, log(1 + count) as float32) of the words of ``n`` characters."""
        unique, inverse = np.unique(self.counts[n], return_inverse=True)
        logs = np.array([math.log1p(int(c)) for c in unique.tolist()], dtype=np.float64)
        return self.keys[n], logs[inverse.reshape(-1)].astype(np.float32)

    def save(self, path: Path, vocab_sha256: str) -> None:
        import jieba

        path.parent.mkdir(parents=True, exist_ok=True)
        arrays = {f"{what}{n}": getattr(self, what)[n] for what in ("keys", "counts") for n in LENGTHS}
        with open(path, "wb") as f:
            np.savez_compressed(f, vocab_sha256=np.array(vocab_sha256),
                                source=np.array(f"jieba {jieba.__version__} default dictionary"), **arrays)

    @classmethod
    def load(cls, path: Path, vocab_sha256: str) -> WordTable:
        """The table ``save`` wrote for the vocabulary with this sha256 (CorrectorError for another one)."""
        try:
            with np.load(path, allow_pickle=False) as z:
                written_for = str(z["vocab_sha256"])
                none = np.zeros(0, dtype=np.int64)
                keys = {n: z[f"keys{n}"] if f"keys{n}" in z.files else none for n in LENGTHS}
                counts = {n: z[f"counts{n}"] if f"counts{n}" in z.files else none for n in LENGTHS}
        except (OSError, KeyError, ValueError) as e:
            raise CorrectorError(f"bad model bundle: cannot read {path}: {e}") from None
        if written_for != vocab_sha256:
            raise CorrectorError(f"bad model bundle: {path} was written for another vocabulary "
                                 f"(sha256 {written_for[:12]}…, the bundle's is {vocab_sha256[:12]}…)")
        return cls(keys, counts)


def write_word_table(root: Path, vocab_path: Path, vocab_sha256: str) -> Path:
    """Write ``root/dictionary/words.npz`` from jieba's dictionary for the vocabulary at ``vocab_path`` (whose sha256
    the manifest records); returns its path. A bundle's writer calls it before it lists the bundle's files."""
    from corrector.text.tokenize import read_vocab_list

    vocab = read_vocab_list(vocab_path)
    char_id = {t: i for i, t in enumerate(vocab) if len(t) == 1}
    path = root / WORDS
    WordTable.from_jieba(char_id, len(vocab)).save(path, vocab_sha256)
    return path


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m corrector.evidence.dictionary",
                                 description=f"Write {WORDS} (jieba's words as the decoder reads them) into a bundle.")
    ap.add_argument("bundle", type=Path, help="model bundle directory")
    args = ap.parse_args(argv)
    from corrector.bundle import Bundle

    b = Bundle.load(args.bundle)
    print(write_word_table(b.path, b.vocab_path, b.manifest.vocab_sha256))  # noqa: T201


if __name__ == "__main__":
    main()
