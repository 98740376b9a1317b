#!/usr/bin/env python3
#===- scripts/mixed_precision_report.py - fp16/bf16 vs fp32 on the CPU ----===#
#
# The measurements of docs/results/mixed-precision-cpu.md: the demo MLP and
# transformer block compiled with kiln-compile --precision=fp32|fp16|bf16,
#   accuracy  kiln-run --reference (the fp32 artifact) on the demo test set
#             (the calibration set) and on held-out random inputs
#             (kiln-run --seed 1..3): per output max abs error, cosine
#             similarity, top-1 agreement along the last axis;
#   per layer kiln-compile --auto-keep's table (each MatMul/Gemm demoted
#             alone) on the test set;
#   latency   kiln-run --threads T --warmup W --iterations N, the precisions
#             interleaved for R rounds; median over rounds of each round's
#             median and min, and the ratios to fp32.
#
#   mixed_precision_report.py --bin build/bin --work /tmp/mp [--rounds 5]
#       [--iterations 200] [--threads 2] [--json out.json]
#
#===----------------------------------------------------------------------===#

import argparse
import json
import os
import statistics
import subprocess
import sys

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


def compile_model(args, model, name, shape, precision, out):
    run([os.path.join(args.bin, "kiln-compile"),
         os.path.join(args.work, model + ".onnx"),
         f"--input-shapes={name}:{shape}", f"--precision={precision}",
         "-o", out])


def kiln_run(args, artifact, extra):
    j = artifact + ".json"
    subprocess.run([os.path.join(args.bin, "kiln-run"), artifact,
                    "--json", j] + extra, text=True, capture_output=True)
    with open(j) as f:
        return json.load(f)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
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
    result = {"accuracy": [], "layers": {}, "latency": []}

    for label, model, name, shape, lat_shapes in MODELS:
        data = os.path.join(args.work, model, "test_data_set_0")
        arts = {}
        for prec in PRECISIONS:
            arts[prec] = os.path.join(args.work, f"{label}-{shape}-{prec}.kiln")
            compile_model(args, model, name, shape, prec, arts[prec])
        for prec in ["fp16", "bf16"]:
            for inputs, tag in [(["--inputs", data], "test set")] + [
                    (["--seed", str(s)], f"random seed {s}")
                    for s in (1, 2, 3)]:
                r = kiln_run(args, arts[prec], inputs + [
                    "--reference", arts["fp32"], "--threads", "1"])
                for o in r["outputs"]:
                    result["accuracy"].append({
                        "model": label, "precision": prec, "inputs": tag,
                        "output": o["name"],
                        "max_abs_error": o["max_abs_error"],
                        "cosine": o.get("cosine_similarity"),
                        "top1": o.get("top1_agreement"),
                        "top1_rows": o.get("top1_rows"),
                        "non_finite": o.get("non_finite")})
        for prec in ["fp16", "bf16"]:
            out = run([os.path.join(args.bin, "kiln-compile"),
                       os.path.join(args.work, model + ".onnx"),
                       f"--input-shapes={name}:{shape}",
                       f"--precision={prec}", "--auto-keep=0.001",
                       f"--calibration={data}", "--emit=graph",
                       "-o", os.path.join(args.work, "auto.mlir")]).stdout
            result["layers"][f"{label} {prec}"] = out

        for lshape in lat_shapes:
            larts = {}
            for prec in PRECISIONS:
                larts[prec] = os.path.join(args.work,
                                           f"{label}-{lshape}-{prec}.kiln")
                compile_model(args, model, name, lshape, prec, larts[prec])
            rounds = {prec: [] for prec in PRECISIONS}
            for _ in range(args.rounds):
                for prec in PRECISIONS:
                    r = kiln_run(args, larts[prec], [
                        "--seed", "0", "--threads", str(args.threads),
                        "--warmup", str(args.warmup),
                        "--iterations", str(args.iterations),
                        "--consistency-runs", "0"])
                    rounds[prec].append((r["timing"]["median_ms"],
                                         r["timing"]["min_ms"]))
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
    print("\n## Per layer (kiln-compile --auto-keep=0.001, test set)\n")
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
