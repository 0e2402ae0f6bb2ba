"""Pretraining tokens/s of one model shape in fp32 and bf16 autocast, eager and torch.compile'd.

    python benchmarks/train_step.py [--config cpu-g4] [--threads 2] [--steps 30]
        [--precision fp32 bf16] [--compile 0 1] [--batch-size 64 ...] [--device cpu|cuda]

Each variant runs in its own process (torch.compile and oneDNN caches stay apart): a fresh model of the shape,
then the training loop's own step (``training.networks.loop.StepRunner.train_step``: generator, sampling, discriminator,
backward, clipping, AdamW) on batches of random ids, 5 warm-up steps (plus compiling) untimed, then ``--steps``
timed. Pause other jobs on the machine first.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import _checkout  # noqa: F401  (training/ and service/ are imported from the checkout)

ROOT = Path(__file__).resolve().parents[1]


def one(config: str, threads: int, precision: str, compiled: bool, steps: int, batch: int, seq_len: int,
        device: str = "cpu") -> None:
    import numpy as np
    import torch

    sys.path.insert(0, str(ROOT))
    from training.networks import loop, runtime
    from training.networks.modeling import get_config
    from training.networks.pretrain import ElectraPretrainer, PretrainConfig, make_masks

    rt = runtime.setup_runtime(device, threads, precision)
    cfg = PretrainConfig(config=config, seq_len=seq_len, batch_size=batch)
    torch.manual_seed(0)
    model = ElectraPretrainer(get_config(config), cfg.rtd_weight).to(rt.device)
    opt = loop.make_optimizer(model, cfg.lr, cfg.weight_decay, rt.device)
    fwd = torch.compile(model) if compiled else model
    rng = np.random.default_rng(0)
    vocab = model.disc.config.vocab_size
    runner = loop.StepRunner(model, opt, lr=cfg.lr, warmup_steps=cfg.warmup_steps, max_steps=10**9,
                             ckpt_path=Path("unused.pt"), ckpt_every=10**9, state=dict)  # train_step never saves

    def micro_step() -> dict[str, torch.Tensor]:
        ids = rng.integers(100, min(8000, vocab), size=(batch, seq_len)).astype(np.int64)
        t = [torch.as_tensor(a, device=rt.device) for a in (ids, *make_masks(ids, rng, cfg))]
        with rt.autocast():
            return fwd(*t)

    sync = torch.cuda.synchronize if rt.device.type == "cuda" else (lambda: None)
    for _ in range(5):
        runner.train_step(micro_step)
    sync()
    t0 = time.perf_counter()
    for _ in range(steps):
        runner.train_step(micro_step)
    sync()
    rate = steps * batch * seq_len / (time.perf_counter() - t0)
    where = rt.device_name if rt.device.type == "cuda" else f"{threads} threads"
    print(f"{config:8s} {precision:5s} {'compiled' if compiled else 'eager':9s} batch {batch:5d}x{seq_len} {where}: "
          f"{rate:,.0f} tokens/s", flush=True)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default="cpu-g4")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--batch-size", type=int, nargs="+", default=[64])
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--seq-len", type=int, default=64)
    ap.add_argument("--precision", nargs="+", default=["fp32", "bf16"], choices=["fp32", "bf16"])
    ap.add_argument("--compile", nargs="+", type=int, default=[0, 1], choices=[0, 1])
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # a single variant, in this process
    a = ap.parse_args(argv)
    if a.one:
        one(a.config, a.threads, a.precision[0], bool(a.compile[0]), a.steps, a.batch_size[0], a.seq_len, a.device)
        return
    for batch in a.batch_size:
        for compiled in a.compile:
            for precision in a.precision:
                subprocess.run([sys.executable, __file__, "--one", "--config", a.config, "--threads", str(a.threads),
                                "--steps", str(a.steps), "--batch-size", str(batch), "--seq-len", str(a.seq_len),
                                "--precision", precision, "--compile", str(compiled), "--device", a.device], check=True)


if __name__ == "__main__":
    main()
