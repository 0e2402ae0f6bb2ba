"""The decoder end to end on a real exported bundle (conftest's tiny one: random weights, built through torch and
an ONNX export, so every test here is marked ``needs_torch``): ``Corrector.load`` and the settings it passes on,
the ONNX sessions shared by threads and by Correctors, the output contract on real network outputs.

The decoder's behaviour in detail runs over hand-set networks in tests/test_corrector_*.py; the networks' own
batch independence is in tests/test_determinism.py.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import FORCE_EDITS, SAMPLE
from corrector_cases import RETIRED, SENTENCES, check, edited, in_vocab_cjk

from corrector import Corrector, CorrectorError


def test_forced_settings_edit_every_in_vocab_character(forced_corrector):
    for text in SENTENCES:
        c = forced_corrector.correct(text)
        check(c)
        assert edited(c) == set(in_vocab_cjk(text))


def test_tiny_corrector_keeps_output_contract(tiny_corrector):
    for c in tiny_corrector.correct_batch(SENTENCES):
        check(c)


def test_load_passes_its_settings_on(tiny_bundle, forced_corrector):
    strict = Corrector.load(tiny_bundle, device="cpu", **{**FORCE_EDITS, "threshold": 1.0})
    assert all(c.edits == [] for c in strict.correct_batch(SENTENCES))
    fix = Corrector.load(tiny_bundle, device="cpu", **FORCE_EDITS, protect=["北京", "张三"])
    text = "张三在北京，李四在上海"
    assert edited(forced_corrector.correct(text)) & {0, 1, 3, 4}
    assert edited(fix.correct(text, protect=["上海"])) == {6, 7}  # only 李四: 在 is not in the tiny vocab


@pytest.mark.parametrize("name, value", RETIRED)
def test_retired_settings_at_load_are_errors(tiny_bundle, name, value):
    with pytest.raises(CorrectorError, match=name):
        Corrector.load(tiny_bundle, device="cpu", **{name: value})


def test_batch_matches_one_by_one(tiny_bundle, forced_corrector):
    texts = SENTENCES + [SAMPLE * 3, SAMPLE[:7]]
    batch = forced_corrector.correct_batch(texts)
    assert [c.target for c in batch] == [forced_corrector.correct(t).target for t in texts]
    one_at_a_time = Corrector.load(tiny_bundle, device="cpu", **FORCE_EDITS, batch_size=1)
    assert [c.target for c in one_at_a_time.correct_batch(texts)] == [c.target for c in batch]


def test_explain_is_the_correction(forced_corrector):
    text = SAMPLE * 2
    ex = forced_corrector.explain(text, shown=3)
    assert [(c.position, c.char) for c in ex.chars] == list(enumerate(text))
    assert all(0.0 <= c.rtd_prob <= 1.0 and 1 <= len(c.candidates) <= 3 for c in ex.chars if c.editable)
    assert ex.correction == forced_corrector.correct(text)


def test_thread_safety(forced_corrector):
    """One Corrector's ONNX sessions serve several threads at once."""
    texts = SENTENCES + [SAMPLE, SAMPLE[::-1]]
    expected = [c.target for c in forced_corrector.correct_batch(texts)]
    jobs = [texts[i:] + texts[:i] for i in range(8)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(forced_corrector.correct_batch, jobs))
    for i, got in enumerate(results):
        k = i % len(texts)
        assert [c.target for c in got] == expected[k:] + expected[:k]


def test_load_with_an_lm_and_with_lm_share_the_sessions(tiny_bundle, tiny_lm):
    """``load(lm=...)`` and ``with_lm`` give the same decoder, on the same ONNX sessions."""
    texts = SENTENCES + ["今天天汽很好。今天天汽很好"]
    loaded = Corrector.load(tiny_bundle, device="cpu", lm=tiny_lm, threshold=0.0)
    plain = Corrector.load(tiny_bundle, device="cpu", threshold=0.0)
    moved = plain.with_lm(tiny_lm)
    assert loaded.has_lm and moved.has_lm and not plain.has_lm and moved.networks is plain.networks
    batch = loaded.correct_batch(texts)
    for c in batch:
        check(c)
    assert moved.correct_batch(texts) == batch == [loaded.correct(t) for t in texts]
    assert loaded.correct_batch(texts, use_lm=False) == plain.correct_batch(texts)
