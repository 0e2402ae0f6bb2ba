"""``Corrector`` behaviour on the tiny random bundle: user controls, explain, batching, threads, settings."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import FORCE_EDITS, SAMPLE

from corrector import Correction, Corrector, CorrectorConfig, CorrectorError, Edit
from corrector.config import parse_confusions
from corrector.text import is_cjk, split_sentences

SENTENCES = ["今天天汽很好", "我们去公园散步吧。他已经知道自己错了！", "中国人民银行在北京，张三和李四在上海。",
             "hello 未来，world 1234 候车", "", "😀 拨打电话"]


def in_vocab_cjk(text: str) -> list[int]:
    return [i for i, c in enumerate(text) if c in SAMPLE]


def check(c: Correction) -> None:
    """The output contract: same length, only edited characters change, each edit describes its change."""
    assert len(c.target) == len(c.source)
    assert [i for i, (a, b) in enumerate(zip(c.source, c.target)) if a != b] == [e.position for e in c.edits]
    for e in c.edits:
        assert c.source[e.position] == e.source and c.target[e.position] == e.target
        assert is_cjk(e.source) and is_cjk(e.target) and e.source != e.target
        assert 0.0 <= e.confidence <= 1.0
        assert e.reason in ("pinyin", "shape", "other")


def edited(c: Correction) -> set[int]:
    return {e.position for e in c.edits}


def test_forced_settings_edit_every_in_vocab_character(forced_corrector):
    """The premise of the invariant tests: with these settings edits really happen."""
    for text in SENTENCES:
        c = forced_corrector.correct(text)
        check(c)
        assert edited(c) == set(in_vocab_cjk(text))


def test_tiny_corrector_keeps_output_contract(tiny_corrector):
    for c in tiny_corrector.correct_batch(SENTENCES):
        check(c)


def test_threshold_one_gives_no_edits(tiny_bundle, forced_corrector):
    assert any(c.edits for c in forced_corrector.correct_batch(SENTENCES))
    for c in forced_corrector.correct_batch(SENTENCES, threshold=1.0):
        assert c.edits == [] and c.target == c.source
    strict = Corrector.load(tiny_bundle, device="cpu", **{**FORCE_EDITS, "threshold": 1.0})
    assert all(c.edits == [] for c in strict.correct_batch(SENTENCES))


def test_max_edits_limits_edits_per_sentence(forced_corrector):
    text = "今天天汽很好。我们去公园散步吧。"
    full = forced_corrector.correct(text)
    assert len(full.edits) > 4
    for limit in (1, 2):
        c = forced_corrector.correct(text, max_edits=limit)
        check(c)
        kept = set(c.edits)
        assert kept <= set(full.edits)
        start = 0
        for sentence in split_sentences(text):
            inside = [e for e in c.edits if start <= e.position < start + len(sentence)]
            assert len(inside) == limit  # every sentence keeps its own `limit` edits
            dropped = [e for e in full.edits if start <= e.position < start + len(sentence) and e not in kept]
            assert all(d.confidence <= min(k.confidence for k in inside) for d in dropped)  # most confident kept
            start += len(sentence)


def test_max_edits_zero_means_no_limit(forced_corrector):
    text = "今天天汽很好"
    assert forced_corrector.correct(text, max_edits=0) == forced_corrector.correct(text)


def test_protect_per_call(forced_corrector):
    text = "中国人民银行在北京，中国人民银行在上海"
    word = "中国人民银行"
    assert edited(forced_corrector.correct(text)) >= {0, 1, 2, 3, 4, 5}
    c = forced_corrector.correct(text, protect=[word])
    check(c)
    inside = set(range(0, 6)) | set(range(10, 16))  # both occurrences
    assert not edited(c) & inside
    assert edited(c) == set(in_vocab_cjk(text)) - inside  # everything else is still edited


def test_protect_in_config(tiny_bundle, forced_corrector):
    fix = Corrector.load(tiny_bundle, device="cpu", **FORCE_EDITS, protect=["北京", "张三"])
    text = "张三在北京，李四在上海"
    assert edited(forced_corrector.correct(text)) & {0, 1, 3, 4}
    c = fix.correct(text, protect=["上海"])  # per-call words add to the configured ones
    check(c)
    assert edited(c) == {6, 7}  # only 李四: 在 is not in the tiny vocab


def test_protect_overlapping_and_mixed_words(forced_corrector):
    text = "北京北京北京 hello上海"
    c = forced_corrector.correct(text, protect=["北京北京", "o上"])
    assert edited(c) == {13}  # 北京北京 matches at 0 and 2; "o上" covers 上


def test_protect_dictionary_words(tiny_bundle):
    fix = Corrector.load(tiny_bundle, device="cpu", **FORCE_EDITS, protect_dictionary_words=True)
    c = fix.correct("中国人民银行北京")
    check(c)
    assert c.edits == []  # jieba knows both words


def test_custom_confusion_pair(tiny_bundle):
    fix = Corrector.load(tiny_bundle, device="cpu", confusions=[("汽", "气")], confusion_bonus=100.0,
                         verify=False, threshold=0.0)
    c = fix.correct("今天天汽很好")
    check(c)
    (edit,) = [e for e in c.edits if e.position == 3]
    assert (edit.source, edit.target) == ("汽", "气")
    assert edit.reason == "pinyin"  # qi4 / qi4


def test_custom_confusion_pair_beats_the_similarity_filter(tiny_bundle):
    """张 neither sounds nor looks like 汽: only the custom pair makes it a candidate."""
    settings = {"verify": False, "threshold": 0.0}
    plain = Corrector.load(tiny_bundle, device="cpu", **settings).correct("今天天汽很好")
    assert all(e.target != "张" for e in plain.edits)
    fix = Corrector.load(tiny_bundle, device="cpu", confusions=[("汽", "张")], confusion_bonus=100.0, **settings)
    c = fix.correct("今天天汽很好")
    check(c)
    (edit,) = [e for e in c.edits if e.position == 3]
    assert edit == Edit(3, "汽", "张", edit.confidence, "other")


def test_reason_names_the_similarity(forced_corrector):
    """pinyin/shape only when the candidate clears that bar with a non-zero similarity, else other."""
    tables, cfg = forced_corrector.tables, forced_corrector.config
    reasons = set()
    for c in forced_corrector.correct_batch(SENTENCES + [SAMPLE]):
        for e in c.edits:
            sound, shape = tables.pinyin_sim(e.source, e.target), tables.shape_sim(e.source, e.target)
            sounds_alike = sound > 0 and sound >= cfg.min_similarity
            looks_alike = shape > 0 and shape >= cfg.min_shape_similarity
            reasons.add(e.reason)
            if e.reason == "pinyin":
                assert sounds_alike
            elif e.reason == "shape":
                assert looks_alike
            else:
                assert not sounds_alike and not looks_alike
    assert "other" in reasons and len(reasons) > 1  # min_similarity 0 lets dissimilar candidates through


def test_correct_is_correct_batch_of_one(forced_corrector, tiny_corrector):
    for fix in (forced_corrector, tiny_corrector):
        for text in SENTENCES:
            assert fix.correct(text) == fix.correct_batch([text])[0]


def test_batch_matches_one_by_one(forced_corrector):
    texts = SENTENCES + [SAMPLE * 3, SAMPLE[:7]]
    batch = forced_corrector.correct_batch(texts)
    assert [c.source for c in batch] == texts
    for c, text in zip(batch, texts):
        one = forced_corrector.correct(text)
        assert c.target == one.target
        assert [e.confidence for e in c.edits] == pytest.approx([e.confidence for e in one.edits], abs=1e-3)


def test_batch_size_does_not_change_results(tiny_bundle, forced_corrector):
    one_at_a_time = Corrector.load(tiny_bundle, device="cpu", **FORCE_EDITS, batch_size=1)
    texts = SENTENCES + [SAMPLE * 2]
    assert [c.target for c in one_at_a_time.correct_batch(texts)] == \
        [c.target for c in forced_corrector.correct_batch(texts)]


def test_masked_suspects(tiny_bundle):
    fix = Corrector.load(tiny_bundle, device="cpu", **FORCE_EDITS, mask_suspects=True)
    for text in SENTENCES:
        c = fix.correct(text)
        check(c)
        assert edited(c) == set(in_vocab_cjk(text))


@pytest.mark.parametrize("mask_threshold", [0.0, 0.5, 1.0])
def test_mask_threshold_masks_only_confident_suspects(tiny_bundle, mask_threshold):
    fix = Corrector.load(tiny_bundle, device="cpu", **FORCE_EDITS, mask_suspects=True, mask_threshold=mask_threshold)
    text = "我们去公园散步吧他已经知道自己错了"  # one chunk, one token per character: token = position + 1
    probs = [c.rtd_prob for c in fix.explain(text).chars]
    seen = []
    generate = fix.networks.generate
    fix.networks.generate = lambda ids, attn, pos: seen.append(ids.copy()) or generate(ids, attn, pos)
    check(fix.correct(text))
    masked = {t - 1 for t, i in enumerate(seen[0][0]) if i == 103}
    assert masked == {i for i, p in enumerate(probs) if p > mask_threshold}
    assert (0 < len(masked) < len(text)) == (mask_threshold == 0.5)
    if mask_threshold == 1.0:  # nothing is masked: the unmasked pipeline
        assert fix.correct(text) == Corrector.load(tiny_bundle, device="cpu", **FORCE_EDITS).correct(text)


def test_long_text_edits_map_back_across_chunks(forced_corrector):
    text = "，".join([SAMPLE[:20]] * 12)  # 251 characters: several 62-character chunks
    c = forced_corrector.correct(text)
    check(c)
    assert edited(c) == set(in_vocab_cjk(text))
    assert max(edited(c)) > 200


def test_empty_inputs(forced_corrector):
    assert forced_corrector.correct_batch([]) == []
    assert forced_corrector.correct("") == Correction("", "", [])


def test_rejects_non_strings(tiny_corrector):
    with pytest.raises(CorrectorError, match="strings"):
        tiny_corrector.correct_batch(["今天", None])  # type: ignore[list-item]


def test_rejects_bad_call_settings(tiny_corrector):
    with pytest.raises(CorrectorError, match="threshold"):
        tiny_corrector.correct("今天", threshold=2.0)
    with pytest.raises(CorrectorError, match="max_edits"):
        tiny_corrector.correct("今天", max_edits=-1)


def test_to_dict_schema(forced_corrector):
    d = forced_corrector.correct("今天天汽很好").to_dict()
    assert set(d) == {"source", "target", "edits"}
    assert d["edits"]
    for e in d["edits"]:
        assert set(e) == {"position", "source", "target", "confidence", "reason"}


# ---- explain ------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["今天天汽很好", "hello，北京😀龘上海\t", "", "\ud800今", SAMPLE * 2])
def test_explain_one_row_per_character(forced_corrector, text):
    ex = forced_corrector.explain(text, top_k=3)
    assert [(c.position, c.char) for c in ex.chars] == list(enumerate(text))
    assert [c.position for c in ex.chars if c.editable] == in_vocab_cjk(text)
    for c in ex.chars:
        assert 0.0 <= c.rtd_prob <= 1.0
        if not c.editable:
            assert c.candidates == [] and c.rtd_prob == 0.0
            continue
        assert 1 <= len(c.candidates) <= 3
        assert [k.score for k in c.candidates] == sorted((k.score for k in c.candidates), reverse=True)
        for k in c.candidates:
            assert k.char != c.char and is_cjk(k.char)
            assert 0.0 <= k.generator_prob <= 1.0
            assert 0.0 <= k.pinyin_sim <= 1.0 and 0.0 <= k.shape_sim <= 1.0
    assert ex.correction == forced_corrector.correct(text)
    d = ex.to_dict()
    assert set(d) == {"correction", "chars"} and len(d["chars"]) == len(text)


def test_explain_rtd_is_the_detection_score(tiny_bundle, forced_corrector):
    """Characters whose explained RTD probability is above the threshold are exactly the ones edited."""
    text = "我们去公园散步吧他已经知道自己错了"
    rtd = {c.position: c.rtd_prob for c in forced_corrector.explain(text).chars}
    cut = sorted(rtd.values())[len(rtd) // 2]
    fix = Corrector.load(tiny_bundle, device="cpu", **{**FORCE_EDITS, "threshold": cut})
    got = edited(fix.correct(text))
    assert {i for i, p in rtd.items() if p > cut + 1e-4} <= got  # explain rounds to 4 decimals
    assert got <= {i for i, p in rtd.items() if p > cut - 1e-4}
    assert 0 < len(got) < len(text)


# ---- threads ------------------------------------------------------------------------------------


def test_thread_safety(forced_corrector):
    texts = SENTENCES + [SAMPLE, SAMPLE[::-1]]
    expected = [c.target for c in forced_corrector.correct_batch(texts)]
    jobs = [texts[i:] + texts[:i] for i in range(8)]  # each thread gets the texts in another order
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(forced_corrector.correct_batch, jobs))
    for i, got in enumerate(results):
        k = i % len(texts)
        assert [c.target for c in got] == expected[k:] + expected[:k]


# ---- settings -----------------------------------------------------------------------------------


def test_config_from_dict_rejects_unknown_keys():
    with pytest.raises(ValueError, match="nope"):
        CorrectorConfig.from_dict({"nope": 1})
    cfg = CorrectorConfig.from_dict({"protect": ["北京"], "confusions": [["汽", "气"]]})
    assert cfg.protect == ("北京",) and cfg.confusions == (("汽", "气"),)
    assert cfg.with_overrides(threshold=None) is cfg
    assert cfg.with_overrides(threshold=0.3).threshold == 0.3


def test_parse_confusions_formats():
    text = "# custom pairs\n汽→气\n已->己\n末 未\n侯\t候\n\n  拔 → 拨  # trailing comment\n"
    assert parse_confusions(text) == [("汽", "气"), ("已", "己"), ("末", "未"), ("侯", "候"), ("拔", "拨")]
    assert parse_confusions("") == []


@pytest.mark.parametrize(("text", "line"), [("汽气\n", 1), ("汽→气\n汽车→气\n", 2), ("汽→\n", 1)])
def test_parse_confusions_errors(text, line):
    with pytest.raises(ValueError, match=f"line {line}"):
        parse_confusions(text)
