#!/usr/bin/env python3
#===- test/Transforms/optimize-layout-models.py - Layout rewrites in ORT ---===#
#
# Small ONNX models, one per rewrite of kiln-optimize-layout (transposes
# through elementwise ops, reductions, Softmax, LayerNormalization and
# BatchNormalization; channels-last convolution and pooling; matmul weights
# N x K). For each: compile with kiln-compile -O2 --prefer-nhwc
# --matmul-weight-layout=nk --decompose-fused --emit=onnx, run the original
# and the compiled model in ONNX Runtime (optimizations off) on the same
# random inputs, and compare. Prints, per model, the counts of some ops in
# the graph after the pipeline (without --decompose-fused), then
# "<name>: PASS/FAIL max_abs=...".
#
#   optimize-layout-models.py KILN_COMPILE OUT_DIR
#
#===----------------------------------------------------------------------===#

import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(0)


def const(name, array):
    return numpy_helper.from_array(np.asarray(array, dtype=np.float32), name)


def model(name, nodes, inputs, outputs, initializers=()):
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info(n, t, None) for n, t in outputs],
        list(initializers))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    m = onnx.shape_inference.infer_shapes(m, strict_mode=True)
    return m


def node(op, ins, outs, **attrs):
    return helper.make_node(op, ins, outs, **attrs)


F, B, I64 = TensorProto.FLOAT, TensorProto.BOOL, TensorProto.INT64
NCHW, NHWC = [0, 3, 1, 2], [0, 2, 3, 1]
MODELS = {
    # Elementwise with a per-channel constant and a scalar, then a reduction
    # whose surviving dims keep their order.
    "elementwise_reduce": model("m", [
        node("Transpose", ["x"], ["t"], perm=NCHW),
        node("Relu", ["t"], ["r"]),
        node("Add", ["r", "c"], ["a"]),
        node("Mul", ["a", "s"], ["m"]),
        node("ReduceMean", ["m"], ["y"], axes=[2, 3], keepdims=0),
    ], [("x", [2, 3, 4, 5])], [("y", F)],
        [const("c", RNG.standard_normal((5, 1, 1))), const("s", 1.5)]),
    # A constant transposed at compile time (Sub is not commutative), a
    # lower-rank constant, Softmax along a remapped axis.
    "constant_softmax": model("m", [
        node("Transpose", ["x"], ["t"], perm=[1, 0]),
        node("Sub", ["c", "t"], ["s"]),
        node("Div", ["s", "v"], ["d"]),
        node("Softmax", ["d"], ["y"], axis=0),
    ], [("x", [3, 2])], [("y", F)],
        [const("c", RNG.standard_normal((2, 3))),
         const("v", RNG.uniform(1, 2, (3,)))]),
    # BatchNormalization whose channel dim the transpose moves, PRelu with a
    # per-channel slope, a transpose back that cancels.
    "batch_norm_prelu": model("m", [
        node("Transpose", ["x"], ["t"], perm=NCHW),
        node("BatchNormalization", ["t", "sc", "b", "mu", "var"], ["n"],
             epsilon=1e-3),
        node("PRelu", ["n", "slope"], ["p"]),
        node("Transpose", ["p"], ["y"], perm=NHWC),
    ], [("x", [2, 3, 3, 4])], [("y", F)],
        [const("sc", RNG.uniform(0.5, 2, 4)), const("b", RNG.standard_normal(4)),
         const("mu", RNG.standard_normal(4)), const("var", RNG.uniform(0.5, 2, 4)),
         const("slope", RNG.uniform(0, 0.3, (4, 1, 1)))]),
    # Reductions with keepdims both ways; ArgMax; a comparison and Where
    # (of different inputs: a shared transpose would stay in place).
    "reductions_where": model("m", [
        node("Transpose", ["a"], ["t1"], perm=[2, 1, 0]),
        node("Transpose", ["b"], ["t2"], perm=[2, 1, 0]),
        node("Transpose", ["c"], ["t3"], perm=[2, 1, 0]),
        node("Transpose", ["x"], ["t4"], perm=[2, 1, 0]),
        node("Transpose", ["z"], ["u"], perm=[2, 1, 0]),
        node("ReduceSum", ["t1", "ax"], ["s"], keepdims=1),
        node("ReduceMax", ["t2"], ["mx"], axes=[1], keepdims=0),
        node("ArgMax", ["t3"], ["am"], axis=2, keepdims=0),
        node("Greater", ["t4", "u"], ["g"]),
        node("Where", ["g", "t4", "zero"], ["w"]),
    ], [("a", [2, 3, 4]), ("b", [2, 3, 4]), ("c", [2, 3, 4]), ("x", [2, 3, 4]),
        ("z", [2, 3, 4])],
        [("s", F), ("mx", F), ("am", I64), ("w", F)],
        [numpy_helper.from_array(np.array([0, 2], dtype=np.int64), "ax"),
         const("zero", [0.0])]),
    # LayerNormalization with the normalized dim left in place.
    "layer_norm": model("m", [
        node("Transpose", ["x"], ["t"], perm=[1, 0, 2]),
        node("LayerNormalization", ["t", "g", "b"], ["n"], axis=-1),
        node("Tanh", ["n"], ["y"]),
    ], [("x", [3, 2, 8])], [("y", F)],
        [const("g", RNG.standard_normal(8)), const("b", RNG.standard_normal(8))]),
    # Matmul weights stored N x K: a rank-3 MatMul and a Gemm.
    "matmul_nk": model("m", [
        node("MatMul", ["x", "w"], ["h"]),
        node("Reshape", ["h", "shape"], ["h2"]),
        node("Gemm", ["h2", "w2", "b2"], ["y"], alpha=0.5, beta=2.0),
    ], [("x", [2, 3, 4])], [("y", F)],
        [const("w", RNG.standard_normal((4, 5))),
         numpy_helper.from_array(np.array([6, 5], dtype=np.int64), "shape"),
         const("w2", RNG.standard_normal((5, 7))), const("b2", RNG.standard_normal(7))]),
    # A small residual network: convolutions (strided, grouped, dilated,
    # SAME_UPPER), MaxPool, AveragePool, GlobalAveragePool, Flatten.
    "conv_net": model("m", [
        node("Conv", ["x", "w0", "b0"], ["c0"], pads=[1, 1, 1, 1], strides=[2, 2]),
        node("Relu", ["c0"], ["r0"]),
        node("MaxPool", ["r0"], ["p0"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
             strides=[2, 2]),
        node("Conv", ["p0", "w1"], ["c1"], group=2, auto_pad="SAME_UPPER",
             kernel_shape=[3, 3]),
        node("Sigmoid", ["c1"], ["s1"]),
        node("Conv", ["s1", "w2"], ["c2"], dilations=[2, 2], pads=[2, 2, 2, 2]),
        node("Add", ["c2", "p0"], ["a"]),
        node("Relu", ["a"], ["r"]),
        node("AveragePool", ["r"], ["ap"], kernel_shape=[2, 2], strides=[1, 1],
             count_include_pad=1, pads=[0, 0, 1, 1]),
        node("GlobalAveragePool", ["ap"], ["g"]),
        node("Flatten", ["g"], ["y"]),
    ], [("x", [2, 3, 16, 16])], [("y", F)],
        [const("w0", RNG.standard_normal((4, 3, 3, 3))),
         const("b0", RNG.standard_normal(4)),
         const("w1", RNG.standard_normal((4, 2, 3, 3))),
         const("w2", RNG.standard_normal((4, 4, 3, 3)))]),
}


def run(path, feeds):
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def main():
    kiln_compile, out_dir = sys.argv[1], sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    failed = False
    for name, m in MODELS.items():
        original = os.path.join(out_dir, name + ".onnx")
        compiled = os.path.join(out_dir, name + ".kiln.onnx")
        onnx.save(m, original)
        subprocess.run([kiln_compile, original, "-O2", "--prefer-nhwc",
                        "--matmul-weight-layout=nk", "--decompose-fused",
                        "--emit=onnx", "-o", compiled], check=True)
        graph = os.path.join(out_dir, name + ".mlir")
        subprocess.run([kiln_compile, original, "-O2", "--prefer-nhwc",
                        "--matmul-weight-layout=nk", "--emit=graph", "-o",
                        graph], check=True)
        ir = open(graph).read()
        counts = " ".join(f"{op}={ir.count('kiln.' + op + ' ')}" for op in
                          ("transpose", "reshape", "conv_nhwc", "gemm", "matmul",
                           "batch_normalization", "fused_conv_nhwc"))
        print(f"{name}: {counts}")
        feeds = {i.name: RNG.standard_normal(
                     [d.dim_value for d in i.type.tensor_type.shape.dim]
                 ).astype(np.float32) for i in m.graph.input}
        want, got = run(original, feeds), run(compiled, feeds)
        worst = 0.0
        ok = len(want) == len(got)
        for w, g in zip(want, got):
            ok = ok and w.shape == g.shape and w.dtype == g.dtype
            if ok:
                ok = bool(np.allclose(g, w, rtol=1e-5, atol=1e-5))
                worst = max(worst, float(np.max(np.abs(
                    g.astype(np.float64) - w.astype(np.float64)), initial=0)))
        print(f"{name}: {'PASS' if ok else 'FAIL'} max_abs={worst:.3g}")
        failed |= not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
