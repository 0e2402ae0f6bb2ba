"""Running the corrector's work off the event loop, fairly: no request can hold the model for long.

Every request is a list of texts. ``Corrector.prepare`` makes every decision about a whole text (its script, the
words protected in it) and cuts it into chunks; after that each chunk is decided alone, whatever shares its call
(``corrector/stages.py``). So the chunks are the work units: the scheduler hands the model *units* of chunks, from
one request or several, that each take about the same time, ``max_batch_chars / rate`` seconds (``rate``: the
measured speed in cost characters per second), and hold at most ``max_batch_size`` chunks; the request's answer is
``prepared.assemble`` of its chunks' edits, exactly what ``correct_batch`` gives for the same texts. Preparing and
assembling run on their own threads (a large ``protect`` list is matched there), except for a request of at most
``INLINE_CHARS`` characters, which takes less time than the hop.

* a request's first unit is sized by the expected speed of its settings (``cost_factor``: dearer settings,
  fewer characters), a quarter of a unit for a request that needs several; after each of its units the
  speed measured on its own text sizes the next ones, so a text that is dear to correct (rare characters)
  gets smaller units instead of longer ones;
* a unit is filled with whole chunks of the request it serves, and with fresh requests that fit whole (a small
  request is never cut to fill a unit).

The policy, for any mix of requests (``service/scheduling.py`` keeps the queues and applies it):

* A request that has not had a unit yet is *fresh*; fresh requests are served first come, first served,
  and a ``Runner`` that gathers (the default) puts fresh requests with equal options into one unit (waiting up
  to ``max_wait_ms`` for company).
* A request that has had a unit and has chunks left is *being served*; those take turns, one unit each,
  round-robin.
* Fresh requests go first, but never twice in a row while a request being served waits: a fresh request
  waits for at most one unit of the requests being served, and the requests being served get at least
  every other unit however many new requests keep arriving.

So a small request (one unit) sent while any legal request runs waits for the unit in progress, at most
one unit of the long requests, and the fresh requests ahead of it that could not share its unit. A request
whose caller has gone (timed out, disconnected) gets no further units: work that is cancelled is never
started. ``service/cost.py`` decides beforehand whether a request can finish within its timeout; after each
unit every admitted request is judged again the same way (``cost.overdue``), with the speed measured over its own
units (never on its probe alone) and the model's measured share of wall time, in the order admitted: one that
cannot finish in time beside those admitted before it is ended at once (``TooSlow``) instead of running into its
timeout.

With ``gather=False`` (``--no-batching``) requests are never mixed (each unit holds one request's chunks).
Requests with different decoding settings are never mixed in one call.
"""

from __future__ import annotations

import asyncio
import bisect
import itertools
import logging
import math
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from corrector import Correction, Edit
from corrector.text.chars import is_cjk

from .admitted import Admitted, Plan, Refused, ServiceClosing, TooSlow, Unit
from .cost import Admission, AdmissionSpeed, admit, cost_factor, model_chars, overdue
from .scheduling import Schedule
from .schemas import CorrectOptions
from .work import SupportsWorkUnits

__all__ = ["Plan", "Refused", "Runner", "ServiceClosing", "TooSlow"]

log = logging.getLogger(__name__)

BatchObserver = Callable[[int, float], None]  # called with the chunks and the seconds of every model call
PREPARE_THREADS = 2  # a small request is never prepared behind one long text
BUSY_WINDOW_S = 10.0  # the model's utilisation is measured over at most this much recent time
INLINE_CHARS = 500  # a request this small is prepared and assembled on the event loop (a few milliseconds at most)


class Runner:
    """Corrections in worker threads, scheduled in bounded units (see the module docstring).

    ``start``/``stop`` bracket its life inside the app's lifespan. ``rate`` (cost characters per second)
    sizes units in time, adapts them to the measured speed of each text, and enables admission: a request
    given a timeout that it cannot meet is refused before any work. Without it, units are sized in
    characters only.
    """

    def __init__(self, corrector: SupportsWorkUnits, *, gather: bool = True, max_batch_size: int = 32,
                 max_batch_chars: int = 1000, max_wait_ms: float = 5.0, max_concurrent: int = 1,
                 on_batch: BatchObserver | None = None, rate: float | None = None, share: float = 0.5,
                 adapt_rate: bool = False):
        self.corrector = corrector
        self.gather = gather  # units may hold pieces of several fresh requests (False: micro-batching off)
        self.max_batch_size = max_batch_size
        self.max_batch_chars = max_batch_chars
        self.max_wait = max_wait_ms / 1000.0 if self.gather else 0.0
        self.max_concurrent = max_concurrent
        self.on_batch = on_batch
        self.rate = rate
        self.share = share
        self.adapt_rate = adapt_rate and rate is not None
        self._speed = AdmissionSpeed(rate) if rate else None
        self._executor: ThreadPoolExecutor | None = None
        self._preparer: ThreadPoolExecutor | None = None
        self._reserved: dict[int, tuple[float, float]] = {}  # id of an admitted plan being prepared -> (model
        #                                                      seconds, deadline)
        self._closing = False
        self._queue = Schedule(self.gather, max_batch_size)  # the requests waiting for units, and the policy
        self._admitted: list[Admitted] = []  # every request not answered yet, in the order admitted
        self._admissions = itertools.count()  # admission order, before preparation (which may end in another order)
        self._busy: deque[tuple[float, float]] = deque()  # (loop time it ended, seconds) of recent model calls
        self._wakeup = asyncio.Event()
        self._slots = asyncio.Semaphore(max_concurrent)
        self._collector: asyncio.Task[None] | None = None
        self._running: set[asyncio.Task[None]] = set()

    @property
    def preparing(self) -> int:
        """Admitted requests whose texts are being prepared (not queued yet)."""
        return len(self._reserved)

    @property
    def queued(self) -> int:
        """Requests waiting for a unit or between their units."""
        return self._queue.waiting

    @property
    def unit_seconds(self) -> float:
        """How long a unit should take (in characters per 1/s when there is no rate)."""
        return self.max_batch_chars / (self.rate or 1.0)

    async def start(self) -> None:
        self._executor = ThreadPoolExecutor(self.max_concurrent, thread_name_prefix="csc-model")
        self._preparer = ThreadPoolExecutor(PREPARE_THREADS, thread_name_prefix="csc-prepare")
        self._closing = False
        self._wakeup = asyncio.Event()  # bound to the running loop
        self._slots = asyncio.Semaphore(self.max_concurrent)
        self._collector = asyncio.create_task(self._collect(), name="csc-scheduler")

    async def stop(self, timeout: float = 10.0) -> None:
        """Refuse new work, finish what is queued or running (up to ``timeout`` s), then stop."""
        self._closing = True
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while (self._queue.live() or self._running or self._reserved) and loop.time() < deadline:
            await asyncio.sleep(0.01)
        if self._collector is not None:
            self._collector.cancel()
            await asyncio.gather(self._collector, return_exceptions=True)
            self._collector = None
        for r in self._queue.clear():
            if not r.future.done():
                r.future.set_exception(ServiceClosing("the service is shutting down"))
        for pool in (self._executor, self._preparer):
            if pool is not None:
                pool.shutdown(wait=False, cancel_futures=True)  # a call still running finishes on its own
        self._executor = self._preparer = None

    def plan(self, texts: list[str], options: CorrectOptions) -> Plan:
        """The size and cost of ``texts`` at ``options``; nothing runs."""
        return Plan(sum(map(len, texts)), cost_factor(options.as_kwargs(), self.corrector.config),
                    sum(map(model_chars, texts)))

    def admission(self, plan: Plan, timeout: float) -> Admission:
        """Whether ``plan`` can finish within ``timeout`` seconds beside the work admitted (always yes
        without a rate)."""
        if self.rate is None:
            return Admission(True, 0.0)
        now = asyncio.get_running_loop().time()
        others = [(r.seconds_left(), r.deadline - now) for r in self._admitted if not r.future.done()]
        others += [(seconds, deadline - now) for seconds, deadline in self._reserved.values()]
        return admit(plan.cost / self.rate, timeout, others, self.share)

    async def correct(self, texts: list[str], options: CorrectOptions, timeout: float | None = None) -> list[Correction]:
        """Corrections for ``texts`` in order: exactly ``correct_batch(texts, **options)``. With ``timeout``
        (seconds) and a rate, a request that could not finish in time raises ``Refused`` before any work, or
        ``TooSlow`` after a unit that shows it. Cancelling the caller drops the units not yet started."""
        if self._closing or self._collector is None or self._preparer is None:
            raise ServiceClosing("the service is shutting down")
        if not texts:
            return []
        plan = self.plan(texts, options)
        if timeout is not None and self.rate is not None:
            verdict = self.admission(plan, timeout)
            if not verdict.ok:
                raise Refused(verdict, plan.cost, timeout, self.rate, self.share)
        order = next(self._admissions)
        loop = asyncio.get_running_loop()
        now = loop.time()
        deadline = now + timeout if timeout else math.inf
        self._reserved[id(plan)] = (plan.cost / (self.rate or 1.0), deadline)
        try:  # a CorrectorError (a setting this model refuses) reaches the caller from here
            if plan.chars <= INLINE_CHARS:  # a thread hop costs more than preparing a sentence or two
                prepared = self.corrector.prepare(texts, **options.as_kwargs())
            else:
                prepared = await loop.run_in_executor(self._preparer,
                                                      lambda: self.corrector.prepare(texts, **options.as_kwargs()))
        finally:
            del self._reserved[id(plan)]
        if self._collector is None:  # stopped meanwhile
            raise ServiceClosing("the service is shutting down")
        future: asyncio.Future[list[Correction]] = loop.create_future()
        expected = (self.rate or 1.0) / plan.factor
        request = Admitted(prepared, options, future, now, deadline, timeout or math.inf, plan.factor, expected,
                           many_units=plan.chars > self.unit_seconds * expected, order=order)
        if not request.remaining:
            return prepared.assemble([])  # no chunk: empty texts
        self._queue.add(request)
        bisect.insort(self._admitted, request, key=lambda r: r.order)  # judged beside those admitted before it
        self._wakeup.set()
        try:
            await future  # a cancelled caller cancels the future; the scheduler then skips it
        finally:
            self._admitted.remove(request)
        edits = [e if e is not None else () for e in request.edits]
        if plan.chars <= INLINE_CHARS:
            return prepared.assemble(edits)
        return await loop.run_in_executor(self._preparer, prepared.assemble, edits)  # off the loop, as prepare

    # ---- inside the event loop -------------------------------------------------------------------

    async def _collect(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self._slots.acquire()  # while every slot is busy, requests pile up in the queues
            try:
                while not self._queue.live():
                    self._wakeup.clear()
                    await self._wakeup.wait()
                # a fresh request waits at most max_wait for company, counting time spent behind a busy slot
                if self.max_wait > 0 and self._queue.fresh_next():
                    deadline = self._queue.first_since() + self.max_wait
                    while self._queue.fresh < self.max_batch_size and (remaining := deadline - loop.time()) > 0:
                        self._wakeup.clear()
                        try:
                            await asyncio.wait_for(self._wakeup.wait(), remaining)
                        except asyncio.TimeoutError:
                            break
                        self._queue.live()
                unit = self._queue.take(self.unit_seconds)
            except BaseException:
                self._slots.release()
                raise
            if unit is None:
                self._slots.release()
                continue
            task = asyncio.create_task(self._run(unit))
            self._running.add(task)
            task.add_done_callback(self._running.discard)

    async def _run(self, unit: Unit) -> None:
        loop = asyncio.get_running_loop()
        try:
            live = [i for i, (r, _) in enumerate(unit.parts) if not r.future.done()]  # a caller may have left
            if not live:
                return
            unit.parts = [unit.parts[i] for i in live]
            unit.expected = [unit.expected[i] for i in live]
            members = list({id(r): r for r, _ in unit.parts}.values())
            began = loop.time()
            for r in members:
                r.started = min(r.started, began)
            try:
                edits, seconds = await self._in_thread(unit.chunks(), unit.parts[0][0].prepared.settings)
            except Exception as e:  # every caller of this call gets the error
                for r in members:
                    if not r.future.done():
                        r.future.set_exception(e)
                return
            ended = loop.time()
            self._busy.append((ended, seconds))
            while self._busy[0][0] < ended - BUSY_WINDOW_S:  # kept for BUSY_WINDOW_S, whether or not anything
                self._busy.popleft()  # is judged (small requests alone never are)
            self._observe_rate(unit, seconds)
            done = iter(edits)
            for (r, taken), expected in zip(unit.parts, unit.expected):
                for i in taken:
                    r.edits[i] = next(done)
                r.finished += len(taken)
                if self.rate is not None and unit.seconds > 0:  # its part of the unit's measured time
                    r.measured(sum(len(r.prepared.chunks[i].text) for i in taken), seconds * expected / unit.seconds)
            for r in members:
                if r.complete and not r.future.done():
                    r.future.set_result([])
            if self.rate is not None:
                self._end_overdue(loop.time())
        finally:
            self._slots.release()
            self._wakeup.set()

    def _utilisation(self, now: float) -> float:
        """The model's measured share of wall time since the oldest request now being served began (its busy
        seconds over that time, held between ``share``, what the scheduler guarantees, and ``max_concurrent``):
        the time between units, spent preparing, scheduling and assembling, is no model time."""
        since = max(min((r.started for r in self._admitted if not r.future.done()), default=now), now - BUSY_WINDOW_S)
        if now - since < self.unit_seconds:  # too short to say
            return float(self.max_concurrent)
        busy = sum(seconds for end, seconds in self._busy if end >= since)
        return min(max(busy / (now - since), self.share), float(self.max_concurrent))

    def _end_overdue(self, now: float) -> None:
        """Ends every admitted request that the units so far show cannot finish in time beside those admitted before
        it (``cost.overdue``, with each one's speed as measured over its own units and the model's measured
        utilisation): at once, while the work lost is small, instead of in a 504 at its timeout."""
        live = [r for r in self._admitted if not r.future.done()]
        if not any(r.judged for r in live):  # (small requests are answered by their first unit: never judged)
            return
        share = self._utilisation(now)
        for i in overdue([(r.seconds_left(), r.deadline - now, r.judged) for r in live], share):
            r = live[i]
            alone = (r.left + r.chars_done) / r.speed / share <= r.timeout  # with the model to itself, in time
            retry = sum(o.seconds_left() for o in live[:i]) / share
            r.future.set_exception(TooSlow(r.speed, r.left, r.deadline - now, r.timeout, busy=alone, retry_s=retry,
                                           ordinary=(self.rate or r.expected * r.factor) / r.factor, share=share))

    async def _in_thread(self, chunks: list[Any], settings: Any) -> tuple[Sequence[Sequence[Edit]], float]:
        if self._executor is None:
            raise ServiceClosing("the service is shutting down")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._call, chunks, settings)

    def _call(self, chunks: list[Any], settings: Any) -> tuple[Sequence[Sequence[Edit]], float]:
        """Runs in a worker thread: each chunk's edits and the seconds they took."""
        start = time.perf_counter()
        edits = self.corrector.correct_chunks(chunks, settings)
        seconds = time.perf_counter() - start
        if self.on_batch is not None:
            self.on_batch(len(chunks), seconds)
        return edits, seconds

    def _observe_rate(self, unit: Unit, seconds: float) -> None:
        """With ``adapt_rate``, the admission speed follows the model as the server runs: the median cost characters
        per second of the recent units planned to take at least half a unit's time (a smaller one measures mostly
        the call's overhead), of chunks with a Chinese character only (the model reads no other; ``AdmissionSpeed``)."""
        if not self.adapt_rate or seconds <= 0 or unit.seconds < self.unit_seconds / 2:
            return
        cost = sum(len(c.text) * r.factor for r, taken in unit.parts for i in taken
                   if any(map(is_cjk, (c := r.prepared.chunks[i]).text)))
        if cost > 0 and self._speed is not None:
            self.rate = self._speed.add(cost / seconds)

