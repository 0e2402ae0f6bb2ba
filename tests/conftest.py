"""Fixtures: a tiny randomly initialised bundle built in seconds (never a default model)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from corrector import Corrector

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
SAMPLE = (
    "今天天气很好我们去公园散步吧他已经知道自己错了这件事情没有那么简单"
    "未来末日候车侯爵拔草拨打电话精致精制中国人民银行北京上海张三李四汽已巳"
)


def run_python(*args: str, env: dict | None = None, timeout: int = 600) -> subprocess.CompletedProcess:
    """``python ARGS`` from the repository root (``-m training.x ...``), asserted to succeed."""
    res = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True,
                         env={**os.environ, **(env or {})}, timeout=timeout)
    assert res.returncode == 0, res.stderr[-3000:]
    return res


def tiny_vocab() -> list[str]:
    from corrector.tokenize import VOCAB_SIZE

    vocab = ["[PAD]"] + [f"[unused{i}]" for i in range(1, 100)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab += [chr(c) for c in range(33, 127) if not chr(c).isupper()]
    vocab += list(dict.fromkeys(c for c in SAMPLE if c not in vocab))
    vocab += ["##s", "hello", "world"]
    i = 100
    while len(vocab) < VOCAB_SIZE:
        vocab.append(f"[unused{i}]")
        i += 1
    return vocab


def build_tiny_bundle(out: Path, seed: int = 0, joint: bool = False) -> Path:
    """``joint``: the generator is a head on the discriminator's body (one ONNX graph for both)."""
    import torch

    from training.export import write_bundle
    from training.finetune import generator_on_discriminator
    from training.modeling import build_models, get_config

    torch.manual_seed(seed)
    vocab_file = out.parent / f"{out.name}-vocab.txt"
    vocab_file.write_text("\n".join(tiny_vocab()) + "\n", encoding="utf-8")
    gen, disc = build_models(get_config("debug"))
    if joint:
        gen = generator_on_discriminator(gen, disc)
    freq = {c: 10 for c in SAMPLE}
    write_bundle(disc, gen, vocab_file, out, name="tiny", char_freq=freq, max_seq_len=64,
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

    from training import char_lm

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
