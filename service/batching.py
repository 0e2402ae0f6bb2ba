"""Running ``correct_batch`` off the event loop, fairly: no request can hold the model for long.

Every request is a list of texts; a text is cut into pieces that change no decision
(``service/splitting.py``) and put back together afterwards. The scheduler hands the model *units* of work
that each take about the same time, ``max_batch_chars / rate`` seconds (``rate``: the measured speed in
cost characters per second), and hold at most ``max_batch_size`` pieces:

* a request's first piece is sized by the expected speed of its settings (``cost_factor``: dearer settings,
  fewer characters), a quarter of a unit for a request that needs several; after each of its units the
  speed measured on its own text sizes the next pieces, so a text that is dear to correct (rare characters)
  gets smaller pieces instead of longer units;
* a small text is never cut to fill the rest of a unit; a long text is cut at the budget of the moment.

The policy, for any mix of requests:

* A request that has not had a unit yet is *fresh*; fresh requests are served first come, first served,
  and ``MicroBatcher`` gathers fresh requests with equal options into one unit (waiting up to
  ``max_wait_ms`` for company).
* A request that has had a unit and has pieces left is *being served*; those take turns, one unit each,
  round-robin.
* Fresh requests go first, but never twice in a row while a request being served waits: a fresh request
  waits for at most one unit of the requests being served, and the requests being served get at least
  every other unit however many new requests keep arriving.

So a small request (one unit) sent while any legal request runs waits for the unit in progress, at most
one unit of the long requests, and the fresh requests ahead of it that could not share its unit. A request
whose caller has gone (timed out, disconnected) gets no further units: work that is cancelled is never
started. ``service/cost.py`` decides beforehand whether a request can finish within its timeout; after each
unit, a request that the measured speed of its own text shows cannot finish in time is ended at once
(``TooSlow``) instead of running into its timeout.

``DirectRunner`` never mixes requests (each unit holds one request's pieces). Requests with different
decoding settings are never mixed in one call.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import logging
import math
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from corrector import Correction, CorrectorError, Edit

from .cost import Admission, admit, cost_factor
from .schemas import CorrectOptions
from .splitting import Cutter, Piece, pieces

log = logging.getLogger(__name__)

BatchObserver = Callable[[int], None]  # called with the number of texts of every model call
PROBE = 0.25  # a long request's first piece, in units: its text may be far dearer than the expected speed


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


class Refused(Exception):
    """A request refused before any work: it cannot finish within its timeout at the measured rate, alone
    (``busy`` False: too costly for this server) or beside the work already admitted (``busy`` True)."""

    def __init__(self, admission: Admission, cost: float, timeout: float, rate: float, share: float):
        self.admission, self.cost, self.timeout, self.rate, self.share = admission, cost, timeout, rate, share
        self.busy = admission.alone_s <= timeout
        super().__init__(self.message())

    def message(self) -> str:
        budget = self.timeout * self.share
        need = f"{self.cost:,.0f} cost characters (characters x the settings' cost factor)"
        if self.busy:
            return (f"the service is busy: this request needs {need}, and beside the work already admitted it "
                    f"could not finish within the {self.timeout:g} s timeout; retry later")
        return (f"this request needs {need}, about {self.cost / self.rate:.1f} s of model time at the measured "
                f"{self.rate:,.0f} per second; the budget is {budget:g} s ({self.share:g} of the {self.timeout:g} s "
                f"timeout), that is {self.rate * budget:,.0f} cost characters")


class TooSlow(Exception):
    """An admitted request whose own text corrects so slowly that the rest cannot finish in time: ended after
    a unit instead of running into its timeout."""

    def __init__(self, speed: float, left: int, seconds_left: float, timeout: float):
        super().__init__(
            f"this text corrects slowly: at the speed measured on it, about {speed:,.0f} characters per second, "
            f"the remaining {left:,} characters need about {left / speed:.1f} s, more than the {max(0.0, seconds_left):.1f} s "
            f"left of the {timeout:g} s timeout; send less text at once")


@dataclass(frozen=True)
class Plan:
    """A request's texts, cut with the budget of one unit at the expected speed, and their cost in cost
    characters (what the model reads, context included, times the settings' cost factor). The scheduler cuts
    the same way until it measures the speed of the text itself."""

    texts: list[str]
    produced: list[tuple[int, Piece]]  # (index of the text, piece), in order
    factor: float
    cost: float

    def piece_texts(self) -> list[str]:
        return [self.texts[t][p.lo : p.hi] for t, p in self.produced]


@dataclass(eq=False)
class _Request:
    cutters: list[Cutter]
    options: CorrectOptions
    future: asyncio.Future[list[Correction]]
    since: float  # loop time when it was queued
    deadline: float  # loop time by which it must be answered (inf: none)
    timeout: float
    expected: float  # model characters per second expected for its settings (rate / cost factor)
    inflation: float  # model characters per character of text (context of cuts without punctuation)
    speed: float = 0.0  # model characters per second: expected, then as measured on its own units
    produced: list[tuple[int, Piece]] = field(default_factory=list)
    results: list[Correction | None] = field(default_factory=list)
    finished: int = 0
    many_pieces: bool = False  # its plan has more than one piece
    text: int = 0  # the cutter in use
    left: int = 0  # characters not handed out yet

    def __post_init__(self) -> None:
        self.speed = self.expected
        self.left = sum(c.left for c in self.cutters)

    @property
    def remaining(self) -> bool:
        while self.text < len(self.cutters) and self.cutters[self.text].done:
            self.text += 1
        return self.text < len(self.cutters)

    def rest_size(self) -> int:
        """What the model would read for the rest of the current text, in one piece."""
        return self.cutters[self.text].rest_size() if self.remaining else 0

    def take(self, budget: int) -> int:
        """The next piece of at most ``budget`` model characters (at least one chunk); its index."""
        assert self.remaining
        piece = self.cutters[self.text].take(budget)
        self.produced.append((self.text, piece))
        self.results.append(None)
        self.left -= piece.end - piece.start
        return len(self.produced) - 1

    def piece_text(self, i: int) -> str:
        t, p = self.produced[i]
        return self.cutters[t].text[p.lo : p.hi]

    def seconds_left(self) -> float:
        """Model time for what is not handed out yet, at its speed."""
        return self.left * self.inflation / self.speed


@dataclass
class _Unit:
    options: CorrectOptions
    parts: list[tuple[_Request, int]] = field(default_factory=list)  # (request, index of the piece)
    seconds: float = 0.0  # expected model time

    def texts(self) -> list[str]:
        return [r.piece_text(i) for r, i in self.parts]


class Runner:
    """Corrections in worker threads, scheduled in bounded units (see the module docstring).

    ``start``/``stop`` bracket its life inside the app's lifespan. ``rate`` (cost characters per second)
    sizes units in time, adapts them to the measured speed of each text, and enables admission: a request
    given a timeout that it cannot meet is refused before any work. Without it, units are sized in
    characters only.
    """

    gather = True  # units may hold pieces of several fresh requests

    def __init__(self, corrector: SupportsCorrectBatch, *, max_batch_size: int = 32, max_batch_chars: int = 1000,
                 max_wait_ms: float = 5.0, max_concurrent: int = 1, on_batch: BatchObserver | None = None,
                 rate: float | None = None, share: float = 0.5):
        self.corrector = corrector
        self.max_batch_size = max_batch_size
        self.max_batch_chars = max_batch_chars
        self.max_wait = max_wait_ms / 1000.0 if self.gather else 0.0
        self.max_concurrent = max_concurrent
        self.on_batch = on_batch
        self.rate = rate
        self.share = share
        self._executor: ThreadPoolExecutor | None = None
        self._closing = False
        self._fresh: deque[_Request] = deque()  # no unit yet, first come first served
        self._served: deque[_Request] = deque()  # had a unit, pieces left: round-robin
        self._owed = False  # the last unit went to fresh requests while a request being served waited
        self._admitted: list[_Request] = []  # every request not answered yet (admission looks at their work)
        self._wakeup = asyncio.Event()
        self._slots = asyncio.Semaphore(max_concurrent)
        self._collector: asyncio.Task[None] | None = None
        self._running: set[asyncio.Task[None]] = set()

    @property
    def unit_seconds(self) -> float:
        """How long a unit should take (in characters per 1/s when there is no rate)."""
        return self.max_batch_chars / (self.rate or 1.0)

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
        for r in (*self._fresh, *self._served):
            if not r.future.done():
                r.future.set_exception(ServiceClosing("the service is shutting down"))
        self._fresh.clear()
        self._served.clear()
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)  # a call still running finishes on its own
            self._executor = None

    def plan(self, texts: list[str], options: CorrectOptions) -> Plan:
        """Cut ``texts`` with one unit's budget at the expected speed and price them; nothing runs."""
        factor = cost_factor(options.as_kwargs(), getattr(self.corrector, "config", None))
        budget = max(1, int(self.max_batch_chars / factor))
        window, protect = self._window(), self._protected(options)
        produced = [(t, p) for t, text in enumerate(texts) for p in pieces(text, budget, window, protect)]
        return Plan(texts, produced, factor, sum(p.size for _, p in produced) * factor)

    def admission(self, plan: Plan, timeout: float) -> Admission:
        """Whether ``plan`` can finish within ``timeout`` seconds beside the work admitted (always yes
        without a rate)."""
        if self.rate is None:
            return Admission(True, 0.0)
        now = asyncio.get_running_loop().time()
        others = [(r.seconds_left(), r.deadline - now) for r in self._admitted if not r.future.done()]
        return admit(plan.cost / self.rate, timeout, others, self.share)

    async def correct(self, texts: list[str], options: CorrectOptions, timeout: float | None = None) -> list[Correction]:
        """Corrections for ``texts`` in order. With ``timeout`` (seconds) and a rate, a request that could
        not finish in time raises ``Refused`` before any work, or ``TooSlow`` after a unit that shows it.
        Cancelling the caller drops the units not yet started."""
        if self._closing or self._collector is None:
            raise ServiceClosing("the service is shutting down")
        if not texts:
            return []
        plan = self.plan(texts, options)
        if timeout is not None and self.rate is not None:
            verdict = self.admission(plan, timeout)
            if not verdict.ok:
                raise Refused(verdict, plan.cost, timeout, self.rate, self.share)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[list[Correction]] = loop.create_future()
        now = loop.time()
        window, protect = self._window(), self._protected(options)
        chars = sum(map(len, texts))
        expected = (self.rate or 1.0) / plan.factor
        request = _Request([Cutter(t, window, protect) for t in texts], options, future, now,
                           now + timeout if timeout else math.inf, timeout or math.inf, expected,
                           max(1.0, plan.cost / plan.factor / chars) if chars else 1.0,
                           many_pieces=len(plan.produced) > 1)
        self._fresh.append(request)
        self._admitted.append(request)
        self._wakeup.set()
        try:
            results = await future  # a cancelled caller cancels the future; the scheduler then skips it
        finally:
            self._admitted.remove(request)
        return stitch(texts, request.produced, results)

    def _window(self) -> int | None:
        """The model's window in characters (the corrector cuts chunks of max_tokens - 2); None: never cut."""
        max_tokens = getattr(self.corrector, "max_tokens", None)
        return max_tokens - 2 if isinstance(max_tokens, int) and max_tokens > 2 else None

    def _protected(self, options: CorrectOptions) -> tuple[str, ...]:
        config = getattr(self.corrector, "config", None)
        return (*options.as_kwargs().get("protect", ()), *getattr(config, "protect", ()))

    # ---- inside the event loop -------------------------------------------------------------------

    def _live(self) -> bool:
        """Drop requests whose caller is gone or that have nothing left to hand out; is any left?"""
        for queue in (self._fresh, self._served):
            if any(r.future.done() or not r.remaining for r in queue):
                kept = [r for r in queue if not r.future.done() and r.remaining]
                queue.clear()
                queue.extend(kept)
        return bool(self._fresh or self._served)

    def _fresh_next(self) -> bool:
        return bool(self._fresh) and (not self._served or not self._owed)

    async def _collect(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self._slots.acquire()  # while every slot is busy, requests pile up in the queues
            try:
                while not self._live():
                    self._wakeup.clear()
                    await self._wakeup.wait()
                # a fresh request waits at most max_wait for company, counting time spent behind a busy slot
                if self.max_wait > 0 and self._fresh_next():
                    deadline = min(r.since for r in self._fresh) + self.max_wait
                    while len(self._fresh) < self.max_batch_size and (remaining := deadline - loop.time()) > 0:
                        self._wakeup.clear()
                        try:
                            await asyncio.wait_for(self._wakeup.wait(), remaining)
                        except asyncio.TimeoutError:
                            break
                        self._live()
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
        """The next unit (see the policy in the module docstring)."""
        if not self._live():
            return None
        if self._fresh_next():
            leader = self._fresh[0]
            company = [r for r in self._fresh if r is not leader and r.options == leader.options] if self.gather else []
            members = [leader, *company]
            self._owed = bool(self._served)
        else:
            leader = self._served.popleft()
            members = [leader]
            self._owed = False
        unit = self._fill(leader.options, members)
        for r in {id(r): r for r, _ in unit.parts}.values():
            if r in self._fresh:
                self._fresh.remove(r)
            if r.remaining and r not in self._served:
                self._served.append(r)
        return unit

    def _fill(self, options: CorrectOptions, members: list[_Request]) -> _Unit:
        """Round-robin over ``members``, one piece each in turn, while the unit has time left: its first
        piece as large as one unit allows, then only whole rests of texts that fit."""
        unit = _Unit(options)
        added = True
        while added and len(unit.parts) < self.max_batch_size:
            added = False
            for r in members:
                if not r.remaining or len(unit.parts) >= self.max_batch_size:
                    continue
                if not unit.parts:
                    probe = PROBE if r.many_pieces and not r.produced else 1.0  # a long request's speed is unknown
                    i = r.take(max(1, int(self.unit_seconds * r.speed * probe)))
                else:
                    rest = r.rest_size()
                    if unit.seconds + rest / r.speed > self.unit_seconds:
                        continue
                    i = r.take(rest)
                unit.parts.append((r, i))
                unit.seconds += r.produced[i][1].size / r.speed
                added = True
        return unit

    async def _run(self, unit: _Unit) -> None:
        try:
            parts = [(r, i) for r, i in unit.parts if not r.future.done()]  # a caller may have left meanwhile
            if not parts:
                return
            unit.parts = parts
            try:
                results, seconds = await self._in_thread(unit.texts(), unit.options)
            except Exception as e:  # every caller of this call gets the error
                for r, _ in parts:
                    if not r.future.done():
                        r.future.set_exception(e)
                return
            members = {id(r): r for r, _ in parts}.values()
            if self.rate is not None and unit.seconds > 0:
                slower = seconds / unit.seconds  # the unit's time over what was expected
                for r in members:
                    r.speed = min(r.expected, r.speed / max(slower, 1e-3))
            for (r, i), result in zip(parts, results):
                r.results[i] = result
                r.finished += 1
            now = asyncio.get_running_loop().time()
            for r in members:
                if r.future.done():
                    continue
                if not r.remaining and r.finished == len(r.produced):
                    r.future.set_result([c for c in r.results if c is not None])
                elif self.rate is not None and r.seconds_left() > r.deadline - now:
                    r.future.set_exception(TooSlow(r.speed / r.inflation, r.left, r.deadline - now, r.timeout))
        finally:
            self._slots.release()
            self._wakeup.set()

    async def _in_thread(self, texts: list[str], options: CorrectOptions) -> tuple[list[Correction], float]:
        if self._executor is None:
            raise ServiceClosing("the service is shutting down")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._call, texts, options)

    def _call(self, texts: list[str], options: CorrectOptions) -> tuple[list[Correction], float]:
        """Runs in a worker thread: the corrections and the seconds they took."""
        if self.on_batch is not None:
            self.on_batch(len(texts))
        start = time.perf_counter()
        results = correct_with_settings(self.corrector, texts, options.as_kwargs())
        return results, time.perf_counter() - start


def stitch(texts: list[str], produced: list[tuple[int, Piece]], results: list[Correction]) -> list[Correction]:
    """One Correction per text from the corrections of its pieces (in order): each piece's core kept, edit
    positions shifted back."""
    parts: list[list[tuple[Piece, Correction]]] = [[] for _ in texts]
    for (t, piece), c in zip(produced, results):
        parts[t].append((piece, c))
    out: list[Correction] = []
    for text, pieces_ in zip(texts, parts):
        if len(pieces_) == 1 and pieces_[0][0] == Piece(0, len(text), 0, len(text)):
            out.append(pieces_[0][1])
            continue
        target: list[str] = []
        edits: list[Edit] = []
        for p, c in pieces_:
            target.append(c.target[p.start - p.lo : p.end - p.lo])
            edits += [replace(e, position=e.position + p.lo) for e in c.edits if p.start <= e.position + p.lo < p.end]
        out.append(Correction(text, "".join(target), edits))
    return out


class MicroBatcher(Runner):
    """Gathers concurrent requests with equal options into shared model calls."""

    gather = True


class DirectRunner(Runner):
    """Each model call holds texts of one request only (micro-batching off); still split and interleaved."""

    gather = False
