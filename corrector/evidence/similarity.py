"""Pinyin and glyph-shape similarity between characters, read from tables built offline.

The tables are written by ``python -m training.evidence.similarity`` into one directory:

* ``pinyin.tsv``: ``char<TAB>freq<TAB>readings``, readings as comma-separated TONE3 strings
  (``zhong1,zhong4``; neutral tone is 5, ü is written v).
* ``shape.tsv``: ``char<TAB>nb:score nb:score ...``, visually similar characters, best first.

Nothing heavy is imported here: the reader is plain Python and loads in well under a second.
"""

from __future__ import annotations

import re
from functools import lru_cache
from itertools import product
from pathlib import Path

from corrector.types import CorrectorError

PINYIN_FILE = "pinyin.tsv"
SHAPE_FILE = "shape.tsv"

SAME_READING = 1.0  # identical syllable and tone
SAME_SYLLABLE = 0.8  # identical syllable, another tone
FUZZY_SYLLABLE = 0.6  # a fuzzy-pinyin variant (z/zh, an/ang, ...), any tone

_INITIAL = re.compile(r"(zh|ch|sh|[bpmfdtnlgkhjqxrzcsyw])(?=.)")  # zh before z: "zhong" is zh + ong
_FUZZY_INITIALS = (("z", "zh"), ("c", "ch"), ("s", "sh"), ("n", "l"), ("l", "r"), ("f", "h"))
_FUZZY_FINALS = (("an", "ang"), ("en", "eng"), ("in", "ing"), ("ian", "iang"), ("uan", "uang"))


def _related(pairs: tuple[tuple[str, str], ...]) -> dict[str, frozenset[str]]:
    out: dict[str, set[str]] = {}
    for a, b in pairs:
        out.setdefault(a, {a}).add(b)
        out.setdefault(b, {b}).add(a)
    return {k: frozenset(v) for k, v in out.items()}


_INITIAL_VARIANTS = _related(_FUZZY_INITIALS)
_FINAL_VARIANTS = _related(_FUZZY_FINALS)


def split_reading(reading: str) -> tuple[str, str]:
    """``"zhong1"`` → ``("zhong", "1")``; a reading without a tone digit gets tone ``""``."""
    if reading and reading[-1].isdigit():
        return reading[:-1], reading[-1]
    return reading, ""


def split_syllable(syllable: str) -> tuple[str, str]:
    """``"zhong"`` → ``("zh", "ong")``; zero-initial syllables (``"an"``) give ``("", "an")``."""
    m = _INITIAL.match(syllable)
    return (m.group(1), syllable[m.end() :]) if m else ("", syllable)


@lru_cache(maxsize=4096)
def fuzzy_variants(syllable: str) -> frozenset[str]:
    """Every syllable whose initial and final each equal or fuzzily match this one's (itself included)."""
    ini, fin = split_syllable(syllable)
    inis = _INITIAL_VARIANTS.get(ini, frozenset({ini}))
    fins = _FINAL_VARIANTS.get(fin, frozenset({fin}))
    return frozenset(i + f for i, f in product(inis, fins))


def _canonical(pairs: tuple[tuple[str, str], ...]) -> dict[str, str]:
    """Each member of a chain of fuzzy pairs → the chain's first member in sorted order (n~l~r: all → l)."""
    classes: list[set[str]] = []
    for a, b in pairs:
        joined = [c for c in classes if a in c or b in c]
        merged = {a, b}.union(*joined)
        classes = [c for c in classes if c not in joined] + [merged]
    return {m: min(c) for c in classes for m in c}


_CANON_INITIAL, _CANON_FINAL = _canonical(_FUZZY_INITIALS), _canonical(_FUZZY_FINALS)


def fuzzy_key(syllable: str) -> str:
    """One spelling for every fuzzy variant of a toneless syllable (zh→z, ang→an, ...): two syllables with
    the same key sound alike to an IME user (the n~l~r chain makes n and r one class too)."""
    ini, fin = split_syllable(syllable)
    return _CANON_INITIAL.get(ini, ini) + _CANON_FINAL.get(fin, fin)


def _reading_similarity(a: str, b: str) -> float:
    if a == b:
        return SAME_READING
    syl_a, _ = split_reading(a)
    syl_b, _ = split_reading(b)
    if syl_a == syl_b:
        return SAME_SYLLABLE
    return FUZZY_SYLLABLE if syl_b in fuzzy_variants(syl_a) else 0.0


def pinyin_similarity(
    readings_a: tuple[str, ...] | list[str], readings_b: tuple[str, ...] | list[str]
) -> float:
    """Best similarity over all pairs of TONE3 readings (heteronyms count): 1.0, 0.8, 0.6 or 0.0."""
    return max((_reading_similarity(a, b) for a in readings_a for b in readings_b), default=0.0)


def _open_table(path: Path) -> list[str]:
    if not path.is_file():
        raise CorrectorError(
            f"similarity table {path} is missing; build it with `python -m training.evidence.similarity`"
        )
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise CorrectorError(f"cannot read similarity table {path}: {e}") from None


def _parse_pinyin(path: Path) -> tuple[dict[str, tuple[str, ...]], dict[str, int]]:
    readings: dict[str, tuple[str, ...]] = {}
    freq: dict[str, int] = {}
    for lineno, line in enumerate(_open_table(path), 1):
        parts = line.split("\t")
        if len(parts) != 3 or len(parts[0]) != 1 or not parts[1].isdigit():
            raise CorrectorError(f"{path}:{lineno}: expected 'char<TAB>freq<TAB>readings', got {line[:40]!r}")
        ch, count, joined = parts
        freq[ch] = int(count)
        readings[ch] = tuple(r for r in joined.split(",") if r)
    return readings, freq


def _parse_shape_row(field: str) -> dict[str, float]:
    row: dict[str, float] = {}
    for item in field.split():
        nb, _, score = item.rpartition(":")
        row[nb] = float(score)
    return row


def _parse_shape(path: Path) -> dict[str, dict[str, float]]:
    shape: dict[str, dict[str, float]] = {}
    for lineno, line in enumerate(_open_table(path), 1):
        ch, tab, rest = line.partition("\t")
        try:
            if len(ch) != 1 or not tab:
                raise ValueError
            shape[ch] = _parse_shape_row(rest)
        except ValueError:
            raise CorrectorError(
                f"{path}:{lineno}: expected 'char<TAB>nb:score ...', got {line[:40]!r}"
            ) from None
    return shape


class SimilarityTables:
    """Sound and shape similarity between single characters, with neighbour look-ups."""

    def __init__(
        self, readings: dict[str, tuple[str, ...]], freq: dict[str, int], shape: dict[str, dict[str, float]] | Path
    ) -> None:
        """``shape``: the table, or its ``shape.tsv``, read on first use (most texts never need it)."""
        self._readings = readings
        self._freq = freq
        self._shape_table = shape
        self._index: tuple[dict[str, list[str]], dict[str, list[str]]] | None = None  # see _by_sound

    def _by_sound(self) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
        """(TONE3 reading → chars having it, toneless syllable → chars having it), made on first use."""
        if self._index is None:
            by_reading: dict[str, list[str]] = {}
            by_syllable: dict[str, list[str]] = {}
            for ch, rs in self._readings.items():
                for r in rs:
                    by_reading.setdefault(r, []).append(ch)
                for syl in dict.fromkeys(split_reading(r)[0] for r in rs):
                    by_syllable.setdefault(syl, []).append(ch)
            self._index = by_reading, by_syllable
        return self._index

    @classmethod
    def load(cls, directory: str | Path) -> SimilarityTables:
        directory = Path(directory)
        if not directory.is_dir():
            raise CorrectorError(f"similarity tables directory {directory} does not exist")
        readings, freq = _parse_pinyin(directory / PINYIN_FILE)
        if not (directory / SHAPE_FILE).is_file():
            _open_table(directory / SHAPE_FILE)  # names the missing file now
        return cls(readings, freq, directory / SHAPE_FILE)

    @property
    def _shape(self) -> dict[str, dict[str, float]]:
        if isinstance(self._shape_table, Path):
            self._shape_table = _parse_shape(self._shape_table)
        return self._shape_table

    def __contains__(self, ch: str) -> bool:
        return ch in self._readings or ch in self._shape

    def chars(self) -> list[str]:
        """Every character with a pinyin row, in table order."""
        return list(self._readings)

    def readings(self, ch: str) -> tuple[str, ...]:
        return self._readings.get(ch, ())

    def frequency(self, ch: str) -> int:
        return self._freq.get(ch, 0)

    def pinyin_sim(self, a: str, b: str) -> float:
        if a == b:
            return 1.0
        return pinyin_similarity(self.readings(a), self.readings(b))

    def shape_sim(self, a: str, b: str) -> float:
        if a == b:
            return 1.0
        return max(self._shape.get(a, {}).get(b, 0.0), self._shape.get(b, {}).get(a, 0.0))

    def pinyin_neighbours(self, ch: str, k: int = 20) -> list[tuple[str, float]]:
        """Characters that sound alike (sim > 0), best similarity first, then most frequent."""
        best: dict[str, float] = {}  # filled weakest tier first so that stronger tiers overwrite
        own = self.readings(ch)
        by_reading, by_syllable = self._by_sound()
        for syl in {v for r in own for v in fuzzy_variants(split_reading(r)[0])}:
            best.update(dict.fromkeys(by_syllable.get(syl, ()), FUZZY_SYLLABLE))
        for syl in {split_reading(r)[0] for r in own}:
            best.update(dict.fromkeys(by_syllable.get(syl, ()), SAME_SYLLABLE))
        for r in own:
            best.update(dict.fromkeys(by_reading.get(r, ()), SAME_READING))
        best.pop(ch, None)
        scored = sorted(best.items(), key=lambda cs: (-cs[1], -self.frequency(cs[0]), cs[0]))
        return scored[:k]

    def shape_neighbours(self, ch: str, k: int = 20) -> list[tuple[str, float]]:
        """Characters that look alike, best first (scores as ``shape_sim``)."""
        scored = [(nb, self.shape_sim(ch, nb)) for nb in self._shape.get(ch, {})]
        scored.sort(key=lambda cs: -cs[1])
        return scored[:k]
