"""A real server for tests: ``python -m service ...`` as a subprocess on 127.0.0.1, plus a tiny HTTP client."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never through a proxy


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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
    base = f"http://127.0.0.1:{port}"
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, cwd=REPO, env={**os.environ, **env}, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 90
        while True:
            assert proc.poll() is None, f"server exited with {proc.returncode}:\n{log.read_text()}"
            assert time.monotonic() < deadline, f"server not ready in time:\n{log.read_text()}"
            try:
                if http("GET", f"{base}/ready", timeout=2)[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.2)
        yield proc, base
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def stop_gracefully(proc: subprocess.Popen[bytes], log: Path) -> None:
    """SIGTERM: uvicorn drains, the lifespan stops the batcher, then the signal ends the process as usual."""
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) in (0, -signal.SIGTERM)
    text = log.read_text()
    assert "Waiting for application shutdown" in text and "stopped" in text, text
