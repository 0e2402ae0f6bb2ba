"""Decoding settings. A bundle's manifest carries tuned defaults; callers override any of them per call."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any


@dataclass(frozen=True)
class CorrectorConfig:
    threshold: float | None = None  # apply an edit when its probability is above this; None = the bundle's
    use_lm: bool = True  # score candidates with the bundle's character n-gram LM (False: networks only)
    shortlist: int = 8  # candidates per character that get the full scoring (LM, words)
    top_k: int = 10  # the generator's most probable characters join each character's candidates
    max_edits: int = 0  # per sentence, most confident first; 0 = no limit
    protect_dictionary_words: bool = False  # never edit inside a multi-character jieba word (a hard block;
    #                                          by default dictionary words are one feature among others)
    protect_kept_words: int = 0  # never edit inside a 2- or 3-character word that the real training pairs kept as
    #                               written at least this many times and never corrected (报导, 部份 in Taiwan-style
    #                               text; the bundle's candidates/words.npz); 0 = off
    protect_foreign_names: float = 0.0  # never edit inside a run of 3 or more characters that the corpus writes
    #                                      inside dot-joined foreign names (唐纳德·特朗普) at least this share of the
    #                                      time: 柯林顿, 哈玛斯 (the bundle's candidates/names.npz); 0 = off
    protect_regional_forms: bool = True  # never make an edit that only writes a word another region's way: OpenCC's
    #                                       Taiwan conversion (s2twp) gives the same text with and without it
    #                                       (计画/计划, 爱滋/艾滋, 想像/想象, 馀/余); a script change, not a spelling fix
    veto_unreliable_pairs: bool = True  # never make an edit a -> b that the bundle's ranker got wrong most of the
    #                                      time decoding the real training pairs (its ranker.json "veto": 甚 -> 什,
    #                                      他 -> 她 in Taiwan-style text; training.pair_veto)
    batch_size: int = 32  # chunks per ONNX call
    protect: tuple[str, ...] = field(default_factory=tuple)  # words never edited inside
    confusions: tuple[tuple[str, str], ...] = field(default_factory=tuple)  # (A, B): B always considered for A

    @classmethod
    def from_dict(cls, d: dict) -> CorrectorConfig:
        return cls().with_overrides(**d)

    def with_overrides(self, **kw: Any) -> CorrectorConfig:
        """A copy with ``kw`` applied (None leaves a setting as it is); ValueError names a bad one."""
        known = {f.name: f for f in fields(self)}
        unknown = set(kw) - set(known)
        if unknown:
            raise ValueError(f"unknown corrector setting(s): {', '.join(sorted(unknown))}")
        clean = {k: _coerce(k, v) for k, v in kw.items() if v is not None}
        return replace(self, **clean).validated() if clean else self

    def validated(self) -> CorrectorConfig:
        if self.threshold is not None and not 0.0 <= self.threshold <= 1.0:
            raise ValueError(f"threshold must be within [0, 1], got {self.threshold}")
        for name in ("shortlist", "batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("top_k", "max_edits", "protect_kept_words"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if not 0.0 <= self.protect_foreign_names <= 1.0:
            raise ValueError(f"protect_foreign_names must be within [0, 1], got {self.protect_foreign_names}")
        return self

    def to_dict(self) -> dict:
        return asdict(self)


_KINDS = {"threshold": float, "use_lm": bool, "shortlist": int, "top_k": int, "max_edits": int,
          "protect_dictionary_words": bool, "protect_kept_words": int, "protect_foreign_names": float,
          "protect_regional_forms": bool, "veto_unreliable_pairs": bool, "batch_size": int}


def _coerce(name: str, value: Any) -> Any:
    """Check a setting's type; ints pass as floats, nothing else is converted."""
    if name == "protect":
        if isinstance(value, str):
            return (value,)  # one word, not its characters
        if not all(isinstance(w, str) for w in value):
            raise ValueError("protect must be a list of words")
        return tuple(value)
    if name == "confusions":
        pairs = tuple((a, b) for a, b in value)
        for a, b in pairs:
            if not (isinstance(a, str) and isinstance(b, str) and len(a) == 1 and len(b) == 1):
                raise ValueError(f"confusion pairs are single characters, got {a!r} -> {b!r}")
        return pairs
    kind = _KINDS[name]
    if kind is bool:
        if not isinstance(value, bool):
            raise ValueError(f"{name} must be true or false, got {value!r}")
        return value
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{name} must be an integer, got {value!r}")
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be a number, got {value!r}")
    return float(value)


def parse_confusions(text: str) -> list[tuple[str, str]]:
    """Lines like ``A→B``, ``A->B``, ``A B`` or ``A<TAB>B``; ``#`` starts a comment."""
    pairs = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        for sep in ("→", "->", "\t", " "):
            if sep in line:
                a, b = (p.strip() for p in line.split(sep, 1))
                break
        else:
            raise ValueError(f"line {n}: expected 'A→B', got {raw!r}")
        if len(a) != 1 or len(b) != 1:
            raise ValueError(f"line {n}: confusion pairs are single characters, got {raw!r}")
        pairs.append((a, b))
    return pairs
