#!/usr/bin/env python3
# Shape-family lowerings against ONNX Runtime: each case is a small ONNX
# graph whose shape-like operands (Slice starts, Split sizes, TopK's K, ...)
# are initializers, so they reach the lowering as constants (the ONNX backend
# tests feed most of them as graph inputs and cover the run-time paths).
# Each is compiled with kiln-compile --emit=so --embed-weights, run through
# its kiln_entry and compared with ONNX Runtime (graph optimizations off).
#
# usage: shape_vs_onnxruntime.py KILN_COMPILE WORKDIR

import ctypes
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

OPSET = 18
rng = np.random.default_rng(7)


def make_model(name, node_specs, inputs, outputs, initializers,
               opset=OPSET):
    nodes = [helper.make_node(op, ins, outs, **attrs)
             for op, ins, outs, attrs in node_specs]
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
         for n, a in inputs],
        [helper.make_tensor_value_info(n, t, None) for n, t in outputs],
        [numpy_helper.from_array(np.asarray(v), n) for n, v in initializers])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8 if opset <= 18 else 10
    # Static output shapes from ONNX's shape inference.
    return onnx.shape_inference.infer_shapes(model, strict_mode=True)


def run_ort(model, feeds):
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def run_kiln(kiln_compile, workdir, name, model, inputs, expected,
             aliases=None):
    """`aliases` {output index: input index}: outputs the code writes in
    their input's buffer (the artifact's "aliases"): one buffer for both,
    holding the input."""
    path = os.path.join(workdir, name + ".onnx")
    onnx.save(model, path)
    so = os.path.join(workdir, name + ".so")
    proc = subprocess.run([kiln_compile, path, "--emit=so", "--embed-weights",
                           "-o", so], capture_output=True, text=True)
    if proc.returncode != 0:
        return None, proc.stderr.strip().splitlines()[-1:] or ["compile failed"]
    lib = ctypes.CDLL(os.path.abspath(so))
    lib.kiln_abi_set_num_threads(ctypes.c_int32(1))
    ins = [np.ascontiguousarray(a) for _, a in inputs]
    outs = [np.empty_like(e) for e in expected]
    slots = [a.ctypes.data for a in ins]
    for o, i in (aliases or {}).items():
        outs[o] = ins[i].copy()
        slots[i] = outs[o].ctypes.data
    buffers = (ctypes.c_void_p * (len(ins) + len(outs)))(
        *(slots + [a.ctypes.data for a in outs]))
    lib.kiln_entry(buffers)
    return outs, None


CASES = []


def case(name, node_specs, inputs, outputs, initializers=(), exact=True,
         opset=OPSET, aliases=None):
    CASES.append((name, node_specs, inputs, outputs, list(initializers), exact,
                  opset, aliases))


F, I64, I32, U8, F16 = (TensorProto.FLOAT, TensorProto.INT64, TensorProto.INT32,
                        TensorProto.UINT8, TensorProto.FLOAT16)
x10x8 = rng.standard_normal((10, 8)).astype(np.float32)
x234 = rng.standard_normal((2, 3, 4)).astype(np.float32)

case("slice_negative_steps",
     [("Slice", ["x", "s", "e", "a", "st"], ["y"], {})],
     [("x", x10x8)], [("y", F)],
     [("s", np.array([-2, 1], np.int64)),
      ("e", np.array([-(2**63 - 1), 7], np.int64)),
      ("a", np.array([0, 1], np.int64)), ("st", np.array([-3, 2], np.int64))])
case("slice_clamped",
     [("Slice", ["x", "s", "e", "a", "st"], ["y"], {})],
     [("x", x10x8)], [("y", F)],
     [("s", np.array([1, -100], np.int64)),
      ("e", np.array([1000, -1], np.int64)),
      ("a", np.array([-1, 0], np.int64)), ("st", np.array([3, 1], np.int64))])
case("reshape_no_reassociation",
     [("Reshape", ["x", "s"], ["y"], {})],
     [("x", x234)], [("y", F)], [("s", np.array([4, -1], np.int64))])
case("reshape_zero_copies",
     [("Reshape", ["x", "s"], ["y"], {})],
     [("x", x234)], [("y", F)], [("s", np.array([0, 2, -1, 1], np.int64))])
case("squeeze_unsqueeze",
     [("Unsqueeze", ["x", "a"], ["u"], {}), ("Squeeze", ["u", "b"], ["y"], {})],
     [("x", x234)], [("y", F)],
     [("a", np.array([0, 3], np.int64)), ("b", np.array([0], np.int64))])
case("transpose_u8",
     [("Transpose", ["x"], ["y"], {"perm": [2, 0, 1]})],
     [("x", rng.integers(0, 255, (2, 3, 4)).astype(np.uint8))], [("y", U8)])
case("expand_tile",
     [("Expand", ["x", "s"], ["e"], {}), ("Tile", ["e", "r"], ["y"], {})],
     [("x", rng.standard_normal((3, 1)).astype(np.float32))], [("y", F)],
     [("s", np.array([2, 1, 4], np.int64)), ("r", np.array([1, 2, 3], np.int64))])
case("concat_f16",
     [("Concat", ["a", "b", "c"], ["y"], {"axis": -2})],
     [("a", rng.standard_normal((2, 1, 3)).astype(np.float16)),
      ("b", rng.standard_normal((2, 4, 3)).astype(np.float16)),
      ("c", rng.standard_normal((2, 2, 3)).astype(np.float16))], [("y", F16)])
case("split_sizes",
     [("Split", ["x", "s"], ["a", "b", "c"], {"axis": 1})],
     [("x", rng.standard_normal((3, 6)).astype(np.float32))],
     [("a", F), ("b", F), ("c", F)], [("s", np.array([2, 3, 1], np.int64))])
case("gather_negative_indices",
     [("Gather", ["x", "i"], ["y"], {"axis": 1})],
     [("x", x10x8)], [("y", F)],
     [("i", np.array([[0, -1], [3, -8], [7, 2]], np.int64))])
case("gather_elements_i32",
     [("GatherElements", ["x", "i"], ["y"], {"axis": 0})],
     [("x", x10x8)], [("y", F)],
     [("i", rng.integers(-10, 10, (4, 8)).astype(np.int32))])
case("gather_nd_batch",
     [("GatherND", ["x", "i"], ["y"], {"batch_dims": 1})],
     [("x", x234)], [("y", F)],
     [("i", np.array([[[2, 3], [-1, 0]], [[0, 1], [1, -4]]], np.int64))])
case("scatter_nd_add_duplicates",
     [("ScatterND", ["x", "i", "u"], ["y"], {"reduction": "add"})],
     [("x", rng.standard_normal((8, 3)).astype(np.float32)),
      ("u", rng.standard_normal((4, 3)).astype(np.float32))], [("y", F)],
     [("i", np.array([[1], [1], [-2], [1]], np.int64))])
# TensorScatter (opset 24): run-time write positions. A decoder's state
# input (past...) that nothing reads afterwards is written in place (its
# present... output aliases it: one buffer for both); one read after the
# write, or an input and output not named as a state pair, is copied.
cache = rng.standard_normal((3, 2, 8, 4)).astype(np.float32)
rows = rng.standard_normal((3, 2, 2, 4)).astype(np.float32)
case("tensor_scatter_in_place",
     [("TensorScatter", ["past_key_values.0.key", "u", "w"],
       ["present.0.key"], {"axis": 2})],
     [("past_key_values.0.key", cache), ("u", rows),
      ("w", np.array([0, 5, 3], np.int64))],
     [("present.0.key", F)], opset=24, aliases={0: 0})
case("tensor_scatter_read_after",
     [("TensorScatter", ["p", "u", "w"], ["y"], {"axis": -2}),
      ("Add", ["y", "p"], ["z"], {})],
     [("p", cache), ("u", rows), ("w", np.array([6, 1, 2], np.int64))],
     [("y", F), ("z", F)], opset=24)
case("tensor_scatter_circular_f16",
     [("TensorScatter", ["past_state", "u", "w"], ["present_state"],
       {"axis": 1, "mode": "circular"})],
     [("past_state", rng.standard_normal((2, 5, 3)).astype(np.float16)),
      ("u", rng.standard_normal((2, 3, 3)).astype(np.float16)),
      ("w", np.array([4, 1], np.int64))], [("present_state", F16)],
     opset=24, aliases={0: 0})
case("tensor_scatter_not_a_state_pair",
     [("TensorScatter", ["p", "u", "w"], ["y"], {"axis": 2})],
     [("p", cache), ("u", rows), ("w", np.array([2, 0, 6], np.int64))],
     [("y", F)], opset=24)
case("scatter_elements_max_u8",
     [("ScatterElements", ["x", "i", "u"], ["y"], {"axis": 1, "reduction": "max"})],
     [("x", rng.integers(0, 255, (3, 5)).astype(np.uint8)),
      ("u", rng.integers(0, 255, (3, 2)).astype(np.uint8))], [("y", U8)],
     [("i", np.array([[0, 0], [4, -1], [2, 3]], np.int64))])
case("scatter_elements_none",
     [("ScatterElements", ["x", "i", "u"], ["y"], {"axis": 0})],
     [("x", x10x8), ("u", rng.standard_normal((2, 8)).astype(np.float32))],
     [("y", F)], [("i", np.array([[3, 0, 9, -1, 5, 2, 7, 4],
                             [1, 8, 6, 0, 2, -3, 3, 9]], np.int64))])
case("topk_ties_largest",
     [("TopK", ["x", "k"], ["v", "i"], {"axis": 1})],
     [("x", rng.integers(0, 4, (3, 9)).astype(np.int32))], [("v", I32), ("i", I64)],
     [("k", np.array([4], np.int64))])
case("topk_smallest_axis0",
     [("TopK", ["x", "k"], ["v", "i"], {"axis": 0, "largest": 0})],
     [("x", np.round(rng.standard_normal((7, 3)), 1).astype(np.float32))],
     [("v", F), ("i", I64)], [("k", np.array([3], np.int64))])
case("cumsum_exclusive_reverse",
     [("CumSum", ["x", "a"], ["y"], {"exclusive": 1, "reverse": 1})],
     [("x", rng.integers(-5, 5, (6,)).astype(np.int64))], [("y", I64)],
     [("a", np.array(0, np.int32))])
case("onehot_axis1",
     [("OneHot", ["i", "d", "v"], ["y"], {"axis": 1})],
     [("i", np.array([[1, -1], [9, 4], [-12, -5]], np.int64))],
     [("y", F)],
     [("d", np.array(5, np.int64)), ("v", np.array([-2.0, 3.5], np.float32))])
case("trilu_upper_k",
     [("Trilu", ["x", "k"], ["y"], {"upper": 1})],
     [("x", rng.standard_normal((2, 3, 5)).astype(np.float32))], [("y", F)],
     [("k", np.array(-1, np.int64))])
case("eyelike",
     [("EyeLike", ["x"], ["y"], {"k": -1, "dtype": TensorProto.INT32})],
     [("x", x10x8[:4, :5].copy())], [("y", I32)])
case("reverse_sequence",
     [("ReverseSequence", ["x", "l"], ["y"], {"batch_axis": 0, "time_axis": 1})],
     [("x", rng.standard_normal((3, 4, 2)).astype(np.float32))], [("y", F)],
     [("l", np.array([4, 1, 2], np.int64))])
case("depth_to_space_dcr",
     [("DepthToSpace", ["x"], ["y"], {"blocksize": 2, "mode": "DCR"})],
     [("x", rng.standard_normal((2, 8, 2, 3)).astype(np.float32))], [("y", F)])
case("space_to_depth",
     [("SpaceToDepth", ["x"], ["y"], {"blocksize": 2})],
     [("x", rng.standard_normal((1, 3, 4, 6)).astype(np.float32))], [("y", F)])
case("constant_of_shape_u8",
     [("Shape", ["x"], ["s"], {}),
      ("ConstantOfShape", ["s"], ["c"], {"value": numpy_helper.from_array(np.array([7], np.uint8))}),
      ("Add", ["c", "x"], ["y"], {})],
     [("x", rng.integers(0, 100, (2, 3)).astype(np.uint8))], [("y", U8)])


def main():
    kiln_compile, workdir = sys.argv[1], sys.argv[2]
    os.makedirs(workdir, exist_ok=True)
    failures = 0
    for (name, node_specs, inputs, outputs, initializers, exact, opset,
         aliases) in CASES:
        model = make_model(name, node_specs, inputs, outputs, initializers,
                           opset)
        expected = run_ort(model, dict(inputs))
        actual, error = run_kiln(kiln_compile, workdir, name, model, inputs,
                                 expected, aliases)
        if error:
            print(f"{name}: FAILED to compile: {error[0]}")
            failures += 1
            continue
        ok = all(a.shape == e.shape and a.dtype == e.dtype and
                 (np.array_equal(a, e) if exact else np.allclose(a, e))
                 for a, e in zip(actual, expected))
        if ok:
            print(f"{name}: ok")
        else:
            failures += 1
            print(f"{name}: MISMATCH")
            for a, e in zip(actual, expected):
                print("  kiln:", a.ravel()[:16], "\n  ort: ", e.ravel()[:16])
    print(f"{len(CASES) - failures} of {len(CASES)} match")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
