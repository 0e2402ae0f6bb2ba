"""The HTTP service in process (TestClient): every route, every error path, limits, Unicode, metrics."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corrector.text import is_cjk
from service.app import ModelLoadError, create_app
from service.deps import get_corrector
from service.settings import ServiceSettings

JSON = {"content-type": "application/json"}
STATIC = Path(__file__).resolve().parents[1] / "service" / "static"


@pytest.fixture(scope="module")
def client(tiny_bundle) -> Iterator[TestClient]:
    """The real lifespan: the model is loaded from settings.model_dir and its speed measured (a long timeout,
    so that admission never refuses the large texts below on a slow machine)."""
    with TestClient(create_app(ServiceSettings(model_dir=tiny_bundle, request_timeout_s=600))) as c:
        yield c


@pytest.fixture(scope="module")
def forced(forced_corrector) -> Iterator[TestClient]:
    """A model that edits every in-vocabulary Chinese character, so edits show up."""
    with TestClient(create_app(ServiceSettings(max_wait_ms=1), corrector=forced_corrector)) as c:
        yield c


@pytest.fixture(scope="module")
def small(forced_corrector) -> Iterator[TestClient]:
    limits = ServiceSettings(max_text_chars=50, max_texts=3, max_request_chars=100, max_body_bytes=2000)
    with TestClient(create_app(limits, corrector=forced_corrector)) as c:
        yield c


def post(c: TestClient, body: object) -> tuple[int, dict]:
    r = c.post("/correct", content=json.dumps(body), headers=JSON)
    assert r.headers["content-type"].startswith("application/json")
    return r.status_code, r.json()


def check_contract(result: dict, text: str) -> None:
    """Same length; only edited positions change; every non-Chinese character kept as it was."""
    assert result["source"] == text and len(result["target"]) == len(text)
    changed = [i for i, (a, b) in enumerate(zip(text, result["target"])) if a != b]
    assert changed == [e["position"] for e in result["edits"]]
    for e in result["edits"]:
        assert text[e["position"]] == e["source"] and result["target"][e["position"]] == e["target"]
        assert 0.0 <= e["confidence"] <= 1.0 and e["reason"] in ("pinyin", "shape", "other")
    assert all(a == b for a, b in zip(text, result["target"]) if not is_cjk(a))


# ---- routes ----------------------------------------------------------------------------------------------


def test_health(client):
    r = client.get("/health")
    assert r.status_code == 200 and r.json() == {"status": "ok"}


def test_ready_is_503_before_the_model_is_loaded_and_after_shutdown(tiny_bundle):
    app = create_app(ServiceSettings(model_dir=tiny_bundle))
    outside = TestClient(app)  # no `with`: the lifespan has not run
    r = outside.get("/ready")
    assert r.status_code == 503 and r.json()["status"] == "not ready"
    assert outside.get("/health").status_code == 200
    status, body = post(outside, {"text": "今天"})
    assert status == 503 and "not loaded" in body["detail"]
    with TestClient(app) as c:
        r = c.get("/ready")
        assert r.status_code == 200
        assert r.json() == {"status": "ready", "model": "tiny", "version": r.json()["version"],
                            "provider": "CPUExecutionProvider", "precision": "fp32"}
    assert outside.get("/ready").status_code == 503


def test_correct_one_text(forced, forced_corrector):
    status, body = post(forced, {"text": "今天天汽很好"})
    assert status == 200
    assert body["model"] == forced_corrector.name and body["version"] == forced_corrector.version
    [result] = body["results"]
    check_contract(result, "今天天汽很好")
    assert result == forced_corrector.correct("今天天汽很好").to_dict() and result["edits"]


def test_correct_several_texts_in_order(forced, forced_corrector):
    texts = ["今天天汽很好", "", "hello 未来", "他已经知道自己错了。"]
    status, body = post(forced, {"texts": texts})
    assert status == 200
    assert body["results"] == [c.to_dict() for c in forced_corrector.correct_batch(texts)]


def test_request_options_reach_the_corrector(forced):
    text = "今天天汽很好。我们去公园散步吧。"
    _, full = post(forced, {"text": text})
    assert len(full["results"][0]["edits"]) > 4
    _, none = post(forced, {"text": text, "threshold": 1.0})
    assert none["results"][0]["edits"] == []
    _, limited = post(forced, {"text": text, "max_edits": 1})
    assert len(limited["results"][0]["edits"]) == 2  # one per sentence
    _, protected = post(forced, {"text": text, "protect": ["天汽", "公园"]})
    assert {2, 3, 10, 11}.isdisjoint(e["position"] for e in protected["results"][0]["edits"])


@pytest.mark.parametrize("field", ["top_k", "shortlist", "max_edits", "protect_kept_words"])
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


def test_empty_inputs(client):
    status, body = post(client, {"text": ""})
    assert status == 200 and body["results"] == [{"source": "", "target": "", "edits": []}]
    status, body = post(client, {"texts": []})
    assert status == 200 and body["results"] == []


def test_metrics_count_requests_latency_batches_and_errors(tiny_bundle):
    with TestClient(create_app(ServiceSettings(model_dir=tiny_bundle))) as c:
        for _ in range(3):
            post(c, {"texts": ["今天天汽很好", "好"]})
        post(c, {"text": 1})
        c.get("/nowhere")
        r = c.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    text = r.text
    assert 'csc_http_requests_total{method="POST",route="/correct",status="200"} 3.0' in text
    assert 'csc_http_requests_total{method="POST",route="/correct",status="422"} 1.0' in text
    assert 'csc_http_requests_total{method="GET",route="unmatched",status="404"} 1.0' in text
    assert 'csc_http_errors_total{kind="validation",route="/correct"} 1.0' in text
    assert 'csc_http_request_duration_seconds_count{route="/correct"} 4.0' in text
    assert "csc_batch_size_count 3.0" in text and "csc_batch_size_sum 6.0" in text
    assert re.search(r'csc_model_info\{name="tiny",precision="fp32",provider="CPUExecutionProvider",version="[^"]+"\} 1.0', text)
    assert "csc_texts_total 6.0" in text


def test_errors_answered_before_routing_count_under_their_route(forced_corrector):
    """Before: with FastAPI 0.165 the middleware's known paths missed every included route, and a 413 or 415
    on /correct counted as route="unmatched" (issue 37, 6)."""
    limits = ServiceSettings(max_body_bytes=100, cost_chars_per_s=1e6)
    with TestClient(create_app(limits, corrector=forced_corrector)) as c:
        assert c.post("/correct", content=b"x" * 200, headers=JSON).status_code == 413
        assert c.post("/correct", content=b'{"text": "a"}', headers={"content-type": "text/plain"}).status_code == 415
        text = c.get("/metrics").text
    assert 'csc_http_requests_total{method="POST",route="/correct",status="413"} 1.0' in text
    assert 'csc_http_requests_total{method="POST",route="/correct",status="415"} 1.0' in text
    assert "unmatched" not in text


def test_metrics_labels_stay_bounded(forced_corrector):
    """Invented methods and paths all land under one label each; the docs routes count as themselves."""
    app = create_app(ServiceSettings(), corrector=forced_corrector)
    with TestClient(app) as c:
        for path in ("/docs", "/redoc", "/openapi.json", "/static-offline-docs/redoc.standalone.js"):
            assert c.get(path).status_code == 200
        c.get("/metrics")  # its own labels appear from the next scrape on
        sizes = []
        for round_ in range(2):  # the first round adds its label values once; the second adds none
            for i in range(100):
                c.request(f"M{round_}{i:03d}", f"/x{round_}/{i}")
                c.request(f"N{round_}{i:03d}", "/correct")
            sizes.append(len(c.get("/metrics").text))
        text = c.get("/metrics").text
    assert sizes[1] - sizes[0] < 100, f"/metrics grew by {sizes[1] - sizes[0]} bytes with new methods and paths"
    assert 'csc_http_requests_total{method="other",route="unmatched",status="404"} 200.0' in text
    assert 'method="other",route="/correct",status="405"} 200.0' in text
    for route in ("/docs", "/redoc", "/openapi.json", "/static-offline-docs"):
        assert f'csc_http_requests_total{{method="GET",route="{route}",status="200"}} 1.0' in text, route
    assert "M000" not in text and "/x1" not in text


def test_each_app_has_its_own_metrics_registry(tiny_bundle):
    a, b = (create_app(ServiceSettings(model_dir=tiny_bundle)) for _ in range(2))
    TestClient(a).get("/health")
    count = 'csc_http_requests_total{method="GET",route="/health",status="200"}'
    assert f"{count} 1.0" in TestClient(a).get("/metrics").text
    assert count not in TestClient(b).get("/metrics").text


def test_demo_page_is_served_without_external_resources(client):
    r = client.get("/")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert 'id="input"' in r.text and 'id="correct"' in r.text and "/static/app.js" in r.text
    for name in ("app.js", "style.css"):
        asset = client.get(f"/static/{name}")
        assert asset.status_code == 200 and asset.text == (STATIC / name).read_text(encoding="utf-8")
    for f in STATIC.iterdir():
        assert not re.search(r"(https?:)?//[a-z0-9.-]+\.[a-z]{2,}/", f.read_text(encoding="utf-8")), f.name


def test_openapi_and_docs(client):
    schema = client.get("/openapi.json").json()
    assert {"/correct", "/health", "/ready", "/metrics"} <= set(schema["paths"])
    assert client.get("/docs").status_code == 200


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_docs_pages_load_every_asset_from_this_server(client, page):
    """Swagger UI and Redoc render offline: every script, style sheet and icon (and no web font) is served
    here, from the fastapi-offline package."""
    html = client.get(page).text
    assert not re.search(r"https?://", html), "the page loads something from another host"
    assets = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert any(a.endswith(".js") for a in assets)
    for asset in assets:
        r = client.get(asset)
        assert asset.startswith("/") and r.status_code == 200 and len(r.content) > 100, asset
        if asset.endswith(".js"):
            assert "fonts.googleapis.com" not in r.text


@pytest.mark.parametrize("path", ["/", "/health", "/ready"])
def test_head_is_answered_like_get(client, path):
    head, get = client.head(path), client.get(path)
    assert head.status_code == get.status_code == 200
    assert head.content == b"" and head.headers["content-type"] == get.headers["content-type"]


@pytest.mark.parametrize("path", ["/correct/", "/health/", "/ready/"])
def test_no_redirect_to_a_host_the_client_names(client, path):
    method = "POST" if path.startswith("/correct") else "GET"
    r = client.request(method, path, content=b'{"text": "a"}', follow_redirects=False,
                       headers={**JSON, "host": "evil.example"})
    assert r.status_code == 404 and "location" not in r.headers and r.json() == {"detail": "Not Found"}


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded",
                                          "multipart/form-data; boundary=x", "application/jsonx"])
def test_a_body_that_is_not_json_is_415(client, content_type):
    headers = {"content-type": content_type} if content_type else {}
    r = client.post("/correct", content=b'{"text": "a"}', headers=headers)
    assert r.status_code == 415 and "application/json" in r.json()["detail"]


@pytest.mark.parametrize("content_type", ["application/json; charset=utf-8", "Application/JSON"])
def test_json_content_types_with_parameters_are_fine(client, content_type):
    assert client.post("/correct", content=b'{"text": "a"}', headers={"content-type": content_type}).status_code == 200


def test_every_decoding_setting_can_be_sent_per_request(forced, tiny_bundle):
    """Each CorrectorConfig field but the resource one (batch_size) is a request field, and reaches the model."""
    from dataclasses import fields

    from conftest import FORCE_EDITS

    from corrector import Corrector, CorrectorConfig
    from service.schemas import DecodingSettings

    assert set(DecodingSettings.model_fields) == {f.name for f in fields(CorrectorConfig)} - {"batch_size"}
    text = "今天天汽很好。我们去公园散步吧。"
    settings = {"use_lm": False, "top_k": 3, "shortlist": 2, "confusions": [["汽", "气"]],
                "protect_dictionary_words": True, "protect_kept_words": 3, "protect_foreign_names": 0.01,
                "protect_regional_forms": False}
    status, body = post(forced, {"text": text, **settings})
    assert status == 200
    want = Corrector.load(tiny_bundle, device="cpu", **{**FORCE_EDITS, **settings}).correct(text)
    assert body["results"][0] == want.to_dict()
    assert body["results"][0] != post(forced, {"text": text})[1]["results"][0]


@pytest.mark.parametrize(("extra", "field"), [
    ({"use_lm": "no"}, "use_lm"), ({"top_k": -1}, "top_k"), ({"top_k": 2.5}, "top_k"),
    ({"shortlist": 0}, "shortlist"), ({"shortlist": "8"}, "shortlist"), ({"protect_kept_words": -2}, "protect_kept_words"),
    ({"protect_foreign_names": 1.5}, "protect_foreign_names"), ({"protect_foreign_names": "0.1"}, "protect_foreign_names"),
    ({"protect_regional_forms": "no"}, "protect_regional_forms"),
    ({"confusions": [["汽"]]}, "confusions"), ({"confusions": [["汽", "气体"]]}, "confusions"),
    ({"batch_size": 4}, "batch_size"), ({"bogus": 1}, "bogus"),
    ({"verify": False}, "verify"), ({"margin": 1.0}, "margin"),  # retired with the hand-set decoder
])
def test_bad_settings_are_422_naming_the_setting(client, extra, field):
    status, body = post(client, {"text": "今天", **extra})
    assert status == 422 and body["detail"][0]["loc"][:2] == ["body", field], body

def test_a_bad_bundle_stops_startup(tmp_path):
    with pytest.raises(ModelLoadError, match="cannot load the model"), \
            TestClient(create_app(ServiceSettings(model_dir=tmp_path / "missing"))):
        pass


# ---- error paths -----------------------------------------------------------------------------------------


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


def test_wrong_method_and_unknown_route(client):
    assert client.get("/correct").status_code == 405
    r = client.get("/nowhere")
    assert r.status_code == 404 and r.json() == {"detail": "Not Found"}


# ---- limits ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("body", "message"), [
    ({"text": "好" * 51}, "text 0 has 51 characters; the limit is 50"),
    ({"texts": ["a", "b", "c", "d"]}, "4 texts in one request; the limit is 3"),
    ({"texts": ["好" * 40, "好" * 40, "好" * 40]}, "the request has 120 characters; the limit is 100"),
])
def test_content_limits_are_413_with_a_message(small, body, message):
    assert post(small, body) == (413, {"detail": message})


def test_content_at_the_limits_is_fine(small):
    status, body = post(small, {"texts": ["好" * 50, "好" * 50]})
    assert status == 200 and [len(r["target"]) for r in body["results"]] == [50, 50]


def test_body_over_max_bytes_is_413_whether_announced_or_streamed(small):
    big = json.dumps({"text": "a" * 1900, "protect": ["b" * 100] * 3}).encode()
    r = small.post("/correct", content=big, headers=JSON)
    assert r.status_code == 413 and r.json() == {"detail": "the request body is larger than 2000 bytes"}

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted while reading
        yield big[:1000]
        yield big[1000:]

    r = small.post("/correct", content=chunks(), headers=JSON)
    assert r.status_code == 413 and "larger than 2000 bytes" in r.json()["detail"]


def test_timeout_is_504_json(forced_corrector):
    class Slow:
        name, version = "slow", "0"

        def correct_batch(self, texts, **options):
            time.sleep(0.5)
            return forced_corrector.correct_batch(texts, **options)

    for batching in (True, False):
        app = create_app(ServiceSettings(request_timeout_s=0.1, batching=batching, cost_chars_per_s=1e6), corrector=Slow())
        with TestClient(app) as c:
            status, body = post(c, {"text": "今天"})
            assert status == 504 and body == {"detail": "the correction took longer than 0.1 s"}
            assert 'csc_http_errors_total{kind="timeout",route="/correct"} 1.0' in c.get("/metrics").text


def test_a_corrector_error_is_422_and_dependencies_can_be_overridden(client):
    class Broken:
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


# ---- Unicode ---------------------------------------------------------------------------------------------

UNICODE = [
    "😀今天天汽很好👍🏽👨‍👩‍👧",  # emoji, skin tone modifier, ZWJ sequence
    "控制\x00\x01\x07\x1b[31m字符\x7f\u0085\t\r\n好",  # C0/C1 controls, escape sequence
    "\u200f\u202eشكرا\u202c 中文 \u200e\u2066עברית\u2069",  # RTL marks and isolates
    "e\u0301 n\u0303 天\u0308 \ufe0f\ufeff\u200b\u00ad",  # combining marks, BOM, zero width
    "𠀀𪚥𝔘𝔫𝔦 ＡＢＣ１２３，。！ ㄅㄆ あいう 한국어",  # astral CJK, math letters, fullwidth, kana, hangul
    "\U0010fffd\ue000\uffff\ufffd",  # private use, noncharacter, replacement character
]


@pytest.mark.parametrize("text", UNICODE)
def test_any_unicode_text_is_200_and_length_preserving(forced, text):
    status, body = post(forced, {"text": text})
    assert status == 200
    check_contract(body["results"][0], text)


def test_lone_surrogates_round_trip(forced):
    text = "今天\ud800天汽\udfff"
    r = forced.post("/correct", content=json.dumps({"text": text}), headers=JSON)  # ASCII JSON with \ud800
    assert r.status_code == 200
    check_contract(json.loads(r.content)["results"][0], text)


def test_20000_characters(client):
    text = ("今天天汽很好，hello 世界😀\u200f。\n" * 1000)[:20000]
    status, body = post(client, {"text": text})
    assert status == 200
    check_contract(body["results"][0], text)


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


# ---- settings and command line ---------------------------------------------------------------------------


def test_settings_come_from_csc_environment_variables(monkeypatch, tmp_path):
    import service.settings as module

    assert not [v for v in vars(module).values() if isinstance(v, ServiceSettings)]  # nothing built at import
    monkeypatch.setenv("CSC_MODEL_DIR", str(tmp_path))
    monkeypatch.setenv("CSC_MAX_BATCH_SIZE", "7")
    monkeypatch.setenv("CSC_BATCHING", "false")
    monkeypatch.setenv("CSC_CORRECTOR_SETTINGS", '{"threshold": 0.7, "protect": ["张三"]}')
    s = ServiceSettings()
    assert (s.model_dir, s.max_batch_size, s.batching) == (tmp_path, 7, False)
    assert s.corrector_settings == {"threshold": 0.7, "protect": ["张三"]}
    with pytest.raises(ValueError):
        ServiceSettings(max_wait_ms=-1)


@pytest.mark.parametrize(("value", "words"), [
    ('{"batch_size": 2.5}', ["batch_size", "integer"]),
    ('{"use_lm": "no"}', ["use_lm", "boolean"]),
    ('{"verify": false}', ["verify", "not permitted"]),
    ('{"bogus": 1}', ["bogus", "not permitted"]),
    ('{"threshold": 1.5}', ["threshold", "1"]),
    ('["use_lm"]', ["JSON object"]),
    ("{use_lm: false}", ["not valid JSON"]),
])
def test_bad_corrector_settings_stop_the_start_in_one_line(value, words, tiny_bundle, capsys):
    from service.cli import main

    with pytest.raises(SystemExit) as stop:
        main(["--model", str(tiny_bundle), "--corrector-settings", value, "--port", "0"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: invalid settings: --corrector-settings"), err
    for w in words:
        assert w in err


def test_flags_win_over_environment_and_reach_worker_processes(monkeypatch, tmp_path):
    from service.cli import build_parser, export_to_env, settings_from_args

    monkeypatch.setenv("CSC_PORT", "9000")
    monkeypatch.setenv("CSC_MAX_WAIT_MS", "9")
    args = build_parser().parse_args(["--port", "8123", "--model", str(tmp_path), "--no-batching", "--workers", "2",
                                      "--corrector-settings", '{"use_lm": false}', "--request-timeout", "3"])
    s = settings_from_args(args)
    assert (s.port, s.max_wait_ms, s.model_dir, s.batching, s.workers) == (8123, 9.0, tmp_path, False, 2)
    assert s.corrector_settings == {"use_lm": False} and s.request_timeout_s == 3.0
    for name in ServiceSettings.model_fields:  # start clean; monkeypatch removes whatever export_to_env sets
        monkeypatch.setenv(f"CSC_{name.upper()}", "")
        monkeypatch.delenv(f"CSC_{name.upper()}")
    export_to_env(s)  # what `--workers 2` does before uvicorn spawns the workers
    assert ServiceSettings() == s
