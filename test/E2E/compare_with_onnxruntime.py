#!/usr/bin/env python3
#===- test/E2E/compare_with_onnxruntime.py - Run a Kiln export in ORT ------===#
#
# Runs an ONNX model that kiln-compile --emit=onnx wrote (the graph after
# Kiln's passes) with ONNX Runtime on a backend-test style data set
# (input_N.pb) and compares its outputs with the data set's expected
# outputs (output_N.pb, computed from the original model). Prints one line
# per output with the max absolute and relative error and PASS/FAIL; exits 1
# on any mismatch.
#
#   compare_with_onnxruntime.py MODEL.onnx DATA_SET_DIR [--rtol R] [--atol A]
#
#===----------------------------------------------------------------------===#

import argparse
import glob
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper


def load_tensor_files(folder, prefix):
    """The TensorProtos `<prefix>_N.pb` of a backend-test data set, by N."""
    files = sorted(glob.glob(os.path.join(folder, f"{prefix}_*.pb")),
                   key=lambda p: int(p.rsplit("_", 1)[1].split(".")[0]))
    tensors = []
    for path in files:
        proto = onnx.TensorProto()
        with open(path, "rb") as f:
            proto.ParseFromString(f.read())
        tensors.append(numpy_helper.to_array(proto))
    return tensors


def session(path, threads=0):
    """An ONNX Runtime CPU session that runs the graph as written: ORT's own
    fusions would hide what Kiln's passes did."""
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.intra_op_num_threads = threads
    options.log_severity_level = 4
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def run(sess, inputs):
    feed = {i.name: x for i, x in zip(sess.get_inputs(), inputs)}
    return sess.run(None, feed)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("data_set")
    parser.add_argument("--rtol", type=float, default=1e-4)
    parser.add_argument("--atol", type=float, default=1e-5)
    args = parser.parse_args()

    inputs = load_tensor_files(args.data_set, "input")
    expected = load_tensor_files(args.data_set, "output")
    sess = session(args.model)
    outputs = run(sess, inputs)
    if len(outputs) != len(expected):
        print(f"FAIL: {len(outputs)} outputs, expected {len(expected)}")
        return 1
    failed = False
    for info, got, want in zip(sess.get_outputs(), outputs, expected):
        if got.shape != want.shape or got.dtype != want.dtype:
            print(f"{info.name}: FAIL shape/dtype {got.shape} {got.dtype}, "
                  f"expected {want.shape} {want.dtype}")
            failed = True
            continue
        diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
        rel = diff / np.maximum(np.abs(want.astype(np.float64)), 1e-30)
        ok = np.allclose(got, want, rtol=args.rtol, atol=args.atol)
        print(f"{info.name}: {'PASS' if ok else 'FAIL'} max_abs={diff.max():.3g} "
              f"max_rel={rel.max():.3g} (rtol {args.rtol}, atol {args.atol})")
        failed |= not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
