"""Run ``python -m service`` as a child process until /ready answers: used by the load benchmark and the tests."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never through a proxy


class ServerFailed(RuntimeError):
    """The server exited or did not become ready; the message carries its log."""


@dataclass
class Running:
    proc: subprocess.Popen[bytes]
    base: str  # http://127.0.0.1:PORT
    ready: dict[str, Any]  # the /ready answer (model, precision, ...)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def running(cmd: list[str], log: Path, port: int, env: dict[str, str] | None = None,
            ready_timeout: float = 120) -> Iterator[Running]:
    """Start ``cmd`` (output to ``log``), wait for /ready on 127.0.0.1:``port``, yield; SIGTERM it afterwards."""
    base = f"http://127.0.0.1:{port}"
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, cwd=REPO, env={**os.environ, **(env or {})}, stdout=out,
                                stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + ready_timeout
        while True:
            if proc.poll() is not None:
                raise ServerFailed(f"server exited with {proc.returncode}:\n{log.read_text()}")
            if time.monotonic() > deadline:
                raise ServerFailed(f"server not ready after {ready_timeout:g} s:\n{log.read_text()}")
            with suppress(OSError), DIRECT.open(f"{base}/ready", timeout=2) as r:
                if r.status == 200:
                    ready = json.loads(r.read())
                    break
            time.sleep(0.2)
        yield Running(proc, base, ready)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
