"""What the Corrector's test files share (tests/test_corrector_*.py, and tests/test_corrector_e2e.py on the real
exported bundle): texts, the output contract, and the settings of the ``typos`` networks (conftest's fixture).

The fixtures those files use: ``fake_forced`` (networks that prefer nothing, threshold 0: every editable character
is edited) and ``typos`` (networks sure of a few replacements, the hand-set ranker's threshold), both in conftest.
"""

from __future__ import annotations

from fake_networks import SAMPLE

from corrector import Correction
from corrector.text.chars import is_cjk

SENTENCES = ["今天天汽很好", "我们去公园散步吧。他已经知道自己错了！", "中国人民银行在北京，张三和李四在上海。",
             "hello 未来，world 1234 候车", "", "😀 拨打电话"]


def in_vocab_cjk(text: str) -> list[int]:
    return [i for i, c in enumerate(text) if c in SAMPLE]


def check(c: Correction) -> None:
    """The output contract: same length, only edited characters change, each edit describes its change."""
    assert len(c.target) == len(c.source)
    assert [i for i, (a, b) in enumerate(zip(c.source, c.target)) if a != b] == [e.position for e in c.edits]
    for e in c.edits:
        assert c.source[e.position] == e.source and c.target[e.position] == e.target
        assert is_cjk(e.source) and is_cjk(e.target) and e.source != e.target
        assert 0.0 <= e.confidence <= 1.0
        assert e.reason in ("pinyin", "shape", "other")


def edited(c: Correction) -> set[int]:
    return {e.position for e in c.edits}


# what the networks say of a few characters: the discriminator suspects 汽, 末 and 侯; the generator would write
# 气, 未 and 候 in their place, less and less sure, and 拨 or 打 for 拔, not sure enough
RTD = {"汽": 0.9, "末": 0.8, "侯": 0.7}
PREFER = {"汽": [("气", 12.0)], "末": [("未", 10.0)], "侯": [("候", 9.0)], "拔": [("拨", 7.0), ("打", 6.0)]}
TYPOS = "汽末侯拔"  # 气未候 applied, most confident first; 拔 kept

RETIRED = [("verify", False), ("mask_suspects", True), ("min_similarity", 0.0), ("margin", -100.0),
           ("confusion_bonus", 100.0), ("mask_threshold", 0.5), ("protect_kept_words", 3)]
