"""The character LM's special tokens and how a character is written in ARPA files: shared by the LM's own format
(``corrector/evidence/char_lm.py``) and the KenLM reader (``corrector/evidence/char_lm_kenlm.py``)."""

from __future__ import annotations

PAD = -1
UNK, BOS, EOS = 0, 1, 2
SPECIALS = ("<unk>", "<s>", "</s>")
N_SPECIALS = len(SPECIALS)


def token_name(cp: int) -> str:
    """ARPA/KenLM token of a character; whitespace and unprintable ones (which ARPA cannot hold) as <U+XXXX>."""
    ch = chr(cp)
    return ch if ch.isprintable() and not ch.isspace() else f"<U+{cp:04X}>"
