"""Which edits the Corrector makes over hand-set networks (tests/fake_networks.py), with known answers where the
networks' preferences make them knowable: the threshold, max_edits, custom confusion pairs and the reason of
an edit, the generator's top_k and the shortlist. No torch, no ONNX. Fixtures: ``fake_forced`` and ``typos``
(conftest; tests/corrector_cases.py).
"""

from __future__ import annotations

import pytest
from conftest import FORCE_EDITS, SAMPLE
from corrector_cases import SENTENCES, TYPOS, check, edited, in_vocab_cjk
from fake_networks import FakeNetworks, fake_corrector

from corrector import Edit
from corrector.text.chars import is_cjk, split_sentences


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
    plain = fake_forced.explain(text, shown=100).chars[3]
    assert plain.candidates and all(k.char != "张" for k in plain.candidates)
    fix = fake_corrector(fake_tiny_bundle, confusions=[("汽", "张")], threshold=0.0)
    (cand,) = [k for k in fix.explain(text, shown=100).chars[3].candidates if k.char == "张"]
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


def test_top_k_zero_leaves_only_table_and_custom_candidates(fake_tiny_bundle):
    """The tiny bundle has no candidate table: without the generator's top-k only custom pairs remain."""
    fix = fake_corrector(fake_tiny_bundle, threshold=0.0, top_k=0)
    text = "今天天汽很好"
    ex = fix.explain(text, shown=100)  # how many candidates it shows
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
        chars = fix.explain(text, shown=100).chars
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
        chars = fix.explain(text, shown=100).chars
        for c in chars:
            assert {k.char for k in c.candidates} == set([x for x in proposable if x != c.char][: top_k - 1])


def test_shortlist_cuts_candidates_but_keeps_custom_pairs(fake_tiny_bundle):
    fix = fake_corrector(fake_tiny_bundle, threshold=0.0, top_k=7)
    text = "今天天汽很好"
    for size in (1, 2):
        chars = fix.explain(text, shown=100, shortlist=size).chars
        assert [len(c.candidates) for c in chars] == [size] * len(text)
    # a custom pair survives the cut: with shortlist 1 it is the only candidate of 汽
    (only,) = fix.explain(text, shown=100, shortlist=1, confusions=[("汽", "张")]).chars[3].candidates
    assert only.char == "张"


def test_use_lm_without_an_lm_changes_nothing(fake_forced):
    assert not fake_forced.has_lm
    assert fake_forced.correct_batch(SENTENCES, use_lm=False) == fake_forced.correct_batch(SENTENCES)


def test_rtd_floor_looks_only_at_suspected_characters(typos):
    """The discriminator says 0.9, 0.8, 0.7, 0.1 of 汽末侯拔: with rtd_floor 0.75 only the first two are sites (the
    generator is asked nowhere else); the others are kept as written, and explain says why."""
    asked = len(typos.networks.calls)
    c = typos.correct(TYPOS, rtd_floor=0.75)
    assert c.target == "气未侯拔" and [e.position for e in c.edits] == [0, 1]
    assert typos.correct(TYPOS, rtd_floor=0.7).target == "气未候拔"  # reaching the floor is enough
    assert typos.correct(TYPOS, rtd_floor=0.0).to_dict() == typos.correct(TYPOS).to_dict()
    ex = typos.explain(TYPOS, rtd_floor=0.75)
    assert [ch.decision.split(" (")[0] for ch in ex.chars[2:]] == ["kept: unsuspected"] * 2
    assert [ch.rtd_prob for ch in ex.chars] == pytest.approx([0.9, 0.8, 0.7, 0.1])
    assert ex.chars[2].candidates == [] and "below rtd_floor 0.75" in ex.chars[2].decision
    assert len(typos.networks.calls) > asked


def test_a_stray_traditional_character_is_looked_at_whatever_the_floor(fake_tiny_bundle):
    """In simplified text a traditional character is a typo the script rule fixes; the floor never hides it."""
    fix = fake_corrector(fake_tiny_bundle)
    text = "我們去公园散步吧"
    for floor in (0.0, 0.5, 1.0):
        c = fix.correct(text, rtd_floor=floor)
        assert c.target == "我们去公园散步吧" and [(e.position, e.reason) for e in c.edits] == [(1, "script")]
    assert not fix.correct("我们去公园散步吧", rtd_floor=1.0).edits
