"""The connection edge cases of issue 37 against a real uvicorn server in a thread (fake correctors, no
model), spoken to over raw sockets: header and body read timeouts, the connection cap, protocol errors as
JSON, ambiguous framing, clients that leave (their work stops; counted as 499, not 500)."""

from __future__ import annotations

import http.client
import json
import logging
import re
import socket
import threading
import time
import urllib.request
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from chunked_fake import ChunkedFake
from live_server import in_thread

from corrector import Correction

LONG = "一二三四五六七八九，" * 50  # five pieces of 100 characters with max_batch_chars=100


class Echo(ChunkedFake):
    name, version = "echo", "0"

    def correct_batch(self, texts: Sequence[str], **settings: Any) -> list[Correction]:
        return [Correction(t, t, []) for t in texts]


class Blocking(Echo):
    """Every call waits for ``go``; ``entered`` counts the calls that started. Window of 20 characters."""

    max_tokens = 22

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.entered = threading.Semaphore(0)
        self.go = threading.Semaphore(0)

    def correct_batch(self, texts: Sequence[str], **settings: Any) -> list[Correction]:
        self.calls.append(list(texts))
        self.entered.release()
        self.go.acquire(timeout=30)
        return super().correct_batch(texts)


@pytest.fixture(scope="module")
def guarded() -> Iterator[tuple[str, int]]:
    with in_thread(Echo(), header_timeout_s=1.0, body_timeout_s=1.0, max_connections=4) as address:
        yield address


def connect(address: tuple[str, int]) -> socket.socket:
    s = socket.create_connection(address, timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def read_response(s: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """Status, headers and body of one response (read until the connection closes or the body is whole)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            raise ConnectionError(f"closed before a whole response: {data!r}")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    length = int(headers.get("content-length", "-1"))
    while length < 0 or len(body) < length:
        chunk = s.recv(65536)
        if not chunk:
            break
        body += chunk
    return int(lines[0].split()[1]), headers, body


def closed_by_server(s: socket.socket) -> bool:
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True


def metrics(address: tuple[str, int]) -> str:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(f"http://{address[0]}:{address[1]}/metrics", timeout=10) as r:
        return str(r.read().decode())


def wait_for_metric(address: tuple[str, int], pattern: str, timeout: float = 10) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = metrics(address)
        if re.search(pattern, text):
            return text
        time.sleep(0.05)
    raise AssertionError(f"{pattern} not in /metrics after {timeout} s:\n{text}")


def test_headers_trickled_slowly_get_a_408_at_the_header_timeout(guarded):
    """Before: a header line every 2 s held the connection for as long as the client liked (issue 37, 5)."""
    with connect(guarded) as s:
        s.sendall(b"POST /correct HTTP/1.1\r\nHost: x\r\n")
        start = time.monotonic()
        answered = None
        for i in range(40):  # a header line every 0.1 s for up to 4 s; the timeout is 1 s
            try:
                s.sendall(f"X-Slow-{i}: 1\r\n".encode())
            except OSError:
                break
            time.sleep(0.1)
            s.settimeout(0.001)
            try:
                if s.recv(1, socket.MSG_PEEK):
                    answered = time.monotonic() - start
                    break
            except (BlockingIOError, TimeoutError):
                pass
            finally:
                s.settimeout(10)
        assert answered is not None and answered < 3.5, "the server let the headers trickle on"
        status, headers, body = read_response(s)
        assert status == 408 and headers["content-type"] == "application/json"
        assert json.loads(body) == {"detail": "the request headers took longer than 1 s to arrive"}
        assert closed_by_server(s)


def test_a_body_sent_too_slowly_gets_a_408(guarded):
    with connect(guarded) as s:
        s.sendall(b"POST /correct HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
        status, headers, body = read_response(s)
        assert status == 408 and json.loads(body) == {"detail": "the request body took longer than 1 s to arrive"}


@pytest.mark.parametrize(("raw", "expected"), [
    (b"GARBAGE\r\n\r\n", 400), (b"GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n", 400),
    (b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 70000, 431),  # headers still incomplete past 16 KiB
])
def test_protocol_errors_are_answered_as_json(guarded, raw, expected):
    """Before: uvicorn's plain-text 'Invalid HTTP request received.'"""
    with connect(guarded) as s:
        s.sendall(raw)
        status, headers, body = read_response(s)
    assert status == expected and headers["content-type"] == "application/json"
    assert json.loads(body)["detail"].startswith("invalid HTTP request: ")


def test_a_protocol_error_never_repeats_the_request_line_it_names(guarded):
    """Before: "illegal header line: bytearray(b'X-API-Key secret-key')" copied a key into the answer."""
    with connect(guarded) as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nX-API-Key secret-key-123\r\n\r\n")
        status, headers, body = read_response(s)
    detail = json.loads(body)["detail"]
    assert status == 400 and detail.startswith("invalid HTTP request: ") and "secret-key" not in detail, detail


def test_content_length_with_transfer_encoding_is_refused(guarded):
    """Before: accepted (Transfer-Encoding won), the ambiguity request smuggling is made of."""
    body = b'{"text": "a"}'
    with connect(guarded) as s:
        s.sendall(b"POST /correct HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                  b"Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n" % (len(body), len(body), body))
        status, headers, raw = read_response(s)
        assert status == 400 and "both Content-Length and Transfer-Encoding" in json.loads(raw)["detail"]
        assert closed_by_server(s)


def test_connections_beyond_the_cap_get_a_json_503(guarded):
    """Before: no cap at all."""
    idle = [connect(guarded) for _ in range(4)]  # the cap; the metrics scrape below needs none of them
    try:
        time.sleep(0.2)
        with connect(guarded) as s:
            s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            status, headers, body = read_response(s)
        assert status == 503 and headers["retry-after"] == "1"
        assert json.loads(body) == {"detail": "too many open connections; retry shortly"}
    finally:
        for s in idle:
            s.close()
    time.sleep(0.2)
    with connect(guarded) as s:
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        assert read_response(s)[0] == 200


def test_one_client_cannot_hold_every_connection_slot(capfd):
    """Before: one client holding 266 sockets left 45 of 47 other requests a 503 for 25 s, the refusals never
    reached /metrics and each wrote a warning line. Now an address has at most max_connections_per_client; the
    refusals are counted and logged once."""
    with in_thread(Echo(), max_connections=50, max_connections_per_client=3) as address:
        held = [connect(address) for _ in range(3)]
        try:
            time.sleep(0.2)
            for _ in range(4):
                with connect(address) as s:
                    s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
                    status, headers, body = read_response(s)
                assert status == 503 and headers["retry-after"] == "1" and "x-request-id" in headers
                assert "from your address" in json.loads(body)["detail"]
            other = socket.create_connection(address, timeout=10, source_address=("127.0.0.2", 0))  # another client
            with other:
                other.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
                assert read_response(other)[0] == 200
        finally:
            for s in held:
                s.close()
        time.sleep(0.2)
        text = metrics(address)
    assert 'csc_connections_refused_total{cap="client"} 4.0' in text
    assert capfd.readouterr().err.count("refused with 503") == 1


def test_a_431_says_its_reason_and_the_same_words_however_the_headers_arrived(guarded):
    """Before: the status line was "HTTP/1.1 431 " (no reason phrase), and headers still incomplete past the limit
    were answered with h11's own words, headers sent whole with ours."""
    answers = []
    for raw in (b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 20_480 + b"\r\n\r\n",  # 20 KiB, whole
                b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 70_000):  # still incomplete
        with connect(guarded) as s:
            s.sendall(raw)
            data = b""
            while True:  # the whole answer: the server closes the connection after it
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        answers.append((head.split(b"\r\n")[0], json.loads(body)))
    assert answers[0] == answers[1]
    assert answers[0][0] == b"HTTP/1.1 431 Request Header Fields Too Large"
    assert answers[0][1]["detail"] == "invalid HTTP request: request headers larger than 16384 bytes"


def test_request_headers_over_the_limit_in_one_segment_get_a_431(guarded):
    """Before: the 16 KiB header limit held only when the headers arrived in pieces; 60 KB sent at once passed."""
    with connect(guarded) as s:
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 60_000 + b"\r\n\r\n")
        status, _, raw = read_response(s)
        assert status == 431 and "request headers larger than" in json.loads(raw)["detail"]
    with connect(guarded) as s:  # headers under the limit are fine, in one segment or not
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 10_000 + b"\r\n\r\n")
        assert read_response(s)[0] == 200


def test_a_client_that_leaves_stops_its_work_and_counts_as_499():
    """Before: nothing noticed the disconnect and a maximal request ran to its end (issue 37, 3)."""
    model = Blocking()
    with in_thread(model, max_batch_chars=100, max_wait_ms=0) as address:
        body = json.dumps({"text": LONG}).encode()
        with connect(address) as s:
            s.sendall(b"POST /correct HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
            assert model.entered.acquire(timeout=10)  # its first unit runs
        text = wait_for_metric(address, r'csc_http_requests_total\{method="POST",route="/correct",status="499"\} 1.0')
        assert 'csc_http_errors_total{kind="client_disconnect",route="/correct"} 1.0' in text
        model.go.release()  # the unit in progress ends; nothing of that request follows
        after = json.dumps({"text": "after"}).encode()
        with connect(address) as s:
            s.sendall(b"POST /correct HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: %d\r\n\r\n%s" % (len(after), after))
            assert model.entered.acquire(timeout=10)
            model.go.release()
            assert read_response(s)[0] == 200
    assert len(model.calls) == 2 and model.calls[1] == ["after"]


def test_an_abandoned_upload_counts_as_a_client_disconnect_not_a_500(guarded):
    """Before: counted as a 500 'internal' error, with no log line (issue 37, 6)."""
    with connect(guarded) as s:
        s.sendall(b"POST /correct HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
        time.sleep(0.1)
    text = wait_for_metric(guarded, r'csc_http_requests_total\{method="POST",route="/correct",status="499"\}')
    assert 'status="500"' not in text and 'kind="internal"' not in text


def test_the_disconnect_line_logs_the_path_as_sent(guarded, caplog):
    """Before: the disconnect line wrote the decoded path, where U+2028 or a bidi control sent percent-encoded
    reached the log raw (issue 72, 3). Now it logs the path as the access line does: as sent."""
    with caplog.at_level(logging.INFO, logger="service.metrics"):
        with connect(guarded) as s:
            s.sendall(b"POST /c%6frrect HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: 1000\r\n\r\n{")
            time.sleep(0.1)
        wait_for_metric(guarded, r'csc_http_requests_total\{method="POST",route="/correct",status="499"\}')
    lines = [r.getMessage() for r in caplog.records if "disconnected" in r.getMessage()]
    assert lines and all(line.startswith("POST /c%6frrect:") for line in lines), lines


def test_a_body_of_half_a_million_tiny_objects_neither_stalls_the_server_nor_lists_every_error():
    """Before: {"texts": [{}, {}, ...]} in 2 MB got a 422 listing 500,000 errors after 17 s, the event loop held all
    along (/health timed out). Now a byte scan refuses a body of more values than a request can hold before
    parsing it (413); a smaller one is parsed on a worker thread, a list of texts is refused at its first item that
    is not a string, and a 422 lists at most MAX_ERRORS errors."""
    from service.errors import MAX_ERRORS

    body = json.dumps({"texts": [{}] * 500_000}).encode()
    lists = json.dumps({"text": "a", "protect": [[]] * 500_000}).encode()  # no Python callback in the C scanner
    with in_thread(Echo()) as address:
        took: list[float] = []
        done = threading.Event()

        def poll() -> None:
            conn = http.client.HTTPConnection(*address, timeout=10)
            while not done.is_set():
                start = time.perf_counter()
                conn.request("GET", "/health")
                conn.getresponse().read()
                took.append(time.perf_counter() - start)

        poller = threading.Thread(target=poll)
        poller.start()
        try:
            for _ in range(3):
                conn = http.client.HTTPConnection(*address, timeout=30)
                conn.request("POST", "/correct", body, {"content-type": "application/json"})
                r = conn.getresponse()
                detail = json.loads(r.read())["detail"]
                assert r.status == 413 and detail.startswith("the request body holds more JSON values than")
                conn = http.client.HTTPConnection(*address, timeout=30)
                conn.request("POST", "/correct", lists, {"content-type": "application/json"})
                r = conn.getresponse()
                assert r.status == 413 and "JSON values" in r.read().decode()
            # fewer values than a request may hold: parsed, and refused at the first item that is not a string
            conn = http.client.HTTPConnection(*address, timeout=30)
            conn.request("POST", "/correct", json.dumps({"texts": [{}] * 3000}), {"content-type": "application/json"})
            r = conn.getresponse()
            assert r.status == 422 and json.loads(r.read())["detail"] == [{
                "loc": ["body", "texts"], "type": "value_error", "msg": "Value error, item 0 is an object, not a string"}]
        finally:
            done.set()
            poller.join()
        took.sort()
        assert took[int(len(took) * 0.95)] < 0.05 and took[-1] < 0.25, took[-5:]  # measured: at most 35 / 120 ms
        conn = http.client.HTTPConnection(*address, timeout=30)  # many errors: the first few and a count
        conn.request("POST", "/correct", json.dumps({"text": "a", "threshold": "x", **{f"x{i}": 1 for i in range(50)}}),
                     {"content-type": "application/json"})
        r = conn.getresponse()
        detail = json.loads(r.read())["detail"]
        assert r.status == 422 and len(detail) == MAX_ERRORS + 1 and detail[-1]["type"] == "too_many_errors"


def test_refused_connections_held_idle_lock_no_other_address_out():
    """Before: a connection over the per-address cap stayed open until a request or the header timeout and still
    counted toward the server's cap, so one address holding 300 idle sockets left others 503s (issue 61, 1). Now
    only accepted connections count toward the server's cap."""
    with in_thread(Echo(), header_timeout_s=10.0, max_connections=6, max_connections_per_client=3) as address:
        held = [connect(address) for _ in range(10)]  # 3 accepted, 7 refused, all idle
        try:
            time.sleep(0.3)
            for _ in range(3):  # another address: the server holds 3 accepted connections of 6
                with socket.create_connection(address, timeout=10, source_address=("127.0.0.2", 0)) as other:
                    other.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
                    assert read_response(other)[0] == 200
        finally:
            for s in held:
                s.close()


UPGRADE = (b"GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
           b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")


def test_websocket_upgrades_are_refused_as_plain_http_and_leave_the_caps_as_they_were(capfd):
    """Before: with wsproto installed, uvicorn swapped the connection to its WebSocket protocol and the service's
    bookkeeping never released the slot; 128 upgrades from two addresses left every client a 503 until a restart
    (issue 72, 1), and the refusal had an empty reason phrase and no JSON body (6). Now an upgrade is a plain HTTP
    request answered with a JSON 400 that closes the connection, and 1,000 of them leave the caps as they were."""
    with in_thread(Echo(), max_connections=4, max_connections_per_client=2) as address:
        for i in range(1000):
            with socket.create_connection(address, timeout=10, source_address=(f"127.0.0.{2 + i % 2}", 0)) as s:
                s.sendall(UPGRADE)
                status, headers, body = read_response(s)
                assert status == 400 and headers["connection"] == "close", (i, status, headers)
                assert "WebSocket" in json.loads(body)["detail"]
                if i == 0:
                    assert closed_by_server(s)
        time.sleep(0.2)
        held = [connect(address) for _ in range(2)] + [
            socket.create_connection(address, timeout=10, source_address=("127.0.0.2", 0)) for _ in range(2)]
        try:  # the server's cap of 4, two per address: all answered
            for s in held:
                s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
                assert read_response(s)[0] == 200
        finally:
            for s in held:
                s.close()
    err = capfd.readouterr().err
    assert "Unsupported upgrade request" not in err and "WebSocket" not in err


def test_a_websocket_refusal_has_its_reason_phrase(guarded):
    with connect(guarded) as s:
        s.sendall(UPGRADE)
        s.settimeout(10)
        head = s.recv(65536).split(b"\r\n", 1)[0]
    assert head == b"HTTP/1.1 400 Bad Request"


def test_an_absolute_form_request_target_is_served(guarded):
    """Before: ``POST http://host/correct`` was a 404 (issue 72, 6); RFC 9112 3.2.2 says a server accepts it."""
    body = json.dumps({"text": "好"}).encode()
    for target in (b"http://x/correct", b"HTTP://x:8000/correct?a=1", b"https://x/correct"):
        with connect(guarded) as s:
            s.sendall(b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                      % (target, len(body), body))
            status, _, answer = read_response(s)
        assert status == 200 and json.loads(answer)["results"][0]["target"] == "好", (target, answer)
    with connect(guarded) as s:
        s.sendall(b"GET http://x HTTP/1.1\r\nHost: x\r\n\r\n")
        assert read_response(s)[0] == 200  # the demo page at /


def test_a_connection_over_a_cap_is_answered_and_closed_at_once():
    """Before: it stayed open, holding a file descriptor, until its request arrived or the 10 s header timeout;
    under a 1,024-descriptor limit one address holding ~1,100 idle sockets made other clients time out (issue 72,
    2). Now it gets its 503 the moment it connects and is closed within the linger, sending nothing."""
    from service.protocol import LINGER_S

    with in_thread(Echo(), header_timeout_s=10.0, max_connections=50, max_connections_per_client=2) as address:
        held = [connect(address) for _ in range(2)]
        try:
            start = time.monotonic()
            with connect(address) as s:  # the third from this address: it sends nothing
                status, headers, body = read_response(s)
                assert status == 503 and headers["retry-after"] == "1" and len(headers["x-request-id"]) == 32
                assert "from your address" in json.loads(body)["detail"]
                assert closed_by_server(s)
            assert time.monotonic() - start < LINGER_S + 2
            with connect(address) as s:  # one that sends its request after the answer still reads the answer
                time.sleep(0.1)
                s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
                assert read_response(s)[0] == 503
        finally:
            for s in held:
                s.close()
        assert 'csc_connections_refused_total{cap="client"} 2.0' in metrics(address)


def test_the_connection_cap_stays_below_the_file_descriptors():
    resource = pytest.importorskip("resource")
    from service.descriptors import FD_RESERVE, descriptor_cap

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (300, hard))
        assert descriptor_cap(256) == 300 - FD_RESERVE and descriptor_cap(100) == 100
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_accept_errors_are_one_line_per_interval(caplog):
    """Before: each accept() that failed for want of file descriptors logged a traceback: 300,410 lines in 25 s
    (issue 72, 2). Now the server's loop counts them and logs one line per interval; other reports as before."""
    import asyncio

    from service.accept_errors import ACCEPT, throttled

    async def flood() -> None:
        loop = asyncio.get_running_loop()
        throttled(loop)
        for _ in range(1000):
            loop.call_exception_handler({"message": ACCEPT, "exception": OSError(24, "Too many open files")})
        loop.call_exception_handler({"message": "something else"})

    with caplog.at_level(logging.INFO):
        asyncio.run(flood())
    lines = [r.getMessage() for r in caplog.records]
    assert sum("could not be accepted" in line for line in lines) == 1
    assert "1 connection(s) could not be accepted" in lines[0] and "Too many open files" in lines[0]
    assert any("something else" in line for line in lines) and len(lines) == 2, lines


def test_a_retry_of_accept_after_the_shutdown_closed_its_socket_is_no_traceback(caplog):
    """Before: after a flood, asyncio's retry of accept() (a second after a failed one) could fire once the shutdown
    had closed the listening socket, and wrote "Exception in callback ..._start_serving" with a ValueError traceback
    (CI saw it in the flood test's log). It is the same call here, on a closed socket: the default handler writes the
    traceback, the server's handler nothing above DEBUG."""
    import asyncio
    import socket

    from service.accept_errors import throttled

    async def retry_on_a_closed_socket(install: bool) -> None:
        loop = asyncio.get_running_loop()
        if install:
            throttled(loop)
        listener = socket.socket()
        listener.close()
        loop.call_soon(loop._start_serving, lambda: None, listener)  # type: ignore[attr-defined]
        await asyncio.sleep(0.05)

    with caplog.at_level(logging.INFO):
        asyncio.run(retry_on_a_closed_socket(install=False))
    assert any("_start_serving" in r.getMessage() and r.exc_info for r in caplog.records)
    caplog.clear()
    with caplog.at_level(logging.INFO):
        asyncio.run(retry_on_a_closed_socket(install=True))
    assert not caplog.records


def test_a_request_sent_as_the_shutdown_begins_gets_a_503_not_a_reset():
    """Before: requests sent on idle keep-alive connections just after SIGTERM got a reset (issue 72, 6). Now the
    idle connection stays open a moment and answers a JSON 503 with Retry-After, then closes."""
    with in_thread(Echo()) as address:
        with connect(address) as s:
            s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            assert read_response(s)[0] == 200  # now idle, kept alive
            address.server.should_exit = True  # what SIGTERM does
            time.sleep(0.3)  # the shutdown has begun: the listener is closed
            s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            status, headers, body = read_response(s)
            assert status == 503 and headers["retry-after"] == "5" and headers["connection"] == "close"
            assert json.loads(body) == {"detail": "the service is shutting down; retry the request"}
            assert closed_by_server(s)
        with pytest.raises(OSError):
            connect(address)  # no new connection is accepted


def test_an_idle_connection_closes_soon_after_the_shutdown_begins():
    from service.protocol import DRAIN_S

    with in_thread(Echo()) as address, connect(address) as s:
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        assert read_response(s)[0] == 200
        start = time.monotonic()
        address.server.should_exit = True
        assert closed_by_server(s) and time.monotonic() - start < DRAIN_S + 1
