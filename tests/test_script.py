"""Traditional Chinese is corrected, never converted (issue 13, point 3): corrector/script.py and the Corrector."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FORCE_EDITS
from hypothesis import given, settings
from hypothesis import strategies as st

from corrector import Corrector
from corrector.script import regional_form, restore_edits, simplified_view, to_simplified
from corrector.text import is_cjk
from corrector.types import Edit

REPO_BUNDLE = Path(__file__).resolve().parents[1] / "data" / "electra_models" / "default"

TRADITIONAL = ["我門一起去吃飯吧。今天天氣很好", "臺灣的天氣很好。", "頭髮發展後來，乾隆皇帝說話。", "這個軟體的設計還不錯！"]


def test_simplified_view_keeps_length_and_every_non_han_character():
    view = simplified_view("我門 ok，臺灣😀的天氣。")
    assert view.traditional and view.text == "我门 ok，台湾😀的天气。"
    assert simplified_view("今天天气很好，乾隆").traditional is False  # simplified already: left as it is


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


def test_an_edit_that_only_converts_the_script_is_dropped():
    view = simplified_view("臺灣的天氣很好。")  # the model reads 台湾的天气很好。
    edits = [Edit(0, "台", "臺", 0.9, "shape"), Edit(1, "湾", "弯", 0.8, "pinyin")]
    assert restore_edits(view, edits) == [Edit(1, "灣", "彎", 0.8, "pinyin")]


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
