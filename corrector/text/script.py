"""Traditional Chinese: the model reads a simplified view of each chunk; its edits go back in the original script.

The networks were trained on simplified text. ``normalise`` is the one step that converts a text between scripts,
made once by ``prepare``: each chunk is converted with OpenCC (``t2s``) character for character (the view has the
chunk's length and only Han characters differ), the text is told simplified or traditional (``simplified_text``),
and in traditional text each character's own simplified form is kept beside the view (``ScriptView.alone``: what
the ``script`` guard compares an edit with, so that a spelling corrector never converts a correct character). The
later stages read these from the prepared chunk. At the end ``restore_edits`` maps each edit back:

- the edit keeps the original character as its source;
- its target is written in traditional script (OpenCC ``s2t`` on the corrected view, so a phrase such
  as 我们 gives 我們), checked to simplify back to what the model chose.

``regional_form`` is the same rule for words in any script: an edit that Taiwan's conversion cannot see
(计画 → 计划) is a regional standard, not a spelling error (``protect_regional_forms``).

A chunk that OpenCC leaves unchanged is simplified already and is corrected as it is.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cache, lru_cache
from typing import Protocol

from corrector.text.chars import is_cjk
from corrector.types import CorrectorError, Edit


class _Converter(Protocol):
    def convert(self, text: str) -> str: ...


CONFIGS = ("t2s", "s2twp", "tw2sp", "s2t")  # every conversion used here, the ones every edit needs first
_converters: dict[str, _Converter] = {}
_lock = threading.Lock()  # one converter is built at a time, by whichever thread asks first


def _converter(config: str) -> _Converter:
    conv = _converters.get(config)
    if conv is None:
        with _lock:
            conv = _converters.get(config)
            if conv is None:
                try:
                    import opencc
                except ImportError:  # pragma: no cover - a base dependency
                    raise CorrectorError("traditional Chinese needs OpenCC: pip install opencc-py") from None
                conv = _converters[config] = opencc.OpenCC(config)
    return conv


@cache
def _changing(config: str) -> frozenset[str] | None:
    """``changing_chars`` of a conversion, read once (only ``t2s``'s is ever asked for)."""
    return changing_chars(_converter(config))


def changing_chars(conv: object) -> frozenset[str] | None:
    """Characters at least one of which a text must hold for ``conv`` to change it: for every dictionary entry
    whose value differs from its key, one character of the key that the entry changes (any character of the key
    when the two differ in length). A text holding none of them is its own conversion, which is what most
    simplified text is, so ``simplified_view`` need not run OpenCC's pure-Python matching on it. Read from the
    converter's dictionaries (opencc-py's tries); None, and no shortcut, where they are not laid out as expected."""
    steps = list(getattr(conv, "_normalization", None) or []) + list(getattr(conv, "_chain", None) or [])
    if not steps:
        return None
    found: set[str] = set()
    todo = list(steps)
    while todo:
        m = todo.pop()
        if hasattr(m, "matchers"):
            todo.extend(m.matchers)
            continue
        root = getattr(m, "root", None)
        if root is None or not hasattr(root, "children"):
            return None
        stack = [(root, "")]
        while stack:
            node, key = stack.pop()
            value = node.value
            if value is not None and value != key:
                if len(value) == len(key):
                    found.add(next(k for k, v in zip(key, value) if k != v))
                else:
                    found.add(key[0])
            stack.extend((child, key + ch) for ch, child in node.children.items())
    return frozenset(found)


def prepare_converters() -> None:
    """Build OpenCC's converters (and ``t2s``'s changing characters) on a background thread (OpenCC reads its
    dictionaries in pure Python: a third of a second) while the caller loads the rest; the first text then finds
    them ready."""
    if not all(c in _converters for c in CONFIGS):
        threading.Thread(target=_build_all, name="opencc-load", daemon=True).start()


def _build_all() -> None:
    try:
        for c in CONFIGS:
            _converter(c)
        _changing("t2s")
    except CorrectorError:  # OpenCC missing: the text that needs it says so
        pass


def _new_lock_in_child() -> None:  # a fork while a converter was being built must not leave the child's lock held
    global _lock
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_lock_in_child)


def to_simplified(text: str) -> str:
    return _converter("t2s").convert(text)


def to_traditional(text: str) -> str:
    return _converter("s2t").convert(text)


@dataclass(frozen=True)
class ScriptView:
    """A chunk (``original``) and what the model reads (``text``, same length); in traditional text also each
    original character simplified by itself (``alone``, same length; empty otherwise)."""

    original: str
    text: str
    alone: str = ""

    @property
    def traditional(self) -> bool:
        return self.text != self.original


def simplified_view(chunk: str) -> ScriptView:
    """The chunk in simplified script, position for position (non-Han characters never change)."""
    if not any(is_cjk(c) for c in chunk):
        return ScriptView(chunk, chunk)
    changing = _changing("t2s")
    if changing is not None and changing.isdisjoint(chunk):
        return ScriptView(chunk, chunk)  # OpenCC would give the chunk back as it is
    converted = to_simplified(chunk)
    if len(converted) != len(chunk):  # a phrase changed length: convert character by character instead
        converted = "".join(_one_char(to_simplified(c), c) for c in chunk)
    view = "".join(s if is_cjk(o) and is_cjk(s) else o for o, s in zip(chunk, converted))
    return ScriptView(chunk, view)


@dataclass(frozen=True)
class Normalised:
    """A text in both scripts, as ``prepare`` makes it once: as written (``original``), the chunks' simplified views
    put together (``simplified``, same length), each chunk's view (``views``, one per span), and whether it is
    simplified text (``mainland``: then a character the two differ at is a stray typo)."""

    original: str
    simplified: str
    views: tuple[ScriptView, ...]
    mainland: bool

    def stray(self, i: int) -> bool:
        """Character ``i`` is a traditional character in simplified text."""
        return self.mainland and self.original[i] != self.simplified[i]


def normalise(text: str, spans: Sequence[tuple[int, int]]) -> Normalised:
    """The text in simplified script, one view per span (``spans`` tile it): the only conversion between scripts
    before the edits go back (``restore_edits``)."""
    views = [simplified_view(text[s:e]) for s, e in spans]
    mainland = simplified_text(text, views)
    if not any(v.traditional for v in views):
        return Normalised(text, text, tuple(views), mainland)
    if not mainland:
        views = [replace(v, alone="".join(map(_alone, v.original))) if v.traditional else v for v in views]
    return Normalised(text, "".join(v.text for v in views), tuple(views), mainland)


@lru_cache(maxsize=65536)
def _alone(char: str) -> str:
    """``char`` in simplified script by itself (itself where OpenCC writes more than one character)."""
    return _one_char(to_simplified(char), char)


def restore_edits(view: ScriptView, edits: list[Edit]) -> list[Edit]:
    """Edits on the simplified view (chunk positions) as edits on the original chunk. None only changes a
    character's script: the ``script`` guard vetoed those in the rounds."""
    if not view.traditional or not edits:
        return edits
    corrected = list(view.text)
    for e in edits:
        corrected[e.position] = e.target
    traditional = to_traditional("".join(corrected))
    aligned = len(traditional) == len(corrected)
    return [Edit(e.position, view.original[e.position],
                 _traditional_form(e.target, traditional[e.position] if aligned else None), e.confidence, e.reason)
            for e in edits]


def regional_form(before: str, after: str) -> bool:
    """Whether ``after`` only writes ``before`` another region's way: OpenCC's conversion to Taiwan's script with
    its phrases (s2twp) gives the same text for both (爱滋 and 艾滋 are both 愛滋, 想像 and 想象 想像), or ``after`` is
    what converting ``before`` to Taiwan's script and back to the mainland's phrases (tw2sp) writes (计画 → 計畫 →
    计划, 网路 → 網路 → 网络). Such an edit is a change of standard, not a spelling fix."""
    if before == after:
        return False
    taiwan = _converter("s2twp").convert(before)
    return taiwan == _converter("s2twp").convert(after) or _converter("tw2sp").convert(taiwan) == after


def simplified_text(text: str, views: list[ScriptView]) -> bool:
    """Whether a text (its chunks' ``views``) is simplified text: at least as many of its characters are
    simplified-only (OpenCC ``s2t`` writes another one for them: 们, 这, 显) as traditional-only (the view changed
    them: 於, 後, 們). Then its traditional characters are stray typos (於 -> 于); otherwise it is traditional text,
    corrected in its own script."""
    traditional = sum(a != b for v in views for a, b in zip(v.original, v.text))
    if traditional == 0:
        return True
    converted = to_traditional(text)
    if len(converted) != len(text):
        converted = "".join(_one_char(to_traditional(c), c) for c in text)
    return sum(a != b and is_cjk(a) for a, b in zip(text, converted)) >= traditional


def traditional_only(char: str) -> bool:
    """A character simplified text never writes: OpenCC's t2s gives another one for it alone (於, 後, 麼; not 著)."""
    return is_cjk(char) and to_simplified(char) != char


def mainland_form(text: str) -> str:
    """``text`` with the mainland's word forms: through Taiwan's script and phrases and back (计画 -> 计划,
    看著 -> 看着, 想像 -> 想象)."""
    return _converter("tw2sp").convert(_converter("s2twp").convert(text))


def _traditional_form(simplified: str, in_context: str | None) -> str:
    """The traditional character for the model's ``simplified`` choice: the one OpenCC wrote in
    context when it simplifies back to it, else the character's own conversion, else unchanged."""
    for cand in (in_context, _one_char(to_traditional(simplified), simplified)):
        if cand is not None and is_cjk(cand) and to_simplified(cand) == simplified:
            return cand
    return simplified


def _one_char(converted: str, fallback: str) -> str:
    return converted if len(converted) == 1 else fallback
