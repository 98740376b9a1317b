"""Shared fixtures of the kiln package's tests: small ONNX models built
with onnx.helper (the expected values come from ONNX Runtime), and the
kiln-run and kiln-test-artifact binaries of the build being tested."""

import os
import shutil

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper


def _mlp(seed: int = 0) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    w1 = numpy_helper.from_array(rng.standard_normal((16, 32)).astype(np.float32), "w1")
    b1 = numpy_helper.from_array(rng.standard_normal(32).astype(np.float32), "b1")
    w2 = numpy_helper.from_array(rng.standard_normal((32, 10)).astype(np.float32), "w2")
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
        helper.make_node("Add", ["h", "b1"], ["hb"], name="bias1"),
        helper.make_node("Relu", ["hb"], ["r"], name="relu1"),
        helper.make_node("MatMul", ["r", "w2"], ["logits"], name="fc2"),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=-1),
    ]
    graph = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [4, 10]),
         helper.make_tensor_value_info("logits", TensorProto.FLOAT, [4, 10])],
        [w1, b1, w2])
    # IR version 8: what ONNX Runtime and libonnx both read.
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                             ir_version=8)


@pytest.fixture
def mlp_model():
    return _mlp()


@pytest.fixture
def mlp_path(tmp_path):
    path = tmp_path / "mlp.onnx"
    onnx.save(_mlp(), str(path))
    return str(path)


@pytest.fixture
def kiln_run():
    path = os.environ.get("KILN_RUN") or shutil.which("kiln-run")
    if not path:
        pytest.skip("kiln-run not found (set KILN_RUN)")
    return path


@pytest.fixture
def kiln_test_artifact():
    """kiln-test-artifact (test/Runtime): hand-written artifacts, e.g. the
    model with symbolic dims (--dynamic)."""
    path = os.environ.get("KILN_TEST_ARTIFACT")
    if not path:
        run = os.environ.get("KILN_RUN") or shutil.which("kiln-run") or ""
        beside = os.path.join(os.path.dirname(run), "kiln-test-artifact")
        path = beside if run and os.path.exists(beside) else \
            shutil.which("kiln-test-artifact")
    if not path:
        pytest.skip("kiln-test-artifact not found (set KILN_TEST_ARTIFACT)")
    return path
