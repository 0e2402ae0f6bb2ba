"""training.data.make_csc_data: synthetic CSC pairs on tiny tables built in tmp dirs (seconds, no real data)."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from corrector.evidence.similarity import SimilarityTables
from corrector.text.chars import is_cjk
from training.data.make_csc_data import (
    BenchmarkFileError,
    Corrupter,
    CorruptionConfig,
    HomophoneIndex,
    is_training_sentence,
    main,
    make_dataset,
    parse_mix,
    read_pairs,
)

ROOT = Path(__file__).resolve().parents[1]

SENTENCES = [
    "今天天气很好,我们去公园散步吧。",
    "他已经知道自己错了,这件事情没有那么简单。",
    "这件衣服做工很精致,价格是128元。",
    "公民的合法权利受到法律的保护。",
    "未来的日子里我们一起努力工作。",
    "我在北京和上海都住过三年。",
    "他在车站候车,顺便拨打电话给张三。",
    "中国人民银行发布了新的数据报告。",
    "李四拔草的时候看到了一只小鸟。",
    "这个问题我们明天再讨论吧OK?",
    "短句。",  # too short: filtered out
    "abc def ghi jkl mno 中文",  # too little CJK: filtered out
]
EXTRA = "精制景致径直静止权力全力末巳己侯拨汽已在再做作坐座"  # alternatives the corruptions can draw
WORDS = {  # a jieba-format dictionary in miniature: word → frequency
    "精致": 630, "精制": 369, "景致": 299, "径直": 625, "静止": 582,
    "权利": 7829, "权力": 14581, "全力": 1161,
    "天气": 5000, "公园": 3000, "已经": 20000, "自己": 30000,
}  # fmt: skip


def _vocab() -> list[str]:
    chars = dict.fromkeys(c for c in "".join(SENTENCES) + EXTRA if is_cjk(c))
    ascii_tokens = [chr(c) for c in range(33, 127) if not chr(c).isupper()]
    return ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *ascii_tokens, *chars]


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> dict[str, Path]:
    from training.evidence.similarity import build_tables

    root = tmp_path_factory.mktemp("csc")
    vocab = _vocab()
    (root / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    freq = {t: 10 + 7 * i for i, t in enumerate(vocab) if is_cjk(t)}
    build_tables(vocab, freq, root / "similarity")
    (root / "sentences.txt").write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    (root / "dict.txt").write_text("".join(f"{w} {f} n\n" for w, f in WORDS.items()), encoding="utf-8")
    real = [(s, s.replace("精致", "精制").replace("权利", "全力")) for s in SENTENCES[:10]]
    real += [(f"第{i}句话很好。", f"第{i}句话很好。") for i in range(20)]
    real_lines = [f"{t}\t{s}" for s, t in real] + ["长短不一\t长短不一样", "没有制表符"]
    (root / "real.tsv").write_text("\n".join(real_lines) + "\n", encoding="utf-8")
    return {
        "root": root,
        "vocab": root / "vocab.txt",
        "similarity": root / "similarity",
        "sentences": root / "sentences.txt",
        "dict": root / "dict.txt",
        "real": root / "real.tsv",
    }


@pytest.fixture(scope="module")
def tables(data) -> SimilarityTables:
    return SimilarityTables.load(data["similarity"])


@pytest.fixture(scope="module")
def homophones(data, tables) -> HomophoneIndex:
    vocab = set(_vocab())
    return HomophoneIndex(WORDS, lambda c: c in vocab and tables.frequency(c) > 0)


def _make(data, tables, homophones, out: Path, seed: int = 1, n: int = 200, **kw):
    return make_dataset(
        data["sentences"], tables, _vocab(), out, n=n, seed=seed, homophones=homophones, progress=False, **kw
    )


def _pairs(path: Path) -> list[tuple[str, str]]:
    return [tuple(line.split("\t")) for line in path.read_text(encoding="utf-8").splitlines()]


def test_same_seed_same_bytes_other_seed_other_output(data, tables, homophones, tmp_path):
    _make(data, tables, homophones, tmp_path / "a.tsv", seed=7)
    _make(data, tables, homophones, tmp_path / "b.tsv", seed=7)
    _make(data, tables, homophones, tmp_path / "c.tsv", seed=8)
    assert (tmp_path / "a.tsv").read_bytes() == (tmp_path / "b.tsv").read_bytes()
    assert (tmp_path / "a.tsv").read_bytes() != (tmp_path / "c.tsv").read_bytes()


def test_pairs_have_equal_length_and_only_cjk_vocab_characters_change(data, tables, homophones, tmp_path):
    _make(data, tables, homophones, tmp_path / "out.tsv", n=300)
    vocab = set(_vocab())
    n_changed = 0
    for source, target in _pairs(tmp_path / "out.tsv"):
        assert len(source) == len(target)
        assert is_training_sentence(target)
        for a, b in zip(source, target, strict=True):
            if a != b:
                n_changed += 1
                assert is_cjk(a) and is_cjk(b)
                assert a in vocab and tables.frequency(a) > 0
    assert n_changed > 200


def test_clean_share_is_respected(data, tables, homophones, tmp_path):
    stats = _make(data, tables, homophones, tmp_path / "out.tsv", n=400, clean_share=0.3)
    assert stats.synthetic == 400
    assert 120 <= stats.synthetic_clean <= 125  # exactly 30% left clean; a corruption almost never fails
    clean = sum(s == t for s, t in _pairs(tmp_path / "out.tsv"))
    assert clean == stats.synthetic_clean


def test_error_kinds_follow_the_mix(data, tables, homophones, tmp_path):
    mix = parse_mix("word=0,sound=1,shape=0,random=0")
    stats = _make(data, tables, homophones, tmp_path / "out.tsv", config=CorruptionConfig(mix=mix))
    assert set(stats.events) == {"sound"}
    mix = parse_mix("sound=0.75,random=0.25")  # both always find a place in these sentences
    stats = _make(data, tables, homophones, tmp_path / "out.tsv", n=600, config=CorruptionConfig(mix=mix))
    assert set(stats.events) == {"sound", "random"}
    assert 0.68 < stats.events["sound"] / sum(stats.events.values()) < 0.82


def test_word_level_homophone_slip(tables, homophones):
    config = CorruptionConfig(mix=parse_mix("word=1"))
    seen = set()
    for seed in range(20):
        corrupter = Corrupter(tables, _vocab(), random.Random(seed), homophones, config)
        source, target, kinds = corrupter.corrupt("公民的合法权利受到法律的保护。", n_errors=1)
        assert kinds == ["word"] and target == "公民的合法权利受到法律的保护。"
        seen.add(source)
    assert "公民的合法权力受到法律的保护。" in seen  # 权利 → 权力, the most frequent homophone
    source, _, _ = corrupter.corrupt("这件衣服做工很精致", n_errors=1)
    assert source[:7] == "这件衣服做工很" and source[7:] in {"精制", "景致", "径直", "静止"}


def test_homophone_index(homophones):
    assert homophones.key("精致") == "jing zhi"
    assert [w for w, _ in homophones.homophones("权利")] == ["权力", "全力"]
    assert homophones.confusability("权利") > 0.5 > homophones.confusability("自己") == 0.0


def test_single_character_draws(tables):
    corrupter = Corrupter(tables, _vocab(), random.Random(0))
    assert corrupter.look_alike("候") == "侯"
    for _ in range(20):
        c = corrupter.sound_alike("在")
        assert c in {"再"} or tables.pinyin_sim("在", c) > 0
        assert corrupter.random_char("在") != "在"


def test_prior_kind_draws_what_real_errors_wrote(tables):
    """prior: the written character comes from P(written | intended), in proportion to its weight; a
    character the prior knows nothing of gets no prior error, and a prior-only mix needs a prior."""
    prior = {"已": {"己": 3.0, "巳": 1.0}, "在": {"再": 1.0, "在": 5.0}}
    corrupter = Corrupter(tables, _vocab(), random.Random(0), config=CorruptionConfig(mix=parse_mix("prior=1")),
                          prior=prior)
    drawn = [corrupter.corrupt("他已经走了", n_errors=1) for _ in range(400)]
    assert all(kinds == ["prior"] and s[1] in "己巳" and s[0] + s[2:] == "他经走了" for s, _, kinds in drawn)
    share = sum(s[1] == "己" for s, _, _ in drawn) / len(drawn)
    assert 0.68 < share < 0.82  # 3 : 1
    assert corrupter.corrupt("再见", n_errors=1)[2] == []  # 再 and 见 have no prior entry
    assert corrupter.corrupt("在家", n_errors=1)[0] == "再家"  # the character itself is never drawn
    with pytest.raises(ValueError, match="prior"):
        Corrupter(tables, _vocab(), random.Random(0), config=CorruptionConfig(mix=parse_mix("prior=1")))


def test_function_kind_slips_function_words_into_their_homophones(tables):
    """function: 在 -> 再, 做 -> 作, 已 -> 以 ... as FUNCTION_SLIPS weighs them; a sentence with no such character
    gets none (the other kinds would make the error), and only characters the corpus writes are drawn."""
    from training.data.corruption import FUNCTION_SLIPS

    corrupter = Corrupter(tables, _vocab(), random.Random(0), config=CorruptionConfig(mix=parse_mix("function=1")))
    for sentence in ("我在北京和上海都住过三年。", "这件衣服做工很精致", "他已经知道自己错了"):
        drawn = {corrupter.corrupt(sentence, n_errors=1)[0] for _ in range(50)}
        for source in drawn:
            (i,) = [k for k, (a, b) in enumerate(zip(source, sentence)) if a != b]
            assert source[i] in FUNCTION_SLIPS[sentence[i]], (sentence, source)
    assert corrupter.corrupt("今天天气很好", n_errors=1)[2] == []
    assert {"的", "地", "得", "在", "再", "做", "作", "象", "像", "已", "以"} <= set(FUNCTION_SLIPS)


def test_lm_kind_keeps_the_draw_the_lm_cannot_tell_apart(tables):
    """lm: of the prior's draws at a position, the one the LM scores highest, and only if it costs the
    sentence at most lm_margin nats; the LM here is a hand-made table of sentence scores."""
    prior = {"已": {"己": 1.0, "巳": 1.0, "再": 1.0}}
    table = {"他已经走了": 0.0, "他再经走了": -1.5, "他己经走了": -3.0, "他巳经走了": -10.0}
    calls: list[list[str]] = []

    def lm_score(texts: list[str]) -> list[float]:
        calls.append(texts)
        return [table[t] for t in texts]

    corrupter = Corrupter(tables, _vocab(), random.Random(0), config=CorruptionConfig(mix=parse_mix("lm=1")),
                          prior=prior, lm_score=lm_score)
    made = [corrupter.corrupt("他已经走了", n_errors=1) for _ in range(100)]
    assert all(c[0] == "他已经走了" for c in calls)  # the sentence as it stands is scored with its variants
    errors = [s for s, _, kinds in made if kinds == ["lm"]]
    assert len(errors) > 80 and set(errors) == {"他再经走了"}  # 再 whenever it was among the 8 draws
    assert all(kinds in ([], ["lm"]) for _, _, kinds in made)
    strict = Corrupter(tables, _vocab(), random.Random(0),
                       config=CorruptionConfig(mix=parse_mix("lm=1"), lm_margin=1.0), prior=prior, lm_score=lm_score)
    assert all(strict.corrupt("他已经走了", n_errors=1)[2] == [] for _ in range(20))  # every draw costs > 1 nat
    with pytest.raises(ValueError, match="no error kind"):
        Corrupter(tables, _vocab(), random.Random(0), config=CorruptionConfig(mix=parse_mix("lm=1")), prior=prior)


def test_holdout_written_and_excluded(data, tables, homophones, tmp_path):
    stats = _make(
        data, tables, homophones, tmp_path / "train.tsv", n=50,
        real=[data["real"]], real_repeat=2, holdout=8, holdout_out=tmp_path / "dev.tsv",
    )  # fmt: skip
    dev = _pairs(tmp_path / "dev.tsv")
    train = _pairs(tmp_path / "train.tsv")
    assert len(dev) == 8 and stats.holdout == 8
    assert stats.real["real.tsv"]["skipped"] == 2  # unequal lengths, no tab
    dev_targets = {t for _, t in dev}
    assert not dev_targets & {t for _, t in train}
    real = [p for p in _pairs(data["real"]) if len(p) == 2 and len(p[0]) == len(p[1])]
    kept = [p for p in real if p[1] not in dev_targets]
    assert all(train.count(p) >= 2 for p in kept)
    assert len(train) == stats.written == 50 - stats.dropped_holdout_overlap + 2 * len(kept)


def test_distinct_reuses_few_sentences_with_fresh_errors_and_exclude_keeps_sentences_out(data, tables, homophones,
                                                                                           tmp_path):
    stats = _make(data, tables, homophones, tmp_path / "few.tsv", n=60, distinct=3, clean_share=0.0)
    pairs = _pairs(tmp_path / "few.tsv")
    targets = {t for _, t in pairs}
    assert len(pairs) == stats.written == 60 and len(targets) == 3  # 60 pairs on 3 sentences
    assert len({s for s, _ in pairs}) > 3  # each sentence with different errors
    _make(data, tables, homophones, tmp_path / "rest.tsv", n=60, exclude=frozenset(targets))
    assert not targets & {t for _, t in _pairs(tmp_path / "rest.tsv")}


def test_holdout_is_the_same_whatever_the_seed(data, tables, homophones, tmp_path):
    """The dev split must not depend on --seed: another seed gives other synthetic pairs, the same held-out ones."""
    held = []
    for seed in (1, 3):
        _make(data, tables, homophones, tmp_path / f"train{seed}.tsv", seed=seed, n=50, real=[data["real"]],
              holdout=4, holdout_out=tmp_path / f"dev{seed}.tsv")
        held.append(_pairs(tmp_path / f"dev{seed}.tsv"))
    assert held[0] == held[1] and len(held[0]) == 4
    assert _pairs(tmp_path / "train1.tsv") != _pairs(tmp_path / "train3.tsv")


def test_refuses_the_benchmark(data, tmp_path, capsys):
    bench = tmp_path / "sighan15_test.tsv"
    bench.write_text("错字\t错字\n", encoding="utf-8")
    with pytest.raises(BenchmarkFileError):
        read_pairs(bench)
    argv = ["--sentences", str(data["sentences"]), "--similarity", str(data["similarity"]),
            "--vocab", str(data["vocab"]), "--out", str(tmp_path / "o.tsv"), "--real", str(bench)]  # fmt: skip
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    assert "sighan15_test.tsv" in capsys.readouterr().err
    assert not (tmp_path / "o.tsv").exists()


def test_help(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "--holdout-out" in out and "--clean-share" in out and "python -m training.data.make_csc_data" in out


def test_sentence_filter():
    assert is_training_sentence("今天天气很好,我们去公园散步吧。")
    assert not is_training_sentence("短句。")
    assert not is_training_sentence("很" * 121)
    assert not is_training_sentence("abc def ghi jkl mno 中文")


def test_cli_is_deterministic_across_processes(data, tmp_path):
    """Same seed, different PYTHONHASHSEED (set/dict-order bugs): byte-identical files."""
    outs = []
    for hash_seed in ("1", "2"):
        out = tmp_path / f"train{hash_seed}.tsv"
        cmd = [
            sys.executable, "-m", "training.data.make_csc_data", "--sentences", str(data["sentences"]),
            "--similarity", str(data["similarity"]), "--vocab", str(data["vocab"]), "--out", str(out),
            "--n", "100", "--seed", "3", "--jieba-dict", str(data["dict"]), "--real", str(data["real"]),
            "--real-repeat", "2", "--holdout", "5", "--holdout-out", str(tmp_path / f"dev{hash_seed}.tsv"),
            "--no-progress",
        ]  # fmt: skip
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert "errors by kind" in proc.stdout and "written:" in proc.stdout
        outs.append((out.read_bytes(), (tmp_path / f"dev{hash_seed}.tsv").read_bytes()))
    assert outs[0] == outs[1]
    assert b"\t" in outs[0][0] and len(outs[0][1].splitlines()) == 5


def test_hard_clean_sentences_hold_digits_latin_quotations_or_a_rare_character():
    from training.data.make_csc_data import hard_clean

    common = "我们今天去公园玩"
    sentences = [common * 3, "我们2024年去公园", "我们去ＡＰＰ公园", "我们去Costco玩", "我们今天去鄱阳湖玩",
                 "我们今天去“公园”", "我们玩《公园》"]
    assert hard_clean(sentences) == [False, True, True, True, False, True, True]  # 鄱阳湖: few enough to be common
    import training.data.make_csc_data as m

    old, m.RARE_AFTER = m.RARE_AFTER, 8  # only the 8 most frequent characters are common
    try:
        assert hard_clean(sentences)[4] is True  # 鄱阳湖
    finally:
        m.RARE_AFTER = old


def test_clean_hard_share_draws_the_clean_pairs_from_hard_sentences(data, tables, homophones, tmp_path):
    # 2 of the 10 usable sentences hold digits or Latin (128元, OK): 80 of 400 pairs; 120 are left clean
    def hard_clean_pairs(**kw) -> tuple[int, int]:
        stats = _make(data, tables, homophones, tmp_path / "out.tsv", n=400, clean_share=0.3, **kw)
        clean = [s for s, t in _pairs(tmp_path / "out.tsv") if s == t]
        return sum(("128" in s or "OK" in s) for s in clean), stats.synthetic_clean

    n_hard, n_clean = hard_clean_pairs(clean_hard_share=1.0)
    assert n_hard == 80 and 120 <= n_clean <= 125  # every hard pair is clean; the share of clean pairs holds
    n_hard, _ = hard_clean_pairs(clean_hard_share=0.0)
    assert n_hard < 50  # at random: about 24
    n_hard, _ = hard_clean_pairs()  # the default: half among the hard ones (60), half at random (about 12)
    assert 60 <= n_hard <= 80


def test_fuzzy_pinyin_folds_the_pairs_an_ime_setting_merges():
    from training.data.homophones import fuzzy_syllable

    assert [fuzzy_syllable(s) for s in ("zhang", "chi", "shi", "lan", "ling", "meng", "nian", "ba")] == \
        ["zan", "ci", "si", "nan", "nin", "men", "nian", "ba"]


def test_the_fuzzy_index_offers_only_what_the_fuzzy_setting_adds(tables):
    """三年 (san nian) and 上年 (shang nian) sound alike only to a fuzzy-pinyin IME; 权力 is 权利's plain
    homophone, so the fuzzy index leaves it to the word kind."""
    words = {"三年": 300, "上年": 80, "权利": 7829, "权力": 14581}
    fuzzy = HomophoneIndex(words, fuzzy=True)
    assert fuzzy.homophones("三年") == [("上年", 80)] and fuzzy.homophones("权利") == []
    assert HomophoneIndex(words).homophones("三年") == []

    config = CorruptionConfig(mix=parse_mix("fuzzy=1"))
    pairs = lambda s: [(i, s[i:i + 2]) for i in range(len(s) - 1)]  # noqa: E731
    corrupter = Corrupter(tables, _vocab(), random.Random(0), config=config, fuzzy=fuzzy, segment=pairs)
    assert corrupter.corrupt("我在北京和上海都住过三年。", n_errors=1)[::2] == ("我在北京和上海都住过上年。", ["fuzzy"])
    with pytest.raises(ValueError, match="no error kind"):  # the kind needs its index
        Corrupter(tables, _vocab(), random.Random(0), config=config)


def test_lm_worse_keeps_only_the_errors_the_lm_finds_worse(tables):
    """CSCD-IME's filter: an error the LM reads as well as (or better than) the sentence is not made; the kind
    gives way and the sentence may stay clean."""
    prior = {"已": {"己": 1.0, "再": 1.0}}
    table = {"他已经走了": 0.0, "他己经走了": -2.0, "他再经走了": 0.5}
    lm_score = lambda texts: [table[t] for t in texts]  # noqa: E731
    made = []
    for worse in (False, True):
        config = CorruptionConfig(mix=parse_mix("prior=1"), lm_worse=worse)
        corrupter = Corrupter(tables, _vocab(), random.Random(0), config=config, prior=prior, lm_score=lm_score)
        made.append({corrupter.corrupt("他已经走了", n_errors=1)[0] for _ in range(40)})
        assert (corrupter.lm_rejected["prior"] > 0) == worse  # counted for the summary
    assert made[0] == {"他己经走了", "他再经走了"}
    assert made[1] == {"他己经走了", "他已经走了"}  # 再 is never written; those sentences stay as they were
    with pytest.raises(ValueError, match="lm_worse needs an LM"):
        Corrupter(tables, _vocab(), random.Random(0), config=CorruptionConfig(lm_worse=True))


def test_generator_kind_writes_what_the_generator_proposes_in_context(tables):
    """generator: at one position, one of the proposals for that position (drawn by probability), never the
    character written nor one the corpus does not write; the kind needs a proposer."""
    calls = []

    def propose(text: str, i: int) -> list[tuple[str, float]]:
        calls.append((text, i))
        return [(text[i], 0.5), ("再", 0.3), ("坐", 0.2), ("☃", 0.1)]

    config = CorruptionConfig(mix=parse_mix("generator=1"))
    corrupter = Corrupter(tables, _vocab(), random.Random(0), config=config, propose=propose)
    made = [corrupter.corrupt("他在车站候车", n_errors=1) for _ in range(60)]
    assert all(kinds == ["generator"] for _, _, kinds in made)
    for (source, target, _), (text, i) in zip(made, calls, strict=True):
        assert text == target and source[:i] + source[i + 1:] == target[:i] + target[i + 1:]
        assert source[i] in "再坐"
    assert {s[i] for (s, _, _), (_, i) in zip(made, calls, strict=True)} == {"再", "坐"}
    with pytest.raises(ValueError, match="no error kind"):
        Corrupter(tables, _vocab(), random.Random(0), config=config)


def test_generator_proposer_reads_a_generator_folder(tmp_path):
    """A tiny generator saved as the pretraining state saves it: top_k CJK characters, most probable first, the
    written character and special tokens never among them, probabilities of the softmax over the vocabulary."""
    torch = pytest.importorskip("torch")
    from transformers import ElectraConfig, ElectraForMaskedLM

    from training.data.generator_errors import GeneratorProposer

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", *"他在车站候再坐了"]
    torch.manual_seed(0)
    config = ElectraConfig(vocab_size=len(vocab), embedding_size=8, hidden_size=8, num_hidden_layers=1,
                           num_attention_heads=1, intermediate_size=16, max_position_embeddings=8)
    ElectraForMaskedLM(config).save_pretrained(tmp_path)
    (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    proposer = GeneratorProposer(tmp_path, top_k=4)
    text = "他在车站候车了他在车站"  # longer than the model: a window around the position is read
    for i in (1, 9):
        got = proposer.propose(text, i)
        assert len(got) == 4 and all(c in "他在车站候再坐了" and c != text[i] for c, _ in got)
        assert [p for _, p in got] == sorted((p for _, p in got), reverse=True) and 0 < sum(p for _, p in got) < 1
