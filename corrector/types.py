"""The values the library hands out: edits, corrections and explanations."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Literal

Reason = Literal["pinyin", "shape", "other"]


class CorrectorError(Exception):
    """A problem the user can fix (bad bundle, bad argument); its message is shown as is."""


@dataclass(frozen=True)
class Edit:
    position: int  # index of the character in the input string, in Python characters
    source: str  # the character found there
    target: str  # the character it becomes
    confidence: float  # 0..1
    reason: Reason  # why the replacement is plausible: similar sound, similar shape, or neither

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Correction:
    source: str
    target: str
    edits: list[Edit] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"source": self.source, "target": self.target, "edits": [e.to_dict() for e in self.edits]}


@dataclass(frozen=True)
class Candidate:
    char: str
    score: float  # the ranker's probability that this character is what was meant
    generator_prob: float
    pinyin_sim: float
    shape_sim: float
    features: dict[str, float] = field(default_factory=dict)  # every feature the ranker saw


@dataclass(frozen=True)
class CharExplanation:
    position: int
    char: str
    editable: bool
    rtd_prob: float  # discriminator's probability that this character was replaced (is wrong)
    candidates: list[Candidate] = field(default_factory=list)
    decision: str = ""  # what was done here and why (applied, below the threshold, protected, ...)
    keep_prob: float = 0.0  # the ranker's probability that the character as written is right


@dataclass(frozen=True)
class Explanation:
    correction: Correction
    chars: list[CharExplanation]

    def to_dict(self) -> dict:
        return {"correction": self.correction.to_dict(), "chars": [asdict(c) for c in self.chars]}
