"""The HTTP service's error paths (TestClient): every bad body is a JSON 4xx naming what is wrong (Content-Type,
malformed JSON or UTF-8, wrong types and values, duplicate keys, bad settings), a corrector error is a 422,
and no body whatever gets a 5xx."""

from __future__ import annotations

import json

import pytest
from chunked_fake import ChunkedFake
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from service_calls import JSON, post

from service.app import create_app
from service.deps import get_corrector
from service.settings import ServiceSettings


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded",
                                          "multipart/form-data; boundary=x", "application/jsonx"])
def test_a_body_that_is_not_json_is_415(client, content_type):
    headers = {"content-type": content_type} if content_type else {}
    r = client.post("/correct", content=b'{"text": "a"}', headers=headers)
    assert r.status_code == 415 and "application/json" in r.json()["detail"]


@pytest.mark.parametrize("content_type", ["application/json; charset=utf-8", "Application/JSON"])
def test_json_content_types_with_parameters_are_fine(client, content_type):
    assert client.post("/correct", content=b'{"text": "a"}', headers={"content-type": content_type}).status_code == 200


@pytest.mark.parametrize("raw", [b'{"text": ', b"{text: 1}", b"", b"null", b'"text"', b"[1, 2]", b"\x00",
                                 b'{"text": "a"} trailing'])
def test_malformed_or_non_object_json_is_4xx(client, raw):
    r = client.post("/correct", content=raw, headers=JSON)
    assert 400 <= r.status_code < 500 and "detail" in r.json()


@pytest.mark.parametrize("raw", [b'{"text": "\xff\xfe"}', b'{"text": "\xe4\xbb"}', b'\xc3\x28'])
def test_invalid_utf8_is_4xx(client, raw):
    r = client.post("/correct", content=raw, headers=JSON)
    assert 400 <= r.status_code < 500 and "detail" in r.json()


@pytest.mark.parametrize("body", [
    {"text": 1}, {"text": None}, {"text": ["a"]}, {"texts": "abc"}, {"texts": [1]}, {"texts": [None]},
    {"text": "a", "threshold": "0.5"}, {"text": "a", "threshold": True}, {"text": "a", "max_edits": 1.5},
    {"text": "a", "max_edits": "1"}, {"text": "a", "max_edits": True}, {"text": "a", "protect": "张三"}, {"text": "a", "protect": [1]},
    {"text": "a", "threshold": -0.1}, {"text": "a", "threshold": 1.5}, {"text": "a", "max_edits": -1},
    {"text": "a", "protect": [""]}, {"text": "a", "thresold": 0.5}, {"text": None, "texts": ["a"]},
])
def test_wrong_types_and_values_are_422(client, body):
    status, payload = post(client, body)
    assert status == 422 and isinstance(payload["detail"], list) and payload["detail"][0]["msg"]


@pytest.mark.parametrize("body", [{}, {"text": "a", "texts": ["b"]}, {"threshold": 0.5}])
def test_exactly_one_of_text_or_texts(client, body):
    status, payload = post(client, body)
    assert status == 422 and "exactly one of 'text'" in json.dumps(payload, ensure_ascii=False)


def test_nan_threshold_is_422(client):
    r = client.post("/correct", content=b'{"text": "a", "threshold": NaN}', headers=JSON)
    assert r.status_code == 422


@pytest.mark.parametrize("field", ["top_k", "shortlist", "max_edits"])
def test_one_integer_rule_for_every_integer_field(client, field):
    """A whole float is an integer, as in JSON Schema; nothing else is. Before: top_k, shortlist and
    protect_kept_words refused 5.0 while max_edits took 3.0 (issue 37, 8)."""
    assert post(client, {"text": "a", field: 5.0})[0] == 200
    assert post(client, {"text": "a", field: 5})[0] == 200
    for bad in (2.5, True, "5", [5]):
        status, body = post(client, {"text": "a", field: bad})
        assert status == 422 and body["detail"][0]["loc"] == ["body", field], (field, bad)
    assert client.get("/openapi.json").json()["components"]["schemas"]["CorrectRequest"]["properties"][field][
        "anyOf"][0]["type"] == "integer"


@pytest.mark.parametrize(("raw", "key"), [(b'{"text": "a", "text": "b"}', "text"),
                                          (b'{"texts": ["a"], "protect": ["x"], "protect": []}', "protect"),
                                          (b'{"text": "a", "threshold": 0.5, "threshold": 0.5}', "threshold")])
def test_duplicate_keys_are_422(client, raw, key):
    """Before: the last one won silently (issue 37, 9)."""
    r = client.post("/correct", content=raw, headers=JSON)
    assert r.status_code == 422 and r.json() == {"detail": [{"loc": ["body", key], "type": "duplicate_key",
                                                              "msg": f"duplicate key {key!r} in a JSON object"}]}


@pytest.mark.parametrize(("raw", "msg", "kind"), [
    (b'{"text": "\xff\xfe"}', "the body is not valid UTF-8: byte 0xff at offset 10", "utf8_invalid"),
    (b'{"text": "\xe4\xbb"}', "the body is not valid UTF-8: byte 0xe4 at offset 10", "utf8_invalid"),
    # (3,000 levels: deeper than the parser goes, fewer values than a request may hold; 100,000 are a 413, unparsed)
    (b'{"text": "a", "x": ' + b"[" * 3_000 + b"]" * 3_000 + b"}", "the JSON nests too deeply", "json_too_deep"),
    (b'{"text": "a", "max_edits": ' + b"9" * 5000 + b"}", "a number in the JSON is too long", "json_number_too_long"),
])
def test_a_body_that_json_cannot_use_is_a_422_that_says_what_and_where(client, raw, msg, kind):
    """Before: invalid UTF-8, very deep nesting and huge integers got a reasonless 400 ("There was an error
    parsing the body") where docs/service.md says 422 (issue 46, 8)."""
    r = client.post("/correct", content=raw, headers=JSON)
    assert r.status_code == 422, r.text
    (error,) = r.json()["detail"]
    assert error["loc"] == ["body"] and error["type"] == kind and error["msg"].startswith(msg)


def test_the_schema_and_the_message_give_this_servers_maxima(tiny_corrector):
    """top_k 100000 said "<= 1000" (the declared range), then 1000 said "<= 100 (this server's maximum)": now
    both say the server's own maximum, and so does the OpenAPI document (issue 46, 7)."""
    app = create_app(ServiceSettings(max_top_k=20, max_shortlist=30, batching=False), corrector=tiny_corrector)
    with TestClient(app) as c:
        props = c.get("/openapi.json").json()["components"]["schemas"]["CorrectRequest"]["properties"]
        assert props["top_k"]["anyOf"][0]["maximum"] == 20 and props["shortlist"]["anyOf"][0]["maximum"] == 30
        for value in (21, 1000, 100000):
            r = c.post("/correct", json={"text": "a", "top_k": value})
            assert r.status_code == 422 and r.json()["detail"] == [{"loc": ["body", "top_k"], "type": "less_than_equal",
                "msg": "Input should be less than or equal to 20 (this server's maximum)"}], value
        assert "securitySchemes" not in c.get("/openapi.json").json()["components"]


def test_with_api_keys_the_openapi_document_says_how_to_send_one(tiny_corrector):
    app = create_app(ServiceSettings(api_keys="key-one-0123456789", batching=False), corrector=tiny_corrector)
    with TestClient(app) as c:
        doc = c.get("/openapi.json").json()
        assert set(doc["components"]["securitySchemes"]) == {"bearer", "apiKey"}
        assert doc["components"]["securitySchemes"]["apiKey"] == {"type": "apiKey", "in": "header", "name": "X-API-Key"}
        assert doc["paths"]["/correct"]["post"]["security"] == [{"bearer": []}, {"apiKey": []}]
        assert "security" not in doc["paths"]["/health"]["get"]


@pytest.mark.parametrize(("extra", "field"), [
    ({"use_lm": "no"}, "use_lm"), ({"top_k": -1}, "top_k"), ({"top_k": 2.5}, "top_k"),
    ({"shortlist": 0}, "shortlist"), ({"shortlist": "8"}, "shortlist"), ({"max_edits": -2}, "max_edits"),
    ({"protect_foreign_names": 1.5}, "protect_foreign_names"), ({"protect_foreign_names": "0.1"}, "protect_foreign_names"),
    ({"protect_regional_forms": "no"}, "protect_regional_forms"),
    ({"confusions": [["汽"]]}, "confusions"), ({"confusions": [["汽", "气体"]]}, "confusions"),
    ({"batch_size": 4}, "batch_size"), ({"bogus": 1}, "bogus"),
    ({"verify": False}, "verify"), ({"margin": 1.0}, "margin"),  # retired with the hand-set decoder
    ({"protect_kept_words": 3}, "protect_kept_words"),  # retired: the ranker's kept_word feature carries its counts
])
def test_bad_settings_are_422_naming_the_setting(client, extra, field):
    status, body = post(client, {"text": "今天", **extra})
    assert status == 422 and body["detail"][0]["loc"][:2] == ["body", field], body


def test_wrong_method_and_unknown_route(client):
    assert client.get("/correct").status_code == 405
    r = client.get("/nowhere")
    assert r.status_code == 404 and r.json() == {"detail": "Not Found"}


def test_a_corrector_error_is_422_and_dependencies_can_be_overridden(client):
    class Broken(ChunkedFake):
        name, version = "broken", "0"

        def correct_batch(self, texts, **options):
            from corrector import CorrectorError

            raise CorrectorError("bad option")

    app = create_app(ServiceSettings(cost_chars_per_s=1e6), corrector=Broken())  # a rate: it cannot be timed
    with TestClient(app) as c:
        assert post(c, {"text": "a"}) == (422, {"detail": "bad option"})
    # the dependency is overridable: /correct answers 503 when get_corrector says so
    app2 = create_app(ServiceSettings(cost_chars_per_s=1e6), corrector=Broken())

    def not_loaded() -> None:
        from fastapi import HTTPException

        raise HTTPException(503, "overridden")

    app2.dependency_overrides[get_corrector] = not_loaded
    with TestClient(app2) as c:
        assert post(c, {"text": "a"}) == (503, {"detail": "overridden"})


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=False) | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["text", "texts", "threshold", "max_edits", "protect", "x"]), inner, max_size=4),
    max_leaves=8,
))
def test_random_json_bodies_never_get_a_5xx(client, body):
    r = client.post("/correct", content=json.dumps(body), headers=JSON)
    assert r.status_code < 500 and r.headers["content-type"].startswith("application/json")
