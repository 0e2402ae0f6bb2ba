"""Character classes, sentence splitting and chunking (corrector/text/chars.py)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corrector.text.chars import CLAUSE_END, SENTENCE_END, chunk_spans, cjk_count, is_cjk, split_sentences

TEXT = st.text(alphabet=st.sampled_from("今天气好我们a b1。！？；!?…\n，、,：:”」）😀"), max_size=300)


@pytest.mark.parametrize("ch", ["今", "氣", "㐀", "鿿", "豈", "\U00020000", "\U0002a700", "\U00030000"])
def test_is_cjk_accepts_han(ch):
    assert is_cjk(ch)


@pytest.mark.parametrize("ch", ["a", "1", "。", "，", "Ａ", "あ", "ア", "한", "ع", "😀", "\u200f", "\x00", "\ud800",
                                "⺀", "⼀", "〇", "", "今天"])
def test_is_cjk_rejects_everything_else(ch):
    assert not is_cjk(ch)


def test_cjk_count():
    assert cjk_count("今天 is 好的！😀") == 4
    assert cjk_count("") == 0


def test_split_sentences_examples():
    assert split_sentences("你好。我很好！") == ["你好。", "我很好！"]
    assert split_sentences("他说：“走吧。”然后走了") == ["他说：“走吧。”", "然后走了"]
    assert split_sentences("真的吗？！是的") == ["真的吗？！", "是的"]
    assert split_sentences("") == []


@settings(max_examples=200, deadline=None)
@given(TEXT)
def test_split_sentences_tiles_text(text):
    pieces = split_sentences(text)
    assert "".join(pieces) == text
    assert all(pieces)
    for p in pieces[:-1]:  # every piece but the last ends a sentence (a closing quote may follow the mark)
        assert any(m in p for m in SENTENCE_END)


@settings(max_examples=300, deadline=None)
@given(TEXT, st.integers(min_value=1, max_value=40))
def test_chunk_spans_tile_and_fit(text, max_chars):
    spans = chunk_spans(text, max_chars)
    assert "".join(text[s:e] for s, e in spans) == text
    assert all(0 < e - s <= max_chars for s, e in spans)
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
    if text:
        assert spans[0][0] == 0 and spans[-1][1] == len(text)
    else:
        assert spans == []


def test_chunk_spans_prefers_sentence_then_clause_cuts():
    text = "我们去公园，散步吧。今天天气很好"
    # a sentence end inside the window wins over a later clause mark
    assert chunk_spans(text, 12) == [(0, 10), (10, 16)]
    # no sentence end in the window: cut after the clause mark
    assert chunk_spans(text, 8) == [(0, 6), (6, 10), (10, 16)]
    # no punctuation at all: cut mid-run
    assert chunk_spans("今天天气很好", 4) == [(0, 4), (4, 6)]
    assert "，" in CLAUSE_END and "。" in SENTENCE_END


def test_chunk_spans_rejects_nonpositive_width():
    with pytest.raises(ValueError):
        chunk_spans("今天", 0)
