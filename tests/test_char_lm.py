"""Character n-gram LM: estimator (training.evidence.char_lm) against a plain-Python Kneser-Ney reference, and the
vectorised reader (corrector.evidence.char_lm) against a one-query-at-a-time backoff loop. Tiny corpora, < 2 s."""

from __future__ import annotations

import gzip
import math
import random
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest

from corrector.evidence.char_lm import BOS, EOS, PAD, UNK, CharLM
from corrector.types import CorrectorError
from training.evidence import char_lm as build_lm

WORDS = ["今天", "天气", "很好", "我们", "去", "公园", "散步", "明天", "下雨", "吗", "，", "。", "不", "好"]
RARE = "春夏秋冬东南西北山水火木金土日月星云风雨雪花草树鸟鱼虫龙虎马牛羊猫狗"  # Zipf-distributed extras
VOCAB = 40  # < the corpus's distinct characters: the rarest become <unk> in training too


def make_corpus(d: Path, n_lines: int = 400, seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    zipf = [1 / (i + 1) ** 1.1 for i in range(len(RARE))]
    lines = []
    for _ in range(n_lines):
        toks = []
        for _ in range(rng.randint(2, 9)):
            toks.append(rng.choice(WORDS))
            if rng.random() < 0.15:
                toks.append(rng.choices(RARE, zipf)[0])
        lines.append("".join(toks))
    d.mkdir(parents=True, exist_ok=True)
    with gzip.open(d / "a.txt.gz", "wt", encoding="utf-8") as f:
        f.write("\n".join(lines[: n_lines // 2]) + "\n")
    with gzip.open(d / "b.txt.gz", "wt", encoding="utf-8") as f:
        f.write("\n".join(lines[n_lines // 2:]) + "\n")
    return lines


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    d = tmp_path_factory.mktemp("corpus")
    return d, make_corpus(d)


def build(corpus: tuple[Path, list[str]], tmp: Path, name: str, order: int = 3, smoothing: str = "kn",
          prune: tuple[int, ...] = (0, 0, 0), quant: int = 0) -> CharLM:
    out = tmp / name
    variant = build_lm.Variant(out, order, smoothing, list(prune), quant)
    build_lm.build(corpus[0], [variant], vocab_size=VOCAB, holdout_every=0)
    return CharLM.load(out)


@pytest.fixture(scope="module")
def lms(corpus: tuple[Path, list[str]], tmp_path_factory: pytest.TempPathFactory) -> dict[str, CharLM]:
    tmp = tmp_path_factory.mktemp("lm")
    return {
        "kn": build(corpus, tmp, "kn"),
        "kn_q": build(corpus, tmp, "kn_q", quant=8),
        "kn_pruned": build(corpus, tmp, "kn_pruned", prune=(0, 2, 3)),
        "kn4_pruned_q": build(corpus, tmp, "kn4_pruned_q", order=4, prune=(0, 0, 2, 3), quant=8),
        "sb": build(corpus, tmp, "sb", smoothing="sb"),
        "sb_q": build(corpus, tmp, "sb_q", smoothing="sb", quant=8),
    }


# ------------------------------------------------------------------ plain-Python references
def reference_kn(lines: list[str], lm: CharLM):
    """Interpolated modified Kneser-Ney written out with dicts (Chen & Goodman), as a function p(w, h)."""
    n = lm.order
    seqs = [[BOS, *lm.encode(s).tolist(), EOS] for s in lines]
    raw: list[Counter] = [Counter() for _ in range(n + 1)]
    for s in seqs:
        for k in range(1, n + 1):
            for i in range(len(s) - k + 1):
                raw[k][tuple(s[i:i + k])] += 1
    adj: list[dict] = [{} for _ in range(n + 1)]
    adj[n] = dict(raw[n])
    for k in range(n - 1, 0, -1):
        left: defaultdict = defaultdict(set)
        for g in raw[k + 1]:
            left[g[1:]].add(g[0])
        for g, c in raw[k].items():
            adj[k][g] = c if g[0] == BOS else len(left[g])
    del adj[1][(BOS,)]
    disc = [(0.0, 0.0, 0.0)] * (n + 1)
    for k in range(1, n + 1):
        cc = Counter(min(c, 5) for c in adj[k].values())
        assert min(cc[1], cc[2], cc[3], cc[4]) > 0  # the corpus is rich enough for Chen & Goodman's formula
        y = cc[1] / (cc[1] + 2 * cc[2])
        d = (1 - 2 * y * cc[2] / cc[1], 2 - 3 * y * cc[3] / cc[2], 3 - 4 * y * cc[4] / cc[3])
        # documented clamp of the estimator, for count-of-counts of toy corpora: D_i within (0, i)
        disc[k] = tuple(min(max(x, 0.05), i + 0.95) for i, x in enumerate(d))  # type: ignore[assignment]
    ctx: list[dict] = [defaultdict(lambda: [0.0, 0.0]) for _ in range(n + 1)]  # h -> [c(h), D-mass]
    for k in range(1, n + 1):
        for g, c in adj[k].items():
            d = disc[k][min(c, 3) - 1]
            ctx[k][g[:-1]][0] += c
            ctx[k][g[:-1]][1] += d
    V = lm.vocab_size

    def p(w: int, h: tuple) -> float:
        if w == BOS:
            return 0.0
        k = len(h) + 1
        if k == 1:
            tot, dm = ctx[1][()]
            c = adj[1].get((w,), 0)
            return max(c - disc[1][min(c, 3) - 1], 0.0) / tot * (c > 0) + dm / tot / (V - 1)
        if h not in ctx[k]:
            return p(w, h[1:])
        tot, dm = ctx[k][h]
        c = adj[k].get(h + (w,), 0)
        a = (c - disc[k][min(c, 3) - 1]) / tot if c else 0.0
        return a + dm / tot * p(w, h[1:])

    return p, disc


def reference_logprob(lm: CharLM, row: list[int]) -> float:
    """ARPA backoff, one query, through ``entry``: the longest stored n-gram + the skipped contexts' backoffs."""
    real = [x for x in row if x != PAD]
    w, h = real[-1], real[:-1]
    total = 0.0
    for start in range(len(h) + 1):
        c = h[start:]
        e = lm.entry([*c, w])
        if e is not None:
            return total + e[0]
        ce = lm.entry(c)
        total += ce[1] if ce is not None else float(lm.missing_bow)
    raise AssertionError("unigrams are always stored")


def some_windows(lm: CharLM, n: int = 400, seed: int = 1) -> np.ndarray:
    """Random windows over the vocabulary (mostly unseen n-grams) plus real sentence windows, with PADs."""
    rng = np.random.default_rng(seed)
    rows = rng.integers(3, lm.vocab_size, size=(n, lm.order))
    rows[: n // 4, -3:] = lm.encode("天气很")  # a seen context
    npad = rng.integers(0, lm.order, size=n)
    for i, k in enumerate(npad):
        rows[i, :k] = PAD
        if 0 < k < lm.order - 1 and rng.random() < 0.5:
            rows[i, k] = BOS
    real = lm.windows(lm.encode_sentence("今天天气很好，我们去公园散步。"))
    return np.concatenate((rows, real)).astype(np.int32)


def contexts(lm: CharLM) -> list[list[int]]:
    e = lm.encode
    out = [[PAD] * (lm.order - 2) + [BOS], [*e("天气很")[-(lm.order - 1):]], [*e("今天")[-(lm.order - 1):]],
           [*e("园园园园")[-(lm.order - 1):]], [PAD] * (lm.order - 2) + [int(e("吗")[0])]]
    return [([PAD] * (lm.order - 1 - len(c)) + c)[-(lm.order - 1):] for c in out]


def dist_sum(lm: CharLM, ctx: list[int]) -> float:
    ws = [w for w in range(lm.vocab_size) if w != BOS]
    q = np.array([[*ctx, w] for w in ws], dtype=np.int32)
    return float(np.exp(lm.logprob(q).astype(np.float64)).sum())


# ------------------------------------------------------------------ tests
def test_kn_matches_reference_and_is_normalised(lms: dict[str, CharLM], corpus: tuple[Path, list[str]]) -> None:
    lm = lms["kn"]
    p, disc = reference_kn(corpus[1], lm)
    assert np.allclose(lm.meta["discounts"], disc[1:], rtol=1e-9, atol=0)
    rows = some_windows(lm)
    got = lm.logprob(rows).astype(np.float64)
    want = []
    for r in rows.tolist():
        real = [x for x in r if x != PAD]
        want.append(math.log(p(real[-1], tuple(real[:-1]))))
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-5)
    for ctx in contexts(lm):
        assert dist_sum(lm, ctx) == pytest.approx(1.0, abs=1e-5), ctx


def test_discounts_follow_chen_and_goodman() -> None:
    adj = np.repeat([1, 2, 3, 4, 7], [100, 40, 20, 10, 5])
    y = 100 / (100 + 2 * 40)
    want = (1 - 2 * y * 40 / 100, 2 - 3 * y * 20 / 40, 3 - 4 * y * 10 / 20)
    assert build_lm.kn_discounts(adj) == pytest.approx(want, rel=1e-12)


def unseen_trigram(lm: CharLM) -> tuple[int, int, int]:
    """Some (a, b, c) with (a b) stored but neither (b c) nor (a b c)."""
    for a in range(3, lm.vocab_size):
        for b in range(3, lm.vocab_size):
            if lm.entry([a, b]) is None:
                continue
            for c in range(3, lm.vocab_size):
                if lm.entry([b, c]) is None and lm.entry([a, b, c]) is None:
                    return a, b, c
    raise AssertionError("no unseen trigram")


def test_backoff_arithmetic_for_an_unseen_ngram(lms: dict[str, CharLM]) -> None:
    lm = lms["kn"]
    a, b, c = unseen_trigram(lm)
    pab, bow_ab = lm.entry([a, b])  # type: ignore[misc]
    _, bow_b = lm.entry([b])  # type: ignore[misc]
    pc, _ = lm.entry([c])  # type: ignore[misc]
    # P(c | a b) = bow(a b) * bow(b) * P(c)
    assert lm.logprob(np.array([[a, b, c]]))[0] == pytest.approx(bow_ab + bow_b + pc, abs=1e-6)
    # a stored trigram is read directly, without backoff
    x, y, z = (int(i) for i in lm.encode("天气很"))
    assert lm.logprob(np.array([[x, y, z]]))[0] == pytest.approx(lm.entry([x, y, z])[0], abs=1e-6)  # type: ignore[index]


@pytest.mark.parametrize("name", ["kn_pruned", "kn4_pruned_q"])
def test_pruning_keeps_distributions_normalised(lms: dict[str, CharLM], name: str) -> None:
    lm = lms[name]
    full = lms["kn"]
    assert sum(lm.meta["ngrams"]) < sum(full.meta["ngrams"]) or lm.order != full.order
    tol = 1e-5 if name == "kn_pruned" else 0.05  # quantised backoffs/probabilities: approximately
    for ctx in contexts(lm):
        assert dist_sum(lm, ctx) == pytest.approx(1.0, abs=tol), ctx


def test_pruned_ngrams_are_closed_under_prefix_and_suffix(lms: dict[str, CharLM]) -> None:
    lm = lms["kn_pruned"]
    assert lm.meta["ngrams"][2] < lms["kn"].meta["ngrams"][2]
    rows = some_windows(lm, n=300)
    for r in rows.tolist():
        real = [x for x in r if x != PAD]
        for i in range(len(real) - lm.order + 1):
            g = real[i:i + lm.order]
            if lm.entry(g) is not None:
                assert lm.entry(g[:-1]) is not None and lm.entry(g[1:]) is not None


def test_quantised_close_to_unquantised(lms: dict[str, CharLM]) -> None:
    rows = some_windows(lms["kn"])
    exact = lms["kn"].logprob(rows)
    quant = lms["kn_q"].logprob(rows)
    assert np.abs(exact - quant).max() < 0.1
    assert np.abs(exact - quant).mean() < 0.02
    assert lms["kn_q"].quantised and not lms["kn"].quantised


@pytest.mark.parametrize("name", ["kn", "kn_q", "kn_pruned", "kn4_pruned_q", "sb", "sb_q"])
def test_vectorised_logprob_equals_reference_loop(lms: dict[str, CharLM], name: str) -> None:
    lm = lms[name]
    rows = some_windows(lm, seed=7)
    got = lm.logprob(rows)
    want = np.array([reference_logprob(lm, r) for r in rows.tolist()], dtype=np.float64)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)
    # batch composition does not change a result
    np.testing.assert_array_equal(lm.logprob(rows[::-1])[::-1], got)
    np.testing.assert_array_equal(lm.logprob(rows[5:6]), got[5:6])


def test_stupid_backoff_is_relative_frequency_times_point_four(lms: dict[str, CharLM],
                                                                corpus: tuple[Path, list[str]]) -> None:
    lm = lms["sb"]
    e = lm.encode
    text = "\n".join(corpus[1])
    x, y, z = (int(i) for i in e("天气很"))
    c_xyz, c_xy_any = text.count("天气很"), text.count("天气")  # "天气" never ends a line in this corpus
    assert lm.logprob(np.array([[x, y, z]]))[0] == pytest.approx(math.log(c_xyz / c_xy_any), abs=0.02)
    a, b, c = unseen_trigram(lm)
    want = 2 * math.log(0.4) + lm.entry([c])[0]  # type: ignore[index]
    assert lm.logprob(np.array([[a, b, c]]))[0] == pytest.approx(want, abs=1e-6)


def test_sentence_start_padding(lms: dict[str, CharLM]) -> None:
    lm = lms["kn"]
    ids = lm.encode_sentence("今天天气")
    assert ids[0] == BOS and ids[-1] == EOS
    win = lm.windows(ids)
    assert win.shape == (len(ids) - 1, 3)
    assert win[0].tolist() == [PAD, BOS, ids[1]]
    assert win[1].tolist() == [BOS, ids[1], ids[2]]
    # P(c1 | <s>) is the stored bigram's probability; P(<s> c1) never backs off past <s>
    lp = lm.token_logprobs(ids)
    assert lp.shape == (len(ids) - 1,)
    assert lp[0] == pytest.approx(lm.entry([BOS, ids[1]])[0], abs=1e-6)  # type: ignore[index]
    # a PAD window equals the same query scored by a model asked only for the shorter history
    assert lm.logprob(np.array([[PAD, PAD, ids[1]]]))[0] == pytest.approx(lm.entry([ids[1]])[0], abs=1e-6)  # type: ignore[index]
    assert lm.sentence_logprob("今天天气") == pytest.approx(float(lp.sum()), abs=1e-4)
    with pytest.raises(ValueError, match="PAD"):
        lm.logprob(np.array([[BOS, PAD, ids[1]]]))
    with pytest.raises(ValueError, match="PAD"):
        lm.logprob(np.array([[PAD, BOS, PAD]]))
    with pytest.raises(ValueError):
        lm.logprob(np.array([[0, 1, lm.vocab_size]]))
    with pytest.raises(ValueError, match="shape"):
        lm.logprob(np.array([[0, 1]]))


def test_encode_maps_unknown_characters_to_unk(lms: dict[str, CharLM]) -> None:
    lm = lms["kn"]
    ids = lm.encode("今天X魑😀天")
    assert ids.dtype == np.int32 and ids.shape == (6,)
    assert ids[2] == ids[3] == ids[4] == UNK
    assert ids[1] == ids[5] != UNK and ids[0] != UNK
    assert lm.encode("").shape == (0,)
    vocab = (lm.path / "vocab.txt").read_text(encoding="utf-8").splitlines()
    assert vocab[:3] == ["0\t<unk>\t0", "1\t<s>\t0", "2\t</s>\t0"] and len(vocab) == lm.vocab_size


def test_load_errors(tmp_path: Path) -> None:
    with pytest.raises(CorrectorError, match="no character LM"):
        CharLM.load(tmp_path)


def test_kenlm_models_need_the_optional_module(tmp_path: Path) -> None:
    arpa = tmp_path / "user.arpa"
    arpa.write_text("\\data\\\nngram 1=4\nngram 2=1\n\n\\1-grams:\n-1.0\t<unk>\n-99\t<s>\t-0.2\n-0.3\t</s>\n"
                    "-0.5\t好\t0\n\n\\2-grams:\n-0.1\t<s> 好\n\n\\end\\\n", encoding="utf-8")
    try:
        import kenlm  # type: ignore[import-not-found]  # noqa: F401
    except ImportError:
        with pytest.raises(CorrectorError, match="optional 'kenlm' module"):
            CharLM.load(arpa)
    else:
        lm = CharLM.load(arpa)
        assert lm.order == 2
        hao = int(lm.encode("好")[0])
        got = lm.logprob(np.array([[BOS, hao], [PAD, EOS], [BOS, EOS], [hao, hao]]))
        want = np.array([-0.1, -0.3, -0.2 - 0.3, -0.5]) * math.log(10)
        np.testing.assert_allclose(got, want, atol=1e-5)


def test_hash_table_finds_exactly_the_stored_ngrams(tmp_path: Path) -> None:
    """Enough entries for buckets longer than the first probe: every stored n-gram is found with its own
    value, and n-grams that differ from a stored one in one id are not."""
    rng = np.random.default_rng(0)
    base = 1000
    keys3 = np.unique(rng.integers(0, base**3, size=120_000).astype(np.uint64))
    # closed under prefixes and suffixes, as the estimator writes them
    keys2 = np.unique(np.concatenate((keys3 // np.uint64(base), keys3 % np.uint64(base**2))))
    lp = [np.full(base, -5.0), -rng.random(keys2.size) * 10, -rng.random(keys3.size) * 10]
    lb = [np.zeros(base), -rng.random(keys2.size), np.zeros(keys3.size)]
    t = build_lm.Tables([np.arange(base, dtype=np.uint64), keys2, keys3], lp, lb, [])
    meta = build_lm.write_model(tmp_path, t, base, np.arange(base - 3) + 0x4E00, np.ones(base - 3), 0, 0.0)
    assert meta["max_bucket"] > 4
    (tmp_path / "meta.json").write_text(__import__("json").dumps(meta), encoding="utf-8")
    lm = CharLM.load(tmp_path)
    ids = np.stack([keys3 // base**2, keys3 // base % base, keys3 % base], axis=1).astype(np.int32)
    np.testing.assert_array_equal(lm.logprob(ids), lp[2].astype(np.float32))
    # change the first id: the trigram is (almost surely) not stored, so the result backs off
    other = ids.copy()
    other[:, 0] = (other[:, 0] + 1) % base
    stored = np.isin(other[:, 0].astype(np.uint64) * base**2 + other[:, 1] * base + other[:, 2], keys3)
    got = lm.logprob(other[~stored][:500])
    want = [reference_logprob(lm, r) for r in other[~stored][:500].tolist()]
    np.testing.assert_allclose(got, want, atol=1e-6)
    assert not np.isin(got, lp[2].astype(np.float32)).all()


def test_arpa_round_trip_keeps_every_probability(lms: dict[str, CharLM], tmp_path: Path) -> None:
    lm = lms["kn_pruned"]
    arpa = tmp_path / "lm.arpa"
    assert build_lm.main(["--to-arpa", str(lm.path), "--out", str(arpa)]) == 0
    text = arpa.read_text(encoding="utf-8")
    assert f"ngram 3={lm.meta['ngrams'][2]}" in text and "-99\t<s>\t" in text
    # drop one bigram that is the suffix of a stored trigram: the importer must restore it by backoff
    lines = text.splitlines()
    tri = next(line for line in lines if line.count("\t") == 1 and len(line.split("\t")[1].split()) == 3)
    w1, w2, w3 = tri.split("\t")[1].split()
    suffix = next(i for i, line in enumerate(lines) if line.split("\t")[1:2] == [f"{w2} {w3}"])
    del lines[suffix]
    lines = [line.replace(f"ngram 2={lm.meta['ngrams'][1]}", f"ngram 2={lm.meta['ngrams'][1] - 1}")
             for line in lines]
    arpa.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "imported"
    assert build_lm.main(["--from-arpa", str(arpa), "--out", str(out), "--quant", "0",
                          "--corpus", str(tmp_path / "no-corpus")]) == 0
    back = CharLM.load(out)
    assert back.meta["added_for_closure"] == [0, 1, 0]  # per order 1..3
    rows = some_windows(lm, seed=3)
    text_rows = [[int(x) for x in r] for r in rows.tolist()]
    # ids differ between the two models (the importer orders characters by unigram probability): map them
    chars = {i: int(c) for i, c in enumerate(lm.codepoints.tolist())}
    to_back = {i: (i if i < 3 else int(back.encode(chr(chars[i]))[0])) for i in range(lm.vocab_size)}
    mapped = np.array([[x if x == PAD else to_back[x] for x in r] for r in text_rows], dtype=np.int32)
    np.testing.assert_allclose(back.logprob(mapped), lm.logprob(rows), atol=1e-5)
    try:
        import kenlm  # type: ignore[import-not-found]  # noqa: F401
    except ImportError:
        return
    ken = CharLM.load(arpa)  # KenLM itself, through the adapter: same numbers, same PAD/<s> convention
    sent = "今天天气很好，我们去公园散步。"
    np.testing.assert_allclose(ken.token_logprobs(ken.encode_sentence(sent)),
                               back.token_logprobs(back.encode_sentence(sent)), atol=1e-4)


@pytest.mark.slow
def test_guarded_lookup_equals_bounded_lookup(tmp_path: Path) -> None:
    """Big enough (2^21 buckets) for the writer to certify the bucket-bit guard: the fast lookup, which
    never reads bucket lengths, finds exactly what the length-checked one finds."""
    rng = np.random.default_rng(1)
    base = 7000
    keys2 = np.unique(rng.integers(0, base**2, size=2_300_000).astype(np.uint64))
    lp = [np.full(base, -5.0), -rng.random(keys2.size) * 10]
    lb = [np.zeros(base), -rng.random(keys2.size)]
    t = build_lm.Tables([np.arange(base, dtype=np.uint64), keys2], lp, lb, [])
    meta = build_lm.write_model(tmp_path, t, base, np.arange(base - 3) + 0x4E00, np.ones(base - 3), 8, 0.0)
    assert meta["guarded"] and meta["hash_bits"] >= 21
    (tmp_path / "meta.json").write_text(__import__("json").dumps(meta), encoding="utf-8")
    lm = CharLM.load(tmp_path)
    q = np.concatenate((keys2[rng.integers(0, keys2.size, 200_000)],
                        rng.integers(0, base**2, 200_000).astype(np.uint64))) + np.uint64(lm._offs[2])
    fast = lm._lookup_guarded(q)
    slow = lm._lookup_bounded(q)
    np.testing.assert_array_equal(fast[0], slow[0])
    np.testing.assert_array_equal(fast[1][fast[0]], slow[1][slow[0]])
    assert fast[0][:200_000].all()


def test_make_csc_data_lm_scorer_sums_sentence_logprobs(lms: dict[str, CharLM],
                                                         corpus: tuple[Path, list[str]]) -> None:
    """training.data.make_csc_data's scorer for the 'lm' error kind: one vectorised lookup for a list of texts,
    each text's score its sentence log-probability."""
    from training.data.make_csc_data import lm_scorer

    lm = lms["kn4_pruned_q"]
    texts = corpus[1][:5] + ["完全没见过的句子"]
    scores = lm_scorer(lm.path)(texts)
    assert scores == pytest.approx([lm.sentence_logprob(t) for t in texts], rel=1e-6)
