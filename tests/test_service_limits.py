"""The HTTP service's limits (TestClient): texts, characters and bytes per request answered 413 with a message,
and a correction past the request timeout answered 504."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from service_calls import JSON, post

from service.app import create_app
from service.settings import ServiceSettings


@pytest.fixture(scope="module")
def small(forced_corrector) -> Iterator[TestClient]:
    limits = ServiceSettings(max_text_chars=50, max_texts=3, max_request_chars=100, max_body_bytes=2000)
    with TestClient(create_app(limits, corrector=forced_corrector)) as c:
        yield c


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
        name, version, config = "slow", "0", forced_corrector.config
        prepare, networks = forced_corrector.prepare, forced_corrector.networks

        def correct_batch(self, texts, **options):
            time.sleep(0.5)
            return forced_corrector.correct_batch(texts, **options)

        def correct_chunks(self, chunks, settings):
            time.sleep(0.5)
            return forced_corrector.correct_chunks(chunks, settings)

    for batching in (True, False):
        app = create_app(ServiceSettings(request_timeout_s=0.1, batching=batching, cost_chars_per_s=1e6), corrector=Slow())
        with TestClient(app) as c:
            status, body = post(c, {"text": "今天"})
            assert status == 504 and body == {"detail": "the correction took longer than 0.1 s"}
            assert 'csc_http_errors_total{kind="timeout",route="/correct"} 1.0' in c.get("/metrics").text


def test_a_body_of_more_values_than_a_request_can_hold_is_413_unparsed(forced_corrector, monkeypatch):
    """Before: 2 MiB of [{"a":1}, ...] were parsed (up to 0.66 CPU-seconds each) before being refused (issue 61, 6).
    Now a byte scan counts the values first; commas inside a text's string do not count."""
    from service import body_guard
    from service.schemas import max_json_values

    parsed = []
    real = body_guard.parse_json
    monkeypatch.setattr(body_guard, "parse_json", lambda *a, **k: parsed.append(1) or real(*a, **k))
    with TestClient(create_app(ServiceSettings(), corrector=forced_corrector)) as c:
        flood = b"[" + b",".join([b'{"a":1}'] * 200_000) + b"]"
        r = c.post("/correct", content=flood, headers=JSON)
        limit = max_json_values(ServiceSettings().max_texts)
        assert r.status_code == 413 and r.json() == {
            "detail": f"the request body holds more JSON values than a request can (at most {limit})"}
        assert parsed == []  # refused before any parsing
        commas = json.dumps({"text": "好," * 9_000, "protect": ['"x\\\\y"'] * 1000}).encode()  # legal: 10,000 commas
        ok = c.post("/correct", content=commas, headers=JSON)
        assert ok.status_code == 200, ok.text
    # inside strings nothing counts, escaped backslashes and quotes included (the bound: 2 ':', 2 ',', 1 '[', + 1)
    assert body_guard.json_values_at_most(b'{"t": "' + b'a\\\\\\"b,c,:[d' * 2000 + b'", "u": [1, 2]}') == 6
