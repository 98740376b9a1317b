#!/usr/bin/env python3
#===- scripts/bench_dynamic.py - Dynamic vs static artifacts on the CPU ----===#
#
# The cost of compiling for symbolic dims: each model is compiled twice with
# the kiln package, once as exported (its batch/sequence dims symbolic, no
# shape flags) and once with --input-shapes fixing them, and both artifacts
# run at the same shapes with the same inputs. Repetitions are interleaved
# (each round: dynamic, then static; kiln.InferenceSession.benchmark, timed
# in C++), the figure is the median over rounds of each side's per-round
# median, and the ratio dynamic / static (issue 15's goal: <= 1.15). The
# outputs of the two artifacts are compared on the benchmark inputs.
#
# Models: the demo small CNN, ResNet-18 and transformer block
# (models/generate_demo_models.py, dims batch and seq symbolic) and, when
# given, any ONNX file with symbolic dims (--model path:name=N,...).
#
#   scripts/bench_dynamic.py [--threads 2] [--rounds 5] [--iterations 20]
#                            [--markdown docs/results/dynamic-shapes-cpu.md]
#
#===----------------------------------------------------------------------===#

import argparse
import datetime
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# model -> list of (symbol values) to run at; each becomes one row.
DEMO = {
    "small_cnn": [{"batch": 1}, {"batch": 8}],
    "resnet18": [{"batch": 1}, {"batch": 4}],
    "transformer_block": [{"batch": 1, "seq": 64}, {"batch": 4, "seq": 128}],
}


def parse_model(text):
    """path:sym=N,sym=N;sym=N (';' separates shape sets)."""
    path, _, rest = text.partition(":")
    sets = []
    for group in rest.split(";") if rest else [""]:
        values = {}
        for item in filter(None, group.split(",")):
            name, _, n = item.partition("=")
            values[name] = int(n)
        sets.append(values)
    return path, sets


def static_shapes(session, values):
    """kiln.compile's input_shapes for these symbol values."""
    return {arg.name: [values.get(d, 1) if isinstance(d, str) else d
                       for d in arg.shape]
            for arg in session.get_inputs()}


def random_feeds(session, values, seed):
    rng = np.random.default_rng(seed)
    feeds = {}
    for arg in session.get_inputs():
        shape = [values.get(d, 1) if isinstance(d, str) else d
                 for d in arg.shape]
        if arg.dtype.kind == "f":
            feeds[arg.name] = rng.standard_normal(shape).astype(arg.dtype)
        else:
            feeds[arg.name] = rng.integers(0, 8, shape).astype(arg.dtype)
    return feeds


def main():
    parser = argparse.ArgumentParser(
        description="Dynamic vs static artifacts on the CPU")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--model", action="append", default=[],
                        help="path:sym=N,...;sym=N,... (more models)")
    parser.add_argument("--only", default="",
                        help="comma-separated demo models (default all)")
    parser.add_argument("--markdown", help="write the table here too")
    args = parser.parse_args()

    sys.path.insert(0, os.path.join(ROOT, "build", "python"))
    import kiln
    from bench_cpu import cpu_name  # (this folder)

    work = tempfile.mkdtemp(prefix="kiln-bench-dynamic-")
    demo = [m for m in DEMO if not args.only or m in args.only.split(",")]
    models = []
    if demo:
        subprocess.run([sys.executable,
                        os.path.join(ROOT, "models", "generate_demo_models.py"),
                        "--out", work, "--only", ",".join(demo)], check=True,
                       stdout=subprocess.DEVNULL)
        models += [(os.path.join(work, m + ".onnx"), DEMO[m]) for m in demo]
    models += [parse_model(m) for m in args.model]

    rows = []
    for path, shape_sets in models:
        name = os.path.splitext(os.path.basename(path))[0]
        start = time.time()
        dynamic = kiln.compile(path)
        compile_dynamic = time.time() - start
        dyn_session = kiln.InferenceSession(dynamic, threads=args.threads)
        for values in shape_sets:
            start = time.time()
            static = kiln.compile(
                path, input_shapes=static_shapes(dyn_session, values))
            compile_static = time.time() - start
            stat_session = kiln.InferenceSession(static, threads=args.threads)
            feeds = random_feeds(dyn_session, values, seed=1)
            out_dyn = dyn_session.run(None, feeds)
            out_stat = stat_session.run(None, feeds)
            err = max(float(np.max(np.abs(a.astype(np.float64) - b)))
                      for a, b in zip(out_dyn, out_stat))
            medians = {"dynamic": [], "static": []}
            for _ in range(args.rounds):
                for label, session in (("dynamic", dyn_session),
                                       ("static", stat_session)):
                    r = session.benchmark(feeds, warmup=args.warmup,
                                          iterations=args.iterations)
                    medians[label].append(r["time_ms"]["median"])
            d = statistics.median(medians["dynamic"])
            s = statistics.median(medians["static"])
            shape = ", ".join(f"{k}={v}" for k, v in values.items())
            rows.append((name, shape, d, s, d / s, err, compile_dynamic,
                         compile_static))
            print(f"{name:20s} {shape:18s} dynamic {d:9.3f} ms  static "
                  f"{s:9.3f} ms  ratio {d / s:5.2f}  max|diff| {err:.1e}  "
                  f"compile {compile_dynamic:.1f}/{compile_static:.1f} s",
                  flush=True)
    ratios = [r[4] for r in rows]
    geomean = float(np.exp(np.mean(np.log(ratios)))) if ratios else float("nan")
    print(f"geometric mean dynamic/static: {geomean:.2f}")

    if args.markdown:
        command = "scripts/bench_dynamic.py " + " ".join(sys.argv[1:])
        lines = [
            "# Dynamic vs static artifacts on the CPU",
            "",
            f"{datetime.date.today().isoformat()}, {cpu_name()}, "
            f"{os.cpu_count()} cores, {args.threads} threads; "
            f"`{command.strip()}`.",
            "",
            "Each model compiled once with its dims symbolic (no shape flags) "
            "and once with `--input-shapes` at the row's shape; both run on "
            "the same inputs, interleaved, "
            f"{args.rounds} rounds x {args.iterations} runs (median of the "
            "per-round medians). Ratio: dynamic / static (goal <= 1.15).",
            "",
            "| model | shape | dynamic ms | static ms | ratio | max abs diff "
            "| compile s (dyn/static) |",
            "|---|---|---:|---:|---:|---:|---:|",
        ]
        for name, shape, d, s, ratio, err, cd, cs in rows:
            lines.append(f"| {name} | {shape} | {d:.3f} | {s:.3f} | "
                         f"{ratio:.2f} | {err:.1e} | {cd:.1f} / {cs:.1f} |")
        lines += ["", f"Geometric mean of the ratios: {geomean:.2f}.", ""]
        with open(args.markdown, "w") as f:
            f.write("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
