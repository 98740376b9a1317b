#!/usr/bin/env python3
#===- e2e_generation_study.py - kiln-bench's generation study end to end --===#
#
# Runs build/bin/kiln-bench for real on a tiny generation study (the seed's
# 2x2 grid as decoders, small preset, a 16-token prompt and 8 new tokens,
# two rounds, two depths) and checks the report folder: every variant
# compiled, Kiln's greedy ids equal ONNX Runtime's on the same fp16 decoder
# (exactly) and int8 decoder (mostly), every (variant, engine) measured
# once per round, onnxruntime-genai measured on the KV-cache decoders and
# skipped with its reason on the linear ones, the pp/tg, depth and profile
# sections filled, report.md with every section. Correctness only: no
# timing threshold.
#
#   e2e_generation_study.py --kiln-bench build/bin/kiln-bench --workdir DIR
#
#===----------------------------------------------------------------------===#

import argparse
import json
import os
import shutil
import subprocess
import sys

STUDY = """
[study]
name = "e2e-generation"
kind = "generation"
threads = 2
warmup = 1
rounds = 2

[models]
variants = ["softmax_fp16", "linear_int8", "softmax_int8", "linear_fp16"]

[task]
prompt = 16
new_tokens = 8

[llama_bench]
pp = 32
tg = 8

[depth]
variants = ["softmax_fp16", "linear_fp16"]
depths = [1, 64]
tokens = 4

[profile]
depth = 16
variants = ["softmax_fp16", "linear_int8"]
top = 5
"""

failures = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what, flush=True)
    if not ok:
        failures.append(what)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln-bench", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    study = os.path.join(args.workdir, "study.toml")
    with open(study, "w") as f:
        f.write(STUDY)
    out = os.path.join(args.workdir, "report")
    proc = subprocess.run([args.kiln_bench, study, "--out", out, "--quiet"],
                          capture_output=True, text=True)
    check(proc.returncode == 0, f"kiln-bench exits 0 ({proc.returncode}) "
          + proc.stderr.strip()[-500:])
    if proc.returncode:
        return 1
    with open(os.path.join(out, "results.json")) as f:
        r = json.load(f)
    variants = r["variants"]
    for v in ["softmax_fp16", "linear_int8", "softmax_int8", "linear_fp16"]:
        x = variants.get(v, {})
        check("error" not in x, f"{v} compiles: {x.get('error', 'yes')}")
        eq = x.get("kiln_equals_onnxruntime")
        want = 1.0 if v.endswith("fp16") else 0.75
        check(eq is not None and eq >= want, f"{v}: Kiln's greedy ids "
              f"agree with ONNX Runtime's on {eq} (>= {want})")
        check("agreement_vs_fp32" in x, f"{v}: agreement with fp32 "
              f"{x.get('agreement_vs_fp32')}")
        task = x.get("task", {})
        for e in ["kiln", "onnxruntime"]:
            check(task.get(e, {}).get("samples") == 2, f"{v}: {e} measured "
                  "in both rounds")
        if v.startswith("softmax"):
            check(task.get("onnxruntime-genai", {}).get("samples") == 2,
                  f"{v}: onnxruntime-genai measured in both rounds "
                  f"{x.get('engine_errors', '')}")
        else:
            check("KV cache" in (x.get("genai_skip") or ""),
                  f"{v}: onnxruntime-genai skipped with its reason")
        lb = x.get("llama_bench", {}).get("kiln", {})
        check(lb.get("pp32", 0) > 0 and lb.get("tg8", 0) > 0,
              f"{v}: pp32/tg8 measured {lb}")
        check(x.get("state_bytes", 0) > 0, f"{v}: state bytes "
              f"{x.get('state_bytes')}")
    check(set(r.get("depth", {})) == {"softmax_fp16", "linear_fp16"} and
          all(len(row) == 2 for row in r["depth"].values()),
          "depth sweep: both variants at both depths")
    check("crossover_depth" in r, "the crossover depth is stated")
    for v in ["softmax_fp16", "linear_int8"]:
        p = variants.get(v, {}).get("decode_profile", {})
        check(len(p.get("kernels", [])) == 5, f"{v}: a decode step's top 5 "
              "kernels")
    check(len(r.get("factors", {}).get("tpot_ms", {})) == 6,
          "the 2x2 factors: 5 ratios and the interaction")
    with open(os.path.join(out, "report.md")) as f:
        text = f.read()
    for section in ["| variant | role | engine | TTFT ms", "## The 2×2 "
                    "factors", "## llama-bench form", "## Decode cost "
                    "against context depth", "a decode step at depth 16"]:
        check(section in text, f"report.md has '{section}'")
    print(f"generation study: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
