#!/usr/bin/env python3
#===- test/E2E/conversions.py - Every float conversion on every CPU level --===#
#
# Casts between float64, float32, float16 and bfloat16, every ordered pair,
# compiled for each CPU level (`--cpu=x86-64`: SSE2 only, no F16C, no
# AVX512-BF16, so LLVM calls compiler-rt builtins such as __truncsfbf2;
# `x86-64-v3`: AVX2 and F16C; `native`) and run here. Each output is
#
#   out_<src>_<dst> = float64(Cast(Cast(x, src), dst))
#
# for one float64 input x holding zeros, subnormals of every type, exact
# halfway cases (ties to even), the largest finite values and the ones just
# past them, overflow to inf, inf and NaN, and log-uniform random values.
# The reference is exact and written here, not numpy's casts: for float16
# and bfloat16 the nearest of all 65536 values (ties to the even bit
# pattern, overflow to inf at the halfway point past the largest finite),
# for float32 IEEE rounding of the float64 value. Every value must match bit
# for bit (NaN for NaN). Exit 1 on any mismatch or failure.
#
# Then the weights `--precision=bf16` converts at compile time: y = x * W
# with x = 1 and W a float32 initializer of the same values, once as a
# large tensor (the bulk bit-rounding path of kiln-convert-precision) and
# once as a small one (element by element); y must be the exact bfloat16
# rounding of W, bit for bit.
#
# Compiled and run in-process through the kiln package
# (PYTHONPATH=<build>/python).
#
#   conversions.py --workdir DIR [--cpus x86-64,x86-64-v3,native]
#
#===----------------------------------------------------------------------===#

import argparse
import os
import sys

import numpy as np
import onnx
import onnx.numpy_helper
from onnx import TensorProto, helper

from kiln_e2e import E2EError, compile_and_run

TYPES = {"f64": TensorProto.DOUBLE, "f32": TensorProto.FLOAT,
         "f16": TensorProto.FLOAT16, "bf16": TensorProto.BFLOAT16}
CPUS = "x86-64,x86-64-v3,native"


def all_values(name):
    """The float64 values of every bit pattern of a 16-bit type."""
    bits = np.arange(1 << 16, dtype=np.uint32)
    with np.errstate(invalid="ignore"):  # the NaN patterns
        if name == "f16":
            return bits.astype(np.uint16).view(np.float16).astype(np.float64)
        return (bits << 16).view(np.float32).astype(np.float64)


def round_to_16bit(x, name):
    """x (float64) rounded to the nearest float16/bfloat16, ties to even."""
    values = all_values(name)
    patterns = np.arange(1 << 16)
    positive = (patterns < 0x8000) & np.isfinite(values)
    table, table_bits = values[positive], patterns[positive]
    order = np.argsort(table)
    table, table_bits = table[order], table_bits[order]
    largest = table[-1]
    # The next value the exponent range would allow is 2 * 2^emax: halfway
    # to it from the largest finite value rounds to inf (odd mantissa).
    emax = np.floor(np.log2(largest))
    overflow = (largest + 2.0 ** (emax + 1)) / 2.0
    out = np.empty_like(x)
    for i, v in enumerate(x):
        if np.isnan(v):
            out[i] = np.nan
            continue
        a = abs(v)
        if a >= overflow:
            r = np.inf
        else:
            hi = int(np.searchsorted(table, a))
            hi = min(hi, len(table) - 1)
            lo = max(hi - 1, 0)
            if table[hi] == a:
                r = table[hi]
            else:
                dlo, dhi = a - table[lo], table[hi] - a
                if dlo < dhi or (dlo == dhi and table_bits[lo] % 2 == 0):
                    r = table[lo]
                else:
                    r = table[hi]
        out[i] = np.copysign(r, v)
    return out


def round_to(x, name):
    if name == "f64":
        return x.copy()
    if name == "f32":
        with np.errstate(over="ignore"):
            return x.astype(np.float32).astype(np.float64)
    return round_to_16bit(x, name)


def test_values():
    f16 = np.finfo(np.float16)
    specials = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0,
                # float16: largest, just under / at / past the overflow point,
                # subnormals, the smallest subnormal and half of it (a tie).
                65504.0, 65519.0, 65520.0, 65536.0, -65520.0,
                float(f16.smallest_subnormal), 2.0 ** -25, 3 * 2.0 ** -26,
                2.0 ** -15, 6.1e-5,
                # bfloat16: largest, the overflow point, a subnormal, ties.
                3.3895313892515355e38, 3.3961775292304135e38, 3.4e38,
                2.0 ** -130, 2.0 ** -133, 1.0 + 2.0 ** -8, 1.0 + 3 * 2.0 ** -8,
                1.0 + 2.0 ** -8 + 2.0 ** -30,
                # float32: overflow from float64, the subnormal range, a tie.
                1e39, -1e39, 1e-40, 1e-45, 1.0 + 2.0 ** -24,
                1.0 + 3 * 2.0 ** -24, 2.0 ** -150, 3 * 2.0 ** -150,
                # float16 ties: 1 + 2^-11 (to 1), 1 + 3 * 2^-11 (up).
                1.0 + 2.0 ** -11, 1.0 + 3 * 2.0 ** -11, 2049.0, 2051.0]
    rng = np.random.default_rng(7)
    random = np.exp(rng.uniform(-110.0, 95.0, 2000)) * rng.choice([-1, 1],
                                                                   2000)
    # Values exactly halfway between neighbouring float16 and bfloat16
    # numbers, and one float64 ulp on either side of them.
    ties = []
    for name in ("f16", "bf16"):
        v = all_values(name)
        v = np.sort(v[np.isfinite(v) & (v > 0)])
        mids = (v[:-1] + v[1:]) / 2
        pick = mids[rng.choice(len(mids), 300, replace=False)]
        ties += [pick, np.nextafter(pick, 0), np.nextafter(pick, np.inf)]
    x = np.concatenate([np.array(specials), random] + ties)
    # A length no vector width divides: the remainder loops run too.
    return np.concatenate([x, -x[:37]]).astype(np.float64)


def build_model(n):
    nodes, outputs = [], []
    for src in TYPES:
        nodes.append(helper.make_node("Cast", ["x"], [f"as_{src}"],
                                      to=TYPES[src], name=f"/to_{src}"))
        for dst in TYPES:
            if dst == src:
                continue
            mid, out = f"{src}_{dst}", f"out_{src}_{dst}"
            nodes.append(helper.make_node("Cast", [f"as_{src}"], [mid],
                                          to=TYPES[dst],
                                          name=f"/{src}_to_{dst}"))
            nodes.append(helper.make_node("Cast", [mid], [out],
                                          to=TensorProto.DOUBLE,
                                          name=f"/{src}_{dst}_to_f64"))
            outputs.append(helper.make_tensor_value_info(
                out, TensorProto.DOUBLE, [n]))
    graph = helper.make_graph(
        nodes, "conversions",
        [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [n])],
        outputs)
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def build_weight_model(w):
    """y_<k> = x_<k> * W_<k> for each float32 weight in `w`."""
    nodes, inputs, outputs, inits = [], [], [], []
    for k, values in enumerate(w):
        n = len(values)
        inits.append(onnx.numpy_helper.from_array(values, f"w{k}"))
        nodes.append(helper.make_node("Mul", [f"x{k}", f"w{k}"], [f"y{k}"],
                                      name=f"/mul{k}"))
        inputs.append(helper.make_tensor_value_info(f"x{k}",
                                                    TensorProto.FLOAT, [n]))
        outputs.append(helper.make_tensor_value_info(f"y{k}",
                                                     TensorProto.FLOAT, [n]))
    graph = helper.make_graph(nodes, "weights", inputs, outputs, inits)
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def check_weight_conversion(x, workdir):
    """The compile-time float32 -> bfloat16 conversion of weights: a large
    one (over 4096 elements: the bulk path) and a small one. Returns the
    number of failures."""
    with np.errstate(over="ignore"):
        w32 = x.astype(np.float32)
    weights = [np.concatenate([w32, w32[::-1]]), w32[:1000]]
    assert len(weights[0]) >= 4096
    model = build_weight_model(weights)
    path = os.path.join(workdir, "weights.onnx")
    onnx.save(model, path)
    try:
        outputs = compile_and_run(path, [np.ones_like(w) for w in weights],
                                  precision="bf16")
    except E2EError as e:
        print(f"FAIL weights --precision=bf16: {str(e)[:800]}")
        return 1
    failures = 0
    for k, (w, got) in enumerate(zip(weights, outputs)):
        ref = round_to_16bit(w.astype(np.float64), "bf16")
        got = got.astype(np.float64)
        same = (got.view(np.uint64) == ref.view(np.uint64)) | (
            np.isnan(got) & np.isnan(ref))
        if not same.all():
            j = int(np.flatnonzero(~same)[0])
            failures += 1
            print(f"FAIL weights --precision=bf16, w{k} ({len(w)} values): "
                  f"{int((~same).sum())} differ, first w = {w[j]!r}: got "
                  f"{got[j]!r}, want {ref[j]!r}")
        else:
            print(f"PASS weights --precision=bf16, w{k}: {len(w)} values "
                  f"bit-exact")
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--cpus", default=CPUS)
    args = parser.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    x = test_values()
    model = build_model(len(x))
    path = os.path.join(args.workdir, "conversions.onnx")
    onnx.save(model, path)
    names = [o.name for o in model.graph.output]
    want = {}
    for name in names:
        _, src, dst = name.split("_")
        want[name] = round_to(round_to(x, src), dst)

    failures = 0
    for cpu in args.cpus.split(","):
        try:
            outputs = compile_and_run(path, [x], opt_level=3, cpu=cpu)
        except E2EError as e:
            print(f"FAIL --cpu={cpu}: {str(e)[:800]}")
            failures += 1
            continue
        bad_pairs = []
        for i, name in enumerate(names):
            got, ref = outputs[i], want[name]
            same = (got.view(np.uint64) == ref.view(np.uint64)) | (
                np.isnan(got) & np.isnan(ref))
            if not same.all():
                j = int(np.flatnonzero(~same)[0])
                bad_pairs.append(
                    f"{name}: {int((~same).sum())} of {len(x)} differ, "
                    f"first x = {x[j]!r}: got {got[j]!r}, want {ref[j]!r}")
        if bad_pairs:
            failures += 1
            print(f"FAIL --cpu={cpu}:")
            for line in bad_pairs:
                print("  " + line)
        else:
            print(f"PASS --cpu={cpu}: {len(names)} conversions x "
                  f"{len(x)} values bit-exact")
    failures += check_weight_conversion(x, args.workdir)
    print(f"conversions: {failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
