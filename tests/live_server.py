"""A real server for tests: ``python -m service ...`` as a subprocess on 127.0.0.1, plus a tiny HTTP client."""

from __future__ import annotations

import json
import signal
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from service.spawn import DIRECT, REPO, free_port, running

__all__ = ["REPO", "free_port", "http", "server", "stop_gracefully"]


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


def stop_gracefully(proc: subprocess.Popen[bytes], log: Path) -> None:
    """SIGTERM: uvicorn drains, the lifespan stops the batcher, then the signal ends the process as usual."""
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) in (0, -signal.SIGTERM)
    text = log.read_text()
    assert "Waiting for application shutdown" in text and "stopped" in text, text
