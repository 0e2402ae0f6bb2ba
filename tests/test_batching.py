"""The scheduler with a fake corrector: gathering, routing, option groups, bounded units, fairness,
cancellation, errors, shutdown; and with the real corrector, the library's answer whatever the units."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from typing import Any

import pytest
from chunked_fake import ChunkedFake

from corrector import Correction, CorrectorError, Edit
from service.batching import Runner, ServiceClosing
from service.schemas import CorrectOptions


class FakeCorrector(ChunkedFake):
    """Upper-cases ASCII; records every call. ``delay`` seconds per call plus ``per_char`` seconds per
    character (a model's cost); texts 'boom' raise."""

    name = "fake"
    version = "0"

    def __init__(self, delay: float = 0.0, per_char: float = 0.0):
        self.delay = delay
        self.per_char = per_char
        self.calls: list[tuple[list[str], CorrectOptions]] = []
        self.lock = threading.Lock()

    def correct_batch(self, texts: Sequence[str], **settings: Any) -> list[Correction]:
        with self.lock:
            self.calls.append((list(texts), CorrectOptions.of(**settings)))
        if self.delay or self.per_char:
            time.sleep(self.delay + self.per_char * sum(map(len, texts)))
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
    batcher = Runner(fake, max_batch_size=64, max_wait_ms=200, on_batch=lambda n, s: sizes.append(n))
    requests = [([f"a{i}"], PLAIN) for i in range(10)] + [(["x", "y", "z"], PLAIN)]
    results = asyncio.run(run_all(batcher, requests))
    assert [[c.target for c in r] for r in results] == [[f"A{i}"] for i in range(10)] + [["X", "Y", "Z"]]
    assert len(fake.calls) == 1 and sizes == [13]


def test_requests_with_different_options_are_never_mixed():
    fake = FakeCorrector()
    a, b = CorrectOptions.of(threshold=0.5), CorrectOptions.of(threshold=0.5, protect=["张三"])
    requests = [([f"t{i}"], a if i % 2 else b) for i in range(8)]
    results = asyncio.run(run_all(Runner(fake, max_batch_size=64, max_wait_ms=200), requests))
    assert [r[0].source for r in results] == [f"t{i}" for i in range(8)]
    assert sorted(len(texts) for texts, _ in fake.calls) == [4, 4]
    for texts, opts in fake.calls:
        expected = a if int(texts[0][1]) % 2 else b
        assert opts == expected and all((int(t[1]) % 2 == 1) == (expected == a) for t in texts)


def test_max_batch_size_bounds_every_call_and_a_big_request_is_split():
    fake = FakeCorrector()
    requests = [([f"s{i}"], PLAIN) for i in range(10)] + [([f"b{i}" for i in range(7)], PLAIN)]
    results = asyncio.run(run_all(Runner(fake, max_batch_size=4, max_wait_ms=100), requests))
    assert [[c.target for c in r] for r in results] == [[f"S{i}"] for i in range(10)] + [[f"B{i}" for i in range(7)]]
    sizes = [len(texts) for texts, _ in fake.calls]
    assert sum(sizes) == 17 and max(sizes) == 4


def test_max_batch_chars_bounds_every_call_but_a_longer_text_goes_alone():
    fake = FakeCorrector()
    texts = ["a" * 30, "b" * 30, "c" * 30, "d" * 100, "e" * 10]
    for runner in (Runner(fake, max_batch_chars=64, max_wait_ms=0), Runner(fake, gather=False, max_batch_chars=64)):
        fake.calls.clear()
        [result] = asyncio.run(run_all(runner, [(texts, PLAIN)]))
        assert [c.source for c in result] == texts  # in order, though computed in several calls
        # handed out in order; the first unit is a probe (a quarter of a unit: the speed of these texts is unknown)
        assert [t for t, _ in fake.calls] == [texts[:1], texts[1:3], texts[3:4], texts[4:]]


def test_an_error_reaches_only_the_callers_of_that_call():
    fake = FakeCorrector()
    bad = CorrectOptions.of(max_edits=1)

    async def go() -> list[object]:
        batcher = Runner(fake, max_batch_size=64, max_wait_ms=100)
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
        batcher = Runner(fake, max_batch_size=1, max_wait_ms=0)
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
        batcher = Runner(fake, max_batch_size=2, max_wait_ms=0)
        await batcher.start()
        tasks = [asyncio.create_task(batcher.correct([f"q{i}"], PLAIN)) for i in range(5)]
        await asyncio.sleep(0)
        await batcher.stop(timeout=5)
        assert [(await t)[0].target for t in tasks] == [f"Q{i}" for i in range(5)]
        with pytest.raises(ServiceClosing):
            await batcher.correct(["late"], PLAIN)

    asyncio.run(go())


def test_direct_runner_never_mixes_requests():
    fake = FakeCorrector()
    sizes: list[int] = []
    requests = [([f"a{i}", "b"], PLAIN) for i in range(5)] + [([], PLAIN)]
    results = asyncio.run(run_all(Runner(fake, gather=False, max_concurrent=2, on_batch=lambda n, s: sizes.append(n)), requests))
    assert [[c.target for c in r] for r in results] == [[f"A{i}", "B"] for i in range(5)] + [[]]
    assert sizes == [2] * 5 and len(fake.calls) == 5


def test_every_setting_reaches_the_corrector(forced_corrector, tiny_bundle):
    """Settings travel as keywords named after CorrectorConfig fields through prepare to every unit; the result
    is what a corrector loaded with those settings gives."""
    from conftest import FORCE_EDITS

    from corrector import Corrector

    texts = ["今天天汽很好，我们去公园散步吧", "他已经知道自己错了"]
    settings = {"use_lm": False, "top_k": 3, "shortlist": 2, "max_edits": 1, "protect": ("公园",)}
    [got] = asyncio.run(run_all(Runner(forced_corrector, max_batch_chars=10, max_wait_ms=0),
                                [(texts, CorrectOptions.of(**settings))]))
    want = Corrector.load(tiny_bundle, device="cpu", **{**FORCE_EDITS, **settings}).correct_batch(texts)
    assert [c.to_dict() for c in got] == [c.to_dict() for c in want]
    assert [c.to_dict() for c in got] != [c.to_dict() for c in forced_corrector.correct_batch(texts)]
    with pytest.raises(CorrectorError, match="top_k"):
        asyncio.run(run_all(Runner(forced_corrector), [(texts, CorrectOptions.of(top_k=-1))]))


def test_long_texts_run_in_units_without_changing_any_decision(forced_corrector):
    """A long text runs as units of <= max_batch_chars in separate calls; the answer is exactly correct_batch's
    (every decision about the whole text is made by prepare; the units are its chunks)."""
    sentences = ["今天天汽很好，我们去公园散步吧。", "他已经知道自己错了！", "中国人民银行在北京，上海的张三李四也来了；",
                 "hello 未来😀末日", "候车的侯爵拔草" * 30]  # the last: a 210-character run without punctuation
    text = "".join(sentences[i % len(sentences)] for i in range(120))
    calls: list[int] = []

    class Counting:
        name, version, config = "counting", "0", forced_corrector.config
        prepare, correct_batch, networks = forced_corrector.prepare, forced_corrector.correct_batch, \
            forced_corrector.networks

        def correct_chunks(self, chunks: Sequence[Any], settings: Any) -> Any:
            calls.append(sum(len(c.text) for c in chunks))
            return forced_corrector.correct_chunks(chunks, settings)

    for settings in ({}, {"protect": ("北京，上海", "李四"), "protect_dictionary_words": True, "max_edits": 1}):
        calls.clear()
        [[got]] = asyncio.run(run_all(Runner(Counting(), max_batch_chars=300, max_wait_ms=0),
                                    [([text], CorrectOptions.of(**settings))]))
        [want] = forced_corrector.correct_batch([text], **settings)
        assert len(calls) > 10 and sum(calls) == len(text)
        assert max(calls) <= 300
        assert got.to_dict() == want.to_dict() and got.edits


def test_a_mixed_script_text_gets_the_librarys_answer_whatever_shares_its_request(forced_corrector):
    """Before: the service cut a long text into pieces judged alone, so a simplified text with traditional
    sentences (or the reverse) got another answer than from the library, depending on where the cuts fell
    and what shared the request. Now the whole text is prepared once and only its chunks are scheduled."""
    simplified = "今天天汽很好，我们去公园散步吧。他已经知道自己错了。" * 12
    traditional = "今天天氣很好，我們去公園散步吧。他已經知道自己錯了。" * 12
    texts = [simplified + traditional, traditional + simplified, simplified + traditional[:20]]
    want = [c.to_dict() for c in forced_corrector.correct_batch(texts)]
    assert want != [c.to_dict() for c in forced_corrector.correct_batch([t[:200] for t in texts])]  # cuts would matter
    for runner in (Runner(forced_corrector, max_batch_chars=40, max_wait_ms=0),
                   Runner(forced_corrector, gather=False, max_batch_chars=150)):
        alone = asyncio.run(run_all(runner, [([t], PLAIN) for t in texts]))
        together = asyncio.run(run_all(runner, [(texts, PLAIN), (["他以经知道了。"] * 3, PLAIN)]))[0]
        assert [c.to_dict() for [c] in alone] == want
        assert [c.to_dict() for c in together] == want
