"""Results never depend on batch composition, batch size, padding or thread count (issue 13, point 1).

The networks' rows (fp32, dynamically and statically quantised int8) are checked on the exported tiny bundle
(``needs_torch``); the decoder around them on the same bundle and on hand-set networks (tests/fake_networks.py)
that run whole padded batches or one row at a time, as the two kinds of ONNX graphs do.
"""

from __future__ import annotations

import random
import shutil

import numpy as np
import pytest
from conftest import FORCE_EDITS, SAMPLE
from fake_networks import FakeNetworks, fake_corrector
from hypothesis import given, settings
from hypothesis import strategies as st

from corrector import Corrector
from corrector.runtime.sessions import OnnxNetworks

TEXTS = st.lists(st.text(alphabet=st.sampled_from(SAMPLE + "，。！a1 "), min_size=1, max_size=90),
                 min_size=1, max_size=12)


@pytest.fixture(scope="module")
def static_bundle(tiny_bundle, tmp_path_factory):
    """The tiny bundle with statically quantised int8 graphs (training.bundle.quantize)."""
    from training.bundle.quantize import requantize_bundle

    out = tmp_path_factory.mktemp("static") / "tiny"
    shutil.copytree(tiny_bundle, out)
    requantize_bundle(out, ["今天天气很好，我们去公园散步吧。", "他已经知道自己错了", "中国人民银行北京上海"] * 4)
    return out


def _networks(bundle, precision: str, threads: int = 0) -> OnnxNetworks:
    return Corrector.load(bundle, device="cpu", precision=precision, threads=threads).networks


def _rows_alone_vs_batched(net: OnnxNetworks, seed: int) -> None:
    """Each row run alone (unpadded, its own positions) equals the same row inside a random padded batch."""
    rng = np.random.default_rng(seed)
    vocab = 21128
    rows = [rng.integers(104, vocab, int(rng.integers(4, 40))) for _ in range(int(rng.integers(2, 9)))]
    width = max(len(r) for r in rows) + int(rng.integers(0, 6))
    ids = np.zeros((len(rows), width), np.int64)
    attn = np.zeros_like(ids)
    n_pos = [int(rng.integers(1, len(r) - 1)) for r in rows]
    pos = np.zeros((len(rows), max(n_pos)), np.int64)
    for i, (r, p) in enumerate(zip(rows, n_pos)):
        ids[i, : len(r)], attn[i, : len(r)] = r, 1
        pos[i, :p] = np.sort(rng.choice(np.arange(1, len(r) - 1), p, replace=False))
    rtd, lp = net.discriminate(ids, attn), net.generate(ids, attn, pos)
    for i, (r, p) in enumerate(zip(rows, n_pos)):
        one_ids, one_attn = ids[i : i + 1, : len(r)], attn[i : i + 1, : len(r)]
        assert np.array_equal(net.discriminate(one_ids, one_attn)[0], rtd[i, : len(r)])
        assert np.array_equal(net.generate(one_ids, one_attn, pos[i : i + 1, :p])[0], lp[i, :p])


@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_network_rows_never_mix(tiny_bundle, precision):
    """int8 here is the dynamically quantised copy: run on a whole batch its scales would mix the rows."""
    net = _networks(tiny_bundle, precision)
    assert net.precision == precision and net.rows_alone == (precision == "int8")
    for seed in range(5):
        _rows_alone_vs_batched(net, seed)


def test_static_int8_rows_never_mix_in_whole_batches(static_bundle):
    net = _networks(static_bundle, "int8")
    assert net.precision == "int8" and not net.rows_alone  # whole padded batches, one call
    for seed in range(5):
        _rows_alone_vs_batched(net, seed)


@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_thread_count_changes_nothing(tiny_bundle, precision):
    rng = np.random.default_rng(0)
    ids = rng.integers(104, 21128, (6, 30))
    attn = np.ones_like(ids)
    attn[2, 20:] = 0
    pos = np.tile(np.arange(1, 20), (6, 1))
    one, four = _networks(tiny_bundle, precision, 1), _networks(tiny_bundle, precision, 4)
    assert one.workers == 1 and four.workers == (4 if precision == "int8" else 1)  # int8: rows side by side
    assert np.array_equal(one.discriminate(ids, attn), four.discriminate(ids, attn))
    assert np.array_equal(one.generate(ids, attn, pos), four.generate(ids, attn, pos))
    rtd_1, lp_1, _ = one.run(ids, attn, pos)
    rtd_4, lp_4, _ = four.run(ids, attn, pos)
    assert np.array_equal(rtd_1, rtd_4) and np.array_equal(lp_1.logits, lp_4.logits)
    assert np.array_equal(rtd_1, one.discriminate(ids, attn))  # both networks at once = each alone
    np.testing.assert_allclose(lp_1.dense(), one.generate(ids, attn, pos).reshape(-1, lp_1.vocab_size),
                               atol=1e-5)


@pytest.fixture(scope="module", params=["fp32", "int8", "int8-static"])
def forced(request, tiny_bundle, static_bundle):
    bundle = static_bundle if request.param == "int8-static" else tiny_bundle
    return Corrector.load(bundle, device="cpu", precision=request.param.split("-")[0], **FORCE_EDITS)


@pytest.fixture(scope="module", params=["padded", "rows-alone"])
def fake_decoder(request, fake_tiny_bundle):
    """Hand-set networks with a few sure replacements, run in whole padded batches or one row at a time."""
    nets = FakeNetworks({"汽": 0.9}, {"汽": [("气", 12.0)], "末": [("未", 10.0)]}, rows_alone=request.param == "rows-alone")
    return fake_corrector(fake_tiny_bundle, nets, **FORCE_EDITS)


@settings(max_examples=25, deadline=None)
@given(texts=TEXTS, seed=st.integers(0, 2**16))
def test_texts_alone_or_in_any_batch_get_identical_results(forced, texts, seed):
    alone_or_in_any_batch(forced, texts, seed)


@settings(max_examples=25, deadline=None)
@given(texts=TEXTS, seed=st.integers(0, 2**16))
def test_the_decoder_gives_texts_alone_or_in_any_batch_identical_results(fake_decoder, texts, seed):
    alone_or_in_any_batch(fake_decoder, texts, seed)


def alone_or_in_any_batch(forced: Corrector, texts: list[str], seed: int) -> None:
    alone = [forced.correct(t) for t in texts]
    rng = random.Random(seed)
    order = list(range(len(texts)))
    rng.shuffle(order)
    others = ["".join(rng.choice(SAMPLE) for _ in range(rng.randint(1, 120))) for _ in range(rng.randint(0, 6))]
    mixed = [texts[i] for i in order] + others
    rng.shuffle(mixed)
    got = forced.correct_batch(mixed, batch_size=rng.randint(1, 16))
    by_text = {}
    for t, c in zip(mixed, got):
        by_text.setdefault(t, c)
    assert [by_text[t].to_dict() for t in texts] == [c.to_dict() for c in alone]


def test_the_forced_corrector_edits(forced):
    """The property above compares edits, not empty results."""
    assert len(forced.correct(SAMPLE[:40]).edits) >= 5


def test_the_fake_forced_corrector_edits(fake_decoder):
    c = fake_decoder.correct(SAMPLE[:40] + "汽车")
    assert len(c.edits) >= 5 and c.target[40] == "气"  # the networks' sure replacement


def test_batches_are_cut_by_length_only_for_padded_networks(fake_decoder):
    """Rows run alone pay nothing for padding: one batch of mixed lengths; whole padded batches are cut by length."""
    texts = ["天" * n for n in (3, 90, 5, 60, 8, 120, 4, 30)]
    batches = fake_decoder.prepare(texts).batches
    if fake_decoder.networks.rows_alone:
        assert len(batches) == 1
    else:
        assert len(batches) > 1
    assert sum(len(c.text) for b in batches for c in b) == sum(len(t) for t in texts)  # every chunk, once


def test_the_next_batch_runs_on_the_networks_while_this_one_is_decided(fake_decoder, monkeypatch):
    """correct_batch computes each later batch's sites on another thread; the results are those of each text alone."""
    import threading

    texts = [SAMPLE[i : i + 25] for i in range(0, 60, 15)]
    alone = [fake_decoder.correct(t).to_dict() for t in texts]
    seen: list[str] = []
    sites = type(fake_decoder).sites

    def spy(self, batch, settings=None):
        seen.append(threading.current_thread().name)
        return sites(self, batch, settings)

    monkeypatch.setattr(type(fake_decoder), "sites", spy)
    assert [c.to_dict() for c in fake_decoder.correct_batch(texts, batch_size=1)] == alone
    assert len(seen) == len(texts) and all(name.startswith("sites-ahead") for name in seen)
