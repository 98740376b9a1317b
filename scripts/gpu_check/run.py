#!/usr/bin/env python3
#===- scripts/gpu_check/run.py - The GPU half of the GPU check -------------===#
#
# Runs every check of a bundle made by prepare.py (manifest.json) on the GPU
# host, with the Python standard library only, and writes one folder:
#
#   OUT/<check>.json     kiln-run's result (schema kiln.run-result v2)
#   OUT/<check>.log      its output
#   OUT/reference-*.json the references: device copy bandwidth and cuBLAS
#                        alone (kiln-cuda-bench), PyTorch eager and
#                        torch.compile (torch_peer.py, when torch imports)
#   OUT/summary.json     every check: status (pass, fail, error, skipped),
#                        figures and the goal it is measured against
#   OUT/summary.md       the same as a table, printed too
#
# Without a CUDA device (kiln-run says "no CUDA device") every check is
# reported SKIPPED with kiln-run's reason and the script exits 0, so the
# build machine runs this half too. --require-gpu makes that an error.
# --fake-driver LIBDIR runs every artifact on the runtime's stand-in driver
# (LIBDIR/libkiln_fake_cuda.so, libkiln_fake_cublaslt.so,
# libkiln_fake_cudnn.so: test/Runtime):
# kernels do nothing there, so outputs are not compared, but each artifact
# must load, resolve its kernels, allocate, capture and replay its graph.
# With a device, the CUDA runtime's own check (BUNDLE/runtime-check/run.sh)
# runs too.
#
#   run.py BUNDLE OUT [--iterations N] [--warmup N] [--require-gpu]
#          [--fake-driver LIBDIR]
#
#===----------------------------------------------------------------------===#

import argparse
import json
import os
import platform
import subprocess
import sys
import time

NO_DEVICE = "no CUDA device"


def log(message):
    print(f"[gpu-check run] {message}", flush=True)


class Bundle:
    def __init__(self, path):
        self.path = os.path.abspath(path)
        with open(os.path.join(self.path, "manifest.json")) as f:
            self.manifest = json.load(f)
        self.env = dict(os.environ)
        lib = os.path.join(self.path, "lib")
        self.env["LD_LIBRARY_PATH"] = lib + (
            ":" + self.env["LD_LIBRARY_PATH"]
            if self.env.get("LD_LIBRARY_PATH") else "")

    def tool(self, name):
        return os.path.join(self.path, "bin", name)

    def file(self, relative):
        return os.path.join(self.path, relative)

    def run(self, cmd, log_path, timeout=600):
        start = time.time()
        try:
            result = subprocess.run(cmd, capture_output=True, text=True,
                                    env=self.env, timeout=timeout)
            output, code = result.stdout + result.stderr, result.returncode
        except subprocess.TimeoutExpired as e:
            output = f"timed out after {timeout} s\n{e.stdout or ''}"
            code = 124
        with open(log_path, "w") as f:
            f.write("$ " + " ".join(cmd) + "\n" + output)
        return code, output, time.time() - start


def kiln_run_check(bundle, check, out, args):
    """Runs one artifact with kiln-run on the GPU; returns the summary row."""
    json_path = os.path.join(out, f"{check['name']}.json")
    cmd = [bundle.tool("kiln-run"), bundle.file(check["artifact"]),
           "--device", "cuda", "--warmup", str(args.warmup),
           "--iterations", str(args.iterations), "--json", json_path]
    if check.get("inputs"):
        cmd += ["--inputs", bundle.file(check["inputs"])]
    else:
        cmd += ["--seed", str(check["seed"])]
    if check.get("expected") and not args.fake_driver:
        tol = check["tolerance"]
        cmd += ["--expected", bundle.file(check["expected"]),
                "--rtol", str(tol["rtol"]), "--atol", str(tol["atol"])]
    code, output, wall = bundle.run(
        cmd, os.path.join(out, f"{check['name']}.log"))
    row = {"name": check["name"], "kind": check["kind"],
           "kernels": check["kernels"], "command": " ".join(cmd),
           "wall_s": round(wall, 2)}
    if args.fake_driver and "CUBLAS_STATUS_NOT_SUPPORTED" in output:
        row.update(status="skipped",
                   reason="the fake cuBLASLt computes float32 only")
        return row
    if NO_DEVICE in output:
        line = next(l for l in output.splitlines() if NO_DEVICE in l)
        row.update(status="skipped", reason=line.strip())
        return row
    if not os.path.exists(json_path):
        row.update(status="error", reason=output.strip()[-800:])
        return row
    with open(json_path) as f:
        result = json.load(f)
    timing = result.get("timing") or {}
    row["median_ms"] = timing.get("median_ms")
    row["device_peak_bytes"] = (result.get("memory") or {}).get(
        "device_peak_bytes")
    if code == 0:
        row["status"] = "pass"
    elif code == 1:
        row["status"] = "fail"
        row["reason"] = "output mismatch against the CPU backend"
    else:
        row.update(status="error", reason=output.strip()[-800:])
    worst = [o.get("max_abs_error") for o in result.get("outputs", [])
             if o.get("max_abs_error") is not None]
    if worst:
        row["max_abs_error"] = max(worst)
    median = row.get("median_ms")
    if median and check["kind"] == "bandwidth":
        row["gb_per_s"] = check["bytes_moved"] / (median * 1e-3) / 1e9
    if median and check["kind"] == "gemm":
        m, n, k = check["mnk"]
        row["tflops"] = 2.0 * m * n * k / (median * 1e-3) / 1e12
    return row


def bench_reference(bundle, out, what, argv):
    """kiln-cuda-bench (device copy bandwidth, cuBLASLt alone) as JSON."""
    tool = bundle.tool("kiln-cuda-bench")
    if not os.path.exists(tool):
        return {"skipped": "kiln-cuda-bench is not in the bundle"}
    path = os.path.join(out, f"reference-{what}.json")
    code, output, _ = bundle.run([tool, *argv, "--json", path],
                                 os.path.join(out, f"reference-{what}.log"))
    if code != 0 or not os.path.exists(path):
        return {"error": output.strip()[-500:]}
    with open(path) as f:
        return json.load(f)


def torch_reference(bundle, out, model, args):
    path = os.path.join(out, f"reference-torch-{model}.json")
    code, output, _ = bundle.run(
        [sys.executable, bundle.file("torch_peer.py"), bundle.path, model,
         "--iterations", str(args.iterations), "--warmup", str(args.warmup)],
        os.path.join(out, f"reference-torch-{model}.log"))
    if code != 0:
        if "No module named 'torch'" in output:
            return {"skipped": "PyTorch is not installed"}
        return {"error": output.strip()[-500:]}
    result = json.loads(output.strip().splitlines()[-1])
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
    return result


def goal_rows(rows, manifest, references):
    """The issue's goals, each computed from the measured rows (None where a
    figure is missing)."""
    by = {r["name"]: r for r in rows}
    goals = []

    def add(goal, value, target, better, detail):
        met = None if value is None else (
            value >= target if better == "higher" else value <= target)
        goals.append({"goal": goal, "value": value, "target": target,
                      "met": met, "detail": detail})

    copy = references.get("copy", {}).get("gb_per_s")
    ew = by.get("elementwise-codegen", {}).get("gb_per_s")
    add("fused elementwise / device copy bandwidth",
        None if not (copy and ew) else ew / copy, 0.70, "higher",
        f"kernel {ew} GB/s, copy {copy} GB/s")
    cublas = references.get("gemm", {}).get("tflops")
    for kernels in ("library", "codegen"):
        t = by.get(f"gemm_f16-{kernels}", {}).get("tflops")
        add(f"fp16 GEMM {kernels} / cuBLAS alone",
            None if not (t and cublas) else t / cublas,
            0.90 if kernels == "library" else 0.0, "higher",
            f"{t} TFLOP/s vs {cublas} TFLOP/s")
    eager = references.get("torch", {}).get("eager_median_ms")
    compiled = references.get("torch", {}).get("compile_median_ms")
    lib = by.get("transformer_block-library", {}).get("median_ms")
    add("transformer block library / PyTorch eager",
        None if not (lib and eager) else lib / eager, 1.3, "lower",
        f"Kiln {lib} ms, eager {eager} ms, torch.compile {compiled} ms")
    return goals


def main():
    parser = argparse.ArgumentParser(
        description="Runs a GPU check bundle (the GPU half).")
    parser.add_argument("bundle")
    parser.add_argument("out")
    parser.add_argument("--iterations", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--require-gpu", action="store_true",
                        help="fail instead of skipping without a device")
    parser.add_argument("--fake-driver", metavar="LIBDIR",
                        help="run on the runtime's stand-in libcuda and "
                        "cuBLASLt and cuDNN in LIBDIR (outputs not "
                        "compared)")
    args = parser.parse_args()
    bundle = Bundle(args.bundle)
    if args.fake_driver:
        lib = os.path.abspath(args.fake_driver)
        bundle.env["KILN_LIBCUDA"] = os.path.join(lib, "libkiln_fake_cuda.so")
        bundle.env["KILN_LIBCUBLASLT"] = os.path.join(
            lib, "libkiln_fake_cublaslt.so")
        # Library-mode convolutions (kiln_rt_cuda_conv2d): the stand-in
        # cuDNN, never a real one (it cannot run on the fake driver).
        bundle.env["KILN_LIBCUDNN"] = os.path.join(
            lib, "libkiln_fake_cudnn.so")
        # ... and NCCL (the one-rank tensor-parallel check), when built.
        fake_nccl = os.path.join(lib, "libkiln_fake_nccl.so")
        if os.path.exists(fake_nccl):
            bundle.env["KILN_LIBNCCL"] = fake_nccl
    os.makedirs(args.out, exist_ok=True)
    manifest = bundle.manifest
    rows = []
    skip_reason = None
    for check in manifest["checks"]:
        if skip_reason:
            rows.append({"name": check["name"], "kind": check["kind"],
                         "kernels": check["kernels"], "status": "skipped",
                         "reason": skip_reason})
            continue
        row = kiln_run_check(bundle, check, args.out, args)
        if row["status"] == "skipped" and NO_DEVICE in row["reason"]:
            skip_reason = row["reason"]
        rows.append(row)
        log(f"{row['name']}: {row['status']}"
            + (f" ({row.get('reason')})" if row.get("reason") else "")
            + (f", {row['median_ms']:.3f} ms" if row.get("median_ms")
               else ""))

    references = {}
    runtime_check = os.path.join(bundle.path, "runtime-check", "run.sh")
    if not skip_reason and not args.fake_driver and os.path.exists(
            runtime_check):
        code, output, wall = bundle.run(
            [runtime_check, os.path.join(args.out, "runtime-check")],
            os.path.join(args.out, "runtime-check.log"))
        rows.append({"name": "runtime-check", "kind": "runtime",
                     "kernels": "-", "wall_s": round(wall, 2),
                     "status": "pass" if code == 0 else "fail",
                     "reason": "" if code == 0 else output.strip()[-300:]})
    if not skip_reason and not args.fake_driver:
        for check in manifest["checks"]:
            if check["kind"] == "bandwidth" and "copy" not in references:
                references["copy"] = bench_reference(
                    bundle, args.out, "copy",
                    ["copy", str(check["bytes_moved"] // 2)])
            if check["kind"] == "gemm" and "gemm" not in references:
                m, n, k = check["mnk"]
                references["gemm"] = bench_reference(
                    bundle, args.out, "gemm",
                    ["gemm", str(m), str(n), str(k), check["dtype"]])
        if os.path.isdir(bundle.file("torch")):
            for model in os.listdir(bundle.file("torch")):
                references["torch"] = torch_reference(bundle, args.out, model,
                                                      args)
    summary = {
        "schema": "kiln.gpu-check-results", "version": 1,
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "host": platform.node(), "chip": manifest["chip"],
        "bundle_git": manifest.get("git"),
        "device_present": skip_reason is None and not args.fake_driver,
        "fake_driver": bool(args.fake_driver),
        "skip_reason": skip_reason, "checks": rows,
        "references": references,
        "goals": ([] if skip_reason or args.fake_driver
                  else goal_rows(rows, manifest, references)),
    }
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    title = f"# Kiln GPU check ({summary['date']}, chip {manifest['chip']})"
    if args.fake_driver:
        title += ("\n\nOn the CUDA runtime's fake driver: every artifact "
                  "loaded and ran, but no kernel computed anything, so the "
                  "outputs are not compared and the times mean nothing.")
    lines = [title,
             "", "| check | status | median ms | figure | note |",
             "|---|---|---:|---|---|"]
    for r in rows:
        figure = ""
        if args.fake_driver:
            pass
        elif r.get("gb_per_s"):
            figure = f"{r['gb_per_s']:.0f} GB/s"
        elif r.get("tflops"):
            figure = f"{r['tflops']:.1f} TFLOP/s"
        elif r.get("max_abs_error") is not None:
            figure = f"max abs err {r['max_abs_error']:.3g}"
        median = (f"{r['median_ms']:.3f}"
                  if r.get("median_ms") and not args.fake_driver else "")
        lines.append(f"| {r['name']} | {r['status'].upper()} | {median} | "
                     f"{figure} | {r.get('reason', '')[:120]} |")
    for g in summary["goals"]:
        value = "n/a" if g["value"] is None else f"{g['value']:.2f}"
        lines.append(f"\n- {g['goal']}: {value} (target {g['target']}, "
                     f"met: {g['met']}; {g['detail']})")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(args.out, "summary.md"), "w") as f:
        f.write(text)
    print(text)
    if skip_reason:
        log(f"SKIPPED: {skip_reason}")
        return 2 if args.require_gpu else 0
    bad = [r for r in rows if r["status"] in ("fail", "error")]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
