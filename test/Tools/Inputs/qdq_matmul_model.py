#!/usr/bin/env python3
# A QDQ MatMul as quantize_static writes it: x -> QuantizeLinear ->
# DequantizeLinear, int8 weight -> DequantizeLinear, MatMul (q/MatMul). With
# kiln-fuse-qdq it becomes one kiln.quantized_matmul: kiln-run-profile.test
# checks that its kernel is filed under gemm.
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

rng = np.random.default_rng(0)
w = rng.integers(-127, 128, (64, 32), dtype=np.int8)
graph = helper.make_graph(
    [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], name="q/Quant"),
     helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"], name="q/Dequant"),
     helper.make_node("DequantizeLinear", ["w", "ws"], ["wd"], name="w/Dequant"),
     helper.make_node("MatMul", ["xd", "wd"], ["y"], name="q/MatMul")],
    "qdq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [32, 64])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [32, 32])],
    [numpy_helper.from_array(np.array(0.01, np.float32), "xs"),
     numpy_helper.from_array(np.array(0, np.uint8), "xz"),
     numpy_helper.from_array(w, "w"),
     numpy_helper.from_array(np.array(0.02, np.float32), "ws")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
save(model, sys.argv[1])
