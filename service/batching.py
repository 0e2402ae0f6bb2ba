"""Running ``correct_batch`` off the event loop, fairly: no request can hold the model for long.

Every request is a list of texts; a text longer than ``max_batch_chars`` is cut into pieces at places
that change no decision (``service/splitting.py``) and put back together afterwards. The scheduler hands
the model *units* of work: at most ``max_batch_size`` texts (pieces) and ``max_batch_chars`` characters (a
piece that could not be cut shorter goes alone), taken round-robin from the waiting requests, the
least-served request first. A maximal request therefore
runs as many small model calls, and a small request that arrives meanwhile waits for at most the unit
in progress, not for the whole big request. A request whose caller has gone (timed out, disconnected)
gets no further units: work that is cancelled is never started.

``MicroBatcher`` also gathers concurrent requests with equal options into shared units, waiting up to
``max_wait_ms`` for company; ``DirectRunner`` never mixes requests (each unit holds one request's texts).
Requests with different decoding settings are never mixed in one call.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from corrector import Correction, CorrectorError

from .schemas import CorrectOptions
from .splitting import piece_spans

log = logging.getLogger(__name__)

BatchObserver = Callable[[int], None]  # called with the number of texts of every model call


class SupportsCorrectBatch(Protocol):
    """What the service needs from a ``corrector.Corrector`` (tests pass fakes)."""

    @property
    def name(self) -> str: ...

    @property
    def version(self) -> str: ...

    # correct_batch(texts, **settings), settings named after CorrectorConfig fields (see correct_with_settings)
    @property
    def correct_batch(self) -> Callable[..., list[Correction]]: ...


def correct_with_settings(corrector: SupportsCorrectBatch, texts: list[str], settings: dict[str, Any]) -> list[Correction]:
    """``corrector.correct_batch(texts, **settings)``, settings named after CorrectorConfig fields.

    Adapter, to go once ``Corrector.correct_batch`` takes every setting: a ``correct_batch`` without
    ``**settings`` gets the ones it names, and the rest through a shallow copy of the corrector whose
    ``config`` has them (the networks and tables are shared, nothing is reloaded).
    """
    params = inspect.signature(corrector.correct_batch).parameters
    takes_all = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    rest = {} if takes_all else {k: v for k, v in settings.items() if k not in params}
    if not rest:
        return corrector.correct_batch(texts, **settings)
    config = getattr(corrector, "config", None)
    if config is None:
        raise CorrectorError(f"this corrector does not take the setting(s) {', '.join(sorted(rest))}")
    try:
        config = config.with_overrides(**rest)
    except (TypeError, ValueError) as e:
        raise CorrectorError(str(e)) from None
    variant = copy.copy(corrector)
    variant.config = config  # type: ignore[attr-defined]
    return variant.correct_batch(texts, **{k: v for k, v in settings.items() if k in params})


class ServiceClosing(Exception):
    """Raised to requests that arrive after shutdown began."""


@dataclass(eq=False)
class _Request:
    texts: list[str]
    options: CorrectOptions
    future: asyncio.Future[list[Correction]]
    since: float  # loop time when it was queued
    results: list[Correction | None] = field(default_factory=list)
    handed_out: int = 0  # texts given to units so far (in order)
    finished: int = 0
    served_chars: int = 0  # characters handed out: the least-served request goes first

    @property
    def remaining(self) -> int:
        return len(self.texts) - self.handed_out


@dataclass
class _Unit:
    options: CorrectOptions
    parts: list[tuple[_Request, int]] = field(default_factory=list)  # (request, index of the text)
    chars: int = 0

    def texts(self) -> list[str]:
        return [r.texts[i] for r, i in self.parts]


class Runner:
    """Corrections in worker threads, scheduled in bounded units (see the module docstring).

    ``start``/``stop`` bracket its life inside the app's lifespan.
    """

    gather = True  # units may hold texts of several requests

    def __init__(self, corrector: SupportsCorrectBatch, *, max_batch_size: int = 32, max_batch_chars: int = 1000,
                 max_wait_ms: float = 5.0, max_concurrent: int = 1, on_batch: BatchObserver | None = None):
        self.corrector = corrector
        self.max_batch_size = max_batch_size
        self.max_batch_chars = max_batch_chars
        self.max_wait = max_wait_ms / 1000.0 if self.gather else 0.0
        self.max_concurrent = max_concurrent
        self.on_batch = on_batch
        self._executor: ThreadPoolExecutor | None = None
        self._closing = False
        self._queue: list[_Request] = []  # requests with texts not yet handed out
        self._wakeup = asyncio.Event()
        self._slots = asyncio.Semaphore(max_concurrent)
        self._collector: asyncio.Task[None] | None = None
        self._running: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self._executor = ThreadPoolExecutor(self.max_concurrent, thread_name_prefix="csc-model")
        self._closing = False
        self._wakeup = asyncio.Event()  # bound to the running loop
        self._slots = asyncio.Semaphore(self.max_concurrent)
        self._collector = asyncio.create_task(self._collect(), name="csc-scheduler")

    async def stop(self, timeout: float = 10.0) -> None:
        """Refuse new work, finish what is queued or running (up to ``timeout`` s), then stop."""
        self._closing = True
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while (self._live() or self._running) and loop.time() < deadline:
            await asyncio.sleep(0.01)
        if self._collector is not None:
            self._collector.cancel()
            await asyncio.gather(self._collector, return_exceptions=True)
            self._collector = None
        for r in self._queue:
            if not r.future.done():
                r.future.set_exception(ServiceClosing("the service is shutting down"))
        self._queue.clear()
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)  # a call still running finishes on its own
            self._executor = None

    async def correct(self, texts: list[str], options: CorrectOptions) -> list[Correction]:
        """Corrections for ``texts`` in order. Cancelling the caller drops the units not yet started."""
        if self._closing or self._collector is None:
            raise ServiceClosing("the service is shutting down")
        if not texts:
            return []
        layout = [piece_spans(t, self.max_batch_chars, self._chunk_chars(), self._protected(options)) for t in texts]
        pieces = [t[s:e] for t, spans in zip(texts, layout) for s, e in spans]
        loop = asyncio.get_running_loop()
        future: asyncio.Future[list[Correction]] = loop.create_future()
        self._queue.append(_Request(pieces, options, future, loop.time(), [None] * len(pieces)))
        self._wakeup.set()
        results = await future  # a cancelled caller cancels the future; the scheduler then skips it
        return _stitch(texts, layout, results)

    def _chunk_chars(self) -> int | None:
        """The corrector's chunk size: pieces are cut at its chunk boundaries (None: never cut)."""
        max_tokens = getattr(self.corrector, "max_tokens", None)  # Corrector: chunks of max_tokens - 2 characters
        return max_tokens - 2 if isinstance(max_tokens, int) and max_tokens > 2 else None

    def _protected(self, options: CorrectOptions) -> tuple[str, ...]:
        config = getattr(self.corrector, "config", None)
        return (*options.as_kwargs().get("protect", ()), *getattr(config, "protect", ()))

    # ---- inside the event loop -------------------------------------------------------------------

    def _live(self) -> list[_Request]:
        """Drop requests whose caller is gone or that have nothing left to hand out."""
        self._queue = [r for r in self._queue if not r.future.done() and r.remaining]
        return self._queue

    async def _collect(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self._slots.acquire()  # while every slot is busy, requests pile up in the queue
            try:
                while not self._live():
                    self._wakeup.clear()
                    await self._wakeup.wait()
                # a fresh request waits at most max_wait for company, counting time spent behind a busy slot
                fresh = [r for r in self._queue if r.handed_out == 0]
                if fresh and self.max_wait > 0:
                    deadline = min(r.since for r in fresh) + self.max_wait
                    while sum(r.remaining for r in self._live()) < self.max_batch_size \
                            and (remaining := deadline - loop.time()) > 0:
                        self._wakeup.clear()
                        try:
                            await asyncio.wait_for(self._wakeup.wait(), remaining)
                        except asyncio.TimeoutError:
                            break
                unit = self._take()
            except BaseException:
                self._slots.release()
                raise
            if unit is None:
                self._slots.release()
                continue
            task = asyncio.create_task(self._run(unit))
            self._running.add(task)
            task.add_done_callback(self._running.discard)

    def _take(self) -> _Unit | None:
        """The next unit: the least-served request leads; round-robin over it and the fresh requests that
        share its options."""
        live = sorted(self._live(), key=lambda r: (r.served_chars, r.since))
        if not live:
            return None
        leader = live[0]
        unit = _Unit(leader.options)
        # company: requests with the same options that have not started yet (what micro-batching gathers);
        # a request already being served never rides along, so a fresh small request's unit stays small
        members = [leader] + [r for r in live[1:] if r.options == leader.options and not r.handed_out] \
            if self.gather else [leader]
        added = True
        while added and len(unit.parts) < self.max_batch_size:
            added = False
            for r in members:
                if not r.remaining or len(unit.parts) >= self.max_batch_size:
                    continue
                n = len(r.texts[r.handed_out])
                if unit.parts and unit.chars + n > self.max_batch_chars:
                    continue
                unit.parts.append((r, r.handed_out))
                unit.chars += n
                r.handed_out += 1
                r.served_chars += n
                added = True
        return unit

    async def _run(self, unit: _Unit) -> None:
        try:
            parts = [(r, i) for r, i in unit.parts if not r.future.done()]  # a caller may have left meanwhile
            if not parts:
                return
            unit.parts = parts
            try:
                results = await self._in_thread(unit.texts(), unit.options)
            except Exception as e:  # every caller of this call gets the error
                for r, _ in parts:
                    if not r.future.done():
                        r.future.set_exception(e)
                return
            for (r, i), result in zip(parts, results):
                r.results[i] = result
                r.finished += 1
                if r.finished == len(r.texts) and not r.future.done():
                    r.future.set_result([c for c in r.results if c is not None])
        finally:
            self._slots.release()
            self._wakeup.set()

    async def _in_thread(self, texts: list[str], options: CorrectOptions) -> list[Correction]:
        if self._executor is None:
            raise ServiceClosing("the service is shutting down")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._call, texts, options)

    def _call(self, texts: list[str], options: CorrectOptions) -> list[Correction]:
        """Runs in a worker thread."""
        if self.on_batch is not None:
            self.on_batch(len(texts))
        return correct_with_settings(self.corrector, texts, options.as_kwargs())


def _stitch(texts: list[str], layout: list[list[tuple[int, int]]], results: list[Correction]) -> list[Correction]:
    """One Correction per text from the corrections of its pieces (edit positions shifted back)."""
    out: list[Correction] = []
    k = 0
    for text, spans in zip(texts, layout):
        parts = results[k : k + len(spans)]
        k += len(spans)
        if len(parts) == 1:
            out.append(parts[0])
            continue
        edits = [replace(e, position=e.position + start) for (start, _), c in zip(spans, parts) for e in c.edits]
        out.append(Correction(text, "".join(c.target for c in parts), edits))
    return out


class MicroBatcher(Runner):
    """Gathers concurrent requests with equal options into shared model calls."""

    gather = True


class DirectRunner(Runner):
    """Each model call holds texts of one request only (micro-batching off); still split and interleaved."""

    gather = False
