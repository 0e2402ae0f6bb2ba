"""The app under a real uvicorn server in a thread (a fake corrector; no model to load), spoken to over
sockets: what TestClient cannot show (connection handling)."""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
import uvicorn
from chunked_fake import ChunkedFake

from corrector import Correction
from service.app import create_app
from service.settings import ServiceSettings
from service.spawn import free_port


class Echo(ChunkedFake):
    name, version = "echo", "0"

    def correct_batch(self, texts: Sequence[str], **settings: Any) -> list[Correction]:
        return [Correction(t, t, []) for t in texts]


@pytest.fixture(scope="module")
def live() -> Iterator[tuple[str, int]]:
    port = free_port()
    config = uvicorn.Config(create_app(ServiceSettings(), corrector=Echo()), host="127.0.0.1", port=port,
                            log_level="warning", access_log=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "server did not start"
        time.sleep(0.05)
    yield "127.0.0.1", port
    server.should_exit = True
    thread.join(10)


def send(host_port: tuple[str, int], body: bytes, *, chunked: bool, content_type: str = "application/json",
         block: int = 64 * 1024) -> tuple[int, bytes]:
    """POST /correct, writing the body in blocks as a client would; the answer may come before the end."""
    conn = http.client.HTTPConnection(*host_port, timeout=30)
    try:
        conn.putrequest("POST", "/correct")
        conn.putheader("Content-Type", content_type)
        if chunked:
            conn.putheader("Transfer-Encoding", "chunked")
        else:
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders()
        for i in range(0, len(body), block):
            part = body[i : i + block]
            conn.send(b"%x\r\n%s\r\n" % (len(part), part) if chunked else part)
        if chunked:
            conn.send(b"0\r\n\r\n")
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


@pytest.mark.parametrize("megabytes", [3, 10])
@pytest.mark.parametrize("chunked", [False, True])
def test_an_oversized_body_gets_its_413_json_while_the_client_is_still_sending(live, megabytes, chunked):
    """Before: a connection reset for most 3 MB and every 10 MB body (the server answered and closed with
    unread data in its socket). Now the rest of the body is read and dropped, then the 413 arrives."""
    body = json.dumps({"text": "好" * (megabytes * 1024 * 1024 // 3)}).encode()
    for _ in range(5):
        status, raw = send(live, body, chunked=chunked)
        assert status == 413 and json.loads(raw) == {"detail": "the request body is larger than 2097152 bytes"}


def test_a_wrong_content_type_with_a_large_body_gets_its_415(live):
    status, raw = send(live, b"x" * (1024 * 1024), chunked=False, content_type="text/plain")
    assert status == 415 and "application/json" in json.loads(raw)["detail"]


def test_the_connection_still_works_for_normal_requests(live):
    status, raw = send(live, json.dumps({"text": "今天"}).encode(), chunked=True)
    assert status == 200 and json.loads(raw)["results"][0]["target"] == "今天"
