#!/usr/bin/env python3
#===- test/E2E/dynamic_models.py - Real architectures with dynamic dims ---===#
#
# Exports real PyTorch architectures with random weights and dynamic dims
# (models/export_torch_dynamic.py, run with the interpreter that has torch:
# Debian's python3-torch under /usr/bin/python3 by default), then for each
# model:
#
#   * checks the ONNX file (onnx.checker) declares the dynamic dims by name,
#   * compiles it ONCE with kiln.compile(path), no shape flags,
#   * checks the artifact's get_inputs() show the symbols by name (exactly
#     the ONNX dim_params) and get_outputs() a string per dynamic dim (the
#     symbol itself where the ONNX output names an input's symbol) and an
#     int per static one,
#   * runs it (kiln.InferenceSession, 2 threads) at 3+ shapes (batch 1, 2,
#     5, ...; sequence models also at several sequence lengths) and compares
#     every output with ONNX Runtime on the same file:
#
#       |kiln - ort| <= ATOL + RTOL * |ort|, RTOL = 1e-3, ATOL = 1e-4 (fp32)
#
#     and checks each output's shape is what its declared expression gives,
#   * checks ONNX Runtime agrees with PyTorch's own outputs (the reference
#     is the exported model: REF_RTOL/REF_ATOL, a broken export is a
#     failure of the test, not of Kiln),
#   * for the models in HINTED, compiles once more with shape_hints
#     (--shape-hints): the same shapes must match, and a run above a
#     symbol's max must fail with an error naming the symbol's constraint.
#
# The models in XFAIL use what Kiln does not support yet, those in
# XFAIL_GAPS have only dynamic batch dims but hit gaps this test found; both
# lists keep the first error each model gives today. Such a model that fails
# is an XFAIL (a different error from the one listed is said, and is no
# failure; whether it compiles and matches with static shapes is said too);
# one that compiles, runs and matches at every shape is an XPASS and FAILS
# the test: move it out of the list. Prints one line per model and shape, a
# table, and exits 1 on any failure or XPASS (77: PyTorch is not installed,
# a skip).
#
#   dynamic_models.py --workdir DIR [--models a,b] [--with-large]
#       [--torch-python /usr/bin/python3] [--reuse]
#       [--kernels codegen|library]
#
#===----------------------------------------------------------------------===#

import argparse
import json
import os
import re
import subprocess
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort

import kiln

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
EXPORTER = os.path.join(ROOT, "models", "export_torch_dynamic.py")

RTOL, ATOL = 1e-3, 1e-4
# ONNX Runtime vs PyTorch eager (different kernels, same math).
REF_RTOL, REF_ATOL = 1e-3, 1e-4
THREADS = 2
COMPILE_OPTIONS = {}  # kiln.compile options (--kernels)

# Expected to fail today: model -> (stage, first error). stage is
# "compile", "signature", "run" or "mismatch"; the error is the first
# error's message with the model's folder left out. Two groups:
#
# Not supported yet: none left (loop_rnn's Gather over the dynamic
# sequence, the Loop's x[:, t], lowers since the gathered axis may be
# dynamic).
XFAIL = {}
# Dynamic dims expected to work but failing today (gaps found by this
# test; models/README.md says why): none left.
XFAIL_GAPS = {}
EXPECTED_FAILURES = {**XFAIL, **XFAIL_GAPS}

# --shape-hints (min, opt, max per symbol, covering the test shapes): these
# models are compiled once more with them and must match ONNX Runtime at
# every test shape (the static copies for opt, or for every size of a small
# range, and the dynamic code for the others: each model has test shapes
# of both kinds); the artifact must record min and max as constraints, and
# a run above max must be rejected with an error naming the symbol and the
# bound. (gqa_kv_cache's K and V projections share their zero fill: its
# dynamic default once wrote both into one buffer.)
HINTED = {
    "mlp": {"batch": (1, 5, 64)},
    "small_cnn": {"batch": (1, 2, 17)},
    "gqa_kv_cache": {"batch": (1, 2, 8), "past": (1, 7, 32)},
    "transformer_encoder": {"batch": (1, 2, 3), "seq": (1, 16, 64)},
}


class Failure(Exception):
    def __init__(self, stage, message, errors=1, text=None):
        super().__init__(f"{stage}: {text or message}")
        self.stage, self.message, self.errors = stage, message, errors


def export(args):
    """Runs the exporter (or reuses its manifest); returns the manifest."""
    out = os.path.join(args.workdir, "models")
    manifest = os.path.join(out, "manifest.json")
    if args.reuse and os.path.exists(manifest):
        return json.load(open(manifest)), out
    cmd = [args.torch_python, EXPORTER, "--out", out]
    if args.models:
        cmd += ["--only", args.models]
    elif args.with_large:
        cmd.append("--with-large")
    # Not the sanitizer runtime a sanitized build preloads into this
    # process (test/CMakeLists.txt): torch is not Kiln's code.
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_PRELOAD", "ASAN_OPTIONS")}
    start = time.time()
    try:
        proc = subprocess.run(cmd, text=True, capture_output=True, env=env)
    except OSError as e:
        print(f"SKIP: cannot run {args.torch_python}: {e}")
        sys.exit(77)
    sys.stdout.write(proc.stdout)
    sys.stderr.write(proc.stderr)
    if proc.returncode == 77:
        print("SKIP: PyTorch is not installed for "
              f"{args.torch_python} (export_torch_dynamic.py)")
        sys.exit(77)
    if proc.returncode != 0:
        print(f"FAIL export: {' '.join(cmd)} exited {proc.returncode}")
        sys.exit(1)
    print(f"exported in {time.time() - start:.1f} s")
    return json.load(open(manifest)), out


def evaluate(expr, dims):
    """An output dim expression of the artifact (symbols, + - * / %, with
    floor division and a non-negative remainder) at the symbols' values."""
    if not re.fullmatch(r"[A-Za-z0-9_ +\-*/%()]+", expr):
        raise ValueError(f"unexpected dim expression {expr!r}")
    names = dict(dims)
    return int(eval(expr.replace("/", "//"), {"__builtins__": {}}, names))


def compile_failure(e, folder):
    """A Failure("compile") of a CompileError: its first error's message
    (the model's folder left out), the count of errors, and the line as
    kiln-compile prints it (with the location: the ONNX node)."""
    errors = [d for d in e.diagnostics if d.severity == "error"] or \
        e.diagnostics
    if not errors:
        return Failure("compile", str(e), 0)
    strip = lambda text: text.replace(folder + os.sep, "")  # noqa: E731
    return Failure("compile", strip(errors[0].message), len(errors),
                   strip(errors[0].text))


def check_signature(session, entry):
    symbols = {d for i in entry["inputs"] for d in i["shape"]
               if isinstance(d, str)}
    got_in = [(a.name, a.shape) for a in session.get_inputs()]
    want_in = [(i["name"], i["shape"]) for i in entry["inputs"]]
    if got_in != want_in:
        raise Failure("signature", f"inputs {got_in}, expected {want_in}")
    got_out = session.get_outputs()
    if [o.name for o in got_out] != [o["name"] for o in entry["outputs"]]:
        raise Failure("signature", "outputs "
                      f"{[o.name for o in got_out]}, expected "
                      f"{[o['name'] for o in entry['outputs']]}")
    for o, want in zip(got_out, entry["outputs"]):
        ok = len(o.shape) == len(want["shape"])
        for g, w in zip(o.shape, want["shape"]):
            if isinstance(w, int):
                ok &= g == w
            elif w in symbols:
                ok &= g == w
            else:
                ok &= isinstance(g, str)
        if not ok:
            raise Failure("signature", f"output {o.name} shape {o.shape}, "
                          f"expected {want['shape']}")
    return ([a.shape for a in session.get_inputs()],
            [o.shape for o in got_out])


def compare(got, want, rtol, atol):
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    err = np.abs(got - want)
    bad = int(np.sum(~(err <= atol + rtol * np.abs(want))))
    return float(err.max(initial=0.0)), bad


def load_data(folder, prefix):
    arrays, k = [], 0
    while os.path.exists(os.path.join(folder, f"{prefix}_{k}.npy")):
        arrays.append(np.load(os.path.join(folder, f"{prefix}_{k}.npy")))
        k += 1
    return arrays


def run_model(entry, folder, result, log):
    """Fills `result` (compile_s, shapes, max_err, runs: the reference's
    inputs and outputs); raises Failure on the first problem."""
    name = entry["name"]
    path = os.path.join(folder, entry["file"])
    model = onnx.load(path)
    onnx.checker.check_model(model)
    declared = {i.name: [d.dim_param or d.dim_value
                         for d in i.type.tensor_type.shape.dim]
                for i in model.graph.input}
    for i in entry["inputs"]:
        if declared.get(i["name"]) != i["shape"]:
            raise Failure("reference", f"the ONNX input {i['name']} is "
                          f"{declared.get(i['name'])}, not {i['shape']}")
    options = ort.SessionOptions()
    options.intra_op_num_threads = THREADS
    reference = ort.InferenceSession(path, options,
                                     providers=["CPUExecutionProvider"])
    # The reference first, at every shape: ONNX Runtime's outputs, checked
    # against PyTorch's (so the files of the XFAIL models are checked too).
    input_names = [i["name"] for i in entry["inputs"]]
    runs = []
    for dims, data in zip(entry["shapes"], entry["data"]):
        tag = ",".join(f"{k}={v}" for k, v in dims.items())
        inputs = load_data(os.path.join(folder, data), "input")
        feeds = dict(zip(input_names, inputs))
        want = reference.run(None, feeds)
        for k, (w, t) in enumerate(zip(want, load_data(
                os.path.join(folder, data), "torch_output"))):
            err, bad = compare(w, t, REF_RTOL, REF_ATOL)
            if w.shape != t.shape or bad:
                raise Failure("reference", f"{tag}: ONNX Runtime's output "
                              f"{k} differs from PyTorch's (shape "
                              f"{w.shape} vs {t.shape}, {bad} elements, "
                              f"max abs error {err:.3g})")
        runs.append((dims, tag, feeds, want))
    result["runs"] = runs
    start = time.time()
    try:
        artifact = kiln.compile(path, **COMPILE_OPTIONS)
    except kiln.CompileError as e:
        raise compile_failure(e, folder)
    result["compile_s"] = time.time() - start
    result["max_err"] = 0.0
    try:
        session = kiln.InferenceSession(artifact, threads=THREADS)
    except (RuntimeError, ValueError) as e:
        raise Failure("run", f"session: {e}")
    ins, outs = check_signature(session, entry)
    log(f"  {name}: compiled in {result['compile_s']:.1f} s, inputs {ins}, "
        f"outputs {outs}")
    for dims, tag, feeds, want in runs:
        start = time.time()
        try:
            got = session.run(None, feeds)
        except (RuntimeError, ValueError) as e:
            raise Failure("run", f"{tag}: {e}")
        run_s = time.time() - start
        worst = 0.0
        for k, (g, w, o) in enumerate(zip(got, want,
                                          session.get_outputs())):
            shape = [d if isinstance(d, int) else evaluate(d, dims)
                     for d in o.shape]
            if list(g.shape) != list(w.shape) or list(g.shape) != shape:
                raise Failure("mismatch", f"{tag}: output {o.name} shape "
                              f"{list(g.shape)}, ONNX Runtime's "
                              f"{list(w.shape)}, declared {o.shape} = "
                              f"{shape}")
            err, bad = compare(g, w, RTOL, ATOL)
            worst = max(worst, err)
            if bad:
                raise Failure("mismatch", f"{tag}: output {o.name}: {bad} "
                              f"of {w.size} elements off, max abs error "
                              f"{err:.3g} (max |ort| "
                              f"{float(np.abs(w).max()):.3g})")
        log(f"PASS {name} {tag}: max abs error vs ONNX Runtime "
            f"{worst:.3g} (max |ort| "
            f"{max(float(np.abs(w).max()) for w in want):.3g}), "
            f"run {run_s * 1000:.0f} ms")
        result["shapes"].append(tag)
        result["max_err"] = max(result["max_err"], worst)


def check_hints(entry, folder, result, log):
    """The model compiled with HINTED's --shape-hints: constraints recorded,
    every test shape matching ONNX Runtime, a run above max rejected."""
    name, hints = entry["name"], HINTED[entry["name"]]
    try:
        artifact = kiln.compile(os.path.join(folder, entry["file"]),
                                shape_hints=hints, **COMPILE_OPTIONS)
    except kiln.CompileError as e:
        f = compile_failure(e, folder)
        raise Failure("hints", f"compile with shape_hints={hints}: "
                      f"{f.message}")
    want_constraints = []
    for symbol, (lo, _, hi) in hints.items():
        if lo > 1:
            want_constraints.append(f"{lo} <= {symbol}")
        want_constraints.append(f"{symbol} <= {hi}")
    got_constraints = artifact.info.get("constraints", [])
    missing = [c for c in want_constraints if c not in got_constraints]
    if missing:
        raise Failure("hints", f"constraints {got_constraints} lack "
                      f"{missing}")
    session = kiln.InferenceSession(artifact, threads=THREADS)
    worst = 0.0
    for dims, tag, feeds, want in result["runs"]:
        try:
            got = session.run(None, feeds)
        except (RuntimeError, ValueError) as e:
            raise Failure("hints", f"{tag}: {e}")
        for g, w in zip(got, want):
            err, bad = compare(g, w, RTOL, ATOL) if g.shape == w.shape \
                else (float("inf"), w.size)
            worst = max(worst, err)
            if bad:
                raise Failure("hints", f"{tag}: {bad} of {w.size} elements "
                              f"off (shape {g.shape} vs {w.shape}), max abs "
                              f"error {err:.3g}")
    # Above max for the first symbol: every input dim naming it grown.
    symbol, (_, _, hi) = next(iter(hints.items()))
    dims, _, feeds, _ = result["runs"][0]
    dims = dict(dims, **{symbol: hi + 1})
    outside = {i["name"]: np.zeros([dims[d] if isinstance(d, str) else d
                                    for d in i["shape"]],
                                   feeds[i["name"]].dtype)
               for i in entry["inputs"]}
    try:
        session.run(None, outside)
    except (RuntimeError, ValueError) as e:
        text = str(e)
        if f"'{symbol} <= {hi}'" not in text or \
                f"{symbol}={hi + 1}" not in text:
            raise Failure("hints", f"{symbol}={hi + 1}: rejected, but the "
                          f"error does not name the constraint "
                          f"'{symbol} <= {hi}': {text}")
        log(f"PASS {name} shape hints {hints}: every shape matches (max "
            f"abs error {worst:.3g}); {symbol}={hi + 1} rejected: {text}")
        return
    raise Failure("hints", f"{symbol}={hi + 1} is above the hinted max "
                  f"{hi} but the run was not rejected")


def static_check(entry, folder, result):
    """For an XFAIL model: does it compile and match ONNX Runtime with
    static shapes (--input-shapes at its first test shape)? Information
    for whoever enables it: a one-line answer."""
    if not result.get("runs"):
        return "not tried (no reference)"
    dims, tag, feeds, want = result["runs"][0]
    shapes = {name: list(array.shape) for name, array in feeds.items()}
    try:
        artifact = kiln.compile(os.path.join(folder, entry["file"]),
                                input_shapes=shapes, **COMPILE_OPTIONS)
    except kiln.CompileError as e:
        return f"fails too: {compile_failure(e, folder).message}"
    try:
        got = kiln.InferenceSession(artifact, threads=THREADS).run(None,
                                                                   feeds)
    except (RuntimeError, ValueError) as e:
        return f"compiles, run fails: {e}"
    worst, bad = 0.0, 0
    for g, w in zip(got, want):
        if g.shape != w.shape:
            return f"compiles, output shape {g.shape} != {w.shape}"
        err, b = compare(g, w, RTOL, ATOL)
        worst, bad = max(worst, err), bad + b
    return (f"compiles and matches at {tag} (max abs error {worst:.2g})"
            if not bad else f"compiles, {bad} elements off at {tag}")


def main():
    ap = argparse.ArgumentParser(description="Real architectures with "
                                 "dynamic dims through Kiln vs ONNX Runtime")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--models", help="comma-separated subset")
    ap.add_argument("--with-large", action="store_true",
                    help="also ResNet-50 (batch 1, 2)")
    ap.add_argument("--torch-python",
                    default=os.environ.get("KILN_TORCH_PYTHON",
                                           "/usr/bin/python3"),
                    help="an interpreter with torch and torchvision")
    ap.add_argument("--reuse", action="store_true",
                    help="reuse WORKDIR/models if exported before")
    ap.add_argument("--kernels", choices=["codegen", "library"],
                    help="kiln.compile's kernels (default: its default)")
    args = ap.parse_args()
    if args.kernels:
        COMPILE_OPTIONS["kernels"] = args.kernels
    os.makedirs(args.workdir, exist_ok=True)
    manifest, folder = export(args)
    print(f"torch {manifest['torch']}, torchvision "
          f"{manifest['torchvision']}, opset {manifest['opset']}; kiln "
          f"{kiln.__version__}, onnxruntime {ort.__version__}")

    def log(line):
        print(line, flush=True)

    rows, failures, xpasses = [], 0, 0
    if not args.models:
        stale = sorted(set(EXPECTED_FAILURES) -
                       {e["name"] for e in manifest["models"]})
        for name in stale:
            failures += 1
            print(f"FAIL {name}: listed as an expected failure, but the "
                  "exporter wrote no such model")
    for entry in manifest["models"]:
        name = entry["name"]
        if args.models and name not in args.models.split(","):
            continue
        expected = EXPECTED_FAILURES.get(name)
        start = time.time()
        result = {"name": name, "compile_s": None, "shapes": [],
                  "max_err": None}
        try:
            run_model(entry, folder, result, log)
            if name in HINTED:
                check_hints(entry, folder, result, log)
            status = "XPASS" if expected else "pass"
        except Failure as f:
            result["failure"] = f
            if f.stage == "reference" or not expected:
                status = "FAIL"
            else:
                status = "xfail"
        except Exception as e:  # noqa: BLE001 - a failure of the harness
            result["failure"] = Failure("harness", f"{type(e).__name__}: {e}")
            status = "FAIL"
        result["status"], result["total_s"] = status, time.time() - start
        if status == "FAIL":
            failures += 1
            print(f"FAIL {name}: {result['failure']}")
        elif status == "XPASS":
            xpasses += 1
            print(f"XPASS {name}: expected to fail ({expected[0]}: "
                  f"{expected[1][:120]}...) but compiled, ran and matched "
                  f"ONNX Runtime at every shape: move it out of XFAIL in "
                  f"{os.path.relpath(__file__, ROOT)}")
        elif status == "xfail":
            f = result["failure"]
            extra = f" (and {f.errors - 1} more)" if f.errors > 1 else ""
            print(f"XFAIL {name}: {f.stage}: {f.message}{extra}")
            if (f.stage, f.message) != expected:
                print(f"  note: the error differs from the one listed "
                      f"({expected[0]}: {expected[1]})")
            if f.stage == "compile":
                print(f"  with static shapes: "
                      f"{static_check(entry, folder, result)}")
        rows.append(result)

    print()
    print(f"{'model':22} {'status':6} {'compile':>8} {'max err':>9}  shapes")
    for r in rows:
        c = f"{r['compile_s']:.1f} s" if r["compile_s"] is not None else "-"
        e = f"{r['max_err']:.2g}" if r["max_err"] is not None else "-"
        print(f"{r['name']:22} {r['status']:6} {c:>8} {e:>9}  "
              f"{'; '.join(r['shapes']) or '-'}")
    passed = sum(r["status"] == "pass" for r in rows)
    xfailed = sum(r["status"] == "xfail" for r in rows)
    print(f"dynamic models: {passed} passed, {xfailed} xfail, "
          f"{xpasses} XPASS, {failures} failed")
    return 1 if failures or xpasses else 0


if __name__ == "__main__":
    sys.exit(main())
