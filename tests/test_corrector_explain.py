"""``Corrector.explain`` over hand-set networks (tests/fake_networks.py): one row per character, every feature,
and the decision it gives each character, which is the one the correction made. No torch, no ONNX.
"""

from __future__ import annotations

import math

import pytest
from conftest import FORCE_EDITS, SAMPLE
from corrector_cases import PREFER, RTD, edited, in_vocab_cjk
from fake_networks import FakeNetworks, fake_corrector

from corrector.text.chars import is_cjk


@pytest.mark.parametrize("text", ["今天天汽很好", "hello，北京😀龘上海\t", "", "\ud800今", SAMPLE * 2])
def test_explain_one_row_per_character(fake_forced, text):
    ex = fake_forced.explain(text, shown=3)
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
    # a REPL shows one short line (print() gives the rows)
    assert repr(ex).startswith(f"<Explanation {text!r} -> ") and len(repr(ex)) < 200 + 2 * len(text) and "\n" not in repr(ex)


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
    ex = fix.explain(text, shown=100, protect=["北京"])
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
