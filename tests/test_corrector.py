"""``Corrector`` behaviour over hand-set networks (tests/fake_networks.py): user controls, explain, batching,
threads, settings, with known answers where the networks' preferences make them knowable. No torch, no ONNX.

The fixtures: ``fake_forced`` (conftest; networks that prefer nothing, threshold 0: every editable character is
edited) and ``typos`` (networks sure of a few replacements, the hand-set ranker's threshold). The same decoder on
a real exported bundle: tests/test_corrector_e2e.py.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import FORCE_EDITS, SAMPLE
from fake_networks import FakeNetworks, fake_corrector

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


# what the networks say of a few characters: the discriminator suspects 汽, 末 and 侯; the generator would write
# 气, 未 and 候 in their place, less and less sure, and 拨 or 打 for 拔, not sure enough
RTD = {"汽": 0.9, "末": 0.8, "侯": 0.7}
PREFER = {"汽": [("气", 12.0)], "末": [("未", 10.0)], "侯": [("候", 9.0)], "拔": [("拨", 7.0), ("打", 6.0)]}
TYPOS = "汽末侯拔"  # 气未候 applied, most confident first; 拔 kept


@pytest.fixture(scope="module")
def typos(fake_tiny_bundle) -> Corrector:
    return fake_corrector(fake_tiny_bundle, FakeNetworks(RTD, PREFER))


def test_the_replacements_the_networks_are_sure_of_are_made(typos):
    c = typos.correct(TYPOS)
    check(c)
    assert c.target == "气未候拔"
    assert [(e.position, e.target, e.reason) for e in c.edits] == [(0, "气", "pinyin"), (1, "未", "shape"),
                                                                   (2, "候", "pinyin")]
    assert c.edits[0].confidence > c.edits[1].confidence > c.edits[2].confidence > 0.5  # as sure as the generator
    ex = typos.explain(TYPOS)
    assert [ch.rtd_prob for ch in ex.chars] == pytest.approx([0.9, 0.8, 0.7, 0.1])  # the discriminator's, as set
    assert [k.char for k in ex.chars[3].candidates[:2]] == ["拨", "打"]
    assert ex.chars[3].decision.startswith("kept: best candidate 拨 at") and "threshold 0.5" in ex.chars[3].decision
    assert typos.correct("今天天汽很好").target == "今天天气很好"
    assert typos.correct("中国人民银行在北京，张三和李四在上海。").edits == []  # nothing preferred: nothing edited


def test_forced_settings_edit_every_in_vocab_character(fake_forced):
    """The premise of the invariant tests: with these settings edits really happen."""
    for text in SENTENCES:
        c = fake_forced.correct(text)
        check(c)
        assert edited(c) == set(in_vocab_cjk(text))


def test_output_contract(typos):
    out = typos.correct_batch(SENTENCES + [TYPOS])
    for c in out:
        check(c)
    assert [c.target for c in out if c.edits] == ["今天天气很好", "气未候拔"]


def test_threshold_one_gives_no_edits(fake_tiny_bundle, fake_forced, typos):
    assert any(c.edits for c in fake_forced.correct_batch(SENTENCES))
    for fix in (fake_forced, typos):
        for c in fix.correct_batch([*SENTENCES, TYPOS], threshold=1.0):
            assert c.edits == [] and c.target == c.source
    strict = fake_corrector(fake_tiny_bundle, typos.networks, **{**FORCE_EDITS, "threshold": 1.0})
    assert all(c.edits == [] for c in strict.correct_batch([*SENTENCES, TYPOS]))


def test_threshold_between_two_confidences(typos):
    """An edit is made exactly when its confidence is above the threshold."""
    first, second, third = typos.correct(TYPOS).edits
    assert typos.correct(TYPOS, threshold=(first.confidence + second.confidence) / 2).target == "气末侯拔"
    assert typos.correct(TYPOS, threshold=(second.confidence + third.confidence) / 2).target == "气未侯拔"
    assert typos.correct(TYPOS, threshold=third.confidence - 1e-3).target == "气未候拔"


def test_max_edits_keeps_the_most_confident(typos):
    assert [typos.correct(TYPOS, max_edits=n).target for n in (1, 2, 3, 0)] == ["气末侯拔", "气未侯拔", "气未候拔",
                                                                              "气未候拔"]
    # per sentence: each of the two keeps its own most confident edit
    assert typos.correct(f"{TYPOS}。{TYPOS[::-1]}！", max_edits=1).target == "气末侯拔。拔侯末气！"


def test_max_edits_limits_edits_per_sentence(fake_forced):
    text = "今天天汽很好。我们去公园散步吧。"
    full = fake_forced.correct(text)
    assert len(full.edits) > 4
    for limit in (1, 2):
        c = fake_forced.correct(text, max_edits=limit)
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


def test_max_edits_zero_means_no_limit(fake_forced):
    text = "今天天汽很好"
    assert fake_forced.correct(text, max_edits=0) == fake_forced.correct(text)


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


def test_protect_kept_words(fake_tiny_bundle):
    """Words the real training pairs kept as written at least N times and never corrected are not edited inside."""
    fix = fake_corrector(fake_tiny_bundle, **FORCE_EDITS)
    fix.evidence.table.words = {"北京": (3, 0), "上海": (5, 1), "张三": (1, 0)}  # word: (kept, corrected)
    text = "张三在北京，李四在上海"
    everything = edited(fix.correct(text))
    assert {0, 1, 3, 4, 9, 10} <= everything
    for n, inside in ((0, set()), (1, {0, 1, 3, 4}), (2, {3, 4}), (4, set())):  # 上海 was corrected once: never
        c = fix.correct(text, protect_kept_words=n)
        check(c)
        assert edited(c) == everything - inside, n
    with pytest.raises(CorrectorError, match="protect_kept_words"):
        fix.correct(text, protect_kept_words=-1)


def test_protect_foreign_names(fake_tiny_bundle):
    """Runs of three or more characters that the corpus writes inside dot-joined names at least the given share
    of the time are not edited inside; shorter runs are."""
    fix = fake_corrector(fake_tiny_bundle, **FORCE_EDITS)
    fix.evidence.table.name_shares = {"张": 0.05, "三": 0.02, "李": 0.3, "北": 0.002}
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
    tiny vocabulary has no regional pair; corrector/script.py's own test has the real ones)."""
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
    from corrector.foreign_names import foreign_name_positions

    chars = frozenset("阿布沙伊夫")
    assert foreign_name_positions("救阿布沙伊夫人质", chars) == {1, 2, 3, 4, 5}
    assert foreign_name_positions("阿布和沙伊", chars) == set()
    assert foreign_name_positions("沙伊夫", chars) == {0, 1, 2}
    assert foreign_name_positions("", chars) == set()
    assert foreign_name_positions("沙伊夫", chars, run=4) == set()


def test_custom_confusion_pair(fake_tiny_bundle):
    fix = fake_corrector(fake_tiny_bundle, confusions=[("汽", "气")], threshold=0.0)
    c = fix.correct("今天天汽很好")
    check(c)
    (edit,) = [e for e in c.edits if e.position == 3]
    assert (edit.source, edit.target) == ("汽", "气")
    assert edit.reason == "pinyin"  # qi4 / qi4


def test_custom_confusion_pair_is_a_candidate_whatever_its_similarity(fake_tiny_bundle, fake_forced):
    """张 neither sounds nor looks like 汽: only the custom pair makes it a candidate."""
    text = "今天天汽很好"
    plain = fake_forced.explain(text, top_k=100).chars[3]
    assert plain.candidates and all(k.char != "张" for k in plain.candidates)
    fix = fake_corrector(fake_tiny_bundle, confusions=[("汽", "张")], threshold=0.0)
    (cand,) = [k for k in fix.explain(text, top_k=100).chars[3].candidates if k.char == "张"]
    assert cand.features["custom"] == 1.0
    c = fix.correct(text)
    check(c)
    (edit,) = [e for e in c.edits if e.position == 3]
    assert edit == Edit(3, "汽", "张", edit.confidence, "other")


def test_reason_names_the_similarity(fake_tiny_bundle):
    """With no candidate table in the bundle, the reason comes from its similarity tables:
    汽/气 sound alike (qi4), 未/末 only look alike, 天/张 neither."""
    fix = fake_corrector(fake_tiny_bundle, threshold=0.0, confusions=[("汽", "气"), ("未", "末"), ("天", "张")])
    assert (fix.tables.pinyin_sim("汽", "气"), fix.tables.shape_sim("未", "末")) == (1.0, pytest.approx(0.667))
    text = "今天汽，未"
    c = fix.correct(text)
    check(c)
    got = {e.position: (e.target, e.reason) for e in c.edits}
    assert [got[1], got[2], got[4]] == [("张", "other"), ("气", "pinyin"), ("末", "shape")]


def test_correct_is_correct_batch_of_one(fake_forced, typos):
    for fix in (fake_forced, typos):
        for text in [*SENTENCES, TYPOS]:
            assert fix.correct(text) == fix.correct_batch([text])[0]


def test_batch_matches_one_by_one(fake_forced):
    texts = SENTENCES + [SAMPLE * 3, SAMPLE[:7]]
    batch = fake_forced.correct_batch(texts)
    assert [c.source for c in batch] == texts
    for c, text in zip(batch, texts):
        one = fake_forced.correct(text)
        assert c.target == one.target
        assert [e.confidence for e in c.edits] == pytest.approx([e.confidence for e in one.edits], abs=1e-3)


def test_batch_size_does_not_change_results(fake_tiny_bundle, fake_forced):
    one_at_a_time = fake_corrector(fake_tiny_bundle, **FORCE_EDITS, batch_size=1)
    texts = SENTENCES + [SAMPLE * 2]
    assert [c.target for c in one_at_a_time.correct_batch(texts)] == \
        [c.target for c in fake_forced.correct_batch(texts)]


def test_networks_run_only_on_texts_with_sites(fake_tiny_bundle):
    """Nothing editable (or everything protected): the networks are not run at all."""
    nets = FakeNetworks()
    fix = fake_corrector(fake_tiny_bundle, nets)
    assert fix.correct_batch(["hello, world 😀", "", "１２３"]) == [Correction(t, t, []) for t in
                                                                 ["hello, world 😀", "", "１２３"]]
    assert fix.correct("北京", protect=["北京"]).edits == []
    assert nets.calls == []
    fix.correct_batch(["今天", "hello", "北京"])
    assert nets.calls == [(2, 4, 4)]  # one call: the two texts with sites, [CLS] 2 characters [SEP] each


def test_top_k_zero_leaves_only_table_and_custom_candidates(fake_tiny_bundle):
    """The tiny bundle has no candidate table: without the generator's top-k only custom pairs remain."""
    fix = fake_corrector(fake_tiny_bundle, threshold=0.0, top_k=0)
    text = "今天天汽很好"
    ex = fix.explain(text, top_k=100)  # explain's own top_k: how many candidates it shows
    assert [c.decision for c in ex.chars] == ["no candidates"] * len(text)
    assert fix.correct(text).edits == []
    c = fix.correct(text, confusions=[("汽", "气")])
    assert [(e.position, e.target) for e in c.edits] == [(3, "气")]


def test_top_k_generator_candidates_per_character(fake_tiny_bundle):
    """Each character gets the generator's top_k most probable proposable characters, less the character
    itself when it is among them (the shortlist is larger than top_k here, so nothing is cut)."""
    text = "今天天汽很好"
    ranked = "北京上海张三李四"  # what the generator prefers at every character of the text, best first
    nets = FakeNetworks(prefer={c: [(x, 3.0 - j / 4) for j, x in enumerate(ranked)] for c in text},
                        own_logit=0.0)
    shown = {}
    for top_k in (1, 3, 7):
        fix = fake_corrector(fake_tiny_bundle, nets, threshold=0.0, top_k=top_k, shortlist=20)
        chars = fix.explain(text, top_k=100).chars
        for c in chars:
            assert {k.char for k in c.candidates} == set(ranked[:top_k])
            assert all(k.char in SAMPLE and is_cjk(k.char) and k.char != c.char for k in c.candidates)
        shown[top_k] = [{k.char: k.features["gen_lp"] for k in c.candidates} for c in chars]
    assert sum(map(len, shown[7])) > sum(map(len, shown[3])) > sum(map(len, shown[1]))
    for small, large in ((1, 3), (3, 7)):
        for a, b in zip(shown[small], shown[large]):
            assert set(a) <= set(b)  # the best of a larger list, by the generator
            assert all(b[x] <= min(a.values()) + 1e-3 for x in set(b) - set(a))
    # networks that like each character as written best, every other alike (ties in vocabulary order): the
    # candidates are the first top_k - 1 proposable characters of the vocabulary other than it
    proposable = list(dict.fromkeys(SAMPLE))
    for top_k in (1, 3):
        fix = fake_corrector(fake_tiny_bundle, threshold=0.0, top_k=top_k, shortlist=20)
        chars = fix.explain(text, top_k=100).chars
        for c in chars:
            assert {k.char for k in c.candidates} == set([x for x in proposable if x != c.char][: top_k - 1])


def test_shortlist_cuts_candidates_but_keeps_custom_pairs(fake_tiny_bundle):
    fix = fake_corrector(fake_tiny_bundle, threshold=0.0, top_k=7)
    text = "今天天汽很好"
    for size in (1, 2):
        chars = fix.explain(text, top_k=100, shortlist=size).chars
        assert [len(c.candidates) for c in chars] == [size] * len(text)
    # a custom pair survives the cut: with shortlist 1 it is the only candidate of 汽
    (only,) = fix.explain(text, top_k=100, shortlist=1, confusions=[("汽", "张")]).chars[3].candidates
    assert only.char == "张"


def test_use_lm_without_an_lm_changes_nothing(fake_forced):
    assert not fake_forced.has_lm
    assert fake_forced.correct_batch(SENTENCES, use_lm=False) == fake_forced.correct_batch(SENTENCES)


def test_long_text_edits_map_back_across_chunks(fake_forced, typos):
    text = "，".join([SAMPLE[:20]] * 12)  # 251 characters: several 62-character chunks
    c = fake_forced.correct(text)
    check(c)
    assert edited(c) == set(in_vocab_cjk(text))
    assert max(edited(c)) > 200
    long = typos.correct(text + "，汽车")
    assert [(e.position, e.target) for e in long.edits] == [(len(text) + 1, "气")]


def test_empty_inputs(fake_forced):
    assert fake_forced.correct_batch([]) == []
    assert fake_forced.correct("") == Correction("", "", [])


def test_rejects_non_strings(typos):
    with pytest.raises(CorrectorError, match="strings"):
        typos.correct_batch(["今天", None])  # type: ignore[list-item]
    with pytest.raises(CorrectorError, match="not one string"):
        typos.correct_batch("今天")  # type: ignore[arg-type]


def test_rejects_bad_call_settings(typos):
    with pytest.raises(CorrectorError, match="threshold"):
        typos.correct("今天", threshold=2.0)
    with pytest.raises(CorrectorError, match="max_edits"):
        typos.correct("今天", max_edits=-1)
    with pytest.raises(CorrectorError, match="use_lm must be true or false"):
        typos.correct("今天", use_lm="no")
    with pytest.raises(CorrectorError, match=r"shortlist must be within \[1, 1000\]"):
        typos.correct("今天", shortlist=0)
    with pytest.raises(CorrectorError, match=r"top_k must be within \[0, 1000\]"):
        typos.correct("今天", top_k=-1)


RETIRED = [("verify", False), ("mask_suspects", True), ("min_similarity", 0.0), ("margin", -100.0),
           ("confusion_bonus", 100.0), ("mask_threshold", 0.5)]


@pytest.mark.parametrize("name, value", RETIRED)
def test_retired_settings_from_a_caller_are_errors(typos, name, value):
    """The ranker replaced the hand-set decoder's settings: a caller who passes one learns it is unknown
    (a bundle's old manifest may still carry them; see test_bundle; Corrector.load: test_corrector_e2e)."""
    from corrector.corrector import RETIRED_SETTINGS

    assert name in RETIRED_SETTINGS
    with pytest.raises(CorrectorError, match=f"unknown corrector setting.*{name}"):
        typos.correct("今天", **{name: value})


def test_to_dict_schema(fake_forced):
    d = fake_forced.correct("今天天汽很好").to_dict()
    assert set(d) == {"source", "target", "edits"}
    assert d["edits"]
    for e in d["edits"]:
        assert set(e) == {"position", "source", "target", "confidence", "reason"}


# ---- explain ------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["今天天汽很好", "hello，北京😀龘上海\t", "", "\ud800今", SAMPLE * 2])
def test_explain_one_row_per_character(fake_forced, text):
    ex = fake_forced.explain(text, top_k=3)
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
    assert ex.correction == fake_forced.correct(text)
    assert [c.rtd_prob for c in ex.chars if c.editable] == pytest.approx([0.1] * len(in_vocab_cjk(text)))  # as set
    d = ex.to_dict()
    assert set(d) == {"correction", "chars"} and len(d["chars"]) == len(text)


# the generator prefers another character at each of these, each a little more sure than the one before
GRADED = {c: [(SAMPLE[(i + 20) % len(SAMPLE)], 2.0 + i / 2)] for i, c in enumerate("我们去公园散步吧他已经知道自己错")}


def test_explain_probability_is_the_decision(fake_tiny_bundle):
    """Without an LM nothing is re-scored: the characters whose best candidate's explained probability
    is above the threshold are exactly the ones edited, each with that probability as its confidence."""
    text = "我们去公园散步吧他已经知道自己错了"
    nets = FakeNetworks(prefer=GRADED)
    forced = fake_corrector(fake_tiny_bundle, nets, **FORCE_EDITS)
    best = {c.position: c.candidates[0] for c in forced.explain(text).chars}
    cut = sorted(k.score for k in best.values())[len(best) // 2]
    fix = fake_corrector(fake_tiny_bundle, nets, **{**FORCE_EDITS, "threshold": cut})
    c = fix.correct(text)
    got = edited(c)
    assert {i for i, k in best.items() if k.score > cut + 1e-4} <= got  # explain rounds to 4 decimals
    assert got <= {i for i, k in best.items() if k.score > cut - 1e-4}
    assert 0 < len(got) < len(text)
    for e in c.edits:
        assert (e.target, e.confidence) == (best[e.position].char, pytest.approx(best[e.position].score, abs=1e-4))


def test_explain_shows_every_feature_and_the_decision(fake_tiny_bundle):
    from corrector.features import FEATURES

    text = "今天天汽很好，北京"
    fix = fake_corrector(fake_tiny_bundle, confusions=[("汽", "气")], threshold=0.0)
    ex = fix.explain(text, top_k=100, protect=["北京"])
    edits = {e.position: e for e in ex.correction.edits}
    assert set(edits) == {0, 1, 2, 3, 4, 5}
    for c in ex.chars:
        if c.char == "，":
            assert not c.editable and c.decision == "not editable"
        elif c.char in "北京":
            assert not c.editable and c.decision.startswith("protected (protect: ") and c.candidates == []
        else:
            assert c.editable and c.candidates
            assert c.decision == f"applied: {edits[c.position].target}"
            assert c.keep_prob + sum(k.score for k in c.candidates) == pytest.approx(1.0, abs=1e-3)
            for k in c.candidates:
                assert set(k.features) == set(FEATURES)
                assert k.features["keep"] == 0.0
                assert k.generator_prob == pytest.approx(math.exp(k.features["gen_lp"]), abs=1e-3)
    kept = fix.explain(text, threshold=0.99).chars[3]
    assert kept.candidates[0].char == "气"  # the custom pair is the best candidate, below 0.99
    assert "not above the threshold 0.99" in kept.decision and kept.decision.startswith("kept: best candidate 气")


def test_explain_says_when_max_edits_dropped_an_edit(fake_forced):
    text = "今天天汽很好"
    ex = fake_forced.explain(text, max_edits=1)
    (edit,) = ex.correction.edits
    for c in ex.chars:
        if c.position == edit.position:
            assert c.decision == f"applied: {edit.target}"
        else:
            assert c.decision.startswith("kept: max_edits reached")


def test_explain_gives_each_character_its_decision(fake_tiny_bundle):
    """Every decision explain gives, each where the hand-set networks and settings put it."""
    from dataclasses import replace

    from corrector.rank import HEURISTIC

    veto = replace(HEURISTIC.scorer_no_lm, veto={"侯候": (1, 9)})  # 侯 -> 候: right once in ten on real pairs
    ranker = replace(HEURISTIC, scorer_no_lm=veto)
    fix = fake_corrector(fake_tiny_bundle, FakeNetworks(RTD, PREFER), ranker=ranker, max_edits=1)
    ex = fix.explain("汽末侯拔。北京，a", protect=["北京"])
    assert ex.correction.target == "气末侯拔。北京，a"
    decisions = [c.decision for c in ex.chars]
    assert decisions[:3] == ["applied: 气", "kept: max_edits reached (more confident edits in this sentence)",
                             "kept: 侯→候 was right in 1 of its 10 edits on the real training pairs "
                             "(veto_unreliable_pairs)"]
    assert decisions[3].startswith("kept: best candidate 拨 at ") and \
        decisions[3].endswith(" is not above the threshold 0.5")
    assert decisions[4:] == ["not editable", *["protected (protect: a word the caller protects)"] * 2,
                             "not editable", "not editable"]
    assert fix.correct("侯", veto_unreliable_pairs=False).target == "候"
    no_generator = fake_corrector(fake_tiny_bundle, FakeNetworks(RTD, PREFER), top_k=0,
                                  confusions=[("汽", "气")])
    assert [c.decision for c in no_generator.explain("汽很").chars] == ["applied: 气", "no candidates"]


# ---- threads ------------------------------------------------------------------------------------


def test_thread_safety(fake_forced):
    texts = SENTENCES + [SAMPLE, SAMPLE[::-1]]
    expected = [c.target for c in fake_forced.correct_batch(texts)]
    jobs = [texts[i:] + texts[:i] for i in range(8)]  # each thread gets the texts in another order
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(fake_forced.correct_batch, jobs))
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


# ---- a hand-made ranker ---------------------------------------------------------------------------


def custom_ranker_corrector(fake_tiny_bundle, weight: float = 8.0, **settings) -> Corrector:
    """Networks that prefer nothing with a ranker that only looks at the custom-pair feature: at a character
    with a custom pair that pair has P = e^w / (e^w + rows - 1); every other choice scores 0."""
    from corrector.rank import HEURISTIC, RankerWeights, Scorer

    ranker = RankerWeights(Scorer({"custom": weight}), Scorer({"custom": weight}), HEURISTIC.shortlist,
                           threshold=0.5, threshold_no_lm=0.5)
    return fake_corrector(fake_tiny_bundle, ranker=ranker, **settings)


CUSTOM_TEXTS = ["今天天汽很好", "未来，汽", "我们去公园散步吧", "", "汽" * 3]
CUSTOM_PAIRS = [("汽", "气"), ("未", "末")]


def test_hand_made_ranker_applies_the_custom_pair_with_its_probability(fake_tiny_bundle):
    fix = custom_ranker_corrector(fake_tiny_bundle, confusions=CUSTOM_PAIRS)
    for text in CUSTOM_TEXTS:
        ex = fix.explain(text, top_k=100)
        want = []
        for c in ex.chars:
            if not c.editable:
                continue
            rows = 1 + len(c.candidates)
            assert rows >= 4  # the keep row, the generator's top 5 less perhaps the character itself
            if c.char in "汽未":
                p = math.exp(8.0) / (math.exp(8.0) + rows - 1)
                assert c.candidates[0].score == pytest.approx(p, abs=1e-4)
                assert c.keep_prob == pytest.approx(1 / (math.exp(8.0) + rows - 1), abs=1e-4)
                want.append(Edit(c.position, c.char, dict(CUSTOM_PAIRS)[c.char], round(p, 4),
                                 "pinyin" if c.char == "汽" else "shape"))
            else:  # every choice scores 0: 1 / rows each, below 0.5
                assert [k.score for k in c.candidates] == pytest.approx([1 / rows] * (rows - 1), abs=1e-4)
                assert "not above the threshold 0.5" in c.decision
        assert ex.correction.edits == want
        assert fix.correct(text) == ex.correction
    assert any(fix.correct(t).edits for t in CUSTOM_TEXTS)


def test_calibrated_ranker_reports_confidences_and_thresholds_on_them(fake_tiny_bundle):
    """With a calibration the edits are the same at the mapped threshold, and their confidence and the
    explanation's scores are the calibrated probabilities."""
    from dataclasses import replace

    plain = custom_ranker_corrector(fake_tiny_bundle, confusions=CUSTOM_PAIRS)
    cal = custom_ranker_corrector(fake_tiny_bundle, confusions=CUSTOM_PAIRS)
    scorer = replace(cal.ranker.scorer, calibration=((0.0, 0.5, 0.9), (0.0, 0.2, 0.5)))
    cal.ranker = replace(cal.ranker, scorer=scorer, scorer_no_lm=scorer, threshold=float(scorer.calibrate(0.5)),
                         threshold_no_lm=float(scorer.calibrate(0.5)))
    for text in CUSTOM_TEXTS:
        a, b = plain.correct(text), cal.correct(text)
        assert [(e.position, e.target) for e in a.edits] == [(e.position, e.target) for e in b.edits]
        for ea, eb in zip(a.edits, b.edits):
            assert eb.confidence == pytest.approx(float(scorer.calibrate(ea.confidence)), abs=1e-3)
            assert eb.confidence < ea.confidence  # this map lowers high probabilities
        ex = cal.explain(text, top_k=100)
        for c in ex.chars:
            if c.char == "汽" and c.editable:
                assert c.candidates[0].score == pytest.approx(b.edits[0].confidence, abs=1e-3)
    # a threshold between the calibrated confidence and the raw probability: the confidence decides
    (raw,) = plain.correct("今天天汽很好").edits
    (conf,) = cal.correct("今天天汽很好").edits
    between = (raw.confidence + conf.confidence) / 2
    assert plain.correct("今天天汽很好", threshold=between).edits and not cal.correct("今天天汽很好", threshold=between).edits


def test_hand_made_ranker_threshold_above_the_probability(fake_tiny_bundle):
    fix = custom_ranker_corrector(fake_tiny_bundle, weight=2.0, top_k=5, confusions=CUSTOM_PAIRS)
    text = "今天天汽很好"
    best = fix.explain(text).chars[3].candidates[0]
    # the generator's 5: 汽 itself, then 今天气很 (vocabulary order), 气 among them: keep + 4 rows
    assert best.char == "气" and best.score == pytest.approx(math.exp(2) / (math.exp(2) + 4), abs=1e-4)
    assert [e.position for e in fix.correct(text).edits] == [3]
    assert fix.correct(text, threshold=best.score - 1e-3).edits[0].confidence == pytest.approx(best.score, abs=1e-4)
    assert fix.correct(text, threshold=best.score + 1e-3).edits == []
    assert "not above the threshold" in fix.explain(text, threshold=0.9).chars[3].decision


def test_hand_made_ranker_batch_equals_one_by_one(fake_tiny_bundle):
    fix = custom_ranker_corrector(fake_tiny_bundle, confusions=CUSTOM_PAIRS)
    texts = CUSTOM_TEXTS + [SAMPLE * 3, "，".join(CUSTOM_TEXTS * 5)]
    assert fix.correct_batch(texts) == [fix.correct(t) for t in texts]
    small = custom_ranker_corrector(fake_tiny_bundle, confusions=CUSTOM_PAIRS, batch_size=1)
    assert small.correct_batch(texts) == fix.correct_batch(texts)


# ---- with a character LM ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def lm_corrector(fake_tiny_bundle, tiny_lm) -> Corrector:
    return fake_corrector(fake_tiny_bundle, lm=tiny_lm, threshold=0.0)


def test_lm_gain_reaches_the_decoder(lm_corrector, fake_forced):
    from corrector.char_lm import CharLM

    assert lm_corrector.has_lm
    lm = CharLM.load(lm_corrector.evidence.lm.path)
    text = "我们去公园散步吧"
    ex = lm_corrector.explain(text, top_k=100, max_edits=1)  # one edit: the rest are scored on this text
    (edit,) = ex.correction.edits
    far = [c for c in ex.chars if abs(c.position - edit.position) >= lm.order and c.editable]
    assert far
    for c in far:  # not re-scored: the gain against the text as it is
        for k in c.candidates:
            changed = text[: c.position] + k.char + text[c.position + 1:]
            assert k.features["lm_gain"] == pytest.approx(lm.sentence_logprob(changed) - lm.sentence_logprob(text),
                                                          abs=2e-3)
    assert any(k.features["lm_gain"] != 0 for c in ex.chars for k in c.candidates)
    # without the LM: no gain anywhere, and the no-LM decoder's results
    off = lm_corrector.explain(text, top_k=100, use_lm=False)
    assert all(k.features["lm_gain"] == 0 for c in off.chars for k in c.candidates)
    assert lm_corrector.correct_batch(SENTENCES, use_lm=False) == fake_forced.correct_batch(SENTENCES)


def test_lm_decoder_keeps_the_contract_and_batch_independence(fake_tiny_bundle, tiny_lm, lm_corrector):
    texts = SENTENCES + [SAMPLE * 3, SAMPLE[:7], "今天天汽很好。今天天汽很好"]
    batch = lm_corrector.correct_batch(texts)
    for c in batch:
        check(c)
    assert batch == [lm_corrector.correct(t) for t in texts]
    one_at_a_time = fake_corrector(fake_tiny_bundle, lm=tiny_lm, threshold=0.0, batch_size=1)
    assert one_at_a_time.correct_batch(texts) == batch
    assert any(c.edits for c in batch)


def test_with_lm_swaps_only_the_lm(fake_tiny_bundle, tiny_lm, lm_corrector):
    """A Corrector moved to another LM decodes as one made with it, on the same networks; the original
    keeps its LM."""
    texts = SENTENCES + ["今天天汽很好。今天天汽很好"]
    plain = fake_corrector(fake_tiny_bundle, lm_corrector.networks, threshold=0.0)
    moved = plain.with_lm(tiny_lm)
    assert moved.networks is plain.networks and moved.has_lm and not plain.has_lm
    assert moved.correct_batch(texts) == lm_corrector.correct_batch(texts)
    dropped = lm_corrector.with_lm(None)
    assert not dropped.has_lm and lm_corrector.has_lm
    assert dropped.correct_batch(texts) == plain.correct_batch(texts)
    assert moved.correct_batch(texts) != plain.correct_batch(texts)  # the LM changes some decision


def test_word_pairs_are_gathered_only_when_the_scorer_weighs_them(lm_corrector):
    """Pair candidates exist for the ``pair`` feature: a ranker without its weight (older bundles) decodes as
    before, with none gathered; without the LM there are none either; the ranker's fit asks for them."""
    from copy import copy
    from dataclasses import replace

    from corrector.rank import Scorer

    def pairs(fixer, word_pairs=None, **settings):
        (scored,) = fixer.score(fixer.prepare(["今天天汽很好"], **settings), word_pairs=word_pairs)
        return scored.rows.pairs

    assert not lm_corrector.ranker.scorer.weighs("pair")
    assert pairs(lm_corrector) is None
    assert pairs(lm_corrector, word_pairs=True) is not None
    fix = copy(lm_corrector)
    fix.ranker = replace(lm_corrector.ranker, scorer=Scorer({**lm_corrector.ranker.scorer.linear, "pair": 0.5}))
    assert pairs(fix) is not None
    assert pairs(fix, use_lm=False) is None
    assert Scorer({"lm_gain*pair": 1.0}).weighs("pair") and not Scorer({"pair": 0.0, "lm_gain": 1.0}).weighs("pair")
    assert Scorer({"keep": 1.0}, {"pair": [0.0, 2.0]}, [0.0, 0.0], [1.0, 1.0]).weighs("pair")
