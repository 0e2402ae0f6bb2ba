"""The scheduling policy (``service/batching.py``'s module docstring states it): which requests the next unit serves
and how much of each, apart from the runner that runs the units.

A request that has not had a unit yet is *fresh* (first come, first served, gathered with fresh requests of equal
options); one that has had a unit and has chunks left is *being served* (round-robin, one unit each). Fresh requests
go first, but never twice in a row while a request being served waits.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from .admitted import Admitted, Unit
from .schemas import CorrectOptions

PROBE = 0.25  # a long request's first unit, in units: its text may be far dearer than the expected speed


class Schedule:
    """The requests waiting for units, in the two queues of the policy."""

    def __init__(self, gather: bool, max_batch_size: int):
        self.gather = gather  # a unit may hold pieces of several fresh requests
        self.max_batch_size = max_batch_size  # chunks per unit
        self._fresh: deque[Admitted] = deque()  # no unit yet, first come first served
        self._served: deque[Admitted] = deque()  # had a unit, pieces left: round-robin
        self._owed = False  # the last unit went to fresh requests while a request being served waited

    def add(self, request: Admitted) -> None:
        self._fresh.append(request)

    @property
    def waiting(self) -> int:
        """Requests waiting for a unit or between their units."""
        return len(self._fresh) + len(self._served)

    @property
    def fresh(self) -> int:
        return len(self._fresh)

    def first_since(self) -> float:
        """When the oldest fresh request was queued (loop time)."""
        return min(r.since for r in self._fresh)

    def clear(self) -> Iterable[Admitted]:
        """Every request still queued, the queues emptied."""
        out = [*self._fresh, *self._served]
        self._fresh.clear()
        self._served.clear()
        return out

    def live(self) -> bool:
        """Drop requests whose caller is gone or that have nothing left to hand out; is any left?"""
        for queue in (self._fresh, self._served):
            if any(r.future.done() or not r.remaining for r in queue):
                kept = [r for r in queue if not r.future.done() and r.remaining]
                queue.clear()
                queue.extend(kept)
        return bool(self._fresh or self._served)

    def fresh_next(self) -> bool:
        return bool(self._fresh) and (not self._served or not self._owed)

    def take(self, unit_seconds: float) -> Unit | None:
        """The next unit, planned to take about ``unit_seconds`` of model time (the policy above)."""
        if not self.live():
            return None
        if self.fresh_next():
            leader = self._fresh[0]
            company = [r for r in self._fresh if r is not leader and r.options == leader.options] if self.gather else []
            members = [leader, *company]
            self._owed = bool(self._served)
        else:
            leader = self._served.popleft()
            members = [leader]
            self._owed = False
        unit = self._fill(leader.options, members, unit_seconds)
        for r in {id(r): r for r, _ in unit.parts}.values():
            if r in self._fresh:
                self._fresh.remove(r)
            if r.remaining and r not in self._served:
                self._served.append(r)
        return unit

    def _fill(self, options: CorrectOptions, members: list[Admitted], unit_seconds: float) -> Unit:
        """Round-robin over ``members``, one part each in turn, while the unit has time and room left (at most
        ``max_batch_size`` chunks): its first part as large as one unit allows, then whole chunks of it and whole
        requests of its company that fit."""
        unit = Unit(options)
        probed = None  # a long request's first part: its speed is unknown, so it gets only that in this unit
        added = True
        while added and unit.size < self.max_batch_size:
            added = False
            for r in members:
                room = self.max_batch_size - unit.size
                if not r.remaining or room <= 0 or r is probed:
                    continue
                if not unit.parts:
                    probe = r.many_units and not r.next
                    probed = r if probe else None
                    taken = r.take(max(1, int(unit_seconds * r.speed * (PROBE if probe else 1.0))), room)
                elif r is unit.parts[0][0]:  # the request the unit serves: the whole chunks that fit
                    budget = int((unit_seconds - unit.seconds) * r.speed)
                    if budget < r.next_size():
                        continue
                    taken = r.take(budget, room)
                else:  # company: only a whole request that fits (a small request is never cut to fill a unit)
                    if unit.seconds + r.rest_size() / r.speed > unit_seconds or r.chunks_left() > room:
                        continue
                    taken = r.take(r.rest_size(), room)
                unit.add(r, taken)
                added = True
        return unit
