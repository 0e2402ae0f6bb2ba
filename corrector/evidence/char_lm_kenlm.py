"""A user's own KenLM character model (``.arpa`` / ``.klm``, as pycorrector users have) behind the
``CharLM`` interface. Needs the optional ``kenlm`` module (no wheels, needs a compiler), never a base
dependency; scoring is one kenlm call per query, so it is much slower than the built-in format.

Tokens of the model are single characters (space-separated in its training text), plus <s>, </s>, <unk>;
whitespace characters as <U+XXXX> (how ``--to-arpa`` writes them).
Ids here: 0 = <unk>, 1 = <s>, 2 = </s>, code point + 3 for every character; ``PAD`` as in ``CharLM``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from corrector.evidence.char_lm_vocab import BOS, EOS, N_SPECIALS, PAD, UNK, token_name
from corrector.types import CorrectorError

LN10 = math.log(10.0)


class KenLMCharLM:
    def __init__(self, path: Path, model: Any, kenlm: Any):
        self.path = path
        self._model = model
        self._kenlm = kenlm
        self.order: int = int(model.order)
        self.vocab_size = 0x110000 + N_SPECIALS
        self.smoothing = "kenlm"
        self.missing_bow = np.float32(0.0)
        self.meta: dict[str, Any] = {"format": "kenlm", "order": self.order, "path": str(path)}

    @classmethod
    def load(cls, path: str | Path) -> KenLMCharLM:
        p = Path(path)
        try:
            import kenlm  # type: ignore[import-not-found]
        except ImportError as e:
            raise CorrectorError(
                f"{p} is a KenLM model, and reading it needs the optional 'kenlm' module "
                "(pip install https://github.com/kpu/kenlm/archive/master.zip; it compiles C++). "
                "Or convert it once: python -m training.evidence.char_lm --from-arpa MODEL.arpa --out DIR"
            ) from e
        if not p.is_file():
            raise CorrectorError(f"no KenLM model at {p}")
        try:
            model = kenlm.Model(str(p))
        except Exception as e:  # kenlm raises OSError / RuntimeError subclasses with the reason
            raise CorrectorError(f"kenlm could not read {p}: {e}") from e
        return cls(p, model, kenlm)

    def encode(self, text: str) -> npt.NDArray[np.int32]:
        return (np.frombuffer(text.encode("utf-32-le"), dtype="<u4").astype(np.int64) + N_SPECIALS).astype(np.int32)

    def encode_sentence(self, text: str) -> npt.NDArray[np.int32]:
        return np.concatenate(([BOS], self.encode(text), [EOS])).astype(np.int32)

    def windows(self, ids: npt.ArrayLike) -> npt.NDArray[np.int32]:
        a = np.asarray(ids, dtype=np.int32)
        padded = np.concatenate((np.full(self.order - 1, PAD, dtype=np.int32), a))
        return np.ascontiguousarray(np.lib.stride_tricks.sliding_window_view(padded, self.order)[1:])

    def token_logprobs(self, ids_with_bos_eos: npt.ArrayLike) -> npt.NDArray[np.float32]:
        return self.logprob(self.windows(ids_with_bos_eos))

    def sentence_logprob(self, text: str) -> float:
        return float(self.token_logprobs(self.encode_sentence(text)).sum(dtype=np.float64))

    @staticmethod
    def _token(i: int) -> str:
        if i == BOS:
            return "<s>"
        if i == EOS:
            return "</s>"
        if i == UNK:
            return "<unk>"
        return token_name(i - N_SPECIALS)

    def logprob(self, ngrams: npt.ArrayLike) -> npt.NDArray[np.float32]:
        ng = np.asarray(ngrams)
        if ng.ndim != 2 or ng.shape[1] != self.order:
            raise ValueError(f"expected an (N, {self.order}) array of ids, got shape {ng.shape}")
        out = np.empty(ng.shape[0], dtype=np.float32)
        m = self._model
        for r, row in enumerate(ng.tolist()):
            real = [x for x in row if x != PAD]
            if not real or len(real) != len(row) - row.count(PAD) or row[-1] == PAD:
                raise ValueError("PAD may only stand left of the real ids, and the predicted id cannot be PAD")
            hist = real[:-1]
            state = self._kenlm.State()
            if hist and hist[0] == BOS:
                m.BeginSentenceWrite(state)
                hist = hist[1:]
            else:
                m.NullContextWrite(state)
            for t in hist:
                nxt = self._kenlm.State()
                m.BaseScore(state, self._token(t), nxt)
                state = nxt
            out[r] = m.BaseScore(state, self._token(real[-1]), self._kenlm.State()) * LN10
        return out

    def size_bytes(self) -> int:
        return self.path.stat().st_size
