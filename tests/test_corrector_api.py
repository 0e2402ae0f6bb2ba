"""The Corrector's calls over hand-set networks (tests/fake_networks.py): correct and correct_batch alike, batches
and long texts, threads, what it refuses, and its settings (CorrectorConfig, confusion files). No torch, no ONNX.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import FORCE_EDITS, SAMPLE
from corrector_cases import RETIRED, SENTENCES, TYPOS, check, edited, in_vocab_cjk
from fake_networks import FakeNetworks, fake_corrector

from corrector import Correction, CorrectorConfig, CorrectorError
from corrector.config import parse_confusions


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


@pytest.mark.parametrize("name, value", RETIRED)
def test_retired_settings_from_a_caller_are_errors(typos, name, value):
    """The ranker replaced the hand-set decoder's settings: a caller who passes one learns it is unknown
    (a bundle's old manifest may still carry them; see test_bundle; Corrector.load: test_corrector_e2e)."""
    from corrector.config import RETIRED_SETTINGS

    assert name in RETIRED_SETTINGS
    with pytest.raises(CorrectorError, match=f"unknown corrector setting.*{name}"):
        typos.correct("今天", **{name: value})


def test_to_dict_schema(fake_forced):
    d = fake_forced.correct("今天天汽很好").to_dict()
    assert set(d) == {"source", "target", "edits"}
    assert d["edits"]
    for e in d["edits"]:
        assert set(e) == {"position", "source", "target", "confidence", "reason"}


def test_thread_safety(fake_forced):
    texts = SENTENCES + [SAMPLE, SAMPLE[::-1]]
    expected = [c.target for c in fake_forced.correct_batch(texts)]
    jobs = [texts[i:] + texts[:i] for i in range(8)]  # each thread gets the texts in another order
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(fake_forced.correct_batch, jobs))
    for i, got in enumerate(results):
        k = i % len(texts)
        assert [c.target for c in got] == expected[k:] + expected[:k]


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
