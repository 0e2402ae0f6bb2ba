"""Store a float graph's weights at half the size, losslessly: fp16 initializers cast back to fp32 in the graph.

The networks' weights are kept in fp16 (the bundle's safetensors), so every weight of the float ONNX
graphs is a float32 that an fp16 holds exactly. ``compact`` stores each such initializer as fp16 with a
``Cast`` to float32 under its old name; ONNX Runtime folds the casts when it loads the graph, so the
session computes with the very same float32 numbers (checked bit for bit before the file is replaced).
``expand`` undoes it, for tools that look for float32 initializers (int8 quantisation).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

MIN_ELEMENTS = 1024  # smaller tensors (biases, layer-norm scales) stay as they are
SUFFIX = "__fp16"


def compact_model(model):
    """The model with every large float32 initializer that fp16 holds exactly stored as fp16 + Cast.
    Returns (model, bytes saved)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    g = model.graph
    keep, casts, saved = [], [], 0
    for t in g.initializer:
        a = numpy_helper.to_array(t) if t.data_type == TensorProto.FLOAT else None
        if a is None or a.size < MIN_ELEMENTS or not np.array_equal(a.astype(np.float16).astype(np.float32), a):
            keep.append(t)
            continue
        keep.append(numpy_helper.from_array(a.astype(np.float16), t.name + SUFFIX))
        casts.append(helper.make_node("Cast", [t.name + SUFFIX], [t.name], to=TensorProto.FLOAT,
                                      name=t.name + "_cast"))
        saved += a.nbytes // 2
    del g.initializer[:]
    g.initializer.extend(keep)
    nodes = casts + list(g.node)
    del g.node[:]
    g.node.extend(nodes)
    onnx.checker.check_model(model)
    return model, saved


def expand_model(model):
    """The model with every ``compact``-ed initializer back as float32 under its own name (Casts removed)."""
    from onnx import TensorProto, numpy_helper

    g = model.graph
    half = {t.name: t for t in g.initializer if t.name.endswith(SUFFIX) and t.data_type == TensorProto.FLOAT16}
    casts = [n for n in g.node if n.op_type == "Cast" and len(n.input) == 1 and n.input[0] in half]
    if not casts:
        return model
    back = {n.input[0]: n.output[0] for n in casts}
    inits = [numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float32), back[t.name]) if t.name in back else t
             for t in g.initializer]
    del g.initializer[:]
    g.initializer.extend(inits)
    nodes = [n for n in g.node if not (n.op_type == "Cast" and n.input and n.input[0] in back)]
    del g.node[:]
    g.node.extend(nodes)
    return model


def compact_file(path: Path, feeds: list[dict[str, np.ndarray]]) -> int:
    """Compact the graph at ``path`` in place, after checking that ONNX Runtime gives the same outputs, bit for
    bit, on ``feeds``; returns the bytes saved (0 and the file untouched when nothing could be stored smaller)."""
    import onnx
    import onnxruntime as ort

    model, saved = compact_model(onnx.load(str(path)))
    if not saved:
        return 0
    tmp = path.with_name(path.name + ".fp16.tmp")
    onnx.save(model, str(tmp))
    try:
        before = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        after = ort.InferenceSession(str(tmp), providers=["CPUExecutionProvider"])
        for feed in feeds:
            a, b = before.run(None, feed)[0], after.run(None, feed)[0]
            if not np.array_equal(a, b):
                raise ValueError(f"{path.name}: the fp16-stored graph computes other numbers "
                                 f"(max diff {float(np.abs(a - b).max())})")
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
    return saved


def expanded_copy(path: Path, out: Path) -> Path:
    """Write ``path`` with float32 initializers to ``out`` (for quantisers); returns ``out``."""
    import onnx

    onnx.save(expand_model(onnx.load(str(path))), str(out))
    return out
