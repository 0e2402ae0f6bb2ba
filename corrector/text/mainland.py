"""著 or 着: the one character whose two readings mainland text writes apart and Taiwan's script writes alike.

The aspect particle and the zhuó/zháo verb (坐着, 随着, 着急, 执着) are 着 in mainland text; zhù (著名, 显著, 名著, 土著)
stays 著. Taiwan's script writes both 著, and so do SIGHAN's targets (converted from it): 334 of sighan_train's targets
hold a 著, most of them the particle. A 著 is read by the word jieba's dictionary puts it in: zhù when the dictionary
counts that word with 著 more often than with 着 (著名 9,342 to 3; 执著 149 to 218 is 着), otherwise (a 著 alone, 着 188,584
to 著 6,171) the particle, unless it follows 所 (他所著的书).

Training pairs are read with these targets normalised (``mainland_pair``), and an edit never writes 著 where mainland
text writes 着 (``mainland_target``): it writes 着.
"""

from __future__ import annotations

ZHU, ZHE = "著", "着"


def zhe_form(text: str, i: int) -> str:
    """The character mainland text writes for the 著/着 at ``i`` of ``text``."""
    from corrector.evidence.dictionary import tokenizer

    tok = tokenizer()
    probe = text[:i] + ZHU + text[i + 1:]
    pos = 0
    for word in tok.cut(probe, HMM=False):
        if pos <= i < pos + len(word):
            break
        pos += len(word)
    if len(word) > 1:
        return ZHU if tok.FREQ.get(word, 0) > tok.FREQ.get(word.replace(ZHU, ZHE), 0) else ZHE
    return ZHU if i > 0 and text[i - 1] == "所" else ZHE


def mainland_target(text: str, i: int, target: str) -> str:
    """``target`` for position ``i`` of ``text`` (the text as corrected) in mainland form: 着 for a 著 that mainland
    text writes 着, any other character as it is."""
    return ZHE if target == ZHU and zhe_form(text, i) == ZHE else target


def mainland_pair(source: str, target: str) -> tuple[str, str]:
    """A training pair with every 著 of its target that mainland text writes 着 written 着, on the source's side too
    where the source has the same 著 (no error there)."""
    if ZHU not in target:
        return source, target
    src, tgt = list(source), list(target)
    for i, c in enumerate(target):
        if c == ZHU and zhe_form(target, i) == ZHE:
            tgt[i] = ZHE
            if src[i] == ZHU:
                src[i] = ZHE
    return "".join(src), "".join(tgt)
