"""Where training runs: the device, the ranks of a ``torchrun`` job, torch's threads and the training arithmetic
(fp32 or bf16 autocast), as pretraining and fine-tuning set them up (``add_runtime_args``, ``setup_runtime``) and
leave them (``teardown``)."""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import time
from dataclasses import dataclass

import torch
import torch.distributed as dist

from corrector.bundle import DEVICES


@dataclass
class Runtime:
    device: torch.device
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    bf16: bool = False  # autocast matmuls to bfloat16 (weights, optimizer state and losses stay fp32)

    @property
    def precision(self) -> str:
        return "bf16" if self.bf16 else "fp32"

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def ddp(self) -> bool:
        return self.world_size > 1

    @property
    def device_name(self) -> str:
        """The GPU's own name (``NVIDIA H200``), or "cpu" with the processor's model where the system says it
        (``cpu: AMD EPYC 7B13``): what a ledger row and a provenance record, so that tokens/s of runs spread over
        several machines can be told apart."""
        if self.device.type == "cuda":
            return torch.cuda.get_device_name(self.device)
        model = cpu_model()
        return f"cpu: {model}" if model else "cpu"

    def autocast(self) -> contextlib.AbstractContextManager:
        """The training arithmetic for a forward pass (its backward follows the kernels chosen here). On a CPU in
        bf16, attention takes PyTorch's math kernels: the fused CPU attention's bf16 backward is the largest single
        cost of a fine-tuning step of short sentences (29% of one), and the math kernels make the step 10-25%
        faster (fp32 keeps the fused kernels, which are faster there)."""
        if not self.bf16:
            return contextlib.nullcontext()
        cast = torch.autocast(self.device.type, dtype=torch.bfloat16)
        if self.device.type != "cpu":
            return cast
        from torch.nn.attention import SDPBackend, sdpa_kernel

        stack = contextlib.ExitStack()
        stack.enter_context(cast)
        stack.enter_context(sdpa_kernel([SDPBackend.MATH]))
        return stack


def cpu_model() -> str:
    """The processor's model name from /proc/cpuinfo (Linux), or "" where there is none."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    return " ".join(line.split(":", 1)[1].split())
    except OSError:
        pass
    return ""


PRECISIONS = ("auto", "fp32", "bf16")  # the training arithmetic (setup_runtime)


def add_runtime_args(ap: argparse.ArgumentParser) -> None:
    """--device, --threads and --precision, as pretraining and fine-tuning take them."""
    ap.add_argument("--device", default="auto", choices=DEVICES)
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = torch default)")
    ap.add_argument("--precision", default="auto", choices=PRECISIONS,
                    help="training arithmetic (not the ONNX graphs of training.fitting.evaluate): bf16 autocasts the "
                         "matmuls of the training steps (weights, optimizer state, losses and held-out evaluations "
                         "stay fp32); auto: bf16 on a GPU that supports it, and on a CPU that multiplies bf16 natively "
                         "(AVX512-BF16/AMX) where a quick timing at startup finds it faster (1.3x the tokens/s of fp32 "
                         "on 2 Zen 4 cores, but 0.55x on 2 Xeon cores with AVX512-BF16 and no AMX); fp32 elsewhere")


def cpu_has_bf16() -> bool:
    """The CPU multiplies bfloat16 natively (oneDNN sees AVX512-BF16 or AMX); without it bf16 is emulated, slower."""
    return bool(torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported())


@functools.cache
def cpu_prefers_bf16(dim: int = 256, rows: int = 2048, reps: int = 6) -> bool:
    """bf16 autocast beats fp32 on this CPU: native bf16 (above), and a linear layer's forward and backward at the
    training shapes' width runs at least 10% faster under autocast (median of three timings each, about a second).

    Native support alone does not say it: on 2 Zen 4 cores bf16 trains ``cpu-g4`` 1.3x faster than fp32, on 2 Xeon
    cores with AVX512-BF16 and no AMX 0.55x as fast (``benchmarks/train_step.py``), and this timing agrees with both."""
    if not cpu_has_bf16():
        return False
    gen = torch.Generator().manual_seed(0)
    layer = torch.nn.Linear(dim, 4 * dim)
    x = torch.randn(rows, dim, generator=gen, requires_grad=True)

    def timed(bf16: bool) -> float:
        def step() -> None:
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                y = layer(x)
            y.float().sum().backward()

        step()
        start = time.perf_counter()
        for _ in range(reps):
            step()
        return time.perf_counter() - start

    fp32 = sorted(timed(False) for _ in range(3))[1]
    bf16 = sorted(timed(True) for _ in range(3))[1]
    return bf16 < 0.9 * fp32


def setup_runtime(device: str = "auto", threads: int = 0, precision: str = "auto") -> Runtime:
    """One process, or one rank of a ``torchrun`` job (gloo on CPU, nccl on CUDA)."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision {precision!r}: one of {', '.join(PRECISIONS)}")
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
    bf16 = precision == "bf16" or (precision == "auto" and (
        torch.cuda.is_bf16_supported() if dev.type == "cuda" else cpu_prefers_bf16()))
    return Runtime(dev, rank, world, local, bf16)


def teardown(rt: Runtime) -> None:
    """Leave the process group together: a rank that exits while another still holds gloo pairs can leave
    that one blocked in the process group's destructor (seen with 2 CPU ranks when rank 0 saves last)."""
    if rt.ddp and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
