"""For exposed deployments (issue 37, 10): API keys (401), a per-client rate limit (429 with Retry-After),
and a request ID in every response header and log line. Before: none of them existed."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from chunked_fake import ChunkedFake
from fastapi.testclient import TestClient

from corrector import Correction
from service.access import RateLimiter
from service.app import create_app
from service.request_id import RequestIdFilter
from service.settings import ServiceSettings

JSON = {"content-type": "application/json"}
BODY = json.dumps({"text": "今天"})


class Echo(ChunkedFake):
    name, version = "echo", "0"

    def correct_batch(self, texts: Sequence[str], **settings: Any) -> list[Correction]:
        if "fail" in texts:
            raise RuntimeError("a bug")
        return [Correction(t, t, []) for t in texts]


def app_with(**settings: Any) -> TestClient:
    return TestClient(create_app(ServiceSettings(cost_chars_per_s=1e6, **settings), corrector=Echo()),
                      raise_server_exceptions=False)


@pytest.fixture(scope="module")
def keyed(tmp_path_factory) -> Iterator[TestClient]:
    keys = tmp_path_factory.mktemp("keys") / "keys.txt"
    keys.write_text("# one key a line\nfile-key-0123456789\n\n", encoding="utf-8")
    with app_with(api_keys="env-key-0123456789, other-key-0123456789", api_keys_file=keys) as c:
        yield c


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong"}, {"X-API-Key": "wrong"},
                                     {"Authorization": "Basic env-key-0123456789"}, {"Authorization": "Bearer "}])
def test_without_a_valid_key_correct_and_metrics_are_401(keyed, headers):
    r = keyed.post("/correct", content=BODY, headers={**JSON, **headers})
    assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
    assert "API key" in r.json()["detail"]
    assert keyed.get("/metrics", headers=headers).status_code == 401


@pytest.mark.parametrize("headers", [{"Authorization": "Bearer env-key-0123456789"}, {"authorization": "bearer other-key-0123456789"},
                                     {"X-API-Key": "file-key-0123456789"}])
def test_a_key_from_the_environment_or_the_file_is_accepted(keyed, headers):
    r = keyed.post("/correct", content=BODY, headers={**JSON, **headers})
    assert r.status_code == 200 and r.json()["results"][0]["target"] == "今天"
    assert keyed.get("/metrics", headers=headers).status_code == 200


@pytest.mark.parametrize("path", ["/health", "/ready", "/", "/docs", "/openapi.json"])
def test_probes_and_pages_need_no_key(keyed, path):
    assert keyed.get(path).status_code == 200


def test_a_401_is_counted_under_its_route(keyed):
    keyed.post("/correct", content=BODY, headers=JSON)
    text = keyed.get("/metrics", headers={"X-API-Key": "file-key-0123456789"}).text
    assert 'csc_http_errors_total{kind="unauthorized",route="/correct"}' in text


def test_the_rate_limiter_refills_at_its_rate():
    limiter = RateLimiter(rate=2.0, burst=3)
    assert [limiter.take("a", 0.0) for _ in range(3)] == [0.0, 0.0, 0.0]
    assert limiter.take("a", 0.0) == pytest.approx(0.5)  # the next token comes after 1/rate
    assert limiter.take("b", 0.0) == 0.0  # another client has its own bucket
    assert limiter.take("a", 0.5) == 0.0  # refilled
    assert limiter.take("a", 0.6) == pytest.approx(0.4)  # 0.2 of a token; 0.8 more to go


def test_the_rate_limiter_remembers_a_bounded_number_of_clients():
    limiter = RateLimiter(rate=1.0, burst=1, max_clients=2)
    for client in ("a", "b", "c"):
        limiter.take(client, 0.0)
    assert limiter.take("a", 0.0) == 0.0  # forgotten: a full bucket again
    assert limiter.take("c", 0.0) == pytest.approx(1.0)


def test_past_the_rate_a_client_gets_429_with_retry_after():
    with app_with(rate_limit_per_s=0.01, rate_limit_burst=2, api_keys="key-one-0123456789,key-two-0123456789") as c:
        one = {**JSON, "X-API-Key": "key-one-0123456789"}
        assert [c.post("/correct", content=BODY, headers=one).status_code for _ in range(2)] == [200, 200]
        r = c.post("/correct", content=BODY, headers=one)
        assert r.status_code == 429 and r.headers["retry-after"] == "100"
        assert r.json() == {"detail": "too many requests from this client; retry in 100 s"}
        assert c.post("/correct", content=BODY, headers={**JSON, "X-API-Key": "key-two-0123456789"}).status_code == 200
        assert c.get("/health").status_code == 200  # only /correct counts


def test_every_response_carries_a_request_id(keyed):
    ids = {keyed.get("/health").headers["x-request-id"] for _ in range(3)}
    assert len(ids) == 3 and all(len(i) == 32 for i in ids)
    assert keyed.post("/correct", content=BODY, headers=JSON).headers["x-request-id"]  # a 401 too
    r = keyed.get("/health", headers={"X-Request-ID": "from-the-proxy.42"})
    assert r.headers["x-request-id"] == "from-the-proxy.42"
    made_up = keyed.get("/health", headers={"X-Request-ID": "bad id; x"}).headers["x-request-id"]
    assert made_up != "bad id; x" and len(made_up) == 32


def test_log_lines_of_a_request_carry_its_id(caplog):
    caplog.handler.addFilter(RequestIdFilter())
    with caplog.at_level(logging.INFO), app_with() as c:
        r = c.post("/correct", content=json.dumps({"text": "fail"}), headers={**JSON, "X-Request-ID": "req-1"})
        assert r.status_code == 500 and r.headers["x-request-id"] == "req-1"
    tagged = [rec for rec in caplog.records if getattr(rec, "request_tag", "") == " [request req-1]"]
    assert {rec.name for rec in tagged} >= {"service.errors", "service.access"}, [(r.name, r.getMessage()) for r in caplog.records]
    [access] = [rec for rec in tagged if rec.name == "service.access"]
    assert '"POST /correct HTTP/1.1" 500' in access.getMessage()


def test_no_request_can_forge_a_log_line_or_colour_the_terminal(caplog):
    """Before: the access line wrote the decoded path, so %0d%0a in a URL added a fake line with a fake request
    ID, and ANSI escapes passed through (issue 46, 8). Now the path is logged as sent (percent-encoded), and
    any control character that reaches a line is escaped."""
    from service.request_id import loggable

    with caplog.at_level(logging.INFO), app_with() as c:
        c.get("/health%0d%0aINFO:%20%20%20%20%20fake%20line%20[request%20x]%1b[31m")
    [access] = [rec for rec in caplog.records if rec.name == "service.access"]
    line = access.getMessage()
    assert "\r" not in line and "\n" not in line and "\x1b" not in line
    assert "/health%0d%0aINFO:" in line
    assert loggable("GET\r\n\x1b[31m\\") == "GET\\x0d\\x0a\\x1b[31m\\\\"
    # the Unicode line breaks and the bidi controls too (issue 72, 3)
    assert loggable("a\u2028b\u2029c\u202ed\u2066e\u200ff") == "a\\u2028b\\u2029c\\u202ed\\u2066e\\u200ff"


def test_no_logger_can_write_a_forged_line(capfd):
    """Before: "the client disconnected before the answer", "cancelled by the shutdown" and "unhandled error"
    wrote the decoded path, so %0d%0a broke the line (issue 61, 2). One filter on every handler of the service's
    logging escapes the control characters of any message, whichever logger writes it."""
    import logging.config

    from service.cli import log_config

    names = ("service", "service.access", "corrector", "uvicorn", "uvicorn.error", "uvicorn.access", "")
    saved = {n: (lg.handlers[:], lg.propagate, lg.level, lg.disabled) for n in names for lg in [logging.getLogger(n)]}
    try:
        logging.config.dictConfig(log_config("info"))
        forged = '/x\r\nINFO:     127.0.0.1:1 - "POST /correct HTTP/1.1" 200 1.0 ms [request forged]\x1b[31m\u2028\u202e'
        for name in ("service.metrics", "service.errors", "service", "corrector", "uvicorn.error"):
            logging.getLogger(name).warning("the client disconnected before the answer: %s", forged)
        err = capfd.readouterr().err
        lines = [line for line in err.splitlines() if "disconnected" in line]
        assert len(lines) == 5 and len(err.strip().splitlines()) == 5, err
        assert all("/x\\x0d\\x0aINFO:" in line and "\x1b" not in line and "\\u2028\\u202e" in line for line in lines)
        assert not any(c in err for c in "\u2028\u2029\u202e")
        logging.getLogger("service").info("C:\\path\\file")  # backslashes alone stay as they are
        assert capfd.readouterr().err.strip().endswith("C:\\path\\file")
    finally:  # the test process's logging as it was (caplog reads records that propagate)
        for n, (handlers, propagate, level, disabled) in saved.items():
            lg = logging.getLogger(n)
            lg.handlers[:], lg.propagate, lg.disabled = handlers, propagate, disabled
            lg.setLevel(level)


def test_short_keys_are_refused_and_guessing_keys_is_throttled_per_address():
    """Before: any key length was accepted and wrong keys were never limited (1,033 guesses a second; a
    two-character key found in 0.5 s; issue 46, 8)."""
    with pytest.raises(ValueError, match="at least 16 characters"):
        ServiceSettings(api_keys="short").keys()
    with app_with(api_keys="the-right-key-0123456789") as c:
        wrong = [c.post("/correct", content=BODY, headers={**JSON, "X-API-Key": f"guess-{i}"}) for i in range(12)]
        assert [r.status_code for r in wrong] == [401] * 10 + [429] * 2
        assert wrong[-1].headers["retry-after"] == "10" and "wrong API keys" in wrong[-1].json()["detail"]
        # the right key still works (only wrong ones are counted), and so do the other routes
        assert c.post("/correct", content=BODY, headers={**JSON, "X-API-Key": "the-right-key-0123456789"}).status_code == 200
        assert c.get("/health").status_code == 200
