"""ONNX Runtime sessions for the two networks: CUDA when it really loads, otherwise CPU."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Literal

import numpy as np

from .types import CorrectorError

Device = Literal["auto", "cpu", "cuda"]
log = logging.getLogger(__name__)


def _session(path: Path, device: Device, threads: int, cpu_path: Path | None = None):
    """A session on CUDA for ``path`` when asked for and usable, else on CPU for ``cpu_path`` (default ``path``)."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.log_severity_level = 3  # errors only
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if threads:
        opts.intra_op_num_threads = threads
    want_cuda = device in ("auto", "cuda") and "CUDAExecutionProvider" in ort.get_available_providers()
    if want_cuda:
        sess = _try_cuda(ort, path, opts)
        if sess is not None:
            return sess
    if device == "cuda":
        raise CorrectorError("--device cuda: the CUDA execution provider is not usable on this machine")
    path = cpu_path or path
    try:
        return ort.InferenceSession(str(path), sess_options=opts, providers=["CPUExecutionProvider"])
    except Exception as e:  # onnxruntime raises its own exception types for unreadable models
        raise CorrectorError(f"corrupt or unreadable ONNX model {path}: {str(e).splitlines()[0][:200]}") from None


def _try_cuda(ort, path: Path, opts):
    """A CUDA session if the provider actually loads (libraries present, a GPU visible), else None.

    Probing silences ONNX Runtime's logger, so a CPU-only machine shows no error spam.
    """
    ort.set_default_logger_severity(4)
    try:
        sess = ort.InferenceSession(
            str(path), sess_options=opts, providers=["CUDAExecutionProvider", "CPUExecutionProvider"]
        )
    except Exception:
        return None
    finally:
        ort.set_default_logger_severity(2)
    return sess if sess.get_providers()[0] == "CUDAExecutionProvider" else None


class OnnxNetworks:
    """One session per network, shared by all threads (``InferenceSession.run`` is thread-safe).

    ``cpu_files`` (discriminator, generator) replace the two graphs when the sessions run on CPU,
    e.g. int8-quantised copies; CUDA always runs the float graphs.

    Every row's output depends on that row alone, never on the batch around it: float and statically
    quantised graphs compute rows independently; graphs that quantise activations dynamically
    (``dynamic_int8``: one scale per batch tensor, padding included) are run one unpadded row at a time.
    """

    def __init__(self, discriminator: Path, generator: Path, device: Device = "auto", threads: int = 0,
                 cpu_files: tuple[Path, Path] | None = None, dynamic_int8: bool = False):
        cpu_disc, cpu_gen = cpu_files or (discriminator, generator)
        self.disc = _session(discriminator, device, threads, cpu_disc)
        self.provider = self.disc.get_providers()[0]
        on_cpu = self.provider == "CPUExecutionProvider"
        self.gen = _session(generator, "cpu" if on_cpu else device, threads, cpu_gen)
        self.files = (cpu_disc, cpu_gen) if on_cpu else (discriminator, generator)
        self.precision = "int8" if ".int8." in self.files[0].name else "fp32"
        self.rows_alone = dynamic_int8 and self.precision == "int8"
        _check_io(self.disc, discriminator, ["input_ids", "attention_mask"])
        _check_io(self.gen, generator, ["input_ids", "attention_mask", "positions"])

    def discriminate(self, ids: np.ndarray, attn: np.ndarray) -> np.ndarray:
        """P(replaced) for every token, shape (B, T)."""
        if self.rows_alone:
            logits = np.zeros(ids.shape, dtype=np.float32)
            for r, n in enumerate(attn.sum(1)):
                logits[r, :n] = self.disc.run(None, {"input_ids": ids[r : r + 1, :n],
                                                     "attention_mask": attn[r : r + 1, :n]})[0][0]
        else:
            (logits,) = self.disc.run(None, {"input_ids": ids, "attention_mask": attn})
        return _sigmoid(logits.astype(np.float32))

    def generate(self, ids: np.ndarray, attn: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """Log-probabilities over the vocabulary at the given token positions, shape (B, P, V).

        Position 0 ([CLS]) is never asked for: a row's trailing zeros are padding."""
        return _log_softmax(self._generator_logits(ids, attn, positions))

    def generate_at(self, ids: np.ndarray, attn: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """Log-probabilities at the asked positions only (the non-zero ones, row by row), shape (N, V):
        no work is spent normalising padding."""
        logits = self._generator_logits(ids, attn, positions)
        return _log_softmax(logits[positions > 0])

    def _generator_logits(self, ids: np.ndarray, attn: np.ndarray, positions: np.ndarray) -> np.ndarray:
        if self.rows_alone:
            return self._generate_rows(ids, attn, positions)
        (logits,) = self.gen.run(None, {"input_ids": ids, "attention_mask": attn, "positions": positions})
        return logits

    def _generate_rows(self, ids: np.ndarray, attn: np.ndarray, positions: np.ndarray) -> np.ndarray:
        out: np.ndarray | None = None
        for r, n in enumerate(attn.sum(1)):
            p = int(np.count_nonzero(positions[r]))
            if p == 0:
                continue
            (row,) = self.gen.run(None, {"input_ids": ids[r : r + 1, :n], "attention_mask": attn[r : r + 1, :n],
                                         "positions": positions[r : r + 1, :p]})
            if out is None:
                out = np.zeros((*positions.shape, row.shape[-1]), dtype=np.float32)
            out[r, :p] = row[0]
        if out is None:  # no row asked for any position: one call gives the vocabulary size
            (out,) = self.gen.run(None, {"input_ids": ids, "attention_mask": attn, "positions": positions})
        return out


def _check_io(sess, path: Path, inputs: list[str]) -> None:
    names = [i.name for i in sess.get_inputs()]
    if names != inputs:
        raise CorrectorError(f"ONNX model {path} has inputs {names}, expected {inputs}")


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(x, -30, 30)))


def _log_softmax(logits: np.ndarray) -> np.ndarray:
    """In place over the last axis (float32)."""
    logits = logits.astype(np.float32, copy=False)
    logits -= logits.max(-1, keepdims=True)
    z = np.exp(logits).sum(-1, keepdims=True)
    logits -= np.log(z)
    return logits
