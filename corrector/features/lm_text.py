"""The character LM over a batch's chunks (``LMText``): their LM ids, edits written into them, windows scored; what
the LM features read (``lm.LMGain``, ``lm.PairGain``) and the decoder's rounds write."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from corrector.evidence.char_lm import BOS, EOS, PAD


class LMText:
    """The character LM over a batch's chunks: their LM ids, edits written into them, windows scored."""

    def __init__(self, lm, vocab: Sequence[str]):
        self.lm = lm
        self.vid = _vocab_lm_ids(vocab, lm)  # vocab id -> the LM's id

    def encode(self, texts: Sequence[str]) -> list[np.ndarray]:
        return [self.lm.encode(t) for t in texts]

    def write(self, lm_ids: list[np.ndarray], chunk: np.ndarray, char: np.ndarray, vid: np.ndarray) -> None:
        """Each ``vid`` written at its (chunk, char) of ``lm_ids`` (in place; each edited chunk's array copied)."""
        for c, i, v in zip(chunk.tolist(), char.tolist(), vid.tolist()):
            lm_ids[c] = lm_ids[c].copy()
            lm_ids[c][i] = self.vid[v]

    def window_logprob(self, chunk: np.ndarray, char: np.ndarray, span: int, lm_ids: list[np.ndarray],
                       new: list[np.ndarray]) -> np.ndarray:
        """Per query: the log-probability of the LM windows that contain any of the ``span`` characters from
        ``char`` on in its chunk (as ``lm_ids`` has it), with ``new[j]`` (LM ids) written at ``char + j``."""
        lm = self.lm
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


def _vocab_lm_ids(vocab: Sequence[str], lm) -> np.ndarray:
    """Vocab id -> the LM's id of the character (multi-character tokens map to the LM's unknown)."""
    singles = [t if len(t) == 1 else "\x00" for t in vocab]
    return lm.encode("".join(singles)).astype(np.int32)
