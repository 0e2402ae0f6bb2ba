"""The whole training pipeline on a tiny corpus with the debug config, plus exact resume and DDP."""

from __future__ import annotations

import gzip
import json
import os
import platform
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import ROOT
from conftest import run_python as run

CORPUS = [
    "今天天气很好，我们一起去公园散步。他已经知道自己错了，这件事情没有那么简单。",
    "中国人民银行发布了新的货币政策。北京和上海的经济发展很快。",
    "未来的日子里，我们要更加努力工作。候车室里有很多人在等车。",
    "这个产品的做工非常精致，价格也很实惠，推荐大家购买。",
    "医生说他的病情已经好转了，过几天就可以出院。",
] * 8


@pytest.fixture(scope="module")
def prepared(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("pipeline")
    with gzip.open(d / "tiny.txt.gz", "wt", encoding="utf-8") as f:
        f.write("\n".join(CORPUS) + "\n")
    run("-m", "training.data.prepare", "--corpus", str(d / "tiny.txt.gz"), "--out", str(d / "data"))
    return d


def test_prepare_writes_bert_layout_vocab_and_shards(prepared):
    vocab = (prepared / "data" / "vocab.txt").read_text(encoding="utf-8").split("\n")[:-1]
    assert len(vocab) == 21128
    assert (vocab[0], vocab[100], vocab[101], vocab[102], vocab[103]) == ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
    assert vocab[1] == "[unused1]" and vocab[99] == "[unused99]"
    assert "精" in vocab and "致" in vocab
    assert (prepared / "data" / "train.bin").stat().st_size > 0


def test_prepare_reuses_a_given_vocab(prepared, tmp_path):
    """--vocab: the shards use that layout (e.g. the committed bundle's), whatever the corpus would build."""
    vocab = (prepared / "data" / "vocab.txt").read_text(encoding="utf-8").split("\n")[:-1]
    swapped = list(vocab)
    i, j = swapped.index("精"), swapped.index("致")
    swapped[i], swapped[j] = swapped[j], swapped[i]
    (tmp_path / "vocab.txt").write_text("\n".join(swapped) + "\n", encoding="utf-8")
    run("-m", "training.data.prepare", "--corpus", str(prepared / "tiny.txt.gz"), "--out", str(tmp_path / "data"),
        "--vocab", str(tmp_path / "vocab.txt"))
    assert (tmp_path / "data" / "vocab.txt").read_text(encoding="utf-8").split("\n")[:-1] == swapped
    import numpy as np

    ids = np.fromfile(tmp_path / "data" / "train.bin", dtype=np.uint16).tolist() + \
        np.fromfile(tmp_path / "data" / "val.bin", dtype=np.uint16).tolist()
    assert i in ids and j in ids  # 精 and 致 are both in the corpus, now under each other's id
    (tmp_path / "short.txt").write_text("[PAD]\n", encoding="utf-8")
    bad = subprocess.run([sys.executable, "-m", "training.data.prepare", "--corpus", str(prepared / "tiny.txt.gz"),
                          "--out", str(tmp_path / "bad"), "--vocab", str(tmp_path / "short.txt")],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert bad.returncode != 0 and "expected 21128" in bad.stderr


def documented_training_commands() -> list[list[str]]:
    """The commands of docs/training.md's "The pipeline, step by step" block, continuation lines joined."""
    text = (ROOT / "docs" / "training.md").read_text(encoding="utf-8")
    block = text.split("## The pipeline, step by step", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    commands = []
    for line in block.replace("\\\n", " ").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            commands.append(shlex.split(line))
    return commands


# Only sizes change for the tiny run; paths, flags and their order are docs/training.md's.
TINY = {
    "pretrain": {"--config": ["--config", "debug"],
                 "--max-minutes": ["--max-steps", "4", "--batch-size", "4", "--seq-len", "32", "--eval-every", "2"]},
    "finetune": dict.fromkeys(("--max-minutes", "--max-steps"),
                              ["--max-steps", "4", "--batch-size", "4", "--eval-every", "2"]),
    "make_csc_data": {"--n": ["--n", "60"], "--holdout": ["--holdout", "5"]},
    "char_lm": {"--prune": ["--prune", "0,0,0,0", "--vocab-size", "300"]},
    "candidates": {"--holdout": ["--holdout", "5"]},
    "fit": {"--holdout": ["--holdout", "5"]},
}


def shrink(cmd: list[str]) -> list[str]:
    module = cmd[2].rpartition(".")[2] if cmd[1:2] == ["-m"] else ""
    rules, out, i = TINY.get(module, {}), [], 0
    while i < len(cmd):
        if cmd[i] in rules:
            out += rules[cmd[i]]
            i += 2
        else:
            out.append(cmd[i])
            i += 1
    return out


@pytest.mark.slow
def test_documented_training_commands_run_as_written(tmp_path):
    """docs/training.md's pipeline block, in order, from a checkout with ../shared/data beside it (a tiny one)."""
    repo, data = tmp_path / "checkout", tmp_path / "shared" / "data"
    repo.mkdir()
    (data / "corpus").mkdir(parents=True)
    (data / "csc").mkdir()
    with gzip.open(data / "corpus" / "tiny.txt.gz", "wt", encoding="utf-8") as f:
        f.write("\n".join(CORPUS) + "\n")
    pairs = "".join(f"{s.replace(a, b, 1)}\t{s}\n" for s in CORPUS[:5] for a, b in (("天", "添"), ("的", "地")))
    for name in ("sighan_train.tsv", "csc_hard_train.tsv", "sighan15_test.tsv"):
        (data / "csc" / name).write_text(pairs * 2, encoding="utf-8")
    commands = documented_training_commands()
    modules = [c[2] for c in commands]
    assert modules == ["training.data.prepare", "training.evidence.similarity", "training.networks.pretrain", "training.data.make_csc_data",
                       "training.networks.finetune", "training.networks.finetune", "training.bundle.export", "training.evidence.char_lm",
                       "training.evidence.candidates", "training.bundle.export", "training.fitting.fit", "training.bundle.export",
                       "training.fitting.evaluate"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for cmd in commands:
        assert cmd[0] == "python"
        res = subprocess.run([sys.executable, *shrink(cmd)[1:]], cwd=repo, capture_output=True, text=True, env=env,
                             timeout=600)
        assert res.returncode == 0, f"{' '.join(cmd)}\n{res.stderr[-3000:]}"
    runs = repo / "runs"
    assert (runs / "pretrain" / "pretrain.png").exists()
    assert (runs / "pretrain" / "metrics.jsonl").read_text().count("\n") >= 2
    train_pairs = [line.split("\t") for line in (runs / "csc" / "train.tsv").read_text(encoding="utf-8").splitlines()]
    assert train_pairs and all(len(s) == len(t) for s, t in train_pairs)
    assert len((runs / "csc" / "dev.tsv").read_text(encoding="utf-8").splitlines()) == 5
    ranker = json.loads((runs / "bundle" / "ranker.json").read_text(encoding="utf-8"))
    assert ranker["meta"]["fitted"] and 0.0 <= ranker["threshold"] <= 1.0
    report = json.loads((runs / "sighan15.json").read_text(encoding="utf-8"))
    assert 0.0 <= report["sentence_correction"]["f1"] <= 1.0

    from corrector import Corrector

    fixer = Corrector.load(runs / "bundle", device="cpu")
    text = "今天天汽很好，hello！"
    out = fixer.correct(text)
    assert len(out.target) == len(text) and out.target.endswith("，hello！")
    assert fixer.name == "bundle"
    assert fixer.bundle.manifest.provenance["pretraining"]["tokens_seen"] > 0
    assert [st["steps"] for st in fixer.bundle.manifest.provenance["finetune_stages"]] == [4]  # step 5 under 5b
    assert fixer.ranker.threshold == ranker["threshold"] and fixer.has_lm  # the evidence the documented block made
    assert fixer.bundle.manifest.lm["order"] == 4 and fixer.bundle.manifest.ranker["fitted"]
    assert fixer.networks.precision == report["onnx"] == "int8"


def _weights(run_dir: Path) -> dict[str, torch.Tensor]:
    ckpt = torch.load(run_dir / "ckpt.pt", map_location="cpu", weights_only=False)
    return ckpt["model"]


@pytest.mark.slow
def test_interrupted_pretraining_resumes_to_the_same_state(prepared, tmp_path):
    args = ["-m", "training.networks.pretrain", "--data", str(prepared / "data"), "--config", "debug", "--max-steps", "6",
            "--batch-size", "4", "--seq-len", "32", "--eval-every", "3", "--ckpt-every", "100", "--threads", "1"]
    run(*args, "--out", str(tmp_path / "straight"))
    run(*args, "--out", str(tmp_path / "resumed"), "--stop-after", "4")
    run(*args, "--out", str(tmp_path / "resumed"))
    a, b = _weights(tmp_path / "straight"), _weights(tmp_path / "resumed")
    assert a.keys() == b.keys()
    for k in a:
        assert torch.equal(a[k], b[k]), k


def _pretrain(data: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "training.networks.pretrain", "--data", str(data), "--out", str(out), "--config", "debug",
         "--batch-size", "4", "--seq-len", "32", "--threads", "1", *extra],
        cwd=ROOT, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_resumed_pretraining_refuses_recipe_flags_and_logs_schedule_flags(prepared, tmp_path):
    first = _pretrain(prepared / "data", tmp_path, "--max-steps", "4", "--stop-after", "2")
    assert first.returncode == 0, first.stderr[-3000:]
    changed = _pretrain(prepared / "data", tmp_path, "--max-steps", "4", "--rtd-weight", "10")
    assert changed.returncode != 0
    assert "--rtd-weight 10.0 (checkpoint: 50.0)" in changed.stderr and "Traceback" not in changed.stderr
    assert torch.load(tmp_path / "ckpt.pt", weights_only=False)["step"] == 2  # nothing ran
    longer = _pretrain(prepared / "data", tmp_path, "--max-steps", "5")
    assert longer.returncode == 0, longer.stderr[-3000:]
    assert "--max-steps 5 replaces the checkpoint's 4" in longer.stdout
    ckpt = torch.load(tmp_path / "ckpt.pt", weights_only=False)
    assert ckpt["step"] == 5 and ckpt["train_config"]["max_steps"] == 5 and ckpt["train_config"]["rtd_weight"] == 50
    # the ledger: one row per invocation that trained (none for the refused one)
    ledger = json.loads((tmp_path / "ledger.json").read_text(encoding="utf-8"))
    assert [(r["step_from"], r["step_to"]) for r in ledger] == [(0, 2), (2, 5)]
    assert ledger[0]["tokens_to"] == ledger[1]["tokens_from"] > 0 and ledger[1]["tokens_added"] > 0
    assert all(r["hardware"].startswith(platform.machine()) for r in ledger)
    # ... and the pair's provenance sums it up: tokens and hours over the invocations, per hardware
    summary = json.loads((tmp_path / "provenance.json").read_text(encoding="utf-8"))["pretraining"]["ledger"]
    assert summary["invocations"] == 2 and summary["tokens"] == ledger[1]["tokens_to"]
    assert summary["hours"] == round(ledger[0]["hours"] + ledger[1]["hours"], 3)
    assert [h["tokens"] for h in summary["by_hardware"]] == [summary["tokens"]]  # one machine, one precision


@pytest.mark.slow
def test_fork_starts_an_ab_arm_that_may_change_the_recipe_once(prepared, tmp_path):
    import numpy as np

    data, main, arm = prepared / "data", tmp_path / "main", tmp_path / "arm"
    first = _pretrain(data, main, "--max-steps", "4", "--snapshot-tokens", "256")  # 128 tokens a step
    assert first.returncode == 0, first.stderr[-3000:]
    (snap,) = (main / "snapshots").iterdir()
    snap_step = torch.load(snap / "ckpt.pt", weights_only=False)["step"]
    vocab = json.loads((data / "meta.json").read_text(encoding="utf-8"))["vocab_size"]
    table = np.random.default_rng(0).integers(5, vocab, size=(vocab, 4))
    np.save(tmp_path / "confusions.npy", table)
    arm_args = ("--fork-from", str(snap), "--confusion-rate", "0.3", "--confusions", str(tmp_path / "confusions.npy"))
    # a plain resume may not change the recipe ...
    refused = _pretrain(data, main, "--max-steps", "6", *arm_args[2:])
    assert refused.returncode != 0 and "--confusion-rate 0.3 (checkpoint: 0.0)" in refused.stderr
    # ... an arm forked from a snapshot may, and starts where the snapshot stood
    forked = _pretrain(data, arm, "--max-steps", "6", *arm_args)
    assert forked.returncode == 0, forked.stderr[-3000:]
    assert "--confusion-rate 0.3 replaces the checkpoint's 0.0" in forked.stdout
    ckpt = torch.load(arm / "ckpt.pt", weights_only=False)
    assert ckpt["step"] == 6 and ckpt["train_config"]["confusion_rate"] == 0.3
    record = json.loads((arm / "fork.json").read_text(encoding="utf-8"))
    assert record["from"] == f"main/{snap.name}" and record["step"] == snap_step
    ledger = json.loads((arm / "ledger.json").read_text(encoding="utf-8"))
    assert ledger[0]["step_from"] == snap_step and ledger[0]["step_to"] == 6
    prov = json.loads((arm / "provenance.json").read_text(encoding="utf-8"))
    assert prov["pretraining"]["forked_from"]["from"] == f"main/{snap.name}"
    # the same command again resumes the arm; a fork into another run's folder is refused
    again = _pretrain(data, arm, "--max-steps", "7", *arm_args)
    assert again.returncode == 0, again.stderr[-3000:]
    assert torch.load(arm / "ckpt.pt", weights_only=False)["step"] == 7
    clash = _pretrain(data, main, "--max-steps", "6", *arm_args)
    assert clash.returncode != 0 and "already holds another run's checkpoint" in clash.stderr
    assert "Traceback" not in clash.stderr + refused.stderr


@pytest.mark.slow
def test_collapsed_discriminator_stops_the_run_with_a_message(prepared, tmp_path):
    """Thresholds no discriminator can pass force the collapse rule: it waits for warmup and two evaluations
    in a row, then stops with a message and a non-zero exit, keeping the checkpoint and saving no pair."""
    res = _pretrain(prepared / "data", tmp_path, "--max-steps", "20", "--warmup-steps", "2", "--eval-every", "1",
                    "--collapse-auc", "1.0", "--collapse-std", "100")
    assert res.returncode != 0
    assert "discriminator collapsed at step 4" in res.stderr and "Traceback" not in res.stderr
    assert torch.load(tmp_path / "ckpt.pt", weights_only=False)["step"] == 4
    assert not (tmp_path / "discriminator").exists()
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    evals = [r for r in rows if "val_rtd_auc" in r]
    assert [e["step"] for e in evals] == [1, 2, 3, 4]
    assert all(e["val_top_std"] >= 0.0 and len(e["val_layer_std"]) == 3 for e in evals)  # embeddings + 2 layers


@pytest.mark.slow
def test_torchrun_two_process_cpu_pretraining(prepared, tmp_path):
    res = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", "-m",
         "training.networks.pretrain", "--data", str(prepared / "data"), "--out", str(tmp_path / "ddp"), "--config", "debug",
         "--max-steps", "3", "--batch-size", "2", "--seq-len", "32", "--threads", "1"],
        cwd=ROOT, capture_output=True, text=True, timeout=180, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert res.returncode == 0, res.stderr[-3000:]
    assert '"finished": true' in res.stdout
    assert (tmp_path / "ddp" / "discriminator" / "model.safetensors").exists()


@pytest.mark.parametrize("module", ["data.prepare", "networks.pretrain", "data.make_csc_data", "networks.finetune",
                                    "evidence.similarity", "bundle.export", "fitting.evaluate"])
def test_every_command_has_help(module):
    res = run("-m", f"training.{module}", "--help")
    assert "usage" in res.stdout.lower()


def finetune_tiny(prepared: Path, tmp_path: Path, *flags: str) -> Path:
    """``training.networks.finetune --from-scratch debug`` on a few hand-made pairs (also the dev set) into tmp_path/ft,
    batches of 4, keeping the last step; ``flags`` add to or override these."""
    pairs = "".join(f"{s.replace('天', '添', 1)}\t{s}\n" for s in CORPUS[:5])
    (tmp_path / "pairs.tsv").write_text(pairs * 4, encoding="utf-8")
    out = tmp_path / "ft"
    run("-m", "training.networks.finetune", "--from-scratch", "debug", "--vocab", str(prepared / "data" / "vocab.txt"),
        "--train", str(tmp_path / "pairs.tsv"), "--dev", str(tmp_path / "pairs.tsv"), "--out", str(out),
        "--batch-size", "4", "--lr", "1e-2", "--keep", "last", *flags)
    return out


@pytest.mark.slow
def test_finetune_keep_last_writes_the_last_step_and_best_stays_in_best(prepared, tmp_path):
    """--keep last: out/discriminator and out/generator are the final weights (as in ckpt.pt), out/best the
    best step on the dev proxy; the provenance says which was kept. --snapshot-every keeps the pair at those
    steps, each with its own provenance."""
    from safetensors.torch import load_file

    from training.networks import loop

    out = finetune_tiny(prepared, tmp_path, "--max-steps", "5", "--eval-every", "2", "--snapshot-every", "2")
    final = loop.load_checkpoint(out / "ckpt.pt")
    assert final["step"] == 5
    disc = load_file(out / "discriminator" / "model.safetensors")
    want = {k.removeprefix("disc."): v for k, v in final["model"].items() if k.startswith("disc.")}
    assert disc and all(torch.equal(disc[k], want[k]) for k in disc)
    evals = [json.loads(line) for line in (out / "metrics.jsonl").read_text(encoding="utf-8").splitlines()]
    scores = [(e["dev_cor_f1"], -e["step"]) for e in evals if "dev_cor_f1" in e]
    assert [-s for _, s in scores] == [2, 4, 5]
    best_step = -max(scores)[1]  # the first step with the best proxy
    best = load_file(out / "best" / "discriminator" / "model.safetensors")
    assert all(torch.equal(best[k], disc[k]) for k in disc) == (best_step == 5)
    prov = json.loads((out / "provenance.json").read_text(encoding="utf-8"))
    assert prov["finetune"]["kept"] == "the last step" and prov["finetune"]["steps"] == 5
    assert sorted(p.name for p in (out / "snapshots").iterdir()) == ["step000002", "step000004"]
    snap = json.loads((out / "snapshots" / "step000004" / "provenance.json").read_text(encoding="utf-8"))
    assert snap["finetune"]["steps"] == 4 and (out / "snapshots" / "step000004" / "generator" / "vocab.txt").is_file()
    # tokens trained on, and the ledger of the invocation (one here) summed up in the provenance
    (row,) = json.loads((out / "ledger.json").read_text(encoding="utf-8"))
    assert (row["step_from"], row["step_to"]) == (0, 5) and row["tokens_added"] == prov["finetune"]["tokens_seen"]
    assert 0 < snap["finetune"]["tokens_seen"] < prov["finetune"]["tokens_seen"] <= 5 * 4 * max(map(len, CORPUS[:5])) + 40
    assert prov["finetune"]["ledger"]["tokens"] == row["tokens_added"] and prov["finetune"]["ledger"]["invocations"] == 1
    assert not all(torch.equal(load_file(out / "snapshots" / "step000002" / "discriminator" / "model.safetensors")[k],
                               disc[k]) for k in disc)


@pytest.mark.slow
def test_finetuned_corrector_on_the_discriminators_body_exports_one_joint_graph(prepared, tmp_path):
    """--generator-body discriminator from the command line: the saved generator is as wide as the discriminator
    with the same body weights, the export writes one joint graph (and its int8 copy), and the Corrector runs it."""
    from safetensors.torch import load_file

    from corrector import Corrector

    out = finetune_tiny(prepared, tmp_path, "--max-steps", "3", "--eval-every", "3", "--generator-body", "discriminator",
                        "--mask-prob", "0")
    gen, disc = load_file(out / "generator" / "model.safetensors"), load_file(out / "discriminator" / "model.safetensors")
    body = [k for k in disc if k.startswith("electra.")]
    assert body and all(torch.equal(gen[k], disc[k]) for k in body)
    prov = json.loads((out / "provenance.json").read_text(encoding="utf-8"))
    assert prov["generator_body"].startswith("the discriminator's")
    run("-m", "training.bundle.export", "--run", str(out), "--out", str(tmp_path / "bundle"), "--cpu-onnx", "int8")
    assert sorted(p.name for p in (tmp_path / "bundle" / "onnx").iterdir()) == ["joint.int8.onnx", "joint.onnx"]
    fixer = Corrector.load(tmp_path / "bundle", device="cpu")
    assert fixer.networks.joint and fixer.networks.precision == "int8"
    text = "今天添气很好，hello！"
    assert len(fixer.correct(text).target) == len(text)
    bad = subprocess.run([sys.executable, "-m", "training.networks.finetune", "--from-scratch", "debug", "--vocab",
                          str(prepared / "data" / "vocab.txt"), "--train", str(tmp_path / "pairs.tsv"), "--dev",
                          str(tmp_path / "pairs.tsv"), "--out", str(tmp_path / "bad"), "--generator-body", "wide"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert bad.returncode != 0 and "--generator-body" in bad.stderr and "Traceback" not in bad.stderr


def test_evaluate_sweeps_the_thresholds_asked_for(forced_bundle, tmp_path):
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("今天天汽很好\t今天天气很好\n我们去公园\t我们去公园\n", encoding="utf-8")
    report, chosen = tmp_path / "sweep.json", tmp_path / "chosen.json"
    run("-m", "training.fitting.evaluate", "--data", str(pairs), "--model", str(forced_bundle), "--device", "cpu",
        "--sweep", "--thresholds", "0.0,0.7", "--choose", str(chosen), "--report", str(report))
    rows = json.loads(report.read_text(encoding="utf-8"))["sweep"]
    assert [r["threshold"] for r in rows] == [0.0, 0.7]
    assert rows[0]["false_positive_rate"] == 1.0  # at 0 the tiny model edits every sentence
    assert json.loads(chosen.read_text(encoding="utf-8"))["threshold"] in (0.0, 0.7)
    for r in rows:  # the sweep decides on features gathered once: as decoding at that threshold
        one = tmp_path / f"at{r['threshold']}.json"
        run("-m", "training.fitting.evaluate", "--data", str(pairs), "--model", str(forced_bundle), "--device", "cpu",
            "--set", f"threshold={r['threshold']}", "--report", str(one))
        at = json.loads(one.read_text(encoding="utf-8"))
        for key in ("sentence_correction", "char_correction", "false_positive_rate"):
            assert r[key] == at[key]
    res = subprocess.run([sys.executable, "-m", "training.fitting.evaluate", "--data", str(pairs), "--thresholds", "0.3"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and "--thresholds needs --sweep" in res.stderr


@pytest.mark.slow
def test_pretraining_a_deeper_shape_from_a_stacked_pair(prepared, tmp_path):
    first = _pretrain(prepared / "data", tmp_path / "shallow", "--max-steps", "2")
    assert first.returncode == 0, first.stderr
    deep = [sys.executable, "-m", "training.networks.pretrain", "--data", str(prepared / "data"), "--config",
            "debug-deep", "--batch-size", "4", "--seq-len", "32", "--threads", "1", "--max-steps", "2",
            "--init-from", str(tmp_path / "shallow")]
    refused = subprocess.run([*deep, "--out", str(tmp_path / "refused")], cwd=ROOT, capture_output=True, text=True,
                             timeout=300)
    assert refused.returncode != 0 and "not a pair of this --config's shape" in refused.stderr
    ran = subprocess.run([*deep, "--out", str(tmp_path / "deep"), "--init-stack"], cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr
    prov = json.loads((tmp_path / "deep" / "provenance.json").read_text(encoding="utf-8"))["pretraining"]
    assert prov["init_from"]["stacked"]["discriminator"] == "2 -> 4 layers (layer i from layer i mod 2)"
    assert prov["init_from"]["tokens_seen"] > 0 and prov["tokens_seen"] > prov["init_from"]["tokens_seen"]
    cfg = json.loads((tmp_path / "deep" / "discriminator" / "config.json").read_text(encoding="utf-8"))
    assert cfg["num_hidden_layers"] == 4
    alone = subprocess.run([*deep[:-2], "--out", str(tmp_path / "alone"), "--init-stack"], cwd=ROOT,
                           capture_output=True, text=True, timeout=300)
    assert alone.returncode != 0 and "--init-stack stacks the pair of --init-from" in alone.stderr
