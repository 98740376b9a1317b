#!/usr/bin/env python3
#===- scripts/bench_ptq.py - Kiln's own int8 PTQ vs fp32 (and vs ORT's) --===#
#
# The demo MLP (and, with --models, the transformer block) quantized by
# Kiln itself: kiln.compile(precision="int8", --calibration=DIR) with each
# calibration method, on the same 16 seeded calibration batches that
# scripts/quantize_demo.py gives onnxruntime.quantization.quantize_static.
# Accuracy against fp32 on held-out batches (seeds 100-103) from Kiln's
# --accuracy-report (the model's output), beside the QDQ model of
# onnxruntime's quantize_static compiled by Kiln (the same arithmetic
# Kiln's int8 artifact runs, measured the same way (kiln.InferenceSession) against
# the fp32 artifact). With --time: interleaved benchmark() timing of fp32,
# Kiln-PTQ int8 (minmax) and ORT-PTQ int8 (rounds: each artifact once,
# warm-up then N timed runs, median; reported the median of per-round
# medians and of per-round ratios).
#
#   scripts/bench_ptq.py [--models mlp] [--batches 1,8] [--time]
#                        [--threads 1] [--rounds 5] [--iterations 200]
#                        [--markdown FILE]
#
#===----------------------------------------------------------------------===#

import argparse
import datetime
import json
import os
import statistics
import sys
import tempfile

import numpy as np
import onnx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import bench_int8  # noqa: E402
import quantize_demo  # noqa: E402

METHODS = ["minmax", "percentile", "entropy"]


def write_sets(root, model, seeds, batch):
    for seed in seeds:
        d = os.path.join(root, f"test_data_set_{seed:03d}")
        os.makedirs(d, exist_ok=True)
        for i, (name, value) in enumerate(
                quantize_demo.inputs_for(model, seed, batch).items()):
            np.save(os.path.join(d, f"input_{i}.npy"), value)
    return root


def load_set(set_dir):
    """A test data folder's inputs (input_N.npy), in order."""
    files = sorted((f for f in os.listdir(set_dir) if f.startswith("input_")),
                   key=lambda f: int(f[6:-4]))
    return [np.load(os.path.join(set_dir, f)) for f in files]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--models", default="mlp")
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--time", action="store_true")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--markdown")
    args = ap.parse_args()

    import kiln
    from bench_cpu import kiln_session, time_kiln
    acc_rows, time_rows = [], []
    with tempfile.TemporaryDirectory() as work:
        for name in args.models.split(","):
            for batch in [int(b) for b in args.batches.split(",")]:
                tag = f"{name}-b{batch}"
                fp32 = bench_int8.static_model(name, batch)
                fp32_path = os.path.join(work, f"{tag}.onnx")
                onnx.save(fp32, fp32_path)
                calib = write_sets(os.path.join(work, f"{tag}-calib"), fp32,
                                   range(16), batch)
                hold = write_sets(os.path.join(work, f"{tag}-hold"), fp32,
                                  range(100, 104), batch)
                arts = {"fp32": os.path.join(work, f"{tag}-fp32.kiln")}
                kiln.compile(fp32_path).save(arts["fp32"])
                for method in METHODS:
                    art = os.path.join(work, f"{tag}-{method}.kiln")
                    report = os.path.join(work, f"{tag}-{method}.json")
                    kiln.compile(fp32_path, precision="int8", flags=[
                        "--calibration=" + calib, "--holdout=" + hold,
                        "--calibration-method=" + method,
                        "--accuracy-report=" + report]).save(art)
                    arts["kiln-" + method] = art
                    q = json.load(open(report))["outputs"][0]["holdout"]
                    acc_rows.append((name, batch, f"Kiln PTQ, {method}",
                                     q["max_abs_error"],
                                     q["cosine_similarity"],
                                     q["top1_agreement"]))
                # onnxruntime's quantize_static QDQ model, compiled by Kiln.
                ort_q = os.path.join(work, f"{tag}-ort-qdq.onnx")
                quantize_demo.quantize(fp32_path, ort_q, name)
                arts["ort"] = os.path.join(work, f"{tag}-ort.kiln")
                kiln.compile(ort_q).save(arts["ort"])
                sessions = {k: kiln_session(a, args.threads)
                            for k, a in arts.items()}
                outs = {k: [] for k in ("fp32", "ort")}
                for set_dir in sorted(os.listdir(hold)):
                    values = load_set(os.path.join(hold, set_dir))
                    for kind in outs:
                        session = sessions[kind]
                        feeds = {arg.name: v for arg, v in
                                 zip(session.get_inputs(), values)}
                        outs[kind].append(session.run(None, feeds)[0])
                err, cos, top1 = bench_int8.accuracy(
                    np.stack(outs["ort"]), np.stack(outs["fp32"]))
                acc_rows.append((name, batch,
                                 "onnxruntime quantize_static (minmax), "
                                 "compiled by Kiln", err, cos, top1))
                if not args.time:
                    continue
                feeds = {fp32.graph.input[0].name: np.load(os.path.join(
                    hold, "test_data_set_100", "input_0.npy"))}
                kinds = ["fp32", "kiln-minmax", "ort"]
                times = {k: [] for k in kinds}
                ratios = {k: [] for k in kinds[1:]}
                for _ in range(args.rounds):
                    t = {k: time_kiln(sessions[k], feeds, args.warmup,
                                      args.iterations) for k in kinds}
                    for k in kinds:
                        times[k].append(t[k])
                    for k in kinds[1:]:
                        ratios[k].append(t["fp32"] / t[k])
                time_rows.append((name, batch,
                                  *[statistics.median(times[k])
                                    for k in kinds],
                                  *[statistics.median(ratios[k])
                                    for k in kinds[1:]]))

    lines = [f"Measured {datetime.date.today()} (scripts/bench_ptq.py "
             f"{' '.join(sys.argv[1:])}); accuracy of the output against "
             "fp32 on 4 held-out batches (seeds 100-103; calibration: seeds "
             "0-15).", "",
             "| model | batch | quantized by | max abs err | cosine | top-1 |",
             "|---|---|---|---|---|---|"]
    for name, batch, how, err, cos, top1 in acc_rows:
        lines.append(f"| {name} | {batch} | {how} | {err:.3g} | {cos:.5f} "
                     f"| {top1:.3f} |")
    if time_rows:
        lines += ["", f"{args.threads} thread(s), {args.rounds} interleaved "
                  f"rounds x {args.iterations} timed runs (after "
                  f"{args.warmup} warm-up); times: median of per-round "
                  "medians; ratios: median of per-round ratios.", "",
                  "| model | batch | fp32 ms | Kiln-PTQ int8 ms | ORT-PTQ "
                  "int8 ms | fp32 / Kiln-PTQ | fp32 / ORT-PTQ |",
                  "|---|---|---|---|---|---|---|"]
        for name, batch, t32, tk, to, rk, ro in time_rows:
            lines.append(f"| {name} | {batch} | {t32:.3f} | {tk:.3f} | "
                         f"{to:.3f} | {rk:.2f}x | {ro:.2f}x |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
