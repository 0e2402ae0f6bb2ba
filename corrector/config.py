"""Decoding settings. A bundle's manifest carries tuned defaults; callers override any of them."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace


@dataclass(frozen=True)
class CorrectorConfig:
    threshold: float = 0.5  # a character is suspect when its RTD probability is above this
    top_k: int = 20  # generator candidates considered per suspect
    mask_suspects: bool = False  # feed suspects to the generator as [MASK] (True) or as they are (False) ...
    mask_threshold: float = 0.0  # ... with True, only suspects whose RTD probability is above this are masked
    min_similarity: float = 0.6  # candidates must sound at least this similar (0.6 = fuzzy pinyin) ...
    min_shape_similarity: float = 0.4  # ... or look at least this similar (custom pairs exempt)
    sim_weight: float = 2.0  # log-space bonus per unit of similarity when ranking candidates
    freq_weight: float = 0.0  # log-space bonus per unit of log character frequency
    margin: float = 0.0  # a candidate must beat the original's log-probability by this much
    confusion_bonus: float = 2.0  # log-space bonus for custom confusion pairs
    verify: bool = True  # re-score the corrected sentence with the discriminator; drop unconfirmed edits
    verify_threshold: float = 0.5  # an edit is dropped when its new character still scores above this
    max_edits: int = 0  # per sentence, most confident first; 0 = no limit
    protect_dictionary_words: bool = False  # never edit inside a multi-character jieba dictionary word
    batch_size: int = 32  # chunks per ONNX call
    protect: tuple[str, ...] = field(default_factory=tuple)  # words never edited inside
    confusions: tuple[tuple[str, str], ...] = field(default_factory=tuple)  # (A, B): B always considered for A

    @classmethod
    def from_dict(cls, d: dict) -> CorrectorConfig:
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown corrector setting(s): {', '.join(sorted(unknown))}")
        d = dict(d)
        if "protect" in d:
            d["protect"] = tuple(d["protect"])
        if "confusions" in d:
            d["confusions"] = tuple((a, b) for a, b in d["confusions"])
        return cls(**d).validated()

    def with_overrides(self, **kw) -> CorrectorConfig:
        kw = {k: v for k, v in kw.items() if v is not None}
        return replace(self, **kw).validated() if kw else self

    def validated(self) -> CorrectorConfig:
        for name in ("threshold", "mask_threshold", "verify_threshold"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be within [0, 1], got {getattr(self, name)}")
        if self.top_k < 1:
            raise ValueError("top_k must be >= 1")
        if self.max_edits < 0:
            raise ValueError("max_edits must be >= 0")
        if self.batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        for a, b in self.confusions:
            if len(a) != 1 or len(b) != 1:
                raise ValueError(f"confusion pairs are single characters, got {a!r} -> {b!r}")
        return self

    def to_dict(self) -> dict:
        return asdict(self)


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
