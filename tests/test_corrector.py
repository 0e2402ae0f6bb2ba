"""``Corrector`` behaviour on the tiny random bundle: user controls, explain, batching, threads, settings."""

from __future__ import annotations

import math
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


def test_protect_kept_words(tiny_bundle):
    """Words the real training pairs kept as written at least N times and never corrected are not edited inside."""
    fix = Corrector.load(tiny_bundle, device="cpu", **FORCE_EDITS)
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


def test_protect_foreign_names(tiny_bundle):
    """Runs of three or more characters that the corpus writes inside dot-joined names at least the given share
    of the time are not edited inside; shorter runs are."""
    fix = Corrector.load(tiny_bundle, device="cpu", **FORCE_EDITS)
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


def test_protect_regional_forms(tiny_bundle, monkeypatch: pytest.MonkeyPatch):
    """An edit that only writes a word another region's way is not made, and explain says so; the other edits
    stay; off, it is made. The check sees two characters either side of the edit (its oracle stubbed here: the
    tiny vocabulary has no regional pair; corrector/script.py's own test has the real ones)."""
    import corrector.guards as cc

    seen: list[tuple[str, str]] = []

    def oracle(before: str, after: str) -> bool:
        seen.append((before, after))
        return before == "天天汽很好" and after == "天天气很好"

    monkeypatch.setattr(cc, "regional_form", oracle)
    fix = Corrector.load(tiny_bundle, device="cpu", confusions=[("汽", "气")], threshold=0.0)
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


def test_custom_confusion_pair(tiny_bundle):
    fix = Corrector.load(tiny_bundle, device="cpu", confusions=[("汽", "气")], threshold=0.0)
    c = fix.correct("今天天汽很好")
    check(c)
    (edit,) = [e for e in c.edits if e.position == 3]
    assert (edit.source, edit.target) == ("汽", "气")
    assert edit.reason == "pinyin"  # qi4 / qi4


def test_custom_confusion_pair_is_a_candidate_whatever_its_similarity(tiny_bundle, forced_corrector):
    """张 neither sounds nor looks like 汽: only the custom pair makes it a candidate."""
    text = "今天天汽很好"
    plain = forced_corrector.explain(text, top_k=100).chars[3]
    assert plain.candidates and all(k.char != "张" for k in plain.candidates)
    fix = Corrector.load(tiny_bundle, device="cpu", confusions=[("汽", "张")], threshold=0.0)
    (cand,) = [k for k in fix.explain(text, top_k=100).chars[3].candidates if k.char == "张"]
    assert cand.features["custom"] == 1.0
    c = fix.correct(text)
    check(c)
    (edit,) = [e for e in c.edits if e.position == 3]
    assert edit == Edit(3, "汽", "张", edit.confidence, "other")


def test_reason_names_the_similarity(tiny_bundle):
    """With no candidate table in the bundle, the reason comes from its similarity tables:
    汽/气 sound alike (qi4), 未/末 only look alike, 天/张 neither."""
    fix = Corrector.load(tiny_bundle, device="cpu", threshold=0.0,
                         confusions=[("汽", "气"), ("未", "末"), ("天", "张")])
    assert (fix.tables.pinyin_sim("汽", "气"), fix.tables.shape_sim("未", "末")) == (1.0, pytest.approx(0.667))
    text = "今天汽，未"
    c = fix.correct(text)
    check(c)
    got = {e.position: (e.target, e.reason) for e in c.edits}
    assert [got[1], got[2], got[4]] == [("张", "other"), ("气", "pinyin"), ("末", "shape")]


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


def test_top_k_zero_leaves_only_table_and_custom_candidates(tiny_bundle):
    """The tiny bundle has no candidate table: without the generator's top-k only custom pairs remain."""
    fix = Corrector.load(tiny_bundle, device="cpu", threshold=0.0, top_k=0)
    text = "今天天汽很好"
    ex = fix.explain(text, top_k=100)  # explain's own top_k: how many candidates it shows
    assert [c.decision for c in ex.chars] == ["no candidates"] * len(text)
    assert fix.correct(text).edits == []
    c = fix.correct(text, confusions=[("汽", "气")])
    assert [(e.position, e.target) for e in c.edits] == [(3, "气")]


def test_top_k_generator_candidates_per_character(tiny_bundle):
    """Each character gets the generator's top_k most probable proposable characters, less the character
    itself when it is among them (the shortlist is larger than top_k here, so nothing is cut)."""
    text = "今天天汽很好"
    shown = {}
    for top_k in (1, 3, 7):
        fix = Corrector.load(tiny_bundle, device="cpu", threshold=0.0, top_k=top_k, shortlist=20)
        chars = fix.explain(text, top_k=100).chars
        for c in chars:
            assert top_k - 1 <= len(c.candidates) <= top_k
            assert all(k.char in SAMPLE and is_cjk(k.char) and k.char != c.char for k in c.candidates)
        shown[top_k] = [{k.char: k.features["gen_lp"] for k in c.candidates} for c in chars]
    assert sum(map(len, shown[7])) > sum(map(len, shown[3])) > sum(map(len, shown[1]))
    for small, large in ((1, 3), (3, 7)):
        for a, b in zip(shown[small], shown[large]):
            assert set(a) <= set(b)  # the best of a larger list, by the generator
            assert all(b[x] <= min(a.values()) + 1e-3 for x in set(b) - set(a))


def test_shortlist_cuts_candidates_but_keeps_custom_pairs(tiny_bundle):
    fix = Corrector.load(tiny_bundle, device="cpu", threshold=0.0, top_k=7)
    text = "今天天汽很好"
    for size in (1, 2):
        chars = fix.explain(text, top_k=100, shortlist=size).chars
        assert [len(c.candidates) for c in chars] == [size] * len(text)
    # a custom pair survives the cut: with shortlist 1 it is the only candidate of 汽
    (only,) = fix.explain(text, top_k=100, shortlist=1, confusions=[("汽", "张")]).chars[3].candidates
    assert only.char == "张"


def test_use_lm_without_an_lm_changes_nothing(forced_corrector):
    assert not forced_corrector.has_lm
    assert forced_corrector.correct_batch(SENTENCES, use_lm=False) == forced_corrector.correct_batch(SENTENCES)


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
    with pytest.raises(CorrectorError, match="use_lm must be true or false"):
        tiny_corrector.correct("今天", use_lm="no")
    with pytest.raises(CorrectorError, match="shortlist must be >= 1"):
        tiny_corrector.correct("今天", shortlist=0)
    with pytest.raises(CorrectorError, match="top_k must be >= 0"):
        tiny_corrector.correct("今天", top_k=-1)


@pytest.mark.parametrize("name, value", [("verify", False), ("mask_suspects", True), ("min_similarity", 0.0),
                                         ("margin", -100.0), ("confusion_bonus", 100.0), ("mask_threshold", 0.5)])
def test_retired_settings_from_a_caller_are_errors(tiny_bundle, tiny_corrector, name, value):
    """The ranker replaced the hand-set decoder's settings: a caller who passes one learns it is unknown
    (a bundle's old manifest may still carry them; see test_bundle)."""
    from corrector.corrector import RETIRED_SETTINGS

    assert name in RETIRED_SETTINGS
    with pytest.raises(CorrectorError, match=f"unknown corrector setting.*{name}"):
        tiny_corrector.correct("今天", **{name: value})
    with pytest.raises(CorrectorError, match=name):
        Corrector.load(tiny_bundle, device="cpu", **{name: value})


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


def test_explain_probability_is_the_decision(tiny_bundle, forced_corrector):
    """Without an LM nothing is re-scored: the characters whose best candidate's explained probability
    is above the threshold are exactly the ones edited, each with that probability as its confidence."""
    text = "我们去公园散步吧他已经知道自己错了"
    best = {c.position: c.candidates[0] for c in forced_corrector.explain(text).chars}
    cut = sorted(k.score for k in best.values())[len(best) // 2]
    fix = Corrector.load(tiny_bundle, device="cpu", **{**FORCE_EDITS, "threshold": cut})
    c = fix.correct(text)
    got = edited(c)
    assert {i for i, k in best.items() if k.score > cut + 1e-4} <= got  # explain rounds to 4 decimals
    assert got <= {i for i, k in best.items() if k.score > cut - 1e-4}
    assert 0 < len(got) < len(text)
    for e in c.edits:
        assert (e.target, e.confidence) == (best[e.position].char, pytest.approx(best[e.position].score, abs=1e-4))


def test_explain_shows_every_feature_and_the_decision(tiny_bundle):
    from corrector.features import FEATURES

    text = "今天天汽很好，北京"
    fix = Corrector.load(tiny_bundle, device="cpu", confusions=[("汽", "气")], threshold=0.0)
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


def test_explain_says_when_max_edits_dropped_an_edit(forced_corrector):
    text = "今天天汽很好"
    ex = forced_corrector.explain(text, max_edits=1)
    (edit,) = ex.correction.edits
    for c in ex.chars:
        if c.position == edit.position:
            assert c.decision == f"applied: {edit.target}"
        else:
            assert c.decision.startswith("kept: max_edits reached")


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


# ---- a hand-made ranker ---------------------------------------------------------------------------


def custom_ranker_corrector(tiny_bundle, weight: float = 8.0, **settings) -> Corrector:
    """The tiny model with a ranker that only looks at the custom-pair feature: at a character with a
    custom pair that pair has P = e^w / (e^w + rows - 1); every other choice scores 0."""
    from corrector.rank import HEURISTIC, RankerWeights, Scorer

    fix = Corrector.load(tiny_bundle, device="cpu", **settings)
    fix.ranker = RankerWeights(Scorer({"custom": weight}), Scorer({"custom": weight}), HEURISTIC.shortlist,
                               threshold=0.5, threshold_no_lm=0.5)
    return fix


CUSTOM_TEXTS = ["今天天汽很好", "未来，汽", "我们去公园散步吧", "", "汽" * 3]
CUSTOM_PAIRS = [("汽", "气"), ("未", "末")]


def test_hand_made_ranker_applies_the_custom_pair_with_its_probability(tiny_bundle):
    fix = custom_ranker_corrector(tiny_bundle, confusions=CUSTOM_PAIRS)
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


def test_calibrated_ranker_reports_confidences_and_thresholds_on_them(tiny_bundle):
    """With a calibration the edits are the same at the mapped threshold, and their confidence and the
    explanation's scores are the calibrated probabilities."""
    from dataclasses import replace

    plain = custom_ranker_corrector(tiny_bundle, confusions=CUSTOM_PAIRS)
    cal = custom_ranker_corrector(tiny_bundle, confusions=CUSTOM_PAIRS)
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


def test_hand_made_ranker_threshold_above_the_probability(tiny_bundle):
    fix = custom_ranker_corrector(tiny_bundle, weight=2.0, top_k=5, confusions=CUSTOM_PAIRS)
    text = "今天天汽很好"
    best = fix.explain(text).chars[3].candidates[0]
    assert best.char == "气" and 0.5 < best.score < 0.7  # e^2 / (e^2 + 5 or 6): keep + the generator's 5, less any duplicate
    assert [e.position for e in fix.correct(text).edits] == [3]
    assert fix.correct(text, threshold=best.score - 1e-3).edits[0].confidence == pytest.approx(best.score, abs=1e-4)
    assert fix.correct(text, threshold=best.score + 1e-3).edits == []
    assert "not above the threshold" in fix.explain(text, threshold=0.9).chars[3].decision


def test_hand_made_ranker_batch_equals_one_by_one(tiny_bundle):
    fix = custom_ranker_corrector(tiny_bundle, confusions=CUSTOM_PAIRS)
    texts = CUSTOM_TEXTS + [SAMPLE * 3, "，".join(CUSTOM_TEXTS * 5)]
    assert fix.correct_batch(texts) == [fix.correct(t) for t in texts]
    small = custom_ranker_corrector(tiny_bundle, confusions=CUSTOM_PAIRS, batch_size=1)
    assert small.correct_batch(texts) == fix.correct_batch(texts)


# ---- with a character LM ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def lm_corrector(tiny_bundle, tiny_lm) -> Corrector:
    return Corrector.load(tiny_bundle, device="cpu", lm=tiny_lm, threshold=0.0)


def test_lm_gain_reaches_the_decoder(lm_corrector, forced_corrector):
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
    assert lm_corrector.correct_batch(SENTENCES, use_lm=False) == forced_corrector.correct_batch(SENTENCES)


def test_lm_decoder_keeps_the_contract_and_batch_independence(tiny_bundle, tiny_lm, lm_corrector):
    texts = SENTENCES + [SAMPLE * 3, SAMPLE[:7], "今天天汽很好。今天天汽很好"]
    batch = lm_corrector.correct_batch(texts)
    for c in batch:
        check(c)
    assert batch == [lm_corrector.correct(t) for t in texts]
    one_at_a_time = Corrector.load(tiny_bundle, device="cpu", lm=tiny_lm, threshold=0.0, batch_size=1)
    assert one_at_a_time.correct_batch(texts) == batch
    assert any(c.edits for c in batch)


def test_with_lm_swaps_only_the_lm(tiny_bundle, tiny_lm, lm_corrector):
    """A Corrector moved to another LM decodes as one loaded with it, on the same ONNX sessions; the original
    keeps its LM."""
    texts = SENTENCES + ["今天天汽很好。今天天汽很好"]
    plain = Corrector.load(tiny_bundle, device="cpu", threshold=0.0)
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
