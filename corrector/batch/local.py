"""``--engine local``: one process streams the shards through one Corrector, a batch of lines at a time."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from corrector.batch.engines import Result, correct_shard
from corrector.batch.inputs import ReadOptions, Shard

if TYPE_CHECKING:
    from corrector.corrector import Corrector


def run_local(fixer: Corrector, shards: list[Shard], opts: ReadOptions, batch_size: int) -> Iterator[Result]:
    """Corrected rows in input order. Memory holds one batch of lines, whatever the input's size."""
    for shard in shards:
        yield from correct_shard(fixer, shard, opts, batch_size)
