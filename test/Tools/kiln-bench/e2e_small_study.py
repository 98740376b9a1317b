#!/usr/bin/env python3
#===- e2e_small_study.py - kiln-bench end to end on a tiny seed study -----===#
#
# Runs build/bin/kiln-bench for real on the seed's 2x2 grid at a tiny size
# (1 layer, d_model 64, sequence 16), with both kernel strategies, ONNX
# Runtime, a two-pass ablation and both sweeps, then checks the report
# folder: every configuration measured (the torch peer skipped with its
# reason when PyTorch is absent), the compiled variants within their own
# precision's tolerance, every report section and plot present,
# results.json valid against its schema, one CSV row per configuration.
# Correctness only: no timing threshold.
#
#   e2e_small_study.py --kiln-bench build/bin/kiln-bench --workdir DIR
#
#===----------------------------------------------------------------------===#

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import xml.dom.minidom

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))

STUDY = """
[study]
name = "e2e-tiny"
threads = 2
warmup = 1
iterations = 3
rounds = 2

[models]
preset = "small"
config = { layers = 1, d_model = 64, heads = 4, kv_heads = 2, ffn = 128, vocab = 128 }
variants = ["softmax_fp16", "linear_int8", "softmax_int8", "linear_fp16"]

[grid]
kernels = ["codegen", "library"]
batch = [1]
seq_len = [16]

[ablation]
passes = ["kiln-fuse-attention", "cse"]

[sweep]
variants = ["softmax_fp16", "linear_fp16"]
batch = [1, 2]
seq_len = [16, 32]
"""


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--kiln-bench", required=True)
    p.add_argument("--workdir", required=True)
    args = p.parse_args()
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    study = os.path.join(args.workdir, "tiny.toml")
    with open(study, "w") as f:
        f.write(STUDY)
    out = os.path.join(args.workdir, "report")
    proc = subprocess.run([args.kiln_bench, study, "--out", out],
                          text=True, capture_output=True)
    print(proc.stdout)
    if proc.returncode != 0:
        print(proc.stderr, file=sys.stderr)
        return fail(f"kiln-bench exited {proc.returncode}")
    errors = []
    # The seed table is printed.
    for v in ("softmax_fp16", "linear_int8", "softmax_int8", "linear_fp16"):
        if f"| {v} |" not in proc.stdout:
            errors.append(f"stdout: no table row for {v}")
    with open(os.path.join(out, "results.json")) as f:
        res = json.load(f)
    with open(os.path.join(ROOT, "docs", "schemas",
                           "kiln.bench-results.v1.schema.json")) as f:
        schema = json.load(f)
    import jsonschema
    for e in jsonschema.Draft202012Validator(schema).iter_errors(res):
        errors.append(f"results.json: {'/'.join(map(str, e.path))}: "
                      f"{e.message}")
    configs = res["configurations"]
    for c in configs:
        if c["engine"] == "torch":
            if c["status"] != "skipped" and c["status"] != "measured":
                errors.append(f"{c['label']}: {c['status']} {c['error']}")
            continue
        if c["status"] != "measured":
            errors.append(f"{c['label']}: {c['status']}: {c['error']}")
            continue
        if c["engine"] == "kiln":
            sc = c["self_check"] or {}
            if not sc.get("pass"):
                errors.append(f"{c['label']}: outside its tolerance: "
                              f"{sc.get('reasons')}")
            if not c["consistency"] or not c["consistency"][
                    "bit_identical"]:
                errors.append(f"{c['label']}: repeated runs differ")
            t = c["timing"]
            if t["count"] != 2 * 3 or len(t["samples_ms"]) != 6:
                errors.append(f"{c['label']}: {t['count']} timed runs, "
                              f"expected 2 rounds x 3")
    groups = {g for c in configs for g in c["groups"]}
    for g in ("main", "ablation", "sweep-batch", "sweep-seq"):
        if g not in groups:
            errors.append(f"no configuration in group {g}")
    abl = sorted(c["passes"] for c in configs if "ablation" in c["groups"])
    if abl != ["O0", "O3", "O3-no-cse", "O3-no-kiln-fuse-attention"]:
        errors.append(f"ablation configurations {abl}")
    with open(os.path.join(out, "report.md")) as f:
        md = f.read()
    for heading in ("## The variants (the seed's table)",
                    "## What makes the difference",
                    "## Kiln against the peers",
                    "## Where the time goes",
                    "## Ablation: each pass's effect on softmax_fp16",
                    "## Sweep over the batch size",
                    "## Sweep over the sequence length",
                    "## All configurations",
                    "## How this was measured"):
        if heading not in md:
            errors.append(f"report.md: no '{heading}'")
    if "**Crossover (linear_fp16 / softmax_fp16" not in md:
        errors.append("report.md: no crossover statement")
    for plot in res["plots"]:
        path = os.path.join(out, plot)
        try:
            xml.dom.minidom.parse(path)
        except Exception as e:  # noqa: BLE001
            errors.append(f"{plot}: {e}")
    for name in ("latency.svg", "ablation.svg", "sweep-batch.svg",
                 "sweep-seq-len.svg"):
        if f"plots/{name}" not in res["plots"]:
            errors.append(f"no plot {name}")
    with open(os.path.join(out, "results.csv")) as f:
        rows = list(csv.DictReader(f))
    if len(rows) != len(configs):
        errors.append(f"results.csv has {len(rows)} rows for "
                      f"{len(configs)} configurations")
    if errors:
        return fail("\n".join(errors))
    print(f"kiln-bench e2e: {len(configs)} configurations, report complete")
    return 0


def fail(message):
    print(f"FAIL: {message}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
