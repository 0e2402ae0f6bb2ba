"""Traditional Chinese is corrected, never converted (issue 13, point 3): corrector/text/script.py and the Corrector."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FORCE_EDITS
from fake_networks import FakeNetworks, fake_corrector
from hypothesis import given, settings
from hypothesis import strategies as st

from corrector import Corrector, CorrectorConfig
from corrector.text.chars import is_cjk
from corrector.text.script import (
    changing_chars,
    normalise,
    regional_form,
    restore_edits,
    simplified_view,
    to_simplified,
)
from corrector.types import Edit

REPO_BUNDLE = Path(__file__).resolve().parents[1] / "data" / "electra_models" / "default"

TRADITIONAL = ["我門一起去吃飯吧。今天天氣很好", "臺灣的天氣很好。", "頭髮發展後來，乾隆皇帝說話。", "這個軟體的設計還不錯！"]


def test_simplified_view_keeps_length_and_every_non_han_character():
    view = simplified_view("我門 ok，臺灣😀的天氣。")
    assert view.traditional and view.text == "我门 ok，台湾😀的天气。"
    assert simplified_view("今天天气很好，乾隆").traditional is False  # simplified already: left as it is


class _Node:
    def __init__(self) -> None:
        self.children: dict[str, _Node] = {}
        self.value: str | None = None


def _trie(entries: dict[str, str]) -> object:
    root = _Node()
    for key, value in entries.items():
        node = root
        for ch in key:
            node = node.children.setdefault(ch, _Node())
        node.value = value
    return type("Trie", (), {"root": root})()


def test_changing_chars_names_one_changed_character_of_every_entry_that_changes_anything():
    group = type("Group", (), {"matchers": [_trie({"答覆": "答复", "乾隆": "乾隆", "麼": "么"}), _trie({"們": "们"})]})()
    conv = type("Conv", (), {"_normalization": [_trie({"\uf900": "豈"})], "_chain": [group]})()
    assert changing_chars(conv) == frozenset("覆麼們\uf900")  # 乾隆 converts to itself: it changes nothing
    assert changing_chars(type("Conv", (), {"_chain": [object()]})()) is None  # laid out otherwise: no shortcut
    assert changing_chars(object()) is None


def test_a_text_without_a_changing_character_is_its_own_conversion():
    """The shortcut simplified_view takes gives OpenCC's own answer: every character of the shipped vocabulary,
    and every line of a mixed sample, that holds no changing character converts to itself."""
    from corrector.text import script

    changing = script._changing("t2s")
    assert changing is not None and 1000 < len(changing) < 20000
    vocab = (REPO_BUNDLE / "discriminator" / "vocab.txt").read_text(encoding="utf-8").split()
    chars = [w for w in vocab if len(w) == 1 and w not in changing]
    assert len(chars) > 10000 and to_simplified("".join(chars)) == "".join(chars)
    assert all(to_simplified(c) == c for c in chars)
    lines = TRADITIONAL + ["今天天气很好，乾隆皇帝说话。", "我们一起去吃饭吧", "头发发展后来，干隆皇帝"]
    for line in lines:
        if changing.isdisjoint(line):
            assert to_simplified(line) == line and not simplified_view(line).traditional
        else:
            assert simplified_view(line).text == "".join(
                s if is_cjk(o) and is_cjk(s) else o for o, s in zip(line, to_simplified(line)))


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet=st.sampled_from("我門們們一起去吃飯吧臺灣天氣很好頭髮發後來乾隆說話這軟體設計還不錯今天气，。a😀 "),
               max_size=60))
def test_simplified_view_is_position_for_position(text):
    view = simplified_view(text)
    assert len(view.text) == len(text)
    assert all(a == b or (is_cjk(a) and is_cjk(b)) for a, b in zip(text, view.text))


def test_edits_go_back_in_the_original_script():
    view = simplified_view("我門一起去吃飯吧。")
    assert restore_edits(view, [Edit(1, "门", "们", 0.9, "pinyin")]) == [Edit(1, "門", "們", 0.9, "pinyin")]


def test_normalise_is_the_one_conversion_prepare_makes():
    """Each chunk's simplified view, the whole text's, whether it is simplified text and, in traditional text, each
    character simplified by itself (乾 stays 乾 in 乾隆 but is 干 alone)."""
    text = "臺灣的乾隆很好。我們走吧"
    written = normalise(text, [(0, 8), (8, len(text))])
    assert not written.mainland and written.simplified == "台湾的乾隆很好。我们走吧" == "".join(v.text for v in written.views)
    assert [v.alone for v in written.views] == ["台湾的干隆很好。", "我们走吧"]
    mixed = normalise("我们於是走了", [(0, 6)])  # simplified text with a stray 於: no alone forms are needed
    assert mixed.mainland and mixed.simplified == "我们于是走了" and mixed.views[0].alone == ""
    assert [i for i in range(6) if mixed.stray(i)] == [2] and not written.stray(0)
    plain = normalise("今天天气很好", [(0, 6)])
    assert plain.mainland and plain.simplified == plain.original and not plain.views[0].traditional


def test_the_script_guard_vetoes_an_edit_that_only_converts_the_script():
    """In traditional text an edit to the character as written or to its own simplified form is vetoed in the
    rounds; any other edit may be made, and in simplified text the guard never vetoes."""
    from corrector.guards import NAMED, Proposal
    from corrector.stages import Chunk

    def vetoed(text: str, i: int, target: str) -> bool:
        written = normalise(text, [(0, len(text))])
        view = written.views[0]
        chunk = Chunk(0, 0, view.text, None, {}, view if view.traditional else None, written.mainland)
        return NAMED["script"].veto(Proposal(chunk, i, target, {}, {}), CorrectorConfig()) is not None

    assert vetoed("臺灣的乾隆很好。", 0, "臺") and vetoed("臺灣的乾隆很好。", 3, "干")  # read as 台 and 乾
    assert not vetoed("臺灣的乾隆很好。", 1, "弯") and not vetoed("臺灣的乾隆很好。", 3, "钱")
    assert not vetoed("我们於是走了", 2, "於") and not vetoed("今天天气很好", 0, "金")


def test_edits_go_back_in_the_original_script_and_are_never_dropped():
    view = simplified_view("臺灣的天氣很好。")  # the model reads 台湾的天气很好。
    assert restore_edits(view, [Edit(1, "湾", "弯", 0.8, "pinyin")]) == [Edit(1, "灣", "彎", 0.8, "pinyin")]


def test_a_script_veto_counts_towards_no_max_edits(fake_tiny_bundle, monkeypatch: pytest.MonkeyPatch):
    """The script rule is a veto in the rounds: the vetoed site takes no place under max_edits, so the sentence's
    next edit is made, and explain names the rule. (The tiny vocabulary has no pair of scripts: 很 is made to be 行
    written another way.)"""
    import corrector.text.script as script

    monkeypatch.setattr(script, "_alone", lambda c: "行" if c == "很" else c)
    text = "今天天氣很好"  # traditional text (氣), read as 今天天气很好
    fix = fake_corrector(fake_tiny_bundle, FakeNetworks(prefer={"气": [("汽", 12.0)], "很": [("行", 14.0)]}))
    for cap in (0, 1):
        assert [(e.position, e.source, e.target) for e in fix.correct(text, max_edits=cap).edits] == [(3, "氣", "汽")]
    assert fix.explain(text, max_edits=1).chars[4].decision == "kept: 行 would only change the character's script"


@pytest.mark.parametrize("before, after, regional", [
    ("计画", "计划", True), ("网路", "网络", True), ("爱滋病", "艾滋病", True), ("想像力", "想象力", True),
    ("九万馀元", "九万余元", True),
    ("天汽很好", "天气很好", False), ("以经", "已经", False), ("知到了", "知道了", False), ("公园", "公园", False),
    ("部份", "部分", False),  # OpenCC's Taiwan tables keep 部份 and 部分 apart: not a regional form to it
])
def test_regional_forms_are_what_taiwans_conversion_cannot_tell_apart(before, after, regional):
    assert regional_form(before, after) is regional


@pytest.fixture(scope="module")
def forced(tiny_bundle):
    return Corrector.load(tiny_bundle, device="cpu", **FORCE_EDITS)


@pytest.mark.parametrize("text", TRADITIONAL)
def test_traditional_text_is_never_converted(forced, text):
    """Even a model that edits every character it can never emits a script conversion, and never
    touches a character it did not edit."""
    got = forced.correct(text)
    assert len(got.target) == len(text)
    edited = {e.position for e in got.edits}
    for i, (a, b) in enumerate(zip(text, got.target)):
        assert a == b or i in edited
    for e in got.edits:
        assert e.source == text[e.position]
        assert to_simplified(e.source) != to_simplified(e.target)


@pytest.mark.parametrize("text", TRADITIONAL)
def test_a_traditional_text_gets_the_edits_of_its_simplified_view(forced, text):
    """The model reads the simplified view, so the edits are the view's, put back in the original script."""
    view = simplified_view(text)
    assert view.traditional
    want = restore_edits(view, forced.correct(view.text).edits)
    assert forced.correct(text).edits == want and want


@pytest.mark.skipif(not REPO_BUNDLE.is_dir(), reason="no default bundle")
def test_default_bundle_corrects_traditional_text():
    fix = Corrector.load(REPO_BUNDLE, device="cpu")
    assert fix.correct("我門一起去吃飯吧。").target == "我們一起去吃飯吧。"
    assert fix.correct("臺灣的天氣很好。").edits == []
    assert fix.correct("我門一起去吃飯吧。今天天氣很好").target == "我們一起去吃飯吧。今天天氣很好"


@pytest.mark.parametrize("text, simplified", [
    ("我们於是走了", True),  # one simplified-only, one traditional-only character: counted as simplified
    ("这个办法显着提高了效率，他後来走了。", True),
    ("我們於是走了", False),
    ("他已經知到這件事了。", False),
    ("今天天气很好", True),  # nothing traditional
    ("於是", False),
])
def test_simplified_text_is_told_from_traditional_text_by_counting_script_only_characters(text, simplified):
    from corrector.text.script import simplified_text

    assert simplified_text(text, [simplified_view(text)]) is simplified


def test_traditional_only_characters_and_mainland_forms():
    from corrector.guards import regional_edit
    from corrector.text.script import mainland_form, traditional_only

    assert [c for c in "於後麼們着著于后显" if traditional_only(c)] == ["於", "後", "麼", "們"]
    assert mainland_form("他看著我") == "他看着我" and mainland_form("我们的计画") == "我们的计划"
    # in simplified text an edit to the mainland's form is a fix; away from it, or in traditional text, it is not
    assert not regional_edit(list("他看著我"), 2, "着", mainland=True)
    assert regional_edit(list("他看著我"), 2, "着", mainland=False)
    assert regional_edit(list("他看着我"), 2, "著", mainland=True)


def test_a_stray_traditional_character_in_simplified_text_is_a_typo(forced):
    """Simplified text: the model reads the view, and the stray character comes out simplified whether or not the
    model edits it; every other edit is the view's own; the text never receives a traditional-only character."""
    from corrector.text.script import traditional_only

    text = "今天天气很好，我们去公园散步吧。他已经知道自己錯了"
    got = forced.correct(text)
    stray = text.index("錯")
    (edit,) = [e for e in got.edits if e.position == stray]
    assert edit.source == "錯" and edit.target != "錯" and not traditional_only(edit.target)
    view = simplified_view(text)
    assert [(e.position, e.target) for e in got.edits if e.position != stray] == \
        [(e.position, e.target) for e in forced.correct(view.text).edits if e.position != stray]
    assert not any(traditional_only(c) for c in got.target)
    plain = forced.correct(text, threshold=1.0)  # nothing above the threshold: only the stray is written anew
    assert [(e.position, e.source, e.target, e.reason) for e in plain.edits] == [(stray, "錯", "错", "script")]


def test_the_callers_protected_words_keep_a_stray_character(forced):
    text = "今天天气很好，我们去公园散步吧。他已经知道自己錯了"
    assert forced.correct(text, threshold=1.0, protect=["錯了"]).edits == []


def test_a_stray_traditional_character_counts_toward_max_edits(forced):
    """A slip of script is an edit like any other (issue 60, 2): made in the decoder's last round, the most
    confident first, counted by max_edits; a capped one stays as written, and explain says it was capped."""
    from corrector.text.script import traditional_only

    text = "今天天气很好，我们去公园散步吧。他知道自己錯了，話很多"
    strays = [i for i, c in enumerate(text) if traditional_only(c)]
    assert len(strays) == 2
    free = forced.correct(text, threshold=1.0)
    assert [(e.position, e.reason) for e in free.edits] == [(i, "script") for i in strays]
    one = forced.correct(text, threshold=1.0, max_edits=1)
    assert len(one.edits) == 1 and one.edits[0].position in strays and one.edits[0].reason == "script"
    kept = next(i for i in strays if i != one.edits[0].position)
    assert one.target[kept] == text[kept]
    assert max(free.edits, key=lambda e: e.confidence).position == one.edits[0].position  # the most confident
    assert forced.explain(text, threshold=1.0, max_edits=1).chars[kept].decision.startswith("kept")
