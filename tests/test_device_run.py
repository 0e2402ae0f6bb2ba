"""What a GPU machine without network access gets and gives back: packing within the sizes given, continued
pretraining from a copied pair, and training/ops/device_run.sh's whole sequence run on the CPU with the debug shape."""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import ROOT
from conftest import run_python as run

from training.ops import device_pack

SENTENCES = [
    "今天天气很好，我们一起去公园散步。", "他已经知道自己错了，这件事情没有那么简单。",
    "中国人民银行发布了新的货币政策。", "北京和上海的经济发展很快。", "未来的日子里，我们要更加努力工作。",
    "候车室里有很多人在等车。", "这个产品的做工非常精致，价格也很实惠。", "医生说他的病情已经好转了。",
]


@pytest.fixture(scope="module")
def prepared(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("device")
    with gzip.open(d / "corpus.txt.gz", "wt", encoding="utf-8") as f:
        f.write("\n".join(s * 2 for s in SENTENCES * 6) + "\n")
    run("-m", "training.data.prepare", "--corpus", str(d / "corpus.txt.gz"), "--out", str(d / "data"))
    return d / "data"


@pytest.fixture(scope="module")
def pair(prepared, tmp_path_factory) -> Path:
    """A debug-shape pair, as the CPU campaign's run folder holds one (with its provenance)."""
    out = tmp_path_factory.mktemp("cpu_run")
    run("-m", "training.networks.pretrain", "--data", str(prepared), "--out", str(out), "--config", "debug",
        "--max-steps", "3", "--batch-size", "4", "--seq-len", "32", "--threads", "1", "--eval-every", "100")
    return out


def test_sentence_starts_are_rebuilt_from_the_separators(prepared):
    tokens = np.fromfile(prepared / "train.bin", dtype=np.uint16)
    assert np.array_equal(device_pack.sentence_starts(tokens), np.load(prepared / "train_starts.npy"))


def test_data_travels_in_parts_that_rebuild_the_shards_exactly(prepared, tmp_path):
    tokens = np.fromfile(prepared / "train.bin", dtype=np.uint16)
    first = device_pack.pack_data(prepared, tmp_path / "data1", max_bytes=1, chunk_sentences=5)  # one chunk only
    assert 0 < first["to"] < len(tokens)
    assert first["to"] in set(np.load(prepared / "train_starts.npy").tolist())  # cut at a sentence start
    rest = device_pack.pack_data(prepared, tmp_path / "data2", max_bytes=1 << 30, start=first["to"])
    assert rest["to"] == len(tokens)
    out = tmp_path / "data"
    with pytest.raises(SystemExit, match="in order"):
        device_pack.unpack_data(tmp_path / "data2", out)
    device_pack.unpack_data(tmp_path / "data1", out)
    assert device_pack.unpack_data(tmp_path / "data1", out)["skipped"]  # a part copied again is not appended twice
    device_pack.unpack_data(tmp_path / "data2", out)
    for name in ("train.bin", "val.bin"):
        assert (out / name).read_bytes() == (prepared / name).read_bytes()
    for name in ("train_starts.npy", "val_starts.npy"):
        assert np.array_equal(np.load(out / name), np.load(prepared / name))
    assert json.loads((out / "meta.json").read_text())["train_tokens"] == len(tokens)


def test_a_pair_travels_as_three_fp16_files_and_comes_back_in_fp32(pair, tmp_path):
    from safetensors.numpy import load_file

    files = device_pack.pack_pair(pair, tmp_path / "packed")
    assert sorted(f.name for f in files) == ["discriminator.safetensors", "generator.safetensors", "pair.tar"]
    assert all(f.stat().st_size <= device_pack.RETURN_FILE_LIMIT for f in files)
    back = device_pack.unpack_pair(tmp_path / "packed", tmp_path / "back")
    assert json.loads((back / "provenance.json").read_text()) == json.loads((pair / "provenance.json").read_text())
    for net in device_pack.NETS:
        a, b = load_file(str(pair / net / "model.safetensors")), load_file(str(back / net / "model.safetensors"))
        assert a.keys() == b.keys()
        for k in a:
            assert b[k].dtype == a[k].dtype
            np.testing.assert_allclose(b[k], a[k], rtol=1e-3, atol=1e-4)
        assert (back / net / "vocab.txt").read_bytes() == (pair / net / "vocab.txt").read_bytes()


@pytest.mark.slow
def test_init_from_continues_a_pair_and_counts_its_tokens(prepared, pair, tmp_path):
    """--init-from starts a new run (own schedule) from a pair's weights: at lr 0 one step leaves them as they
    were, and the tokens seen count on from the pair's."""
    from safetensors.torch import load_file

    before = json.loads((pair / "provenance.json").read_text())["pretraining"]
    out = tmp_path / "continued"
    run("-m", "training.networks.pretrain", "--data", str(prepared), "--out", str(out), "--config", "debug", "--init-from",
        str(pair), "--lr", "0", "--max-steps", "1", "--batch-size", "8", "--seq-len", "32", "--threads", "1",
        "--eval-every", "100")
    after = json.loads((out / "provenance.json").read_text())["pretraining"]
    assert after["init_from"]["tokens_seen"] == before["tokens_seen"]
    assert after["init_from"]["ledger"] == before["ledger"]
    assert before["tokens_seen"] < after["tokens_seen"] <= before["tokens_seen"] + 8 * 32
    assert after["ledger"]["tokens"] == after["tokens_seen"] - before["tokens_seen"]
    again = tmp_path / "again"  # continued once more: the lineage keeps both runs before it, ledgers and all
    run("-m", "training.networks.pretrain", "--data", str(prepared), "--out", str(again), "--config", "debug",
        "--init-from", str(out), "--lr", "0", "--max-steps", "1", "--batch-size", "8", "--seq-len", "32",
        "--threads", "1", "--eval-every", "100")
    lineage = json.loads((again / "provenance.json").read_text())["pretraining"]["init_from"]
    assert lineage["tokens_seen"] == after["tokens_seen"] and lineage["ledger"] == after["ledger"]
    assert lineage["init_from"] == after["init_from"]
    for net in device_pack.NETS:
        a, b = load_file(pair / net / "model.safetensors"), load_file(out / net / "model.safetensors")
        assert all(torch.equal(a[k], b[k]) for k in a), net
    wrong = subprocess.run([sys.executable, "-m", "training.networks.pretrain", "--data", str(prepared), "--out",
                            str(tmp_path / "wrong"), "--config", "cpu-g4", "--init-from", str(pair), "--max-steps", "1"],
                           cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert wrong.returncode != 0 and "not a pair of this --config's shape" in wrong.stderr


def test_the_pretraining_state_is_the_pair_in_fp16_and_a_run_continues_from_it(prepared, pair, tmp_path):
    """data/pretraining (training.networks.pretraining_state): a pretraining run's pair in fp16 with its
    provenance, within the size given; --init-from it continues (the weights back in fp32, within fp16 rounding)
    and counts the tokens on. A fine-tuned pair is refused, and so is a state over the size."""
    from safetensors.numpy import load_file

    from training.networks import pretraining_state

    state = tmp_path / "pretraining"
    prov = pretraining_state.save(pair, state)
    assert prov["state"]["tokens_seen"] == prov["pretraining"]["tokens_seen"] > 0
    for net in device_pack.NETS:
        half, full = load_file(str(state / net / "model.safetensors")), load_file(str(pair / net / "model.safetensors"))
        assert half.keys() == full.keys() and all(v.dtype == np.float16 for v in half.values() if v.dtype.kind == "f")
        for k in full:
            np.testing.assert_allclose(half[k].astype(np.float32), full[k], rtol=1e-3, atol=1e-4)
    out = tmp_path / "continued"
    run("-m", "training.networks.pretrain", "--data", str(prepared), "--out", str(out), "--config", "debug", "--init-from",
        str(state), "--max-steps", "1", "--batch-size", "4", "--seq-len", "32", "--threads", "1", "--eval-every", "100")
    after = json.loads((out / "provenance.json").read_text())["pretraining"]
    assert after["init_from"]["tokens_seen"] == prov["pretraining"]["tokens_seen"] < after["tokens_seen"]
    with pytest.raises(SystemExit, match="over"):
        pretraining_state.save(out, tmp_path / "small", max_bytes=1000)
    assert not (tmp_path / "small").exists() and not (tmp_path / "small.new").exists()
    (tmp_path / "ft").mkdir()
    (tmp_path / "ft" / "provenance.json").write_text(json.dumps({"pretraining": {}, "finetune": {"steps": 1}}))
    with pytest.raises(SystemExit, match="not a pretraining run"):
        pretraining_state.save(tmp_path / "ft", tmp_path / "x")


def pair_and_csc_inputs(pair: Path, inputs: Path, tmp_path: Path) -> None:
    """What every run gets besides the shards: the pair to continue from and the CSC pairs (native, dev)."""
    device_pack.pack_pair(pair, inputs / "init")
    pairs = "".join(f"{s.replace('天', '添', 1)}\t{s}\n" for s in SENTENCES) * 3
    (tmp_path / "native.tsv").write_text(pairs, encoding="utf-8")
    (tmp_path / "dev.tsv").write_text(pairs, encoding="utf-8")
    device_pack.pack_files(inputs / "csc", [tmp_path / "native.tsv", tmp_path / "dev.tsv"])


def device_run(minutes: int, env: dict) -> subprocess.CompletedProcess:
    """training/ops/device_run.sh as a GPU machine runs it, on this CPU; it must succeed."""
    res = subprocess.run(["bash", "training/ops/device_run.sh", str(minutes)], cwd=ROOT, capture_output=True, text=True,
                         env={**os.environ, **env}, timeout=600)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-3000:]
    return res


@pytest.mark.slow
def test_device_run_goes_from_copied_packs_to_what_comes_back(prepared, pair, tmp_path):
    """The GPU machine's script, on the CPU: two runs, as two 10-minute runs on a GPU machine would go —
    the first pretrains from the copied pair (data in two parts), the second finishes it and fine-tunes."""
    inputs, out, g = tmp_path / "inputs", tmp_path / "out", tmp_path / "gpu"
    first = device_pack.pack_data(prepared, inputs / "data1", max_bytes=1, chunk_sentences=5)
    device_pack.pack_data(prepared, inputs / "data2", max_bytes=1 << 30, start=first["to"])
    pair_and_csc_inputs(pair, inputs, tmp_path)
    env = {"OUT": str(out), "G": str(g), "INPUTS": str(inputs), "PY": sys.executable, "DEVICE": "cpu",
           "PRECISION": "fp32", "CONFIG": "debug", "BATCH": "4", "SEQ": "32", "WARMUP": "1", "PRE_STEPS": "4",
           "EVAL": "2", "FT_STEPS": "3", "FT_EVAL": "2", "RESERVE": "0", "EXTRA": "--stop-after 2 --threads 1"}
    device_run(5, env)  # the first run: data and pair unpacked, 2 of the 4 pretraining steps (--stop-after), no fine-tuning yet
    assert (g / "data" / "train.bin").read_bytes() == (prepared / "train.bin").read_bytes()
    assert sorted(p.name for p in out.rglob("*") if p.is_file()) == [
        "discriminator.safetensors", "generator.safetensors", "logs.tar.gz", "pair.tar"]
    prov = json.loads((g / "pre" / "provenance.json").read_text())["pretraining"]
    assert prov["step"] == 2 and not prov["finished"] and "init_from" in prov
    device_run(5, env)  # the second: pretraining ends its schedule, then the fine-tuning runs in the time left
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert files == ["ft/discriminator.safetensors", "ft/generator.safetensors", "ft/pair.tar", "logs.tar.gz",
                     "pre/discriminator.safetensors", "pre/generator.safetensors", "pre/pair.tar"]
    assert len(files) <= 8 and all((out / f).stat().st_size <= device_pack.RETURN_FILE_LIMIT for f in files)
    back = device_pack.unpack_pair(out / "ft", tmp_path / "ft_back")
    ft = json.loads((back / "provenance.json").read_text())
    assert ft["finetune"]["steps"] == 3 and ft["pretraining"]["finished"]
    # the corrector on the discriminator's body (FT_EXTRA's default): one body, still one after the fp16 round trip
    assert ft["generator_body"].startswith("the discriminator's")
    cfg = ft["finetune"]["config"]  # masked fine-tuning, macro-correct's schedule (FT_EXTRA's default)
    assert (cfg["mft_rate"], cfg["mft_step_share"], cfg["target_copy_share"]) == (0.2, 0.7, 0.15)
    from safetensors.torch import load_file

    gen, disc = (load_file(back / net / "model.safetensors") for net in ("generator", "discriminator"))
    body = [k for k in disc if k.startswith("electra.")]
    assert body and all(gen[k].equal(disc[k]) for k in body)
    with tarfile.open(out / "logs.tar.gz") as tar:
        names = tar.getnames()
    assert {"pre/metrics.jsonl", "pre/ledger.json", "ft/metrics.jsonl"} <= set(names)


@pytest.mark.slow
def test_one_run_does_both_stages_each_fitted_to_its_minutes(prepared, pair, tmp_path):
    """PRE_MIN: one run pretrains for PRE_MIN minutes with the schedule fitted to them (--fit-minutes), then
    fine-tunes with a schedule fitted to what is left, and both pairs come back. How many steps fit in the minutes
    depends on this machine's speed at the time, so only what does not is checked here; the fitting itself is
    test_the_schedule_is_fitted_to_its_minutes_from_the_measured_step_rate, on a clock the test sets."""
    inputs, out, g = tmp_path / "inputs", tmp_path / "out", tmp_path / "gpu"
    device_pack.pack_data(prepared, inputs / "data1", max_bytes=1 << 30)
    pair_and_csc_inputs(pair, inputs, tmp_path)
    env = {"OUT": str(out), "G": str(g), "INPUTS": str(inputs), "PY": sys.executable, "DEVICE": "cpu",
           "PRECISION": "fp32", "CONFIG": "debug", "BATCH": "4", "SEQ": "32", "WARMUP": "1", "PRE_STEPS": "100000",
           "EVAL": "1000", "FT_STEPS": "100000", "FT_EVAL": "1000", "FT_WARMUP": "1", "FT_BATCH": "4",
           "RESERVE": "0", "FT_STARTUP_MIN": "0.05", "PRE_MIN": "0.15", "EXTRA": "--threads 1"}
    res = device_run(1, env)
    assert "pretrain, the schedule fitted to 0.15 min" in res.stdout
    (ft_min,) = re.findall(r"fine-tune, the schedule fitted to ([0-9.]+) min", res.stdout)
    assert 0.2 <= float(ft_min) <= 1 - 0.05  # what is left of the run's minute, less FT_STARTUP_MIN; at least 0.2
    pre = json.loads((g / "pre" / "provenance.json").read_text())["pretraining"]
    ft = json.loads((g / "ft" / "provenance.json").read_text())
    assert 0 < pre["step"] < 100000 and 0 < ft["finetune"]["steps"] < 100000  # both ended on their minutes
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert files == ["ft/discriminator.safetensors", "ft/generator.safetensors", "ft/pair.tar", "logs.tar.gz",
                     "pre/discriminator.safetensors", "pre/generator.safetensors", "pre/pair.tar"]


class SetClock:
    """Stands in for the ``time`` module in training.networks.loop: ``time()`` is what the test sets, the rest is real."""

    def __init__(self, now: float):
        self.now = now

    def time(self) -> float:
        return self.now

    def __getattr__(self, name: str):
        return getattr(time, name)


def run_fitted(monkeypatch, tmp_path, start: float, fit_minutes: float, slow_steps: int, slow_s: float,
               fast_s: float) -> tuple[object, list[int], SetClock]:
    """A tiny StepRunner with --fit-minutes on a set clock: steps 1..slow_steps take slow_s seconds, later ones
    fast_s. Returns its result, every max_steps it was fitted to, and the clock."""
    from training.networks import loop

    clock = SetClock(start)
    monkeypatch.setattr(loop, "time", clock)
    model = torch.nn.Linear(2, 1)
    fitted: list[int] = []
    runner = loop.StepRunner(model, torch.optim.SGD(model.parameters(), lr=0.01), lr=0.01, warmup_steps=1,
                             max_steps=100_000, ckpt_path=tmp_path / "ckpt.pt", ckpt_every=10**9, state=dict,
                             fit_minutes=fit_minutes, on_schedule=fitted.append)

    def micro_step() -> dict[str, torch.Tensor]:
        clock.now += slow_s if runner.step + 1 <= slow_steps else fast_s
        return {"loss": model(torch.ones(1, 2)).pow(2).mean()}

    return runner.run(micro_step, lambda step, lr, stats: None), fitted, clock


def test_the_schedule_is_fitted_to_its_minutes_from_the_measured_step_rate(monkeypatch, tmp_path, capsys):
    """--fit-minutes 1: the rate over steps 20..120 sets max_steps so that the schedule ends within the minute
    (FIT_MARGIN of what is left); a third of the way in (20 s, and 50 steps past the probe) it is set again from
    the rate since the probe. Steps take 0.125 s up to step 160, then 0.078125 s (the machine got faster)."""
    result, fitted, clock = run_fitted(monkeypatch, tmp_path, 1000.0, 1.0, 160, 0.125, 0.078125)
    # step 120 at 1015 s: 100 steps in 12.5 s = 8 steps/s, 45 s left: 120 + int(8 * 45 * 0.92) = 451
    # step 170 at 1020.625 s: 50 steps in 5.625 s = 8.65 steps/s, 39.375 s left: 170 + int(312.05) = 482
    assert fitted == [451, 482]
    assert [line for line in capsys.readouterr().out.splitlines() if line] == [
        "schedule fitted to 1 min: 8.00 steps/s, max_steps 451", "schedule fitted to 1 min: 8.65 steps/s, max_steps 482"]
    assert (result.step, result.finished) == (482, True)
    assert clock.now == 1000.0 + 160 * 0.125 + (482 - 160) * 0.078125 <= 1000.0 + 60  # ended within its minute


def test_a_schedule_fitted_on_slow_first_steps_is_fitted_again_halfway_through_it(monkeypatch, tmp_path):
    """Steps 1..120 take 0.25 s, then 1/32 s (eight times faster): the first fit (4 steps/s) would end the run
    at step 451 after 38 s of its 2 minutes, before a third of them has gone; so it is fitted again halfway
    to that end, at step 285, from the rate since the probe (32 steps/s), and ends near its 2 minutes."""
    result, fitted, clock = run_fitted(monkeypatch, tmp_path, 0.0, 2.0, 120, 0.25, 0.03125)
    # step 120 at 30 s: 100 steps in 25 s = 4 steps/s, 90 s left: 120 + int(4 * 90 * 0.92) = 451
    # step 285 at 35.15625 s: 165 steps in 5.15625 s = 32 steps/s, 84.84375 s left: 285 + int(2497.8) = 2782
    assert fitted == [451, 2782]
    assert (result.step, result.finished) == (2782, True)
    assert 100 < clock.now <= 120  # most of its two minutes used, none overrun


def test_a_standalone_part_is_a_shard_folder_of_its_own(prepared, tmp_path):
    tokens = np.fromfile(prepared / "train.bin", dtype=np.uint16)
    first = device_pack.pack_data(prepared, tmp_path / "data1", max_bytes=1, chunk_sentences=5)
    device_pack.pack_data(prepared, tmp_path / "fresh", max_bytes=1 << 30, start=first["to"], standalone=True)
    out = tmp_path / "data"
    device_pack.unpack_data(tmp_path / "fresh", out)  # no earlier part needed
    assert (out / "train.bin").read_bytes() == tokens[first["to"]:].tobytes()
    assert np.array_equal(np.load(out / "train_starts.npy"), device_pack.sentence_starts(tokens[first["to"]:]))
    meta = json.loads((out / "meta.json").read_text())
    assert meta["source_tokens"] == [first["to"], len(tokens)]
    assert meta["train_tokens"] == len(tokens) - first["to"]
