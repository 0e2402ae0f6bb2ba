"""Static (calibrated) int8 copies of the two ONNX graphs: every activation scale is fixed at export.

Dynamically quantised graphs (``quantize_dynamic``) compute one activation scale per batch tensor at
run time, so a row's numbers depend on the other rows and on padding. Static graphs use scales
measured once on calibration sentences, so each row is computed on its own: a text gets the same
answer alone, in any batch and at any padding (``tests/test_determinism.py``).

Only the nodes that read a weight (an initializer) are quantised: MatMuls and the embedding lookups
(Gather); the attention products, softmax and layer norms stay float.

    python -m training.bundle.quantize --model data/electra_models/default --calibration ../shared/data/csc/sighan_train.tsv
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from corrector.bundle import MANIFEST, ONNX_GRAPHS, ONNX_INT8, Bundle, graph_names
from corrector.text.tokenize import build_tokenizer, encode_batch

from .onnx_fp16 import expanded_copy

INT8_STATIC = "static"  # manifest onnx.int8_activations for graphs written here


def weight_nodes(path: Path) -> list[str]:
    """Names of the MatMul nodes that multiply by a weight and the Gather nodes that look one up."""
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    weights = {t.name for t in model.graph.initializer}
    return [n.name for n in model.graph.node
            if (n.op_type == "MatMul" and n.input[1] in weights) or (n.op_type == "Gather" and n.input[0] in weights)]


class _Feeds:
    """onnxruntime's CalibrationDataReader protocol: one unpadded row per feed, as the Corrector sees text."""

    def __init__(self, rows: Sequence[Sequence[int]], with_positions: bool):
        self._it: Iterator[dict[str, np.ndarray]] = iter([self._feed(r, with_positions) for r in rows])

    @staticmethod
    def _feed(row: Sequence[int], with_positions: bool) -> dict[str, np.ndarray]:
        ids = np.asarray([row], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
        if with_positions:
            feed["positions"] = np.arange(1, max(2, ids.shape[1] - 1), dtype=np.int64)[None]
        return feed

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._it, None)


def quantize_static_pair(onnx_dir: Path, rows: Sequence[Sequence[int]], per_channel: bool = True) -> None:
    """Write ``<name>.int8.onnx`` beside each float graph, calibrated on ``rows`` (token ids with [CLS]/[SEP])."""
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static

    if not rows:
        raise ValueError("static quantisation needs calibration rows")
    if graph_names(onnx_dir.parent) == ("body", "head"):
        raise ValueError("static quantisation reads a joint graph or the pair: quantise before splitting the joint "
                         "graph (training.bundle.onnx_split)")
    root = logging.getLogger()
    level, root.level = root.level, logging.ERROR  # quantize_static warns about optional pre-processing
    try:
        with tempfile.TemporaryDirectory() as d:
            for name in graph_names(onnx_dir.parent):  # from float32 initializers, even where stored as fp16
                src = expanded_copy(onnx_dir / f"{name}.onnx", Path(d) / f"{name}.onnx")
                quantize_static(src, onnx_dir / f"{name}.int8.onnx", _Feeds(rows, name != "discriminator"),
                                quant_format=QuantFormat.QDQ, activation_type=QuantType.QInt8,
                                weight_type=QuantType.QInt8, per_channel=per_channel,
                                nodes_to_quantize=weight_nodes(src), op_types_to_quantize=["MatMul", "Gather"],
                                calibrate_method=CalibrationMethod.MinMax, extra_options={"ActivationSymmetric": True})
    finally:
        root.level = level


def calibration_rows(bundle: Bundle, texts: Sequence[str]) -> list[list[int]]:
    tok = build_tokenizer(bundle.vocab_path)
    return [e.ids for e in encode_batch(tok, list(texts), bundle.max_seq_len)]


def read_sources(path: Path, limit: int) -> list[str]:
    """The first column of a TSV (or each line of a text file), first ``limit`` non-empty lines."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            text = line.rstrip("\n").split("\t")[0].strip()
            if text:
                out.append(text)
            if len(out) >= limit:
                break
    return out


def requantize_bundle(model: Path, texts: Sequence[str]) -> dict:
    """Replace a bundle's int8 graphs by static ones calibrated on ``texts``; record it in the manifest."""
    bundle = Bundle.load(model)
    quantize_static_pair(model / "onnx", calibration_rows(bundle, texts))
    manifest = bundle.manifest
    manifest.onnx = {**manifest.onnx, "int8_activations": INT8_STATIC, "int8_calibration_sentences": len(texts)}
    manifest.files = sorted(set(manifest.files) | {ONNX_INT8[ONNX_GRAPHS[n]] for n in bundle.graph_names})
    (model / MANIFEST).write_text(manifest.to_json(), encoding="utf-8")
    return manifest.to_dict()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m training.bundle.quantize", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, required=True, help="bundle directory whose int8 graphs are replaced")
    ap.add_argument("--calibration", type=Path, required=True,
                    help="training-side text (TSV: first column), never an evaluation set")
    ap.add_argument("--sentences", type=int, default=300, help="calibration sentences (default 300)")
    args = ap.parse_args(argv)
    from corrector.types import CorrectorError

    try:
        texts = read_sources(args.calibration, args.sentences)
        requantize_bundle(args.model, texts)
    except (CorrectorError, OSError, ValueError) as e:
        sys.exit(f"error: {e}")
    print(f"wrote static int8 graphs to {args.model / 'onnx'} ({len(texts)} calibration sentences)")


if __name__ == "__main__":
    main()
