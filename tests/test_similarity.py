"""Pinyin/shape similarity: the pure pinyin rules, the table builder on a tiny vocab, and the reader."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import system_dependency

from corrector.evidence.similarity import SimilarityTables, pinyin_similarity
from corrector.types import CorrectorError
from training.evidence import similarity as build

CHARS = "己已巳巴未末朱本木候侯喉猴拔拨披八把吧晴睛请清情行航中钟重的地得他她它在再贝见日曰口人入大太天"
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "ab", "##的", *CHARS]
FREQ = {ch: 1000 - 10 * i for i, ch in enumerate(CHARS)}


@pytest.fixture(scope="module")
def decomposition_tables(tmp_path_factory: pytest.TempPathFactory) -> SimilarityTables:
    out = tmp_path_factory.mktemp("decomposition")
    build.build_tables(VOCAB, FREQ, out, font=None)
    return SimilarityTables.load(out)


@pytest.fixture(scope="module")
def font() -> Path:
    found = build.find_font()
    system_dependency(found is not None, "no CJK font installed (apt-get install fonts-wqy-zenhei)")
    assert found is not None
    return found


@pytest.fixture(scope="module")
def glyph_dir(tmp_path_factory: pytest.TempPathFactory, font: Path) -> Path:
    out = tmp_path_factory.mktemp("glyph")
    build.build_tables(VOCAB, FREQ, out, font=font)
    return out


@pytest.fixture(scope="module")
def glyph_tables(glyph_dir: Path) -> SimilarityTables:
    return SimilarityTables.load(glyph_dir)


def names(neighbours: list[tuple[str, float]]) -> list[str]:
    return [c for c, _ in neighbours]


# ---------------------------------------------------------------------------------------------- pinyin rules


def test_identical_reading_scores_one() -> None:
    assert pinyin_similarity(["zhong1"], ["zhong1"]) == 1.0


def test_tone_only_difference_scores_point_eight() -> None:
    assert pinyin_similarity(["zhong1"], ["zhong4"]) == 0.8


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("zi1", "zhi3"),
        ("ci2", "chi1"),
        ("si4", "shi4"),
        ("nan2", "lan2"),
        ("lu4", "ru4"),
        ("fa1", "ha1"),
        ("ban1", "bang3"),
        ("ben3", "beng1"),
        ("bin1", "bing4"),
        ("lian2", "liang2"),
        ("guan1", "guang3"),
        ("zan1", "zhang4"),  # initial and final both fuzzy
    ],
)
def test_fuzzy_pairs_score_point_six_in_both_directions(a: str, b: str) -> None:
    assert pinyin_similarity([a], [b]) == 0.6
    assert pinyin_similarity([b], [a]) == 0.6


@pytest.mark.parametrize(("a", "b"), [("ma1", "shui3"), ("nan2", "ran2"), ("ba1", "pa1"), ("an1", "en1")])
def test_unrelated_readings_score_zero(a: str, b: str) -> None:
    assert pinyin_similarity([a], [b]) == 0.0


def test_heteronyms_take_the_best_pair() -> None:
    xing_hang = ["xing2", "hang2"]
    assert pinyin_similarity(xing_hang, ["hang2"]) == 1.0
    assert pinyin_similarity(xing_hang, ["xing4"]) == 0.8
    assert pinyin_similarity(xing_hang, ["han2"]) == 0.6
    assert pinyin_similarity([], ["hang2"]) == 0.0


# ---------------------------------------------------------------------------------------------- builder + reader


def test_readings_keep_heteronyms_in_use(decomposition_tables: SimilarityTables) -> None:
    assert {"xing2", "hang2"} <= set(decomposition_tables.readings("行"))
    assert decomposition_tables.readings("拔") == ("ba2",)  # archaic bei4 would make 拔 sound like 被
    assert "bei4" in build.char_readings("拔", all_readings=True)
    assert decomposition_tables.readings("龘") == ()


def test_frequency_comes_from_char_freq(decomposition_tables: SimilarityTables) -> None:
    assert decomposition_tables.frequency("己") == FREQ["己"]
    assert decomposition_tables.frequency("龘") == 0


def test_pinyin_sim_of_a_char_with_itself_is_one(decomposition_tables: SimilarityTables) -> None:
    assert decomposition_tables.pinyin_sim("己", "己") == 1.0
    assert decomposition_tables.pinyin_sim("龘", "龘") == 1.0
    assert decomposition_tables.pinyin_sim("候", "侯") == 1.0


def test_pinyin_neighbours_are_ranked_by_sim_then_frequency(decomposition_tables: SimilarityTables) -> None:
    t = decomposition_tables
    nbs = t.pinyin_neighbours("在", k=50)
    assert nbs and "在" not in names(nbs)
    assert all(score == t.pinyin_sim("在", c) > 0 for c, score in nbs)
    keys = [(-score, -t.frequency(c)) for c, score in nbs]
    assert keys == sorted(keys)
    assert "再" in names(nbs)
    assert ("侯", 1.0) in t.pinyin_neighbours("候")


def test_pinyin_neighbours_respect_k(decomposition_tables: SimilarityTables) -> None:
    assert len(decomposition_tables.pinyin_neighbours("他", k=2)) == 2


def test_decomposition_alone_finds_look_alikes(decomposition_tables: SimilarityTables) -> None:
    assert "已" in names(decomposition_tables.shape_neighbours("己"))
    assert "侯" in names(decomposition_tables.shape_neighbours("候"))
    assert "拨" in names(decomposition_tables.shape_neighbours("拔"))


def test_glyphs_find_look_alikes(glyph_tables: SimilarityTables) -> None:
    for ch, alike in [("己", "已"), ("己", "巳"), ("未", "末"), ("候", "侯"), ("拔", "拨"), ("晴", "睛")]:
        assert alike in names(glyph_tables.shape_neighbours(ch, k=5)), (ch, alike)


def check_shape_scores(t: SimilarityTables) -> None:
    for a in CHARS:
        nbs = t.shape_neighbours(a)
        assert [s for _, s in nbs] == sorted((s for _, s in nbs), reverse=True)
        assert all(0.0 < s <= 1.0 for _, s in nbs)
        assert a not in names(nbs)
        for b in CHARS:
            assert t.shape_sim(a, b) == t.shape_sim(b, a)
    assert t.shape_sim("己", "己") == 1.0
    assert t.shape_sim("己", "龘") == 0.0


def test_decomposition_shape_scores_are_sorted_bounded_and_symmetric(
    decomposition_tables: SimilarityTables,
) -> None:
    check_shape_scores(decomposition_tables)


def test_glyph_shape_scores_are_sorted_bounded_and_symmetric(glyph_tables: SimilarityTables) -> None:
    check_shape_scores(glyph_tables)


def test_meta_records_sources_and_counts(glyph_dir: Path, font: Path) -> None:
    meta = json.loads((glyph_dir / "meta.json").read_text(encoding="utf-8"))
    assert meta["sources"]["font"] == font.name
    assert meta["sources"]["pypinyin"] != "unknown"
    assert meta["counts"]["chars"] == len(CHARS)
    assert meta["counts"]["with_glyph"] == len(CHARS)


def test_neighbours_come_from_seen_characters(tmp_path: Path) -> None:
    freq = {ch: f for ch, f in FREQ.items() if ch != "已"}  # 已 never seen in the corpus
    build.build_tables(VOCAB, freq, tmp_path, font=None)
    t = SimilarityTables.load(tmp_path)
    assert "已" not in names(t.shape_neighbours("己"))
    assert "己" in names(t.shape_neighbours("已"))  # it still gets a row of its own


def test_confusion_table(decomposition_tables: SimilarityTables) -> None:
    table = build.confusion_table(VOCAB, decomposition_tables, k=8)
    assert table.shape == (len(VOCAB), 8) and table.dtype == np.int32
    assert (table[: VOCAB.index("己")] == -1).all()  # special and multi-character tokens
    row = table[VOCAB.index("己")]
    ids = row[row >= 0]
    assert len(ids) and VOCAB.index("己") not in ids and len(set(ids)) == len(ids)
    assert VOCAB.index("已") in ids
    assert (row[len(ids) :] == -1).all()  # padding only at the end
    assert VOCAB.index("再") in table[VOCAB.index("在")]


# ---------------------------------------------------------------------------------------------- errors + CLI


def test_load_missing_directory_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(CorrectorError, match="nope"):
        SimilarityTables.load(tmp_path / "nope")


def test_load_missing_file_names_it(tmp_path: Path) -> None:
    (tmp_path / "pinyin.tsv").write_text("己\t5\tji3\n", encoding="utf-8")
    with pytest.raises(CorrectorError, match="shape.tsv"):
        SimilarityTables.load(tmp_path)


def test_load_bad_line_names_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "pinyin.tsv").write_text("己\t5\tji3\n已 no tabs\n", encoding="utf-8")
    (tmp_path / "shape.tsv").write_text("己\t已:0.5\n", encoding="utf-8")
    with pytest.raises(CorrectorError, match=r"pinyin\.tsv:2"):
        SimilarityTables.load(tmp_path)


def test_cli_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        build.main(["--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    for flag in ("--vocab", "--char-freq", "--out", "--font", "--confusion-npy", "--top-k"):
        assert flag in out


def test_cli_missing_vocab_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        build.main(
            [
                "--vocab",
                str(tmp_path / "v.txt"),
                "--char-freq",
                str(tmp_path / "f.tsv"),
                "--out",
                str(tmp_path),
            ]
        )
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "v.txt does not exist" in err and "Traceback" not in err


def test_cli_without_font_warns_and_writes_tables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    vocab, freq = tmp_path / "vocab.txt", tmp_path / "char_freq.tsv"
    vocab.write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    freq.write_text("".join(f"{ch}\t{n}\n" for ch, n in FREQ.items()), encoding="utf-8")
    monkeypatch.setattr(build, "find_font", lambda explicit=None: None)
    out, npy = tmp_path / "tables", tmp_path / "conf.npy"
    build.main(
        ["--vocab", str(vocab), "--char-freq", str(freq), "--out", str(out), "--confusion-npy", str(npy)]
    )
    captured = capsys.readouterr()
    assert "no CJK font found" in captured.err
    assert "己 [ji3]" in captured.out
    assert np.load(npy).shape == (len(VOCAB), 16)
    assert "已" in names(SimilarityTables.load(out).shape_neighbours("己"))
