"""A joint graph cut in two: its body (RTD logits and hidden states) and the generator's head, apart.

    python -m training.bundle.onnx_split --model BUNDLE

The joint graph (``onnx_export.JointLogitsAt``) runs the body once and the generator's vocabulary head at every
asked position. Cut at the hidden states the head gathers from, the same operations become two graphs:

    onnx/body.onnx   input_ids, attention_mask -> rtd_logits (B, T), hidden (B, T, H)
    onnx/head.onnx   hidden, positions (B, P) -> logits (B, P, V)

so the Corrector can run the head only where the discriminator suspects a character (the ``rtd_floor`` setting).
Each ``joint*.onnx`` (float and int8 alike) is cut as it is: no operation or weight changes, and the two graphs
give the joint graph's numbers at the same positions: bit for bit for the int8 graphs, within ONNX Runtime's
float fusions for the float ones (checked before the joint files go).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

from corrector.bundle import MANIFEST, ONNX_GRAPHS, ONNX_INT8, Bundle
from corrector.types import CorrectorError

from .onnx_export import TOLERANCE

HIDDEN = "hidden"


def _gathered_tensor(model) -> str:
    """The hidden states the head gathers its positions from (the data input of the GatherElements fed by
    ``positions``)."""
    g = model.graph
    from_positions = {"positions"}
    for node in g.node:  # nodes are in topological order
        if from_positions & set(node.input):
            if node.op_type == "GatherElements":
                return node.input[0]
            from_positions |= set(node.output)
    raise ValueError("not a joint graph: no GatherElements reads the positions")


def split_file(joint: Path, body: Path, head: Path) -> None:
    """Write ``body`` and ``head`` cut from the joint graph at ``joint``."""
    import onnx
    import onnx.utils

    model = onnx.load(str(joint))
    cut = _gathered_tensor(model)
    for node in model.graph.node:  # the cut tensor gets a name the runtime knows
        node.input[:] = [HIDDEN if x == cut else x for x in node.input]
        node.output[:] = [HIDDEN if x == cut else x for x in node.output]
    with tempfile.TemporaryDirectory() as d:
        renamed = Path(d) / "joint.onnx"
        onnx.save(model, str(renamed))
        onnx.utils.extract_model(str(renamed), str(body), ["input_ids", "attention_mask"], ["rtd_logits", HIDDEN])
        onnx.utils.extract_model(str(renamed), str(head), [HIDDEN, "positions"], ["logits"])


def check_split(joint: Path, body: Path, head: Path, vocab_size: int, max_len: int = 37) -> float:
    """The two graphs give the joint graph's outputs (random rows, one and several at once): int8 graphs bit for
    bit; float ones within ``onnx_export.TOLERANCE`` (ONNX Runtime fuses a float graph's operations differently
    once it is cut). Returns the largest difference."""
    import onnxruntime as ort

    def session(p: Path):
        return ort.InferenceSession(str(p), providers=["CPUExecutionProvider"])

    j, b, h = session(joint), session(body), session(head)
    rng = np.random.default_rng(5)
    diff = 0.0
    for batch in (1, 3):
        ids = rng.integers(5, vocab_size, (batch, max_len), dtype=np.int64)
        attn = np.ones_like(ids)
        pos = np.sort(rng.choice(np.arange(1, max_len - 1), (batch, 5)), axis=1).astype(np.int64)
        want_logits, want_rtd = j.run(None, {"input_ids": ids, "attention_mask": attn, "positions": pos})
        rtd, hidden = b.run(None, {"input_ids": ids, "attention_mask": attn})
        (logits,) = h.run(None, {HIDDEN: hidden, "positions": pos})
        diff = max(diff, float(np.abs(rtd - want_rtd).max()), float(np.abs(logits - want_logits).max()))
    if diff > (0.0 if ".int8." in joint.name else TOLERANCE):
        raise ValueError(f"{body.name} + {head.name} differ from {joint.name} by {diff:.3g}")
    return diff


def split_graphs(onnx_dir: Path, vocab_size: int, max_len: int = 37) -> dict[str, float]:
    """Cut every ``joint*.onnx`` in ``onnx_dir`` into ``body*.onnx`` and ``head*.onnx``, check them, and remove
    the joint files. Returns the new files' names relative to the bundle, with the largest difference from the
    joint graph's outputs."""
    written = {}
    for joint_rel in (ONNX_GRAPHS["joint"], ONNX_INT8[ONNX_GRAPHS["joint"]]):
        joint = onnx_dir.parent / joint_rel
        if not joint.is_file():
            continue
        body_rel, head_rel = (joint_rel.replace("joint", part) for part in ("body", "head"))
        body, head = onnx_dir.parent / body_rel, onnx_dir.parent / head_rel
        split_file(joint, body, head)
        diff = check_split(joint, body, head, vocab_size, max_len)
        joint.unlink()
        written.update({body_rel: diff, head_rel: diff})
    if not written:
        raise ValueError(f"no joint graph in {onnx_dir}")
    return written


def split_record(written: dict[str, float]) -> dict:
    """What the manifest's ``onnx`` section says of a split (:func:`split_graphs`'s result): the layout, and how far
    each pair of graphs is from the joint graph it was cut from."""
    return {"layout": "body+head",
            "split_max_abs_diff_vs_joint": {Path(f).name.removesuffix(".onnx").replace("body", "split"): d
                                            for f, d in written.items() if "/body" in f}}


def split_bundle(root: Path) -> dict[str, float]:
    """Split a bundle's joint graphs in place and list the new files in its manifest."""
    bundle = Bundle.load(root)
    if bundle.graph_names != ("joint",):
        raise ValueError(f"{root} holds the graphs {', '.join(bundle.graph_names)}, not one joint graph")
    written = split_graphs(root / "onnx", bundle.manifest.vocab_size, min(37, bundle.max_seq_len))
    manifest = bundle.manifest
    manifest.files = sorted({f for f in manifest.files if "/joint." not in f} | set(written))
    manifest.onnx = {**manifest.onnx, **split_record(written)}
    (root / MANIFEST).write_text(manifest.to_json(), encoding="utf-8")
    Bundle.load(root)  # still a valid bundle
    return written


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, required=True, help="bundle folder whose joint graphs to split (in place)")
    args = ap.parse_args(argv)
    try:
        written = split_bundle(args.model)
    except (CorrectorError, ValueError) as e:
        sys.stderr.write(f"error: {e}\n")
        sys.exit(1)
    print(f"{args.model}: " + ", ".join(f"{f} (max abs diff vs joint {d:.2g})" for f, d in written.items()))


if __name__ == "__main__":
    main()
