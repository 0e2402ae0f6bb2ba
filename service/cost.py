"""What a request costs before any of it runs, and whether it can finish within its timeout.

Cost is counted in *cost characters*: characters at the model's default decoding settings. A setting that
makes each character dearer multiplies its characters by :func:`cost_factor`. The measured rate (cost
characters per second, ``--cost-chars-per-s`` or measured at start-up by :func:`measure_rate`) turns cost
into seconds.

Admission assumes the scheduler's guarantee (``service/batching.py``): while any request waits for its
first unit, requests already being served still get at least every other unit, shared round-robin. A
request is admitted when, with ``share`` of the model shared with the requests already admitted (processor
sharing; their model time left as measured on their own text), it and every one of them still finish
within their deadlines.
"""

from __future__ import annotations

import math
import statistics
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from corrector.config import CorrectorConfig, in_force
from corrector.text.chars import is_cjk, split_sentences

# Relative cost of a character, measured on the default bundle (2 CPU cores, random and real text):
# each candidate scored beyond the default shortlist costs about 1/128 of a character's default work, each
# generator candidate beyond the default top_k about 1/400 (shortlist 1000: x7.5, with top_k 1000: x11).
SHORTLIST_STEP = 128.0
TOP_K_STEP = 400.0
RATE_SAMPLES = 32  # the admission speed is the median over this many recent units (and the start-up measurement)
RATE_BAND = 4.0  # a unit's speed counts as at most this many times faster or slower than the start-up one

CALIBRATION_TEXT = (
    "今天天汽很好，我们去公园散步吧。他以经知道自己错了。这件事情没有那么简单，我们需要从长计议。"
    "中国人民银行在北京，张三和李四在上海。我想买一个精致的小礼物送给朋友。请拨打电话联系我们的客服人员。"
    "候车室里的人很多，大家都在等待火车。未来的路还很长，我们要继续努力学习。天气预报说明天有雨，出门记得带伞。"
)


def cost_factor(settings: dict[str, Any], defaults: CorrectorConfig | None) -> float:
    """Cost of a character under a request's ``settings`` relative to the defaults (``defaults``: the corrector's
    CorrectorConfig; None: CorrectorConfig's own), the call's settings in force worked out as the corrector does
    (``in_force``). Never below 1: a cheaper setting is not counted as cheaper."""
    base = defaults if isinstance(defaults, CorrectorConfig) else CorrectorConfig()
    try:
        call = in_force(call=settings, loaded=base)
    except (TypeError, ValueError):
        return 1.0  # a bad setting: the corrector's prepare refuses it, in its own words
    return (1.0 + max(0, call.shortlist - base.shortlist) / SHORTLIST_STEP
            + max(0, call.top_k - base.top_k) / TOP_K_STEP)


def model_chars(text: str) -> int:
    """The characters of ``text`` that cost model work: those of its lines and sentences that hold a Chinese
    character (the model reads no other: ``batching.Runner`` measures its speed on such chunks alone)."""
    return sum(len(piece) for line in text.splitlines(keepends=True) for piece in split_sentences(line)
               if any(map(is_cjk, piece)))


def measure_rate(correct_batch: Callable[[list[str]], Any], chars: int = 1000) -> float:
    """Cost characters per second of ``correct_batch`` at the default settings, from the better of two
    runs over ``chars`` characters of ordinary text."""
    text = (CALIBRATION_TEXT * (chars // len(CALIBRATION_TEXT) + 1))[:chars]
    best = math.inf
    for _ in range(2):
        t0 = time.perf_counter()
        correct_batch([text])
        best = min(best, time.perf_counter() - t0)
    return chars / max(best, 1e-6)


class AdmissionSpeed:
    """The speed admission judges requests by, as the server runs (``Runner(adapt_rate=True)``): the median of the
    start-up measurement and the recent units' speeds, each held within ``RATE_BAND`` of the start-up one, so that
    no client can set the speed that others are judged by (units it fills with what costs the model nothing, say)."""

    def __init__(self, start: float) -> None:
        self.start = start
        self._samples: deque[float] = deque([start], maxlen=RATE_SAMPLES)

    def add(self, chars_per_s: float) -> float:
        """The speed with one more unit's sample."""
        self._samples.append(min(max(chars_per_s, self.start / RATE_BAND), self.start * RATE_BAND))
        return statistics.median(self._samples)


@dataclass(frozen=True)
class Admission:
    """The answer for one request: admitted, or why not."""

    ok: bool
    alone_s: float  # the request's own time at the shared rate
    busy_s: float = 0.0  # when refused for load: about how long the work already admitted holds it back


def shared_finish_times(costs: Sequence[float]) -> list[float]:
    """Finish times (in cost units) of jobs of these remaining costs served together by processor sharing,
    in the order given: with costs sorted c1 <= c2 <= ..., job k finishes at c1 + ... + c(k-1) + (n-k+1) ck."""
    order = sorted(range(len(costs)), key=lambda i: costs[i])
    out = [0.0] * len(costs)
    done = 0.0
    for rank, i in enumerate(order):
        out[i] = done + (len(costs) - rank) * costs[i]
        done += costs[i]
    return out


def admit(seconds: float, due_in: float, others: Sequence[tuple[float, float]], share: float) -> Admission:
    """May a request needing ``seconds`` of model time, due in ``due_in`` seconds, join ``others`` ((model
    seconds left, seconds to its deadline) of each admitted request still running), all of them getting
    ``share`` of the model together? Refused when it could not finish in time even alone, or when it, or a
    request that would otherwise finish in time, would finish late."""
    alone = seconds / share
    if alone > due_in:
        return Admission(False, alone)
    before = shared_finish_times([s for s, _ in others])
    after = shared_finish_times([s for s, _ in others] + [seconds])
    harmed = any(a / share > d >= b / share for a, b, (_, d) in zip(after, before, others))
    if harmed or after[-1] / share > due_in:
        return Admission(False, alone, sum(min(s, seconds) for s, _ in others) / share)
    return Admission(True, alone)


def overdue(work: Sequence[tuple[float, float, bool]], share: float) -> list[int]:
    """Which admitted requests to end now: ``work`` holds, in the order they were admitted, each one's (model seconds
    left at the speed measured on its own text, seconds to its deadline, whether that speed may be judged on), all of
    them sharing ``share`` of the model by processor sharing. They are judged as admission judges a new request, in
    order, so that the earlier admitted go first: one that would finish late, or would make one kept before it late,
    is ended (its index returned); the others are kept."""
    kept: list[tuple[float, float]] = []
    ended = []
    for i, (seconds, due_in, judged) in enumerate(work):
        if judged and not admit(seconds, due_in, kept, share).ok:
            ended.append(i)
        else:
            kept.append((seconds, due_in))
    return ended
