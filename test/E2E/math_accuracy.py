#!/usr/bin/env python3
#===- test/E2E/math_accuracy.py - Kiln's exp/tanh/erf/sigmoid vs float64 ---===#
#
# The CPU backend computes f32 exp, tanh and erf with polynomial
# approximations (kiln-cpu-approximate-math), not libm. This checks them, and
# Sigmoid/Softmax built on exp, on 65536 points over [-100, 100] plus the
# special values, against float64 numpy rounded to f32:
#   - at most MAX_ULP units in the last place where the result is a normal
#     f32 (the approximations are within a few ulp; libm is within 1);
#   - absolute error at most 1e-37 where the result is tiny (the f32
#     underflow range, where ulp is meaningless);
#   - inf, -inf, NaN, overflow (exp(89) = inf) and underflow (exp(-104) = 0)
#     exactly as float64 rounded to f32 (NaN for NaN).
#
# Compiled for each CPU level (--cpu=x86-64: SSE2, no FMA; x86-64-v3: AVX2
# and FMA; native), all run here, in-process through the kiln package
# (PYTHONPATH=<build>/python).
#
#   math_accuracy.py --workdir DIR [--cpus x86-64,x86-64-v3,native]
#
#===----------------------------------------------------------------------===#

import argparse
import math
import os
import sys

import numpy as np
import onnx
from onnx import helper

from kiln_e2e import E2EError, compile_and_run

MAX_ULP = 8
N = 1 << 16
OPS = ("Exp", "Tanh", "Erf", "Sigmoid")


def reference(op, x):
    x = x.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        if op == "Exp":
            return np.exp(x)
        if op == "Tanh":
            return np.tanh(x)
        if op == "Erf":
            return np.array([math.erf(v) if not np.isnan(v) else np.nan
                             for v in x])
        if op == "Sigmoid":
            return 1.0 / (1.0 + np.exp(-x))
    raise ValueError(op)


def check(path, x, cpu):
    """Compiles and runs the model for `cpu`; the number of failed ops."""
    try:
        outputs = compile_and_run(path, [x], opt_level=2, cpu=cpu)
    except E2EError as e:
        print(e)
        return 1

    failures = 0
    xs = x.reshape(256, N // 256).astype(np.float64)
    # Rows holding inf or NaN are NaN in float64 too.
    with np.errstate(invalid="ignore"):
        softmax_ref = np.exp(xs - xs.max(axis=-1, keepdims=True))
        softmax_ref /= softmax_ref.sum(axis=-1, keepdims=True)
    refs = [reference(op, x) for op in OPS] + [softmax_ref.reshape(-1)]
    for n, (name, ref) in enumerate(zip(list(OPS) + ["Softmax"], refs)):
        got = outputs[n].reshape(-1)
        with np.errstate(over="ignore", invalid="ignore"):
            want = ref.astype(np.float32)
        nan = np.isnan(want)
        bad = np.zeros(len(want), bool)
        bad |= nan != np.isnan(got)
        inf = np.isinf(want)
        bad |= inf & (got != want)
        normal = ~nan & ~inf & (np.abs(want) >= np.finfo(np.float32).tiny)
        ulp = np.zeros(len(want))
        ulp[normal] = (np.abs(got[normal].astype(np.float64) -
                              want[normal].astype(np.float64)) /
                       np.spacing(np.abs(want[normal])).astype(np.float64))
        bad |= normal & (ulp > MAX_ULP)
        tiny = ~nan & ~inf & ~normal
        with np.errstate(invalid="ignore"):
            bad |= tiny & (np.abs(got.astype(np.float64) - want) > 1e-37)
        print(f"{name}: max {ulp.max():.0f} ulp, {int(bad.sum())} bad of "
              f"{len(want)}")
        for i in np.flatnonzero(bad)[:5]:
            print(f"  x = {x.reshape(-1)[i % N]!r}: got {got[i]!r}, "
                  f"want {want[i]!r}")
        failures += int(bad.any())
    return failures


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--cpus", default="x86-64,x86-64-v3,native")
    args = parser.parse_args()
    os.makedirs(args.workdir, exist_ok=True)

    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 88.7, 89.0,
                        -87.0, -104.0, 1e-30, -1e-30, 9.0, -9.0, 4.0],
                       np.float32)
    x = np.concatenate([np.linspace(-100, 100, N - len(special),
                                    dtype=np.float32), special])
    nodes = [helper.make_node(op, ["x"], [op.lower()], name=f"/{op}")
             for op in OPS]
    nodes.append(helper.make_node("Softmax", ["x2"], ["softmax"], axis=-1,
                                  name="/Softmax"))
    nodes.insert(0, helper.make_node("Reshape", ["x", "shape"], ["x2"],
                                     name="/Reshape"))
    shape = onnx.numpy_helper.from_array(np.array([256, N // 256], np.int64),
                                         "shape")
    outputs = [helper.make_tensor_value_info(op.lower(), 1, [N]) for op in OPS]
    outputs.append(helper.make_tensor_value_info("softmax", 1,
                                                 [256, N // 256]))
    graph = helper.make_graph(nodes, "math",
                              [helper.make_tensor_value_info("x", 1, [N])],
                              outputs, [shape])
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = os.path.join(args.workdir, "math.onnx")
    onnx.save(model, path)
    failures = 0
    for cpu in args.cpus.split(","):
        print(f"--cpu={cpu}")
        failures += check(path, x, cpu)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
