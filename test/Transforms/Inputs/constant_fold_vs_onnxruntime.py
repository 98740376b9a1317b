"""Compares kiln-constant-fold's results with ONNX Runtime's, bit for bit.

Builds an ONNX model whose outputs are ops on initializers, runs it with
ONNX Runtime (graph optimizations off, so its kernels compute every op),
folds the imported kiln IR with kiln-constant-fold, reads the returned
constants back and compares. Ops documented as exact must be bit-identical;
libm-based ones (exp, tanh, ...) and MatMul must agree within a few ulps.

usage: constant_fold_vs_onnxruntime.py KILN_COMPILE KILN_OPT WORKDIR
"""

import os
import re
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

kiln_compile, kiln_opt, workdir = sys.argv[1:4]
rng = np.random.default_rng(1234)

initializers = {
    "A": (rng.standard_normal((4, 8)) * 3).astype(np.float32),
    "B": rng.standard_normal((8,)).astype(np.float32),
    "P": (rng.random((4, 8)) * 10 + 0.1).astype(np.float32),
    "M": rng.standard_normal((8, 3)).astype(np.float32),
    "H": (rng.standard_normal((4, 8)) * 3).astype(np.float16),
    "H2": rng.standard_normal((8,)).astype(np.float16),
    "I": rng.integers(-100000, 100000, (4, 8)).astype(np.int32),
    "J": (rng.integers(1, 50, (8,)) * rng.choice([-1, 1], 8)).astype(np.int32),
    "Big": rng.integers(2**20, 2**30, (4, 8)).astype(np.int32),
    "L": rng.integers(-2**40, 2**40, (4, 8)).astype(np.int64),
    "two": np.array(2.0, np.float32),
    "start": np.array(0.1, np.float32),
    "limit": np.array(5.0, np.float32),
    "delta": np.array(0.3, np.float32),
    "perm_idx": np.array([3, 0, -1], np.int64),
    "starts": np.array([1, 7], np.int64),
    "ends": np.array([3, -9], np.int64),
    "axes": np.array([0, 1], np.int64),
    "steps": np.array([1, -3], np.int64),
    "k": np.array(1, np.int64),
    "shape": np.array([2, 4, 8], np.int64),
    "axis1": np.array([1], np.int64),
    "S": rng.integers(-40, 40, (3, 5)).astype(np.int64),
}

# (output name, op type, inputs, attributes, ulps allowed: 0 is bit-exact)
cases = [
    ("add", "Add", ["A", "B"], {}, 0),
    ("sub", "Sub", ["B", "A"], {}, 0),
    ("mul", "Mul", ["A", "P"], {}, 0),
    ("div", "Div", ["A", "P"], {}, 0),
    ("sqrt", "Sqrt", ["P"], {}, 0),
    ("neg", "Neg", ["A"], {}, 0),
    ("abs", "Abs", ["A"], {}, 0),
    ("reciprocal", "Reciprocal", ["P"], {}, 0),
    ("pow2", "Pow", ["A", "two"], {}, 0),
    ("max", "Max", ["A", "B"], {}, 0),
    ("min", "Min", ["A", "B", "P"], {}, 0),
    ("less", "Less", ["A", "B"], {}, 0),
    ("equal", "Equal", ["I", "J"], {}, 0),
    ("where", "Where", ["less", "A", "B"], {}, 0),
    ("relu", "Relu", ["A"], {}, 0),
    ("floor", "Floor", ["A"], {}, 0),
    ("round", "Round", ["A"], {}, 0),
    ("cast_f16", "Cast", ["A"], {"to": TensorProto.FLOAT16}, 0),
    ("cast_i32", "Cast", ["A"], {"to": TensorProto.INT32}, 0),
    ("cast_bool", "Cast", ["A"], {"to": TensorProto.BOOL}, 0),
    ("cast_from_i64", "Cast", ["L"], {"to": TensorProto.FLOAT}, 0),
    ("cast_from_f16", "Cast", ["H"], {"to": TensorProto.FLOAT}, 0),
    ("add_f16", "Add", ["H", "H2"], {}, 0),
    ("mul_f16", "Mul", ["H", "H2"], {}, 0),
    ("int_add", "Add", ["I", "J"], {}, 0),
    ("int_mul_wraps", "Mul", ["Big", "Big"], {}, 0),
    ("int_div", "Div", ["I", "J"], {}, 0),
    ("int_mod", "Mod", ["I", "J"], {}, 0),
    ("int_fmod", "Mod", ["I", "J"], {"fmod": 1}, 0),
    ("range", "Range", ["start", "limit", "delta"], {}, 0),
    ("transpose", "Transpose", ["A"], {"perm": [1, 0]}, 0),
    ("gather", "Gather", ["A", "perm_idx"], {"axis": 1}, 0),
    ("slice", "Slice", ["A", "starts", "ends", "axes", "steps"], {}, 0),
    ("concat", "Concat", ["A", "P"], {"axis": 0}, 0),
    ("expand", "Expand", ["B", "shape"], {}, 0),
    ("trilu", "Trilu", ["A", "k"], {"upper": 0}, 0),
    ("reduce_sum_int", "ReduceSum", ["I", "axis1"], {"keepdims": 0}, 0),
    ("reduce_prod_int", "ReduceProd", ["S"], {"axes": [0]}, 0),
    ("reduce_max", "ReduceMax", ["A"], {"axes": [1]}, 0),
    ("reduce_min", "ReduceMin", ["A"], {"keepdims": 0}, 0),
    ("exp", "Exp", ["A"], {}, 4),
    ("log", "Log", ["P"], {}, 4),
    ("tanh", "Tanh", ["A"], {}, 4),
    # ONNX Runtime's Sigmoid is MLAS's rational approximation, within about
    # 1e-7 absolute; Kiln computes 1 / (1 + exp(-x)) in float.
    ("sigmoid", "Sigmoid", ["A"], {}, 256),
    ("erf", "Erf", ["A"], {}, 4),
    ("pow", "Pow", ["P", "B"], {}, 4),
    ("matmul", "MatMul", ["A", "M"], {}, 4),
]
# Inputs may name earlier cases' outputs (Where uses "less").
nodes = []
for name, op, inputs, attrs, _ in cases:
    nodes.append(helper.make_node(op, inputs, [name], name=name, **attrs))
graph = helper.make_graph(
    nodes, "fold_vs_ort", [], [],
    [numpy_helper.from_array(v, k) for k, v in initializers.items()])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                          ir_version=8)
# Shape inference types every node output; then they become graph outputs.
model = onnx.shape_inference.infer_shapes(model)
model.graph.output.extend(
    [vi for vi in model.graph.value_info if vi.name in {c[0] for c in cases}])
order = [vi.name for vi in model.graph.output]
path = os.path.join(workdir, "fold.onnx")
onnx.save(model, path)

options = ort.SessionOptions()
options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
expected = dict(zip(order, session.run(order, {})))

mlir = os.path.join(workdir, "fold.mlir")
subprocess.run([kiln_compile, path, "--emit=kiln", "--keep-constants", "-o", mlir],
               check=True)
folded = subprocess.run(
    [kiln_opt, mlir, "--kiln-constant-fold",
     "--mlir-print-elementsattrs-with-hex-if-larger=0"],
    check=True, capture_output=True, text=True).stdout

DTYPES = {"f32": np.float32, "f16": np.float16, "f64": np.float64,
          "i1": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32,
          "i64": np.int64, "ui8": np.uint8}

def parse_type(t):
    m = re.fullmatch(r"tensor<((?:\d+x)*)(\w+)>", t.strip())
    dims = [int(d) for d in m.group(1).split("x") if d]
    return dims, DTYPES[m.group(2)]

def decode(hexdata, dims, dtype):
    raw = bytes.fromhex(hexdata)
    count = int(np.prod(dims)) if dims else 1
    if dtype == np.bool_:
        bits = np.unpackbits(np.frombuffer(raw, np.uint8), bitorder="little")
        values = bits[:count].astype(np.bool_) if len(raw) * 8 >= count and len(raw) > 1 \
            else np.full(count, bool(raw[0]))
        return values.reshape(dims)
    values = np.frombuffer(raw, dtype)
    if values.size == 1 and count != 1:
        values = np.full(count, values[0], dtype)  # a splat
    return values.reshape(dims)

blobs = dict(re.findall(r'^\s*([\w.]+): "0x[0-9A-F]{8}([0-9A-F]*)"', folded, re.M))
constants = {}
for name, kind, payload, type_ in re.findall(
        r'(%\w+) = kiln\.constant (dense|dense_resource)<([^>]*)> : (tensor<[^>]*>)',
        folded):
    dims, dtype = parse_type(type_)
    if kind == "dense_resource":
        constants[name] = decode(blobs[payload], dims, dtype)
    elif payload.startswith('"0x'):
        constants[name] = decode(payload[3:-1], dims, dtype)
    else:  # a splat printed as a literal
        literal = {"true": 1, "false": 0}.get(payload, payload)
        constants[name] = np.full(dims, float(literal) if dtype != np.bool_ else
                                  bool(literal)).astype(dtype)
ret = re.search(r"return (.*) :", folded).group(1).split(", ")
failures = 0
for name, value in zip(order, ret):
    allowed = {c[0]: c[4] for c in cases}[name]
    want = expected[name]
    if value not in constants:
        print(f"{name}: not folded")
        failures += 1
        continue
    got = constants[value]
    if got.shape != want.shape or got.dtype != want.dtype:
        print(f"{name}: {got.dtype}{got.shape} != {want.dtype}{want.shape}")
        failures += 1
        continue
    if allowed == 0 or want.dtype.kind != "f":
        ok = np.array_equal(np.atleast_1d(got).view(np.uint8),
                            np.atleast_1d(want).view(np.uint8))
        print(f"{name}: {'bit-exact' if ok else 'DIFFERS'}")
    else:
        ulps = np.abs(got.astype(np.float64) - want.astype(np.float64)) / \
            np.spacing(np.abs(want).astype(want.dtype)).astype(np.float64)
        ok = ulps.max() <= allowed
        print(f"{name}: within {int(ulps.max())} ulp" + ("" if ok else " TOO FAR"))
    if not ok:
        failures += 1
        print("  kiln:", got.ravel()[:8], "\n  ort: ", want.ravel()[:8])

# BatchNormalization folded into Conv and Gemm: the folded weights run by
# ONNX Runtime give Conv/Gemm + BatchNormalization's results up to rounding.
def bn_params(channels):
    return [rng.random(channels).astype(np.float32) + 0.5,
            rng.standard_normal(channels).astype(np.float32),
            rng.standard_normal(channels).astype(np.float32),
            rng.random(channels).astype(np.float32) + 0.1]

conv_inits = {"W": rng.standard_normal((4, 3, 3, 3)).astype(np.float32),
              "Cb": rng.standard_normal(4).astype(np.float32),
              "G": rng.standard_normal((5, 6)).astype(np.float32),
              "Gc": rng.standard_normal(5).astype(np.float32)}
for prefix, channels in (("c", 4), ("g", 5)):
    for suffix, value in zip(("scale", "beta", "mean", "var"), bn_params(channels)):
        conv_inits[prefix + suffix] = value
bn_graph = helper.make_graph(
    [helper.make_node("Conv", ["X", "W", "Cb"], ["conv"], pads=[1, 1, 1, 1]),
     helper.make_node("BatchNormalization",
                      ["conv", "cscale", "cbeta", "cmean", "cvar"], ["Y"],
                      epsilon=1e-3),
     helper.make_node("Gemm", ["X2", "G", "Gc"], ["gemm"], transB=1, beta=0.5),
     helper.make_node("BatchNormalization",
                      ["gemm", "gscale", "gbeta", "gmean", "gvar"], ["Y2"])],
    "bn", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 3, 6, 6]),
           helper.make_tensor_value_info("X2", TensorProto.FLOAT, [2, 6])],
    [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 4, 6, 6]),
     helper.make_tensor_value_info("Y2", TensorProto.FLOAT, [2, 5])],
    [numpy_helper.from_array(v, k) for k, v in conv_inits.items()])
bn_model = helper.make_model(bn_graph, opset_imports=[helper.make_opsetid("", 17)],
                             ir_version=8)
bn_path = os.path.join(workdir, "bn.onnx")
onnx.save(bn_model, bn_path)
feeds = {"X": rng.standard_normal((1, 3, 6, 6)).astype(np.float32),
         "X2": rng.standard_normal((2, 6)).astype(np.float32)}
want_y, want_y2 = ort.InferenceSession(
    bn_path, options, providers=["CPUExecutionProvider"]).run(["Y", "Y2"], feeds)

bn_mlir = os.path.join(workdir, "bn.mlir")
subprocess.run([kiln_compile, bn_path, "--emit=kiln", "--keep-constants",
                "-o", bn_mlir], check=True)
folded = subprocess.run(
    [kiln_opt, bn_mlir, "--kiln-constant-fold",
     "--mlir-print-elementsattrs-with-hex-if-larger=0"],
    check=True, capture_output=True, text=True).stdout
blobs = dict(re.findall(r'^\s*([\w.]+): "0x[0-9A-F]{8}([0-9A-F]*)"', folded, re.M))
constants = {}
for name, kind, payload, type_ in re.findall(
        r'(%\w+) = kiln\.constant (dense|dense_resource)<([^>]*)> : (tensor<[^>]*>)',
        folded):
    dims, dtype = parse_type(type_)
    data = blobs[payload] if kind == "dense_resource" else payload[3:-1]
    constants[name] = decode(data, dims, dtype)
if "batch_normalization" in folded:
    print("batch-norm: not folded")
    failures += 1
else:
    conv_w, conv_b = re.search(r"kiln\.conv %\w+, (%\w+), (%\w+)", folded).groups()
    gemm_b, gemm_c = re.search(r"kiln\.gemm %\w+, (%\w+), (%\w+)", folded).groups()
    check = helper.make_graph(
        [helper.make_node("Conv", ["X", "W", "Cb"], ["Y"], pads=[1, 1, 1, 1]),
         helper.make_node("Gemm", ["X2", "G", "Gc"], ["Y2"], transB=1)],
        "folded", bn_graph.input, bn_graph.output,
        [numpy_helper.from_array(constants[conv_w], "W"),
         numpy_helper.from_array(constants[conv_b], "Cb"),
         numpy_helper.from_array(constants[gemm_b], "G"),
         numpy_helper.from_array(constants[gemm_c], "Gc")])
    got_y, got_y2 = ort.InferenceSession(
        helper.make_model(check, opset_imports=[helper.make_opsetid("", 17)],
                          ir_version=8).SerializeToString(),
        options, providers=["CPUExecutionProvider"]).run(["Y", "Y2"], feeds)
    for what, got, want in (("conv+bn", got_y, want_y), ("gemm+bn", got_y2, want_y2)):
        ok = np.allclose(got, want, rtol=1e-5, atol=1e-5)
        print(f"{what}: {'matches' if ok else 'DIFFERS'} "
              f"(max abs difference {np.abs(got - want).max():.1e})")
        failures += not ok

print(f"{failures} failures")
sys.exit(1 if failures else 0)
