#!/usr/bin/env python3
#===- scripts/profile_overhead.py - What the kernel profiling hooks cost ---===#
#
# Compiles each demo model twice (kiln.compile), with the profiling hooks
# (the default) and with --profile-hooks=false, and times both with
# kiln.InferenceSession.benchmark (kiln-run's timing core),
# interleaved (A, B, A, B, ...: a noisy neighbour slows both), as
# scripts/bench_cpu.py times Kiln against ONNX Runtime. Reports per model
# the median over rounds of each side's per-round median and the overhead
# of the hooks left in but off (hooks / no hooks - 1), and the same with
# profiling on (benchmark(profile=True), kiln-run --profile).
#
#   scripts/profile_overhead.py [--threads 2] [--rounds 7] [--iterations 30]
#                               [--batches 1,8] [--models transformer_block,...]
#
#===----------------------------------------------------------------------===#

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import bench_cpu  # noqa: E402
from bench_cpu import MODELS  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--batches", default="1,8")
    parser.add_argument("--models", default="transformer_block,small_cnn,mlp")
    parser.add_argument("--kernels", default="codegen")
    parser.add_argument("--workdir")
    args = parser.parse_args()
    import kiln
    work = args.workdir or tempfile.mkdtemp(prefix="kiln-prof-overhead-")
    subprocess.run([sys.executable,
                    os.path.join(ROOT, "models", "generate_demo_models.py"),
                    "--out", work, "--only", args.models],
                   check=True, capture_output=True)
    rng = np.random.default_rng(0)
    print(f"{'model':<18} {'batch':>5} {'kernels':>8} {'no hooks ms':>12} "
          f"{'hooks ms':>10} {'off cost':>9} {'profiled ms':>12} "
          f"{'on cost':>8}")
    for model in args.models.split(","):
        name, shape = MODELS[model]
        for batch in [int(b) for b in args.batches.split(",")]:
            for kernels in args.kernels.split(","):
                onnx = os.path.join(work, model + ".onnx")
                base = os.path.join(work, f"{model}_b{batch}_{kernels}")
                arts = {}
                for hooks in (True, False):
                    arts[hooks] = base + ("_hooks" if hooks else "") + ".kiln"
                    kiln.compile(onnx, opt_level=3, kernels=kernels,
                                 input_shapes={name: shape(batch)},
                                 flags=[f"--profile-hooks="
                                        f"{'true' if hooks else 'false'}"]
                                 ).save(arts[hooks])
                feeds = {name: rng.standard_normal(shape(batch))
                         .astype(np.float32)}
                sessions = {h: bench_cpu.kiln_session(a, args.threads)
                            for h, a in arts.items()}
                t = {"off": [], "hooks": [], "on": []}
                for _ in range(args.rounds):
                    for key, hooks, prof in (("off", False, False),
                                             ("hooks", True, False),
                                             ("on", True, True)):
                        t[key].append(bench_cpu.time_kiln(
                            sessions[hooks], feeds, args.warmup,
                            args.iterations, profile=prof))
                m = {k: statistics.median(v) for k, v in t.items()}
                print(f"{model:<18} {batch:>5} {kernels:>8} {m['off']:>12.3f} "
                      f"{m['hooks']:>10.3f} "
                      f"{(m['hooks'] / m['off'] - 1) * 100:>+8.2f}% "
                      f"{m['on']:>12.3f} "
                      f"{(m['on'] / m['off'] - 1) * 100:>+7.2f}%", flush=True)


if __name__ == "__main__":
    main()
