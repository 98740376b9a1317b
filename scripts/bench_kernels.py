#!/usr/bin/env python3
"""Kiln's generated kernels against ONNX Runtime (MLAS) on the hot ops.

Builds small ONNX models (a GEMM, a batched GEMM as in attention, a 3x3
NCHW convolution), compiles each with kiln.ir(model, "so",
flags=["--embed-weights"]) (kernels="codegen" and "library"), and times the shared objects
in-process through kiln_entry against onnxruntime, interleaved, with the same
thread count. Prints the median latency of each and the ratio to ONNX Runtime.

Usage: .venv/bin/python scripts/bench_kernels.py [--threads 2] [--reps 30] [--only NAME] [--kernels codegen,library]
"""
import argparse
import ctypes
import os
import statistics
import sys
import tempfile
import time

# Kiln's OpenMP threads and ONNX Runtime's pool share the cores: an idle
# OpenMP team spins 200 ms by default (KMP_BLOCKTIME), which would steal the
# cores from the next ONNX Runtime sample. 1 ms keeps back-to-back calls of
# the same model warm and frees the cores soon after a switch.
os.environ.setdefault("KMP_BLOCKTIME", "1")

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def matmul_model(m, k, n):
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(
        rng.standard_normal((k, n)).astype(np.float32), "W")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["X", "W"], ["Y"])], "matmul",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [m, k])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [m, n])], [w])
    return graph, {"X": (m, k)}


def batch_matmul_model(b, m, k, n):
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["A", "B"], ["Y"])], "bmm",
        [helper.make_tensor_value_info("A", TensorProto.FLOAT, [b, m, k]),
         helper.make_tensor_value_info("B", TensorProto.FLOAT, [b, k, n])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [b, m, n])])
    return graph, {"A": (b, m, k), "B": (b, k, n)}


def conv_model(n, c, f, h, w):
    rng = np.random.default_rng(0)
    weight = numpy_helper.from_array(
        rng.standard_normal((f, c, 3, 3)).astype(np.float32) * 0.1, "Wc")
    bias = numpy_helper.from_array(
        rng.standard_normal((f,)).astype(np.float32), "Bc")
    graph = helper.make_graph(
        [helper.make_node("Conv", ["X", "Wc", "Bc"], ["Y"],
                          kernel_shape=[3, 3], pads=[1, 1, 1, 1])], "conv",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [n, c, h, w])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [n, f, h, w])],
        [weight, bias])
    return graph, {"X": (n, c, h, w)}


MODELS = {
    "matmul_128x256x1024": lambda: matmul_model(128, 256, 1024),
    "matmul_128x256x256": lambda: matmul_model(128, 256, 256),
    "bmm_8x64x64x64": lambda: batch_matmul_model(8, 64, 64, 64),
    "conv3x3_32to32_32x32": lambda: conv_model(1, 32, 32, 32, 32),
    "conv3x3_64to64_32x32": lambda: conv_model(1, 64, 64, 32, 32),
}


def save(graph, path):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return model


class KilnModel:
    def __init__(self, so_path, threads):
        self.lib = ctypes.CDLL(os.path.abspath(so_path))
        self.lib.kiln_abi_set_num_threads(ctypes.c_int32(threads))

    def bind(self, inputs, outputs):
        self.keep = inputs + outputs
        self.buffers = (ctypes.c_void_p * len(self.keep))(
            *[x.ctypes.data for x in self.keep])

    def run(self):
        self.lib.kiln_entry(self.buffers)


def time_once(fn, iters):
    start = time.perf_counter()
    for _ in range(iters):
        fn()
    return (time.perf_counter() - start) / iters


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--only", default="")
    parser.add_argument("--kernels", default="codegen,library")
    args = parser.parse_args()

    import onnxruntime as ort
    import kiln
    kernels = [k for k in args.kernels.split(",") if k]
    tmp = tempfile.mkdtemp(prefix="kiln-bench-")
    rows = []
    for name, build in MODELS.items():
        if args.only and args.only not in name:
            continue
        graph, shapes = build()
        path = os.path.join(tmp, name + ".onnx")
        save(graph, path)
        rng = np.random.default_rng(1)
        feeds = {k: rng.standard_normal(s).astype(np.float32)
                 for k, s in shapes.items()}
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = args.threads
        opts.inter_op_num_threads = 1
        sess = ort.InferenceSession(path, opts,
                                    providers=["CPUExecutionProvider"])
        expected = sess.run(None, feeds)
        runners = {"ort": lambda: sess.run(None, feeds)}
        for kind in kernels:
            so = os.path.join(tmp, f"{name}.{kind}.so")
            try:
                code = kiln.ir(path, "so", kernels=kind,
                               flags=["--embed-weights"])
            except kiln.CompileError as e:
                print(f"{name} {kind}: compile failed:\n{e}", file=sys.stderr)
                continue
            with open(so, "wb") as f:
                f.write(code)
            model = KilnModel(so, args.threads)
            outputs = [np.empty_like(e) for e in expected]
            model.bind([np.ascontiguousarray(feeds[i.name])
                        for i in sess.get_inputs()], outputs)
            model.run()
            for got, want in zip(outputs, expected):
                if not np.allclose(got, want, rtol=1e-3, atol=1e-3):
                    print(f"{name} {kind}: WRONG RESULT, max abs diff "
                          f"{np.abs(got - want).max()}", file=sys.stderr)
            runners[kind] = model.run
        # Calibrate so that one sample takes about 20 ms, then interleave.
        iters = {}
        for key, fn in runners.items():
            fn()
            t = time_once(fn, 3)
            iters[key] = max(1, int(0.02 / max(t, 1e-7)))
        samples = {key: [] for key in runners}
        for _ in range(args.reps):
            for key, fn in runners.items():
                samples[key].append(time_once(fn, iters[key]))
        med = {key: statistics.median(v) for key, v in samples.items()}
        rows.append((name, med))
    print(f"{args.threads} threads, median of {args.reps} samples")
    print(f"{'model':24s} {'ort us':>9s}" +
          "".join(f" {k + ' us':>12s} {'x ort':>6s}" for k in kernels))
    for name, med in rows:
        line = f"{name:24s} {med['ort'] * 1e6:9.1f}"
        for k in kernels:
            if k in med:
                line += f" {med[k] * 1e6:12.1f} {med[k] / med['ort']:6.2f}"
            else:
                line += f" {'-':>12s} {'-':>6s}"
        print(line)


if __name__ == "__main__":
    sys.exit(main())
