#!/usr/bin/env python3
# One-node models Cast(double -> bfloat16) and Cast(double -> float16) with
# inputs around the half types' rounding ties, and their correctly rounded
# outputs (nearest, ties to even) computed exactly with fractions: a
# double-rounding f64 -> f32 -> half conversion gets the "just above a tie"
# cases wrong, and a plain fptrunc needs a libcall the artifact lacks.
# Writes DIR/<case>/model.onnx and test_data_set_0/{input_0,output_0}.pb.
import math
import os
import sys
from fractions import Fraction

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]


def round_bits(x, mant_bits, min_exp):
    """x (a float) rounded to a binary format with mant_bits explicit
    significand bits (ties to even), as a float; normal range only."""
    if x == 0 or math.isnan(x) or math.isinf(x):
        return x
    m, e = math.frexp(abs(x))            # abs(x) = m * 2**e, m in [0.5, 1)
    assert e - 1 >= min_exp
    scale = Fraction(2) ** (e - 1 - mant_bits)
    q = Fraction(abs(x)) / scale         # in [2**mant_bits, 2**(mant_bits+1))
    lo = math.floor(q)
    rest = q - lo
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and lo % 2 == 1):
        lo += 1
    return math.copysign(float(lo * scale), x)


def inputs():
    xs = [0.0, -0.0, 1.0, -2.5, 3.14159265358979, 1e-3, -65504.0, 1e30]
    for mant in (7, 10):
        ulp = 2.0 ** -mant
        for base in (1.0, -1.0, 1.5, 1000.0 / 1024):
            tie = base + math.copysign(ulp / 2, base)
            xs += [tie, tie + math.copysign(2.0 ** -40, base),
                   tie - math.copysign(2.0 ** -40, base)]
            odd_tie = base + math.copysign(ulp * 1.5, base)
            xs += [odd_tie, odd_tie + 2.0 ** -40, odd_tie - 2.0 ** -40]
    return np.array(xs, dtype=np.float64)


def write(case, to, expected_bits):
    d = os.path.join(out, case)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    x = inputs()
    node = helper.make_node("Cast", ["x"], ["y"], to=to)
    graph = helper.make_graph(
        [node], case,
        [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [len(x)])],
        [helper.make_tensor_value_info("y", to, [len(x)])])
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(d, "model.onnx"))
    with open(os.path.join(d, "test_data_set_0", "input_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(x, "x").SerializeToString())
    y = TensorProto()
    y.name = "y"
    y.data_type = to
    y.dims.append(len(x))
    y.raw_data = np.array(expected_bits, dtype="<u2").tobytes()
    with open(os.path.join(d, "test_data_set_0", "output_0.pb"), "wb") as f:
        f.write(y.SerializeToString())
    print(case)


def bf16_bits(v):
    b = np.array([v], dtype=np.float32).view(np.uint32)[0]
    assert b & 0xFFFF == 0 or math.isinf(v)
    return int(b >> 16)


x = inputs()
write("cast_f64_to_bf16", TensorProto.BFLOAT16,
      [bf16_bits(round_bits(v, 7, -126)) for v in x])
write("cast_f64_to_f16", TensorProto.FLOAT16,
      [int(np.array([round_bits(v, 10, -14) if abs(v) < 65520 else
                     math.copysign(math.inf, v)], dtype=np.float16)
           .view(np.uint16)[0]) for v in x])
