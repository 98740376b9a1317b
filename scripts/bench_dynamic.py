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
# --hints adds a third artifact per row: the dynamic one compiled with
# --shape-hints giving each symbol 1..<the row's value>..<the largest value
# of the model's rows> (opt = the shape run), timed in the same rounds
# (its ratio: hinted / static).
#
#   scripts/bench_dynamic.py [--threads 2] [--rounds 5] [--iterations 20]
#                            [--hints]
#                            [--markdown docs/results/dynamic-shapes-cpu.md]
#
#===----------------------------------------------------------------------===#

import argparse
import datetime
import os
import shlex
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
    parser.add_argument("--hints", action="store_true",
                        help="also an artifact compiled with --shape-hints "
                             "(opt = the row's shape)")
    parser.add_argument("--markdown", help="write the table here too")
    args = parser.parse_args()

    sys.path.insert(0, os.path.join(ROOT, "build", "python"))
    import kiln
    from bench_cpu import cpu_name  # (this folder)

    load_start = os.getloadavg()
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
        largest = {}
        for values in shape_sets:
            for k, v in values.items():
                largest[k] = max(largest.get(k, 1), v)
        for values in shape_sets:
            start = time.time()
            static = kiln.compile(
                path, input_shapes=static_shapes(dyn_session, values))
            compile_static = time.time() - start
            stat_session = kiln.InferenceSession(static, threads=args.threads)
            sessions = [("dynamic", dyn_session), ("static", stat_session)]
            if args.hints:
                hints = {k: (1, v, largest[k]) for k, v in values.items()}
                hinted = kiln.compile(path, shape_hints=hints)
                sessions.append(("hinted", kiln.InferenceSession(
                    hinted, threads=args.threads)))
            feeds = random_feeds(dyn_session, values, seed=1)
            out_stat = stat_session.run(None, feeds)
            err = 0.0
            for label, session in sessions:
                if label != "static":
                    err = max([err] + [
                        float(np.max(np.abs(a.astype(np.float64) - b)))
                        for a, b in zip(session.run(None, feeds), out_stat)])
            medians = {label: [] for label, _ in sessions}
            for _ in range(args.rounds):
                for label, session in sessions:
                    r = session.benchmark(feeds, warmup=args.warmup,
                                          iterations=args.iterations)
                    medians[label].append(r["time_ms"]["median"])
            d = statistics.median(medians["dynamic"])
            s = statistics.median(medians["static"])
            h = statistics.median(medians["hinted"]) if args.hints else None
            shape = ", ".join(f"{k}={v}" for k, v in values.items())
            rows.append((name, shape, d, s, d / s, err, compile_dynamic,
                         compile_static, h))
            hinted_text = (f"  hinted {h:9.3f} ms ratio {h / s:5.2f}"
                           if h is not None else "")
            print(f"{name:20s} {shape:18s} dynamic {d:9.3f} ms  static "
                  f"{s:9.3f} ms  ratio {d / s:5.2f}{hinted_text}  "
                  f"max|diff| {err:.1e}  "
                  f"compile {compile_dynamic:.1f}/{compile_static:.1f} s",
                  flush=True)
    ratios = [r[4] for r in rows]
    geomean = float(np.exp(np.mean(np.log(ratios)))) if ratios else float("nan")
    print(f"geometric mean dynamic/static: {geomean:.2f}")
    hinted_ratios = [r[8] / r[3] for r in rows if r[8] is not None]
    hinted_geomean = (float(np.exp(np.mean(np.log(hinted_ratios))))
                      if hinted_ratios else None)
    if hinted_geomean is not None:
        print(f"geometric mean hinted/static: {hinted_geomean:.2f}")

    load_end = os.getloadavg()
    load = (f"load average (1 min) {load_start[0]:.1f} at the start, "
            f"{load_end[0]:.1f} at the end")
    print(load)

    if args.markdown:
        command = "scripts/bench_dynamic.py " + shlex.join(sys.argv[1:])
        lines = [
            "# Dynamic vs static artifacts on the CPU",
            "",
            f"{datetime.date.today().isoformat()}, {cpu_name()}, "
            f"{os.cpu_count()} cores, {args.threads} threads, {load}; "
            f"`{command.strip()}`.",
            "",
            "Each model compiled once with its dims symbolic (no shape flags) "
            "and once with `--input-shapes` at the row's shape; both run on "
            "the same inputs, interleaved, "
            f"{args.rounds} rounds x {args.iterations} runs (median of the "
            "per-round medians). Ratio: dynamic / static (goal <= 1.15).",
        ]
        if args.hints:
            lines += [
                "",
                "Hinted: the dynamic model compiled with `--shape-hints` "
                "giving each symbol 1..(the row's value)..(the model's "
                "largest row value), timed in the same rounds; its ratio is "
                "hinted / static. Max abs diff: the largest difference of "
                "the dynamic and hinted outputs from the static ones.",
            ]
        header = "| model | shape | dynamic ms | static ms | ratio "
        rule = "|---|---|---:|---:|---:"
        if args.hints:
            header += "| hinted ms | hinted ratio "
            rule += "|---:|---:"
        lines += ["", header + "| max abs diff | compile s (dyn/static) |",
                  rule + "|---:|---:|"]
        for name, shape, d, s, ratio, err, cd, cs, h in rows:
            hinted_cells = (f"{h:.3f} | {h / s:.2f} | " if args.hints
                            else "")
            lines.append(f"| {name} | {shape} | {d:.3f} | {s:.3f} | "
                         f"{ratio:.2f} | {hinted_cells}{err:.1e} | "
                         f"{cd:.1f} / {cs:.1f} |")
        lines += ["", f"Geometric mean of the ratios: {geomean:.2f}."]
        if hinted_geomean is not None:
            lines.append(f"Geometric mean of the hinted ratios: "
                         f"{hinted_geomean:.2f}.")
        lines.append("")
        with open(args.markdown, "w") as f:
            f.write("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
