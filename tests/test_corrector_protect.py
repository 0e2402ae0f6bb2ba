"""What the Corrector leaves as written, over hand-set networks (tests/fake_networks.py): words the caller or the
settings protect, dictionary words, kept words, foreign names and regional forms. No torch, no ONNX.
"""

from __future__ import annotations

import pytest
from conftest import FORCE_EDITS
from corrector_cases import TYPOS, check, edited, in_vocab_cjk
from fake_networks import fake_corrector

from corrector import CorrectorError


def test_protect_keeps_a_sure_replacement(typos):
    assert typos.correct(TYPOS, protect=["末侯"]).target == "气末侯拔"
    assert typos.correct("今天天汽很好", protect=["天汽"]).edits == []


def test_protect_per_call(fake_forced):
    text = "中国人民银行在北京，中国人民银行在上海"
    word = "中国人民银行"
    assert edited(fake_forced.correct(text)) >= {0, 1, 2, 3, 4, 5}
    c = fake_forced.correct(text, protect=[word])
    check(c)
    inside = set(range(0, 6)) | set(range(10, 16))  # both occurrences
    assert not edited(c) & inside
    assert edited(c) == set(in_vocab_cjk(text)) - inside  # everything else is still edited


def test_protect_in_config(fake_tiny_bundle, fake_forced):
    fix = fake_corrector(fake_tiny_bundle, **FORCE_EDITS, protect=["北京", "张三"])
    text = "张三在北京，李四在上海"
    assert edited(fake_forced.correct(text)) & {0, 1, 3, 4}
    c = fix.correct(text, protect=["上海"])  # per-call words add to the configured ones
    check(c)
    assert edited(c) == {6, 7}  # only 李四: 在 is not in the tiny vocab


def test_protect_overlapping_and_mixed_words(fake_forced):
    text = "北京北京北京 hello上海"
    c = fake_forced.correct(text, protect=["北京北京", "o上"])
    assert edited(c) == {13}  # 北京北京 matches at 0 and 2; "o上" covers 上


def test_protect_dictionary_words(fake_tiny_bundle):
    fix = fake_corrector(fake_tiny_bundle, **FORCE_EDITS, protect_dictionary_words=True)
    c = fix.correct("中国人民银行北京")
    check(c)
    assert c.edits == []  # jieba knows both words


def test_protect_dictionary_words_reads_traditional_text_in_simplified_script(fake_tiny_bundle):
    """jieba's words are simplified: like every guard, this one reads traditional text in both scripts (中國 and 銀行
    are words to it only as 中国 and 银行)."""
    fix = fake_corrector(fake_tiny_bundle, **FORCE_EDITS, protect_dictionary_words=True)
    text = "中國人民銀行北京"
    assert edited(fix.correct(text, protect_dictionary_words=False)) == {0, 1, 2, 3, 4, 5, 6, 7}
    c = fix.correct(text)
    check(c)
    assert c.edits == []


def test_protect_foreign_names(fake_tiny_bundle):
    """Runs of three or more characters that the corpus writes inside dot-joined names at least the given share
    of the time are not edited inside; shorter runs are."""
    fix = fake_corrector(fake_tiny_bundle, **FORCE_EDITS)
    fix.protections.name_shares = {"张": 0.05, "三": 0.02, "李": 0.3, "北": 0.002}
    text = "张三李在北京，李四在上海"
    everything = edited(fix.correct(text))
    assert {0, 1, 2, 4, 5, 7} <= everything
    for share, inside in ((0.0, set()), (0.01, {0, 1, 2}), (0.03, set()), (0.001, {0, 1, 2})):
        c = fix.correct(text, protect_foreign_names=share)  # 0.03 leaves 三 out: 张 and 李 alone are no run
        check(c)
        assert edited(c) == everything - inside, share
    with pytest.raises(CorrectorError, match="protect_foreign_names"):
        fix.correct(text, protect_foreign_names=-0.1)


def test_protect_regional_forms(fake_tiny_bundle, monkeypatch: pytest.MonkeyPatch):
    """An edit that only writes a word another region's way is not made, and explain says so; the other edits
    stay; off, it is made. The check sees two characters either side of the edit (its oracle stubbed here: the
    tiny vocabulary has no regional pair; corrector/text/script.py's own test has the real ones)."""
    import corrector.guards as cc

    seen: list[tuple[str, str]] = []

    def oracle(before: str, after: str) -> bool:
        seen.append((before, after))
        return before == "天天汽很好" and after == "天天气很好"

    monkeypatch.setattr(cc, "regional_form", oracle)
    fix = fake_corrector(fake_tiny_bundle, confusions=[("汽", "气")], threshold=0.0)
    text = "今天天汽很好"
    off, on = fix.correct(text, protect_regional_forms=False), fix.correct(text)
    check(on)
    assert ("汽", "气") in {(e.source, e.target) for e in off.edits if e.position == 3}
    assert [e for e in off.edits if e.position != 3] == on.edits and not any(e.position == 3 for e in on.edits)
    assert ("天天汽很好", "天天气很好") in seen and all(len(b) <= 5 for b, _ in seen)
    assert "protect_regional_forms" in fix.explain(text).chars[3].decision
    with pytest.raises(CorrectorError, match="protect_regional_forms"):
        fix.correct(text, protect_regional_forms="yes")


def test_foreign_name_positions():
    from corrector.evidence.foreign_names import foreign_name_positions

    chars = frozenset("阿布沙伊夫")
    assert foreign_name_positions("救阿布沙伊夫人质", chars) == {1, 2, 3, 4, 5}
    assert foreign_name_positions("阿布和沙伊", chars) == set()
    assert foreign_name_positions("沙伊夫", chars) == {0, 1, 2}
    assert foreign_name_positions("", chars) == set()
    assert foreign_name_positions("沙伊夫", chars, run=4) == set()


def test_a_calls_own_words_never_rebuild_the_configured_dictionarys_matcher(fake_tiny_bundle, monkeypatch):
    """Before: every distinct per-call list built a matcher over the whole configured dictionary (34 ms for 100,000
    words) and hashed it for every text (issue 61, 7). Now the dictionary's matcher is built once and a call's
    words get their own; the positions protected are the same as one list's."""
    from corrector import guards

    dictionary = [f"词{i:05d}" for i in range(5000)] + ["中国人民银行"]
    fix = fake_corrector(fake_tiny_bundle, protect=dictionary, **FORCE_EDITS)
    built = []
    real = guards.WordMatcher.__init__

    def counting(self, words):
        built.append(len(tuple(words)))
        real(self, words)

    monkeypatch.setattr(guards.WordMatcher, "__init__", counting)
    text = "中国人民银行在北京，张三在上海，李四也在"
    for call in (["张三"], ["李四"], ["张三", "李四"], ["北京"]):
        c = fix.correct(text, protect=call)
        protected = {i for w in ["中国人民银行", *call] for s in range(len(text)) if text.startswith(w, s)
                     for i in range(s, s + len(w))}
        assert not edited(c) & protected and edited(c) == set(in_vocab_cjk(text)) - protected
    assert built.count(len(dictionary)) <= 1 and all(n <= 2 for n in built if n != len(dictionary)), built


def test_terms_keep_a_word_where_the_text_segments_it(fake_forced):
    """``terms`` keeps a word as written where jieba makes it a word of the text, not wherever it occurs (protect)."""
    text = "我们在北京，中国人民银行"
    assert edited(fake_forced.correct(text)) >= {3, 4, 7, 8}
    c = fake_forced.correct(text, terms=["北京", "国人"])  # 国人 is inside the word 中国人民银行: not kept
    check(c)
    assert not edited(c) & {3, 4}
    assert {7, 8} <= edited(c)
    assert not edited(fake_forced.correct(text, protect=["国人"])) & {7, 8}  # unlike protect


def test_bigrams_keep_two_characters_wherever_they_stand_together(fake_forced):
    """``bigrams`` keeps a pair as written wherever it occurs, whatever the segmentation; its characters elsewhere
    are read as before."""
    text = "我们北京，我北"  # 们北: no word of jieba's (我们/北京)
    assert edited(fake_forced.correct(text)) >= {0, 1, 2, 3, 6}
    c = fake_forced.correct(text, bigrams=["们北"])
    check(c)
    assert not edited(c) & {1, 2}
    assert {0, 3, 6} <= edited(c)


@pytest.mark.parametrize("text, kept", [
    ("推荐演算法筆記这个网站", {5, 6}),  # two traditional characters in a row: a name in its own script
    ("这个词们说是「資訊」的意思", {7, 8}),
    ("这个比赛们叫日本情報オリンピック", {9}),  # kana: Japanese, whose forms are its own
    ("这是一个客戶端程序", set()),  # a lone one among simplified characters is a slip of script
    ("繁简混用：“台灣”→“台湾”", {7}),  # a short word quoted, or in parentheses, alone or beside other scripts:
    ("决赛（本選/JOI Final）", {4}),  # a form quoted as such
    ("请用（推荐使用客戶端）", set()),  # a longer run in parentheses is running text: a slip of script
    ("我們一起去吃飯吧", set()),  # traditional text is corrected in its own script
])
def test_traditional_words_in_simplified_text_are_kept(text, kept):
    from corrector.config import CorrectorConfig
    from corrector.guards import Protections
    from corrector.text.script import normalise

    positions = Protections({}).positions(normalise(text, [(0, len(text))]),
                                          CorrectorConfig(protect_traditional_words=True))
    assert {p for p, g in positions.items() if g == "protect_traditional_words"} == kept
    off = Protections({}).positions(normalise(text, [(0, len(text))]), CorrectorConfig())  # the library's default
    assert "protect_traditional_words" not in off.values()


def test_a_calls_own_words_beside_a_large_dictionary_copy_nothing():
    """Before: each call that passed its own ``protect`` words copied the configured dictionary into one tuple of
    100,001 words (8-10 ms a request in the service; issue 72, 5). Now the lists are kept as they are."""
    from corrector.config import CorrectorConfig, Words, in_force

    dictionary = tuple(f"词语{i}" for i in range(100_000))
    loaded = CorrectorConfig().with_overrides(protect=dictionary)
    cfg = in_force(call={"protect": ["张三"]}, loaded=loaded)
    assert isinstance(cfg.protect, Words) and cfg.protect.parts[0] is dictionary and cfg.protect._flat is None
    assert len(cfg.protect) == 100_001 and "张三" in cfg.protect and "词语7" in cfg.protect
    assert cfg.protect == (*dictionary, "张三") and list(cfg.protect)[-2:] == ["词语99999", "张三"]
    assert cfg.protect._flat is not None  # compared as one tuple only when asked to
