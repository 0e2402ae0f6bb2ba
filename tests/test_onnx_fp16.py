"""Float graphs store fp16-exact weights as fp16 + Cast (training.bundle.onnx_fp16): same numbers, half the bytes."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from training.bundle.onnx_fp16 import MIN_ELEMENTS, SUFFIX, compact_file, compact_model, expand_model  # noqa: E402


def _graph(w_exact: np.ndarray, w_other: np.ndarray, bias: np.ndarray):
    """y = (x @ w_exact + bias) @ w_other"""
    nodes = [helper.make_node("MatMul", ["x", "w_exact"], ["h"]), helper.make_node("Add", ["h", "bias"], ["hb"]),
             helper.make_node("MatMul", ["hb", "w_other"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 64])],
                          [numpy_helper.from_array(w_exact, "w_exact"), numpy_helper.from_array(w_other, "w_other"),
                           numpy_helper.from_array(bias, "bias")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.fixture
def weights():
    rng = np.random.default_rng(0)
    exact = rng.standard_normal((64, 64)).astype(np.float16).astype(np.float32)  # what fp16 holds exactly
    other = rng.standard_normal((64, 64)).astype(np.float32)  # full float32 precision: stays as it is
    bias = rng.standard_normal(64).astype(np.float16).astype(np.float32)  # too small to bother
    return exact, other, bias


def test_only_large_fp16_exact_initializers_are_stored_as_fp16(weights):
    model, saved = compact_model(_graph(*weights))
    types = {t.name: t.data_type for t in model.graph.initializer}
    assert types == {"w_exact" + SUFFIX: TensorProto.FLOAT16, "w_other": TensorProto.FLOAT, "bias": TensorProto.FLOAT}
    assert saved == 64 * 64 * 2 and weights[2].size < MIN_ELEMENTS
    assert [(n.op_type, list(n.input), list(n.output)) for n in model.graph.node[:1]] == \
        [("Cast", ["w_exact" + SUFFIX], ["w_exact"])]


def test_expand_restores_the_float32_initializers(weights):
    model = expand_model(compact_model(_graph(*weights))[0])
    got = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    assert set(got) == {"w_exact", "w_other", "bias"} and got["w_exact"].dtype == np.float32
    np.testing.assert_array_equal(got["w_exact"], weights[0])
    assert [n.op_type for n in model.graph.node] == ["MatMul", "Add", "MatMul"]


def test_compact_file_computes_the_same_numbers_bit_for_bit(weights, tmp_path):
    path = tmp_path / "g.onnx"
    onnx.save(_graph(*weights), str(path))
    x = np.random.default_rng(1).standard_normal((5, 64)).astype(np.float32)
    before = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    size = path.stat().st_size
    assert compact_file(path, [{"x": x}]) == 64 * 64 * 2
    assert path.stat().st_size < size - 8000
    after = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_array_equal(before, after)


def test_a_graph_with_nothing_to_compact_is_left_alone(weights, tmp_path):
    path = tmp_path / "g.onnx"
    _, other, bias = weights
    onnx.save(_graph(other, other, bias), str(path))
    data = path.read_bytes()
    assert compact_file(path, []) == 0 and path.read_bytes() == data


def test_exported_bundles_store_their_float_graphs_as_fp16(tiny_bundle):
    from corrector.bundle import Bundle

    saved = Bundle.load(tiny_bundle).manifest.onnx["fp16_stored_bytes_saved"]
    assert saved["discriminator"] > 0 and saved["generator"] > 0
    model = onnx.load(str(tiny_bundle / "onnx" / "discriminator.onnx"))
    assert any(t.data_type == TensorProto.FLOAT16 for t in model.graph.initializer)
