#!/usr/bin/env python3
# A 3-layer MLP for kiln-compile --auto-keep: /fc2/Gemm's weights are around
# 1e5 with alpha = 1e-5, so in float32 the layer's outputs are ordinary
# numbers, but its weights overflow float16 (largest finite 65504) and the
# layer demoted alone makes the outputs infinite. /fc1/Gemm and /fc3/Gemm
# are ordinary. Writes DIR/sensitive_mlp.onnx and one input set
# DIR/calib/input_0.npy.
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
rng = np.random.default_rng(7)
w1 = (rng.standard_normal((16, 32)) * 0.25).astype(np.float32)
w2 = (rng.standard_normal((32, 32)) * 0.25 * 1e5).astype(np.float32)
w3 = (rng.standard_normal((32, 8)) * 0.25).astype(np.float32)
nodes = [
    helper.make_node("Gemm", ["x", "w1"], ["h1"], name="/fc1/Gemm"),
    helper.make_node("Relu", ["h1"], ["a1"], name="/act1/Relu"),
    helper.make_node("Gemm", ["a1", "w2"], ["h2"], name="/fc2/Gemm",
                     alpha=1e-5),
    helper.make_node("Relu", ["h2"], ["a2"], name="/act2/Relu"),
    helper.make_node("Gemm", ["a2", "w3"], ["y"], name="/fc3/Gemm"),
]
graph = helper.make_graph(
    nodes, "sensitive_mlp",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])],
    [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2"),
     numpy_helper.from_array(w3, "w3")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.checker.check_model(model)
os.makedirs(os.path.join(out, "calib"), exist_ok=True)
onnx.save(model, os.path.join(out, "sensitive_mlp.onnx"))
np.save(os.path.join(out, "calib", "input_0.npy"),
        rng.standard_normal((4, 16)).astype(np.float32))
