#!/usr/bin/env python3
#===- test/Conformance/run_roundtrip.py - Backend tests through the passes -===#
#
# Checks numerically, on the ONNX backend tests of libonnx-testdata, that
# importing a model, running Kiln's graph pipeline and exporting the result
# back to ONNX preserves what the model computes:
#
#   kiln-compile model.onnx -O<n> --decompose-fused --emit=onnx -o out.onnx
#   ONNX Runtime (its own graph optimizations off) runs out.onnx on every
#   test_data_set_*/input_*.pb and the outputs are compared with
#   output_*.pb (rtol 1e-3, atol 1e-7, the ONNX backend tests' defaults).
#
# Statuses:
#   pass          every output of every data set matches the expected
#                 outputs, or what ONNX Runtime computes from the original
#                 model (the peer's own deviations are not Kiln's)
#   mismatch      an output differs from both: a bug in the importer, a pass
#                 or the exporter
#   rejected      kiln-compile refused the model with a diagnostic
#   export-invalid  ONNX Runtime runs the original but not Kiln's export
#   no-peer       ONNX Runtime cannot run the original model either
#   crashed       kiln-compile crashed or timed out
#
# Exit status 1 when a test crashed or when a test listed in --expected no
# longer passes (the list only grows: --update-expected adds new passes).
#
#===----------------------------------------------------------------------===#

import argparse
import collections
import concurrent.futures
import glob
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "E2E"))
from compare_with_onnxruntime import load_tensor_files, run  # noqa: E402
from compare_with_onnxruntime import session as ort_session  # noqa: E402


def session(path):
    return ort_session(path, threads=1)

ROOT = "/usr/share/libonnx-testdata/data"
CATEGORIES = ["node", "simple", "pytorch-converted", "pytorch-operator"]


def close(got, want, rtol, atol):
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return False
    if want.dtype.kind in "fc":
        return np.allclose(got.astype(np.float64), want.astype(np.float64),
                           rtol=rtol, atol=atol, equal_nan=True)
    return np.array_equal(got, want)


def check(test_dir, kiln_compile, opt, scratch, rtol, atol, timeout):
    name = os.path.relpath(test_dir, ROOT)
    out = os.path.join(scratch, name.replace("/", "__") + ".onnx")
    try:
        proc = subprocess.run(
            [kiln_compile, os.path.join(test_dir, "model.onnx"), f"-O{opt}",
             "--decompose-fused", "--emit=onnx", "-o", out],
            stdin=subprocess.DEVNULL, capture_output=True, text=True,
            errors="replace", timeout=timeout)
    except subprocess.TimeoutExpired:
        return name, "crashed", f"timeout after {timeout} s"
    if proc.returncode != 0:
        errors = [l for l in proc.stderr.splitlines() if "error:" in l]
        if proc.returncode == 1 and errors:
            reason = errors[0].split("error:", 1)[1].strip()
            reason = reason.split("model.onnx: ", 1)[-1]
            return name, "rejected", reason[:160]
        return name, "crashed", f"exit {proc.returncode}: {proc.stderr.strip()[:160]}"
    data_sets = sorted(glob.glob(os.path.join(test_dir, "test_data_set_*")))
    try:
        ours = session(out)
    except Exception as e:  # noqa: BLE001 - ORT raises many types
        try:
            session(os.path.join(test_dir, "model.onnx"))
        except Exception:  # noqa: BLE001
            return name, "no-peer", "ONNX Runtime cannot load the original"
        return name, "export-invalid", str(e).splitlines()[0][:160]
    peer = None
    for data_set in data_sets:
        inputs = load_tensor_files(data_set, "input")
        expected = load_tensor_files(data_set, "output")
        try:
            got = run(ours, inputs)
        except Exception as e:  # noqa: BLE001
            try:
                if peer is None:
                    peer = session(os.path.join(test_dir, "model.onnx"))
                run(peer, inputs)
            except Exception:  # noqa: BLE001
                return name, "no-peer", ("ONNX Runtime cannot run the original "
                                         "on this data set either")
            return name, "export-invalid", str(e).splitlines()[0][:160]
        if len(got) != len(expected):
            return name, "mismatch", f"{len(got)} outputs, expected {len(expected)}"
        if all(close(g, w, rtol, atol) for g, w in zip(got, expected)):
            continue
        # The peer on the original model: where it deviates the same way,
        # the expected outputs are not what runtimes compute.
        try:
            if peer is None:
                peer = session(os.path.join(test_dir, "model.onnx"))
            reference = run(peer, inputs)
        except Exception:  # noqa: BLE001
            return name, "no-peer", "output differs; ONNX Runtime cannot run the original"
        if all(close(g, r, rtol, atol) for g, r in zip(got, reference)):
            continue
        worst = max((float(np.max(np.abs(np.asarray(g, np.float64) -
                                          np.asarray(w, np.float64))))
                     if np.asarray(w).dtype.kind in "fiub" and
                     np.asarray(g).shape == np.asarray(w).shape else float("inf"))
                    for g, w in zip(got, expected))
        return name, "mismatch", f"{os.path.basename(data_set)}: max abs error {worst:.3g}"
    return name, "pass", ""


def main():
    parser = argparse.ArgumentParser(
        description="Backend tests through import, the graph pipeline and export")
    parser.add_argument("--kiln-compile", required=True)
    parser.add_argument("-O", dest="opt", type=int, default=2)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--rtol", type=float, default=1e-3)
    parser.add_argument("--atol", type=float, default=1e-7)
    parser.add_argument("--filter", help="only tests whose path contains this")
    parser.add_argument("--expected", help="file of test names that must pass")
    parser.add_argument("--update-expected", action="store_true")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()

    if not os.path.isdir(ROOT):
        print(f"{ROOT} not found (apt-get install libonnx-testdata)")
        return 1
    tests = []
    for category in CATEGORIES:
        for d in sorted(glob.glob(os.path.join(ROOT, category, "*"))):
            if os.path.isfile(os.path.join(d, "model.onnx")) and \
                    glob.glob(os.path.join(d, "test_data_set_*")):
                if not args.filter or args.filter in d:
                    tests.append(d)

    results = []
    with tempfile.TemporaryDirectory() as scratch, \
            concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        futures = [pool.submit(check, t, args.kiln_compile, args.opt, scratch,
                               args.rtol, args.atol, args.timeout)
                   for t in tests]
        for f in concurrent.futures.as_completed(futures):
            results.append(f.result())
    results.sort()

    by_status = collections.Counter(status for _, status, _ in results)
    reasons = collections.Counter((status, reason.split(":")[0][:80])
                                  for _, status, reason in results
                                  if status not in ("pass",))
    for name, status, reason in results:
        if args.verbose or status in ("mismatch", "export-invalid", "crashed"):
            print(f"{status:15} {name}  {reason}")
    print("\nmost common reasons (status, reason prefix):")
    for (status, reason), n in reasons.most_common(15):
        print(f"  {n:5}  {status:15} {reason}")

    failed = by_status["crashed"] > 0
    passed = {name for name, status, _ in results if status == "pass"}
    if args.expected:
        expected = set()
        if os.path.exists(args.expected):
            with open(args.expected) as f:
                expected = {l.strip() for l in f if l.strip() and not l.startswith("#")}
        lost = sorted(e for e in expected if e not in passed and
                      (not args.filter or args.filter in e))
        for name in lost:
            print(f"REGRESSION: {name} is in {os.path.basename(args.expected)} "
                  "but does not pass")
        failed |= bool(lost)
        for name in sorted(passed - expected):
            print(f"NEW PASS: {name} (not in "
                  f"{os.path.basename(args.expected)}; --update-expected adds "
                  "it)")
        if args.update_expected:
            with open(args.expected, "w") as f:
                f.write("# Backend tests whose numbers survive import, the -O2 "
                        "pipeline and export\n# (run_roundtrip.py). Only grows: "
                        "--update-expected adds new passes.\n")
                for name in sorted(expected | passed):
                    f.write(name + "\n")
    total = len(results)
    print(f"\nround trip at -O{args.opt}: {total} tests, "
          + ", ".join(f"{by_status[s]} {s}" for s in
                      ["pass", "mismatch", "rejected", "export-invalid",
                       "no-peer", "crashed"])
          + f" ({100.0 * by_status['pass'] / max(total, 1):.1f}% pass)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
