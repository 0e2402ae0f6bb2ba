"""Decoding settings, each declared once: name, type, default, bounds and doc, as a field of ``CorrectorConfig``.

Everything else derives from these fields: validation here (``check``), the CLI's flags, ``--set`` and its settings
list (``corrector/cli/options.py``), the service's request schema (``service/schemas.py``), and the settings table of
the docs (``settings_table``). ``in_force`` is the one place the settings in force are worked out.
A bundle's manifest carries tuned defaults (``corrector_defaults``); callers override any setting per call.
"""

from __future__ import annotations

import itertools
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

REQUEST = "request"  # a setting a request may set (the service's schema has it)
SERVER = "server"  # a resource setting only the server's operator sets


def setting(default: Any, doc: str, *, lo: float | None = None, hi: float | None = None, who: str = REQUEST) -> Any:
    """A CorrectorConfig field: its default, what it does, its bounds (inclusive) and who may set it."""
    meta = {"doc": doc, "lo": lo, "hi": hi, "who": who}
    if isinstance(default, tuple):
        return field(default_factory=lambda: default, metadata=meta)
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class CorrectorConfig:
    threshold: float | None = setting(
        None, "apply an edit when its confidence (the calibrated probability each edit reports) is above this; unset: "
        "the bundle's, with the LM or without", lo=0.0, hi=1.0)
    use_lm: bool = setting(True, "score candidates with the bundle's character n-gram LM (false: the networks only)")
    shortlist: int = setting(8, "candidates per character that get the full scoring (LM, words)", lo=1, hi=1000)
    top_k: int = setting(10, "the generator's most probable characters that join each character's candidates",
                         lo=0, hi=1000)
    rtd_floor: float = setting(
        0.0, "look at a character only when the discriminator's P(replaced) there reaches this (elsewhere the "
        "generator is not run); a stray traditional character in simplified text is always looked at; 0: every "
        "character", lo=0.0, hi=1.0)
    max_edits: int = setting(0, "most edits per sentence, the most confident first; 0: no limit", lo=0, hi=1_000_000)
    protect_dictionary_words: bool = setting(
        False, "never edit inside a multi-character jieba word (a hard block; by default dictionary words are one "
        "feature among others)")
    protect_domain_words: bool = setting(
        True, "never edit inside a word of the bundle's domain word list (the frequent new words of the text a "
        "bundle was adapted to: corrector adapt)")
    protect_foreign_names: float = setting(
        0.0, "never edit inside a run of 3 or more characters that the corpus writes inside dot-joined foreign names "
        "at least this share of the time (柯林顿, 哈玛斯); 0: off", lo=0.0, hi=1.0)
    protect_traditional_words: bool = setting(
        False, "in simplified text, never edit traditional characters written on purpose: two or more in a row (a "
        "name or a quotation in its own script: 演算法筆記), or any in a text with kana (Japanese); a lone one stays a "
        "slip of script (客戶端 -> 客户端); python -m corrector lint turns it on")
    protect_regional_forms: bool = setting(
        True, "never make an edit that only writes a word another region's way (计划/计画, 艾滋/爱滋); in simplified "
        "text an edit to the mainland's form is made")
    swap_threshold: float = setting(
        0.0, "the confidence an edit needs when the word it makes and the word as written are both dictionary words "
        "(适用 -> 使用, 小节 -> 小姐: correct, edited text writes either on purpose far more often than it slips); 0: "
        "the threshold alone; python -m corrector lint sets it", lo=0.0, hi=1.0)
    veto_unreliable_pairs: bool = setting(
        True, "never make an edit a → b that the bundle's ranker got wrong most of the time on the real training "
        "pairs (甚→什 in Taiwan-style text)")
    batch_size: int = setting(32, "chunks per ONNX call: the corrector cuts whatever it is given into calls of "
                              "similar length (the service's max_batch_size is how many chunks it gives at once)",
                              lo=1, hi=4096, who=SERVER)
    protect: tuple[str, ...] = setting((), "words never edited inside (a call's words add to the configured ones)")
    terms: tuple[str, ...] = setting(
        (), "the document's own terms (words its author writes again and again: corrector.evidence.terms): never "
        "edited inside where the text's segmentation makes them a word")
    bigrams: tuple[str, ...] = setting(
        (), "two characters the document writes side by side again and again (corrector.evidence.terms): never "
        "edited where they stand together")
    confusions: tuple[tuple[str, str], ...] = setting(
        (), "[A, B] pairs of single characters: B is always a candidate for A")

    @classmethod
    def from_dict(cls, d: dict) -> CorrectorConfig:
        return cls().with_overrides(**d)

    def with_overrides(self, **kw: Any) -> CorrectorConfig:
        """A copy with ``kw`` applied (None leaves a setting as it is); ValueError names a bad one."""
        unknown = set(kw) - set(KINDS)
        if unknown:
            raise ValueError(f"unknown corrector setting(s): {', '.join(sorted(unknown))}")
        clean = {k: check(k, v) for k, v in kw.items() if v is not None}
        return replace(self, **clean) if clean else self

    def to_dict(self) -> dict:
        return asdict(self)


def _kind(hint: Any) -> Any:
    """The setting's value type: float, int, bool, or tuple for the two lists (``X | None`` gives X)."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if typing.get_origin(hint) is tuple or hint is tuple:
        return tuple
    if args and typing.get_origin(hint) is not None and typing.get_origin(hint) is not tuple:
        return _kind(args[0])
    return hint


_HINTS = typing.get_type_hints(CorrectorConfig)
SETTINGS = {f.name: f for f in fields(CorrectorConfig)}  # name -> its declaration (a dataclass Field)
KINDS: dict[str, Any] = {name: _kind(_HINTS[name]) for name in SETTINGS}
WORD_LISTS = ("protect", "terms", "bigrams")  # the settings that are lists of words
OPTIONAL = frozenset(name for name in SETTINGS if type(None) in typing.get_args(_HINTS[name]))


def doc(name: str) -> str:
    return str(SETTINGS[name].metadata["doc"])


def bounds(name: str) -> tuple[float | None, float | None]:
    meta = SETTINGS[name].metadata
    return meta["lo"], meta["hi"]


def request_settings() -> list[str]:
    """The settings a request may set, in declaration order."""
    return [name for name, f in SETTINGS.items() if f.metadata["who"] == REQUEST]


def check(name: str, value: Any) -> Any:
    """``value`` as setting ``name`` holds it, its type and bounds checked (ValueError naming the setting): ints pass
    as floats, a whole float as an int, nothing else converts; ``protect`` takes one word or a list of them."""
    if name in WORD_LISTS:
        if isinstance(value, str):
            return (value,)  # one word, not its characters
        if not all(isinstance(w, str) for w in value):
            raise ValueError(f"{name} must be a list of words")
        if name == "bigrams" and not all(len(w) == 2 for w in value):
            raise ValueError(f"bigrams must be two characters each, got {next(w for w in value if len(w) != 2)!r}")
        return tuple(value)
    if name == "confusions":
        pairs = tuple((a, b) for a, b in value)
        for a, b in pairs:
            if not (isinstance(a, str) and isinstance(b, str) and len(a) == 1 and len(b) == 1):
                raise ValueError(f"confusion pairs are single characters, got {a!r} -> {b!r}")
        return pairs
    kind = KINDS[name]
    if kind is bool:
        if not isinstance(value, bool):
            raise ValueError(f"{name} must be true or false, got {value!r}")
        return value
    if kind is int:
        if isinstance(value, float) and value.is_integer():
            value = int(value)  # 3.0 is the integer 3, as in JSON Schema
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{name} must be an integer, got {value!r}")
    elif isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be a number, got {value!r}")
    else:
        value = float(value)
    lo, hi = bounds(name)
    if (lo is not None and not value >= lo) or (hi is not None and not value <= hi):  # NaN is outside too
        raise ValueError(f"{name} must be within {_range(name)}, got {value}")
    return value


def _range(name: str) -> str:
    ends = [x for x in bounds(name) if x is not None]
    return "[" + ", ".join(str(int(x)) if float(x).is_integer() else f"{x:g}" for x in ends) + "]"


# settings that older bundles' manifests still carry: the earlier hand-set decoder's, which the ranker replaced,
# and protect_kept_words, a guard the ranker's kept_word feature made unnecessary (docs/experiments/2026-11-guards.md)
RETIRED_SETTINGS = frozenset({"mask_suspects", "mask_threshold", "min_similarity", "min_shape_similarity",
                              "sim_weight", "freq_weight", "margin", "confusion_bonus", "verify", "verify_threshold",
                              "protect_kept_words"})


class Words(Sequence[str]):
    """``protect``'s words in force for a call that adds its own: the lists it joins, the configured words (a
    dictionary of 100,000, say) and then the call's, kept as they are (``parts``), never copied into one: a call's
    few words cost what a call without a dictionary costs. It reads as one sequence of words (and equals the
    tuple of them); each list gets its own matcher, built once (``corrector.guards.CallerWords``)."""

    __slots__ = ("_flat", "parts")
    parts: tuple[tuple[str, ...], ...]

    def __init__(self, *parts: Sequence[str]) -> None:
        self.parts = tuple(q for p in parts for q in (p.parts if isinstance(p, Words) else (tuple(p),)) if q)
        self._flat: tuple[str, ...] | None = None

    def _all(self) -> tuple[str, ...]:
        if self._flat is None:
            self._flat = tuple(itertools.chain.from_iterable(self.parts))
        return self._flat

    def __len__(self) -> int:
        return sum(map(len, self.parts))

    def __getitem__(self, i):  # type: ignore[override]
        return self._all()[i]

    def __iter__(self) -> Iterator[str]:
        return itertools.chain.from_iterable(self.parts)

    def __contains__(self, word: object) -> bool:
        return any(word in p for p in self.parts)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, (tuple, Words)) and self._all() == tuple(other)

    def __hash__(self) -> int:
        return hash(self._all())

    def __repr__(self) -> str:
        return repr(self._all())


def in_force(bundle_defaults: Mapping[str, Any] | None = None, ranker_shortlist: Any = None,
             load: Mapping[str, Any] | None = None, call: Mapping[str, Any] | None = None, *,
             loaded: CorrectorConfig | None = None, thresholds: Callable[[bool], float] | None = None,
             has_lm: bool = True) -> CorrectorConfig:
    """The settings in force, the one place they are worked out (``Corrector.load`` and each of its calls, the CLI's
    ``settings`` list, the service's start-up check and its cost of a request), in this order: the declarations
    above; the bundle's tuned defaults (those the decoder retired ignored); the shortlist size its ranker was chosen
    with where the bundle names none; the load's settings; the call's (a call's ``protect`` words add to the
    others'). ``loaded``: the first four already applied (a Corrector's ``config``), so only ``call`` is. A None
    value leaves a setting as it is; ValueError names a bad one.

    ``thresholds``: the bundle's confidence threshold for decoding with the LM (True) or without it (its ranker's
    ``threshold_for``), which fills a threshold nobody set once the rest is in force, by ``use_lm`` and ``has_lm``
    (whether the bundle has an LM): the threshold a call decides with, on the confidence scale users see. A
    Corrector's own ``config`` leaves it unset, so that a call's ``use_lm`` picks it."""
    if loaded is None:
        tuned = {k: v for k, v in (bundle_defaults or {}).items() if k not in RETIRED_SETTINGS}
        if "shortlist" not in tuned and ranker_shortlist is not None:
            tuned["shortlist"] = int(ranker_shortlist)
        loaded = CorrectorConfig().with_overrides(**{**tuned, **(load or {})})
    elif bundle_defaults or ranker_shortlist is not None or load:
        raise TypeError("in_force: 'loaded' stands for the bundle's and the load's settings; pass one or the other")
    cfg = loaded.with_overrides(**(call or {}))
    if call and call.get("protect") is not None:
        cfg = replace(cfg, protect=Words(loaded.protect, cfg.protect))  # type: ignore[arg-type]  # reads as the tuple
    if thresholds is not None and cfg.threshold is None:
        cfg = replace(cfg, threshold=float(thresholds(cfg.use_lm and has_lm)))
    return cfg


def settings_table(in_force: dict[str, Any] | None = None) -> str:
    """A markdown table of every setting: name, type, default (``in_force``: a bundle's values in force), doc."""
    defaults = {**CorrectorConfig().to_dict(), **(in_force or {})}
    rows = ["| setting | type | default | what it does |", "|---|---|---|---|"]
    for name in SETTINGS:
        rows.append(f"| `{name}` | {kind_text(name)} | {shown(defaults[name])} | {doc(name)} |")
    return "\n".join(rows)


def kind_text(name: str) -> str:
    """A setting's type in words, with its bounds: ``number in [0, 1]``, ``integer in [1, 1000]``, ``boolean``."""
    kind = {float: "number", int: "integer", bool: "boolean", tuple: "list"}[KINDS[name]]
    return kind + (f" in {_range(name)}" if bounds(name)[0] is not None else "")


def shown(value: Any) -> str:
    """A setting's value as the settings table and the CLI's help write it: unset, [], true, 0.5."""
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return str(value).lower()
    return "[]" if value == () else str(value)


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
