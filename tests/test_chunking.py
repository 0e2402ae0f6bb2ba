"""Chunking never changes a decision: a sentence gets the same edits alone and inside a long text (issue 13, point 2)."""

from __future__ import annotations

import random

from conftest import FORCE_EDITS, SAMPLE
from hypothesis import given, settings
from hypothesis import strategies as st

from corrector import Corrector
from corrector.text.chars import SENTENCE_END, chunk_spans, sentence_chunk_spans, split_sentences

BODY = st.text(alphabet=st.sampled_from(SAMPLE[:30] + "，、a1 😀"), min_size=1, max_size=80)
SENTENCE = st.tuples(BODY, st.sampled_from(list(SENTENCE_END) + ["。”", "！！"])).map("".join)


@settings(max_examples=200, deadline=None)
@given(sentences=st.lists(SENTENCE, min_size=1, max_size=8), tail=st.sampled_from(["", "没有句号"]),
       max_chars=st.integers(1, 70))
def test_a_sentence_is_chunked_the_same_alone_and_in_a_text(sentences, tail, max_chars):
    text = "".join(sentences) + tail
    spans = sentence_chunk_spans(text, max_chars)
    assert "".join(text[s:e] for s, e in spans) == text
    assert all(0 < e - s <= max_chars for s, e in spans)
    want, at = [], 0
    for sentence in split_sentences(text):
        want += [(at + s, at + e) for s, e in chunk_spans(sentence, max_chars)]
        at += len(sentence)
    assert spans == want
    starts, at = [], 0
    for s in sentences:
        starts.append(at)
        at += len(s)
    assert set(starts) <= {s for s, _ in spans}  # every sentence starts a chunk


def test_sentence_chunk_spans_examples():
    assert sentence_chunk_spans("你好。我很好！再见", 62) == [(0, 3), (3, 7), (7, 9)]
    assert sentence_chunk_spans("我们去公园，散步吧。今天", 4) == [(0, 4), (4, 6), (6, 10), (10, 12)]
    assert sentence_chunk_spans("", 5) == []


def test_a_sentence_gets_the_same_edits_alone_and_inside_a_long_text(tiny_bundle):
    fix = Corrector.load(tiny_bundle, device="cpu", **FORCE_EDITS)
    sentences = ["今天天汽很好，我们去公园散步吧。", "他已经知道自己错了！", "未来末日候车侯爵？", "拔草拨打电话精致精制。",
                 "中国人民银行在北京，上海的张三李四也来了；", "候车的侯爵拔草，" * 12 + "。"]  # the last: longer than a chunk
    rng = random.Random(0)
    order = [rng.randrange(len(sentences)) for _ in range(150)]
    text = "".join(sentences[i] for i in order)
    assert len(text) > 20 * (fix.max_tokens - 2)
    alone = [[(e.position, e.source, e.target) for e in fix.correct(s).edits] for s in sentences]
    assert all(alone)
    whole = fix.correct(text)
    at = 0
    for i in order:
        n = len(sentences[i])
        got = [(e.position - at, e.source, e.target) for e in whole.edits if at <= e.position < at + n]
        assert got == alone[i], sentences[i]
        at += n
