"""The values the library hands out: edits, corrections and explanations."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Literal

Reason = Literal["pinyin", "shape", "other", "script"]  # script: a stray traditional character in simplified text


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

    def row(self) -> str:
        """``POS CHAR rtd=R keep=K  C(S,p=G) ...  [DECISION]``: one line, the columns of EXPLAIN_COLUMNS."""
        cands = " ".join(f"{k.char}({k.score:.2f},p={k.generator_prob:.3f})" for k in self.candidates)
        return f"{self.position:>5} {self.char} rtd={self.rtd_prob:.3f} keep={self.keep_prob:.2f}  {cands}  [{self.decision}]"


EXPLAIN_COLUMNS = """\
  POS       the character's index in the text (Python characters, from 0)
  CHAR      the character as written
  rtd=R     the discriminator's probability that the character was replaced, i.e. is a typo
  keep=K    the ranker's probability that the character as written is right
  C(S,p=G)  a candidate C, best first (at most 5): S the confidence that C was meant (as edits report it; the
            edit is made when the best S is above the threshold), G the generator's probability of C there
  DECISION  "applied: C" when the edit was made, else why the character was kept as written (below the
            threshold, a guard such as protect_regional_forms, max_edits)"""


@dataclass(frozen=True)
class Explanation:
    correction: Correction
    chars: list[CharExplanation]

    def to_dict(self) -> dict:
        return {"correction": self.correction.to_dict(), "chars": [asdict(c) for c in self.chars]}

    def __repr__(self) -> str:
        """Short, for a REPL: the correction and how much there is; ``print()`` shows every row."""
        c = self.correction
        return (f"<Explanation {c.source!r} -> {c.target!r}: {len(c.edits)} edit(s), {len(self.chars)} characters; "
                f"print() it for every candidate>")

    def __str__(self) -> str:
        """The source and the correction, then one row per character the model read (``CharExplanation.row``)
        with the best candidate's features (those that are not 0) under it, and one per protected character."""
        lines = [f"source: {self.correction.source}", f"target: {self.correction.target}"]
        for e in self.correction.edits:
            lines.append(f"  edit: {e.position} {e.source}→{e.target} (confidence {e.confidence:.3f}, {e.reason})")
        if any(c.editable for c in self.chars):
            lines.append("  POS CHAR rtd=P(typo) keep=P(as written)  candidate(P(meant),p=generator's P)  [decision]")
        skipped = 0
        for c in self.chars:
            if c.editable:
                lines.append(c.row())
                if c.candidates:
                    best = c.candidates[0]
                    feats = " ".join(f"{k}={v:g}" for k, v in best.features.items() if v != 0)
                    lines.append(f"{'':>8}{best.char}: {feats or 'every feature 0'}")
            elif c.decision.startswith("protected"):
                lines.append(f"{c.position:>5} {c.char} [{c.decision}]")
            else:
                skipped += 1
        if skipped:
            lines.append(f"  ({skipped} character{'s' if skipped > 1 else ''} the model does not read: punctuation, "
                         "Latin letters, digits, characters outside its vocabulary)")
        return "\n".join(lines)
