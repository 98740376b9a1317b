#!/usr/bin/env python3
#===- test/E2E/control_flow.py - If, Loop and Scan on the CPU -------------===#
#
# ONNX control flow compiled by Kiln and run against ONNX Runtime:
#
#   * models built with onnx.helper (test/Import/Inputs/control_flow_models.py
#     and a few here): If on a data-dependent condition, an If whose
#     branches keep a dynamic batch, a Loop with a max trip count and a
#     condition (a carried value and a scan output), a Loop with a constant
#     trip count (a static scan output as a graph output), a Loop whose
#     carried value grows, a Loop reading the iteration number (Slice and
#     Gather at i), an If nested in a Loop, Scan for a running sum (a
#     reversed input, an output along axis 1), Scan over a dynamic number
#     of steps, and the sequence ops (a list's inserts, erase, SequenceAt,
#     SequenceLength, ConcatFromSequence; a list a Loop appends to;
#     SplitToSequence read in a Loop);
#   * torch.jit.script exports from Debian's PyTorch 1.13
#     (test/E2E/export_torch_control_flow.py, run with --torch-python,
#     /usr/bin/python3 by default): a data-dependent `if`, a `for` loop over
#     a dim, a `while` loop on a data-dependent condition, and lists
#     (sequences) appended in a loop and stacked or concatenated, a loop
#     over unbind;
#
# each compiled ONCE with kiln.compile(path), no shape flags, and run
# (kiln.InferenceSession) at several inputs, every output compared with
# ONNX Runtime on the same file:
#
#     |kiln - ort| <= ATOL + RTOL * |ort|, RTOL = 1e-3, ATOL = 1e-4
#
# (shapes equal). A model whose scan output is a graph output of
# data-dependent length must be refused at compile time with a message
# that says so. Prints one line per model and input, exits 1 on any
# failure. Without PyTorch the torch models are reported as skipped and
# the rest still runs.
#
#   control_flow.py --workdir DIR [--torch-python /usr/bin/python3]
#
#===----------------------------------------------------------------------===#

import argparse
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

import kiln

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "test", "Import", "Inputs"))
import control_flow_models as cfm  # noqa: E402

EXPORTER = os.path.join(ROOT, "test", "E2E", "export_torch_control_flow.py")
RTOL, ATOL = 1e-3, 1e-4
THREADS = 2

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
vi, const = cfm.vi, cfm.const


def rng(seed):
    return np.random.default_rng(seed)


def f32(a):
    return np.asarray(a, np.float32)


def i64(a):
    return np.asarray(a, np.int64)


# ------------------------------------------------------------ models ----

def if_data_dependent():
    """If on the sign of x's sum; the branches read x and an initializer
    of the outer graph."""
    then_g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"]),
         helper.make_node("Mul", ["r", "w"], ["t"])], "then", [],
        [vi("t", F, [2, 3])])
    else_g = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["n"]),
         const("one", np.array(1, np.float32)),
         helper.make_node("Sub", ["n", "one"], ["e"])], "else", [],
        [vi("e", F, [2, 3])])
    nodes = [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
             const("zero", np.array(0, np.float32)),
             helper.make_node("Greater", ["s", "zero"], ["c"]),
             helper.make_node("If", ["c"], ["y"], name="if",
                              then_branch=then_g, else_branch=else_g)]
    graph = helper.make_graph(
        nodes, "g", [vi("x", F, [2, 3])], [vi("y", F, [2, 3])],
        initializer=[numpy_helper.from_array(
            rng(1).standard_normal((2, 3)).astype(np.float32), "w")])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def if_data_dependent_feeds():
    return [{"x": f32(rng(s).standard_normal((2, 3)) + o)}
            for s, o in [(0, 1.0), (1, -1.0), (2, 0.5), (3, -0.5)]]


def loop_iteration():
    """A Loop that reads the iteration number: x[i:i+1] (Slice) and
    table[i] (Gather), as test_loop11 and exporters do."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond"], ["cond_out"]),
         const("one", np.array(1, np.int64)),
         helper.make_node("Add", ["i", "one"], ["i1"]),
         const("axes", np.array([0], np.int64)),
         helper.make_node("Unsqueeze", ["i", "axes"], ["start"]),
         helper.make_node("Unsqueeze", ["i1", "axes"], ["end"]),
         helper.make_node("Slice", ["x", "start", "end"], ["xi"]),
         helper.make_node("Gather", ["table", "i"], ["row"], axis=0),
         helper.make_node("Mul", ["row", "xi"], ["scaled"]),
         helper.make_node("Add", ["acc", "scaled"], ["acc_out"])],
        "body", [vi("i", I64, []), vi("cond", B, []), vi("acc", F, [3])],
        [vi("cond_out", B, []), vi("acc_out", F, [3])])
    nodes = [helper.make_node("Loop", ["m", "", "init"], ["y"], name="loop",
                              body=body)]
    graph = helper.make_graph(
        nodes, "g", [vi("m", I64, []), vi("x", F, [6]), vi("table", F, [6, 3]),
                     vi("init", F, [3])], [vi("y", F, [3])])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def loop_iteration_feeds():
    return [{"m": i64(m), "x": f32(rng(m).standard_normal(6)),
             "table": f32(rng(10 + m).standard_normal((6, 3))),
             "init": f32([1, 2, 3])} for m in [0, 1, 4, 6]]


def loop_growing_sum():
    """A carried value that grows by a row each iteration (Concat), summed
    after the loop."""
    m = cfm.loop_growing()
    g = m.graph
    g.node.append(const("ax0", np.array([0], np.int64)))
    g.node.append(helper.make_node("ReduceSum", ["y", "ax0"], ["s"],
                                   keepdims=0))
    del g.output[:]
    g.output.append(vi("s", F, [2]))
    return m


def scan_dynamic():
    """Scan over a dynamic number of steps: the scan output's length is the
    input's symbol."""
    body = helper.make_graph(
        [helper.make_node("Add", ["sum_in", "next"], ["sum_out"]),
         helper.make_node("Tanh", ["sum_out"], ["t"])],
        "body", [vi("sum_in", F, [2]), vi("next", F, [2])],
        [vi("sum_out", F, [2]), vi("t", F, [2])])
    nodes = [helper.make_node("Scan", ["init", "x"], ["sum", "ts"],
                              name="scan", body=body, num_scan_inputs=1)]
    graph = helper.make_graph(
        nodes, "g", [vi("init", F, [2]), vi("x", F, ["steps", 2])],
        [vi("sum", F, [2]), vi("ts", F, ["steps", 2])])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def loop_feeds(seed, limits):
    return [{"m": i64(m), "x": f32(rng(seed).standard_normal(3) + 1),
             "limit": f32(limit), "init": f32([0.5, 0, -1])}
            for m, limit in limits]


CASES = [
    # name, model builder, feeds
    ("if_data_dependent", if_data_dependent, if_data_dependent_feeds()),
    ("if_dynamic_batch", cfm.if_same_shape,
     [{"c": np.array(c), "x": f32(rng(n).standard_normal((n, 4)))}
      for c, n in [(True, 1), (False, 3), (True, 6)]]),
    ("loop_trip_count_and_condition", cfm.loop_carried_scan,
     loop_feeds(0, [(5, 100.0), (10, 20.0), (0, 5.0), (3, -1.0),
                    (3000, 1e9)])),
    ("loop_constant_trip_count", cfm.loop_fixed_count,
     [{"x": f32([1, 2])}, {"x": f32([-3, 0.5])}]),
    ("loop_iteration_number", loop_iteration, loop_iteration_feeds()),
    ("loop_growing_carried", loop_growing_sum,
     [{"m": i64(m), "x": f32([[1, 2]])} for m in [0, 1, 5, 40]]),
    ("loop_nested_if", cfm.loop_nested_if,
     [{"m": i64(m), "x": f32([1, 2, 3]), "init": f32([0.5, 0, -1])}
      for m in [0, 1, 4, 7]]),
    ("scan_running_sum", cfm.scan_running_sum,
     [{"init": f32([1, 2]), "x": f32(rng(s).standard_normal((3, 2)))}
      for s in range(3)]),
    ("sequence_list_ops", cfm.sequence_list_ops,
     [{"a": f32([1, 2]), "b": f32([3, 4]), "c": f32([5, 6]), "i": i64(i)}
      for i in [0, 1, 2, -1, -3]]),
    ("sequence_appended_in_loop", cfm.loop_append_stack,
     [{"x": f32([1, -2])}, {"x": f32([0.5, 3])}]),
    ("sequence_split_loop", cfm.split_loop,
     [{"x": f32(rng(s).standard_normal((4, 3))), "init": f32([1, 0, -1])}
      for s in range(2)]),
    ("scan_dynamic_steps", scan_dynamic,
     [{"init": f32([0.5, -0.5]), "x": f32(rng(s).standard_normal((s, 2)))}
      for s in [1, 4, 9]]),
]

# Refused at compile time: model -> what the first error must contain.
REFUSED = [
    ("loop_scan_output_graph_output", cfm.loop_scan_output,
     "output 'rows' has type 'tensor<?x3xf32>': the size of a dynamic dim "
     "depends on the data ('loop' (kiln.loop): a Loop's scan output has one "
     "row per iteration"),
]

TORCH_FEEDS = {
    "torch_if": [{"x": f32(rng(s).standard_normal((3, 8)) + o)}
                 for s, o in [(0, 1.0), (1, -1.0), (2, 0.3)]],
    "torch_for": [{"x": f32(rng(s).standard_normal((2, 5, 8)))}
                  for s in range(3)],
    "torch_while": [{"x": f32(rng(s).standard_normal(4)), "limit": f32(lim)}
                    for s, lim in [(0, 0.1), (1, 10.0), (2, 1000.0),
                                   (3, 1e6)]],
    "torch_list_stack": [{"x": f32(rng(s).standard_normal((2, 5, 8)))}
                         for s in range(2)],
    "torch_list_cat": [{"x": f32(rng(s).standard_normal((2, 5, 8)))}
                       for s in range(2)],
    "torch_unbind": [{"x": f32(rng(s).standard_normal((6, 8)))}
                     for s in range(2)],
}


# ------------------------------------------------------------- checks ----

def compare(name, label, got, want):
    problems = []
    for k, (g, w) in enumerate(zip(got, want)):
        g = np.asarray(g)
        if g.shape != w.shape:
            problems.append(f"output {k}: shape {g.shape} != {w.shape}")
            continue
        if w.dtype.kind in "fc":
            diff = np.abs(g.astype(np.float64) - w.astype(np.float64))
            bad = diff > ATOL + RTOL * np.abs(w.astype(np.float64))
            if bad.any():
                problems.append(f"output {k}: {int(bad.sum())} of {bad.size} "
                                f"out of tolerance (max abs error "
                                f"{diff.max():.3g})")
        elif not np.array_equal(g, w):
            problems.append(f"output {k}: values differ")
    if len(got) != len(want):
        problems.append(f"{len(got)} outputs, ONNX Runtime {len(want)}")
    status = "PASS" if not problems else "FAIL"
    print(f"{status} {name} {label}" +
          ("" if not problems else ": " + "; ".join(problems)))
    return not problems


def run_case(name, path, feeds):
    try:
        artifact = kiln.compile(path)
    except kiln.CompileError as e:
        print(f"FAIL {name}: does not compile: {str(e).splitlines()[0]}")
        return False
    session = kiln.InferenceSession(artifact, threads=THREADS)
    reference = ort.InferenceSession(path,
                                     providers=["CPUExecutionProvider"])
    ok = True
    for i, feed in enumerate(feeds):
        want = reference.run(None, feed)
        try:
            got = session.run(None, feed)
        except Exception as e:  # a run error is a failure, not a crash
            print(f"FAIL {name} input {i}: run error: {e}")
            ok = False
            continue
        shapes = ", ".join(f"{k}{list(v.shape)}" for k, v in feed.items())
        ok &= compare(name, f"input {i} ({shapes})", got, want)
    return ok


def refused_case(name, path, expected):
    try:
        kiln.compile(path)
    except kiln.CompileError as e:
        first = str(e).splitlines()[0]
        if expected in first:
            print(f"PASS {name}: refused at compile time: {first}")
            return True
        print(f"FAIL {name}: refused with another message: {first}")
        return False
    print(f"FAIL {name}: compiled, but its output has a data-dependent "
          "length")
    return False


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--torch-python", default="/usr/bin/python3",
                        help="the interpreter with PyTorch")
    args = parser.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    print(f"kiln {kiln.__version__}, onnxruntime {ort.__version__}, "
          f"onnx {onnx.__version__}")

    results = {}
    for name, build, feeds in CASES:
        path = os.path.join(args.workdir, name + ".onnx")
        model = build()
        onnx.checker.check_model(model)
        onnx.save(model, path)
        results[name] = run_case(name, path, feeds)
    for name, build, expected in REFUSED:
        path = os.path.join(args.workdir, name + ".onnx")
        onnx.save(build(), path)
        results[name] = refused_case(name, path, expected)

    torch_dir = os.path.join(args.workdir, "torch")
    proc = subprocess.run([args.torch_python, EXPORTER, torch_dir],
                          capture_output=True, text=True)
    if proc.returncode == 77 or not os.path.exists(args.torch_python):
        print(f"SKIP torch models: PyTorch not available to "
              f"{args.torch_python}")
    elif proc.returncode != 0:
        print(f"FAIL torch export: {proc.stderr.strip()[-500:]}")
        results["torch export"] = False
    else:
        for name in proc.stdout.split():
            results[name] = run_case(
                name, os.path.join(torch_dir, name + ".onnx"),
                TORCH_FEEDS[name])

    failed = sorted(n for n, ok in results.items() if not ok)
    print(f"\ncontrol flow: {len(results) - len(failed)} passed, "
          f"{len(failed)} failed" + (f" ({', '.join(failed)})"
                                     if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
