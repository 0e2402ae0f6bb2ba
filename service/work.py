"""What the service asks of the corrector: its work units (``Corrector.prepare``, ``correct_chunks``, ``Prepared.assemble``),
its name and where its networks run. ``corrector.Corrector`` is one; the tests pass fakes (tests/chunked_fake.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from corrector import Correction, Edit


class WorkChunk(Protocol):
    """A chunk of a prepared text (``corrector.stages.Chunk``): what the model reads."""

    @property
    def text(self) -> str: ...


class PreparedWork(Protocol):
    """What ``prepare`` returns (``corrector.stages.Prepared``)."""

    @property
    def settings(self) -> Any: ...

    @property
    def chunks(self) -> Sequence[WorkChunk]: ...

    def assemble(self, edits: Sequence[Sequence[Edit]]) -> list[Correction]: ...


class RuntimeInfo(Protocol):
    """Where the networks run (``corrector.runtime.sessions.Networks``): for /ready, /metrics and the start-up line."""

    provider: str
    precision: str
    provider_reason: str


class SupportsWorkUnits(Protocol):
    """What the service needs from a ``corrector.Corrector`` (tests pass fakes)."""

    @property
    def networks(self) -> RuntimeInfo: ...

    @property
    def name(self) -> str: ...

    @property
    def version(self) -> str: ...

    @property
    def config(self) -> Any: ...  # the decoding defaults (``CorrectorConfig``): what a request's settings cost

    def correct_batch(self, texts: Sequence[str], **settings: Any) -> list[Correction]: ...

    def prepare(self, texts: Sequence[str], **settings: Any) -> PreparedWork: ...

    def correct_chunks(self, chunks: Sequence[Any], settings: Any) -> Sequence[Sequence[Edit]]: ...
