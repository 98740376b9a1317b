#!/usr/bin/env python3
#===- test/E2E/cpu_models.py - Demo models compiled for the CPU vs numpy ---===#
#
# Generates the demo models with fixed seeds (models/generate_demo_models.py,
# models/generate_linear_attention.py), compiles each in-process through the
# kiln package (kiln.compile, PYTHONPATH=<build>/python) for the CPU at -O0
# and -O3 (codegen kernels) and at -O3 with --kernels=library, for three CPU
# levels (--cpu=native: every configuration; --cpu=x86-64, SSE2 only, and
# --cpu=x86-64-v3, AVX2 without AVX-512: the -O3 ones, so that the code paths
# of CPUs older than this one run here too), runs the artifact
# (kiln.InferenceSession, 2 threads) on the model's test data set, and
# compares every output with the float64 numpy reference written from the
# math (models/reference.py), not with onnxruntime:
#
#   |kiln - numpy| <= ATOL + RTOL * |numpy|, RTOL = 1e-4, ATOL = 1e-4
#
# (float32 arithmetic in a different order than numpy's float64: a few ulps
# of the largest partial sums). The mixed-precision configurations
# (-O3 --precision=fp16|bf16, kiln-convert-precision's default keeps) are
# held to the half type's rounding instead: the max abs error relative to
# the largest |numpy output| at most HALF_TOL[precision], and the cosine
# similarity with numpy's outputs at least HALF_COSINE[precision]. Prints
# one line per model and configuration and exits 1 on any mismatch or
# failure.
#
#   cpu_models.py --workdir DIR
#                 [--models mlp,transformer_block,small_cnn,linear_attention]
#                 [--cpus native,x86-64-v3,x86-64]
#
#===----------------------------------------------------------------------===#

import argparse
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper

from kiln_e2e import E2EError, compile_and_run, load_tensors

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "models"))
import reference  # noqa: E402
import generate_linear_attention as gla  # noqa: E402

RTOL, ATOL = 1e-4, 1e-4
# (opt level, --kernels, --precision)
# auto (the default): the float32 convolutions through oneDNN where Kiln is
# built with it (codegen otherwise), at -O2 (the default) and -O3.
CONFIGS = [(0, "codegen", "fp32"), (3, "codegen", "fp32"),
           (3, "library", "fp32"), (2, "auto", "fp32"), (3, "auto", "fp32"),
           (3, "codegen", "fp16"), (3, "codegen", "bf16")]
# fp16 keeps 11 significant bits, bf16 8: a few roundings of each
# intermediate, relative to the output's scale.
HALF_TOL = {"fp16": 5e-3, "bf16": 4e-2}
HALF_COSINE = {"fp16": 0.9999, "bf16": 0.999}
MODELS = ["mlp", "transformer_block", "small_cnn", "linear_attention"]
CPUS = ["native", "x86-64-v3", "x86-64"]


def generate(workdir, models):
    demo = [m for m in models if m != "linear_attention"]
    if demo:
        subprocess.run([sys.executable,
                        os.path.join(ROOT, "models", "generate_demo_models.py"),
                        "--out", workdir, "--only", ",".join(demo),
                        "--static-shapes"], check=True,
                       stdout=subprocess.DEVNULL)
    if "linear_attention" in models:
        subprocess.run([sys.executable,
                        os.path.join(ROOT, "models",
                                     "generate_linear_attention.py"),
                        "--out", workdir], check=True,
                       stdout=subprocess.DEVNULL)


def numpy_reference(name, model_path, inputs):
    model = onnx.load(model_path)
    weights = {t.name: numpy_helper.to_array(t)
               for t in model.graph.initializer}
    if name == "linear_attention":
        return [gla.reference(weights, inputs[0], "elu1")]
    return getattr(reference, name)(weights, *inputs)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--cpus", default=",".join(CPUS))
    args = parser.parse_args()
    models = args.models.split(",")
    os.makedirs(args.workdir, exist_ok=True)
    generate(args.workdir, models)
    failures = 0
    for name in models:
        model_path = os.path.join(args.workdir, f"{name}.onnx")
        inputs = load_tensors(os.path.join(args.workdir, name,
                                           "test_data_set_0"))
        expected = numpy_reference(name, model_path, inputs)
        runs = [(cpu, config) for cpu in args.cpus.split(",")
                for config in CONFIGS
                if cpu == "native" or config[0] != 0]
        for cpu, (opt, kernels, precision) in runs:
            tag = f"{name} --cpu={cpu} -O{opt} {kernels}"
            if precision != "fp32":
                tag += f" {precision}"
            try:
                outputs = compile_and_run(
                    model_path, inputs, threads=2, opt_level=opt,
                    kernels=kernels, precision=precision, cpu=cpu)
            except E2EError as e:
                print(f"FAIL {tag}: {str(e).strip()[:400]}")
                failures += 1
                continue
            worst = 0.0
            ok = True
            for i, want in enumerate(expected):
                got = outputs[i]
                if got.shape != want.shape:
                    print(f"FAIL {tag}: output {i} shape {got.shape}, "
                          f"numpy {want.shape}")
                    ok = False
                    continue
                diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
                if precision != "fp32":
                    ref = want.astype(np.float64).ravel()
                    act = got.astype(np.float64).ravel()
                    scale = float(np.abs(ref).max()) or 1.0
                    rel = float(diff.max()) / scale
                    cosine = float(np.dot(ref, act) / (
                        np.linalg.norm(ref) * np.linalg.norm(act) or 1.0))
                    worst = max(worst, float(diff.max()))
                    if not (rel <= HALF_TOL[precision]
                            and cosine >= HALF_COSINE[precision]):
                        print(f"FAIL {tag}: output {i}: max abs error "
                              f"{diff.max():.3g} = {rel:.3g} of max |ref| "
                              f"(bound {HALF_TOL[precision]}), cosine "
                              f"{cosine:.6f} (bound "
                              f"{HALF_COSINE[precision]})")
                        ok = False
                    continue
                bound = ATOL + RTOL * np.abs(want.astype(np.float64))
                worst = max(worst, float(diff.max()))
                if (diff > bound).any():
                    print(f"FAIL {tag}: output {i}: max abs error "
                          f"{diff.max():.3g} above {ATOL} + {RTOL}*|ref|")
                    ok = False
            if ok:
                print(f"PASS {tag}: max abs error vs numpy {worst:.3g}")
            else:
                failures += 1
    print(f"e2e: {failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
