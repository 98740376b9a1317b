#!/usr/bin/env python3
#===- scripts/bench_cpu.py - Kiln vs ONNX Runtime on the CPU ----------------===#
#
# Compiles the demo transformer block and small CNN (and the MLP) with the
# kiln package (kiln.compile) for each batch size and kernel strategy, and
# times them
# against ONNX Runtime (the pinned `onnxruntime` wheel, CPU provider, all
# graph optimizations) with the same inputs and thread count. Repetitions are
# interleaved: every round runs Kiln (kiln.InferenceSession.benchmark, kiln-run's
# timing core in C++: warm-up, then N timed runs, median) and then ONNX Runtime (same warm-up and N), so that a noisy
# neighbour slows both; the figure reported is the median over rounds of
# each side's per-round median, and the ratio Kiln / ORT (< 1: Kiln faster).
# Also prints the compile's wall time per model (ResNet-18 included), and
# checks Kiln's outputs against ONNX Runtime's on the benchmark inputs.
#
#   scripts/bench_cpu.py [--threads 2] [--rounds 5] [--iterations 20]
#                        [--batches 1,8] [--markdown docs/results/cpu.md]
#
#===----------------------------------------------------------------------===#

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# model -> (input name, shape for batch b)
MODELS = {
    "transformer_block": ("hidden_states", lambda b: (b, 64, 256)),
    "small_cnn": ("input", lambda b: (b, 3, 32, 32)),
    "mlp": ("input", lambda b: (b, 784)),
}


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def ort_session(path, threads):
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(path, options,
                                providers=["CPUExecutionProvider"])


def time_ort(session, feeds, warmup, iterations):
    for _ in range(warmup):
        session.run(None, feeds)
    times = []
    for _ in range(iterations):
        start = time.perf_counter()
        session.run(None, feeds)
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def time_kiln(session, feeds, warmup, iterations, profile=False):
    """The median of `iterations` timed runs after `warmup`, measured by
    kiln-run's timing core in C++ (kiln.InferenceSession.benchmark), so the
    Python interpreter is not in the timed loop."""
    result = session.benchmark(feeds, warmup=warmup, iterations=iterations,
                               profile=profile)
    return result["time_ms"]["median"]


def kiln_session(artifact, threads):
    import kiln
    return kiln.InferenceSession(artifact, threads=threads)


def main():
    parser = argparse.ArgumentParser(description="Kiln vs ONNX Runtime, CPU")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--batches", default="1,8")
    parser.add_argument("--models", default="transformer_block,small_cnn")
    parser.add_argument("--kernels", default="codegen,library")
    parser.add_argument("--opt", type=int, default=3,
                        help="the graph pipeline's -O level")
    parser.add_argument("--no-resnet", action="store_true",
                        help="skip ResNet-18's compile-time measurement")
    parser.add_argument("--markdown", help="also write the tables here")
    parser.add_argument("--json", help="write the figures as JSON here")
    parser.add_argument("--workdir")
    args = parser.parse_args()

    import onnxruntime
    import kiln
    workdir = args.workdir or tempfile.mkdtemp(prefix="kiln-bench-")
    models = args.models.split(",")
    gen = models + ([] if args.no_resnet else ["resnet18"])
    subprocess.run([sys.executable,
                    os.path.join(ROOT, "models", "generate_demo_models.py"),
                    "--out", workdir, "--only", ",".join(gen)], check=True,
                   stdout=subprocess.DEVNULL)
    header = (f"CPU: {cpu_name()}, {os.cpu_count()} logical CPUs; threads: "
              f"{args.threads}; onnxruntime {onnxruntime.__version__}; "
              f"{args.rounds} interleaved rounds x {args.iterations} timed "
              f"runs after {args.warmup} warm-up; Kiln -O{args.opt}; "
              f"{datetime.date.today().isoformat()}")
    print(header)
    rows, compile_rows = [], []
    rng = np.random.default_rng(0)
    for model in models:
        name, shape = MODELS[model]
        onnx_path = os.path.join(workdir, f"{model}.onnx")
        for batch in [int(b) for b in args.batches.split(",")]:
            dims = shape(batch)
            x = rng.standard_normal(dims).astype(np.float32)
            session = ort_session(onnx_path, args.threads)
            ort_out = session.run(None, {name: x})[0]
            for kernels in args.kernels.split(","):
                artifact = os.path.join(workdir,
                                        f"{model}-b{batch}-{kernels}.kiln")
                start = time.perf_counter()
                try:
                    kiln.compile(onnx_path, opt_level=args.opt,
                                 kernels=kernels,
                                 input_shapes={name: dims}).save(artifact)
                except kiln.CompileError as e:
                    print(f"{model} b{batch} {kernels}: compile failed: "
                          f"{str(e)[:300]}")
                    rows.append({"model": model, "batch": batch,
                                 "kernels": kernels, "error": str(e)[:300]})
                    continue
                compile_s = time.perf_counter() - start
                compile_rows.append((f"{model} b{batch} {kernels}", compile_s))
                kiln_ms, ort_ms = [], []
                try:
                    ks = kiln_session(artifact, args.threads)
                    kiln_out = ks.run(None, {name: x})[0]
                    for r in range(args.rounds):
                        kiln_ms.append(time_kiln(ks, {name: x}, args.warmup,
                                                 args.iterations))
                        ort_ms.append(time_ort(session, {name: x},
                                               args.warmup, args.iterations))
                except RuntimeError as e:
                    print(f"{model} b{batch} {kernels}: {e}")
                    rows.append({"model": model, "batch": batch,
                                 "kernels": kernels, "error": str(e)[:300]})
                    continue
                err = float(np.abs(kiln_out - ort_out).max())
                k, o = statistics.median(kiln_ms), statistics.median(ort_ms)
                row = {"model": model, "batch": batch, "kernels": kernels,
                       "kiln_ms": k, "ort_ms": o, "ratio": k / o,
                       "max_abs_diff_vs_ort": err, "compile_s": compile_s,
                       "kiln_rounds_ms": kiln_ms, "ort_rounds_ms": ort_ms}
                rows.append(row)
                print(f"{model:18} batch {batch:2} {kernels:8} kiln "
                      f"{k:9.3f} ms  ort {o:9.3f} ms  ratio {k / o:6.2f}x  "
                      f"|kiln-ort| {err:.2g}", flush=True)
    if not args.no_resnet:
        artifact = os.path.join(workdir, "resnet18.kiln")
        start = time.perf_counter()
        try:
            kiln.compile(os.path.join(workdir, "resnet18.onnx"),
                         opt_level=args.opt,
                         input_shapes={"input": (1, 3, 224, 224)}).save(artifact)
            status = "ok"
        except kiln.CompileError as e:
            status = "FAILED: " + str(e)[:200]
        seconds = time.perf_counter() - start
        compile_rows.append(("resnet18 b1 codegen (11.7M parameters)",
                             seconds))
        print(f"resnet18 compile: {seconds:.2f} s ({status})")

    lines = [f"# Kiln vs ONNX Runtime on the CPU", "", header, "",
             "| model | batch | kernels | Kiln median (ms) | ORT median (ms) "
             "| Kiln / ORT | max abs diff vs ORT |",
             "|---|---:|---|---:|---:|---:|---:|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['model']} | {r['batch']} | {r['kernels']} | "
                         f"failed: {r['error'][:80]} | | | |")
        else:
            lines.append(f"| {r['model']} | {r['batch']} | {r['kernels']} | "
                         f"{r['kiln_ms']:.3f} | {r['ort_ms']:.3f} | "
                         f"{r['ratio']:.2f}x | {r['max_abs_diff_vs_ort']:.2g} |")
    lines += ["", "| compile (kiln.compile wall time) | seconds |",
              "|---|---:|"]
    lines += [f"| {n} | {s:.2f} |" for n, s in compile_rows]
    text = "\n".join(lines) + "\n"
    if args.markdown:
        os.makedirs(os.path.dirname(os.path.abspath(args.markdown)),
                    exist_ok=True)
        with open(args.markdown, "w") as f:
            f.write(text)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"schema": "kiln.cpu-bench", "version": 1,
                       "header": header, "rows": rows,
                       "compile": compile_rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
