"""The whole training pipeline on a tiny corpus with the debug config, plus exact resume and DDP."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
CORPUS = [
    "今天天气很好，我们一起去公园散步。他已经知道自己错了，这件事情没有那么简单。",
    "中国人民银行发布了新的货币政策。北京和上海的经济发展很快。",
    "未来的日子里，我们要更加努力工作。候车室里有很多人在等车。",
    "这个产品的做工非常精致，价格也很实惠，推荐大家购买。",
    "医生说他的病情已经好转了，过几天就可以出院。",
] * 8


def run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    res = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True,
                         env={**os.environ, **(env or {})}, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    return res


@pytest.fixture(scope="module")
def prepared(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("pipeline")
    with gzip.open(d / "tiny.txt.gz", "wt", encoding="utf-8") as f:
        f.write("\n".join(CORPUS) + "\n")
    run("-m", "training.prepare", "--corpus", str(d / "tiny.txt.gz"), "--out", str(d / "data"))
    return d


def test_prepare_writes_bert_layout_vocab_and_shards(prepared):
    vocab = (prepared / "data" / "vocab.txt").read_text(encoding="utf-8").split("\n")[:-1]
    assert len(vocab) == 21128
    assert (vocab[0], vocab[100], vocab[101], vocab[102], vocab[103]) == ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
    assert vocab[1] == "[unused1]" and vocab[99] == "[unused99]"
    assert "精" in vocab and "致" in vocab
    assert (prepared / "data" / "train.bin").stat().st_size > 0


def test_pipeline_end_to_end(prepared, tmp_path):
    d = prepared
    run("-m", "training.pretrain", "--data", str(d / "data"), "--out", str(tmp_path / "pt"), "--config", "debug",
        "--max-steps", "4", "--batch-size", "4", "--seq-len", "32", "--log-every", "2", "--eval-every", "2")
    assert (tmp_path / "pt" / "pretrain.png").exists()
    assert (tmp_path / "pt" / "metrics.jsonl").read_text().count("\n") >= 2
    run("-m", "training.similarity", "--vocab", str(d / "data" / "vocab.txt"), "--char-freq",
        str(d / "data" / "char_freq.tsv"), "--out", str(tmp_path / "sim"))
    run("-m", "training.make_csc_data", "--sentences", str(d / "data" / "sentences.txt"), "--similarity",
        str(tmp_path / "sim"), "--vocab", str(d / "data" / "vocab.txt"), "--out", str(tmp_path / "csc.tsv"),
        "--n", "60", "--seed", "1")
    pairs = [line.split("\t") for line in (tmp_path / "csc.tsv").read_text(encoding="utf-8").splitlines()]
    assert pairs and all(len(s) == len(t) for s, t in pairs)
    run("-m", "training.finetune", "--init", str(tmp_path / "pt"), "--train", str(tmp_path / "csc.tsv"),
        "--dev", str(tmp_path / "csc.tsv"), "--out", str(tmp_path / "ft"), "--max-steps", "4",
        "--batch-size", "4", "--eval-every", "2", "--log-every", "2")
    run("-m", "training.export", "--run", str(tmp_path / "ft"), "--similarity", str(tmp_path / "sim"),
        "--out", str(tmp_path / "bundle"), "--name", "pipeline-test")
    from corrector import Corrector

    fixer = Corrector.load(tmp_path / "bundle", device="cpu")
    text = "今天天汽很好，hello！"
    out = fixer.correct(text)
    assert len(out.target) == len(text) and out.target.endswith("，hello！")
    assert fixer.name == "pipeline-test"
    assert fixer.bundle.manifest["provenance"]["pretraining"]["tokens_seen"] > 0
    res = run("-m", "training.evaluate", "--data", str(tmp_path / "csc.tsv"), "--model", str(tmp_path / "bundle"))
    assert "sent cor P/R/F1" in res.stdout


def _weights(run_dir: Path) -> dict[str, torch.Tensor]:
    ckpt = torch.load(run_dir / "ckpt.pt", map_location="cpu", weights_only=False)
    return ckpt["model"]


def test_interrupted_pretraining_resumes_to_the_same_state(prepared, tmp_path):
    args = ["-m", "training.pretrain", "--data", str(prepared / "data"), "--config", "debug", "--max-steps", "6",
            "--batch-size", "4", "--seq-len", "32", "--eval-every", "3", "--ckpt-every", "100", "--threads", "1"]
    run(*args, "--out", str(tmp_path / "straight"))
    run(*args, "--out", str(tmp_path / "resumed"), "--stop-after", "4")
    run(*args, "--out", str(tmp_path / "resumed"))
    a, b = _weights(tmp_path / "straight"), _weights(tmp_path / "resumed")
    assert a.keys() == b.keys()
    for k in a:
        assert torch.equal(a[k], b[k]), k


def test_torchrun_two_process_cpu_pretraining(prepared, tmp_path):
    res = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", "-m",
         "training.pretrain", "--data", str(prepared / "data"), "--out", str(tmp_path / "ddp"), "--config", "debug",
         "--max-steps", "3", "--batch-size", "2", "--seq-len", "32", "--threads", "1"],
        cwd=ROOT, capture_output=True, text=True, timeout=600, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert res.returncode == 0, res.stderr[-3000:]
    assert '"finished": true' in res.stdout
    assert (tmp_path / "ddp" / "discriminator" / "model.safetensors").exists()


@pytest.mark.parametrize("module", ["prepare", "pretrain", "make_csc_data", "finetune", "similarity", "export",
                                    "evaluate"])
def test_every_command_has_help(module):
    res = run("-m", f"training.{module}", "--help")
    assert "usage" in res.stdout.lower()
