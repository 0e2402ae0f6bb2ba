"""What the features are computed over: the sites of a batch, their choices (rows) and word pairs."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from corrector.runtime.sessions import LogProbs


@dataclass
class Sites:
    """Every editable position of a batch of chunks, flattened."""

    chunk: np.ndarray  # (n,) index of the chunk
    char: np.ndarray  # (n,) character position in the chunk
    src: list[str]  # (n) the character there
    src_id: np.ndarray  # (n,) its vocab id
    rtd: np.ndarray  # (n,) the discriminator's P(replaced)
    logprobs: LogProbs  # (n, V) the generator's log-probabilities there
    # the editable characters that are no site, the discriminator's P(replaced) there below ``rtd_floor``:
    # (chunk, character position, P(replaced)) each
    unsuspected: tuple[tuple[int, int, float], ...] = ()

    def __len__(self) -> int:
        return len(self.src)

    def take(self, keep: np.ndarray) -> Sites:
        """The sites where ``keep`` is true."""
        return Sites(self.chunk[keep], self.char[keep], [s for s, k in zip(self.src, keep) if k],
                     self.src_id[keep], self.rtd[keep], self.logprobs.take(keep), self.unsuspected)


@dataclass
class WordPairs:
    """Adjacent sites a (then a + 1) and a dictionary word (x, y) to write over them, both characters changed."""

    a: np.ndarray  # (p,) index into Sites of the first character
    x: np.ndarray  # (p,) vocab id written there
    y: np.ndarray  # (p,) vocab id written at the next site (a + 1)

    def __len__(self) -> int:
        return len(self.a)


@dataclass
class Rows:
    """The choices of every site: one row each, the ``keep`` row first within its site."""

    site: np.ndarray  # (m,) index into Sites
    vid: np.ndarray  # (m,) vocab id of the choice
    X: np.ndarray  # (m, len(FEATURES)) float32
    pairs: WordPairs | None = None  # the word pairs whose candidates are among the rows (``pair`` feature)
    static: np.ndarray | None = None  # (m,) each row's candidate-table entry, -1 where none (the counts read it)

    def __len__(self) -> int:
        return len(self.site)
