"""Running ``correct_batch`` off the event loop: one call per request, or dynamic micro-batches.

``MicroBatcher`` gathers concurrent requests until ``max_batch_size`` texts are waiting or the oldest has
waited ``max_wait_ms``, then runs them in a worker thread as one ``correct_batch`` call per distinct set of
options (requests with different threshold / max_edits / protect are never mixed), and hands each caller
its own slice of the results. ``DirectRunner`` is the same interface without the gathering.
"""

from __future__ import annotations

import asyncio
import logging
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol

from corrector import Correction

from .schemas import CorrectOptions

log = logging.getLogger(__name__)

BatchObserver = Callable[[int], None]  # called with the number of texts of every model call


class SupportsCorrectBatch(Protocol):
    """What the service needs from a ``corrector.Corrector`` (tests pass fakes)."""

    @property
    def name(self) -> str: ...

    @property
    def version(self) -> str: ...

    def correct_batch(self, texts: Sequence[str], *, threshold: float | None = None, max_edits: int | None = None,
                      protect: Iterable[str] | None = None) -> list[Correction]: ...


class ServiceClosing(Exception):
    """Raised to requests that arrive after shutdown began."""


class Runner(ABC):
    """Runs corrections in worker threads; ``start``/``stop`` bracket its life inside the app's lifespan."""

    def __init__(self, corrector: SupportsCorrectBatch, *, max_concurrent: int = 1,
                 on_batch: BatchObserver | None = None):
        self.corrector = corrector
        self.max_concurrent = max_concurrent
        self.on_batch = on_batch
        self._executor: ThreadPoolExecutor | None = None
        self._closing = False

    async def start(self) -> None:
        self._executor = ThreadPoolExecutor(self.max_concurrent, thread_name_prefix="csc-model")
        self._closing = False

    async def stop(self, timeout: float = 10.0) -> None:
        self._closing = True
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)  # a call still running finishes on its own
            self._executor = None

    @abstractmethod
    async def correct(self, texts: list[str], options: CorrectOptions) -> list[Correction]:
        """Corrections for ``texts`` in order. Cancelling the caller drops work that has not started."""

    def _call(self, texts: list[str], options: CorrectOptions) -> list[Correction]:
        """Runs in a worker thread."""
        if self.on_batch is not None:
            self.on_batch(len(texts))
        return self.corrector.correct_batch(texts, threshold=options.threshold, max_edits=options.max_edits,
                                            protect=options.protect)

    async def _in_thread(self, texts: list[str], options: CorrectOptions) -> list[Correction]:
        if self._executor is None:
            raise ServiceClosing("the service is shutting down")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._call, texts, options)


class DirectRunner(Runner):
    """One ``correct_batch`` call per request (micro-batching disabled)."""

    async def correct(self, texts: list[str], options: CorrectOptions) -> list[Correction]:
        if self._closing:
            raise ServiceClosing("the service is shutting down")
        if not texts:
            return []
        return await self._in_thread(texts, options)


@dataclass
class _Pending:
    texts: list[str]
    options: CorrectOptions
    future: asyncio.Future[list[Correction]]
    since: float  # loop time when it was queued


@dataclass
class _Window:
    items: list[_Pending] = field(default_factory=list)
    size: int = 0


class MicroBatcher(Runner):
    """Gathers concurrent requests into shared model calls; see the module docstring."""

    def __init__(self, corrector: SupportsCorrectBatch, *, max_batch_size: int = 32, max_wait_ms: float = 5.0,
                 max_concurrent: int = 1, on_batch: BatchObserver | None = None):
        super().__init__(corrector, max_concurrent=max_concurrent, on_batch=on_batch)
        self.max_batch_size = max_batch_size
        self.max_wait = max_wait_ms / 1000.0
        self._pending: deque[_Pending] = deque()
        self._queued_texts = 0
        self._wakeup = asyncio.Event()
        self._slots = asyncio.Semaphore(max_concurrent)
        self._collector: asyncio.Task[None] | None = None
        self._running: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        await super().start()
        self._wakeup = asyncio.Event()  # bound to the running loop
        self._slots = asyncio.Semaphore(self.max_concurrent)
        self._collector = asyncio.create_task(self._collect(), name="csc-batcher")

    async def stop(self, timeout: float = 10.0) -> None:
        """Refuse new work, finish what is queued or running (up to ``timeout`` s), then stop."""
        self._closing = True
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while (self._pending or self._running) and loop.time() < deadline:
            await asyncio.sleep(0.01)
        if self._collector is not None:
            self._collector.cancel()
            await asyncio.gather(self._collector, return_exceptions=True)
            self._collector = None
        for p in self._pending:
            if not p.future.done():
                p.future.set_exception(ServiceClosing("the service is shutting down"))
        self._pending.clear()
        await super().stop(timeout)

    async def correct(self, texts: list[str], options: CorrectOptions) -> list[Correction]:
        if self._closing or self._collector is None:
            raise ServiceClosing("the service is shutting down")
        if not texts:
            return []
        loop = asyncio.get_running_loop()
        future: asyncio.Future[list[Correction]] = loop.create_future()
        self._pending.append(_Pending(texts, options, future, loop.time()))
        self._queued_texts += len(texts)
        self._wakeup.set()
        return await future  # a cancelled caller cancels the future; the collector then skips it

    # ---- inside the event loop -------------------------------------------------------------------

    async def _collect(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self._slots.acquire()  # while every slot is busy, requests pile up in the queue
            try:
                while not self._pending:
                    self._wakeup.clear()
                    await self._wakeup.wait()
                # the oldest request waits at most max_wait in total, counting time spent behind a busy slot
                deadline = self._pending[0].since + self.max_wait
                while self._queued_texts < self.max_batch_size and (remaining := deadline - loop.time()) > 0:
                    self._wakeup.clear()
                    try:
                        await asyncio.wait_for(self._wakeup.wait(), remaining)
                    except asyncio.TimeoutError:
                        break
                window = self._take()
            except BaseException:
                self._slots.release()
                raise
            if not window.items:
                self._slots.release()
                continue
            task = asyncio.create_task(self._run(window.items))
            self._running.add(task)
            task.add_done_callback(self._running.discard)

    def _take(self) -> _Window:
        """Pop requests, oldest first, up to max_batch_size texts (a bigger request goes alone)."""
        w = _Window()
        while self._pending:
            head = self._pending[0]
            if w.items and w.size + len(head.texts) > self.max_batch_size:
                break
            self._pending.popleft()
            self._queued_texts -= len(head.texts)
            if head.future.done():  # its caller timed out or went away
                continue
            w.items.append(head)
            w.size += len(head.texts)
        return w

    async def _run(self, items: list[_Pending]) -> None:
        try:
            groups: dict[CorrectOptions, list[_Pending]] = {}
            for p in items:
                groups.setdefault(p.options, []).append(p)
            for options, group in groups.items():
                group = [p for p in group if not p.future.done()]
                if not group:
                    continue
                texts = [t for p in group for t in p.texts]
                try:
                    results = await self._in_thread(texts, options)
                except Exception as e:  # every caller of this call gets the error
                    for p in group:
                        if not p.future.done():
                            p.future.set_exception(e)
                    continue
                start = 0
                for p in group:
                    end = start + len(p.texts)
                    if not p.future.done():
                        p.future.set_result(results[start:end])
                    start = end
        finally:
            self._slots.release()
