"""Output invariants over many generated inputs, on the tiny bundle's tables over hand-set networks
(tests/fake_networks.py) with settings that force edits.

Whatever the input, the output has its length, every non-CJK character comes back unchanged, and the
only characters that differ are the ones the edits name.
"""

from __future__ import annotations

import random

import pytest
from conftest import SAMPLE
from fake_networks import FakeNetworks, fake_corrector
from hypothesis import given, settings
from hypothesis import strategies as st

from corrector import Correction
from corrector.text.chars import is_cjk, sentence_chunk_spans
from corrector.text.script import simplified_view, to_simplified

TRADITIONAL = "氣國們說話這時來會車電體學麼與為後點認識經濟發現問題東關門開"
ASCII = "".join(chr(c) for c in range(32, 127))
WHITESPACE = " \t\r\n\x0b\x0c\u3000\u00a0\u2028\u2029\u200b"
PUNCTUATION = "，。！？；：、“”‘’「」『』（）《》—·～"
FULL_WIDTH = "ＡＢＣａｂｃ０１２！＂＃％＆＊＋－／＜＝＞＠［］＾＿｛｜｝"
EMOJI = ["😀", "👍🏽", "👨\u200d👩\u200d👧", "🇨🇳", "❤️", "🀄"]
SCRIPTS = "あいうアイウｱｲｳ한국어ㄱالعربيةעבריתΩωЖжéñ"
MARKS = "\u200f\u200e\u202e\u202c\u2067\u2069\ufeff\u0301\u20dd\ufe0f\U000e0100"  # RTL, BOM, combining, VS
CONTROL = "\x00\x01\x07\x08\x1b\x7f\x85\x9f"
SURROGATES = "\ud800\udbff\udc00\udfff"
ODD = "\ufffd\ue000\uffff\U0010fffd⺀⼀〇\U00020000\U0003134a"  # replacement, private use, radicals, rare Han
EXPANDING = "㍿…ﷺ豈"  # NFKC turns each into several tokens or another character

NON_CJK_POOL = list(ASCII + WHITESPACE + PUNCTUATION + FULL_WIDTH + SCRIPTS + MARKS + CONTROL + SURROGATES) + EMOJI

# Pieces, not characters: emoji sequences stay whole. In-vocab Han dominates, so edits really happen.
PIECE = st.one_of(
    st.sampled_from(SAMPLE),
    st.sampled_from(SAMPLE),
    st.sampled_from(TRADITIONAL),
    st.sampled_from(NON_CJK_POOL),
    st.sampled_from(ODD + EXPANDING),
    st.characters(),
)
TEXT = st.lists(PIECE, max_size=150).map("".join)
PLAIN_TEXT = st.lists(st.sampled_from(list(SAMPLE + TRADITIONAL + ASCII + PUNCTUATION + "😀\t\r\n")), max_size=150
                      ).map("".join)


def editable(text: str, max_chars: int = 62) -> set[int]:
    """Positions the tiny model can edit: in-vocab Han characters of each chunk's simplified view
    (a traditional character is read as its simplified form; a lone surrogate never is)."""
    clean = "".join("\ufffd" if "\ud800" <= ch <= "\udfff" else ch for ch in text)
    out: set[int] = set()
    for s, e in sentence_chunk_spans(clean, max_chars):
        out |= {s + i for i, ch in enumerate(simplified_view(clean[s:e]).text) if ch in SAMPLE}
    return out


def check_invariants(text: str, c: Correction) -> None:
    assert c.source == text
    assert len(c.target) == len(text)
    positions = [e.position for e in c.edits]
    assert positions == sorted(set(positions))
    assert [i for i, (a, b) in enumerate(zip(text, c.target)) if a != b] == positions
    for i, ch in enumerate(text):
        if not is_cjk(ch):
            assert c.target[i] == ch
    can_edit = editable(text)
    for e in c.edits:
        assert 0 <= e.position < len(text)
        assert e.source == text[e.position]
        assert e.target != e.source
        assert len(e.source) == len(e.target) == 1 and is_cjk(e.source) and is_cjk(e.target)
        assert e.position in can_edit  # only in-vocab characters (or their simplified form) are editable
        assert to_simplified(e.source) != to_simplified(e.target)  # never a mere script conversion
        assert 0.0 <= e.confidence <= 1.0
        assert e.reason in ("pinyin", "shape", "other")


@settings(max_examples=300, deadline=None)
@given(TEXT)
def test_invariants_on_any_text(fake_forced, text):
    check_invariants(text, fake_forced.correct(text))


@settings(max_examples=150, deadline=None)
@given(PLAIN_TEXT)
def test_every_in_vocab_character_is_edited(fake_forced, text):
    """Not vacuous: with forced settings each in-vocab Han character is edited, nothing else is."""
    c = fake_forced.correct(text)
    check_invariants(text, c)
    assert [e.position for e in c.edits] == sorted(editable(text))


@settings(max_examples=60, deadline=None)
@given(st.lists(TEXT, max_size=6))
def test_batch_invariants(fake_forced, texts):
    out = fake_forced.correct_batch(texts)
    assert len(out) == len(texts)
    for text, c in zip(texts, out):
        check_invariants(text, c)
    if texts:
        assert fake_forced.correct(texts[0]) == fake_forced.correct_batch(texts[:1])[0]


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_protected_words_are_never_edited(fake_forced, data):
    text = data.draw(st.lists(st.sampled_from(SAMPLE + "，。 a"), min_size=1, max_size=120).map("".join))
    start = data.draw(st.integers(0, len(text) - 1))
    word = text[start : start + data.draw(st.integers(1, 6))]
    c = fake_forced.correct(text, protect=[word])
    check_invariants(text, c)
    covered = set()
    at = text.find(word)
    while at >= 0:
        covered.update(range(at, at + len(word)))
        at = text.find(word, at + 1)
    assert start in covered
    assert not covered & {e.position for e in c.edits}
    assert {e.position for e in c.edits} == editable(text) - covered


@pytest.mark.parametrize("text", [
    "", " ", "\n", "\r\n", "\t", "\ud800", "\udfff今", "今\ud800天", "\ud83d\ude00今天",  # a "pair" of lone halves
    "😀", "今天😀天", "，。", "今", "\x00今\x00", "今\u0301天", "豈今", "㍿今天", "……今天", "\u202e今天\u202c",
])
def test_edge_cases(fake_forced, text):
    c = fake_forced.correct(text)
    check_invariants(text, c)
    assert {e.position for e in c.edits} == editable(text)


def test_traditional_characters(fake_forced, fake_tiny_bundle):
    text = "今天天氣很好，我們去公園散步吧。這件事情沒有那麼簡單"
    sure = fake_corrector(fake_tiny_bundle, FakeNetworks(prefer={"气": [("汽", 12.0)]}))
    for fix in (fake_forced, sure):
        check_invariants(text, fix.correct(text))
    # 氣 is read as 气; the generator would write 汽 there, and the edit comes back in the text's own script
    assert [(e.position, e.source, e.target) for e in sure.correct(text).edits] == [(3, "氣", "汽")]
    c = fake_forced.correct(text)
    # traditional characters are read in their simplified form (氣 as 气) and edited in their own script
    assert {e.position for e in c.edits} == editable(text) > {i for i, ch in enumerate(text) if ch in SAMPLE}


def test_hundred_thousand_characters_mostly_not_han(fake_forced):
    """Cheap at any length when little is editable; edits far into the text map back to the right place."""
    text = list(("hello, world! 😀 \u200f\t" * 6000)[:100_000])
    marks = {10: "今", 31_337: "天", 65_000: "气", 99_999: "好"}
    for i, ch in marks.items():
        text[i] = ch
    text = "".join(text)
    c = fake_forced.correct(text)
    check_invariants(text, c)
    assert {e.position for e in c.edits} == set(marks)


@pytest.mark.slow
def test_hundred_thousand_characters(fake_forced):
    rng = random.Random(0)
    pool = list(SAMPLE * 4 + TRADITIONAL + "，。！？\n Hello\t\ud800") + EMOJI
    text = "".join(rng.choices(pool, k=100_000))
    c = fake_forced.correct(text)
    check_invariants(text, c)
    assert c.edits and max(e.position for e in c.edits) > 90_000
