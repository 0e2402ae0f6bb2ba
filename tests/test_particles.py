"""The particles 的, 地, 得: the table (corrector.evidence.particles), its count over a corpus
(training.evidence.particles) and the ``particle`` feature, on hand-built counts with known answers."""

from __future__ import annotations

import gzip
import math

import numpy as np
import pytest

from corrector.evidence.candidates import CandidateTable
from corrector.evidence.dictionary import segment_around
from corrector.evidence.particles import ParticleTable
from corrector.evidence.similarity import SimilarityTables
from corrector.features import COL, Evidence, Sites
from corrector.runtime.sessions import LogProbs

VOCAB = ["[PAD]", "[UNK]", *"他认真的地得学习跑很快目是"]
FREQ = {c: 100 for c in VOCAB[2:]}


def sites_of(text: str, where: list[int]) -> Sites:
    """The positions ``where`` of ``text`` as sites of chunk 0, the generator sure of nothing."""
    lp = np.full((len(where), len(VOCAB)), -8.0, dtype=np.float32)
    src = [text[i] for i in where]
    return Sites(np.zeros(len(where), np.int64), np.array(where, np.int64), src, np.array([VOCAB.index(c) for c in src]),
                 np.full(len(where), 0.5, np.float32), LogProbs(lp, lp.max(1), np.zeros(len(where), np.float32)))


def table() -> ParticleTable:
    """After 认真 地 nine times in ten; before 学习 地 nine in ten; after 跑 and before 很快 得; before 是 的."""
    return ParticleTable({"认真": "A", "学习": "V", "跑": "V", "很快": "D", "是": "V"},
                         left={"认真": (1, 9, 0), "跑": (1, 0, 9), "他": (10, 0, 0)},
                         right={"学习": (1, 9, 0), "很快": (1, 0, 9), "是": (10, 0, 0)})


def test_a_particle_inside_a_word_is_no_slot():
    assert segment_around("他认真的学习", 3) == ("认真", "的", "学习", 3)  # 认真 + 的, not 认 + 真的
    assert table().context("目的是", 1) is None  # 目的
    assert table().context("他认真的学习", 3) == ("认真", "学习")
    assert table().context("的", 0) == ("", "")


def test_gain_is_the_log_ratio_of_the_choice_and_the_written_particle():
    t = table()
    lp = t.log_probs("认真", "学习")
    assert lp.argmax() == 1  # 地
    assert t.gain("他认真的学习", 3, "地") == pytest.approx(float(lp[1] - lp[0])) and t.gain("他认真的学习", 3, "地") > 2
    assert t.gain("他认真的学习", 3, "得") < 0
    assert t.gain("他跑的很快", 2, "得") > 2 and t.gain("他跑得很快", 2, "的") < -2
    assert t.gain("他认真的学习", 3, "的") == 0.0 and t.gain("他认真的学习", 3, "很") == 0.0
    assert t.gain("他认真学习", 2, "地") == 0.0  # 真 is no particle


def test_an_unseen_word_counts_as_its_class():
    t = ParticleTable({"认真": "A", "仔细": "A", "学习": "V"}, left={"认真": (0, 20, 0)}, right={"学习": (0, 20, 0)})
    assert t.log_probs("仔细", "学习")[1] == pytest.approx(t.log_probs("认真", "学习")[1], abs=0.2)
    assert t.word_class_of("Java") == "LAT" and t.word_class_of("，") == "END" and t.word_class_of("") == "END"
    assert t.word_class_of("鼘") == "O"


def test_the_table_is_read_back_as_written(tmp_path):
    t = table()
    t.save(tmp_path / "particles.json")
    back = ParticleTable.load(tmp_path / "particles.json")
    assert back == t and back.gain("他认真的学习", 3, "地") == t.gain("他认真的学习", 3, "地")


def test_the_count_reads_the_particles_beside_each_word(tmp_path):
    from training.evidence.particles import main

    lines = ["他认真地学习。"] * 3 + ["他跑得很快。"] * 2 + ["这是他的目的。"]
    with gzip.open(tmp_path / "news.txt.gz", "wt", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    main(["--corpus", str(tmp_path), "--files", "news.txt.gz", "--min-count", "2", "--out", str(tmp_path / "p.json")])
    t = ParticleTable.load(tmp_path / "p.json")
    assert t.left["认真"] == (0, 3, 0) and t.right["学习"] == (0, 3, 0)
    assert t.left["跑"] == (0, 0, 2) and t.right["很快"] == (0, 0, 2)
    assert "他" not in t.left and sum(map(sum, t.left.values())) == 5  # 他的 once: under --min-count
    assert t.right.get("是") is None  # the 的 of 目的 is no slot
    assert t.classes["学习"] == "V"


def test_the_feature_fills_particle_rows_and_nothing_else():
    ev = Evidence(VOCAB, CandidateTable(["的"], np.array([0, 2]), ["地", "得"], pinyin=np.array([0.9, 0.9]),
                                        shape=np.array([0.0, 0.0]), count=np.array([1, 1])),
                  SimilarityTables({}, FREQ, {}), None, None, None, table())
    text = "他认真的学习"
    sites = sites_of(text, where=[1, 3])
    rows = ev.rows(sites, [text], ev.shortlist(sites, {"pinyin": 1.0}, size=4, top_k=0, custom={}), None)
    got = {(int(sites.char[s]), VOCAB[v]): x for s, v, x in zip(rows.site, rows.vid, rows.X[:, COL["particle"]])}
    assert got[(3, "地")] == pytest.approx(table().gain(text, 3, "地")) and got[(3, "地")] > 2
    assert got[(3, "得")] == pytest.approx(table().gain(text, 3, "得"))
    assert got[(3, "的")] == 0.0  # the keep row
    assert all(v == 0.0 for (at, _), v in got.items() if at == 1)
    without = Evidence(VOCAB, ev.table, SimilarityTables({}, FREQ, {}))  # a bundle without the table: all 0
    rows = without.rows(sites, [text], without.shortlist(sites, {"pinyin": 1.0}, size=4, top_k=0, custom={}), None)
    assert not rows.X[:, COL["particle"]].any() and math.isfinite(rows.X.sum())
