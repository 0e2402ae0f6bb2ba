"""Every documented command works from a built wheel.

The wheel is built from a copy of the sources (``pip wheel --no-deps``), installed (not editable) with its
dependencies into a fresh virtual environment, and run as a user runs it, from an empty directory with no
``PYTHONPATH``: the CLI, ``batch`` on a small file, ``python -m corrector serve`` without the ``service`` extra (one
line naming it) and, once the extra is installed, the service itself: ``/ready`` and ``POST /correct`` over HTTP.
The wheel itself: everything under ``corrector``, no training code or torch weights, and a plain install pulls no
GPU runtime.

pip reads its usual configuration (index, find-links, cache), so the dependencies come from wherever this
machine installs packages from. Slow: a minute or two, most of it installing the dependencies.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from checkout import copy_sources
from live_server import free_port, http, wait_ready

REPO = Path(__file__).resolve().parents[1]
TYPO, FIXED = "我门一起去吃饭吧。", "我们一起去吃饭吧。"

pytestmark = pytest.mark.slow


def pip(python: Path | str, *args: str, timeout: int = 900) -> str:
    done = subprocess.run([str(python), "-m", "pip", "--disable-pip-version-check", *args],
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout + done.stderr


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    copy_sources(src)
    log = pip(sys.executable, "wheel", "-v", "--no-deps", "--no-build-isolation", "-w", str(tmp / "dist"), str(src))
    (tmp / "build.log").write_text(log, encoding="utf-8")
    (built,) = (tmp / "dist").glob("electra_csc-*.whl")
    return built


def test_the_build_warns_of_no_undeclared_package(wheel):
    """setuptools warns, at length, of every folder it would install without its being declared a package (371
    lines for the bundle's folders once): each is declared in pyproject.toml."""
    log = (wheel.parent.parent / "build.log").read_text(encoding="utf-8")
    assert "Building wheel" in log and "would be ignored" not in log and "is absent from the" not in log


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    """A fresh venv (nothing of this environment's packages) with the wheel and its dependencies installed."""
    root = tmp_path_factory.mktemp("venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True, timeout=300)
    python = root / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")
    pip(python, "install", "-q", str(wheel))
    return python


@pytest.fixture
def user(tmp_path, venv) -> dict:
    """How a user runs it: an empty directory, the venv's scripts first on PATH, no PYTHONPATH."""
    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": f"{venv.parent}{os.pathsep}/usr/bin{os.pathsep}/bin", "HOME": str(home), "LANG": "C.UTF-8"}
    return {"cwd": tmp_path, "env": env}


def run(user: dict, *args: str | Path, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([*map(str, args)], capture_output=True, text=True, timeout=timeout, **user)


def test_the_wheel_installs_only_corrector_inference_files_and_the_cpu_runtime(wheel, venv, user):
    import zipfile

    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"corrector"}, tops  # no service, training or other generic top-level names
    assert not [n for n in names if n.endswith("model.safetensors") or "/training/" in n]
    assert {"corrector/service/app.py", "corrector/electra_models/default/manifest.json",
            "corrector/electra_models/default/onnx/body.int8.onnx"} <= set(names)
    # the bundle's inference files (they compress little) and the code, nothing more
    from corrector.bundle import TRAINING_FILES

    bundle = REPO / "data" / "electra_models" / "default"
    inference = sum(f.stat().st_size for f in bundle.rglob("*") if f.is_file()
                    and f.relative_to(bundle).as_posix() not in TRAINING_FILES)
    assert wheel.stat().st_size < inference + 5e6, (wheel.stat().st_size, inference)
    script = ("import importlib.metadata as m; d = [x.metadata['Name'].lower() for x in m.distributions()]; "
              "print(sorted(n for n in d if n.startswith(('onnxruntime', 'nvidia'))))")
    dists = run(user, venv, "-c", script)
    assert dists.stdout.strip() == "['onnxruntime']", dists.stdout + dists.stderr
    for name in ("service", "training", "corrector_models"):
        assert run(user, venv, "-c", f"import {name}").returncode != 0


def test_the_cli_and_batch_from_the_installed_wheel(venv, user):
    where = run(user, venv, "-c", "import corrector, corrector.batch; print(corrector.__file__)")
    assert where.returncode == 0, where.stderr
    assert where.stdout.startswith(str(venv.parent.parent)), where.stdout  # the installed copy, not the checkout

    done = run(user, venv, "-m", "corrector", TYPO)
    assert (done.returncode, done.stdout, done.stderr) == (0, FIXED + "\n", "")
    script = run(user, venv.parent / "electra-csc", "--json", "今天天汽很好")
    assert script.returncode == 0, script.stderr
    assert json.loads(script.stdout)["target"] == "今天天气很好"
    version = run(user, venv, "-m", "corrector", "--version")
    assert version.stdout.startswith("electra-csc ") and version.returncode == 0
    (user["cwd"] / "page.md").write_text(f"{TYPO}\n", encoding="utf-8")
    lint = run(user, venv, "-m", "corrector", "lint", "page.md")  # without the 'lint' extra: one line, exit 2
    assert lint.returncode == 2 and lint.stderr.count("\n") == 1, lint.stderr
    assert lint.stderr.startswith("error: lint needs the 'lint' extra") and ".whl[lint]" in lint.stderr
    lsp = run(user, venv, "-m", "corrector", "lsp")
    assert lsp.returncode != 0 and "the language server needs the 'lint' extra" in lsp.stderr, lsp.stderr

    (user["cwd"] / "x.txt").write_text(f"{TYPO}\n今天天汽很好\n\n", encoding="utf-8")
    batch = run(user, venv, "-m", "corrector", "batch", "--input", "x.txt", "--output", "out/")
    assert batch.returncode == 0, batch.stderr
    assert batch.stdout.startswith("3 lines in, 3 corrected (2 changed), 0 errors;"), batch.stdout
    rows = [json.loads(line) for line in (user["cwd"] / "out" / "part-00000.jsonl").read_text().splitlines()]
    assert [(r["line"], r["target"]) for r in rows] == [(1, FIXED), (2, "今天天气很好"), (3, "")]
    ray = run(user, venv, "-m", "corrector", "batch", "--input", "x.txt", "--output", "o2/", "--engine", "ray")
    assert ray.returncode != 0 and "pip install 'ray[data]" in ray.stderr, ray.stderr  # the extra's own packages
    assert "electra-csc[" not in ray.stderr  # no index has that name


def test_the_service_names_its_extra_then_serves_once_it_is_installed(wheel, venv, user):
    missing = run(user, venv, "-m", "corrector", "serve")
    assert missing.returncode != 0 and missing.stdout == ""
    assert missing.stderr.count("\n") == 1 and "Traceback" not in missing.stderr, missing.stderr
    assert missing.stderr.startswith("error: 'serve' needs the 'service' extra")
    assert "pip install 'fastapi>=" in missing.stderr and "electra-csc[" not in missing.stderr
    assert "electra_csc-" in missing.stderr and ".whl[service]" in missing.stderr

    pip(venv, "install", "-q", f"{wheel}[service]")
    port = free_port()
    log = user["cwd"] / "service.log"
    with log.open("w") as out:
        proc = subprocess.Popen([str(venv), "-m", "corrector", "serve", "--host", "127.0.0.1", "--port", str(port)],
                                stdout=out, stderr=subprocess.STDOUT, **user)
    base = f"http://127.0.0.1:{port}"
    try:
        ready = wait_ready(proc, base, log)
        assert ready["status"] == "ready" and ready["model"] == "default"
        status, body = http("POST", f"{base}/correct", {"text": TYPO}, 60)
        assert status == 200, body
        (result,) = json.loads(body)["results"]
        assert result["target"] == FIXED and [e["target"] for e in result["edits"]] == ["们"]
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    assert code in (0, -signal.SIGTERM), log.read_text()
    assert "on CPUExecutionProvider: this ONNX Runtime is the CPU build (the gpu extra" in log.read_text()
