"""An admitted request's state inside the scheduler (``service/batching.py``), the units it is served in, and the
ways a request ends without an answer: refused before any work (``Refused``), ended after units that show it cannot
finish in time (``TooSlow``), or caught by the shutdown (``ServiceClosing``)."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from corrector import Correction, Edit

from .cost import Admission
from .schemas import CorrectOptions
from .work import PreparedWork


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


SLOW_TEXT = 0.5  # a text that runs below this share of ordinary text's speed on the model as it runs now is slow


class TooSlow(Exception):
    """An admitted request that the units so far show cannot finish in time: ended then, instead of running into its
    timeout. Why, in this order: ``busy``, its own text would have finished within the timeout with the model to
    itself, but not beside the requests admitted before it (retry later); ``text_slow``, the text runs below
    ``SLOW_TEXT`` of ordinary text's speed on the model as it runs now (``ordinary``; send less: a retry of the
    same text ends the same way); otherwise the model runs slower than when the request was admitted (retry
    later, ``slow_model``). The seconds it says are wall time: model time over the share of the model it gets."""

    def __init__(self, speed: float, left: int, seconds_left: float, timeout: float, *, busy: bool = False,
                 retry_s: float = 0.0, ordinary: float = 0.0, share: float = 1.0):
        self.busy, self.retry_s = busy, retry_s
        self.text_slow = not busy and speed < SLOW_TEXT * ordinary
        needed = left / speed / share
        need = (f"at the speed measured on it, about {speed:,.0f} characters per second, the remaining {left:,} "
                f"characters need about {needed:.1f} s")
        left_s = f"{max(0.0, seconds_left):.1f} s left of the {timeout:g} s timeout"
        if busy:
            super().__init__(f"the service is busy: beside the requests admitted before this one, which share the "
                             f"model, it could not finish within the {timeout:g} s timeout ({need}, "
                             f"{max(0.0, seconds_left):.1f} s left); retry later")
        elif self.text_slow:
            super().__init__(f"this text corrects slowly: {need}, more than the {left_s}, where ordinary text runs at "
                             f"about {ordinary:,.0f} characters per second; send less text at once")
        else:
            super().__init__(f"the service corrects more slowly than when this request was admitted: {need}, more "
                             f"than the {left_s}; retry later, or send less text at once")

    @property
    def slow_model(self) -> bool:
        """Neither busy nor a slow text: the model itself runs slower than when the request was admitted."""
        return not self.busy and not self.text_slow


@dataclass(frozen=True)
class Plan:
    """A request's size before any work: its characters, those the model reads (``cost.model_chars``), the
    settings' cost factor, and its cost in cost characters (characters the model reads times the factor)."""

    chars: int
    factor: float
    read: int  # characters the model reads

    @property
    def cost(self) -> float:
        return self.read * self.factor


@dataclass(eq=False)
class Admitted:
    """A request from its admission to its answer: its chunks, which of them are handed out and corrected, and the
    speed measured on its own units."""

    prepared: PreparedWork
    options: CorrectOptions
    future: asyncio.Future[list[Correction]]
    since: float  # loop time when it was queued
    deadline: float  # loop time by which it must be answered (inf: none)
    timeout: float
    factor: float  # the cost factor of its settings
    expected: float  # characters per second expected for its settings (rate / cost factor)
    many_units: bool  # it needs more than one unit (its first is a probe)
    order: int = 0  # its place in the order of admission (``Runner._admitted`` is kept in it)
    speed: float = 0.0  # characters per second: expected, then as measured over all its units so far
    edits: list[Sequence[Edit] | None] = field(default_factory=list)  # per chunk, once corrected
    next: int = 0  # the first chunk not handed out
    finished: int = 0  # chunks corrected
    left: int = 0  # characters not handed out yet
    units: int = 0  # units of it corrected
    chars_done: int = 0  # characters corrected
    model_s: float = 0.0  # model seconds its corrected characters took (its part of each unit's time)
    started: float = math.inf  # loop time its first unit began

    def __post_init__(self) -> None:
        self.speed = self.expected
        self.edits = [None] * len(self.prepared.chunks)
        self.left = sum(len(c.text) for c in self.prepared.chunks)

    @property
    def remaining(self) -> bool:
        return self.next < len(self.edits)

    @property
    def complete(self) -> bool:
        return self.finished == len(self.edits)

    @property
    def judged(self) -> bool:
        """Whether its speed is measured well enough to end it on: never on its probe alone (a quarter of a unit in
        one model call, dominated by the call's fixed cost), so a request that needs several units only after two."""
        return self.units >= (2 if self.many_units else 1)

    def take(self, budget: int, most: int) -> range:
        """The next chunks, at most ``most`` of them and as many as fit ``budget`` characters (at least one)."""
        assert self.remaining
        chunks = self.prepared.chunks
        end, size = self.next, 0
        while end < min(len(chunks), self.next + most) and (end == self.next or size + len(chunks[end].text) <= budget):
            size += len(chunks[end].text)
            end += 1
        taken = range(self.next, end)
        self.next = end
        self.left -= size
        return taken

    def measured(self, chars: int, seconds: float) -> None:
        """One more of its units corrected: ``chars`` characters in ``seconds`` of model time. Its speed is then
        that over all its units so far (never above the expected one), not the last unit's alone."""
        self.units += 1
        self.chars_done += chars
        self.model_s += seconds
        if self.model_s > 0:
            self.speed = min(self.expected, self.chars_done / self.model_s)

    def rest_size(self) -> int:
        """Characters not handed out yet."""
        return self.left

    def chunks_left(self) -> int:
        return len(self.edits) - self.next

    def next_size(self) -> int:
        """Characters of the next chunk."""
        return len(self.prepared.chunks[self.next].text)

    def seconds_left(self) -> float:
        """Model time for what is not handed out yet, at its speed."""
        return self.left / self.speed


@dataclass
class Unit:
    """One model call's work: parts of one or more requests with equal options, each part with the model time
    expected for it when the unit was filled."""

    options: CorrectOptions
    parts: list[tuple[Admitted, range]] = field(default_factory=list)  # (request, its chunks)
    expected: list[float] = field(default_factory=list)  # per part, its expected model seconds
    seconds: float = 0.0  # expected model time

    @property
    def size(self) -> int:
        """Chunks in the unit."""
        return sum(len(taken) for _, taken in self.parts)

    def add(self, r: Admitted, taken: range) -> None:
        seconds = sum(len(r.prepared.chunks[i].text) for i in taken) / r.speed
        self.parts.append((r, taken))
        self.expected.append(seconds)
        self.seconds += seconds

    def chunks(self) -> list[Any]:
        return [r.prepared.chunks[i] for r, taken in self.parts for i in taken]
