"""Torch → ONNX for the networks, checked against torch on random inputs; optional int8 copies.

A pair whose generator is a head on the discriminator's own body (``training.networks.finetune --generator-body
discriminator``) becomes one ``joint`` graph: both heads from one pass, the shared body stored once. Any other pair
becomes a ``discriminator`` and a ``generator`` graph."""

from __future__ import annotations

import logging
import tempfile
import warnings
from pathlib import Path

import numpy as np
import torch
from torch import nn
from transformers import ElectraForMaskedLM, ElectraForPreTraining

from corrector.bundle import graph_names

from ..networks.modeling import generator_head, shares_body
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


class JointLogitsAt(nn.Module):
    """One body, two heads: the generator's vocabulary logits at ``positions`` and the discriminator's RTD logits
    for every token, from one pass of the body the two share."""

    def __init__(self, disc: ElectraForPreTraining, gen: ElectraForMaskedLM):
        super().__init__()
        self.disc, self.gen = disc, gen

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.disc.electra(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        rtd = self.disc.discriminator_predictions(h)
        picked = torch.gather(h, 1, positions.unsqueeze(-1).expand(-1, -1, h.shape[-1]))
        return generator_head(self.gen, picked), rtd


def _inputs(vocab_size: int, batch: int, length: int, n_pos: int, seed: int = 0) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(104, vocab_size, (batch, length), generator=g)
    attn = torch.ones(batch, length, dtype=torch.long)
    attn[0, length - 2 :] = 0  # one padded row, as batching produces
    ids[0, length - 2 :] = 0
    pos = torch.randint(1, length - 2, (batch, n_pos), generator=g)
    return {"input_ids": ids, "attention_mask": attn, "positions": pos}


def export_pair(disc: ElectraForPreTraining, gen: ElectraForMaskedLM, out_dir: Path) -> dict[str, float]:
    """Write onnx/discriminator.onnx and onnx/generator.onnx, or onnx/joint.onnx for a generator on the
    discriminator's body (:func:`shares_body`); return max |onnx - torch| per graph.

    Raises ValueError when a difference exceeds TOLERANCE.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    disc, gen = disc.eval().float(), gen.eval().float()
    vocab = disc.config.vocab_size
    ex = _inputs(vocab, 2, 16, 3)
    batch, seq, npos = "batch", "length", "positions"
    ids_axes = {"input_ids": {0: batch, 1: seq}, "attention_mask": {0: batch, 1: seq}}
    pos_axes = {"positions": {0: batch, 1: npos}, "logits": {0: batch, 1: npos}}
    modules: dict[str, nn.Module] = {}
    if shares_body(disc, gen):
        modules["joint"] = JointLogitsAt(disc, gen).eval()
        _export(modules["joint"], (ex["input_ids"], ex["attention_mask"], ex["positions"]), out_dir / "joint.onnx",
                ["input_ids", "attention_mask", "positions"], ["logits", "rtd_logits"],
                {**ids_axes, **pos_axes, "rtd_logits": {0: batch, 1: seq}})
    else:
        modules["discriminator"], modules["generator"] = DiscriminatorLogits(disc).eval(), GeneratorLogitsAt(gen).eval()
        _export(modules["discriminator"], (ex["input_ids"], ex["attention_mask"]), out_dir / "discriminator.onnx",
                ["input_ids", "attention_mask"], ["logits"], {**ids_axes, "logits": {0: batch, 1: seq}})
        _export(modules["generator"], (ex["input_ids"], ex["attention_mask"], ex["positions"]),
                out_dir / "generator.onnx", ["input_ids", "attention_mask", "positions"], ["logits"],
                {**ids_axes, **pos_axes})
    check = _inputs(vocab, 3, min(37, disc.config.max_position_embeddings), 5, seed=1)
    diffs = {name: _max_diff(m, out_dir / f"{name}.onnx", _feed_for(name, check)) for name, m in modules.items()}
    bad = {k: v for k, v in diffs.items() if not v <= TOLERANCE}
    if bad:
        raise ValueError(f"ONNX output differs from torch by more than {TOLERANCE}: {bad}")
    return diffs


def _feed_for(name: str, feed: dict) -> dict:
    """The inputs graph ``name`` takes (the discriminator takes no positions)."""
    return {k: v for k, v in feed.items() if name != "discriminator" or k != "positions"}


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
        refs = module(*feed.values())
    refs = refs if isinstance(refs, tuple) else (refs,)
    gots = sess.run(None, {k: v.numpy() for k, v in feed.items()})
    worst = 0.0
    for ref, got in zip((r.numpy() for r in refs), gots):  # RTD logits (B, T): padded positions are never read
        keep = feed["attention_mask"].numpy().astype(bool) if ref.ndim == 2 else np.ones(ref.shape[:2], bool)
        worst = max(worst, float(np.abs(ref - got)[keep].max()))
    return worst


def check_feeds(vocab_size: int, max_len: int = 37) -> dict[str, list[dict[str, np.ndarray]]]:
    """Random numpy feeds per graph (a padded batch and one row), for checks of an ONNX graph against itself."""
    out: dict[str, list[dict[str, np.ndarray]]] = {"discriminator": [], "generator": [], "joint": []}
    for batch, seed in ((3, 3), (1, 4)):
        feed = {k: v.numpy() for k, v in _inputs(vocab_size, batch, max_len, 5, seed=seed).items()}
        for name in out:
            out[name].append(_feed_for(name, feed))
    return out


def compact_pair(onnx_dir: Path, vocab_size: int, max_len: int = 37) -> dict[str, int]:
    """Store the float graphs' weights as fp16 (lossless, checked bit for bit: ``training.bundle.onnx_fp16``);
    returns the bytes saved per graph."""
    feeds = check_feeds(vocab_size, max_len)
    return {name: compact_file(onnx_dir / f"{name}.onnx", feeds[name]) for name in graph_names(onnx_dir.parent)}


def quantize_pair(onnx_dir: Path, vocab_size: int, max_len: int = 37) -> dict[str, float]:
    """Write ``<graph>.int8.onnx`` (dynamic int8 weights, for CPU) next to each float graph; return how far they
    drift: the largest RTD-probability difference and the share of generator top-1 predictions that agree, on
    random inputs."""
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    names = graph_names(onnx_dir.parent)
    root = logging.getLogger()
    level, root.level = root.level, logging.ERROR  # quantize_dynamic warns about optional pre-processing
    try:
        with tempfile.TemporaryDirectory() as d:
            for name in names:  # from float32 initializers, even if stored as fp16
                src = expanded_copy(onnx_dir / f"{name}.onnx", Path(d) / f"{name}.onnx")
                quantize_dynamic(src, onnx_dir / f"{name}.int8.onnx", weight_type=QuantType.QInt8)
    finally:
        root.level = level
    check = {k: v.numpy() for k, v in _inputs(vocab_size, 3, max_len, 5, seed=2).items()}

    def run(name: str) -> tuple[list[np.ndarray], list[np.ndarray]]:
        return tuple(ort.InferenceSession(str(onnx_dir / f"{name}{suffix}.onnx"),
                                          providers=["CPUExecutionProvider"]).run(None, _feed_for(name, check))
                     for suffix in ("", ".int8"))  # type: ignore[return-value]

    if names == ("joint",):
        (g32, d32), (g8, d8) = run("joint")
    else:
        (d32,), (d8,) = run("discriminator")
        (g32,), (g8,) = run("generator")
    keep = check["attention_mask"].astype(bool)
    sig = lambda x: 1 / (1 + np.exp(-x))  # noqa: E731
    return {"discriminator_max_prob_diff": round(float(np.abs(sig(d32) - sig(d8))[keep].max()), 4),
            "generator_top1_agreement": round(float((g32.argmax(-1) == g8.argmax(-1)).mean()), 4)}
