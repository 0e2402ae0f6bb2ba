"""The words an IME offers instead of the one typed: dictionary words grouped by their toneless pinyin
(``HomophoneIndex``), exactly (认真 / 任真) or, as an IME with fuzzy pinyin does, with z/zh, c/ch, s/sh, n/l, an/ang,
en/eng and in/ing counted as one sound (``fuzzy=True``: 知道 zhi dao / 资道 zi dao). The ``word`` and ``fuzzy`` error
kinds of ``training.data.corruption`` draw from them."""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from pathlib import Path

from corrector.text.chars import is_cjk

# the fuzzy-pinyin pairs IMEs offer as settings (Sogou, Microsoft Pinyin), each folded to one spelling
FUZZY_INITIALS = (("zh", "z"), ("ch", "c"), ("sh", "s"), ("l", "n"))
FUZZY_FINALS = (("ang", "an"), ("eng", "en"), ("ing", "in"))


def fuzzy_syllable(syllable: str) -> str:
    """One spelling for the syllables a fuzzy-pinyin IME cannot tell apart: ``zhang`` and ``zan`` both ``zan``."""
    for long, short in FUZZY_INITIALS:
        if syllable.startswith(long):
            syllable = short + syllable[len(long):]
            break
    for long, short in FUZZY_FINALS:
        if syllable.endswith(long):
            return syllable[: -len(long)] + short
    return syllable


def jieba_dictionary(path: Path | None = None) -> dict[str, int]:
    """word → frequency from a jieba-format dictionary (``word freq [tag]`` per line); jieba's own by default."""
    if path is None:
        import jieba

        path = Path(jieba.__file__).parent / "dict.txt"
    words: dict[str, int] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 2 and parts[1].isdigit():
                words.setdefault(parts[0], int(parts[1]))
    return words


class HomophoneIndex:
    """Dictionary words grouped by toneless pinyin, to draw the word an IME would offer instead.

    With ``fuzzy`` the groups are keyed by fuzzy pinyin (``fuzzy_syllable``) and a word's rivals are only those
    an exact key would not have grouped with it: the slips a fuzzy-pinyin setting adds to the plain homophones.

    Any word of min_len..max_len CJK characters can be looked up; only words whose characters all pass
    ``allowed`` are offered as replacements, drawn with weight frequency ** freq_power, times
    extra_char_weight for each differing character beyond the first (real slips mostly change one).
    """

    def __init__(
        self,
        words: dict[str, int],
        allowed: Callable[[str], bool] | None = None,
        min_len: int = 2,
        max_len: int = 4,
        freq_power: float = 1.0,
        extra_char_weight: float = 0.1,
        fuzzy: bool = False,
    ) -> None:
        from pypinyin import lazy_pinyin

        self._fuzzy = fuzzy
        self._key: dict[str, str] = {}
        self._exact: dict[str, str] = {}
        groups: dict[str, list[str]] = {}
        for word, freq in words.items():
            if not (min_len <= len(word) <= max_len) or not all(map(is_cjk, word)):
                continue
            syllables = lazy_pinyin(word)
            if len(syllables) != len(word) or not all(s.isascii() and s.isalpha() for s in syllables):
                continue  # a character without a reading
            key = " ".join(map(fuzzy_syllable if fuzzy else str, syllables))
            if fuzzy:  # the exact key tells the fuzzy rivals from the plain homophones
                self._exact[word] = " ".join(syllables)
            self._key[word] = key
            if freq > 0 and (allowed is None or all(map(allowed, word))):
                groups.setdefault(key, []).append(word)
        self._groups = groups
        self._freq = {w: words[w] for w in self._key}
        self._power = freq_power
        self._extra = extra_char_weight
        self._cache: dict[str, tuple[list[str], list[float], float] | None] = {}

    @classmethod
    def from_jieba(
        cls, allowed: Callable[[str], bool] | None = None, path: Path | None = None, fuzzy: bool = False
    ) -> HomophoneIndex:
        return cls(jieba_dictionary(path), allowed, fuzzy=fuzzy)

    def __len__(self) -> int:
        return len(self._key)

    def key(self, word: str) -> str | None:
        """Toneless pinyin, syllables separated by spaces (``"jing zhi"``; fuzzy: ``"jin zi"``); None for an
        unknown word."""
        return self._key.get(word)

    def homophones(self, word: str) -> list[tuple[str, int]]:
        """Other usable words that sound like ``word`` (tones aside), most frequent first."""
        return sorted(((w, self._freq[w]) for w in self._rivals(word)), key=lambda wf: (-wf[1], wf[0]))

    def _rivals(self, word: str) -> list[str]:
        group = self._groups.get(self._key.get(word, ""), [])
        if self._fuzzy:  # only what the fuzzy setting adds: the exact homophones are the plain index's
            return [w for w in group if self._exact[w] != self._exact[word]]
        return [w for w in group if w != word]

    def _choices(self, word: str) -> tuple[list[str], list[float], float] | None:
        if word not in self._cache:
            others = self._rivals(word)
            if others:
                weights = [
                    self._freq[w] ** self._power
                    * self._extra ** (sum(a != b for a, b in zip(w, word, strict=True)) - 1)
                    for w in others
                ]
                rival = sum(self._freq[w] for w in others)
                self._cache[word] = (others, list(itertools.accumulate(weights)), rival / (rival + self._freq.get(word, 0)))
            else:
                self._cache[word] = None
        return self._cache[word]

    def confusability(self, word: str) -> float:
        """How likely an IME offers a rival first: the rivals' share of the frequency of this pinyin
        (权利 0.67, 精致 0.76, 没有 0.002); 0 for a word without homophones."""
        choices = self._choices(word)
        return choices[2] if choices else 0.0

    def sample(self, word: str, rng: random.Random) -> str | None:
        choices = self._choices(word)
        return rng.choices(choices[0], cum_weights=choices[1])[0] if choices else None


