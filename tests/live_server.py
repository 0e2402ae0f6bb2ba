"""A real server for tests: ``python -m service ...`` as a subprocess on 127.0.0.1, or the app under uvicorn
(with the service's own connection protocol) in a thread; plus a tiny HTTP client."""

from __future__ import annotations

import contextlib
import json
import re
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from service.spawn import DIRECT, REPO, free_port, running

__all__ = ["REPO", "free_port", "http", "in_thread", "server", "stop_gracefully"]


def http(method: str, url: str, body: object | None = None, timeout: float = 30) -> tuple[int, bytes]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with DIRECT.open(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


@contextmanager
def server(cmd: list[str], env: dict[str, str], log: Path, port: int) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """Start ``cmd`` (output to ``log``), wait until /ready answers 200, yield; SIGTERM it if still running."""
    with running(cmd, log, port, env, ready_timeout=90) as r:
        yield r.proc, r.base


def wait_in_flight(base: str, timeout: float = 60) -> None:
    """Return once the server is handling a request besides this scrape of /metrics (a fixed sleep is not enough on
    a loaded machine: the request may not have reached the server yet)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _, body = http("GET", f"{base}/metrics", timeout=10)
        m = re.search(rb"^csc_http_requests_in_flight (\S+)$", body, re.M)
        if m and float(m.group(1)) >= 2:
            return
        time.sleep(0.02)
    raise AssertionError(f"no request in flight at {base} after {timeout} s")


def stop_gracefully(proc: subprocess.Popen[bytes], log: Path) -> None:
    """SIGTERM: uvicorn drains, the lifespan stops the batcher, then the signal ends the process as usual."""
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) in (0, -signal.SIGTERM)
    text = log.read_text()
    assert "Waiting for application shutdown" in text and "stopped" in text, text


@contextmanager
def in_thread(corrector: Any, **settings: Any) -> Iterator[Address]:
    """``create_app(ServiceSettings(**settings), corrector=corrector)`` under uvicorn in a thread on 127.0.0.1,
    with the protocol and keep-alive timeout ``python -m service`` uses; yields (host, port)."""
    import uvicorn

    from service.app import create_app
    from service.protocol import protocol_for
    from service.settings import ServiceSettings

    config = ServiceSettings(**{"cost_chars_per_s": 1e6, **settings})
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(config, corrector=corrector), host="127.0.0.1", port=port,
                                           http=protocol_for(config), timeout_keep_alive=config.keep_alive_s,  # type: ignore[arg-type]
                                           log_level="warning", access_log=False))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "server did not start"
        time.sleep(0.05)
    try:
        yield Address(("127.0.0.1", port), server)
    finally:
        server.should_exit = True
        thread.join(10)


class Address(tuple):
    """(host, port) of a server in a thread, with its ``uvicorn.Server`` (``server.should_exit = True`` is what
    SIGTERM does)."""

    server: Any

    def __new__(cls, address: tuple[str, int], server: Any) -> Address:
        self = super().__new__(cls, address)
        self.server = server
        return self


def wait_ready(proc: subprocess.Popen, base: str, log: Path, timeout: float = 180) -> dict:
    """Poll ``base``/ready until it answers 200 (its JSON body is returned); fail with the log if the process
    exits or the time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"the service exited with {proc.returncode}:\n{log.read_text()}"
        with contextlib.suppress(OSError, urllib.error.URLError), DIRECT.open(f"{base}/ready", timeout=5) as r:
            if r.status == 200:
                return json.loads(r.read())
        time.sleep(0.5)
    raise AssertionError(f"the service was not ready after {timeout:g} s:\n{log.read_text()}")
