#!/usr/bin/env python3
#===- test/E2E/seed_variants.py - The seed's 2x2 grid through Kiln ---------===#
#
# Generates the seed's model variants at the small preset (batch 2)
# with models/generate_seed_variants.py: softmax and linear attention, each at
# fp32, fp16 and int8 (QDQ). For each variant it
#
#   * checks the graph is the variant it claims (fp16 initializers; int8
#     weights with per-channel DequantizeLinear; QDQ pairs on activations),
#     and that each int8 graph quantizes the same tensors with the same
#     zero points, scales (to float32 rounding) and int8 weights as
#     onnxruntime.quantization.quantize_static does for its fp32 model,
#   * compiles it in-process through the kiln package (kiln.compile with
#     kiln-compile's flags, PYTHONPATH=<build>/python) at the default -O2
#     (codegen kernels) and at -O3 --kernels=library, runs it with
#     kiln.InferenceSession (2 threads) on the generated token ids, and
#     compares the logits with the numpy reference of the same precision
#     (models/seed_reference.py),
#   * runs it with onnxruntime and compares ORT with the same reference,
#   * compiles the Standard and Flash variants generated with
#     --dynamic-dims with --input-shapes, same gates,
#   * checks the fp16/int8 variant is measurably different from its fp32
#     baseline (so a generator that silently wrote fp32 fails),
#
# with the gates of generate_seed_variants.TOLERANCES (max |error| relative
# to max |logit|, cosine similarity, top-1 agreement; models/README.md).
# Prints one line per check and exits 1 on any failure.
#
#   seed_variants.py --workdir DIR
#
#===----------------------------------------------------------------------===#

import argparse
import json
import os
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto

from kiln_e2e import E2EError, compile_artifact, run_artifact

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "models"))
import generate_seed_variants as gen  # noqa: E402
import seed_reference as ref  # noqa: E402

CONFIGS = [[], ["-O3", "--kernels=library"]]


def structure_errors(model, precision):
    inits = {t.name: t for t in model.graph.initializer}
    ops = [n.op_type for n in model.graph.node]
    errors = []
    matmul_weights = [n.input[1] for n in model.graph.node
                      if n.op_type == "MatMul" and n.input[1] in inits]
    if precision == "fp16":
        if not matmul_weights or any(inits[w].data_type != TensorProto.FLOAT16
                                     for w in matmul_weights):
            errors.append("MatMul weights are not float16 initializers")
    if precision == "int8":
        dq_axis = [n for n in model.graph.node
                   if n.op_type == "DequantizeLinear" and
                   inits.get(n.input[0]) is not None and
                   inits[n.input[0]].data_type == TensorProto.INT8]
        if matmul_weights or not dq_axis or any(
                a.i != 1 for n in dq_axis for a in n.attribute
                if a.name == "axis"):
            errors.append("MatMul weights are not int8 + DequantizeLinear "
                          "(axis 1)")
        if ops.count("QuantizeLinear") < 5:
            errors.append("activations have no QuantizeLinear pairs")
    return errors


def ptq_differences(workdir, manifest, attention):
    """How <attention>_int8.onnx differs from what onnxruntime's
    quantize_static (QDQ, per-channel, MatMul only, uint8 activations, int8
    weights) writes for <attention>_fp32.onnx calibrated on the same
    sequences: [] when the quantized tensors, the int8 weights and the zero
    points are the same and the scales agree to float32 rounding (ONNX
    Runtime calibrates in float32, the generator in float64)."""
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat,
                                          QuantType, quantize_static)
    cfg = manifest["config"]
    ids = gen.token_ids(cfg, manifest["seed"] + 2, cfg["calib_batches"])
    batch = cfg["batch"]

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.feeds = iter({"input_ids": ids[i:i + batch]}
                              for i in range(0, len(ids), batch))

        def get_next(self):
            return next(self.feeds, None)

    ours_path = os.path.join(workdir, f"{attention}_int8.onnx")
    ort_path = os.path.join(workdir, f"{attention}_int8.ptq.onnx")
    quantize_static(os.path.join(workdir, f"{attention}_fp32.onnx"),
                    ort_path, Reader(), quant_format=QuantFormat.QDQ,
                    per_channel=True, op_types_to_quantize=["MatMul"],
                    activation_type=QuantType.QUInt8,
                    weight_type=QuantType.QInt8)

    def qdq(path):
        model = onnx.load(path)
        inits = {t.name: onnx.numpy_helper.to_array(t)
                 for t in model.graph.initializer}
        # The tensor each QuantizeLinear reads, named by its producer's
        # output (ONNX Runtime renames the graph output's producer).
        last = [n for n in model.graph.node if n.op_type == "MatMul"][-1]
        acts = {}
        for n in model.graph.node:
            if n.op_type == "QuantizeLinear":
                key = "logits" if n.input[0] == last.output[0] else n.input[0]
                acts[key] = (float(inits[n.input[1]]), int(inits[n.input[2]]))
        weights = {k: v for k, v in inits.items() if k.endswith("_quantized")}
        return acts, weights

    ours, ort_ = qdq(ours_path), qdq(ort_path)
    errors = []
    if set(ours[0]) != set(ort_[0]):
        errors.append(f"quantized tensors differ: only ours "
                      f"{sorted(set(ours[0]) - set(ort_[0]))[:3]}, only "
                      f"ORT's {sorted(set(ort_[0]) - set(ours[0]))[:3]}")
    for key in set(ours[0]) & set(ort_[0]):
        (s1, z1), (s2, z2) = ours[0][key], ort_[0][key]
        if z1 != z2 or abs(s1 - s2) > 1e-5 * s2:
            errors.append(f"{key}: scale/zero point {s1:.7g}/{z1}, "
                          f"ORT {s2:.7g}/{z2}")
    if set(ours[1]) != set(ort_[1]) or any(
            not np.array_equal(ours[1][k], ort_[1][k]) for k in ours[1]):
        errors.append("the int8 weights differ")
    return errors[:4], len(ours[0]), len(ours[1])


def run_kiln(onnx_path, ids, flags):
    """The logits of `onnx_path` compiled with these kiln-compile flags
    (opt_level=None: no -O but theirs) and run on the token ids `ids` with 2
    threads: (logits, error, compile s, run s)."""
    try:
        start = time.time()
        artifact = compile_artifact(onnx_path, opt_level=None, flags=flags)
        compile_s = time.time() - start
        start = time.time()
        got = run_artifact(artifact, [ids], threads=2)[0]
    except E2EError as e:
        return None, str(e)[:400], 0, 0
    return got, None, compile_s, time.time() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workdir", required=True)
    args = parser.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    gen.main(["--out", args.workdir, "--preset", "small", "--batch", "2"])
    with open(os.path.join(args.workdir, "manifest.json")) as f:
        manifest = json.load(f)

    import onnxruntime  # noqa: F401  (fail early when it is missing)
    failures = 0
    refs = {}

    def report(ok, tag, text):
        nonlocal failures
        print(f"{'PASS' if ok else 'FAIL'} {tag}: {text}")
        failures += 0 if ok else 1

    for v in manifest["variants"]:
        name, precision = v["name"], v["precision"]
        path = os.path.join(args.workdir, v["file"])
        want = np.load(os.path.join(args.workdir, v["reference"]))
        refs[name] = want
        ref_max = float(np.abs(want).max())
        tol = v["tolerance"]

        errors = structure_errors(onnx.load(path), precision)
        report(not errors, f"{name} graph", "; ".join(errors) or
               f"{v['nodes']} nodes, {precision} as specified")

        ids = np.load(os.path.join(args.workdir, v["data"], "input_0.npy"))
        q = ref.quality(gen.run_onnxruntime(path, ids), want)
        failed = gen.within(q, tol, ref_max)
        report(not failed, f"{name} onnxruntime vs numpy", "; ".join(failed)
               or f"max abs {q['max_abs_error']:.3g}, cosine "
               f"{q['cosine']:.7f}, top-1 {q['top1_agreement']:.4f}")

        for flags in CONFIGS:
            tag = f"{name} kiln {' '.join(flags) or '-O2'}"
            got, error, compile_s, run_s = run_kiln(path, ids, flags)
            if error:
                report(False, tag, error)
                continue
            if got.shape != want.shape:
                report(False, tag, f"shape {got.shape}, numpy {want.shape}")
                continue
            q = ref.quality(got, want)
            failed = gen.within(q, tol, ref_max)
            report(not failed, tag + " vs numpy", "; ".join(failed) or
                   f"max abs {q['max_abs_error']:.3g}, cosine "
                   f"{q['cosine']:.7f}, top-1 {q['top1_agreement']:.4f} "
                   f"(compile {compile_s:.1f} s, run {run_s:.2f} s)")

    # The int8 graphs are what the PTQ tool writes.
    for attention in ("softmax", "linear"):
        errors, n_act, n_w = ptq_differences(args.workdir, manifest,
                                             attention)
        report(not errors, f"{attention}_int8 vs onnxruntime quantize_static",
               "; ".join(errors) or f"same {n_act} quantized activations "
               f"(scales, zero points) and {n_w} int8 weights")

    # With --dynamic-dims (named batch/seq dims, the exporter's shape
    # arithmetic), given static shapes by --input-shapes: the Standard and
    # Flash variants must give the static ones' results.
    dyn = os.path.join(args.workdir, "dynamic")
    gen.main(["--out", dyn, "--preset", "small", "--batch", "2",
              "--dynamic-dims", "--no-reference"])
    shape = "input_ids:{}x{}".format(*manifest["inputs"]["input_ids"]
                                     ["shape"])
    for name in ("softmax_fp16", "linear_int8"):
        v = next(x for x in manifest["variants"] if x["name"] == name)
        want = refs[name]
        tag = f"{name} --dynamic-dims kiln --input-shapes={shape}"
        ids = np.load(os.path.join(args.workdir, v["data"], "input_0.npy"))
        got, error, _, _ = run_kiln(os.path.join(dyn, v["file"]), ids,
                                    [f"--input-shapes={shape}"])
        if error:
            report(False, tag, error)
            continue
        q = ref.quality(got, want)
        failed = gen.within(q, v["tolerance"], float(np.abs(want).max()))
        report(not failed, tag + " vs numpy", "; ".join(failed) or
               f"max abs {q['max_abs_error']:.3g}, cosine {q['cosine']:.7f}")

    # The reduced precisions must really be reduced: each differs from its
    # fp32 baseline by more than the fp32 gate allows.
    for v in manifest["variants"]:
        if v["precision"] == "fp32" or v["baseline"] not in refs:
            continue
        base = refs[v["baseline"]]
        q = ref.quality(refs[v["name"]], base)
        same = not gen.within(q, gen.TOLERANCES["fp32"],
                              float(np.abs(base).max()))
        report(not same, f"{v['name']} differs from {v['baseline']}",
               f"max abs {q['max_abs_error']:.3g}, cosine {q['cosine']:.6f}, "
               f"top-1 {q['top1_agreement']:.4f}")
    print(f"seed variants: {failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
