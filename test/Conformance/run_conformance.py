#!/usr/bin/env python3
#===- test/Conformance/run_conformance.py - Import the ONNX backend tests --===#
#
# Runs `kiln-compile model.onnx --emit=kiln -o /dev/null` on every model of
# the ONNX backend-test suites and classifies each one:
#
#   imported  exit 0 (kiln-compile verifies the module before writing it)
#   rejected  exit 1 with a diagnostic line containing `error:`
#   crashed   anything else: a signal, another exit code, exit 1 without an
#             `error:` line, or the timeout
#
# Suites:
#   debian      /usr/share/libonnx-testdata/data/{node,simple,
#               pytorch-converted,pytorch-operator}/*/model.onnx (1072 tests,
#               onnx 1.12, opsets up to 17)
#   onnx-wheel  the pinned onnx wheel's backend tests: its node cases (the
#               wheel ships them as Python, so they are serialized into a
#               scratch folder first, as `backend-test-tools generate-data`
#               once did), its data/{simple,pytorch-converted,
#               pytorch-operator}/*/model.onnx and data/light/*.onnx; opsets
#               up to the wheel's newest
#
# Reports per op type (a test counts under every op type it contains,
# subgraphs included) and the most common rejection reasons; the LAST line is
# the totals. Exit status: 1 if any test crashed, or (with --expected) if a
# test listed there no longer imports; 0 otherwise.
#
#===----------------------------------------------------------------------===#

import argparse
import collections
import concurrent.futures
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

DEBIAN_ROOT = "/usr/share/libonnx-testdata/data"
CATEGORIES = ["node", "simple", "pytorch-converted", "pytorch-operator"]
SUITES = ["debian", "onnx-wheel"]


class Test:
    def __init__(self, suite, category, name, path):
        self.suite = suite
        self.category = category
        self.name = name
        self.path = path
        self.id = f"{suite}/{category}/{name}"
        self.op_types = []
        self.node_names = []
        self.opset = None
        self.status = None
        self.reason = None
        self.seconds = 0.0


def wheel_data_root():
    import onnx
    return os.path.join(os.path.dirname(onnx.__file__), "backend", "test",
                        "data")


def discover_folders(suite, root, categories):
    tests = []
    for category in categories:
        folder = os.path.join(root, category)
        if not os.path.isdir(folder):
            continue
        for name in sorted(os.listdir(folder)):
            model = os.path.join(folder, name, "model.onnx")
            if os.path.isfile(model):
                tests.append(Test(suite, category, name, model))
    return tests


def discover_debian():
    if not os.path.isdir(DEBIAN_ROOT):
        return None, f"{DEBIAN_ROOT} not found (apt-get install libonnx-testdata)"
    tests = discover_folders("debian", DEBIAN_ROOT, CATEGORIES)
    return tests, None


def discover_wheel(scratch):
    try:
        import onnx
        import onnx.backend.test.case.node as node_cases
    except ImportError as e:
        return None, f"the onnx wheel's backend tests are not importable ({e})"
    tests = []
    # Node cases: built by the wheel's own case definitions (collect_testcases
    # computes the expected outputs with numpy too; a few warn on purpose).
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with open(os.devnull, "w") as devnull:
            stdout, sys.stdout = sys.stdout, devnull
            try:
                cases = node_cases.collect_testcases(None)
            finally:
                sys.stdout = stdout
    for case in sorted(cases, key=lambda c: c.name):
        folder = os.path.join(scratch, "node", case.name)
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, "model.onnx")
        with open(path, "wb") as f:
            f.write(case.model.SerializeToString())
        tests.append(Test("onnx-wheel", "node", case.name, path))
    root = wheel_data_root()
    tests += discover_folders("onnx-wheel", root, CATEGORIES[1:])
    light = os.path.join(root, "light")
    if os.path.isdir(light):
        for name in sorted(os.listdir(light)):
            if name.endswith(".onnx"):
                tests.append(Test("onnx-wheel", "light", name[:-5],
                                  os.path.join(light, name)))
    return tests, None


def read_model_info(test):
    """Op types (subgraphs included), node names and the default-domain
    opset, read with the onnx package."""
    import onnx
    try:
        model = onnx.load(test.path, load_external_data=False)
    except Exception as e:  # an unreadable model is still run through Kiln
        test.op_types = ["<unreadable>"]
        test.reason_load = str(e)
        return
    ops, names = set(), set()

    def walk(graph):
        for node in graph.node:
            domain = node.domain if node.domain not in ("", "ai.onnx") else ""
            ops.add(f"{domain}.{node.op_type}" if domain else node.op_type)
            if node.name:
                names.add(node.name)
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    walk(attr.g)
                elif attr.type == onnx.AttributeProto.GRAPHS:
                    for g in attr.graphs:
                        walk(g)

    walk(model.graph)
    test.op_types = sorted(ops) or ["<no nodes>"]
    test.node_names = sorted(names, key=len, reverse=True)
    for opset in model.opset_import:
        if opset.domain in ("", "ai.onnx"):
            test.opset = opset.version


def normalize_reason(test, line):
    """The diagnostic without what is particular to the test, so that equal
    reasons group: the file, the node names and `loc(...)` prefixes go."""
    text = line.split("error:", 1)[1].strip() if "error:" in line else line
    text = text.replace(test.path, "<model>")
    if text.startswith("<model>: "):
        text = text[len("<model>: "):]
    # Unnamed nodes get names made up by the importer (`<OpType>_<index>`).
    text = re.sub(r"node '[^']*'", "node <node>", text)
    for name in test.node_names:
        if len(name) > 1:
            text = text.replace(name, "<node>")
    return text


def run_one(test, kiln_compile, timeout):
    read_model_info(test)
    start = time.time()
    try:
        proc = subprocess.run(
            [kiln_compile, test.path, "--emit=kiln", "-o", os.devnull],
            stdin=subprocess.DEVNULL, capture_output=True, text=True,
            errors="replace", timeout=timeout)
    except subprocess.TimeoutExpired:
        test.status, test.reason = "crashed", f"timeout after {timeout} s"
        test.seconds = time.time() - start
        return test
    test.seconds = time.time() - start
    errors = [l for l in proc.stderr.splitlines() if "error:" in l]
    if proc.returncode == 0:
        test.status = "imported"
    elif proc.returncode == 1 and errors:
        test.status = "rejected"
        test.stderr_lines = len([l for l in proc.stderr.splitlines()
                                 if l.strip()])
        test.raw_reason = errors[0].strip()
        test.reason = normalize_reason(test, errors[0])
    elif proc.returncode < 0:
        sig = -proc.returncode
        try:
            signame = signal.Signals(sig).name
        except ValueError:
            signame = str(sig)
        test.status, test.reason = "crashed", f"signal {signame}"
    else:
        first = (proc.stderr.strip().splitlines() or ["(no stderr)"])[0]
        test.status = "crashed"
        test.reason = (f"exit {proc.returncode} without an error: diagnostic"
                       if proc.returncode == 1 else
                       f"exit {proc.returncode}") + f": {first[:200]}"
    return test


def main_op(test):
    """The test's main op from its folder name `test_<op>_...`: the longest
    snake_case op type of the test that prefixes the name."""
    stem = test.name[5:] if test.name.startswith("test_") else test.name

    def snake(op):
        op = op.split(".")[-1]
        return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_",
                      op).lower()

    best = None
    for op in test.op_types:
        s = snake(op)
        if (stem == s or stem.startswith(s + "_")) and (
                best is None or len(s) > len(snake(best))):
            best = op
    return best or stem.split("_")[0]


def print_table(title, rows, out, key="op type"):
    print(f"\n{title}", file=out)
    header = (key, "tests", "imported", "rejected", "crashed")
    width = max([len(header[0])] + [len(r[0]) for r in rows])
    print(f"  {header[0]:<{width}} {header[1]:>6} {header[2]:>9} "
          f"{header[3]:>9} {header[4]:>8}", file=out)
    for op, c in rows:
        print(f"  {op:<{width}} {c['tests']:>6} {c['imported']:>9} "
              f"{c['rejected']:>9} {c['crashed']:>8}", file=out)


def tally(tests, key):
    table = collections.defaultdict(collections.Counter)
    for t in tests:
        for k in key(t):
            table[k]["tests"] += 1
            table[k][t.status] += 1
    return sorted(table.items())


def read_expected(path):
    if not path or not os.path.exists(path):
        return []
    with open(path) as f:
        return [l.strip() for l in f if l.strip() and not l.startswith("#")]


def write_expected(path, ids):
    with open(path, "w") as f:
        f.write("# Backend tests kiln-compile imported (exit 0, verified "
                "module), one per line:\n"
                "# <suite>/<category>/<test>. run_conformance.py --expected "
                "fails when one of them\n"
                "# no longer imports; --update-expected adds new ones.\n")
        for i in sorted(ids):
            f.write(i + "\n")


def main():
    parser = argparse.ArgumentParser(
        description="Import the ONNX backend-test models with kiln-compile "
        "and report what imports, what is rejected and what crashes.")
    parser.add_argument("--kiln-compile", required=True,
                        help="path of the kiln-compile binary")
    parser.add_argument("--suite", choices=SUITES + ["all"], default="all")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="seconds per test (default 60)")
    parser.add_argument("--expected",
                        help="list of tests that must import (ids as "
                        "<suite>/<category>/<test>)")
    parser.add_argument("--update-expected", action="store_true",
                        help="add the tests that import now to --expected")
    parser.add_argument("--prune-expected", action="store_true",
                        help="with --update-expected: also drop tests that "
                        "no longer import (shrinks the list)")
    parser.add_argument("--json", help="write every test's result here")
    parser.add_argument("--filter", help="only tests whose id contains this")
    parser.add_argument("--reasons", type=int, default=15,
                        help="how many rejection reasons to list")
    parser.add_argument("--by", choices=["op-type", "main-op", "both"],
                        default="op-type",
                        help="per-op tables keyed by every op type a test "
                        "contains (default), by the test's main op from its "
                        "name test_<op>_..., or both")
    parser.add_argument("--quiet", action="store_true",
                        help="no per-op tables, only failures and totals")
    args = parser.parse_args()
    if args.update_expected and not args.expected:
        parser.error("--update-expected needs --expected FILE")
    if not os.access(args.kiln_compile, os.X_OK):
        print(f"error: kiln-compile not found or not executable: "
              f"{args.kiln_compile}", file=sys.stderr)
        print("TOTAL: not run (no kiln-compile)")
        return 1

    suites = SUITES if args.suite == "all" else [args.suite]
    out = sys.stdout
    scratch = tempfile.TemporaryDirectory(prefix="kiln-conformance-")
    tests, missing = [], {}
    for suite in suites:
        found, why = (discover_debian() if suite == "debian" else
                      discover_wheel(scratch.name))
        if found is None:
            missing[suite] = why
            print(f"MISSING suite {suite}: {why}", file=out)
            continue
        tests += found
    if args.filter:
        tests = [t for t in tests if args.filter in t.id]

    # Byte-identical models (about 600 of the wheel's tests are the Debian
    # ones unchanged) are imported once; the others take that result.
    start = time.time()
    first_of = {}
    for t in tests:
        with open(t.path, "rb") as f:
            digest = hashlib.sha1(f.read()).hexdigest()
        t.same_as = first_of.setdefault(digest, t)
    unique = [t for t in tests if t.same_as is t]
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        list(pool.map(lambda t: run_one(t, args.kiln_compile, args.timeout),
                      unique))
    for t in tests:
        if t.same_as is not t:
            read_model_info(t)
            for field in ("status", "reason", "seconds"):
                setattr(t, field, getattr(t.same_as, field))
            if hasattr(t.same_as, "raw_reason"):
                t.raw_reason = t.same_as.raw_reason
    elapsed = time.time() - start
    scratch.cleanup()

    for suite in suites:
        if suite in missing:
            continue
        in_suite = [t for t in tests if t.suite == suite]
        if not args.quiet and args.by in ("op-type", "both"):
            print_table(f"== {suite}: by op type (a test counts under each op "
                        "type it contains)", tally(in_suite,
                                                   lambda t: t.op_types), out)
        if not args.quiet and args.by in ("main-op", "both"):
            print_table(f"== {suite}: by main op (from the test's name)",
                        tally(in_suite, lambda t: [main_op(t)]), out,
                        key="main op")
        reasons = collections.Counter(t.reason for t in in_suite
                                      if t.status == "rejected")
        if reasons:
            print(f"\n== {suite}: most common rejection reasons", file=out)
            for reason, n in reasons.most_common(args.reasons):
                print(f"  {n:>5}  {reason[:160]}", file=out)
        chatty = [t for t in in_suite if t.status == "rejected" and
                  getattr(t.same_as, "stderr_lines", 1) != 1]
        if chatty:
            print(f"\n{len(chatty)} rejections printed more than the one "
                  f"diagnostic line, e.g. {chatty[0].id}", file=out)
        crashed = [t for t in in_suite if t.status == "crashed"]
        if crashed:
            print(f"\n== {suite}: CRASHED", file=out)
            for t in crashed:
                print(f"  {t.id}: {t.reason}", file=out)

    status = 0
    if any(t.status == "crashed" for t in tests):
        status = 1

    imported = {t.id for t in tests if t.status == "imported"}
    expected = read_expected(args.expected)
    if args.expected and not args.update_expected:
        if not os.path.exists(args.expected):
            print(f"\nerror: expected list {args.expected} not found",
                  file=out)
            status = 1
        # A listed test that is no longer found counts as lost too (a
        # renamed or deleted test must be taken off the list on purpose);
        # only --filter leaves tests out.
        lost = [i for i in expected if i not in imported and
                (not args.filter or args.filter in i)]
        if lost:
            by_id = {t.id: t for t in tests}
            print(f"\n== REGRESSIONS: {len(lost)} tests in {args.expected} "
                  "no longer import", file=out)
            for i in lost:
                t = by_id.get(i)
                if t is None:
                    why = ("suite missing" if i.split("/")[0] in missing
                           else "no such test in the suite")
                elif t.status == "rejected":
                    why = f"rejected: {t.raw_reason}"
                else:
                    why = f"{t.status}: {t.reason}"
                print(f"  {i}: {why}", file=out)
            status = 1
        new = sorted(imported - set(expected))
        if new:
            print(f"\n{len(new)} tests import that {args.expected} does not "
                  "list (run with --update-expected to add them):", file=out)
            for i in new:
                print(f"  NEW {i}", file=out)
    if args.update_expected:
        ids = imported if args.prune_expected else imported | set(expected)
        write_expected(args.expected, ids)
        print(f"\nwrote {len(ids)} tests to {args.expected} "
              f"({len(ids) - len(set(expected) & ids)} new)", file=out)

    if args.json:
        with open(args.json, "w") as f:
            json.dump([{
                "id": t.id, "suite": t.suite, "category": t.category,
                "name": t.name, "model": t.path, "opset": t.opset,
                "op_types": t.op_types, "main_op": main_op(t),
                "status": t.status, "reason": t.reason,
                "diagnostic": getattr(t, "raw_reason", None),
                "seconds": round(t.seconds, 3),
                "same_model_as": (t.same_as.id if t.same_as is not t
                                  else None)} for t in tests], f, indent=1)

    parts = []
    for suite in suites:
        if suite in missing:
            parts.append(f"{suite}: MISSING")
            continue
        c = collections.Counter(t.status for t in tests if t.suite == suite)
        n = sum(c.values())
        parts.append(f"{suite}: {n} tests, {c['imported']} imported, "
                     f"{c['rejected']} rejected, {c['crashed']} crashed")
    print(f"\n({elapsed:.0f} s with {args.jobs} jobs; {len(unique)} distinct "
          "models)", file=out)
    print("TOTAL " + "; ".join(parts), file=out)
    return status


if __name__ == "__main__":
    sys.exit(main())
