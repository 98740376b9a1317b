"""A lone float32 MatMul of two inputs (library mode makes it a single
cuBLASLt call, no kernel), its inputs and the numpy result:
lone_matmul.py OUT writes OUT/matmul.onnx, OUT/data/input_{0,1}.npy and
OUT/data/output_0.npy."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

out = sys.argv[1]
os.makedirs(os.path.join(out, "data"), exist_ok=True)
a = helper.make_tensor_value_info("a", TensorProto.FLOAT, [8, 16])
b = helper.make_tensor_value_info("b", TensorProto.FLOAT, [16, 4])
c = helper.make_tensor_value_info("c", TensorProto.FLOAT, [8, 4])
graph = helper.make_graph(
    [helper.make_node("MatMul", ["a", "b"], ["c"], name="/MatMul")],
    "lone_matmul", [a, b], [c])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.save(model, os.path.join(out, "matmul.onnx"))
rng = np.random.default_rng(3)
x = rng.standard_normal((8, 16)).astype(np.float32)
y = rng.standard_normal((16, 4)).astype(np.float32)
np.save(os.path.join(out, "data", "input_0.npy"), x)
np.save(os.path.join(out, "data", "input_1.npy"), y)
np.save(os.path.join(out, "data", "output_0.npy"),
        (x.astype(np.float64) @ y.astype(np.float64)).astype(np.float32))
