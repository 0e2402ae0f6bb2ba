"""The word pieces of training.data.wordpiece: BPE merges with ## continuations, ties broken by the pieces."""

import collections
import random

from conftest import run_python as run

from corrector.text.tokenize import VOCAB_SIZE
from training.data.prepare import build_vocab
from training.data.wordpiece import pieces, word_counts


def test_merges_in_order_of_frequency_ties_to_the_smaller_pair():
    counts = collections.Counter({"abab": 10, "ab": 3, "cd": 6})
    # pairs: (a, ##b) 13; then (##a, ##b) and (ab, ##a) 10 each: the smaller pair ("##a" < "ab") goes first
    assert list(pieces(counts, 100, min_frequency=5)) == ["##a", "##b", "##d", "a", "c", "ab", "##ab", "abab", "cd"]
    assert list(pieces(counts, 100, min_frequency=7))[-1] == "abab"  # (c, ##d) occurs 6 times: never merged
    assert list(pieces(counts, 6, min_frequency=1)) == ["##a", "##b", "##d", "a", "c", "ab"]


def test_the_same_pieces_whatever_the_order_of_the_words():
    rng = random.Random(0)
    words = ["".join(rng.choice("abcde12") for _ in range(rng.randint(1, 6))) for _ in range(400)]
    counts = collections.Counter(rng.choice(words) for _ in range(5000))
    shuffled = list(counts.items())
    rng.shuffle(shuffled)
    assert list(pieces(counts, 200)) == list(pieces(collections.Counter(dict(shuffled)), 200))


def test_words_are_split_as_bert_splits_them():
    counts = word_counts(["Hello, world! 我们的iPhone 15很好，hello-world", "25℃ NBA总决赛"])
    assert counts == {"hello": 2, "world": 2, ",": 1, "!": 1, "iphone": 1, "15": 1, "，": 1, "-": 1, "25℃": 1, "nba": 1}


def test_build_vocab_does_not_depend_on_the_order_of_the_sentences():
    rng = random.Random(1)
    latin = ["iphone", "android", "covid", "2019年", "gdp", "nba", "5g", "app", "wifi", "ceo"]
    sents = [f"他说{rng.choice(latin)}和{rng.choice(latin)}都很好。" for _ in range(3000)]
    char_freq = collections.Counter("".join(sents))
    first = build_vocab(char_freq, sents, [])
    rng.shuffle(sents)
    assert build_vocab(char_freq, sents, []) == first
    assert len(first) == VOCAB_SIZE
    assert {"iphone", "android", "covid", "2019", "wifi", "5g"} <= set(first)  # each word learnt whole


def test_prepare_run_twice_writes_the_same_files(tmp_path):
    """Two processes (other hash seeds) on one corpus whose Latin words tie in count: byte-identical outputs."""
    words = ["alpha", "delta", "gamma", "omega", "sigma", "theta", "kappa", "lambda", "x86", "arm64"]
    lines = [f"我们今天讨论{a}和{b}的区别，结果很有意思。" for a in words for b in words if a != b] * 6
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    for k in (1, 2):
        run("-m", "training.data.prepare", "--corpus", str(corpus), "--out", str(tmp_path / f"out{k}"),
            env={"PYTHONHASHSEED": str(k)})
    for name in ("vocab.txt", "train.bin", "val.bin", "sentences.txt"):
        assert (tmp_path / "out1" / name).read_bytes() == (tmp_path / "out2" / name).read_bytes(), name
