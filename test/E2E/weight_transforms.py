#!/usr/bin/env python3
#===- test/E2E/weight_transforms.py - No weight transformed in a run -----===#
#
# Two models whose weights a compiler could transform in every run:
#
#   computed_weights  models/generate_computed_weights.py --size small: an
#                     AlexNet-shaped classifier whose Gemm weights are
#                     computed from constants (Tile * Expand, an Expand of a
#                     ConstantOfShape) and read with transB = 1
#   tied_decoder      models/export_torch_decoder.py: a 2-layer Llama-style
#                     decoder, one decode step with a KV cache, whose LM
#                     head is tied to the token embedding (a Gather reads E,
#                     the head reads E^T); exported by PyTorch (Debian's
#                     python3-torch under /usr/bin/python3), skipped
#                     without it
#
# Each is compiled with kiln-compile (default options) and run with kiln-run
# --profile on fixed inputs; the test fails when
#   * an output differs from ONNX Runtime's on the same inputs by more than
#     ATOL + RTOL * |ort| (RTOL = 1e-3, ATOL = 1e-4), or
#   * the profile has a kernel that transposes, tiles or expands for an
#     ONNX node that is a matmul (MatMul, Gemm) or computes its weight
#     (Tile, Expand, ConstantOfShape, Mul of constants): such a kernel is a
#     weight transformed in every run (the tied head's transpose was 63% of
#     a 135M decoder's decode step, the Gemm weights' 66% of an AlexNet's
#     run), or
#   * the artifact holds the tied embedding twice.
# Prints one line per model and exits 1 on any failure (77: nothing ran).
#
#   weight_transforms.py --kiln-compile BIN --kiln-run BIN --workdir DIR
#       [--torch-python /usr/bin/python3]
#
#===----------------------------------------------------------------------===#

import argparse
import json
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "models"))
import generate_computed_weights  # noqa: E402

RTOL, ATOL = 1e-3, 1e-4
# Kernels whose name says they move or build a whole tensor.
MOVING = ("transpose", "tile", "expand")
# ONNX node names of the weights' computations and of the matmuls.
WEIGHT_NODES = ("fc1", "fc2", "fc3", "lm_head")
# The small decoder: E is 8192 x 144 (4.7 MB, above kiln-constant-fold's
# 4 MiB size limit, so E^T is not folded into a second copy).
DECODER = ["--layers", "2", "--mode", "decode", "--past", "8",
           "--vocab", "8192", "--dim", "144", "--heads", "4",
           "--kv-heads", "2", "--ffn", "384"]


def run(cmd):
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({result.returncode}):\n"
                           f"{result.stdout}{result.stderr}")
    return result.stdout


def write_npy_inputs(folder, arrays):
    os.makedirs(folder, exist_ok=True)
    for k, value in enumerate(arrays):
        np.save(os.path.join(folder, f"input_{k}.npy"), value)


def check(name, model_path, inputs, args, workdir):
    """Compiles and runs `model_path` on `inputs`; returns failure lines."""
    failures = []
    artifact = os.path.join(workdir, name + ".kiln")
    run([args.kiln_compile, model_path, "-o", artifact, "--quiet"])
    data = os.path.join(workdir, name + "_inputs")
    write_npy_inputs(data, inputs)
    out = os.path.join(workdir, name + "_outputs")
    report = os.path.join(workdir, name + ".json")
    run([args.kiln_run, artifact, "--inputs", data, "--threads", "2",
         "--iterations", "1", "--profile", "--json", report,
         "--save-outputs", out])
    session = ort.InferenceSession(model_path,
                                   providers=["CPUExecutionProvider"])
    feeds = {i.name: v for i, v in zip(session.get_inputs(), inputs)}
    expected = session.run(None, feeds)
    for k, ref in enumerate(expected):
        got = np.load(os.path.join(out, f"output_{k}.npy"))
        if got.shape != ref.shape:
            failures.append(f"output {k}: shape {got.shape}, onnxruntime "
                            f"{ref.shape}")
            continue
        bad = np.abs(got - ref) > ATOL + RTOL * np.abs(ref)
        if bad.any():
            failures.append(f"output {k}: {int(bad.sum())}/{bad.size} "
                            "elements differ from onnxruntime (max abs "
                            f"error {float(np.abs(got - ref).max()):.3g})")
    with open(report) as f:
        profile = json.load(f).get("profile") or {}
    kernels = profile.get("kernels") or []
    if not kernels:
        failures.append("kiln-run --profile reported no kernels")
    for kernel in kernels:
        label = kernel.get("name", "")
        nodes = " ".join(kernel.get("onnx_nodes") or kernel.get("nodes") or [])
        if any(m in label for m in MOVING) and \
                any(w in nodes for w in WEIGHT_NODES):
            failures.append(f"kernel {label} ({nodes}) transforms a weight "
                            "in every run")
    return failures, os.path.getsize(artifact)


def main():
    parser = argparse.ArgumentParser(
        description="No weight transformed in a run, outputs as ORT")
    parser.add_argument("--kiln-compile", required=True)
    parser.add_argument("--kiln-run", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--torch-python", default="/usr/bin/python3")
    args = parser.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    failed = ran = 0

    # Computed Gemm weights.
    model = generate_computed_weights.build("small")
    path = os.path.join(args.workdir, "computed_weights.onnx")
    onnx.save(model, path)
    x = np.random.default_rng(1).standard_normal(
        (1, 3, 64, 64)).astype(np.float32)
    failures, _ = check("computed_weights", path, [x], args, args.workdir)
    ran += 1
    failed += bool(failures)
    print(f"computed_weights: {'FAIL' if failures else 'PASS'}")
    for line in failures:
        print("  " + line)

    # The tied decoder, exported by PyTorch.
    path = os.path.join(args.workdir, "tied_decoder.onnx")
    data = os.path.join(args.workdir, "tied_decoder_torch")
    export = subprocess.run(
        [args.torch_python, os.path.join(ROOT, "models",
                                         "export_torch_decoder.py"),
         "-o", path, "--data", data] + DECODER,
        capture_output=True, text=True)
    if export.returncode == 77 or not os.path.exists(args.torch_python):
        print("tied_decoder: SKIP (no PyTorch)")
    elif export.returncode != 0:
        print(f"tied_decoder: FAIL (export)\n{export.stderr}")
        failed += 1
    else:
        ran += 1
        graph = onnx.load(path)
        inputs = []
        for k in range(len(graph.graph.input)):
            inputs.append(np.load(os.path.join(data, f"input_{k}.npy")))
        failures, size = check("tied_decoder", path, inputs, args,
                               args.workdir)
        embedding = next(t for t in graph.graph.initializer
                         if t.name == "embed.weight")
        bytes_e = numpy_helper.to_array(embedding).nbytes
        if size > os.path.getsize(path) + bytes_e // 2:
            failures.append(f"artifact of {size} bytes for a model of "
                            f"{os.path.getsize(path)}: the {bytes_e}-byte "
                            "embedding is stored twice")
        failed += bool(failures)
        print(f"tied_decoder: {'FAIL' if failures else 'PASS'}")
        for line in failures:
            print("  " + line)
    if not ran:
        return 77
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
