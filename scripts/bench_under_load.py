#!/usr/bin/env python3
#===- scripts/bench_under_load.py - Latency tails with a busy core -------===#
#
# p50 and p99 of Kiln and ONNX Runtime on one model, first on an idle
# machine, then with `--busy` other processes spinning (a Python
# `while True: pass` each, normal priority): what a shared server or a
# laptop running something else sees. Both runtimes use --threads threads
# (Kiln: kiln.InferenceSession.benchmark, kiln-run's timing core; ONNX
# Runtime: intra-op threads, sequential execution, every graph
# optimization) on the same random input; blocks of --iterations runs are
# interleaved (--rounds each, a 0.3 s pause before each block) and the
# figures are the median of the blocks' p50 and the largest of their p99.
#
#   PYTHONPATH=build/python .venv/bin/python scripts/bench_under_load.py \
#       --model /tmp/zoo/decoder_block.onnx [--shape 1x128x576] \
#       [--artifact m.kiln] [--threads 2] [--busy 1] [--iterations 200] \
#       [--rounds 2] [--json out.json]
#
# Without --artifact the model is compiled with the kiln package (Kiln's
# defaults; --shape fixes a dynamic batch). The input's shape is --shape, or
# the model's with dynamic dims as 1.
#
#===----------------------------------------------------------------------===#

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", required=True, help="the ONNX model")
    ap.add_argument("--artifact", help="a Kiln artifact of it (default: "
                    "compile the model)")
    ap.add_argument("--shape", help="the input's shape, e.g. 1x3x224x224")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--busy", type=int, default=1,
                    help="spinning processes in the loaded phase")
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()

    import kiln
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    ort_session = ort.InferenceSession(args.model, options,
                                       providers=["CPUExecutionProvider"])
    first = ort_session.get_inputs()[0]
    if args.shape:
        shape = [int(d) for d in args.shape.split("x")]
    else:
        shape = [d if isinstance(d, int) else 1 for d in first.shape]
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    feeds = {first.name: x}

    artifact = args.artifact
    if not artifact:
        artifact = os.path.join(tempfile.mkdtemp(), "model.kiln")
        shapes = {first.name: shape}
        kiln.compile(args.model, input_shapes=shapes).save(artifact)
    kiln_session = kiln.InferenceSession(artifact, threads=args.threads)

    def time_kiln():
        r = kiln_session.benchmark(feeds, warmup=5,
                                   iterations=args.iterations)["time_ms"]
        return r["median"], r["p99"]

    def time_ort():
        for _ in range(5):
            ort_session.run(None, feeds)
        t = []
        for _ in range(args.iterations):
            start = time.perf_counter()
            ort_session.run(None, feeds)
            t.append((time.perf_counter() - start) * 1e3)
        return float(np.median(t)), float(np.percentile(t, 99))

    results = []
    for phase, busy in (("idle", 0), (f"{args.busy} busy", args.busy)):
        spinners = [subprocess.Popen([sys.executable, "-c",
                                      "while True: pass"])
                    for _ in range(busy)]
        try:
            time.sleep(0.5)
            k, o = [], []
            for _ in range(args.rounds):
                time.sleep(0.3)
                k.append(time_kiln())
                time.sleep(0.3)
                o.append(time_ort())
        finally:
            for p in spinners:
                p.kill()
        row = {"phase": phase, "busy_processes": busy,
               "kiln_p50_ms": float(np.median([r[0] for r in k])),
               "kiln_p99_ms": max(r[1] for r in k),
               "ort_p50_ms": float(np.median([r[0] for r in o])),
               "ort_p99_ms": max(r[1] for r in o)}
        row["p99_ratio"] = row["kiln_p99_ms"] / row["ort_p99_ms"]
        results.append(row)
        print(f"{phase:8s} kiln p50 {row['kiln_p50_ms']:8.2f} p99 "
              f"{row['kiln_p99_ms']:8.2f} ms | onnxruntime p50 "
              f"{row['ort_p50_ms']:8.2f} p99 {row['ort_p99_ms']:8.2f} ms | "
              f"p99 kiln/ort {row['p99_ratio']:.2f}x", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"model": args.model, "shape": shape,
                       "threads": args.threads,
                       "iterations": args.iterations,
                       "rounds": args.rounds, "results": results}, f,
                      indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
