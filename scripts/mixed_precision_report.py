#!/usr/bin/env python3
#===- scripts/mixed_precision_report.py - fp16/bf16 vs fp32 on the CPU ----===#
#
# The measurements of docs/results/mixed-precision-cpu.md: the demo MLP and
# transformer block compiled through the kiln package with
# precision=fp32|fp16|bf16,
#   accuracy  against the fp32 artifact (kiln.InferenceSession) on the demo
#             test set (the calibration set) and on held-out random inputs
#             (seeds 1..3): per output max abs error, cosine similarity,
#             top-1 agreement along the last axis (kiln-run --reference's
#             figures);
#   per layer the --auto-keep table (each MatMul/Gemm demoted alone) on the
#             test set (Artifact.messages);
#   latency   InferenceSession.benchmark (kiln-run's timing core) with
#             threads T, warm-up W, N iterations, the precisions interleaved
#             for R rounds; median over rounds of each round's median and
#             min, and the ratios to fp32.
#
#   mixed_precision_report.py --work /tmp/mp [--rounds 5]
#       [--iterations 200] [--threads 2] [--json out.json]
#
#===----------------------------------------------------------------------===#

import argparse
import json
import os
import statistics
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PRECISIONS = ["fp32", "fp16", "bf16"]

# (label, model, input name, shape for accuracy (the test data's), shapes
# for latency)
MODELS = [
    ("mlp", "mlp", "input", "4x784", ["1x784", "8x784"]),
    ("transformer_block", "transformer_block", "hidden_states", "2x16x256",
     ["1x16x256", "8x16x256"]),
]


def run(cmd, **kw):
    print("$ " + " ".join(cmd), file=sys.stderr)
    return subprocess.run(cmd, check=True, text=True, capture_output=True,
                          **kw)


def dims_of(shape):
    return [int(d) for d in shape.split("x")]


def compile_model(args, model, name, shape, precision, out, flags=()):
    import kiln
    artifact = kiln.compile(os.path.join(args.work, model + ".onnx"),
                            input_shapes={name: dims_of(shape)},
                            precision=precision, flags=list(flags))
    artifact.save(out)
    return artifact


def test_set_feeds(session, folder):
    """input_N.pb of an ONNX test data folder, in the model's input order."""
    import onnx
    from onnx import numpy_helper
    feeds = {}
    for i, arg in enumerate(session.get_inputs()):
        tensor = onnx.TensorProto()
        with open(os.path.join(folder, f"input_{i}.pb"), "rb") as f:
            tensor.ParseFromString(f.read())
        feeds[arg.name] = numpy_helper.to_array(tensor)
    return feeds


def random_feeds(session, seed):
    """Float inputs uniform in [-1, 1), as kiln-run --seed draws them (from
    numpy's generator, not kiln-run's splitmix64 stream)."""
    rng = np.random.default_rng(seed)
    return {arg.name: rng.uniform(-1, 1, arg.shape).astype(arg.dtype)
            for arg in session.get_inputs()}


def quality(got, want):
    """kiln-run --reference's figures: max abs error, cosine similarity,
    top-1 agreement along the last axis, non-finite values of `got`."""
    g = got.astype(np.float64)
    w = want.astype(np.float64)
    finite = np.isfinite(g)
    cos = float(np.dot(g.ravel(), w.ravel()) /
                (np.linalg.norm(g) * np.linalg.norm(w) + 1e-300))
    rows = g.reshape(-1, g.shape[-1]) if g.ndim else g.reshape(1, 1)
    wrows = w.reshape(rows.shape)
    return {"max_abs_error": float(np.abs(g - w).max()), "cosine": cos,
            "top1": float(np.mean(rows.argmax(-1) == wrows.argmax(-1))),
            "top1_rows": int(rows.shape[0]),
            "non_finite": int(g.size - finite.sum())}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--work", required=True)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--iterations", type=int, default=200)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--json")
    args = p.parse_args()
    os.makedirs(args.work, exist_ok=True)
    run([sys.executable, os.path.join(ROOT, "models",
                                      "generate_demo_models.py"),
         "--out", args.work, "--only", "mlp,transformer_block"])
    import kiln
    result = {"accuracy": [], "layers": {}, "latency": []}

    for label, model, name, shape, lat_shapes in MODELS:
        data = os.path.join(args.work, model, "test_data_set_0")
        arts = {}
        for prec in PRECISIONS:
            arts[prec] = os.path.join(args.work, f"{label}-{shape}-{prec}.kiln")
            compile_model(args, model, name, shape, prec, arts[prec])
        sessions = {prec: kiln.InferenceSession(arts[prec], threads=1)
                    for prec in PRECISIONS}
        reference = sessions["fp32"]
        for prec in ["fp16", "bf16"]:
            for feeds, tag in [(test_set_feeds(reference, data), "test set")] + [
                    (random_feeds(reference, s), f"random seed {s}")
                    for s in (1, 2, 3)]:
                want = reference.run(None, feeds)
                got = sessions[prec].run(None, feeds)
                for arg, g, w in zip(reference.get_outputs(), got, want):
                    result["accuracy"].append({
                        "model": label, "precision": prec, "inputs": tag,
                        "output": arg.name, **quality(g, w)})
        for prec in ["fp16", "bf16"]:
            artifact = compile_model(
                args, model, name, shape, prec,
                os.path.join(args.work, f"{label}-{shape}-{prec}-auto.kiln"),
                flags=["--auto-keep=0.001", f"--calibration={data}"])
            result["layers"][f"{label} {prec}"] = artifact.messages

        for lshape in lat_shapes:
            larts = {}
            for prec in PRECISIONS:
                larts[prec] = os.path.join(args.work,
                                           f"{label}-{lshape}-{prec}.kiln")
                compile_model(args, model, name, lshape, prec, larts[prec])
            lsessions = {prec: kiln.InferenceSession(larts[prec],
                                                     threads=args.threads)
                         for prec in PRECISIONS}
            feeds = random_feeds(lsessions["fp32"], 0)
            rounds = {prec: [] for prec in PRECISIONS}
            for _ in range(args.rounds):
                for prec in PRECISIONS:
                    t = lsessions[prec].benchmark(
                        feeds, warmup=args.warmup,
                        iterations=args.iterations)["time_ms"]
                    rounds[prec].append((t["median"], t["min"]))
            row = {"model": label, "shape": lshape}
            for prec in PRECISIONS:
                row[prec + "_median_ms"] = statistics.median(
                    m for m, _ in rounds[prec])
                row[prec + "_min_ms"] = min(m for _, m in rounds[prec])
                row[prec + "_bytes"] = os.path.getsize(larts[prec])
            result["latency"].append(row)

    print("## Accuracy against fp32\n")
    print("| model | precision | inputs | output | max abs error | cosine | "
          "top-1 agreement |")
    print("|---|---|---|---|---|---|---|")
    for a in result["accuracy"]:
        print(f"| {a['model']} | {a['precision']} | {a['inputs']} | "
              f"{a['output']} | {a['max_abs_error']:.3g} | "
              f"{a['cosine']:.6f} | {a['top1']:.4f} ({a['top1_rows']} rows) |")
    print("\n## Per layer (--auto-keep=0.001, test set)\n")
    for k, v in result["layers"].items():
        print(f"{k}:\n```\n{v.rstrip()}\n```")
    print(f"\n## Latency, {args.threads} threads ({args.rounds} interleaved "
          f"rounds of {args.iterations} runs)\n")
    print("| model | input | fp32 median (min) ms | fp16 median (min) ms | "
          "bf16 median (min) ms | fp16/fp32 | bf16/fp32 | artifact bytes "
          "fp32 / fp16 / bf16 |")
    print("|---|---|---|---|---|---|---|---|")
    for r in result["latency"]:
        f32 = r["fp32_median_ms"]
        print(f"| {r['model']} | {r['shape']} | "
              f"{r['fp32_median_ms']:.3f} ({r['fp32_min_ms']:.3f}) | "
              f"{r['fp16_median_ms']:.3f} ({r['fp16_min_ms']:.3f}) | "
              f"{r['bf16_median_ms']:.3f} ({r['bf16_min_ms']:.3f}) | "
              f"{r['fp16_median_ms'] / f32:.2f} "
              f"(min {r['fp16_min_ms'] / r['fp32_min_ms']:.2f}) | "
              f"{r['bf16_median_ms'] / f32:.2f} "
              f"(min {r['bf16_min_ms'] / r['fp32_min_ms']:.2f}) | "
              f"{r['fp32_bytes']} / {r['fp16_bytes']} / {r['bf16_bytes']} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
