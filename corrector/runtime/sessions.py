"""ONNX Runtime sessions for the networks, held by name: CUDA when it really loads, otherwise CPU."""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from corrector.bundle import Device
from corrector.types import CorrectorError

__all__ = ["Device"]  # declared in corrector.bundle beside Precision; imported from here by the loaders
log = logging.getLogger(__name__)


class Networks(Protocol):
    """What a Corrector asks of its networks: :class:`OnnxNetworks`, or hand-set ones (tests/fake_networks.py).

    ``run`` gives P(replaced) for every token, shape (B, T), the generator's log-probabilities at the asked
    positions (the non-zero ones, row by row) that pass the ``floor`` (see :func:`suspected`), and which those
    are, shape (B, P); every row's output depends on that row alone. ``rows_alone``:
    the rows run one unpadded row at a time (batches need not be cut by length). ``provider`` and
    ``precision`` name the device and the graphs, for reports; ``provider_reason`` says why the CPU runs them
    when a GPU could have been meant ("" otherwise)."""

    provider: str
    precision: str
    provider_reason: str
    rows_alone: bool

    def run(self, ids: np.ndarray, attn: np.ndarray, positions: np.ndarray,
            floor: np.ndarray | None = None) -> tuple[np.ndarray, LogProbs, np.ndarray]: ...


def suspected(rtd_logits: np.ndarray, positions: np.ndarray, floor: np.ndarray | None) -> np.ndarray:
    """Which asked positions (non-zero entries of ``positions``, (B, P)) the generator is asked at: those whose
    P(replaced) reaches their ``floor`` ((B, P) probabilities; None: every one). Compared on the logits
    (p >= f exactly when logit >= log(f / (1 - f))), so the answer is the same whatever rows run together."""
    asked = positions > 0
    if floor is None:
        return asked
    at = np.take_along_axis(rtd_logits, positions, axis=1)
    with np.errstate(divide="ignore"):
        cut = np.log(floor) - np.log1p(-np.minimum(floor, 1.0))  # floor 0: -inf (always); 1: +inf (never)
    return asked & (at >= cut)


def _compact(positions: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """``positions`` with only the kept entries, each row's first, zero-padded to the widest row."""
    counts = keep.sum(1)
    out = np.zeros((len(positions), max(int(counts.max(initial=0)), 1)), dtype=np.int64)
    for r in range(len(positions)):
        out[r, : counts[r]] = positions[r][keep[r]]
    return out


CUDA_DID_NOT_START = "ONNX Runtime's CUDA provider did not start (CUDA 12 and cuDNN 9 installed? a GPU visible?)"


def _session(path: Path, device: Device, threads: int, cpu_path: Path | None = None):
    """A session on CUDA for ``path`` when asked for and usable, else on CPU for ``cpu_path`` (default ``path``)."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.log_severity_level = 3  # errors only
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if threads:
        opts.intra_op_num_threads = threads
    if threads == 1:  # no idle worker spinning while the other network's session runs
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    why_not = _why_not_cuda(ort, device)
    if not why_not:
        sess = _try_cuda(ort, path, opts)
        if sess is not None:
            return sess
        why_not = (CUDA_DID_NOT_START)
    if device == "cuda":
        raise CorrectorError(f"--device cuda: the CUDA execution provider is not usable on this machine: {why_not}")
    path = cpu_path or path
    try:
        return ort.InferenceSession(str(path), sess_options=opts, providers=["CPUExecutionProvider"])
    except Exception as e:  # onnxruntime raises its own exception types for unreadable models
        raise CorrectorError(f"corrupt or unreadable ONNX model {path}: {str(e).splitlines()[0][:200]}") from None


def _why_not_cuda(ort, device: Device) -> str:
    """Why CUDA is not even tried ("" when it is): asked for the CPU, no NVIDIA device, or an ONNX Runtime
    without its CUDA provider (the CPU wheel, or the CPU wheel installed over the GPU one)."""
    if device == "cpu":
        return "the CPU was asked for"
    if "CUDAExecutionProvider" not in ort.get_available_providers():
        from importlib.metadata import PackageNotFoundError, version

        try:
            gpu = version("onnxruntime-gpu")
        except PackageNotFoundError:
            return "this ONNX Runtime is the CPU build (the gpu extra installs the CUDA one)"
        return (f"onnxruntime-gpu {gpu} is installed but the CPU-only onnxruntime shadows it (pip uninstall -y "
                f"onnxruntime onnxruntime-gpu, then pip install 'onnxruntime-gpu>=1.20,<1.27')")
    if device == "auto" and not _gpu_device_files():
        return "no NVIDIA GPU device on this machine"
    return ""


def provider_reason(device: Device) -> str:
    """Why the networks run on the CPU when ``device`` was asked for (said once at start-up by the service)."""
    import onnxruntime as ort

    return _why_not_cuda(ort, device) or CUDA_DID_NOT_START


def _gpu_device_files() -> bool:
    """False on Linux when no NVIDIA driver device is there (/dev/nvidiactl; /dev/dxg under WSL): a CUDA session
    cannot start, and trying costs a fifth of a second of a CPU-only machine's start. Elsewhere: True."""
    if not sys.platform.startswith("linux"):
        return True
    return any(os.path.exists(p) for p in ("/dev/nvidiactl", "/dev/dxg"))


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


GRAPH_INPUTS = {"discriminator": ["input_ids", "attention_mask"],
                "generator": ["input_ids", "attention_mask", "positions"],
                "joint": ["input_ids", "attention_mask", "positions"],
                "body": ["input_ids", "attention_mask"],
                "head": ["hidden", "positions"]}
GRAPH_OUTPUTS = {"joint": ["logits", "rtd_logits"], "body": ["rtd_logits", "hidden"], "head": ["logits"]}
# the ways a bundle holds its networks: two networks; one body with both heads in one graph; or that body (RTD
# logits and hidden states) and the generator's head on the hidden states at the asked positions, apart
PAIR, JOINT, SPLIT = ("discriminator", "generator"), ("joint",), ("body", "head")
LAYOUTS = (PAIR, JOINT, SPLIT)


class OnnxNetworks:
    """One session per graph, held by name and shared by all threads (``InferenceSession.run`` is thread-safe).

    ``graphs`` names either a ``discriminator`` (input_ids, attention_mask -> RTD logits (B, T)) and a
    ``generator`` (the same and positions (B, P) -> vocabulary logits (B, P, V)), or one ``joint`` graph that
    gives both from one pass of a body the two heads share (outputs ``logits`` and ``rtd_logits``), or that
    body (``body``: RTD logits and the ``hidden`` states) and the generator's head (``head``: hidden, positions ->
    logits) as two graphs. With the two, the head runs only where the RTD score reaches the floor: a site the
    discriminator does not suspect costs no vocabulary projection.
    ``cpu_graphs`` replace them when the sessions run on CPU, e.g. int8-quantised copies; CUDA always runs the
    float graphs.

    Every row's output depends on that row alone, never on the batch around it: float and statically
    quantised graphs compute rows independently; graphs that quantise activations dynamically
    (``dynamic_int8``: one scale per batch tensor, padding included) are run one unpadded row at a time.
    Those rows run side by side, one single-threaded session call per worker (``threads`` workers,
    default: every core): a 30-token row is too small to split across cores, so this is about twice
    as fast on two cores as one call at a time with two intra-op threads, and gives the same numbers.
    """

    def __init__(self, graphs: Mapping[str, Path], device: Device = "auto", threads: int = 0,
                 cpu_graphs: Mapping[str, Path] | None = None, dynamic_int8: bool = False):
        names = tuple(graphs)
        if names not in LAYOUTS:
            raise CorrectorError(f"ONNX graphs must be {' and '.join(PAIR)}, {JOINT[0]}, or {' and '.join(SPLIT)}; "
                                 f"got {', '.join(names)}")
        cpu = dict(cpu_graphs or graphs)
        rows_alone_on_cpu = dynamic_int8 and ".int8." in cpu[names[0]].name  # CUDA runs the float graphs
        self.workers = (threads or os.cpu_count() or 1) if rows_alone_on_cpu else 1
        cpu_threads = 1 if rows_alone_on_cpu else threads
        self.sessions: dict[str, Any] = {}
        asked = device
        for name in names:  # the first session decides the device; the others follow it
            self.sessions[name] = _session(graphs[name], device, cpu_threads, cpu[name])
            device = "cpu" if self.sessions[name].get_providers()[0] == "CPUExecutionProvider" else device
        self.provider = self.sessions[names[0]].get_providers()[0]
        on_cpu = self.provider == "CPUExecutionProvider"
        self.provider_reason = "" if not on_cpu else provider_reason(asked)
        self.files = {name: cpu[name] if on_cpu else graphs[name] for name in names}
        self.precision = "int8" if ".int8." in self.files[names[0]].name else "fp32"
        self.rows_alone = dynamic_int8 and self.precision == "int8"
        self.joint = names == JOINT
        self.split = names == SPLIT
        self._pool = ProcessLocalPool(self.workers, "onnx-row")
        for name, sess in self.sessions.items():
            _check_io(sess, graphs[name], GRAPH_INPUTS[name])
            outputs = [o.name for o in sess.get_outputs()]
            if name in GRAPH_OUTPUTS and outputs != GRAPH_OUTPUTS[name]:
                raise CorrectorError(f"ONNX model {graphs[name]} has outputs {outputs}, expected {GRAPH_OUTPUTS[name]}")
        vocab_out = self.sessions[names[-1]].get_outputs()
        v = vocab_out[0].shape[-1]
        self.vocab_size = v if isinstance(v, int) else 0  # a symbolic size is known from the first output

    def run(self, ids: np.ndarray, attn: np.ndarray, positions: np.ndarray,
            floor: np.ndarray | None = None) -> tuple[np.ndarray, LogProbs, np.ndarray]:
        """Both heads on one batch: P(replaced) for every token, shape (B, T); the generator's log-probabilities
        at the asked positions (the non-zero ones, row by row) whose P(replaced) reaches ``floor`` ((B, P), None:
        every one; see :func:`suspected`), and which those are ((B, P) bool). Split graphs run the vocabulary head
        only there; the others run it at every asked position and drop the rest.
        Run row by row, the two networks' calls share the workers, so even one text uses two cores.
        (Rows that ask for no position are not run by a joint or split graph: their P(replaced) is 0.)"""
        if self.split:
            return self._run_split(ids, attn, positions, floor)
        if not self.rows_alone:
            if self.joint:
                logits, rtd = self.sessions["joint"].run(None, _feeds(ids, attn, positions))
                lp = LogProbs.from_logits(logits[positions > 0])
            else:
                rtd = self._discriminator_logits(ids, attn)
                lp = self.generate_at(ids, attn, positions)
            return self._gated(rtd, lp, positions, floor)
        asked = np.count_nonzero(positions, axis=1).tolist()
        todo = [r for r in range(len(ids)) if asked[r]]
        rtd = np.zeros(ids.shape, dtype=np.float32)
        if self.joint:
            outs = self._rows(ids, attn, [(r, asked[r]) for r in todo], positions)
            for r, (_, row_rtd) in zip(todo, outs):
                rtd[r, : len(row_rtd)] = row_rtd
            gen = [logits for logits, _ in outs]
        else:
            outs = self._rows(ids, attn, [(r, 0) for r in range(len(ids))] + [(r, asked[r]) for r in todo], positions)
            for r, out in enumerate(outs[: len(ids)]):
                rtd[r, : len(out)] = out
            gen = outs[len(ids) :]
        lp = LogProbs.from_logits(np.concatenate(gen) if gen else np.zeros((0, self.vocab_size), np.float32))
        return self._gated(rtd, lp, positions, floor)

    @staticmethod
    def _gated(rtd_logits: np.ndarray, lp: LogProbs, positions: np.ndarray,
               floor: np.ndarray | None) -> tuple[np.ndarray, LogProbs, np.ndarray]:
        """Graphs that ran the head at every asked position: keep the rows of the suspected ones."""
        keep = suspected(rtd_logits, positions, floor)
        if floor is not None:
            lp = lp.take(keep[positions > 0])
        return _sigmoid(rtd_logits), lp, keep

    def _run_split(self, ids: np.ndarray, attn: np.ndarray, positions: np.ndarray,
                   floor: np.ndarray | None) -> tuple[np.ndarray, LogProbs, np.ndarray]:
        body, head = self.sessions["body"], self.sessions["head"]
        rtd = np.zeros(ids.shape, dtype=np.float32)
        keep = np.zeros(positions.shape, dtype=bool)
        todo = [r for r in range(len(ids)) if positions[r, 0] > 0]
        gen: list[np.ndarray] = []
        if not self.rows_alone:  # float graphs: one call of each for the batch, rows computed independently
            if todo:
                rtd_b, hidden = body.run(None, _feeds(ids[todo], attn[todo]))
                rtd[todo] = rtd_b
                keep[todo] = suspected(rtd_b, positions[todo], None if floor is None else floor[todo])
                if keep.any():
                    pos = _compact(positions[todo], keep[todo])
                    gen.append(head.run(None, {"hidden": hidden, "positions": pos})[0][pos > 0])
        else:
            lengths = attn.sum(1).tolist()

            def call(r: int) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
                n = lengths[r]
                row_rtd, hidden = body.run(None, _feeds(ids[r : r + 1, :n], attn[r : r + 1, :n]))
                row_keep = suspected(row_rtd, positions[r : r + 1], None if floor is None else floor[r : r + 1])
                if not row_keep.any():
                    return row_rtd[0], row_keep[0], None
                pos = positions[r : r + 1][row_keep][None, :]
                return row_rtd[0], row_keep[0], head.run(None, {"hidden": hidden, "positions": pos})[0][0]

            outs = self._map(call, todo)
            for r, (row_rtd, row_keep, logits) in zip(todo, outs):
                rtd[r, : len(row_rtd)] = row_rtd
                keep[r] = row_keep
                if logits is not None:
                    gen.append(logits)
        lp = LogProbs.from_logits(np.concatenate(gen) if gen else np.zeros((0, self.vocab_size), np.float32))
        return _sigmoid(rtd), lp, keep

    def discriminate(self, ids: np.ndarray, attn: np.ndarray) -> np.ndarray:
        """P(replaced) for every token, shape (B, T)."""
        if self.joint or self.split:  # the head is asked at one position and never run (floor 1)
            one = np.ones((len(ids), 1), dtype=np.int64)
            return self.run(ids, attn, one, None if self.joint else np.ones(one.shape))[0]
        return _sigmoid(self._discriminator_logits(ids, attn))

    def _discriminator_logits(self, ids: np.ndarray, attn: np.ndarray) -> np.ndarray:
        if not self.rows_alone:
            return self.sessions["discriminator"].run(None, _feeds(ids, attn))[0].astype(np.float32)
        logits = np.zeros(ids.shape, dtype=np.float32)
        for r, out in enumerate(self._rows(ids, attn, [(r, 0) for r in range(len(ids))])):
            logits[r, : len(out)] = out
        return logits

    def generate(self, ids: np.ndarray, attn: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """Log-probabilities over the vocabulary at the given token positions, shape (B, P, V).

        Position 0 ([CLS]) is never asked for: a row's trailing zeros are padding."""
        if self.split:
            _, lp, keep = self.run(ids, attn, positions)
            out = np.zeros((*positions.shape, self.vocab_size), dtype=np.float32)
            out[keep] = lp.logits
            return _log_softmax(out)
        vocab_graph = "joint" if self.joint else "generator"
        if not self.rows_alone:
            logits = self.sessions[vocab_graph].run(None, _feeds(ids, attn, positions))[0]
            return _log_softmax(logits)
        asked = np.count_nonzero(positions, axis=1).tolist()
        todo = [r for r in range(len(ids)) if asked[r]]
        out = np.zeros((*positions.shape, self.vocab_size), dtype=np.float32)
        for r, row in zip(todo, self._rows(ids, attn, [(r, asked[r]) for r in todo], positions)):
            out[r, : asked[r]] = row[0] if self.joint else row
        return _log_softmax(out)

    def generate_at(self, ids: np.ndarray, attn: np.ndarray, positions: np.ndarray) -> LogProbs:
        """Log-probabilities at the asked positions only (the non-zero ones, row by row), N rows: no work
        is spent on padding, and none on normalising every entry (see :class:`LogProbs`)."""
        if self.rows_alone or self.joint or self.split:
            return self.run(ids, attn, positions)[1]  # (the discriminator rows are cheap next to the generator's)
        logits = self.sessions["generator"].run(None, _feeds(ids, attn, positions))[0]
        return LogProbs.from_logits(logits[positions > 0])

    def _rows(self, ids: np.ndarray, attn: np.ndarray, calls: list[tuple[int, int]],
              positions: np.ndarray | None = None) -> list[Any]:
        """One unpadded session call per (row, p): the discriminator when p == 0, else the generator at
        the row's first p positions, each output (T,) or (p, V); a joint graph gives both, (p, V) and (T,)."""
        lengths = attn.sum(1).tolist()

        def call(job: tuple[int, int]) -> Any:
            r, p = job
            row_ids, row_attn = ids[r : r + 1, : lengths[r]], attn[r : r + 1, : lengths[r]]
            if p == 0:
                return self.sessions["discriminator"].run(None, _feeds(row_ids, row_attn))[0][0]
            assert positions is not None
            outs = self.sessions["joint" if self.joint else "generator"].run(
                None, _feeds(row_ids, row_attn, positions[r : r + 1, :p]))
            return (outs[0][0], outs[1][0]) if self.joint else outs[0][0]

        return self._map(call, calls)

    def _map(self, call: Any, jobs: list[Any]) -> list[Any]:
        """``call`` on every job, side by side on the workers (in order when there is one)."""
        if self.workers <= 1 or len(jobs) <= 1:
            return [call(j) for j in jobs]
        return list(self._pool.get().map(call, jobs))


def _feeds(ids: np.ndarray, attn: np.ndarray, positions: np.ndarray | None = None) -> dict[str, np.ndarray]:
    feeds = {"input_ids": ids, "attention_mask": attn}
    return feeds if positions is None else {**feeds, "positions": positions}


class ProcessLocalPool:
    """A thread pool made on first use, and made again in a forked process (Ray, multiprocessing), which has
    none of its parent's threads."""

    def __init__(self, workers: int, name: str):
        self.workers, self.name = workers, name
        self._pool: tuple[int, ThreadPoolExecutor] | None = None  # (pid that made it, pool)
        self._lock = threading.Lock()

    def get(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None or self._pool[0] != os.getpid():
                self._pool = (os.getpid(), ThreadPoolExecutor(self.workers, thread_name_prefix=self.name))
            return self._pool[1]


def _check_io(sess, path: Path, inputs: list[str]) -> None:
    names = [i.name for i in sess.get_inputs()]
    if names != inputs:
        raise CorrectorError(f"ONNX model {path} has inputs {names}, expected {inputs}")


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(x, -30, 30)))


class LogProbs:
    """The generator's log-probabilities over the vocabulary, one row per site, kept as its logits and
    each row's log-normaliser: ``logits[i, v] - logz[i]``.

    Readers only ever need a few entries per row (the candidates, the top of each row), so nothing
    writes the whole normalised (sites, 21k) matrix; each row's normaliser is computed in row blocks
    that stay in cache. Each row's values depend on that row alone.
    """

    BLOCK = 16  # rows per block: 16 x 21k float32 = 1.4 MB

    def __init__(self, logits: np.ndarray, best: np.ndarray, logz: np.ndarray):
        self.logits = logits  # (n, V) float32
        self.best = best  # (n,) each row's largest logit
        self.logz = logz  # (n,) log sum exp of each row

    @classmethod
    def from_logits(cls, logits: np.ndarray) -> LogProbs:
        logits = np.ascontiguousarray(logits, dtype=np.float32)
        n = logits.shape[0]
        best = logits.max(1) if n else np.zeros(0, np.float32)
        total = np.empty(n, dtype=np.float32)
        buf = np.empty((min(n, cls.BLOCK), logits.shape[1]), dtype=np.float32)
        for s in range(0, n, cls.BLOCK):
            b = buf[: min(cls.BLOCK, n - s)]
            np.subtract(logits[s : s + cls.BLOCK], best[s : s + cls.BLOCK, None], out=b)
            np.exp(b, out=b)
            total[s : s + cls.BLOCK] = b.sum(1)
        return cls(logits, best, best + np.log(total))

    def __len__(self) -> int:
        return self.logits.shape[0]

    @property
    def vocab_size(self) -> int:
        return self.logits.shape[1]

    def at(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """log P(cols[i]) at rows[i]."""
        return self.logits[rows, cols] - self.logz[rows]

    def dense(self) -> np.ndarray:
        """The full (n, V) matrix of log-probabilities."""
        return self.logits - self.logz[:, None]

    def take(self, keep: np.ndarray) -> LogProbs:
        return LogProbs(self.logits[keep], self.best[keep], self.logz[keep])

    def without_logits(self) -> LogProbs:
        """The same rows with no vocabulary columns (what is left once the features are gathered)."""
        return LogProbs(np.empty((len(self), 0), dtype=np.float32), self.best, self.logz)  # no view: frees them


def _log_softmax(logits: np.ndarray) -> np.ndarray:
    """In place over the last axis (float32)."""
    logits = logits.astype(np.float32, copy=False)
    logits -= logits.max(-1, keepdims=True)
    z = np.exp(logits).sum(-1, keepdims=True)
    logits -= np.log(z)
    return logits
