"""Torch → ONNX for the two networks, checked against torch on random inputs; optional int8 copies."""

from __future__ import annotations

import logging
import tempfile
import warnings
from pathlib import Path

import numpy as np
import torch
from torch import nn
from transformers import ElectraForMaskedLM, ElectraForPreTraining

from .modeling import generator_head
from .onnx_fp16 import compact_file, expanded_copy

OPSET = 17
TOLERANCE = 1e-3


class DiscriminatorLogits(nn.Module):
    def __init__(self, disc: ElectraForPreTraining):
        super().__init__()
        self.disc = disc

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.disc(input_ids=input_ids, attention_mask=attention_mask).logits


class GeneratorLogitsAt(nn.Module):
    """Vocabulary logits only at ``positions`` (B, P): the LM head is most of the generator's cost."""

    def __init__(self, gen: ElectraForMaskedLM):
        super().__init__()
        self.gen = gen

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        h = self.gen.electra(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        idx = positions.unsqueeze(-1).expand(-1, -1, h.shape[-1])
        picked = torch.gather(h, 1, idx)
        return generator_head(self.gen, picked)


def _inputs(vocab_size: int, batch: int, length: int, n_pos: int, seed: int = 0) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(104, vocab_size, (batch, length), generator=g)
    attn = torch.ones(batch, length, dtype=torch.long)
    attn[0, length - 2 :] = 0  # one padded row, as batching produces
    ids[0, length - 2 :] = 0
    pos = torch.randint(1, length - 2, (batch, n_pos), generator=g)
    return {"input_ids": ids, "attention_mask": attn, "positions": pos}


def export_pair(disc: ElectraForPreTraining, gen: ElectraForMaskedLM, out_dir: Path) -> dict[str, float]:
    """Write onnx/discriminator.onnx and onnx/generator.onnx; return max |onnx - torch| per network.

    Raises ValueError when a difference exceeds TOLERANCE.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    disc, gen = disc.eval().float(), gen.eval().float()
    vocab = disc.config.vocab_size
    ex = _inputs(vocab, 2, 16, 3)
    d_mod, g_mod = DiscriminatorLogits(disc).eval(), GeneratorLogitsAt(gen).eval()
    batch, seq, npos = "batch", "length", "positions"
    _export(d_mod, (ex["input_ids"], ex["attention_mask"]), out_dir / "discriminator.onnx",
            ["input_ids", "attention_mask"], ["logits"],
            {"input_ids": {0: batch, 1: seq}, "attention_mask": {0: batch, 1: seq}, "logits": {0: batch, 1: seq}})
    _export(g_mod, (ex["input_ids"], ex["attention_mask"], ex["positions"]), out_dir / "generator.onnx",
            ["input_ids", "attention_mask", "positions"], ["logits"],
            {"input_ids": {0: batch, 1: seq}, "attention_mask": {0: batch, 1: seq},
             "positions": {0: batch, 1: npos}, "logits": {0: batch, 1: npos}})
    diffs = {}
    check = _inputs(vocab, 3, min(37, disc.config.max_position_embeddings), 5, seed=1)
    diffs["discriminator"] = _max_diff(d_mod, out_dir / "discriminator.onnx",
                                       {k: check[k] for k in ("input_ids", "attention_mask")})
    diffs["generator"] = _max_diff(g_mod, out_dir / "generator.onnx", check)
    bad = {k: v for k, v in diffs.items() if not v <= TOLERANCE}
    if bad:
        raise ValueError(f"ONNX output differs from torch by more than {TOLERANCE}: {bad}")
    return diffs


def _export(module: nn.Module, args: tuple, path: Path, inputs: list[str], outputs: list[str],
            dynamic_axes: dict) -> None:
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, args, str(path), input_names=inputs, output_names=outputs,
                          dynamic_axes=dynamic_axes, opset_version=OPSET, dynamo=False)


def _max_diff(module: nn.Module, path: Path, feed: dict[str, torch.Tensor]) -> float:
    import onnxruntime as ort

    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    with torch.no_grad():
        ref = module(*feed.values()).numpy()
    got = sess.run(None, {k: v.numpy() for k, v in feed.items()})[0]
    keep = feed["attention_mask"].numpy().astype(bool) if ref.ndim == 2 else np.ones(ref.shape[:2], bool)
    return float(np.abs(ref - got)[keep].max())


def check_feeds(vocab_size: int, max_len: int = 37) -> dict[str, list[dict[str, np.ndarray]]]:
    """Random numpy feeds per network (a padded batch and one row), for checks of an ONNX graph against itself."""
    out: dict[str, list[dict[str, np.ndarray]]] = {"discriminator": [], "generator": []}
    for batch, seed in ((3, 3), (1, 4)):
        feed = {k: v.numpy() for k, v in _inputs(vocab_size, batch, max_len, 5, seed=seed).items()}
        out["generator"].append(feed)
        out["discriminator"].append({k: feed[k] for k in ("input_ids", "attention_mask")})
    return out


def compact_pair(onnx_dir: Path, vocab_size: int, max_len: int = 37) -> dict[str, int]:
    """Store both float graphs' weights as fp16 (lossless, checked bit for bit: ``training.onnx_fp16``);
    returns the bytes saved per network."""
    feeds = check_feeds(vocab_size, max_len)
    return {name: compact_file(onnx_dir / f"{name}.onnx", feeds[name]) for name in ("discriminator", "generator")}


def quantize_pair(onnx_dir: Path, vocab_size: int, max_len: int = 37) -> dict[str, float]:
    """Write discriminator.int8.onnx and generator.int8.onnx (dynamic int8 weights, for CPU) next to the
    float graphs; return how far they drift: the largest RTD-probability difference and the share of
    generator top-1 predictions that agree, on random inputs."""
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    root = logging.getLogger()
    level, root.level = root.level, logging.ERROR  # quantize_dynamic warns about optional pre-processing
    try:
        with tempfile.TemporaryDirectory() as d:
            for name in ("discriminator", "generator"):  # from float32 initializers, even if stored as fp16
                src = expanded_copy(onnx_dir / f"{name}.onnx", Path(d) / f"{name}.onnx")
                quantize_dynamic(src, onnx_dir / f"{name}.int8.onnx", weight_type=QuantType.QInt8)
    finally:
        root.level = level
    check = {k: v.numpy() for k, v in _inputs(vocab_size, 3, max_len, 5, seed=2).items()}

    def run(name: str, feed: dict) -> tuple[np.ndarray, np.ndarray]:
        return tuple(ort.InferenceSession(str(onnx_dir / f"{name}{suffix}.onnx"),
                                          providers=["CPUExecutionProvider"]).run(None, feed)[0]
                     for suffix in ("", ".int8"))  # type: ignore[return-value]

    d32, d8 = run("discriminator", {k: check[k] for k in ("input_ids", "attention_mask")})
    keep = check["attention_mask"].astype(bool)
    sig = lambda x: 1 / (1 + np.exp(-x))  # noqa: E731
    g32, g8 = run("generator", check)
    return {"discriminator_max_prob_diff": round(float(np.abs(sig(d32) - sig(d8))[keep].max()), 4),
            "generator_top1_agreement": round(float((g32.argmax(-1) == g8.argmax(-1)).mean()), 4)}
