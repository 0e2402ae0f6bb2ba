"""The Corrector with a character LM (conftest's tiny one) over hand-set networks (tests/fake_networks.py): the
LM's gain in the decisions, batch independence, swapping the LM, word-pair candidates. No torch, no ONNX.
"""

from __future__ import annotations

import pytest
from conftest import SAMPLE
from corrector_cases import SENTENCES, check
from fake_networks import fake_corrector

from corrector import Corrector


@pytest.fixture(scope="module")
def lm_corrector(fake_tiny_bundle, tiny_lm) -> Corrector:
    return fake_corrector(fake_tiny_bundle, lm=tiny_lm, threshold=0.0)


def test_lm_gain_reaches_the_decoder(lm_corrector, fake_forced):
    from corrector.evidence.char_lm import CharLM

    assert lm_corrector.has_lm
    lm = CharLM.load(lm_corrector.evidence.lm.path)
    text = "我们去公园散步吧"
    ex = lm_corrector.explain(text, shown=100, max_edits=1)  # one edit: the rest are scored on this text
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
    off = lm_corrector.explain(text, shown=100, use_lm=False)
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
    from dataclasses import replace

    from corrector.rank import Scorer

    def pairs(fixer, word_pairs=None, **settings):
        (scored,) = fixer.score(fixer.prepare(["今天天汽很好"], **settings), word_pairs=word_pairs)
        return scored.rows.pairs

    assert not lm_corrector.ranker.scorer.weighs("pair")
    assert pairs(lm_corrector) is None
    assert pairs(lm_corrector, word_pairs=True) is not None
    fix = lm_corrector.with_ranker(replace(lm_corrector.ranker,
                                           scorer=Scorer({**lm_corrector.ranker.scorer.linear, "pair": 0.5})))
    assert pairs(fix) is not None
    assert pairs(fix, use_lm=False) is None
    assert Scorer({"lm_gain*pair": 1.0}).weighs("pair") and not Scorer({"pair": 0.0, "lm_gain": 1.0}).weighs("pair")
    assert Scorer({"keep": 1.0}, {"pair": [0.0, 2.0]}, [0.0, 0.0], [1.0, 1.0]).weighs("pair")
