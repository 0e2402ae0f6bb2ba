"""What both engines share: how a Corrector is described to a worker, and a shard -> corrected rows.

Both engines correct a shard with :func:`correct_shard`: the same texts in the same ``correct_batch``
calls, so their output is identical to the byte whatever runs it (the int8 CPU graphs quantise each
call's activations as a whole, so results would otherwise shift slightly with batch composition).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from itertools import islice
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar

from corrector.batch.inputs import ReadOptions, Record, Shard, read_shard

if TYPE_CHECKING:
    from corrector.bundle import Precision
    from corrector.corrector import Corrector
    from corrector.runtime.sessions import Device

T = TypeVar("T")


class Result(TypedDict):
    """A record after correction; ``target`` and ``edits`` (the CLI's --json edits, as JSON) are "" for errors."""

    shard: int
    line: int
    id: str
    text: str
    error: str
    target: str
    edits: str


RESULT_KEYS = ("shard", "line", "id", "text", "error", "target", "edits")


@dataclass(frozen=True)
class ModelSpec:
    """Everything a worker needs to build its own Corrector: a bundle path and settings, never weights."""

    model: str | None  # bundle directory; None: the default bundle
    device: Device = "auto"
    precision: Precision = "auto"
    threads: int = 0  # ONNX Runtime threads per session; 0: its default
    settings: dict[str, Any] = field(default_factory=dict)
    lm: str | None = None  # another character LM than the bundle's

    def load(self) -> Corrector:
        from corrector.corrector import Corrector

        return Corrector.load(self.model, device=self.device, precision=self.precision, threads=self.threads,
                              lm=self.lm, **self.settings)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def correct_shard(fixer: Corrector, shard: Shard, opts: ReadOptions, batch_size: int) -> Iterator[Result]:
    """The shard's rows in input order, corrected ``batch_size`` texts at a time from the shard's start."""
    for records in batched(read_shard(shard, opts), batch_size):
        yield from correct_records(fixer, records)


def correct_records(fixer: Corrector, records: list[Record]) -> list[Result]:
    """One ``correct_batch`` call for the good records; bad ones pass through with their error."""
    good = [r for r in records if not r["error"]]
    fixed = iter(fixer.correct_batch([r["text"] for r in good]))
    out: list[Result] = []
    for r in records:
        if r["error"]:
            out.append(Result(**r, target="", edits=""))
        else:
            c = next(fixed)
            edits = json.dumps(c.to_dict()["edits"], ensure_ascii=False)
            out.append(Result(**r, target=c.target, edits=edits))
    return out


def batched(items: Iterable[T], size: int) -> Iterator[list[T]]:
    it = iter(items)
    while batch := list(islice(it, size)):
        yield batch
