"""A small ONNX model with one kernel of most profiler categories.

x -> MatMul (fc/MatMul) -> Add (fc/Add) -> Relu (act/Relu)
  -> QuantizeLinear (q/Quant) -> DequantizeLinear (q/Dequant)
  -> Softmax (head/Softmax) -> Transpose (head/Transpose) -> y

Usage: profile_model.py OUT.onnx
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(
        rng.standard_normal((32, 48)).astype(np.float32), "fc.weight")
    b = numpy_helper.from_array(
        rng.standard_normal((48,)).astype(np.float32), "fc.bias")
    scale = numpy_helper.from_array(np.array(0.05, np.float32), "q.scale")
    zero = numpy_helper.from_array(np.array(0, np.int8), "q.zero")
    nodes = [
        helper.make_node("MatMul", ["x", "fc.weight"], ["m"], name="fc/MatMul"),
        helper.make_node("Add", ["m", "fc.bias"], ["a"], name="fc/Add"),
        helper.make_node("Relu", ["a"], ["r"], name="act/Relu"),
        helper.make_node("QuantizeLinear", ["r", "q.scale", "q.zero"], ["q"],
                         name="q/Quant"),
        helper.make_node("DequantizeLinear", ["q", "q.scale", "q.zero"],
                         ["d"], name="q/Dequant"),
        helper.make_node("Softmax", ["d"], ["s"], axis=-1,
                         name="head/Softmax"),
        helper.make_node("Transpose", ["s"], ["y"], perm=[1, 0],
                         name="head/Transpose"),
    ]
    graph = helper.make_graph(
        nodes, "profile",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [16, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [48, 16])],
        [w, b, scale, zero])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, sys.argv[1])


if __name__ == "__main__":
    main()
