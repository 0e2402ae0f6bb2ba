"""Keep-as-written rules ("guards"): one protocol, ``Guard``, with a hook for each stage that applies guards.

- ``protect`` (``prepare``): the characters of a text no edit may touch: the caller's words (``protect``), the
  document's own terms where the text's segmentation makes them words (``terms``) and the pairs of characters it
  writes side by side again and again (``bigrams``), traditional words in simplified
  text (``protect_traditional_words``), the words of the domain the bundle was adapted to (``protect_domain_words``), foreign names (``protect_foreign_names``),
  multi-character dictionary words (``protect_dictionary_words``). Such a
  character is no site at all.
- ``veto`` (``decide``, in each round): a site's best edit is not made: it would only change the character's script
  in traditional text (``script``, always on), only write a word another region's way (``protect_regional_forms``),
  turn one dictionary word into another below a confidence (``swap_threshold``), or it is a pair the ranker got
  mostly wrong on the real training pairs (``veto_unreliable_pairs``). The site
  stays as written, counts towards no ``max_edits`` and re-scores no neighbour; another site may still be edited
  in a later round.

``GUARDS`` lists them in order: a character or a site is kept by the first guard that keeps it. ``prepare`` loops
over every guard's ``protect`` (``Protections.positions``), ``decide`` over every guard's ``veto`` (``veto``); a
guard implements the hooks it needs. A new rule is one subclass of ``Guard`` in ``GUARDS`` (and its setting, if
it has one, declared in ``corrector/config.py``).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from corrector.config import CorrectorConfig, Words
from corrector.evidence.foreign_names import foreign_name_positions, name_chars
from corrector.stages import Chunk
from corrector.text.chars import is_cjk
from corrector.text.script import Normalised, mainland_form, regional_form, traditional_only
from corrector.types import CorrectorError

REGIONAL_WINDOW = 2  # protect_regional_forms judges an edit on this many characters either side of it


@dataclass(frozen=True)
class Proposal:
    """A site's best edit in a round, as the ``veto`` hooks see it: ``target`` at ``position`` of ``chunk``, the
    chunk's edits made in earlier rounds (``made``: position -> target), the ranker's record of each pair on the
    real training pairs (``record``: source + target -> (right, wrong)) and the edit's confidence."""

    chunk: Chunk
    position: int
    target: str
    made: Mapping[int, str]
    record: Mapping[str, tuple[int, int]]
    confidence: float = 1.0  # the edit's calibrated confidence

    @property
    def source(self) -> str:
        return self.chunk.text[self.position]

    def corrected(self) -> list[str]:
        """The characters of the chunk (as the model reads it) with the edits of earlier rounds."""
        text = list(self.chunk.text)
        for i, target in self.made.items():
            text[i] = target
        return text


class Guard:
    """A keep-as-written rule: its name (the setting that turns it on; ``script`` has none), the reason ``explain``
    gives (for a veto, a format string of ``{best}`` and ``{detail}``), and its hooks, each keeping nothing unless
    the guard implements it."""

    name: ClassVar[str]
    reason: ClassVar[str]
    as_written: ClassVar[bool] = False  # protect also reads simplified text as written (see Protections.positions)
    simplified_only: ClassVar[bool] = False  # protect reads simplified text only (traditional text is not its case)

    def protect(self, text: str, cfg: CorrectorConfig, tables: Protections) -> set[int]:
        """``prepare``: the positions of ``text`` (one reading of it) that no edit may touch."""
        return set()

    def veto(self, edit: Proposal, cfg: CorrectorConfig) -> str | None:
        """``decide``: why the edit is not made (its detail; "" when the reason needs none), or None when it may be."""
        return None


class CallerWords(Guard):
    name = "protect"
    reason = "a word the caller protects"
    as_written = True

    def protect(self, text: str, cfg: CorrectorConfig, tables: Protections) -> set[int]:
        if not (cfg.protect and text):
            return set()
        parts = cfg.protect.parts if isinstance(cfg.protect, Words) else (cfg.protect,)
        out: set[int] = set()
        for words in parts:  # the configured list and a call's own, each matched by its own matcher
            out |= _matcher_of(words).positions(text)
        return out


class Terms(Guard):
    name = "terms"
    reason = "a term the document writes again and again"
    as_written = True

    def protect(self, text: str, cfg: CorrectorConfig, tables: Protections) -> set[int]:
        if not (cfg.terms and text):
            return set()
        from corrector.evidence.terms import words

        matcher = _matcher_of(cfg.terms)
        out: set[int] = set()
        for start, w in words(text):
            if matcher.has(w):
                out.update(range(start, start + len(w)))
        return out


class Bigrams(Guard):
    name = "bigrams"
    reason = "two characters the document writes side by side again and again"
    as_written = True

    def protect(self, text: str, cfg: CorrectorConfig, tables: Protections) -> set[int]:
        if not (cfg.bigrams and text):
            return set()
        return _matcher_of(cfg.bigrams).positions(text)


class DomainWords(Guard):
    name = "protect_domain_words"
    reason = "a word of the bundle's domain"
    as_written = True

    def protect(self, text: str, cfg: CorrectorConfig, tables: Protections) -> set[int]:
        if not (cfg.protect_domain_words and text and tables.domain_words):
            return set()
        return _matcher_of(tables.domain_words).positions(text)  # built once: the bundle's list, the same tuple


class ForeignNames(Guard):
    name = "protect_foreign_names"
    reason = "inside a foreign name"

    def protect(self, text: str, cfg: CorrectorConfig, tables: Protections) -> set[int]:
        names = tables.name_chars(cfg.protect_foreign_names)
        return foreign_name_positions(text, names) if names else set()


class DictionaryWords(Guard):
    name = "protect_dictionary_words"
    reason = "inside a dictionary word"

    def protect(self, text: str, cfg: CorrectorConfig, tables: Protections) -> set[int]:
        if not (cfg.protect_dictionary_words and text):
            return set()
        from corrector.evidence.dictionary import tokenizer  # jieba, its cache in a private directory

        out: set[int] = set()
        pos = 0
        for w in tokenizer().lcut(text, HMM=False):
            if len(w) > 1:
                out.update(range(pos, pos + len(w)))
            pos += len(w)
        return out


class TraditionalWords(Guard):
    name = "protect_traditional_words"
    reason = "written in traditional script on purpose"
    as_written = True
    simplified_only = True

    def protect(self, text: str, cfg: CorrectorConfig, tables: Protections) -> set[int]:
        """In simplified text, traditional characters written on purpose: two or more in a row (a name or a
        quotation in its own script: 演算法筆記, 「資訊」), any in a text with kana (Japanese: 日本情報オリンピック),
        and any in a word of at most ``QUOTED_WORD`` characters that a quotation or a parenthesis holds alone or
        beside other scripts (“台灣” → “台湾”, （予選）, （本選/JOI Final）: a form quoted as such). A lone one among
        simplified characters stays a slip of script (客戶端, （推荐使用客戶端））."""
        if not (cfg.protect_traditional_words and text):
            return set()
        marked = [traditional_only(c) for c in text]
        if not any(marked):
            return set()
        if any("\u3040" <= c <= "\u30ff" for c in text):
            return {i for i, m in enumerate(marked) if m}
        out: set[int] = set()
        start = 0
        for i, m in enumerate([*marked, False]):
            if not m:
                if i - start >= 2:
                    out.update(range(start, i))
                start = i + 1
        for lo, hi in quoted_spans(text):
            run = lo
            for i in range(lo, hi + 1):
                if i == hi or not is_cjk(text[i]):
                    if 0 < i - run <= QUOTED_WORD:
                        out.update(k for k in range(run, i) if marked[k])
                    run = i + 1
        return out


QUOTES = {"“": "”", "「": "」", "『": "』", "（": "）", "(": ")", "《": "》", "\"": "\"", "‘": "’"}
QUOTED_CHARS = 20  # the most characters between a quotation's marks (or a parenthesis') read for quoted forms
QUOTED_WORD = 4  # the longest run of Chinese characters there read as one form quoted as such


def quoted_spans(text: str) -> Iterable[tuple[int, int]]:
    """(start, end) of the text inside each pair of quotation marks or parentheses (``QUOTES``) holding at most
    ``QUOTED_CHARS`` characters and no other opening mark."""
    i = 0
    while i < len(text):
        close = QUOTES.get(text[i])
        if close is not None:
            end = text.find(close, i + 1, i + 2 + QUOTED_CHARS)
            if end > i + 1 and not any(c in QUOTES for c in text[i + 1:end]):
                yield i + 1, end
                i = end
        i += 1


class RegionalForms(Guard):
    name = "protect_regional_forms"
    reason = "kept: {best} would only write the word another region's way (protect_regional_forms)"

    def veto(self, edit: Proposal, cfg: CorrectorConfig) -> str | None:
        if cfg.protect_regional_forms and regional_edit(edit.corrected(), edit.position, edit.target,
                                                        edit.chunk.mainland):
            return ""
        return None


class WordSwaps(Guard):
    name = "swap_threshold"
    reason = "kept: {detail}"

    def veto(self, edit: Proposal, cfg: CorrectorConfig) -> str | None:
        """An edit below ``swap_threshold`` that turns one dictionary word into another: the word holding the
        position as jieba segments the corrected characters around it (two characters or more), and the same span
        as written, both in jieba's dictionary."""
        if edit.confidence >= cfg.swap_threshold:
            return None
        swap = word_swap(edit.corrected(), edit.position, edit.target)
        if swap is None:
            return None
        return f"{swap[0]} and {swap[1]} are both words (confidence {edit.confidence:.2f} < {cfg.swap_threshold})"


def word_swap(text: list[str], i: int, target: str) -> tuple[str, str] | None:
    """(the word as written, the word ``target`` at ``i`` makes) when both are dictionary words, else None."""
    from corrector.evidence.dictionary import segment_around, tokenizer

    written = "".join(text)
    corrected = written[:i] + target + written[i + 1:]
    _, word, _, start = segment_around(corrected, i)
    if len(word) < 2:
        return None
    before = written[start:start + len(word)]
    freq = tokenizer().FREQ
    return (before, word) if freq.get(before, 0) > 0 and freq.get(word, 0) > 0 else None


class UnreliablePairs(Guard):
    name = "veto_unreliable_pairs"
    reason = "kept: {detail} on the real training pairs (veto_unreliable_pairs)"

    def veto(self, edit: Proposal, cfg: CorrectorConfig) -> str | None:
        return unreliable_pair(edit.record, edit.source, edit.target) if cfg.veto_unreliable_pairs else None


class Script(Guard):
    name = "script"
    reason = "kept: {best} would only change the character's script"

    def veto(self, edit: Proposal, cfg: CorrectorConfig) -> str | None:
        """In traditional text, an edit whose target is the character as written or its own simplified form (乾 read
        as 干 in 乾隆, 著 read as 着 in 看著: writing 干 or 著 there converts, it corrects nothing)."""
        view, i = edit.chunk.view, edit.position
        if view is not None and not edit.chunk.mainland and edit.target in (view.original[i], view.alone[i]):
            return ""
        return None


GUARDS: tuple[Guard, ...] = (CallerWords(), Terms(), Bigrams(), DomainWords(), ForeignNames(), DictionaryWords(),
                             TraditionalWords(), RegionalForms(), WordSwaps(), UnreliablePairs(), Script())
NAMED: dict[str, Guard] = {g.name: g for g in GUARDS}


def veto(edit: Proposal, cfg: CorrectorConfig) -> tuple[str, str] | None:
    """(the name of the first guard that vetoes ``edit``, its detail), or None when the edit may be made."""
    for guard in GUARDS:
        detail = guard.veto(edit, cfg)
        if detail is not None:
            return guard.name, detail
    return None


class Protections:
    """The ``protect`` hooks over one bundle's tables: which characters of a text no edit may touch, and why.

    ``name_shares``: per character, the share of its corpus occurrences inside dot-joined foreign names
    (``corrector.evidence.foreign_names``); ``domain_words``: the bundle's domain words (``DOMAIN_WORDS``)."""

    def __init__(self, name_shares: dict[str, float], domain_words: tuple[str, ...] = ()):
        self.name_shares = name_shares
        self.domain_words = domain_words
        self._names: dict[float, frozenset[str]] = {}

    def name_chars(self, min_share: float) -> frozenset[str]:
        """The characters ``protect_foreign_names`` counts as a foreign name's (empty when 0 or when the bundle
        has no name counts)."""
        if min_share <= 0:
            return frozenset()
        if min_share not in self._names:
            self._names[min_share] = name_chars(self.name_shares, min_share)
        return self._names[min_share]

    def positions(self, text: Normalised, cfg: CorrectorConfig) -> dict[int, str]:
        """Protected positions of ``text`` -> the name of the first guard that protects each. Every guard reads the
        text as it should be written (its simplified view), traditional text also as written; in simplified text a
        stray traditional character is read only as written, and only by the guards that read as written (the
        caller's words), so the script rule still sees it."""
        out: dict[int, str] = {}
        for guard in GUARDS:
            for p in sorted(self._found(text, guard, cfg)):
                out.setdefault(p, guard.name)
        return out

    def _found(self, text: Normalised, guard: Guard, cfg: CorrectorConfig) -> set[int]:
        """What ``guard`` protects in the readings of ``text`` it judges."""
        if guard.simplified_only and (not text.mainland or text.simplified == text.original):
            return set()  # traditional text, or simplified text with no traditional character in it
        if text.simplified == text.original:
            return guard.protect(text.original, cfg, self)
        found = {p for p in guard.protect(text.simplified, cfg, self) if not text.stray(p)}
        if guard.as_written or not text.mainland:
            found |= guard.protect(text.original, cfg, self)
        return found


class WordMatcher:
    """Where a list of words occurs in a text (``protect``): built once per list, then one set lookup per position
    and word length, so a dictionary of 100,000 words costs about what ten words do (a scan per word would not)."""

    def __init__(self, words: Iterable[str]):
        by_length: dict[int, set[str]] = {}
        for w in words:
            if w:
                by_length.setdefault(len(w), set()).add(w)
        self.by_length = {n: frozenset(ws) for n, ws in sorted(by_length.items())}

    def has(self, word: str) -> bool:
        return word in self.by_length.get(len(word), ())

    def positions(self, text: str) -> set[int]:
        """Every position inside an occurrence of a word (occurrences may overlap)."""
        out: set[int] = set()
        for n, words in self.by_length.items():
            for start in range(len(text) - n + 1):
                if text[start : start + n] in words:
                    out.update(range(start, start + n))
        return out


SMALL_LIST = 1000  # word lists up to this long are cached by their words; longer ones (dictionaries) by identity
_large: dict[int, tuple[tuple[str, ...], WordMatcher]] = {}
_large_lock = threading.Lock()


def _matcher_of(words: tuple[str, ...]) -> WordMatcher:
    """The matcher of one word list. A call's own words (short) are cached by their words. A dictionary (long: the
    configured words of a Corrector or a service, the same tuple for every call) by the tuple itself, so that it
    is neither hashed nor built again per text."""
    if len(words) <= SMALL_LIST:
        return _small_matcher(tuple(words))
    with _large_lock:
        hit = _large.get(id(words))
        if hit is not None and hit[0] is words:
            return hit[1]
    matcher = WordMatcher(words)
    with _large_lock:
        if len(_large) >= 8:
            _large.pop(next(iter(_large)))
        _large[id(words)] = (words, matcher)  # the tuple is kept: its id cannot be reused while it is here
    return matcher


@functools.lru_cache(maxsize=64)
def _small_matcher(words: tuple[str, ...]) -> WordMatcher:
    return WordMatcher(words)


def read_word_file(path: str | Path) -> tuple[str, ...]:
    """Protected words from a UTF-8 file, one a line (blank lines and lines starting with # skipped), in order,
    without repeats. A missing or unreadable file is a CorrectorError naming it."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise CorrectorError(f"cannot read the word file {path}: {getattr(e, 'strerror', None) or e}") from None
    words = (line.strip() for line in text.splitlines())
    return tuple(dict.fromkeys(w for w in words if w and not w.startswith("#")))


def regional_edit(text: list[str], i: int, target: str, mainland: bool = False) -> bool:
    """``protect_regional_forms``: whether writing ``target`` at ``i`` of ``text`` (the chunk as corrected so far)
    only changes the regional form of its word, judged on the characters either side. In simplified (``mainland``)
    text an edit to the mainland's form is a fix, not a change of standard (计画 -> 计划, 看著 -> 看着)."""
    lo, hi = max(0, i - REGIONAL_WINDOW), i + REGIONAL_WINDOW + 1
    before = "".join(text[lo:hi])
    after = list(text)
    after[i] = target
    window = "".join(after[lo:hi])
    return regional_form(before, window) and not (mainland and mainland_form(before) == window)


def unreliable_pair(veto: Mapping[str, tuple[int, int]], source: str, target: str) -> str | None:
    """``veto_unreliable_pairs``: why the edit ``source`` -> ``target`` is not made, or None when it may be."""
    counts = veto.get(source + target)
    if counts is None:
        return None
    right, wrong = counts
    return f"{source}→{target} was right in {right} of its {right + wrong} edits"
