"""What pretraining and fine-tuning share: devices, DDP, schedule, checkpoints, metrics and plots."""

from __future__ import annotations

import contextlib
import json
import math
import os
import random
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist


@dataclass
class Runtime:
    device: torch.device
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def ddp(self) -> bool:
        return self.world_size > 1

    def autocast(self) -> contextlib.AbstractContextManager:
        if self.device.type == "cuda":
            return torch.autocast("cuda", dtype=torch.bfloat16)
        return contextlib.nullcontext()


def setup_runtime(device: str = "auto", threads: int = 0) -> Runtime:
    """One process, or one rank of a ``torchrun`` job (gloo on CPU, nccl on CUDA)."""
    if threads:
        torch.set_num_threads(threads)
    want_cuda = device == "cuda" or (device == "auto" and torch.cuda.is_available())
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if world > 1:
        dist.init_process_group(backend="nccl" if want_cuda else "gloo")
    if want_cuda:
        torch.cuda.set_device(local)
        dev = torch.device("cuda", local)
        torch.backends.cuda.matmul.allow_tf32 = True
    else:
        dev = torch.device("cpu")
    return Runtime(dev, rank, world, local)


def teardown(rt: Runtime) -> None:
    """Leave the process group together: a rank that exits while another still holds gloo pairs can leave
    that one blocked in the process group's destructor (seen with 2 CPU ranks when rank 0 saves last)."""
    if rt.ddp and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()


def seed_everything(seed: int) -> np.random.Generator:
    random.seed(seed)
    torch.manual_seed(seed)
    return np.random.default_rng(seed)


def lr_at(step: int, base_lr: float, warmup: int, total: int) -> float:
    """Linear warmup, then linear decay to zero at ``total``."""
    if step < warmup:
        return base_lr * (step + 1) / max(1, warmup)
    return base_lr * max(0.0, (total - step) / max(1, total - warmup))


def make_optimizer(model: torch.nn.Module, lr: float, weight_decay: float, device: torch.device):
    decay = [p for p in model.parameters() if p.requires_grad and p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.requires_grad and p.dim() < 2]
    groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.999), eps=1e-6, fused=device.type == "cuda")


def save_checkpoint(path: Path, **state) -> None:
    """Atomic save: write then rename, so a killed run never leaves half a checkpoint."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)


def load_checkpoint(path: Path) -> dict:
    return torch.load(path, map_location="cpu", weights_only=False)


def rng_state(np_rng: np.random.Generator) -> dict:
    return {"torch": torch.get_rng_state(), "numpy": np_rng.bit_generator.state, "python": random.getstate()}


def restore_rng(state: dict, np_rng: np.random.Generator) -> None:
    torch.set_rng_state(state["torch"])
    np_rng.bit_generator.state = state["numpy"]
    random.setstate(state["python"])


class MetricsLog:
    """Append-only JSONL of training metrics, plus a PNG plot drawn from it."""

    def __init__(self, path: Path, enabled: bool = True):
        self.path = path
        self.enabled = enabled
        self.t0 = time.time()
        if enabled:
            path.parent.mkdir(parents=True, exist_ok=True)

    def write(self, **row) -> None:
        if not self.enabled:
            return
        row = {k: (round(v, 6) if isinstance(v, float) else v) for k, v in row.items()}
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")

    def rows(self) -> list[dict]:
        if not self.path.exists():
            return []
        return [json.loads(line) for line in self.path.read_text(encoding="utf-8").splitlines() if line]

    def plot(self, png: Path, panels: list[tuple[str, list[str]]], x: str = "step") -> None:
        """One panel per (title, metric keys), drawn against ``x``; rows without a key are skipped."""
        if not self.enabled:
            return
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        rows = self.rows()
        fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 3.6))
        axes = np.atleast_1d(axes)
        for ax, (title, keys) in zip(axes, panels):
            for k in keys:
                pts = [(r[x], r[k]) for r in rows if k in r and x in r and r[k] is not None and math.isfinite(r[k])]
                if pts:
                    ax.plot(*zip(*pts), label=k)
            ax.set_title(title)
            ax.set_xlabel(x)
            ax.legend(fontsize=8)
            ax.grid(alpha=0.3)
        fig.tight_layout()
        fig.savefig(png, dpi=90)
        plt.close(fig)
