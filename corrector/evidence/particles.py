"""The structural particles 的, 地 and 得 and the words either side of them: which of the three edited text writes
between a word of one kind and a word of another (the ``particle`` feature, corrector/features/particle.py).

认真地学习 (an adverbial before a verb), 跑得很快 (a verb before its complement), 美丽的花 (a modifier before a
noun): the choice is told by the kinds of the neighbouring words, which neither the networks nor the character LM
see as a class. The table holds, for the words that stand beside a particle in the counted text, their kind (jieba's
part-of-speech tag, in twelve classes) and how often each particle stood after them and before them (a particle
that jieba's segmentation puts inside a word, as in 目的, 觉得 or 土地, is no particle slot); a word it lacks counts
as its class does
(``training.evidence.particles`` counts them over the edited corpus files). A bundle carries it as
``dictionary/particles.json``; without it the feature is 0.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from corrector.evidence.dictionary import segment_around
from corrector.text.chars import is_cjk

PARTICLES = "的地得"
FILE = "dictionary/particles.json"
SMOOTHING = 5.0  # pseudo-counts of the backed-off estimate behind each word's counts
END, LATIN, OTHER = "END", "LAT", "O"  # no CJK word: punctuation or the text's end; Latin letters or digits; unknown

CLASSES = {  # jieba's tags in twelve classes
    **dict.fromkeys(("n", "nr", "ns", "nt", "nz", "nrt", "nrfg", "ng", "s", "t", "f", "tg"), "N"),
    **dict.fromkeys(("vn", "an"), "VN"),
    **dict.fromkeys(("v", "vd", "vi", "vq", "vg"), "V"),
    **dict.fromkeys(("a", "ag", "b"), "A"),
    **dict.fromkeys(("ad", "d", "dg", "df"), "D"),
    **dict.fromkeys(("z", "zg"), "Z"),
    **dict.fromkeys(("r", "rr", "rz", "rg"), "R"),
    **dict.fromkeys(("m", "mq", "q"), "M"),
    **dict.fromkeys(("i", "l", "j"), "I"),
    **dict.fromkeys(("p", "c"), "P"),
}


def word_class(tag: str | None) -> str:
    return CLASSES.get(tag or "", OTHER)


Counts = tuple[int, int, int]  # times 的, 地, 得


@dataclass(frozen=True)
class ParticleTable:
    """The words seen beside a particle with their classes, and how often each particle stood after each word
    (``left``) and before it (``right``)."""

    classes: dict[str, str]
    left: dict[str, Counts]
    right: dict[str, Counts]
    _cache: dict[str, np.ndarray] = field(default_factory=dict, compare=False, repr=False)

    def context(self, text: str, i: int) -> tuple[str, str] | None:
        """(word before, word after) of the particle slot at ``i`` as jieba segments the characters around it, or
        None where the character as written is part of a word (目的, 觉得, 的确, 土地; 认真的 is 认真 + 的, not
        认 + 真的)."""
        left, word, right, _ = segment_around(text, i)
        return None if len(word) > 1 else (left, right)

    def word_class_of(self, word: str) -> str:
        """A segmented word's class: its table entry, else END ('' or punctuation), LAT (Latin or digits) or O."""
        if not word:
            return END
        if not is_cjk(word[0]):
            return LATIN if word[0].isalnum() else END
        return self.classes.get(word, OTHER)

    def log_probs(self, left: str, right: str) -> np.ndarray:
        """log P(的, 地, 得 | word before, word after), naive Bayes over the two sides: each side's word counts
        smoothed toward its class's, those toward the three's overall shares."""
        prior = self._prior()
        return self._side("L", left, self.left) + self._side("R", right, self.right) - np.log(prior)

    def _prior(self) -> np.ndarray:
        got = self._cache.get("")
        if got is None:
            total = np.zeros(3)
            for v in self.left.values():
                total += v
            got = self._cache[""] = (total + 1.0) / (total.sum() + 3.0)
        return got

    def _side(self, side: str, word: str, counts: dict[str, Counts]) -> np.ndarray:
        key = f"{side} {word}"
        got = self._cache.get(key)
        if got is None:
            cls = self.word_class_of(word)
            by_class = self._cache.get(f"{side}#{cls}")
            if by_class is None:
                n = np.zeros(3)
                for w, v in counts.items():
                    if self.word_class_of(w) == cls:
                        n += v
                by_class = self._cache[f"{side}#{cls}"] = (n + SMOOTHING * self._prior()) / (n.sum() + SMOOTHING)
            n = np.array(counts.get(word, (0, 0, 0)), dtype=np.float64)
            got = self._cache[key] = np.log((n + SMOOTHING * by_class) / (n.sum() + SMOOTHING))
        return got

    def slot_log_probs(self, text: str, i: int) -> np.ndarray | None:
        """``log_probs`` of the slot at ``i``, or None where the character as written is part of a word."""
        ctx = self.context(text, i)
        return None if ctx is None else self.log_probs(*ctx)

    def gain(self, text: str, i: int, choice: str) -> float:
        """log P(choice) - log P(written) in the particle slot at ``i`` (0 unless both are particles and the
        written one is no part of a word)."""
        written = text[i]
        if written not in PARTICLES or choice not in PARTICLES or choice == written:
            return 0.0
        lp = self.slot_log_probs(text, i)
        return 0.0 if lp is None else float(lp[PARTICLES.index(choice)] - lp[PARTICLES.index(written)])

    def to_dict(self) -> dict:
        return {"classes": dict(sorted(self.classes.items())), "left": {w: list(v) for w, v in sorted(self.left.items())},
                "right": {w: list(v) for w, v in sorted(self.right.items())}}

    @classmethod
    def from_dict(cls, d: dict) -> ParticleTable:
        def counts(m: dict) -> dict[str, Counts]:
            return {w: (int(v[0]), int(v[1]), int(v[2])) for w, v in m.items()}

        return cls(dict(d["classes"]), counts(d["left"]), counts(d["right"]))

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":")), encoding="utf-8")

    @classmethod
    def load(cls, path: Path) -> ParticleTable:
        return cls.from_dict(json.loads(path.read_text(encoding="utf-8")))
