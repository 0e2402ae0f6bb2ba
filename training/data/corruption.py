"""The synthetic errors of ``training.data.make_csc_data``: the error kinds and their mix, and the ``Corrupter`` that
draws each kind into clean sentences (the kinds are described in make_csc_data's docstring; the words an IME offers
instead of a typed one come from ``training.data.homophones``). ``lm_scorer`` scores texts for the ``lm`` kind and
for ``lm_worse``, which keeps an error only when the LM finds the sentence worse with it.
"""

from __future__ import annotations

import bisect
import collections
import itertools
import logging
import random
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from corrector.evidence.similarity import SimilarityTables, pinyin_similarity
from corrector.text.chars import _CJK_RANGES, is_cjk
from training.data.homophones import HomophoneIndex

KINDS = ("word", "fuzzy", "sound", "shape", "random", "prior", "lm", "function", "generator")
# fuzzy: a whole word an IME with fuzzy pinyin offers (z/zh, c/ch, s/sh, n/l, an/ang, en/eng, in/ing), beyond the
# plain homophones of "word"; generator: a character the pretraining generator puts at the masked position
# (training.data.generator_errors), sounding or looking alike or not
# function: the slips between function words and their homophones that native writers make whatever they
# write about (的/地/得, 在/再, 做/作, 象/像, 已/以, ...): each character with what it is written as instead,
# weighted by how often (a rough order from mainland proofreading guides; both directions occur)
FUNCTION_SLIPS: dict[str, dict[str, float]] = {
    "的": {"地": 1.0, "得": 1.0}, "地": {"的": 2.0, "得": 0.3}, "得": {"的": 2.0, "地": 0.5},
    "在": {"再": 1.0}, "再": {"在": 1.5}, "做": {"作": 1.0}, "作": {"做": 1.0}, "像": {"象": 1.0}, "象": {"像": 0.5},
    "已": {"以": 1.0}, "以": {"已": 0.5}, "那": {"哪": 0.5}, "哪": {"那": 1.0}, "即": {"既": 0.5}, "既": {"即": 0.5},
    "需": {"须": 0.5}, "须": {"需": 0.5}, "带": {"戴": 0.5}, "戴": {"带": 1.0}, "座": {"坐": 0.5}, "坐": {"座": 0.5},
    "有": {"又": 0.3}, "又": {"有": 0.5}, "到": {"道": 0.3}, "道": {"到": 0.3},
}
DEFAULT_MIX = {"word": 0.30, "sound": 0.40, "shape": 0.25, "random": 0.05}  # roughly SIGHAN-like
# prior: a character written for the intended one as in real errors (training.data.confusion_prior's
# P(written | intended) from the real training pairs and the candidate table); needs --prior-candidates
DEFAULT_ERROR_COUNTS = (0.70, 0.22, 0.08)  # P(1, 2, 3 errors) in a corrupted sentence

_NON_CJK = re.compile("[^" + "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in _CJK_RANGES) + "]")


def cum_weights(weights: Iterable[float]) -> list[float]:
    return list(itertools.accumulate(weights))


def parse_mix(text: str) -> dict[str, float]:
    """``"word=0.3,sound=0.4,shape=0.25,random=0.05"`` → normalised weights (unnamed kinds get 0)."""
    mix = dict.fromkeys(KINDS, 0.0)
    for item in text.split(","):
        name, eq, value = item.partition("=")
        name = name.strip()
        if name not in mix or not eq:
            raise ValueError(f"bad mix item {item!r}: expected KIND=WEIGHT with KIND in {', '.join(KINDS)}")
        mix[name] = float(value)
    total = sum(mix.values())
    if total <= 0 or min(mix.values()) < 0:
        raise ValueError(f"mix weights must be >= 0 with a positive sum, got {text!r}")
    return {k: v / total for k, v in mix.items()}


def parse_counts(text: str) -> tuple[float, ...]:
    """``"0.7,0.22,0.08"`` → normalised P(1 error), P(2 errors), ..."""
    probs = [float(x) for x in text.split(",")]
    if not probs or min(probs) < 0 or sum(probs) <= 0:
        raise ValueError(f"error-count probabilities must be >= 0 with a positive sum, got {text!r}")
    return tuple(p / sum(probs) for p in probs)


# ---------------------------------------------------------------------------------------------- corruption


@dataclass(frozen=True)
class CorruptionConfig:
    mix: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_MIX))  # error kind → probability
    error_counts: tuple[float, ...] = DEFAULT_ERROR_COUNTS  # P(1, 2, ... errors) per corrupted sentence
    chars_per_error: int = 8  # at most one error per this many CJK characters (but always at least one)
    sound_power: float = 4.0  # weight = sim ** 4 * freq ** 0.5: same reading 1, other tone .41, fuzzy .13
    sound_freq_power: float = 0.5  # frequent characters are what an IME offers first
    secondary_reading: float = 0.3  # a candidate sounding alike only by a rare reading (么 yao1) is unlikely
    shape_power: float = 8.0  # shape weight = sim ** 8 * freq ** 0.25: the look-alike matters most
    shape_freq_power: float = 0.25
    min_shape_sim: float = 0.4  # weaker look-alikes (的 → 酌 0.38) do not look alike to a reader
    random_pool: int = 3000  # "random" draws uniformly from this many most frequent characters
    min_char_freq: int = 20  # replacements seen at least this often in the corpus (20 in 64M: 4.7k chars)
    lm_candidates: int = 8  # "lm": draws scored by the LM at each tried position ...
    lm_positions: int = 4  # ... at up to this many positions of the sentence
    lm_margin: float = 2.0  # "lm": the kept draw costs the sentence at most this many nats of LM log-probability
    lm_worse: bool = False  # keep an error only when it lowers the sentence's LM log-probability (CSCD-IME's filter)


def writable_chars(vocab: Iterable[str], tables: SimilarityTables, min_freq: int = 1) -> frozenset[str]:
    """The characters a corruption may write: CJK vocab tokens seen at least min_freq (>= 1) times in the
    corpus. Rarer ones (variants such as 対 or 們) are seldom what a writer slips into."""
    return frozenset(t for t in vocab if is_cjk(t) and tables.frequency(t) >= max(1, min_freq))


class Corrupter:
    """Draws realistic spelling errors into clean sentences.

    ``corrupt(sentence)`` returns ``(source, target, kinds)``: the sentence with errors, the sentence itself,
    and the kind of each error made (one of KINDS; a word swap may change more than one character). The
    single-character draws (``sound_alike``, ``look_alike``, ``random_char``) are usable on their own.
    Without a HomophoneIndex no word errors are made (the other kinds share the mix); ``segment`` gives
    ``(start, word)`` spans to swap, jieba's by default.
    """

    def __init__(
        self,
        tables: SimilarityTables,
        vocab: Iterable[str],
        rng: random.Random,
        homophones: HomophoneIndex | None = None,
        config: CorruptionConfig | None = None,
        segment: Callable[[str], list[tuple[int, str]]] | None = None,
        prior: dict[str, dict[str, float]] | None = None,
        lm_score: Callable[[list[str]], Sequence[float]] | None = None,
        fuzzy: HomophoneIndex | None = None,
        propose: Callable[[str, int], list[tuple[str, float]]] | None = None,
    ) -> None:
        self.tables = tables
        self.lm_score = lm_score  # texts -> their LM log-probabilities (the "lm" kind)
        self.rng = rng
        self.homophones = homophones
        self.fuzzy = fuzzy  # the fuzzy-pinyin index (HomophoneIndex(fuzzy=True)) of the "fuzzy" kind
        self.propose = propose  # (text, position) -> the generator's [(character, probability)] there
        self.lm_rejected: collections.Counter[str] = collections.Counter()  # errors lm_worse undid, by kind
        self.config = cfg = config or CorruptionConfig()
        self.vocab_chars = frozenset(t for t in vocab if is_cjk(t))
        self._segment = segment
        self.prior = prior or {}
        self._kinds = [k for k in KINDS if cfg.mix.get(k, 0) > 0 and (k != "word" or homophones is not None)
                       and (k != "fuzzy" or fuzzy is not None) and (k != "generator" or propose is not None)
                       and (k != "prior" or self.prior) and (k != "lm" or lm_score is not None)]
        if not self._kinds:
            raise ValueError("no error kind is usable (a word-only mix needs a HomophoneIndex, a prior-only mix "
                             "a prior)")
        if cfg.lm_worse and lm_score is None:
            raise ValueError("lm_worse needs an LM (lm_score)")
        self._kind_cw = cum_weights(cfg.mix[k] for k in self._kinds)
        self._count_cw = cum_weights(cfg.error_counts)
        self.writable = writable_chars(self.vocab_chars, tables, cfg.min_char_freq)
        pool = sorted(self.writable, key=lambda c: (-tables.frequency(c), c))
        self._random_pool = pool[: cfg.random_pool]
        self._cache: dict[str, dict[str, tuple[list[str], list[float]] | None]] = {"sound": {}, "shape": {},
                                                                                  "prior": {}, "function": {}}

    def usable(self, ch: str) -> bool:
        """A character we may write into a sentence (see ``writable_chars``)."""
        return ch in self.writable

    # -- single characters

    def _choices(self, kind: str, ch: str) -> tuple[list[str], list[float]] | None:
        cache = self._cache[kind]
        if ch not in cache:
            cfg, t = self.config, self.tables
            if kind == "prior":
                scored = sorted((c, w) for c, w in self.prior.get(ch, {}).items() if c != ch and self.usable(c))
            elif kind == "function":
                scored = sorted((c, w) for c, w in FUNCTION_SLIPS.get(ch, {}).items() if self.usable(c))
            elif kind == "sound":
                own = t.readings(ch)
                scored = [
                    (c, self._heard(own, c, s) ** cfg.sound_power * t.frequency(c) ** cfg.sound_freq_power)
                    for c, s in t.pinyin_neighbours(ch, k=1_000_000)
                    if c != ch and self.usable(c)
                ]
            else:
                scored = [
                    (c, s**cfg.shape_power * t.frequency(c) ** cfg.shape_freq_power)
                    for c, s in t.shape_neighbours(ch, k=1_000_000)
                    if c != ch and s >= cfg.min_shape_sim and self.usable(c)
                ]
            cache[ch] = ([c for c, _ in scored], cum_weights(w for _, w in scored)) if scored else None
        return cache[ch]

    def _heard(self, own: tuple[str, ...], c: str, sim: float) -> float:
        """Sound similarity as an IME user meets it: c's main reading counts fully, its other readings
        (么 yao1, 车 ju1) at secondary_reading times their similarity."""
        main = pinyin_similarity(own, self.tables.readings(c)[:1])
        return max(main, sim * self.config.secondary_reading)

    def _draw(self, kind: str, ch: str) -> str | None:
        choices = self._choices(kind, ch)
        return self.rng.choices(choices[0], cum_weights=choices[1])[0] if choices else None

    def sound_alike(self, ch: str) -> str | None:
        """A same- or similar-sounding character, frequent ones first; None if there is none."""
        return self._draw("sound", ch)

    def look_alike(self, ch: str) -> str | None:
        """A similar-looking character, the most similar ones first; None if there is none."""
        return self._draw("shape", ch)

    def random_char(self, ch: str) -> str | None:
        """A frequent character other than ch, uniformly."""
        if len(self._random_pool) < 2:
            return None
        while True:
            c = self._random_pool[self.rng.randrange(len(self._random_pool))]
            if c != ch:
                return c

    # -- sentences

    def _editable(self, ch: str) -> bool:
        return ch in self.vocab_chars  # the model can only be taught to restore a character it can emit

    def _word_spans(self, sentence: str) -> list[tuple[int, str]]:
        if self._segment is None:
            self._segment = jieba_segmenter()
        return self._segment(sentence)

    def _char_error(self, kind: str, chars: list[str], touched: list[bool]) -> list[int]:
        """One character swapped at a position the kind has a draw for (random and generator: any editable one)."""
        positions = [
            i
            for i, c in enumerate(chars)
            if not touched[i] and self._editable(c) and (kind in ("random", "generator") or self._choices(kind, c))
        ]
        if not positions:
            return []
        i = positions[self.rng.randrange(len(positions))]
        if kind == "random":
            new = self.random_char(chars[i])
        elif kind == "generator":
            new = self._proposed(chars, i)
        else:
            new = self._draw(kind, chars[i])
        if new is None:
            return []
        chars[i] = new
        touched[i] = True
        return [i]

    def _lm_error(self, chars: list[str], touched: list[bool]) -> list[int]:
        """At up to lm_positions places, lm_candidates draws each; the one the LM finds most plausible is
        written if it costs the sentence at most lm_margin nats (else none: the kind gives way to the others)."""
        assert self.lm_score is not None
        cfg, base = self.config, ("prior" if self.prior else "sound")
        positions = [i for i, c in enumerate(chars) if not touched[i] and self._editable(c) and self._choices(base, c)]
        if not positions:
            return []
        tried = []  # (position, character)
        for i in self.rng.sample(positions, min(cfg.lm_positions, len(positions))):
            choices = self._choices(base, chars[i])
            assert choices is not None
            tried += [(i, c) for c in sorted(set(self.rng.choices(choices[0], cum_weights=choices[1],
                                                                  k=cfg.lm_candidates)))]
        text = "".join(chars)
        scores = list(self.lm_score([text] + [text[:i] + c + text[i + 1 :] for i, c in tried]))
        best = max(range(len(tried)), key=lambda k: (scores[k + 1], -k))
        if scores[best + 1] - scores[0] < -cfg.lm_margin:
            return []
        i, c = tried[best]
        chars[i] = c
        touched[i] = True
        return [i]

    def _proposed(self, chars: list[str], i: int) -> str | None:
        """One of the generator's proposals at position i, drawn by its probability."""
        assert self.propose is not None
        proposed = [(c, p) for c, p in self.propose("".join(chars), i) if c != chars[i] and self.usable(c)]
        return self.rng.choices([c for c, _ in proposed], [p for _, p in proposed])[0] if proposed else None

    def _word_error(self, index: HomophoneIndex | None, spans: list[tuple[int, str]], chars: list[str],
                    touched: list[bool]) -> list[int]:
        assert index is not None
        candidates, weights = [], []
        for start, word in spans:
            if not any(touched[start : start + len(word)]) and all(map(self._editable, word)):
                c = index.confusability(word)
                if c > 0:
                    candidates.append((start, word))
                    weights.append(c)
        if not candidates:
            return []
        start, word = self.rng.choices(candidates, weights)[0]
        new = index.sample(word, self.rng)
        if new is None or len(new) != len(word):
            return []
        chars[start : start + len(word)] = new
        touched[start : start + len(word)] = [True] * len(word)  # no second error inside the swapped word
        return [start + j for j in range(len(word)) if new[j] != word[j]]

    def _lm_finds_worse(self, before: list[str], after: list[str]) -> bool:
        assert self.lm_score is not None
        old, new = self.lm_score(["".join(before), "".join(after)])
        return new < old

    def n_errors(self, sentence: str) -> int:
        """How many errors to make: drawn from error_counts, capped by the sentence's CJK length."""
        n = bisect.bisect_right(self._count_cw, self.rng.random() * self._count_cw[-1]) + 1
        cap = max(1, (len(sentence) - len(_NON_CJK.findall(sentence))) // self.config.chars_per_error)
        return min(n, len(self._count_cw), cap)

    def corrupt_positions(
        self, sentence: str, n_errors: int | None = None
    ) -> tuple[str, list[tuple[str, list[int]]]]:
        """(source with errors, [(kind, changed positions)] per error made). A kind that finds no place in
        the sentence gives way to the others in mix order; fewer (or no) errors are made only if none can."""
        n = self.n_errors(sentence) if n_errors is None else n_errors
        chars = list(sentence)
        touched = [False] * len(chars)
        spans: list[tuple[int, str]] | None = None
        errors: list[tuple[str, list[int]]] = []
        for _ in range(n):
            first = self.rng.choices(self._kinds, cum_weights=self._kind_cw)[0]
            for kind in [first] + [k for k in self._kinds if k != first]:
                before, was_touched = chars.copy(), touched.copy()
                if kind in ("word", "fuzzy"):
                    if spans is None:
                        spans = self._word_spans(sentence)
                    changed = self._word_error(self.homophones if kind == "word" else self.fuzzy, spans, chars,
                                               touched)
                elif kind == "lm":
                    changed = self._lm_error(chars, touched)
                else:
                    changed = self._char_error(kind, chars, touched)
                if changed and self.config.lm_worse and not self._lm_finds_worse(before, chars):
                    chars[:], touched[:] = before, was_touched  # the LM reads it as well: perhaps no error at all
                    self.lm_rejected[kind] += 1
                    changed = []
                if changed:
                    errors.append((kind, changed))
                    break
            else:
                break
        source = "".join(chars)
        assert len(source) == len(sentence)
        return source, errors

    def corrupt(self, sentence: str, n_errors: int | None = None) -> tuple[str, str, list[str]]:
        """(source with errors, the sentence, kind of each error made)."""
        source, errors = self.corrupt_positions(sentence, n_errors)
        return source, sentence, [kind for kind, _ in errors]


def jieba_segmenter() -> Callable[[str], list[tuple[int, str]]]:
    """(start, word) of jieba's precise mode without HMM (dictionary words, the only ones with known
    homophones); a word of 3+ characters also yields its dictionary-word prefixes and suffixes, so that
    合法权利 offers 合法 and 权利 (→ 权力) too."""
    import jieba

    jieba.setLogLevel(logging.WARNING)
    jieba.initialize()

    def segment(sentence: str) -> list[tuple[int, str]]:
        spans = []
        for word, start, end in jieba.tokenize(sentence, HMM=False):
            spans.append((start, word))
            if end - start > 2:
                spans += [
                    (start + a, sub)
                    for sub, a, b in jieba.tokenize(word, mode="search", HMM=False)
                    if sub != word and (a == 0 or b == len(word))
                ]
        return spans

    return segment


def lm_scorer(path: Path) -> Callable[[list[str]], Sequence[float]]:
    """Texts -> their character LM log-probabilities, all windows of a call in one vectorised lookup."""
    import numpy as np

    from corrector.evidence.char_lm import CharLM

    lm = CharLM.load(path)

    def score(texts: list[str]) -> Sequence[float]:
        wins = [lm.windows(lm.encode_sentence(t)) for t in texts]
        lp = lm.logprob(np.concatenate(wins)).astype(np.float64)
        ends = np.cumsum([len(w) for w in wins])
        return [float(x) for x in np.add.reduceat(lp, np.r_[0, ends[:-1]])]

    return score
