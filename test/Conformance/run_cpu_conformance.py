#!/usr/bin/env python3
#===- test/Conformance/run_cpu_conformance.py - ONNX backend tests on the CPU ===#
#
# Compiles every ONNX backend test (the Debian suite: 1072 tests) with
# kiln-compile for the CPU, runs it on test_data_set_0 and compares the
# outputs with the expected ones (rtol 1e-3, atol 1e-7 as the ONNX backend
# tests; |actual - expected| <= atol + rtol * |expected|). Each test ends as
#
#   passed     compiled, ran, every output within tolerance
#   mismatch   compiled and ran, an output out of tolerance (or wrong shape)
#   rejected   kiln-compile refused it with a diagnostic (the reason is kept)
#   run-error  the compiled model failed to load or run with a message
#   crashed    a signal, a timeout, or an exit without a diagnostic
#
# Reports per op type and the most common rejection reasons; the LAST line is
# the totals. Exit status 1 if any test crashed, or (with --expected) if a
# test listed there no longer passes.
#
# Runner: the model runs in a child process (a crash in generated code must
# not take the runner down): `kiln-run` on the artifact when --kiln-run is
# given, else this script's own --run-one mode on a shared object compiled
# with the weights embedded.
#
#===----------------------------------------------------------------------===#

import argparse
import collections
import concurrent.futures
import ctypes
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_conformance as rc  # noqa: E402  (discovery, reasons, op types)

RTOL, ATOL = 1e-3, 1e-7


def load_pb_tensors(folder, prefix):
    import onnx
    from onnx import numpy_helper
    tensors = []
    i = 0
    while True:
        path = os.path.join(folder, f"{prefix}_{i}.pb")
        if not os.path.exists(path):
            break
        t = onnx.TensorProto()
        with open(path, "rb") as f:
            t.ParseFromString(f.read())
        tensors.append(numpy_helper.to_array(t))
        i += 1
    return tensors


def compare(actual, expected):
    """(ok, max_abs, max_rel, message) with the ONNX backend-test rule."""
    import numpy as np
    if actual.shape != expected.shape:
        return False, None, None, f"shape {actual.shape} != {expected.shape}"
    if expected.dtype.kind in "fc":
        a = actual.astype(np.float64)
        e = expected.astype(np.float64)
        both_nan = np.isnan(a) & np.isnan(e)
        same_inf = np.isinf(e) & (a == e)
        diff = np.where(both_nan | same_inf, 0.0, np.abs(a - e))
        diff = np.where(np.isnan(diff), np.inf, diff)
        tol = ATOL + RTOL * np.abs(np.where(np.isinf(e), 0, e))
        bad = diff > tol
        max_abs = float(diff.max()) if diff.size else 0.0
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = np.where(e != 0, diff / np.abs(e), 0.0)
        max_rel = float(np.nanmax(rel)) if rel.size else 0.0
        return (not bad.any()), max_abs, max_rel, (
            f"{int(bad.sum())} of {bad.size} elements out of tolerance"
            if bad.any() else "")
    equal = np.array_equal(actual, expected)
    return equal, None, None, "" if equal else "integer/bool values differ"


def run_one_shared_object(so_path, folder):
    """Child-process mode: run the shared object on the data set and print
    one JSON line with the verdict."""
    import numpy as np
    inputs = load_pb_tensors(folder, "input")
    expected = load_pb_tensors(folder, "output")
    lib = ctypes.CDLL(os.path.abspath(so_path))
    lib.kiln_abi_set_num_threads(ctypes.c_int32(1))
    if not expected:
        print(f"error: no expected outputs (output_0.pb) in {folder}: nothing "
              "to compare", file=sys.stderr)
        return 2
    outputs = [np.empty_like(e) for e in expected]
    inputs = [np.ascontiguousarray(x) for x in inputs]
    buffers = (ctypes.c_void_p * (len(inputs) + len(outputs)))(
        *[x.ctypes.data for x in inputs + outputs])
    lib.kiln_entry(buffers)
    results = []
    ok_all = True
    for i, (a, e) in enumerate(zip(outputs, expected)):
        ok, max_abs, max_rel, msg = compare(a, e)
        ok_all &= ok
        results.append({"output": i, "ok": bool(ok), "max_abs": max_abs,
                        "max_rel": max_rel, "message": msg})
    print(json.dumps({"ok": ok_all, "outputs": results}))
    return 0 if ok_all else 1


def classify_exit(test, proc, what):
    if proc.returncode < 0:
        try:
            name = signal.Signals(-proc.returncode).name
        except ValueError:
            name = str(-proc.returncode)
        test.status, test.reason = "crashed", f"{what}: signal {name}"
        return True
    return False


def run_test(test, args, workdir):
    rc.read_model_info(test)
    folder = os.path.join(os.path.dirname(test.path), "test_data_set_0")
    start = time.time()
    stem = os.path.join(workdir, test.id.replace("/", "_"))
    if args.kiln_run:
        out = stem + ".kiln"
        cmd = [args.kiln_compile, test.path, f"-O{args.opt}", "-o", out]
    else:
        out = stem + ".so"
        cmd = [args.kiln_compile, test.path, f"-O{args.opt}", "--emit=so",
               "--embed-weights", "-o", out]
    cmd += args.compile_arg
    try:
        proc = subprocess.run(cmd, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, errors="replace",
                              timeout=args.timeout)
    except subprocess.TimeoutExpired:
        test.status, test.reason = "crashed", f"compile timeout {args.timeout} s"
        return test
    if classify_exit(test, proc, "kiln-compile"):
        return test
    if proc.returncode != 0:
        errors = [l for l in proc.stderr.splitlines() if "error:" in l]
        if errors:
            test.status = "rejected"
            test.raw_reason = errors[0].strip()
            test.reason = rc.normalize_reason(test, errors[0])
        else:
            first = (proc.stderr.strip().splitlines() or ["(no stderr)"])[0]
            test.status, test.reason = "crashed", f"kiln-compile exit {proc.returncode}: {first[:200]}"
        return test
    if args.kiln_run:
        run_cmd = [args.kiln_run, out, "--inputs", folder, "--threads", "1",
                   "--require-expected"]
    else:
        run_cmd = [sys.executable, os.path.abspath(__file__), "--run-one", out,
                   folder]
    try:
        proc = subprocess.run(run_cmd, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, errors="replace",
                              timeout=args.timeout)
    except subprocess.TimeoutExpired:
        test.status, test.reason = "crashed", f"run timeout {args.timeout} s"
        return test
    finally:
        if not args.keep:
            try:
                os.remove(out)
            except OSError:
                pass
    test.seconds = time.time() - start
    if classify_exit(test, proc, "run"):
        return test
    if proc.returncode == 0:
        test.status = "passed"
    elif proc.returncode == 1:
        test.status = "mismatch"
        lines = [l for l in (proc.stdout + proc.stderr).splitlines()
                 if "FAIL" in l or '"ok": false' in l or "error" in l.lower()]
        test.reason = (lines[0] if lines else "outputs differ")[:300]
    else:
        last = (proc.stderr.strip().splitlines() or ["(no stderr)"])[-1]
        test.status, test.reason = "run-error", last[:300]
    return test


STATUSES = ["passed", "mismatch", "rejected", "run-error", "crashed"]


def write_markdown(path, done, table, seconds, args):
    counts = collections.Counter(t.status for t in done)
    lines = ["# ONNX backend tests on the CPU", "",
             f"`test/Conformance/run_cpu_conformance.py` ({len(done)} tests "
             f"of libonnx-testdata, -O{args.opt}, kiln-compile + "
             f"{'kiln-run' if args.kiln_run else 'shared objects'}, "
             f"rtol {RTOL}, atol {ATOL}; {seconds:.0f} s with {args.jobs} "
             "jobs).", "",
             "**Total: " + ", ".join(f"{counts[s]} {s}" for s in STATUSES) +
             f" ({100.0 * counts['passed'] / max(1, len(done)):.1f}% pass).**",
             "", "## Per op type", "",
             "| op type | tests | " + " | ".join(STATUSES) + " |",
             "|---|---:|" + "---:|" * len(STATUSES)]
    for op, c in sorted(table.items()):
        lines.append(f"| {op} | {c['tests']} | " +
                     " | ".join(str(c[s]) for s in STATUSES) + " |")
    lines += ["", "## Every test that does not pass", "",
              "| test | status | reason |", "|---|---|---|"]
    for t in sorted(done, key=lambda t: t.id):
        if t.status != "passed":
            reason = (t.reason or "").replace("|", "\\|").replace("\n", " ")
            lines.append(f"| {t.id} | {t.status} | {reason[:220]} |")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--run-one":
        try:
            return run_one_shared_object(sys.argv[2], sys.argv[3])
        except Exception as e:  # a load or run error, not a mismatch
            print(f"error: {type(e).__name__}: {e}", file=sys.stderr)
            return 2
    parser = argparse.ArgumentParser(
        description="Compile and run the ONNX backend tests on the CPU")
    parser.add_argument("--kiln-compile", required=True)
    parser.add_argument("--kiln-run",
                        help="run artifacts with kiln-run (else shared "
                        "objects in a Python child)")
    parser.add_argument("--filter", help="regex on the test name")
    parser.add_argument("-O", dest="opt", default="2")
    parser.add_argument("--compile-arg", action="append", default=[],
                        help="extra kiln-compile argument (repeatable)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--timeout", type=int, default=120)
    parser.add_argument("--expected", help="tests that must pass")
    parser.add_argument("--update-expected", action="store_true")
    parser.add_argument("--json", help="write every test's verdict here")
    parser.add_argument("--markdown",
                        help="write the per-op table and every test that "
                        "does not pass, with its reason, as Markdown here")
    parser.add_argument("--keep", action="store_true",
                        help="keep the compiled models (in --workdir)")
    parser.add_argument("--workdir")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    if args.kiln_run and not os.access(args.kiln_run, os.X_OK):
        print(f"warning: {args.kiln_run} not built; running shared objects "
              "with embedded weights instead", file=sys.stderr)
        args.kiln_run = None

    tests, error = rc.discover_debian()
    if tests is None:
        print(f"error: {error}")
        print("TOTAL: not run")
        return 1
    if args.filter:
        tests = [t for t in tests if re.search(args.filter, t.name)]
    workdir = args.workdir or tempfile.mkdtemp(prefix="kiln-conformance-")
    os.makedirs(workdir, exist_ok=True)
    start = time.time()
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        done = list(pool.map(lambda t: run_test(t, args, workdir), tests))

    out = sys.stdout
    if args.verbose:
        for t in done:
            if t.status != "passed":
                print(f"{t.status:9} {t.id}: {t.reason}", file=out)
    table = collections.defaultdict(collections.Counter)
    for t in done:
        table[rc.main_op(t)]["tests"] += 1
        table[rc.main_op(t)][t.status] += 1
    print("\nPer op type (a test counts under its main op)", file=out)
    width = max([8] + [len(k) for k in table])
    print(f"  {'op type':<{width}} {'tests':>6} " +
          " ".join(f"{s:>9}" for s in STATUSES), file=out)
    for op, c in sorted(table.items()):
        print(f"  {op:<{width}} {c['tests']:>6} " +
              " ".join(f"{c[s]:>9}" for s in STATUSES), file=out)
    reasons = collections.Counter(t.reason for t in done
                                  if t.status in ("rejected", "run-error"))
    if reasons:
        print("\nMost common reasons (rejected, run-error)", file=out)
        for reason, n in reasons.most_common(25):
            print(f"  {n:5}  {reason[:160]}", file=out)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"schema": "kiln.cpu-conformance", "version": 1,
                       "tests": [{"id": t.id, "op": rc.main_op(t),
                                  "status": t.status, "reason": t.reason}
                                 for t in done]}, f, indent=1)
    if args.markdown:
        write_markdown(args.markdown, done, table, time.time() - start, args)
    passed = sorted(t.id for t in done if t.status == "passed")
    failed_expected = []
    if args.expected:
        expected = set(rc.read_expected(args.expected))
        by_id = {t.id: t for t in done}
        # A listed test that is no longer found fails the run too; only
        # --filter leaves tests out.
        failed_expected = sorted(
            e for e in expected if e not in set(passed) and
            (not args.filter or re.search(args.filter, e.split("/")[-1])))
        for e in failed_expected:
            t = by_id.get(e)
            if t is None:
                print(f"REGRESSION {e}: no such test in the suite", file=out)
            else:
                print(f"REGRESSION {e}: {t.status}: {t.reason}", file=out)
        for p in sorted(set(passed) - expected):
            print(f"NEW PASS {p} (--update-expected adds it)", file=out)
        if args.update_expected:
            with open(args.expected, "w") as f:
                f.write("# Backend tests that compile and pass numerically on "
                        "the CPU (run_cpu_conformance.py); the list only "
                        "grows.\n")
                for p in sorted(expected | set(passed)):
                    f.write(p + "\n")
    counts = collections.Counter(t.status for t in done)
    crashed = counts["crashed"]
    print(f"\ntime: {time.time() - start:.0f} s, {args.jobs} jobs", file=out)
    print("TOTAL: " + f"{len(done)} tests, " +
          ", ".join(f"{counts[s]} {s}" for s in STATUSES) +
          f" ({100.0 * counts['passed'] / max(1, len(done)):.1f}% pass)",
          file=out)
    return 1 if crashed or failed_expected else 0


if __name__ == "__main__":
    sys.exit(main())
