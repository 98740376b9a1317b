#!/usr/bin/env python3
#===- scripts/bench_int8.py - int8 (kiln-fuse-qdq) vs fp32 on the CPU ----===#
#
# For the demo MLP, transformer block and small CNN
# (models/generate_demo_models.py) at
# each batch size: the fp32 model with static shapes, its QDQ version from
# onnxruntime.quantization.quantize_static (scripts/quantize_demo.py:
# per-channel int8 weights, int8 activations; the transformer's MatMuls
# only; the CNN's BatchNorms folded first, its Convs integer convolutions),
# compiled with kiln.compile at -O2 three ways: fp32, int8 (the QDQ
# model, kiln-fuse-qdq on: integer matmuls on the VNNI kernel) and QDQ with
# --disable-pass=kiln-fuse-qdq (what Kiln did before: float matmuls between
# elementwise Q/DQ passes), through the kiln package. Timing is interleaved:
# every round runs each artifact once (InferenceSession.benchmark, kiln-run's
# timing core: warm-up, then N timed runs, median), so that a
# noisy neighbour slows all; reported: the median over rounds of each
# per-round median, and the median over rounds of the per-round ratios. Accuracy of the int8 model against fp32
# on held-out inputs (seed 100, not the calibration seeds): max abs error,
# cosine similarity, top-1 agreement along the last axis.
#
#   scripts/bench_int8.py [--threads 2] [--rounds 5] [--iterations 50]
#                         [--batches 1,8] [--models mlp,...] [--markdown FILE]
#
#===----------------------------------------------------------------------===#

import argparse
import copy
import datetime
import json
import os
import statistics
import sys
import tempfile

import numpy as np
import onnx

from bench_cpu import cpu_name  # scripts/ is sys.path[0]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "models"))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import generate_demo_models as gdm  # noqa: E402
import quantize_demo  # noqa: E402

# model -> the input's shape at batch b (the transformer as in bench_cpu.py)
MODELS = {
    "mlp": lambda b: [b, 784],
    "transformer_block": lambda b: [b, 64, 256],
    "small_cnn": lambda b: [b, 3, 32, 32],
}


def static_model(name, batch):
    model, _, _ = gdm.BUILDERS[name]()
    model = copy.deepcopy(model)
    shape = MODELS[name](batch)
    for dim, size in zip(model.graph.input[0].type.tensor_type.shape.dim,
                         shape):
        if dim.HasField("dim_param"):
            dim.dim_value = size
    for out in model.graph.output:
        dims = out.type.tensor_type.shape.dim
        for i, dim in enumerate(dims):
            if dim.HasField("dim_param"):
                dim.dim_value = shape[i]
    onnx.checker.check_model(model)
    return model


def accuracy(got, want):
    got = got.astype(np.float64).reshape(-1, got.shape[-1])
    want = want.astype(np.float64).reshape(-1, want.shape[-1])
    cos = float(np.dot(got.ravel(), want.ravel()) /
                (np.linalg.norm(got) * np.linalg.norm(want) + 1e-300))
    top1 = float(np.mean(got.argmax(-1) == want.argmax(-1)))
    return float(np.abs(got - want).max()), cos, top1


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--batches", default="1,8")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--markdown", help="also write the table here")
    args = parser.parse_args()
    import kiln
    from bench_cpu import kiln_session, time_kiln
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for name in args.models.split(","):
            for batch in [int(b) for b in args.batches.split(",")]:
                tag = f"{name}-b{batch}"
                fp32 = static_model(name, batch)
                fp32_path = os.path.join(work, f"{tag}.onnx")
                onnx.save(fp32, fp32_path)
                qdq_path = os.path.join(work, f"{tag}_qdq.onnx")
                quantize_demo.quantize(fp32_path, qdq_path, name)
                artifacts = {}
                for kind, src, extra in (
                        ("fp32", fp32_path, []),
                        ("int8", qdq_path, []),
                        ("qdq-float", qdq_path, ["kiln-fuse-qdq"])):
                    out = os.path.join(work, f"{tag}-{kind}.kiln")
                    kiln.compile(src, opt_level=2,
                                 disable_passes=extra).save(out)
                    artifacts[kind] = kiln_session(out, args.threads)
                feeds = quantize_demo.inputs_for(fp32, seed=100)
                outs = {k: session.run(None, feeds)[0]
                        for k, session in artifacts.items()}
                times = {kind: [] for kind in artifacts}
                for r in range(args.rounds):
                    for kind, session in artifacts.items():
                        times[kind].append(time_kiln(
                            session, feeds, args.warmup, args.iterations))
                med = {k: statistics.median(v) for k, v in times.items()}
                err, cos, top1 = accuracy(outs["int8"], outs["fp32"])
                # Ratios per round (the three ran back to back), then the
                # median: robust to a neighbour's load changing between
                # rounds.
                ratio = statistics.median(
                    f / i for f, i in zip(times["fp32"], times["int8"]))
                ratio_qdq = statistics.median(
                    q / i for q, i in zip(times["qdq-float"], times["int8"]))
                rows.append(dict(model=name, batch=batch, **{
                    f"{k}_ms": v for k, v in med.items()},
                    speedup=ratio, speedup_vs_qdq=ratio_qdq,
                    max_abs=err, cosine=cos, top1=top1))
                print(json.dumps(rows[-1]), flush=True)

    cpu = cpu_name()
    lines = [
        f"Measured {datetime.date.today()} on {cpu}, {args.threads} threads, "
        f"{args.rounds} interleaved rounds x {args.iterations} timed runs "
        f"(after {args.warmup} warm-up); times: median of per-round medians; "
        "ratios: median of per-round ratios.",
        "",
        "| model | batch | fp32 ms | int8 ms | QDQ without the pass ms | "
        "fp32 / int8 | QDQ-float / int8 | max abs err vs fp32 | cosine | "
        "top-1 |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['model']} | {r['batch']} | {r['fp32_ms']:.3f} | "
            f"{r['int8_ms']:.3f} | {r['qdq-float_ms']:.3f} | "
            f"{r['speedup']:.2f}x | {r['speedup_vs_qdq']:.2f}x | "
            f"{r['max_abs']:.3g} | {r['cosine']:.5f} | {r['top1']:.3f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
