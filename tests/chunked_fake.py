"""A base for the service tests' fake correctors: the corrector's work units without a model.

``prepare`` cuts each text into the chunks ``Corrector.prepare`` would make (``sentence_chunk_spans`` with a window
of ``max_tokens - 2``; a whole text when ``max_tokens`` is None) and returns a real ``corrector.stages.Prepared``,
so the service assembles the answer as it does for the real corrector. ``correct_chunks`` hands the chunks' texts to
the subclass's ``correct_batch`` and keeps each one's edits: a fake written as "what does this text become" is a
chunk-level model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from corrector import Correction, CorrectorError, Edit
from corrector.stages import Chunk, Prepared
from corrector.text.chars import sentence_chunk_spans
from corrector.text.tokenize import Encoded


class FakeRuntime:
    provider, precision, provider_reason = "fake", "fake", ""


class ChunkedFake:
    name, version = "fake", "0"
    max_tokens: int | None = None
    config: Any = None
    networks = FakeRuntime()

    def correct_batch(self, texts: Sequence[str], **settings: Any) -> list[Correction]:
        raise NotImplementedError

    def prepare(self, texts: Sequence[str], **settings: Any) -> Prepared:
        if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
            raise CorrectorError("texts must be a list of strings")
        chunks = []
        for i, text in enumerate(texts):
            window = self.max_tokens - 2 if self.max_tokens else None
            spans = sentence_chunk_spans(text, window) if window else [(0, len(text))] if text else []
            chunks += [Chunk(i, s, text[s:e], Encoded([], []), {}) for s, e in spans]
        return Prepared(tuple(texts), settings, tuple(chunks), ())  # type: ignore[arg-type]  # the raw settings

    def correct_chunks(self, chunks: Sequence[Chunk], settings: Any) -> list[tuple[Edit, ...]]:
        if not chunks:
            return []
        return [tuple(c.edits) for c in self.correct_batch([ch.text for ch in chunks], **settings)]
