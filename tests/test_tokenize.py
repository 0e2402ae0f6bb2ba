"""WordPiece over the bundle vocab, with token → input-character offsets (corrector/text/tokenize.py)."""

from __future__ import annotations

import unicodedata

import pytest
from conftest import SAMPLE, tiny_vocab
from hypothesis import given, settings
from hypothesis import strategies as st

from corrector.text.chars import is_cjk
from corrector.text.tokenize import (
    CLS,
    SEP,
    SPECIAL_IDS,
    UNK,
    VOCAB_SIZE,
    build_tokenizer,
    encode,
    encode_batch,
    read_vocab,
    read_vocab_list,
)

EXTRA = ["\U00020000", "😀", "氣"]  # a CJK Extension B character, an emoji, a traditional character


@pytest.fixture(scope="module")
def vocab_file(tmp_path_factory):
    vocab = tiny_vocab()
    vocab[-len(EXTRA):] = EXTRA
    path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    path.write_text("\n".join(vocab) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def vocab(vocab_file):
    return read_vocab_list(vocab_file)


@pytest.fixture(scope="module")
def tok(vocab_file):
    return build_tokenizer(vocab_file)


def nfkc(ch: str) -> str:
    return unicodedata.normalize("NFKC", ch)


def editable(enc) -> list[tuple[int, int]]:
    """(token index, character position) of every editable token."""
    return [(t, p) for t, p in enumerate(enc.char_pos) if p >= 0]


def test_vocab_files(vocab_file, vocab):
    assert len(vocab) == VOCAB_SIZE
    ids = read_vocab(vocab_file)
    for name, i in SPECIAL_IDS.items():
        assert vocab[i] == name and ids[name] == i


def test_read_vocab_keeps_first_id_of_duplicate(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("[PAD]\n今\n天\n今\n", encoding="utf-8")
    assert read_vocab_list(path) == ["[PAD]", "今", "天", "今"]
    assert read_vocab(path) == {"[PAD]": 0, "今": 1, "天": 2}


def test_every_cjk_character_is_its_own_editable_token(tok, vocab):
    text = "今天天气很好"
    enc = encode(tok, text, 64)
    assert enc.ids[0] == SPECIAL_IDS[CLS] and enc.ids[-1] == SPECIAL_IDS[SEP]
    assert enc.char_pos == [-1, 0, 1, 2, 3, 4, 5, -1]
    assert [vocab[i] for i in enc.ids[1:-1]] == list(text)


def test_offsets_are_python_characters_of_the_original(tok, vocab):
    text = "ＡＢ hello，\U00020000😀今\t氣"
    enc = encode(tok, text, 64)
    got = {text[p]: vocab[enc.ids[t]] for t, p in editable(enc)}
    assert got == {"\U00020000": "\U00020000", "今": "今", "氣": "氣"}
    assert [p for _, p in editable(enc)] == [9, 11, 13]
    assert vocab.index("hello") in enc.ids  # the ASCII word is one token, never editable
    assert vocab.index("😀") in enc.ids


def test_full_width_and_upper_case_fold(tok, vocab):
    enc = encode(tok, "ＨＥＬＬＯ", 64)
    assert [vocab[i] for i in enc.ids[1:-1]] == ["hello"]
    assert editable(enc) == []


def test_out_of_vocab_character_is_unk_and_not_editable(tok):
    enc = encode(tok, "今龘天", 64)
    assert enc.ids[2] == SPECIAL_IDS[UNK]
    assert enc.char_pos == [-1, 0, -1, 2, -1]


def test_compatibility_characters_that_normalise_away_are_not_editable(tok, vocab):
    text = "㍿今"  # NFKC: 株式会社今 — four tokens for one input character
    enc = encode(tok, text, 64)
    assert editable(enc) == [(5, 1)]
    assert vocab[enc.ids[5]] == "今"


def test_truncates_to_max_tokens(tok):
    enc = encode(tok, SAMPLE[:10], 6)
    assert len(enc.ids) == len(enc.char_pos) == 6
    assert enc.ids[-1] == SPECIAL_IDS[SEP]
    assert enc.char_pos == [-1, 0, 1, 2, 3, -1]


def test_empty_text(tok):
    enc = encode(tok, "", 64)
    assert enc.ids == [SPECIAL_IDS[CLS], SPECIAL_IDS[SEP]]
    assert enc.char_pos == [-1, -1]


MIXED = st.text(
    alphabet=st.one_of(
        st.sampled_from(SAMPLE + "氣龘\U00020000😀㍿ＡＢ，。 \t\r\nhello\x00\x7f\u200f\u00ad"),
        st.characters(exclude_categories=("Cs",)),
    ),
    max_size=60,
)


@settings(max_examples=200, deadline=None)
@given(MIXED)
def test_editable_tokens_point_at_their_character(tok, vocab, text):
    enc = encode(tok, text, 128)
    assert len(enc.ids) == len(enc.char_pos)
    positions = [p for _, p in editable(enc)]
    assert positions == sorted(set(positions))
    for t, p in editable(enc):
        assert is_cjk(text[p])
        assert vocab[enc.ids[t]] == nfkc(text[p])  # compatibility ideographs fold to their unified form
    in_vocab = set(SAMPLE) | {"氣", "\U00020000"}
    if len(enc.ids) < 128:  # nothing truncated: every in-vocab CJK character is editable
        assert set(positions) == {i for i, c in enumerate(text) if is_cjk(c) and nfkc(c) in in_vocab}


def test_encode_batch_matches_encode(tok):
    texts = ["今天天气很好", "", "hello 我们😀", "龘" * 3]
    assert encode_batch(tok, texts, 16) == [encode(tok, t, 16) for t in texts]
