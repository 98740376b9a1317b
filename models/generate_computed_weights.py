#!/usr/bin/env python3
#===- models/generate_computed_weights.py - Weights computed in the graph -===#
#
# An AlexNet-shaped classifier whose classifier weights are computed in the
# graph from constants, as older exporters and converters write them,
# instead of being initializers (fixed seed, opset 17, IR version 8, checked
# with onnx.checker):
#
#   features   Conv 11x11/4 (64) Relu MaxPool, Conv 5x5 (192) Relu MaxPool,
#              Conv 3x3 (384, 256, 256) Relu, MaxPool, Flatten
#   fc1        Gemm transB=1, B = Tile(Wa [N1/16, K1], [16, 1])
#                                 * Expand(scale [N1, 1], [N1, K1]),
#              C = ConstantOfShape([N1], 0.01); Relu
#   fc2        Gemm transB=1, B = Expand(ConstantOfShape([1, N1], 1/N1),
#                                        [N2, N1]) (one value),
#              C = an initializer; Relu
#   fc3        Gemm transB=1, B and C initializers
#
# Every value of B and C is a function of constants only: a compiler must
# fold them (or compute them once), not recompute them and transpose them in
# every run. --size full is AlexNet's (224x224 input, 9216 -> 4096 -> 4096 ->
# 1000); --size small (64x64, 256 -> 512 -> 256 -> 100) is the tests'.
# The data set DIR/computed_weights_<size>/test_data_set_0/{input,output}_0.pb
# holds onnxruntime's output.
#
#   generate_computed_weights.py --out DIR [--size small|full]
#
#===----------------------------------------------------------------------===#

import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8
SEED = 17

SIZES = {
    # input side, conv channels, fc widths, classes
    "full": (224, [64, 192, 384, 256, 256], 4096, 4096, 1000),
    "small": (64, [16, 32, 48, 32, 32], 512, 256, 100),
}


def build(size):
    side, channels, n1, n2, classes = SIZES[size]
    rng = np.random.default_rng(SEED)
    nodes, inits = [], []

    def init(name, array):
        inits.append(numpy_helper.from_array(array, name))
        return name

    def const_i64(name, values):
        return init(name, np.array(values, dtype=np.int64))

    def node(op, inputs, name, **attrs):
        nodes.append(helper.make_node(op, inputs, [name], name=name, **attrs))
        return name

    def conv(x, cin, cout, k, stride, pad, name):
        w = (rng.standard_normal((cout, cin, k, k)) *
             np.sqrt(2.0 / (cin * k * k))).astype(np.float32)
        b = (0.01 * rng.standard_normal(cout)).astype(np.float32)
        y = node("Conv", [x, init(name + ".weight", w), init(name + ".bias", b)],
                 name, kernel_shape=[k, k], strides=[stride, stride],
                 pads=[pad] * 4)
        return node("Relu", [y], name + "_relu")

    def pool(x, name):
        return node("MaxPool", [x], name, kernel_shape=[3, 3], strides=[2, 2])

    x = conv("input", 3, channels[0], 11, 4, 2, "conv1")
    x = pool(x, "pool1")
    x = conv(x, channels[0], channels[1], 5, 1, 2, "conv2")
    x = pool(x, "pool2")
    x = conv(x, channels[1], channels[2], 3, 1, 1, "conv3")
    x = conv(x, channels[2], channels[3], 3, 1, 1, "conv4")
    x = conv(x, channels[3], channels[4], 3, 1, 1, "conv5")
    x = pool(x, "pool3")
    x = node("Flatten", [x], "flatten", axis=1)
    # The flattened width: the feature map's side after the convolutions.
    s = (side + 4 - 11) // 4 + 1
    s = (s - 3) // 2 + 1
    s = (s - 3) // 2 + 1
    s = (s - 3) // 2 + 1
    k1 = channels[4] * s * s

    # fc1: B = Tile(Wa, [16, 1]) * Expand(scale, [N1, K1]).
    wa = (rng.standard_normal((n1 // 16, k1)) *
          np.sqrt(2.0 / k1)).astype(np.float32)
    scale = rng.uniform(0.5, 1.5, (n1, 1)).astype(np.float32)
    tiled = node("Tile", [init("fc1.weight_rows", wa),
                          const_i64("fc1.repeats", [16, 1])], "fc1/Tile")
    scales = node("Expand", [init("fc1.row_scale", scale),
                             const_i64("fc1.shape", [n1, k1])], "fc1/Expand")
    b1 = node("Mul", [tiled, scales], "fc1/weight")
    c1 = node("ConstantOfShape", [const_i64("fc1.bias_shape", [n1])],
              "fc1/bias",
              value=helper.make_tensor("v", TensorProto.FLOAT, [1], [0.01]))
    x = node("Gemm", [x, b1, c1], "fc1", transB=1)
    x = node("Relu", [x], "fc1_relu")

    # fc2: B = Expand(ConstantOfShape([1, N1], 1 / N1), [N2, N1]).
    row = node("ConstantOfShape", [const_i64("fc2.row_shape", [1, n1])],
               "fc2/row",
               value=helper.make_tensor("v", TensorProto.FLOAT, [1],
                                        [1.0 / n1]))
    b2 = node("Expand", [row, const_i64("fc2.shape", [n2, n1])],
              "fc2/weight")
    c2 = init("fc2.bias", (0.1 * rng.standard_normal(n2)).astype(np.float32))
    x = node("Gemm", [x, b2, c2], "fc2", transB=1)
    x = node("Relu", [x], "fc2_relu")

    w3 = (rng.standard_normal((classes, n2)) *
          np.sqrt(1.0 / n2)).astype(np.float32)
    c3 = (0.01 * rng.standard_normal(classes)).astype(np.float32)
    nodes.append(helper.make_node(
        "Gemm", [x, init("fc3.weight", w3), init("fc3.bias", c3)],
        ["logits"], name="fc3", transB=1))

    graph = helper.make_graph(
        nodes, f"computed_weights_{size}",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                       [1, 3, side, side])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                       [1, classes])],
        inits)
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)],
        producer_name="kiln-models")
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model)
    return model


def main():
    parser = argparse.ArgumentParser(
        description="An AlexNet-shaped classifier with computed weights")
    parser.add_argument("--out", required=True)
    parser.add_argument("--size", choices=sorted(SIZES), default="small")
    args = parser.parse_args()
    import onnxruntime as ort

    model = build(args.size)
    name = f"computed_weights_{args.size}"
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, name + ".onnx")
    onnx.save(model, path)
    side = SIZES[args.size][0]
    x = np.random.default_rng(SEED + 1).standard_normal(
        (1, 3, side, side)).astype(np.float32)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    (y,) = session.run(None, {"input": x})
    data = os.path.join(args.out, name, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    for kind, value in (("input", x), ("output", y)):
        with open(os.path.join(data, f"{kind}_0.pb"), "wb") as f:
            f.write(numpy_helper.from_array(value).SerializeToString())
    print(path)


if __name__ == "__main__":
    main()
