"""Fixtures: a tiny randomly initialised bundle built in seconds through torch and an ONNX export (never a default
model), and the same bundle's tables over hand-set fake networks (tests/fake_networks.py), which need neither.

Tests that use the exported bundle are marked ``needs_torch`` (automatically, through the ``tiny_bundle`` fixture)
and are skipped where torch is not installed. The decoder's test files (tests/test_without_torch.py lists them and
checks this) pass with ``-m "not needs_torch"`` where only the library's own dependencies and the test tools are.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from corrector_cases import PREFER, RTD
from fake_networks import (
    CHAR_FREQ,
    MAX_SEQ_LEN,
    SAMPLE,
    FakeNetworks,
    fake_bundle,
    fake_corrector,
    tiny_vocab,
)
from hypothesis import HealthCheck, settings

if TYPE_CHECKING:
    from collections.abc import Iterator

    from fastapi.testclient import TestClient

    from corrector import Corrector
    from corrector.bundle import Bundle

# no test depends on the machine's speed: hypothesis neither times examples nor calls slow generation a failure
settings.register_profile("any_speed", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("any_speed")

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
NEEDS_TORCH = "needs_torch"
TORCH_FIXTURES = {"tiny_bundle"}  # every fixture built through torch depends on it


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{NEEDS_TORCH}: builds a bundle through torch and an ONNX export "
                                       "(set on every test that uses the tiny_bundle fixture)")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if TORCH_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(NEEDS_TORCH)


def run_python(*args: str, env: dict | None = None, timeout: int = 600) -> subprocess.CompletedProcess:
    """``python ARGS`` from the repository root (``-m training.x ...``), asserted to succeed."""
    res = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True,
                         env={**os.environ, **(env or {})}, timeout=timeout)
    assert res.returncode == 0, res.stderr[-3000:]
    return res


def build_tiny_bundle(out: Path, seed: int = 0, joint: bool = False) -> Path:
    """``joint``: the generator is a head on the discriminator's body (one ONNX graph for both). Skips the test
    where torch is not installed."""
    torch = pytest.importorskip("torch")

    from training.bundle.export import write_bundle
    from training.networks.finetune import generator_on_discriminator
    from training.networks.modeling import build_models, get_config

    torch.manual_seed(seed)
    vocab_file = out.parent / f"{out.name}-vocab.txt"
    vocab_file.write_text("\n".join(tiny_vocab()) + "\n", encoding="utf-8")
    gen, disc = build_models(get_config("debug"))
    if joint:
        gen = generator_on_discriminator(gen, disc)
    freq = {c: CHAR_FREQ for c in SAMPLE}
    write_bundle(disc, gen, vocab_file, out, name="tiny", char_freq=freq, max_seq_len=MAX_SEQ_LEN,
                 provenance={"note": "random weights, for tests"})
    return out


@pytest.fixture(scope="session")
def tiny_bundle(tmp_path_factory) -> Path:
    return build_tiny_bundle(tmp_path_factory.mktemp("bundle") / "tiny")


@pytest.fixture(scope="session")
def tiny_corrector(tiny_bundle):
    from corrector import Corrector

    return Corrector.load(tiny_bundle, device="cpu")


def system_dependency(present: bool, message: str) -> None:
    """Skip when a system package is missing, except under CI (CI=true), where .ci/system-deps installs
    every one of them: there a missing one fails the test instead of hiding it."""
    if present:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"{message}; .ci/system-deps should have installed it", pytrace=False)
    pytest.skip(message)


@pytest.fixture
def shared_data() -> Path:
    if not (SHARED / "csc").is_dir():
        pytest.skip("../shared/data is not beside this checkout")
    return SHARED


FORCE_EDITS = {"threshold": 0.0}  # every editable character with a candidate gets an edit


@pytest.fixture(scope="session")
def forced_corrector(tiny_bundle):
    """The tiny model with every editable character a suspect and the best candidate always taken."""
    from corrector import Corrector

    return Corrector.load(tiny_bundle, device="cpu", **FORCE_EDITS)


LM_SENTENCES = ["今天天气很好", "我们去公园散步吧", "他已经知道自己错了", "这件事情没有那么简单", "中国人民银行在北京",
                "张三和李四在上海", "未来的事情很难说", "候车的人很多", "拨打电话", "今天我们去北京", "天气好我们散步"]


def build_tiny_lm(out: Path, order: int = 3) -> Path:
    """A Kneser-Ney character LM counted from a few hundred lines of the sentences above (under a second)."""
    import gzip
    import random

    from training.evidence import char_lm

    rng = random.Random(0)
    lines = ["，".join(rng.sample(LM_SENTENCES, rng.randint(1, 3))) for _ in range(300)]
    corpus = out.parent / f"{out.name}-corpus"
    corpus.mkdir(parents=True, exist_ok=True)
    with gzip.open(corpus / "a.txt.gz", "wt", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    char_lm.build(corpus, [char_lm.Variant(out, order, "kn", [0] * order, 0)], vocab_size=200, holdout_every=0)
    return out


@pytest.fixture(scope="session")
def tiny_lm(tmp_path_factory) -> Path:
    return build_tiny_lm(tmp_path_factory.mktemp("lm") / "lm")


@pytest.fixture(scope="session")
def forced_bundle(tiny_bundle, tmp_path_factory) -> Path:
    """The tiny bundle with manifest defaults that force edits, so CLI and batch output visibly differ from input."""
    out = Path(shutil.copytree(tiny_bundle, tmp_path_factory.mktemp("forced") / "forced"))
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    manifest["corrector_defaults"] = FORCE_EDITS
    (out / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return out


@pytest.fixture(scope="session")
def forced(forced_bundle) -> Corrector:
    """A Corrector on :func:`forced_bundle` (some test files define their own ``forced``)."""
    from corrector import Corrector

    return Corrector.load(forced_bundle, device="cpu")


@pytest.fixture
def model(forced_bundle) -> list[str]:
    """CLI arguments that select :func:`forced_bundle` on the CPU."""
    return ["--model", str(forced_bundle), "--device", "cpu"]


# ---- the same tables over hand-set networks: no torch, no ONNX -------------------------------------------------


@pytest.fixture(scope="session")
def fake_tiny_bundle(tmp_path_factory) -> Bundle:
    """The tiny bundle's vocabulary and similarity tables (what a Corrector reads besides the networks)."""
    return fake_bundle(tmp_path_factory.mktemp("fake") / "tiny")


@pytest.fixture(scope="session")
def fake_forced(fake_tiny_bundle) -> Corrector:
    """Networks that prefer nothing, with every editable character a suspect and the best candidate always taken:
    every editable character gets an edit (the fake counterpart of :func:`forced_corrector`)."""
    return fake_corrector(fake_tiny_bundle, **FORCE_EDITS)


@pytest.fixture(scope="module")
def typos(fake_tiny_bundle) -> Corrector:
    """Networks sure of a few replacements (tests/corrector_cases.py: RTD, PREFER, TYPOS), the hand-set ranker's
    threshold."""
    return fake_corrector(fake_tiny_bundle, FakeNetworks(RTD, PREFER))


# ---- the HTTP service in process (tests/test_service_*.py; tests/service_calls.py) ------------------------------


@pytest.fixture(scope="module")
def client(tiny_bundle) -> Iterator[TestClient]:
    """The service's real lifespan: the model is loaded from settings.model_dir and its speed measured (a long
    timeout, so that admission never refuses the large texts of the tests on a slow machine)."""
    from fastapi.testclient import TestClient

    from service.app import create_app
    from service.settings import ServiceSettings

    with TestClient(create_app(ServiceSettings(model_dir=tiny_bundle, request_timeout_s=600))) as c:
        yield c


@pytest.fixture(scope="module")
def forced_client(forced_corrector) -> Iterator[TestClient]:
    """The service on a model that edits every in-vocabulary Chinese character, so edits show up."""
    from fastapi.testclient import TestClient

    from service.app import create_app
    from service.settings import ServiceSettings

    with TestClient(create_app(ServiceSettings(max_wait_ms=1), corrector=forced_corrector)) as c:
        yield c


@pytest.fixture
def fake(monkeypatch):
    """The lint command with ``lint_fake.FakePass`` for its corrector: known answers, no model."""
    from lint_fake import FakePass

    from corrector.lint import command_line

    made = FakePass()
    monkeypatch.setattr(command_line, "_corrector", lambda server, bundle: made)
    return made


@pytest.fixture
def here(tmp_path, monkeypatch, tmp_path_factory) -> Path:
    """An empty folder to run in, with a user cache of its own."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("user-cache")))
    monkeypatch.chdir(tmp_path)
    return tmp_path
