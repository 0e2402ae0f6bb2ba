"""WordPiece tokenisation over a bundle's vocab.txt, keeping character offsets into the input."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tokenizers import Tokenizer, normalizers, pre_tokenizers
from tokenizers.models import WordPiece

from corrector.text.chars import is_cjk

PAD, UNK, CLS, SEP, MASK = "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"
SPECIAL_IDS = {PAD: 0, UNK: 100, CLS: 101, SEP: 102, MASK: 103}
VOCAB_SIZE = 21128


def build_tokenizer(vocab_path: str | Path) -> Tokenizer:
    """The fast tokenizer every part of the project uses (BERT-Chinese style).

    NFKC folds full-width forms; every CJK character becomes its own token.
    """
    vocab = read_vocab(vocab_path)
    tok = Tokenizer(WordPiece(vocab, unk_token=UNK, max_input_chars_per_word=100))
    tok.normalizer = normalizers.Sequence(
        [
            normalizers.NFKC(),
            normalizers.BertNormalizer(
                clean_text=True, handle_chinese_chars=True, strip_accents=False, lowercase=True
            ),
        ]
    )
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    return tok


def read_vocab_list(vocab_path: str | Path) -> list[str]:
    """Tokens by id (line number)."""
    with open(vocab_path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def read_vocab(vocab_path: str | Path) -> dict[str, int]:
    """Token → id; a token listed twice keeps its first id."""
    vocab: dict[str, int] = {}
    for i, token in enumerate(read_vocab_list(vocab_path)):
        vocab.setdefault(token, i)
    return vocab


@dataclass(frozen=True)
class Encoded:
    """Token ids of one chunk (with [CLS]/[SEP]) and, per token, the input character it edits.

    ``char_pos[t]`` is the index (in Python characters of the chunk) of the single CJK character
    token ``t`` stands for, or -1 when token ``t`` cannot be edited.
    """

    ids: list[int]
    char_pos: list[int]


def encode(tok: Tokenizer, text: str, max_tokens: int) -> Encoded:
    """Encode ``text`` into at most ``max_tokens`` tokens including [CLS] and [SEP].

    Callers chunk text first; anything past the limit is simply not editable.
    """
    enc = tok.encode(text, add_special_tokens=False)
    return _to_encoded(text, enc.ids, enc.offsets, max_tokens)


def encode_batch(tok: Tokenizer, texts: list[str], max_tokens: int) -> list[Encoded]:
    encs = tok.encode_batch(texts, add_special_tokens=False)
    return [_to_encoded(t, e.ids, e.offsets, max_tokens) for t, e in zip(texts, encs)]


def _to_encoded(text: str, ids: list[int], offsets: list[tuple[int, int]], max_tokens: int) -> Encoded:
    ids = ids[: max_tokens - 2]
    out_ids = [SPECIAL_IDS[CLS]]
    out_pos = [-1]
    unk = SPECIAL_IDS[UNK]
    for tid, (s, e) in zip(ids, offsets):
        editable = tid != unk and e - s == 1 and is_cjk(text[s])
        out_ids.append(tid)
        out_pos.append(s if editable else -1)
    out_ids.append(SPECIAL_IDS[SEP])
    out_pos.append(-1)
    return Encoded(out_ids, out_pos)
