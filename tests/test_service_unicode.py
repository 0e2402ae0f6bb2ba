"""Any Unicode text through the HTTP service (TestClient): answered 200 with the output contract kept, lone
surrogates included, and a 20,000-character text."""

from __future__ import annotations

import json

import pytest
from service_calls import JSON, check_contract, post

UNICODE = [
    "😀今天天汽很好👍🏽👨‍👩‍👧",  # emoji, skin tone modifier, ZWJ sequence
    "控制\x00\x01\x07\x1b[31m字符\x7f\u0085\t\r\n好",  # C0/C1 controls, escape sequence
    "\u200f\u202eشكرا\u202c 中文 \u200e\u2066עברית\u2069",  # RTL marks and isolates
    "e\u0301 n\u0303 天\u0308 \ufe0f\ufeff\u200b\u00ad",  # combining marks, BOM, zero width
    "𠀀𪚥𝔘𝔫𝔦 ＡＢＣ１２３，。！ ㄅㄆ あいう 한국어",  # astral CJK, math letters, fullwidth, kana, hangul
    "\U0010fffd\ue000\uffff\ufffd",  # private use, noncharacter, replacement character
]


@pytest.mark.parametrize("text", UNICODE)
def test_any_unicode_text_is_200_and_length_preserving(forced_client, text):
    status, body = post(forced_client, {"text": text})
    assert status == 200
    check_contract(body["results"][0], text)


def test_lone_surrogates_round_trip(forced_client):
    text = "今天\ud800天汽\udfff"
    r = forced_client.post("/correct", content=json.dumps({"text": text}), headers=JSON)  # ASCII JSON with \ud800
    assert r.status_code == 200
    check_contract(json.loads(r.content)["results"][0], text)


def test_20000_characters(client):
    text = ("今天天汽很好，hello 世界😀\u200f。\n" * 1000)[:20000]
    status, body = post(client, {"text": text})
    assert status == 200
    check_contract(body["results"][0], text)
