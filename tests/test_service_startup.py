"""``python -m service`` start-up failures: one line on stderr, exit code 2, the port checked before the model
is loaded (issue 37, 7). Before: a corrupt ONNX file or ``--device cuda`` without a GPU printed a 37-line
lifespan traceback and exited with 3, and a taken port was noticed only after the model had loaded."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from live_server import REPO, free_port


def start(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "service", "--host", "127.0.0.1", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=120)


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    return lines[0]


@pytest.fixture(scope="module")
def corrupt_bundle(tiny_bundle, tmp_path_factory) -> Path:
    out = Path(shutil.copytree(tiny_bundle, tmp_path_factory.mktemp("corrupt") / "bundle"))
    for graph in (out / "onnx").glob("*.onnx"):
        graph.write_bytes(b"not an ONNX graph")
    return out


def test_a_corrupt_onnx_graph_is_one_line_and_exit_2(corrupt_bundle):
    line = one_line_error(start("--model", str(corrupt_bundle), "--device", "cpu", "--port", str(free_port())))
    assert line.startswith("error: cannot load the model: ")


def test_device_cuda_without_a_gpu_is_one_line_and_exit_2(tiny_bundle):
    import onnxruntime

    from corrector import Corrector, CorrectorError

    try:
        Corrector.load(tiny_bundle, device="cuda")
        pytest.skip(f"CUDA works here ({onnxruntime.get_available_providers()})")
    except CorrectorError:
        pass
    line = one_line_error(start("--model", str(tiny_bundle), "--device", "cuda", "--port", str(free_port())))
    assert line.startswith("error: cannot load the model: ") and "cuda" in line.lower()


def test_a_taken_port_is_reported_before_the_model_is_loaded(corrupt_bundle):
    """The model here could not load either: the port's message shows which was checked first."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        line = one_line_error(start("--model", str(corrupt_bundle), "--port", str(port)))
    assert line == f"error: cannot listen on 127.0.0.1:{port}: Address already in use"


def test_an_unreadable_api_keys_file_is_one_line(tiny_bundle, tmp_path):
    line = one_line_error(start("--model", str(tiny_bundle), "--port", str(free_port()),
                                "--api-keys-file", str(tmp_path / "missing")))
    assert line.startswith("error: invalid settings: --api-keys-file (CSC_API_KEYS_FILE): ")
