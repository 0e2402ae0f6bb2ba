"""The micro-batcher with a fake corrector: gathering, routing, option groups, limits, errors, shutdown."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterable, Sequence

import pytest

from corrector import Correction, CorrectorError, Edit
from service.batching import DirectRunner, MicroBatcher, Runner, ServiceClosing
from service.schemas import CorrectOptions


class FakeCorrector:
    """Upper-cases ASCII; records every call. ``delay`` seconds per call; texts 'boom' raise."""

    name = "fake"
    version = "0"

    def __init__(self, delay: float = 0.0):
        self.delay = delay
        self.calls: list[tuple[list[str], CorrectOptions]] = []
        self.lock = threading.Lock()

    def correct_batch(self, texts: Sequence[str], *, threshold: float | None = None, max_edits: int | None = None,
                      protect: Iterable[str] | None = None) -> list[Correction]:
        with self.lock:
            self.calls.append((list(texts), CorrectOptions(threshold, max_edits, tuple(protect or ()))))
        if self.delay:
            time.sleep(self.delay)
        if "boom" in texts:
            raise CorrectorError("boom")
        out = []
        for t in texts:
            edits = [Edit(i, c, c.upper(), 1.0, "other") for i, c in enumerate(t) if c != c.upper()]
            out.append(Correction(t, t.upper(), edits))
        return out


async def run_all(runner: Runner, requests: list[tuple[list[str], CorrectOptions]]) -> list[list[Correction]]:
    await runner.start()
    try:
        return await asyncio.gather(*(runner.correct(texts, opts) for texts, opts in requests))
    finally:
        await runner.stop()


PLAIN = CorrectOptions()


def test_concurrent_requests_share_one_call_and_get_their_own_results():
    fake = FakeCorrector()
    sizes: list[int] = []
    batcher = MicroBatcher(fake, max_batch_size=64, max_wait_ms=200, on_batch=sizes.append)
    requests = [([f"a{i}"], PLAIN) for i in range(10)] + [(["x", "y", "z"], PLAIN)]
    results = asyncio.run(run_all(batcher, requests))
    assert [[c.target for c in r] for r in results] == [[f"A{i}"] for i in range(10)] + [["X", "Y", "Z"]]
    assert len(fake.calls) == 1 and sizes == [13]


def test_requests_with_different_options_are_never_mixed():
    fake = FakeCorrector()
    a, b = CorrectOptions(threshold=0.5), CorrectOptions(threshold=0.5, protect=("张三",))
    requests = [([f"t{i}"], a if i % 2 else b) for i in range(8)]
    results = asyncio.run(run_all(MicroBatcher(fake, max_batch_size=64, max_wait_ms=200), requests))
    assert [r[0].source for r in results] == [f"t{i}" for i in range(8)]
    assert sorted(len(texts) for texts, _ in fake.calls) == [4, 4]
    for texts, opts in fake.calls:
        expected = a if int(texts[0][1]) % 2 else b
        assert opts == expected and all((int(t[1]) % 2 == 1) == (expected == a) for t in texts)


def test_max_batch_size_bounds_every_call_but_a_big_request_goes_alone():
    fake = FakeCorrector()
    requests = [([f"s{i}"], PLAIN) for i in range(10)] + [([f"b{i}" for i in range(7)], PLAIN)]
    results = asyncio.run(run_all(MicroBatcher(fake, max_batch_size=4, max_wait_ms=100), requests))
    assert [len(r) for r in results] == [1] * 10 + [7]
    sizes = [len(texts) for texts, _ in fake.calls]
    assert sum(sizes) == 17 and all(s <= 4 for s in sizes if s != 7) and 7 in sizes


def test_an_error_reaches_only_the_callers_of_that_call():
    fake = FakeCorrector()
    bad = CorrectOptions(max_edits=1)

    async def go() -> list[object]:
        batcher = MicroBatcher(fake, max_batch_size=64, max_wait_ms=100)
        await batcher.start()
        try:
            return await asyncio.gather(batcher.correct(["boom"], bad), batcher.correct(["ok"], bad),
                                        batcher.correct(["fine"], PLAIN), return_exceptions=True)
        finally:
            await batcher.stop()

    boom, ok, fine = asyncio.run(go())
    assert isinstance(boom, CorrectorError) and isinstance(ok, CorrectorError)  # same call, same options
    assert isinstance(fine, list) and fine[0].target == "FINE"


def test_a_cancelled_request_is_not_computed():
    fake = FakeCorrector(delay=0.2)

    async def go() -> None:
        batcher = MicroBatcher(fake, max_batch_size=1, max_wait_ms=0)
        await batcher.start()
        try:
            first = asyncio.create_task(batcher.correct(["first"], PLAIN))
            await asyncio.sleep(0.05)  # `first` is running; the next waits for the only slot
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(batcher.correct(["dropped"], PLAIN), 0.05)
            assert (await first)[0].target == "FIRST"
            assert (await batcher.correct(["after"], PLAIN))[0].target == "AFTER"
        finally:
            await batcher.stop()

    asyncio.run(go())
    assert [texts for texts, _ in fake.calls] == [["first"], ["after"]]


def test_stop_finishes_queued_work_then_refuses_new_requests():
    fake = FakeCorrector(delay=0.05)

    async def go() -> None:
        batcher = MicroBatcher(fake, max_batch_size=2, max_wait_ms=0)
        await batcher.start()
        tasks = [asyncio.create_task(batcher.correct([f"q{i}"], PLAIN)) for i in range(5)]
        await asyncio.sleep(0)
        await batcher.stop(timeout=5)
        assert [(await t)[0].target for t in tasks] == [f"Q{i}" for i in range(5)]
        with pytest.raises(ServiceClosing):
            await batcher.correct(["late"], PLAIN)

    asyncio.run(go())


def test_direct_runner_makes_one_call_per_request():
    fake = FakeCorrector()
    sizes: list[int] = []
    requests = [([f"a{i}", "b"], PLAIN) for i in range(5)] + [([], PLAIN)]
    results = asyncio.run(run_all(DirectRunner(fake, max_concurrent=2, on_batch=sizes.append), requests))
    assert [[c.target for c in r] for r in results] == [[f"A{i}", "B"] for i in range(5)] + [[]]
    assert sizes == [2] * 5 and len(fake.calls) == 5
