"""Golden test: the committed default bundle's answers, pinned.

Each case pins the corrected text, every edit (position, characters, confidence to 3 decimals) and the decision of
``explain`` at every character (its status, the best candidate and its score to 3 decimals). Refactors of the
decoder must leave these unchanged. Regenerating the file is a deliberate commit, made when the bundle or a decision
rule changes on purpose, with the reason in its message:

    GOLDEN_UPDATE=1 pytest -q tests/test_golden.py

The cases are hand-written sentences (typos, correct text, traditional text, a long text, protected words, settings)
and every 20th line of SIGHAN-15 (read from ``../shared/data`` at test time; only line numbers, a hash of each line and
the outputs are stored here).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

import pytest

from corrector import Corrector

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "golden" / "default.json"
SIGHAN = HERE.parents[1] / "shared" / "data" / "csc" / "sighan15_test.tsv"
SIGHAN_EVERY = 20

LONG = ("随着经济的快速发展，城市化进程不断加快，越来越多的人从农村来到城市工作和生活。他们在城市里辛勤劳动，为城市的建设作"
        "出了巨大的供献。但是，由于户籍制度等原因，他们的子女在教育、医疗等方面还不能享受和城市居民一样的待遇。政府已经开"
        "始重视这个问题，并且采取了一系列措施，希望能够逐步解决这些困难，让每一个人都能公平地分享发展的成果。我们相信，在"
        "全社会的共同努力下，这个问题一定能够得到妥善的解决，大家的生活也会越来越好。")

# (text, settings): settings are passed to both correct_batch and explain
HAND: list[tuple[str, dict]] = [
    ("我门一起去吃饭吧。", {}),
    ("今天天汽很好，我们去公园散步吧。", {}),
    ("他以经知道自己错了。", {}),
    ("本月未将举行年会。", {}),
    ("这个问题很复染。", {}),
    ("请大家安静，会义马上开始", {}),
    ("请大家安静，会义马上开始。我们先请校长讲话。", {}),
    ("欧阳娜娜和诸葛亮都是复姓。", {}),
    ("他己经走了，我们明天在见。", {}),
    ("这件事情没有那么简单。", {}),
    ("我们要认真学习，努力工作，为祖国的建设贡献力量。", {}),
    ("中国人民银行今天发布了新的货币政策。", {}),
    ("患者服药后应多喝水，注意休息。", {}),
    ("甲方应当在合同签订后十日内支付全部款项。", {}),
    ("这款游戏的画面非常精致，玩家都很喜欢。", {}),
    ("我昨天买的手机质量很好，物流也很快。", {}),
    ("他的成绩一直名列前茅，大家都很佩服他。", {}),
    ("我很喜欢吃苹果和香焦。", {}),
    ("明天的会议改在下午三点举形。", {}),
    ("他们在公圆里玩得很开心。", {}),
    ("我对这件事情非常感兴驱。", {}),
    ("这个周末我想去图书馆看书，你要不要一起来？", {}),
    ("学生们正在教师里认真地上课。", {}),
    ("她穿了一件漂亮的连衣群。", {}),
    ("请把这分文件交给经理。", {}),
    ("天气预报说明天会下大雨，出门记得带伞。", {}),
    ("张三和李四是好朋友，他们经常一起踢足球。", {}),
    ("我们于2025年3月15日在北京签订了协议，金额为12.5万元。", {}),
    ("The meeting starts at 9:30 am, 请准时参加。", {}),
    ("ok", {}),
    ("。", {}),
    ("", {}),
    ("😀我门很高心🎉", {}),
    ("我們一起去吃飯吧，今天天汽很好。", {}),
    ("他已經知到這件事了。", {}),
    ("這個問題很複雜，需要時間解決。", {}),
    ("我會努力學習，不會讓你失忘。", {}),
    ("我们的计画很成功。", {}),
    ("你想像一下。", {}),
    ("甚么时候回来？", {}),
    ("甚么时候回来？", {"veto_unreliable_pairs": False}),
    ("我们的计画很成功。", {"protect_regional_forms": False}),
    ("我们於是走了，这个办法显着提高了效率。", {}),
    ("他後来去了北京，这是为什么。", {}),
    ("这是为什麼呢？", {}),
    ("他看著我，我们的计画很成功。", {}),
    (LONG, {}),
    ("我门一起去吃饭吧。", {"protect": ["我门"]}),
    ("今天天汽很好，我门去公园散步吧。", {"max_edits": 1}),
    ("今天天汽很好，我门去公园散步吧。", {"threshold": 0.95}),
    ("他以经知道自己错了。", {"use_lm": False}),
    ("我门一起去吃饭吧。", {"protect_dictionary_words": True}),
    ("这个问题很复染。", {"confusions": [["染", "杂"]]}),
    ("他以经知道自己错了。", {"top_k": 0, "shortlist": 2}),
]

_STATUSES = [  # the decision strings of explain, by what they say; the first match wins
    (re.compile(r"^applied: "), "applied"),
    (re.compile(r"max_edits"), "capped"),
    (re.compile(r"veto_unreliable_pairs"), "vetoed"),
    (re.compile(r"protect_regional_forms"), "regional"),
    (re.compile(r"^no candidates"), "no_candidates"),
    (re.compile(r"not above the threshold"), "below_threshold"),
    (re.compile(r"rounds of edits ran out"), "rounds_out"),
    (re.compile(r"^protected"), "protected"),
    (re.compile(r"^not editable"), "not_editable"),
]


def status(decision: str) -> str:
    for pattern, name in _STATUSES:
        if pattern.search(decision):
            return name
    raise AssertionError(f"unknown decision: {decision!r}")


def outcome(fixer: Corrector, text: str, settings: dict) -> dict:
    """What the golden file pins for one text."""
    corr = fixer.correct_batch([text], **settings)[0]
    expl = fixer.explain(text, **settings)
    assert expl.correction == corr  # explain decodes exactly as correct_batch does
    sites = []
    for c in expl.chars:
        if not c.editable:
            if status(c.decision) != "not_editable":
                sites.append(f"{c.position} {status(c.decision)}")
            continue
        best = f"{c.candidates[0].char} {c.candidates[0].score:.3f}" if c.candidates else "-"
        sites.append(f"{c.position} {status(c.decision)} {best}")
    return {
        "target": corr.target,
        "edits": [f"{e.position} {e.source}{e.target} {e.confidence:.3f} {e.reason}" for e in corr.edits],
        "sites": sites,
    }


def sighan_cases() -> list[tuple[int, str]]:
    lines = SIGHAN.read_text(encoding="utf-8").splitlines()
    return [(n, lines[n].split("\t")[0]) for n in range(0, len(lines), SIGHAN_EVERY)]


def snapshot(fixer: Corrector) -> dict:
    out: dict = {"hand": [], "sighan15": []}
    for text, settings in HAND:
        out["hand"].append({"text": text, "settings": settings, **outcome(fixer, text, settings)})
    for n, text in sighan_cases():
        sha = hashlib.sha1(text.encode("utf-8")).hexdigest()[:12]
        out["sighan15"].append({"line": n, "sha1": sha, **outcome(fixer, text, {})})
    return out


@pytest.fixture(scope="module")
def default_corrector() -> Corrector:
    return Corrector.load(threads=2)


@pytest.mark.skipif(not SIGHAN.is_file(), reason="../shared/data is not beside the checkout")
def test_default_bundle_answers_are_pinned(default_corrector):
    got = snapshot(default_corrector)
    if os.environ.get("GOLDEN_UPDATE") == "1":
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(json.dumps(got, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    want = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert len(want["hand"]) == len(got["hand"]) and len(want["sighan15"]) == len(got["sighan15"])
    for w, g in zip(want["hand"] + want["sighan15"], got["hand"] + got["sighan15"]):
        assert g == w, json.dumps({"want": w, "got": g}, ensure_ascii=False, indent=1)


def test_golden_cases_cover_what_the_issue_names():
    """The hand-written cases hold correct text, traditional text, a long text and protected words."""
    texts = [t for t, _ in HAND]
    assert len(HAND) + len(range(0, 1100, SIGHAN_EVERY)) >= 100
    assert any(len(t) > 200 for t in texts)
    assert any("這" in t for t in texts)
    assert any("protect" in s for _, s in HAND)
    assert any("veto_unreliable_pairs" in s for _, s in HAND) and any("protect_regional_forms" in s for _, s in HAND)
