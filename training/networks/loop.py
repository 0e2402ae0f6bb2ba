"""What pretraining and fine-tuning share: seeds, schedule, checkpoints, resuming, the step loop, the ledger,
metrics and plots (where they run, the device, ranks and precision: ``runtime``).

Pretrain and finetune use it as one namespace (``loop.X``), and the tests stand in for its ``time`` to drive
StepRunner's clock, so StepRunner and the ledger stay beside the rest."""

from __future__ import annotations

import argparse
import copy
import ctypes
import functools
import json
import math
import os
import random
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import torch


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


def save_pair(gen: torch.nn.Module, disc: torch.nn.Module, out: Path, vocab: Path,
              provenance: dict | None = None) -> None:
    """Discriminator and generator as two ordinary Hugging Face directories, each with its vocab.txt:
    the layout training.bundle.export and training.networks.finetune --init read; with ``provenance``, also how the pair was
    trained (``write_provenance``)."""
    for sub, m in (("discriminator", disc), ("generator", gen)):
        m.save_pretrained(out / sub)  # type: ignore[operator]
        shutil.copyfile(vocab, out / sub / "vocab.txt")
    if provenance is not None:
        write_provenance(out, provenance)


def write_provenance(out: Path, provenance: dict) -> None:
    """out/provenance.json, which training.bundle.export --run and training.networks.finetune --init read with the pair."""
    (out / "provenance.json").write_text(json.dumps(provenance, indent=2, ensure_ascii=False), encoding="utf-8")


def read_provenance(pair: Path) -> dict:
    """How a pair was trained: a training run's provenance.json, or a bundle's manifest provenance (fine-tuning
    on from the shipped model keeps its earlier stages on record); {} when neither is there."""
    prov_file, manifest = pair / "provenance.json", pair / "manifest.json"
    if prov_file.exists():
        return json.loads(prov_file.read_text(encoding="utf-8"))
    if manifest.exists():
        return dict(json.loads(manifest.read_text(encoding="utf-8")).get("provenance", {}))
    return {}


def given_flags(parser: argparse.ArgumentParser, argv: list[str] | None) -> set[str]:
    """The ``dest`` names of the options actually written on the command line (defaults excluded)."""
    p = copy.deepcopy(parser)
    for action in p._actions:
        action.default = argparse.SUPPRESS
        action.required = False
    for group in p._mutually_exclusive_groups:
        group.required = False
    return set(vars(p.parse_args(argv)))


C = TypeVar("C")


def resume_config(cls: type[C], wanted: C, saved: dict, given: Iterable[str], mutable: Iterable[str],
                  where: Path, log: Callable[[str], None] = print) -> C:
    """The training config to resume with: the checkpoint's, except where a flag was given on the command
    line. A given flag that differs from the checkpoint is applied and logged when it is in ``mutable``
    (schedule length, bookkeeping), and refused with a message otherwise (it would change the recipe
    half-way through the run). Fields the checkpoint predates take the command line's value."""
    given, mutable = set(given), set(mutable)
    now = asdict(wanted)  # type: ignore[call-overload]
    merged: dict[str, Any] = {}
    conflicts = []
    for f in fields(cls):  # type: ignore[arg-type]
        name, flag = f.name, "--" + f.name.replace("_", "-")
        if name not in saved:
            merged[name] = now[name]
            log(f"resume: {name}={now[name]!r} (the checkpoint predates this setting)")
        elif name in given and now[name] != saved[name]:
            if name in mutable:
                merged[name] = now[name]
                log(f"resume: {flag} {now[name]!r} replaces the checkpoint's {saved[name]!r}")
            else:
                conflicts.append(f"{flag} {now[name]!r} (checkpoint: {saved[name]!r})")
                merged[name] = saved[name]
        else:
            merged[name] = saved[name]
    if conflicts:
        raise SystemExit(
            f"cannot resume {where}: " + "; ".join(conflicts) + ". These settings are fixed for the life of a run; "
            "drop the flag(s) to continue it, or give a new --out to start another run. Settings that may change "
            f"on resume: {', '.join('--' + m.replace('_', '-') for m in sorted(mutable))}.")
    return cls(**merged)


@dataclass
class RunResult:
    step: int
    elapsed_s: float
    finished: bool  # reached the schedule's last step
    stopped: str | None = None  # why a hook stopped the run early (e.g. a collapse), else None


FIT_PROBE = (20, 120)  # steps of an invocation between which fit_minutes measures the rate (after warm-up)
FIT_MARGIN = 0.92  # share of the measured rate counted on (evaluations and checkpoints take the rest)
MAX_NONFINITE = 50  # steps in a row whose loss or gradient is not finite before the run stops
TRIM_EVERY = 10  # steps between returns of the allocator's free pages to the system (trim_heap)


@functools.cache
def _glibc() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.malloc_trim.argtypes, libc.malloc_trim.restype = [ctypes.c_size_t], ctypes.c_int
        return libc
    except (OSError, AttributeError):  # another C library (musl): nothing to trim
        return None


def trim_heap() -> bool:
    """Give the C allocator's free pages back to the system (glibc's ``malloc_trim``); whether it could. A CPU step
    frees tensors of many sizes, and the heap they leave holes in is never returned on its own: a fine-tuning
    process grew to 8.5 GB resident in 2,400 steps (docs/training.md, memory)."""
    libc = _glibc()
    if libc is None:
        return False
    libc.malloc_trim(0)
    return True


class StepRunner:
    """The one training loop of pretraining and fine-tuning: the lr schedule (linear warmup, linear decay),
    gradient accumulation, clipping, the optimizer step, when to stop (end of schedule, ``stop_after`` steps
    in this invocation, the wall-clock deadline, SIGTERM/SIGINT, or a hook's ``stop``) and periodic
    checkpoints; it always ends with a checkpoint, so a killed run resumes where it was.

    ``micro_step()`` draws one micro-batch and returns its losses/statistics with the loss to minimise under
    "loss"; ``on_step(step, lr, stats)`` is called after every optimizer step (logging, evaluation, saving the
    best pair); ``state()`` returns what a checkpoint holds besides the model, optimizer, step and elapsed
    time (called on every rank: gathering RNG states is collective)."""

    def __init__(self, model: torch.nn.Module, opt: torch.optim.Optimizer, *, lr: float, warmup_steps: int,
                 max_steps: int, ckpt_path: Path, ckpt_every: int, state: Callable[[], dict],
                 clip: float = 1.0, max_minutes: float = 0, stop_after: int = 0, step: int = 0,
                 elapsed_before: float = 0.0, is_main: bool = True, desc: str = "train", fit_minutes: float = 0,
                 on_schedule: Callable[[int], None] | None = None):
        self.model, self.opt = model, opt
        self.lr, self.warmup_steps, self.max_steps, self.clip = lr, warmup_steps, max_steps, clip
        self.ckpt_path, self.ckpt_every, self.state = ckpt_path, ckpt_every, state
        self.step, self.elapsed_before, self.is_main, self.desc = step, elapsed_before, is_main, desc
        self.last_step = min(max_steps, step + stop_after) if stop_after else max_steps
        self.t_start = time.time()
        self.deadline = self.t_start + max_minutes * 60 if max_minutes else math.inf
        self.stopped: str | None = None
        self.nonfinite_run = self.skipped = 0  # steps skipped for a non-finite loss or gradient: in a row, in all
        # fit_minutes: the schedule's length is set from the step rate measured early in this invocation so that
        # its linear decay ends when these minutes do (a GPU machine available for a fixed time, whose speed is unknown
        # before the first); on_schedule(max_steps) tells the caller, whose config records it
        self.fit_minutes, self.on_schedule = fit_minutes, on_schedule
        self.fit_probe = (step + FIT_PROBE[0], step + FIT_PROBE[1])
        self.fit_t0, self.fit_again = 0.0, False

    @property
    def elapsed_s(self) -> float:
        return self.elapsed_before + time.time() - self.t_start

    def lr_now(self) -> float:
        return lr_at(self.step, self.lr, self.warmup_steps, self.max_steps)

    def stop(self, reason: str) -> None:
        """Ask the loop to end after the current step (checkpointed; the pair is the caller's call)."""
        self.stopped = reason

    def fit_schedule(self) -> None:
        """fit_minutes: note the time at the probe's first step; at its last, set max_steps from the rate between
        them; once a third of the minutes has gone, or half of the fitted schedule (whichever comes first), set it
        again from the rate since (the first steps of a fine-tuning run its length buckets' shapes for the first
        time: on an H100 they ran at half speed, and at a third once, when the run ended on its first estimate)."""
        if not self.fit_minutes:
            return
        now = time.time()
        if self.step == self.fit_probe[0]:
            self.fit_t0 = now
        elif self.step == self.fit_probe[1]:
            self.refit(self.fit_probe[1] - self.fit_probe[0], now - self.fit_t0)
            self.fit_t0, self.fit_again = now, True
        elif (self.fit_again and self.step >= self.fit_probe[1] + 50
              and (now - self.t_start > self.fit_minutes * 20 or self.step >= (self.fit_probe[1] + self.max_steps) // 2)):
            self.fit_again = False
            self.refit(self.step - self.fit_probe[1], now - self.fit_t0)

    def refit(self, steps: int, seconds: float) -> None:
        rate = steps / max(1e-9, seconds)
        left_s = self.t_start + self.fit_minutes * 60 - time.time()
        fitted = torch.tensor([self.step + max(1, int(rate * left_s * FIT_MARGIN))])
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            torch.distributed.broadcast(fitted, src=0)  # every rank keeps rank 0's schedule
        self.max_steps = self.last_step = int(fitted)
        if self.on_schedule:
            self.on_schedule(self.max_steps)
        if self.is_main:
            print(f"\nschedule fitted to {self.fit_minutes:g} min: {rate:.2f} steps/s, max_steps {self.max_steps}",
                  flush=True)

    def checkpoint(self) -> None:
        extra = self.state()
        if self.is_main:
            save_checkpoint(self.ckpt_path, model=self.model.state_dict(), optimizer=self.opt.state_dict(),
                            step=self.step, elapsed_s=self.elapsed_s, **extra)

    def train_step(self, micro_step: Callable[[], dict[str, torch.Tensor]], accum: int = 1) -> dict[str, float]:
        lr = self.lr_now()
        for g in self.opt.param_groups:
            g["lr"] = lr
        sums: dict[str, float] = {}
        for _ in range(accum):
            out = micro_step()
            (out["loss"] / accum).backward()
            for k, v in out.items():
                sums[k] = sums.get(k, 0.0) + float(v.detach()) / accum
        if self.clip:
            sums["grad_norm"] = float(torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.clip))
        # a step whose loss or gradient is not finite is skipped (its batch is used up, the weights and the
        # optimizer's state stay as they were), as a loss scaler skips an overflow: one such bf16 step at
        # lr 1e-4 turned every weight of a pretraining run on an H100 into NaN (2026-11-26) and the rest of the
        # call trained nothing. MAX_NONFINITE of them in a row stop the run: then it is not one batch.
        if math.isfinite(sums["loss"]) and math.isfinite(sums.get("grad_norm", 0.0)):
            self.opt.step()
            self.nonfinite_run = 0
        else:
            self.nonfinite_run += 1
            self.skipped += 1
            if self.nonfinite_run >= MAX_NONFINITE:
                self.stop(f"loss or gradient not finite in {MAX_NONFINITE} steps in a row")
        sums["skipped_steps"] = float(self.skipped)  # in this invocation so far (the logs sample every few steps)
        self.opt.zero_grad(set_to_none=True)
        self.step += 1
        return sums

    def run(self, micro_step: Callable[[], dict[str, torch.Tensor]],
            on_step: Callable[[int, float, dict[str, float]], None], accum: int = 1) -> RunResult:
        from tqdm import tqdm

        def end_now(signum: int, _frame: object) -> None:  # SIGTERM/SIGINT: finish the step, save, exit cleanly
            self.deadline = 0.0

        handlers = {}
        if threading.current_thread() is threading.main_thread():
            handlers = {sig: signal.signal(sig, end_now) for sig in (signal.SIGTERM, signal.SIGINT)}
        bar = tqdm(total=self.max_steps, initial=self.step, desc=self.desc, disable=not self.is_main, unit="step")
        try:
            while self.step < self.last_step and time.time() < self.deadline and self.stopped is None:
                lr = self.lr_now()
                stats = self.train_step(micro_step, accum)
                self.fit_schedule()
                bar.total = self.max_steps
                bar.update(1)
                on_step(self.step, lr, stats)
                if self.step % TRIM_EVERY == 0:
                    trim_heap()
                if self.step % self.ckpt_every == 0 and self.stopped is None:
                    self.checkpoint()
            bar.close()
            self.checkpoint()
        finally:
            for sig, old in handlers.items():
                signal.signal(sig, old)
        return RunResult(self.step, round(self.elapsed_s), self.step >= self.max_steps, self.stopped)


class Ledger:
    """``ledger.json`` in a run folder: one row per invocation (one stretch of a long run), with the
    steps, tokens and hours it added and the hardware. The current row is rewritten in place at every
    ``update`` (atomically), so a run killed between checkpoints still leaves its row up to the last one."""

    def __init__(self, path: Path, *, step: int, tokens: int, hardware: str):
        self.path = path
        self.t0 = time.time()
        self.row: dict[str, Any] = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.t0)),
                                    "hardware": hardware, "step_from": step, "tokens_from": tokens}
        self.rows = json.loads(path.read_text(encoding="utf-8")) if path.exists() else []
        self.rows.append(self.row)

    def update(self, *, step: int, tokens: int) -> None:
        hours = (time.time() - self.t0) / 3600
        added = tokens - self.row["tokens_from"]
        self.row.update(updated=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), step_to=step, tokens_to=tokens,
                        tokens_added=added, hours=round(hours, 3), tokens_per_s=round(added / max(hours * 3600, 1e-9)))
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.rows, indent=1), encoding="utf-8")
        tmp.replace(self.path)

    def summary(self) -> dict[str, Any]:
        """What every invocation that trained added, in all and per hardware: the provenance's record of
        a run spread over invocations and machines (its last invocation's hardware alone would not say)."""
        rows = [r for r in self.rows if r.get("tokens_added", 0) > 0]
        by_hw: dict[str, dict[str, float]] = {}
        for r in rows:
            acc = by_hw.setdefault(r["hardware"], {"tokens": 0, "hours": 0.0})
            acc["tokens"] += r["tokens_added"]
            acc["hours"] += r["hours"]
        return {"invocations": len(rows), "tokens": sum(r["tokens_added"] for r in rows),
                "hours": round(sum(r["hours"] for r in rows), 3),
                "by_hardware": [{"hardware": hw, "tokens": int(v["tokens"]), "hours": round(v["hours"], 3)}
                                for hw, v in by_hw.items()]}


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
