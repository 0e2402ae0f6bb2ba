"""How often each character is written inside a foreign name: the corpus's own count, for the decoder's
``protect_foreign_names`` (``corrector/evidence/foreign_names.py``).

Mainland and Taiwan text write foreign names with a middle dot between their parts (唐纳德·特朗普, 巴沙尔·阿萨德).
Every maximal run of Han characters joined by such dots is taken as a name; its outer parts are cut to the
three characters next to the dot (the part before may carry the words before the name: 总统巴沙尔). Per character,
``names.npz`` stores how often it was written inside those names and how often in the whole corpus, for the
characters seen in names at least ``MIN_IN_NAMES`` times.

    python -m training.evidence.candidates ...   (writes names.npz beside candidates.npz when --data holds corpus/)
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np

NAME_DOTS = "·•‧・"  # U+00B7 (mainland), U+2022, U+2027 (Taiwan), U+30FB
_NAME = re.compile(rf"[\u4e00-\u9fff]+(?:[{NAME_DOTS}][\u4e00-\u9fff]+)+")
_SPLIT = re.compile(rf"[{NAME_DOTS}]")
OUTER_PART = 3  # characters kept of the first and the last part, next to the dot
MIN_IN_NAMES = 2  # characters seen in names fewer times than this are not stored


def name_parts(line: str) -> list[str]:
    """The parts of every dot-joined name in ``line``, the outer ones cut to OUTER_PART characters."""
    out = []
    for m in _NAME.finditer(line):
        parts = _SPLIT.split(m.group(0))
        parts[0], parts[-1] = parts[0][-OUTER_PART:], parts[-1][:OUTER_PART]
        out += parts
    return out


def count_name_chars(lines) -> tuple[Counter, Counter]:
    """(in_names, total): per Han character, its count inside dot-joined names and in all ``lines``."""
    in_names: Counter = Counter()
    total: Counter = Counter()
    for line in lines:
        total.update(line)
        if any(d in line for d in NAME_DOTS):
            for part in name_parts(line):
                in_names.update(part)
    han = {c: n for c, n in total.items() if "\u4e00" <= c <= "\u9fff"}
    return in_names, Counter(han)


def name_arrays(in_names: Counter, total: Counter) -> dict[str, np.ndarray]:
    """names.npz's ``chars`` (sorted), ``in_names`` and ``total``."""
    chars = sorted(c for c, n in in_names.items() if n >= MIN_IN_NAMES and c in total)
    return {"chars": np.array(chars, dtype="<U1"),
            "in_names": np.array([in_names[c] for c in chars], dtype=np.int32),
            "total": np.array([total[c] for c in chars], dtype=np.int32)}
