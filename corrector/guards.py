"""Keep-as-written rules ("guards"): each one a name (the setting that turns it on) and the reason ``explain`` gives.

Two kinds, by the stage that applies them:

- *protections* (``prepare``): characters never offered for an edit: the caller's words (``protect``), foreign
  names (``protect_foreign_names``), multi-character dictionary words (``protect_dictionary_words``). Such a
  character is no site at all.
- *vetoes* (``decide``): a site's best edit is not made: it only writes a word another region's way
  (``protect_regional_forms``), it is a pair the ranker got mostly wrong on the real training pairs
  (``veto_unreliable_pairs``), or, in traditional text, it would only change the character's script (``script``,
  always on). The site stays as written; another site may still be edited in a later round.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from corrector.config import CorrectorConfig
from corrector.evidence.foreign_names import foreign_name_positions, name_chars
from corrector.text.script import mainland_form, regional_form
from corrector.types import CorrectorError

REGIONAL_WINDOW = 2  # protect_regional_forms judges an edit on this many characters either side of it


@dataclass(frozen=True)
class Guard:
    name: str  # the setting that turns it on ("script" has none: always on)
    stage: str  # "prepare" (protects characters) or "decide" (vetoes a site's best edit)
    reason: str  # what explain says (a format string for decide guards: {best}, {detail})


PROTECT = Guard("protect", "prepare", "a word the caller protects")
FOREIGN_NAMES = Guard("protect_foreign_names", "prepare", "inside a foreign name")
DICTIONARY_WORDS = Guard("protect_dictionary_words", "prepare", "inside a dictionary word")
REGIONAL_FORMS = Guard("protect_regional_forms", "decide",
                       "kept: {best} would only write the word another region's way (protect_regional_forms)")
UNRELIABLE_PAIRS = Guard("veto_unreliable_pairs", "decide",
                         "kept: {detail} on the real training pairs (veto_unreliable_pairs)")
SCRIPT = Guard("script", "decide", "kept: {best} would only change the character's script")
GUARDS = {g.name: g for g in (PROTECT, FOREIGN_NAMES, DICTIONARY_WORDS, REGIONAL_FORMS, UNRELIABLE_PAIRS, SCRIPT)}


class Protections:
    """The prepare-stage guards over one bundle's tables: which characters of a text no edit may touch, and why.

    ``name_shares``: per character, the share of its corpus occurrences inside dot-joined foreign names
    (``corrector.evidence.foreign_names``)."""

    def __init__(self, name_shares: dict[str, float]):
        self.name_shares = name_shares
        self._names: dict[float, frozenset[str]] = {}

    def name_chars(self, min_share: float) -> frozenset[str]:
        """The characters ``protect_foreign_names`` counts as a foreign name's (empty when 0 or when the bundle
        has no name counts)."""
        if min_share <= 0:
            return frozenset()
        if min_share not in self._names:
            self._names[min_share] = name_chars(self.name_shares, min_share)
        return self._names[min_share]

    def positions(self, text: str, cfg: CorrectorConfig, dictionary: bool = True) -> dict[int, str]:
        """Protected positions of ``text`` -> the name of the first guard that protects each (``dictionary``
        False: without the dictionary-word guard, as for the simplified view of a traditional chunk)."""
        out: dict[int, str] = {}
        rules: list[tuple[Guard, Callable[[], set[int]]]] = [
            (PROTECT, lambda: _word_positions(text, cfg.protect)),
            (FOREIGN_NAMES, lambda: foreign_name_positions(text, names) if names else set()),
            (DICTIONARY_WORDS, lambda: _dictionary_positions(text)
             if dictionary and cfg.protect_dictionary_words else set()),
        ]
        names = self.name_chars(cfg.protect_foreign_names)
        for guard, find in rules:
            for p in sorted(find()):
                out.setdefault(p, guard.name)
        return out


class WordMatcher:
    """Where a list of words occurs in a text (``protect``): built once per list, then one set lookup per position
    and word length, so a dictionary of 100,000 words costs about what ten words do (a scan per word would not)."""

    def __init__(self, words: Iterable[str]):
        by_length: dict[int, set[str]] = {}
        for w in words:
            if w:
                by_length.setdefault(len(w), set()).add(w)
        self.by_length = {n: frozenset(ws) for n, ws in sorted(by_length.items())}

    def positions(self, text: str) -> set[int]:
        """Every position inside an occurrence of a word (occurrences may overlap)."""
        out: set[int] = set()
        for n, words in self.by_length.items():
            for start in range(len(text) - n + 1):
                if text[start : start + n] in words:
                    out.update(range(start, start + n))
        return out


def _word_positions(text: str, words: tuple[str, ...]) -> set[int]:
    return _matcher(words).positions(text) if words and text else set()


@functools.lru_cache(maxsize=8)
def _matcher(words: tuple[str, ...]) -> WordMatcher:
    """The matcher of a settings' word list (a service's dictionary file is matched with one built at its first
    text; a call's own words add a small list)."""
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


def _dictionary_positions(text: str) -> set[int]:
    if not text:
        return set()
    from corrector.evidence.dictionary import tokenizer  # jieba, its cache in a private directory

    out: set[int] = set()
    pos = 0
    for w in tokenizer().lcut(text, HMM=False):
        if len(w) > 1:
            out.update(range(pos, pos + len(w)))
        pos += len(w)
    return out


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


def unreliable_pair(veto: dict[str, tuple[int, int]], source: str, target: str) -> str | None:
    """``veto_unreliable_pairs``: why the edit ``source`` -> ``target`` is not made, or None when it may be."""
    counts = veto.get(source + target)
    if counts is None:
        return None
    right, wrong = counts
    return f"{source}→{target} was right in {right} of its {right + wrong} edits"
