"""jieba's words as the bundle carries them (corrector/evidence/dictionary.py), and caches only in private directories
(corrector/runtime/user_cache.py)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from corrector import CorrectorError
from corrector.evidence.dictionary import WORDS, WordTable
from corrector.evidence.kept_forms import CharIds, word_key
from corrector.runtime.user_cache import private_dir

REPO = Path(__file__).resolve().parents[1]
SHIPPED = REPO / "data" / "electra_models" / "default"
VOCAB = ["[PAD]", "天", "气", "今", "很", "好", "北", "京", "##s", "a"]
CHAR_ID = {t: i for i, t in enumerate(VOCAB) if len(t) == 1}


def test_word_table_keys_the_two_and_three_character_words_the_vocabulary_spells():
    counts = {"天气": 1000, "今天": 5000, "很好": 0, "北京": 9000, "天": 300, "今天天气": 7, "北京人": 40,
              "天气好": 3, "很棒": 60}  # 很好 counted 0 (a jieba prefix), 很棒: 棒 not in the vocabulary
    t = WordTable.from_counts(counts, CHAR_ID, len(VOCAB))
    V = len(VOCAB)
    two = sorted((word_key([CHAR_ID[c] for c in w], V), n) for w, n in [("天气", 1000), ("今天", 5000), ("北京", 9000)])
    assert t.keys[2].tolist() == [k for k, _ in two] and t.counts[2].tolist() == [n for _, n in two]
    assert t.keys[3].tolist() == [word_key([1, 2, 5], V)] and t.counts[3].tolist() == [3]  # 天气好; 北京人: 人 unknown
    keys, logs = t.log_counts(2)
    assert logs.dtype == np.float32 and logs.tolist() == [np.float32(np.log1p(n)) for _, n in two]


def test_word_table_round_trip_and_another_vocabulary_is_refused(tmp_path):
    t = WordTable.from_counts({"天气": 1000, "天气好": 3}, CHAR_ID, len(VOCAB))
    t.save(tmp_path / WORDS, "ab" * 32)
    back = WordTable.load(tmp_path / WORDS, "ab" * 32)
    assert all(np.array_equal(back.keys[n], t.keys[n]) and np.array_equal(back.counts[n], t.counts[n]) for n in (2, 3))
    with pytest.raises(CorrectorError, match="written for another vocabulary"):
        WordTable.load(tmp_path / WORDS, "cd" * 32)
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    with pytest.raises(CorrectorError, match="cannot read"):
        WordTable.load(tmp_path / "bad.npz", "ab" * 32)


def test_four_character_words_are_keyed_and_a_table_written_without_them_reads_as_none(tmp_path):
    t = WordTable.from_counts({"今天天气": 7, "天气": 1000}, CHAR_ID, len(VOCAB))
    assert t.keys[4].tolist() == [word_key([3, 1, 1, 2], len(VOCAB))] and t.counts[4].tolist() == [7]
    t.save(tmp_path / WORDS, "ab" * 32)
    with np.load(tmp_path / WORDS) as z:  # the table as bundles wrote it before four-character words
        older = {k: z[k] for k in z.files if not k.endswith("4")}
    np.savez_compressed(tmp_path / "older.npz", **older)
    back = WordTable.load(tmp_path / "older.npz", "ab" * 32)
    assert back.keys[4].tolist() == [] and back.counts[4].tolist() == [] and back.counts[2].tolist() == [1000]
    keys, logs = back.log_counts(4)
    assert len(keys) == len(logs) == 0

def test_the_shipped_bundles_table_is_what_jieba_gives():
    """dictionary/words.npz is derived data: it must equal the table read from the installed jieba."""
    from corrector.text.tokenize import read_vocab_list

    vocab = read_vocab_list(SHIPPED / "discriminator" / "vocab.txt")
    manifest = json.loads((SHIPPED / "manifest.json").read_text(encoding="utf-8"))
    shipped = WordTable.load(SHIPPED / WORDS, manifest["vocab_sha256"])
    fresh = WordTable.from_jieba({t: i for i, t in enumerate(vocab) if len(t) == 1}, len(vocab))
    for n in (2, 3):
        assert np.array_equal(shipped.keys[n], fresh.keys[n]) and np.array_equal(shipped.counts[n], fresh.counts[n])


def test_char_ids_match_a_dictionary_lookup():
    ids = CharIds(CHAR_ID)
    strings = ["天", "气", "棒", "", "a", "天气", "##s"]
    assert ids(strings).tolist() == [CHAR_ID.get(s, -1) for s in strings]
    assert ids(np.array(["好", "京", "x"])).tolist() == [5, 7, -1]
    assert ids.columns(["天气", "北", "今天好", ""], 3).tolist() == [[1, 2, -1], [6, -1, -1], [3, 1, 5], [-1, -1, -1]]


def test_private_dir_is_made_0700_and_refuses_a_link(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    d = private_dir("jieba")
    assert d == tmp_path / "cache" / "electra-csc" / "jieba"
    for p in (d, d.parent):
        assert stat.S_IMODE(p.stat().st_mode) == 0o700
    d.chmod(0o777)  # ours, but opened up: made private again
    assert private_dir("jieba") == d and stat.S_IMODE(d.stat().st_mode) == 0o700
    (d.parent / "elsewhere").mkdir()
    (d.parent / "linked").symlink_to(d.parent / "elsewhere")
    assert private_dir("linked") is None
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/path")
    assert private_dir("jieba") is None


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX file ownership")
def test_jieba_caches_in_the_private_directory_and_never_in_tmp(tmp_path):
    """protect_dictionary_words runs jieba's tokenizer: its cache goes to the user's cache directory, and a
    planted cache under jieba's fixed name in the temporary directory is never read."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    (tmp / "jieba.cache").write_bytes(b"planted")  # marshal would run whatever a real one held
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "TMPDIR": str(tmp)}
    code = ("from corrector.evidence.dictionary import tokenizer; import jieba; "
            "print(tokenizer().lcut('我们一起去吃饭吧', HMM=False))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['我们', '一起', '去', '吃饭', '吧']"
    assert (tmp_path / "cache" / "electra-csc" / "jieba" / "jieba.cache").is_file()
    assert (tmp / "jieba.cache").read_bytes() == b"planted" and sorted(p.name for p in tmp.iterdir()) == ["jieba.cache"]
