"""Gather and score (corrector.features) on a hand-built vocabulary, candidate table and generator output."""

from __future__ import annotations

import math

import numpy as np
import pytest

from corrector.evidence.candidates import CandidateTable
from corrector.evidence.char_lm import CharLM
from corrector.evidence.dictionary import WordTable
from corrector.evidence.kept_forms import PairCounts, kept_word_value
from corrector.evidence.similarity import SimilarityTables
from corrector.features import COL, FEATURES, INPUTS, SOURCES, Evidence, OwnCounts, RowContext, Sites
from corrector.features.cheap import ErrorCounts
from corrector.features.kept import Kept
from corrector.features.lm import LMGain
from corrector.features.state import TABLES
from corrector.features.words import _name_like
from corrector.runtime.sessions import LogProbs

VOCAB = ["[PAD]", "[UNK]", "x", *"今天气汽器七张三北京市很好田"]
FREQ = {c: 100 for c in "今天气汽器七张三北京市很好"} | {"气": 1000, "七": 10}  # 田: frequency 0, never proposed
VID = {c: i for i, c in enumerate(VOCAB)}


def table() -> CandidateTable:
    """汽: 气 (sounds alike, a real confusion), 器, 七, 田 (not proposable), 汽 itself; 天: 田."""
    cands = ["气", "器", "七", "汽", "田", "田"]
    return CandidateTable(["汽", "天"], np.array([0, 5, 6]), cands, pinyin=np.array([1.0, 0.9, 0.8, 1.0, 0.2, 0.5]),
                          shape=np.array([0.3, 0.1, 0.0, 1.0, 0.0, 0.6]), count=np.array([5, 0, 0, 0, 0, 2]))


def evidence(lm: CharLM | None = None) -> Evidence:
    return Evidence(VOCAB, table(), SimilarityTables({}, FREQ, {}), lm)


def sites_of(text: str, logprobs: dict[str, float] | None = None, default: float = -8.0,
             where: list[int] | None = None) -> Sites:
    """Every position of ``text`` (or those in ``where``) as a site of chunk 0, the generator giving each
    character of ``logprobs`` that log-probability everywhere."""
    pos = list(range(len(text))) if where is None else where
    lp = np.full((len(pos), len(VOCAB)), default, dtype=np.float32)
    for c, v in (logprobs or {}).items():
        lp[:, VID[c]] = v
    src = [text[i] for i in pos]
    return Sites(np.zeros(len(pos), np.int64), np.array(pos, np.int64), src, np.array([VID[c] for c in src]),
                 np.full(len(pos), 0.5, np.float32), LogProbs(lp, lp.max(1), np.zeros(len(pos), np.float32)))


def pairs(ev: Evidence, sites: Sites, short: tuple[np.ndarray, ...]) -> list[tuple[str, str]]:
    site, vid = short[0], short[1]
    return [(sites.src[s], ev.vocab[v]) for s, v in zip(site.tolist(), vid.tolist())]


# ---- the shortlist --------------------------------------------------------------------------------


def test_shortlist_by_the_cheap_score():
    ev, sites = evidence(), sites_of("汽")
    # pinyin only: 气 1.0, 器 0.9, 七 0.8, 田 0.2 (never proposed by the generator, but the table may hold it)
    short = ev.shortlist(sites, {"pinyin": 1.0}, size=2, top_k=0, custom={})
    assert pairs(ev, sites, short) == [("汽", "气"), ("汽", "器")]
    # frequency decides: 气 (log 1001) > 器 (log 101) > 七 (log 11) > 田 (log 1)
    short = ev.shortlist(sites, {"freq": 1.0}, size=10, top_k=0, custom={})
    assert pairs(ev, sites, short) == [("汽", "气"), ("汽", "器"), ("汽", "七"), ("汽", "田")]
    assert list(short[2]) == [0, 1, 2, 4]  # their rows in the table; 汽 itself (row 3) is never a candidate
    # the generator: 七 most probable, so with weight on gen_lp it leads
    sites = sites_of("汽", {"七": -0.1, "器": -2.0})
    short = ev.shortlist(sites, {"gen_lp": 1.0, "pinyin": 1.0}, size=3, top_k=0, custom={})
    assert pairs(ev, sites, short) == [("汽", "七"), ("汽", "器"), ("汽", "气")]  # 0.7, -1.1, -7.0


def test_shortlist_features_are_the_tables():
    ev, sites = evidence(), sites_of("汽", {"器": -1.5})
    short = ev.shortlist(sites, {"pinyin": 1.0}, size=10, top_k=0, custom={})
    f = ev.static_features(sites, *short[:3])
    assert list(f["pinyin"]) == pytest.approx([1.0, 0.9, 0.8, 0.2])
    assert list(f["shape"]) == pytest.approx([0.3, 0.1, 0.0, 0.0])
    assert list(f["confusions"]) == pytest.approx([math.log(6), 0.0, 0.0, 0.0])
    assert list(f["gen_lp"]) == pytest.approx([-8.0, -1.5, -8.0, -8.0])
    assert list(f["freq"]) == pytest.approx([math.log(1001 / 101), 0.0, math.log(11 / 101), math.log(1 / 101)])


def test_generator_top_k_custom_pairs_and_no_duplicates():
    ev = evidence()
    # the generator likes 汽 (the character itself), x (not Chinese), 田 (frequency 0), 气, 张, 三, in that order
    sites = sites_of("汽天", {"汽": -0.1, "x": -0.2, "田": -0.3, "气": -0.5, "张": -1.0, "三": -1.5})
    short = ev.shortlist(sites, {"pinyin": 1.0}, size=100, top_k=2, custom={"汽": {"张", "气", "汽"}})
    got = pairs(ev, sites, short)
    assert len(got) == len(set(got))  # one row per (site, candidate)
    assert all(a != b for a, b in got)  # never the character itself
    assert sorted(b for a, b in got if a == "汽") == sorted(["气", "器", "七", "田", "张"])
    # 天: its table's 田, and the generator's two best proposable characters: 汽 and 气
    assert sorted(b for a, b in got if a == "天") == sorted(["田", "汽", "气"])
    site, vid, static, custom = short
    rows = {(sites.src[s], VOCAB[v]): (int(t), bool(c)) for s, v, t, c in zip(site, vid, static, custom)}
    assert rows[("汽", "气")] == (0, True)  # from the table, from the generator and custom: the table's row
    assert rows[("汽", "张")] == (-1, True)
    assert rows[("天", "汽")] == (-1, False)


def test_custom_pairs_always_stay():
    ev, sites = evidence(), sites_of("汽")
    short = ev.shortlist(sites, {"pinyin": 1.0}, size=1, top_k=0, custom={"汽": {"张", "三"}})
    assert sorted(pairs(ev, sites, short)) == [("汽", "三"), ("汽", "张")]  # more of them than the size
    short = ev.shortlist(sites, {"pinyin": 1.0}, size=2, top_k=0, custom={"汽": {"张"}})
    assert pairs(ev, sites, short) == [("汽", "张"), ("汽", "气")]


def test_no_sites_and_no_candidates():
    ev = evidence()
    empty = ev.shortlist(sites_of("", where=[]), {}, size=8, top_k=5, custom={})
    assert [len(a) for a in empty] == [0, 0, 0, 0]
    none = ev.shortlist(sites_of("很好"), {}, size=8, top_k=0, custom={})  # nothing in the table, no generator
    assert [len(a) for a in none] == [0, 0, 0, 0]
    rows = ev.rows(sites_of("很好"), ["很好"], none, None)
    assert list(rows.site) == [0, 1] and (rows.X[:, COL["keep"]] == 1).all()


def test_empty_candidate_table():
    ev = Evidence(VOCAB, CandidateTable.empty(), SimilarityTables({}, FREQ, {}))
    sites = sites_of("汽", {"气": -0.5, "张": -1.0})
    short = ev.shortlist(sites, {"pinyin": 1.0}, size=8, top_k=2, custom={"汽": {"三"}})
    assert sorted(pairs(ev, sites, short)) == [("汽", "三"), ("汽", "张"), ("汽", "气")]
    f = ev.static_features(sites, *short[:3])
    assert not f["pinyin"].any() and not f["shape"].any() and not f["confusions"].any()


# ---- the feature rows -----------------------------------------------------------------------------


def test_rows_keep_row_first_with_its_own_features():
    ev = evidence()
    text = "天汽"
    sites = sites_of(text, {"气": -0.5})
    short = ev.shortlist(sites, {"pinyin": 1.0}, size=2, top_k=0, custom={"汽": {"张"}})
    rows = ev.rows(sites, [text], short, None)
    assert rows.X.shape == (len(rows), len(FEATURES))
    assert [(int(s), VOCAB[v]) for s, v in zip(rows.site, rows.vid)] == \
        [(0, "天"), (0, "田"), (1, "汽"), (1, "张"), (1, "气")]
    X = {(int(s), VOCAB[v]): dict(zip(FEATURES, x.tolist())) for s, v, x in zip(rows.site, rows.vid, rows.X)}
    keep = X[(1, "汽")]
    assert (keep["keep"], keep["pinyin"], keep["shape"], keep["rtd"], keep["custom"], keep["freq"]) == \
        (1.0, 1.0, 1.0, 0.0, 0.0, 0.0)
    assert keep["gen_lp"] == -8.0
    assert X[(1, "张")]["custom"] == 1.0 and X[(1, "张")]["keep"] == 0.0 and X[(1, "张")]["rtd"] == 0.5
    assert X[(1, "气")]["gen_lp"] == -0.5 and X[(1, "气")]["pinyin"] == 1.0
    assert X[(0, "田")]["pinyin"] == 0.5 and X[(0, "田")]["confusions"] == pytest.approx(math.log(3))
    assert all(x["lm_gain"] == 0.0 for x in X.values())  # no LM


def test_word_feature_counts_dictionary_words_through_the_choice():
    import jieba

    jieba.dt.check_initialized()
    ev = evidence()
    text = "今天汽很好"
    sites = sites_of(text, where=[2])
    short = ev.shortlist(sites, {"pinyin": 1.0}, size=1, top_k=0, custom={})
    rows = ev.rows(sites, [text], short, None)
    word = dict(zip((VOCAB[v] for v in rows.vid), rows.X[:, COL["word"]].tolist()))
    want = max(jieba.dt.FREQ.get(w, 0) for w in ("天气", "气很", "今天气", "天气很", "气很好"))
    assert want > 0 and word["气"] == pytest.approx(math.log1p(want))
    assert word["汽"] == pytest.approx(math.log1p(max(jieba.dt.FREQ.get(w, 0) for w in
                                                      ("天汽", "汽很", "今天汽", "天汽很", "汽很好"))))



def test_word4_counts_four_character_words_through_the_choice():
    """word4: the best log(1 + count) of a four-character dictionary word through the choice, in each of its four
    windows; 0 where none is a word, and word keeps to two and three characters."""
    counts = {"今天天气": 700, "天气很好": 90, "天气": 1000}
    words = WordTable.from_counts(counts, {t: i for i, t in enumerate(VOCAB) if len(t) == 1}, len(VOCAB))
    ev = Evidence(VOCAB, table(), SimilarityTables({}, FREQ, {}), None, words)
    for text, at, want in (("今天天汽很好", 3, max(700, 90)), ("今天天汽", 3, 700), ("汽很好", 0, 0), ("天汽很好", 1, 90)):
        sites = sites_of(text, where=[at])
        rows = ev.rows(sites, [text], ev.shortlist(sites, {"pinyin": 1.0}, size=1, top_k=0, custom={}), None)
        got = dict(zip((VOCAB[v] for v in rows.vid), rows.X[:, COL["word4"]].tolist()))
        assert got["气"] == pytest.approx(math.log1p(want)) and got["汽"] == 0.0, text
        word = dict(zip((VOCAB[v] for v in rows.vid), rows.X[:, COL["word"]].tolist()))["气"]
        assert word == pytest.approx(math.log1p(1000 if text[at - 1 : at] == "天" else 0))  # 天气

# ---- name-likeness --------------------------------------------------------------------------------


def test_name_likeness():
    assert [_name_like("张三来了", i) for i in range(4)] == [0.0, 1.0, 1.0, 0.0]  # one or two after a surname
    assert [_name_like("北京市", i) for i in range(3)] == [0.0, 1.0, 0.0]  # before a place-name suffix
    assert [_name_like("今天很好", i) for i in range(4)] == [0.0] * 4


def test_name_feature_on_candidate_rows_only():
    ev = evidence()
    text = "张三北京市"
    sites = sites_of(text, {"气": -0.5})
    rows = ev.rows(sites, [text], ev.shortlist(sites, {}, size=8, top_k=1, custom={}), None)
    name = {}
    for s, x in zip(rows.site.tolist(), rows.X):
        if x[COL["keep"]] == 1:
            assert x[COL["name"]] == 0.0
        else:
            name[text[s]] = float(x[COL["name"]])
    assert name == {"张": 0.0, "三": 1.0, "北": 1.0, "京": 1.0, "市": 0.0}  # 北: two after 张


# ---- the LM gain ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def lm(tiny_lm) -> CharLM:
    return CharLM.load(tiny_lm)


@pytest.mark.parametrize("text", ["今天汽很好", "汽", "天气很好今天", "张三北京市"])
def test_lm_gain_is_the_sentence_log_probability_difference(lm, text):
    """gain(candidate) = log P(text with it) - log P(text), summed over the windows that contain the position
    (the others cancel): checked against whole-sentence scores, at the first and the last position too."""
    ev = evidence(lm)
    sites = sites_of(text, {"气": -0.5, "天": -0.6, "京": -0.7})
    short = ev.shortlist(sites, {"pinyin": 1.0}, size=8, top_k=3, custom={})
    rows = ev.rows(sites, [text], short, ev.lm_ids([text]))
    assert len(rows) > len(sites)
    base = lm.sentence_logprob(text)
    for s, v, x in zip(rows.site.tolist(), rows.vid.tolist(), rows.X):
        gain = float(x[COL["lm_gain"]])
        if x[COL["keep"]] == 1:
            assert gain == 0.0
            continue
        i = int(sites.char[s])
        changed = text[:i] + VOCAB[v] + text[i + 1:]
        assert gain == pytest.approx(lm.sentence_logprob(changed) - base, abs=1e-3)
    assert np.abs(rows.X[:, COL["lm_gain"]]).max() > 1.0  # the LM has an opinion here


def test_lm_gain_is_rescored_for_chosen_rows_on_the_current_text(lm):
    """After an edit, the LM ids change and only the rows asked for are scored again, on the new text."""
    ev = evidence(lm)
    text = "今天汽很好"
    sites = sites_of(text, {"气": -0.5})
    rows = ev.rows(sites, [text], ev.shortlist(sites, {"pinyin": 1.0}, size=8, top_k=1, custom={}), ev.lm_ids([text]))
    ids = ev.lm_ids([text])
    ids[0] = ids[0].copy()
    ids[0][2] = ev.text.vid[VID["气"]]  # 汽 -> 气 applied
    which = rows.site == 1  # 天
    gain = ev.source(LMGain).gain(sites, rows.site, rows.vid, ids, which)
    assert (gain[~which] == 0).all()
    new = "今天气很好"
    for r in np.flatnonzero(which)[1:]:  # the candidates of 天
        changed = new[:1] + VOCAB[rows.vid[r]] + new[2:]
        assert gain[r] == pytest.approx(lm.sentence_logprob(changed) - lm.sentence_logprob(new), abs=1e-3)


def test_refresh_writes_the_edits_and_rescores_the_open_sites_near_them(lm):
    """refresh: the round's edits written into the LM ids, the rows of the open sites within the LM's order of one
    scored again on the new text (as ``rows`` scores that text), the others left as they were."""
    ev = evidence(lm)
    text = "今天汽很好今天很好今天很好"
    sites = sites_of(text, {"气": -0.5, "天": -0.6})
    short = ev.shortlist(sites, {"pinyin": 1.0}, size=8, top_k=2, custom={})
    rows = ev.rows(sites, [text], short, ev.lm_ids([text]))
    before = rows.X.copy()
    ids = ev.lm_ids([text])
    edit = next(r for r in range(len(rows)) if rows.site[r] == 2 and VOCAB[rows.vid[r]] == "气")
    open_sites = np.ones(len(sites), bool)
    open_sites[2] = False
    assert ev.refresh(sites, rows, ids, [2], [edit], open_sites)
    new = "今天气很好今天很好今天很好"
    assert ids[0].tolist() == ev.lm_ids([new])[0].tolist()
    fresh = ev.rows(sites, [new], short, ev.lm_ids([new]))
    near = (np.abs(sites.char - 2) < lm.order) & open_sites
    col = COL["lm_gain"]
    np.testing.assert_array_equal(rows.X[near[rows.site], col], fresh.X[near[rows.site], col])
    np.testing.assert_array_equal(rows.X[~near[rows.site], col], before[~near[rows.site], col])
    assert (rows.X[near[rows.site], col] != before[near[rows.site], col]).any()
    untouched = [c for c in range(len(FEATURES)) if FEATURES[c] not in ("lm_gain", "pair")]
    np.testing.assert_array_equal(rows.X[:, untouched], before[:, untouched])
    far = np.zeros(len(sites), bool)  # no open site near an edit: nothing scored
    assert not ev.refresh(sites, rows, ev.lm_ids([text]), [2], [edit], far)


def test_without_frequencies_every_chinese_character_may_be_proposed():
    """A bundle exported from a Hugging Face pair has no character frequencies: the generator's top-k then
    comes from every single Chinese character of the vocabulary."""
    ev = Evidence(VOCAB, CandidateTable.empty(), SimilarityTables({}, {}, {}))
    assert [VOCAB[v] for v in np.flatnonzero(ev.vocabulary.proposable)] == list("今天气汽器七张三北京市很好田")
    sites = sites_of("汽", {"田": -0.1, "x": -0.05, "张": -0.2})
    assert sorted(pairs(ev, sites, ev.shortlist(sites, {}, size=8, top_k=2, custom={}))) == [("汽", "张"), ("汽", "田")]
    assert [VOCAB[v] for v in np.flatnonzero(evidence().vocabulary.proposable)] == list("今天气汽器七张三北京市很好")
    # 田: frequency 0


def test_generator_log_probs_without_the_dense_matrix():
    """LogProbs keeps logits and each row's normaliser: entries equal a log-softmax, whatever rows come with it."""
    from corrector.runtime.sessions import _log_softmax

    rng = np.random.default_rng(0)
    logits = (rng.standard_normal((LogProbs.BLOCK * 2 + 3, 500)) * 4).astype(np.float32)
    lp = LogProbs.from_logits(logits)
    want = _log_softmax(logits.copy())
    np.testing.assert_allclose(lp.dense(), want, atol=1e-5)
    rows, cols = np.array([0, 5, 34, 34]), np.array([3, 499, 0, 7])
    np.testing.assert_allclose(lp.at(rows, cols), want[rows, cols], atol=1e-5)
    np.testing.assert_array_equal(lp.best, logits.max(1))
    tail = LogProbs.from_logits(logits[17:])  # other block boundaries: the same numbers, bit for bit
    np.testing.assert_array_equal(tail.logz, lp.logz[17:])
    np.testing.assert_array_equal(lp.take(np.arange(len(logits)) % 2 == 0).logz, lp.logz[::2])
    assert lp.without_logits().logits.shape == (len(logits), 0)


def test_seen_counts_the_rarer_and_seen_max_the_commoner_correctly_written_bigram_on_keep_rows_only():
    """seen = log(1 + the smaller count of the character's bigrams with its neighbours, as written, in the
    table's correctly written bigrams); one neighbour at a chunk edge; 0 on candidate rows."""
    counts = PairCounts(bigrams={"今天": 9, "天汽": 3, "汽很": 20})  # 很好: never written correctly twice, so absent
    ev = Evidence(VOCAB, table(), SimilarityTables({}, FREQ, {}), None, counts=counts)
    text = "今天汽很好"
    sites = sites_of(text)
    left, right = ev.source(Kept).kept.bigram_counts(ev.vocabulary.chunk_ids(sites, [text]), sites.chunk, sites.char,
                                                     sites.src_id)
    assert left.tolist() == [-1, 9, 3, 20, 0] and right.tolist() == [9, 3, 20, 0, -1]
    short = ev.shortlist(sites, {"pinyin": 1.0}, size=2, top_k=0, custom={})
    rows = ev.rows(sites, [text], short, None)
    got = {(int(s), VOCAB[v]): x[COL["seen"]] for s, v, x in zip(rows.site, rows.vid, rows.X)}
    assert got[(0, "今")] == pytest.approx(math.log(10))  # first character: its right bigram only
    assert got[(1, "天")] == pytest.approx(math.log(4))  # min(9, 3)
    assert got[(2, "汽")] == pytest.approx(math.log(4))  # min(3, 20)
    assert got[(3, "很")] == 0.0 and got[(4, "好")] == 0.0
    assert got[(2, "气")] == 0.0 and got[(1, "田")] == 0.0  # candidates: none
    top = {(int(s), VOCAB[v]): x[COL["seen_max"]] for s, v, x in zip(rows.site, rows.vid, rows.X)}
    assert top[(0, "今")] == pytest.approx(math.log(10))  # one neighbour: the same as seen
    assert top[(1, "天")] == pytest.approx(math.log(10))  # max(9, 3)
    assert top[(2, "汽")] == pytest.approx(math.log(21))  # max(3, 20)
    assert top[(3, "很")] == pytest.approx(math.log(21)) and top[(4, "好")] == 0.0
    assert top[(2, "气")] == 0.0 and top[(1, "田")] == 0.0


def test_correct_bigrams_count_only_positions_written_as_meant():
    from training.evidence.candidates import bigram_arrays, correct_bigrams

    pairs = [("我以经去了", "我已经去了"), ("所以经济", "所以经济"), ("所以经常", "所以经常")]
    c = correct_bigrams(pairs)
    assert c["以经"] == 2 and c["我以"] == 0 and c["经去"] == 1 and c["所以"] == 2
    arr = bigram_arrays(pairs)  # stored: written correctly at least twice
    assert arr["bigrams"].tolist() == ["以经", "所以"] and arr["count"].tolist() == [2, 2]


# ---- word pairs -----------------------------------------------------------------------------------

READINGS = {"今": ("jin1",), "天": ("tian1",), "田": ("tian2",), "气": ("qi4",), "汽": ("qi4",), "器": ("qi4",),
            "七": ("qi1",), "很": ("hen3",), "好": ("hao3", "hao4"), "北": ("bei3",), "京": ("jing1",)}


def pair_evidence(lm: CharLM | None = None) -> Evidence:
    counts = {"天气": 1000, "田七": 600, "北京": 9000, "今天": 5000, "很好": 150, "好很": 0}  # 很好: too rare a pair
    words = WordTable.from_counts(counts, {t: i for i, t in enumerate(VOCAB) if len(t) == 1}, len(VOCAB))
    return Evidence(VOCAB, table(), SimilarityTables(READINGS, FREQ, {}), lm, words)


def test_fuzzy_key_joins_what_an_ime_user_confuses():
    from corrector.evidence.similarity import fuzzy_key

    assert fuzzy_key("zhao") == fuzzy_key("zao") == "zao"
    assert fuzzy_key("jing") == fuzzy_key("jin") and fuzzy_key("sheng") == fuzzy_key("sen")
    assert fuzzy_key("jiang") == fuzzy_key("jian") == "jian" and fuzzy_key("lu") == fuzzy_key("nu") == fuzzy_key("ru")
    assert fuzzy_key("gang") != fuzzy_key("kang") and fuzzy_key("bei") != fuzzy_key("pei")


def test_word_pairs_change_both_characters_of_adjacent_sites_into_a_frequent_word():
    ev = pair_evidence()
    text = "今田汽很好"  # 田汽 (tian qi) sounds like 天气 and like 田七; 今田 (jin tian) like 今天
    sites = sites_of(text)
    p = ev.word_pairs(sites)
    got = sorted((int(a), VOCAB[x] + VOCAB[y]) for a, x, y in zip(p.a, p.x, p.y))
    # 田七 keeps 田 (one character: not a pair); 今天 keeps 今; 很好 is under the frequency floor
    assert got == [(1, "天气")]
    gap = sites_of(text, where=[0, 1, 3, 4])  # 汽 not editable (protected, say): no pair over it
    assert len(ev.word_pairs(gap)) == 0
    two = Sites(np.array([0, 1]), np.array([0, 0]), ["田", "汽"], np.array([VID["田"], VID["汽"]]),
                np.zeros(2, np.float32), sites_of("田汽").logprobs)
    assert len(ev.word_pairs(two)) == 0  # the same position of two chunks is no neighbour


def test_pair_candidates_join_the_shortlist_and_their_gain_is_the_sentence_difference(lm):
    ev = pair_evidence(lm)
    text = "今田汽很好"
    sites = sites_of(text)
    pairs = ev.word_pairs(sites)
    short = ev.shortlist(sites, {"pinyin": 1.0}, size=0, top_k=0, custom={}, pairs=pairs)
    assert sorted((sites.src[s], VOCAB[v]) for s, v in zip(short[0], short[1])) == [("汽", "气"), ("田", "天")]
    rows = ev.rows(sites, [text], short, ev.lm_ids([text]), pairs)
    want = lm.sentence_logprob("今天气很好") - lm.sentence_logprob(text)
    assert want > 1.0
    got = {(sites.src[s], VOCAB[v]): float(x[COL["pair"]]) for s, v, x in zip(rows.site, rows.vid, rows.X)}
    assert got[("田", "天")] == pytest.approx(want, abs=1e-3) and got[("汽", "气")] == pytest.approx(want, abs=1e-3)
    assert all(v == 0.0 for k, v in got.items() if k not in {("田", "天"), ("汽", "气")})  # keep rows included
    # once 天 is written, what is left to gain is 气's own
    ids = ev.lm_ids([text])
    edit = next(i for i, (s, v) in enumerate(zip(rows.site, rows.vid)) if sites.src[s] == "田" and VOCAB[v] == "天")
    assert ev.refresh(sites, rows, ids, [1], [edit], np.arange(len(sites)) != 1)
    left = rows.X[:, COL["pair"]]
    r = next(i for i, (s, v) in enumerate(zip(rows.site, rows.vid)) if sites.src[s] == "汽" and VOCAB[v] == "气")
    assert left[r] == pytest.approx(max(0.0, lm.sentence_logprob("今天气很好") - lm.sentence_logprob("今天汽很好")),
                                    abs=1e-3)
    no_lm = ev.rows(sites, [text], short, None, pairs)
    assert (no_lm.X[:, COL["pair"]] == 0).all()


def test_kept_word_is_the_best_kept_to_changed_ratio_of_the_counted_words_through_a_keep_row():
    """kept_word = max over the counted two- and three-character words through the character as written of
    log((kept + 1) / (changed + 1)); 0 where no word through it was counted, and on every candidate row."""
    counts = PairCounts(words={"今天": (9, 0), "天汽": (0, 4), "汽很好": (2, 2), "很好": (1, 0)})
    ev = Evidence(VOCAB, table(), SimilarityTables({}, FREQ, {}), None, counts=counts)
    text = "今天汽很好北"
    sites = sites_of(text)
    kept, changed = ev.source(Kept).kept.word_counts(ev.vocabulary.chunk_ids(sites, [text]), sites.chunk, sites.char)
    assert kept.shape == (6, 5) and kept[2].tolist() == [0, 0, 0, 0, 2] and changed[2].tolist() == [4, 0, 0, 0, 2]
    short = ev.shortlist(sites, {"pinyin": 1.0}, size=2, top_k=0, custom={})
    rows = ev.rows(sites, [text], short, None)
    got = {(int(s), VOCAB[v]): float(x[COL["kept_word"]]) for s, v, x in zip(rows.site, rows.vid, rows.X)}
    assert got[(0, "今")] == pytest.approx(math.log(10))
    assert got[(1, "天")] == pytest.approx(math.log(10))  # 今天 beats 天汽 (log 1/5)
    assert got[(2, "汽")] == pytest.approx(0.0)  # 天汽: log(1/5); 汽很好: log(3/3) = 0, the better
    assert got[(3, "很")] == pytest.approx(math.log(2))  # 很好 (1, 0) beats 汽很好
    assert got[(5, "北")] == 0.0  # nothing counted through it
    assert got[(2, "气")] == 0.0 and got[(1, "田")] == 0.0  # candidates: none


def test_kept_word_value_of_a_changed_word_alone_is_negative():
    kept = np.array([[0, 0, 0, 0, 0], [0, 3, 0, 0, 0], [0, 0, 0, 0, 0]], np.float32)
    changed = np.array([[0, 0, 0, 0, 0], [0, 0, 0, 0, 0], [5, 0, 0, 0, 0]], np.float32)
    assert kept_word_value(kept, changed).tolist() == pytest.approx([0.0, math.log(4), math.log(1 / 6)])


def test_word_counts_count_target_words_kept_and_source_words_changed():
    from training.evidence.candidates import word_arrays, word_counts

    pairs = [("他们在说甚么", "他们在说什么"), ("他们在说甚么", "他们在说甚么"), ("北京市很好", "北京市很好")]
    kept, changed = word_counts(pairs)
    assert kept["他们"] == 2 and kept["甚么"] == 1 and kept["北京市"] == 1 and kept["什么"] == 0
    assert changed["甚么"] == 1 and changed["他们"] == 0 and sum(changed.values()) == 1
    arrays = word_arrays(pairs)  # words counted twice or more in all
    assert arrays["words"].tolist() == ["他们", "甚么"]
    assert arrays["kept"].tolist() == [2, 1] and arrays["changed"].tolist() == [0, 1]


def test_name_chars_are_counted_inside_dot_joined_names_and_read_back_as_shares(tmp_path):
    """training.evidence.foreign_names counts characters inside dot-joined names (the outer parts cut next to the dot);
    corrector.evidence.foreign_names reads them back as in_names / (total + NAME_SHRINK)."""
    import gzip

    from corrector.evidence.foreign_names import NAME_SHRINK, NAMES_NPZ, load_name_shares
    from training.data.prepare import corpus_files, read_lines
    from training.evidence.foreign_names import count_name_chars, name_arrays, name_parts

    assert name_parts("美国总统唐纳德·特朗普表示，约翰‧史密斯") == ["唐纳德", "特朗普", "约翰", "史密斯"]
    assert name_parts("没有名字") == []
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    with gzip.open(corpus / "a.txt.gz", "wt", encoding="utf-8") as f:
        f.write("总统唐纳德·特朗普说\n唐纳德·特朗普\n特别好\n")
    in_names, total = count_name_chars(read_lines(corpus_files(corpus)))
    assert in_names["特"] == 2 and total["特"] == 3 and in_names["说"] == 0 and total["说"] == 1
    assert "·" not in total and in_names["统"] == 0  # cut: 总统唐纳德 -> 唐纳德
    arrays = name_arrays(in_names, total)  # characters seen in names at least twice
    assert arrays["chars"].tolist() == sorted("唐纳德特朗普")
    np.savez_compressed(tmp_path / NAMES_NPZ, **arrays)
    shares = load_name_shares(tmp_path)
    assert shares["特"] == pytest.approx(2 / (3 + NAME_SHRINK)) and shares["唐"] == pytest.approx(2 / (2 + NAME_SHRINK))


def test_the_rankers_training_rows_count_kept_words_without_the_pair_itself(fake_tiny_bundle):
    """Leave-one-out: a word the pair itself kept is counted once less on that pair's keep rows."""
    from fake_networks import fake_corrector

    from training.fitting.table import extract

    fix = fake_corrector(fake_tiny_bundle)
    fix = fix.with_evidence(Evidence(fix.vocab, fix.evidence.table, fix.tables, None,
                                     counts=PairCounts(words={"我们": (2, 0), "公园": (1, 0)})))
    pair = [("我们去公园散步", "我们去公园散步")]
    for loo, expect in ((False, [math.log(3)] * 2 + [0.0] + [math.log(2)] * 2 + [0.0] * 2),
                        (True, [math.log(2)] * 2 + [0.0] * 5)):
        t = extract(fix, pair, shortlist=2, leave_one_out=loo)
        keep = t.X[:, COL["keep"]] == 1
        assert t.X[keep, COL["kept_word"]].tolist() == pytest.approx(expect)
        assert not t.X[~keep, COL["kept_word"]].any()


def test_every_feature_column_is_filled_by_exactly_one_feature_object():
    """Each feature object declares the columns it fills and what of the rows it reads; adding evidence is one
    feature object (its kind in SOURCES) and its weight."""
    filled = [name for kind in SOURCES for name in kind.columns]
    assert sorted(filled) == sorted(FEATURES) and len(filled) == len(set(filled))
    assert all(kind.reads and set(kind.reads) <= set(INPUTS) for kind in SOURCES)
    assert all(set(kind.tables) <= set(TABLES) for kind in SOURCES)  # each built from fields of the one Tables
    ev = evidence()
    assert [type(f) for f in ev.sources] == list(SOURCES)
    assert all(type(kind.from_tables(ev.tables)) is kind for kind in SOURCES)
    text = "天汽"  # a feature fills its own columns and no other
    sites = sites_of(text, {"气": -0.5})
    rows = ev.rows(sites, [text], ev.shortlist(sites, {"pinyin": 1.0}, size=2, top_k=1, custom={}), None)
    for f in ev.sources:
        mine = [COL[c] for c in f.columns]
        others = [c for c in range(len(FEATURES)) if c not in mine]
        X = np.full_like(rows.X, 7.0)
        X[:, mine] = 0.0
        f.fill(RowContext(sites, [text], rows.site, rows.vid, rows.static, rows.X[:, COL["keep"]] == 1,
                          rows.X[:, COL["custom"]] == 1, ev.vocabulary.chunk_ids(sites, [text]), None, None), X)
        assert (X[:, others] == 7.0).all()
        np.testing.assert_array_equal(X[:, mine], rows.X[:, mine])


def test_with_lm_and_with_candidates_share_what_their_tables_leave_alone(lm):
    ev = evidence()
    with_lm = ev.with_lm(lm)
    assert with_lm.lm is lm and ev.lm is None and with_lm.gather is ev.gather
    assert with_lm.source(ErrorCounts) is ev.source(ErrorCounts) and with_lm.source(LMGain) is not ev.source(LMGain)
    fold = with_lm.with_candidates(CandidateTable.empty(), PairCounts())
    assert fold.source(LMGain) is with_lm.source(LMGain) and fold.dictionary is ev.dictionary
    assert fold.source(ErrorCounts) is not with_lm.source(ErrorCounts) and fold.gather is not with_lm.gather


def test_leave_one_out_takes_a_rows_own_pair_out_of_the_counts():
    """A pair the counts were made from is no evidence for itself: its gold row reads one error fewer and its
    character written once fewer (confusions, error_rate); its keep rows read the bigrams and words its own pair
    counted that many times fewer (seen, seen_max, kept_word). The other rows read the counts as they are."""
    tab = table()
    tab.written = np.array([40.0, 9.0], np.float32)  # 汽, 天 written so often in the real pairs
    counts = PairCounts(bigrams={"今天": 9, "天汽": 3, "汽很": 20}, words={"今天": (9, 0), "天汽": (0, 4)})
    ev = Evidence(VOCAB, tab, SimilarityTables({}, FREQ, {}), None, counts=counts)
    text = "今天汽很好"
    sites = sites_of(text)
    short = ev.shortlist(sites, {"pinyin": 1.0}, size=3, top_k=0, custom={})
    rows = ev.rows(sites, [text], short, None)
    gold = np.array([int(s) == 2 and VOCAB[v] == "气" for s, v in zip(rows.site, rows.vid)])
    own = PairCounts(bigrams={"今天": 1, "汽很": 2}, words={"今天": (1, 0), "天汽": (0, 1)})
    X = rows.X.copy()
    ev.leave_out(sites, [text], rows, OwnCounts(gold, [own]))
    r = int(np.flatnonzero(gold)[0])
    assert X[r, COL["confusions"]] == pytest.approx(math.log(6)) and rows.X[r, COL["confusions"]] == pytest.approx(
        math.log(5))
    assert rows.X[r, COL["error_rate"]] == pytest.approx(math.log((4 + 0.5) / (39 + 50)))
    changed = {COL[c] for c in ("confusions", "error_rate", "seen", "seen_max", "kept_word")}
    np.testing.assert_array_equal(np.delete(rows.X, list(changed), axis=1), np.delete(X, list(changed), axis=1))
    others = np.ones(len(rows), bool)
    others[r] = False
    for c in ("confusions", "error_rate"):
        np.testing.assert_array_equal(rows.X[others, COL[c]], X[others, COL[c]])
    keep = {int(s): x for s, x, k in zip(rows.site, rows.X, rows.X[:, COL["keep"]] == 1) if k}
    assert keep[1][COL["seen"]] == pytest.approx(math.log(4)) and keep[1][COL["seen_max"]] == pytest.approx(math.log(9))
    assert keep[3][COL["seen_max"]] == pytest.approx(math.log(19))  # 汽很: 20 - 2
    assert keep[0][COL["kept_word"]] == pytest.approx(math.log(9)) and keep[2][COL["kept_word"]] == pytest.approx(
        math.log(1 / 4))
    f = ev.static_features(sites, *short[:3], own=gold[~(rows.X[:, COL["keep"]] == 1)])
    np.testing.assert_array_equal(f["error_rate"], rows.X[rows.X[:, COL["keep"]] == 0, COL["error_rate"]])
