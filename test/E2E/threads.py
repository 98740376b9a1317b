#!/usr/bin/env python3
#===- test/E2E/threads.py - Compiled models on many threads, and repeatable -===#
#
# Three claims about kiln-compiled artifacts, checked on real demo models
# (the PyTorch-form transformer block and the small CNN, codegen and library
# kernels, and the small CNN's oneDNN convolutions with --kernels=auto):
#
#   1. One session runs on many threads at once (docs/runtime.md):
#      kiln-thread-check runs WORKERS threads x RUNS runs on one session
#      and every output must equal, byte for byte, a first run's.
#   2. The OpenMP thread count does not change the result: kiln-run with
#      --threads 1, 2 and 4 on the model's data set; the outputs must be
#      bit-identical (the parallel loops split independent outputs, never a
#      reduction; a model where that stops being true fails here, and the
#      tolerance would then have to be stated).
#   3. Compiling is deterministic: two compiles of the same model give
#      byte-identical artifacts.
#
#   threads.py --kiln-compile BIN --kiln-run BIN --thread-check BIN
#              --workdir DIR [--workers 8] [--runs 1000]
#
#===----------------------------------------------------------------------===#

import argparse
import filecmp
import os
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
CONFIGS = [("transformer_block", "codegen"), ("transformer_block", "library"),
           ("small_cnn", "codegen"), ("small_cnn", "library"),
           ("small_cnn", "auto")]


def run(cmd):
    proc = subprocess.run(cmd, capture_output=True, text=True)
    return proc.returncode, proc.stdout + proc.stderr


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kiln-compile", required=True)
    parser.add_argument("--kiln-run", required=True)
    parser.add_argument("--thread-check", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--runs", type=int, default=1000)
    args = parser.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    subprocess.run([sys.executable,
                    os.path.join(ROOT, "models", "generate_demo_models.py"),
                    "--out", args.workdir, "--only",
                    "transformer_block,small_cnn", "--static-shapes"],
                   check=True, stdout=subprocess.DEVNULL)
    failures = 0
    for model, kernels in CONFIGS:
        tag = f"{model} {kernels}"
        onnx_path = os.path.join(args.workdir, f"{model}.onnx")
        data = os.path.join(args.workdir, model, "test_data_set_0")
        artifacts = [os.path.join(args.workdir, f"{model}-{kernels}-{i}.kiln")
                     for i in (1, 2)]
        for artifact in artifacts:
            rc, out = run([args.kiln_compile, onnx_path, "-O3",
                           f"--kernels={kernels}", "-o", artifact])
            if rc != 0:
                print(f"FAIL {tag}: kiln-compile: {out[:400]}")
                failures += 1
                break
        else:
            if filecmp.cmp(artifacts[0], artifacts[1], shallow=False):
                print(f"PASS {tag}: two compiles, byte-identical artifacts "
                      f"({os.path.getsize(artifacts[0])} bytes)")
            else:
                print(f"FAIL {tag}: two compiles of the same model differ")
                failures += 1
        if not os.path.exists(artifacts[0]):
            continue
        rc, out = run([args.thread_check, artifacts[0], str(args.workers),
                       str(args.runs)])
        print(("PASS" if rc == 0 else "FAIL") + f" {tag}: {out.strip()}")
        failures += rc != 0
        saved = {}
        for threads in (1, 2, 4):
            folder = f"{artifacts[0]}.threads{threads}"
            rc, out = run([args.kiln_run, artifacts[0], "--inputs", data,
                           "--threads", str(threads), "--save-outputs",
                           folder, "--consistency-runs", "2"])
            if rc not in (0, 1):  # 1: ONNX Runtime's outputs differ (fp32)
                print(f"FAIL {tag} --threads {threads}: {out[-400:]}")
                failures += 1
                continue
            saved[threads] = [np.load(os.path.join(folder, name))
                              for name in sorted(os.listdir(folder))]
        if len(saved) == 3:
            same = all(a.tobytes() == b.tobytes()
                       for t in (2, 4) for a, b in zip(saved[1], saved[t]))
            diff = max(float(np.max(np.abs(a.astype(np.float64) -
                                           b.astype(np.float64))))
                       for t in (2, 4) for a, b in zip(saved[1], saved[t]))
            print(("PASS" if same else "FAIL") +
                  f" {tag}: --threads 1, 2, 4: " +
                  ("bit-identical outputs" if same else
                   f"outputs differ (max abs {diff:.3g})"))
            failures += not same
    print(f"threads: {failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
