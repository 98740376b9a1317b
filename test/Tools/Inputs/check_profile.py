"""Checks kiln-run's --json "profile" object and its --trace file.

Usage: check_profile.py RESULT.json TRACE.json RUNS

The per-kernel and per-category shares with the time outside the kernels
add up to 100%; every kernel was launched once per run; the trace is valid
JSON (Trace Event Format) with one "X" event per run and one per kernel per
run, each kernel event inside its run's event, with the kernel's category
and ONNX nodes in its args.
"""
import json
import sys


def fail(message):
    print("check_profile: FAIL: " + message)
    sys.exit(1)


def main():
    result = json.load(open(sys.argv[1]))
    trace = json.load(open(sys.argv[2]))
    runs = int(sys.argv[3])
    profile = result["profile"]
    kernels = profile["kernels"]
    if profile["runs"] != runs:
        fail("%d profiled runs, expected %d" % (profile["runs"], runs))
    if not kernels:
        fail("no kernels")
    outside = profile["outside_kernels_share"]
    total = sum(k["share"] for k in kernels) + outside
    if abs(total - 100.0) > 0.01:
        fail("kernel shares + outside add up to %f" % total)
    total = sum(c["share"] for c in profile["categories"]) + outside
    if abs(total - 100.0) > 0.01:
        fail("category shares + outside add up to %f" % total)
    if sum(c["kernels"] for c in profile["categories"]) != len(kernels):
        fail("the categories do not count every kernel")
    for k in kernels:
        if k["launches"] != runs:
            fail("%s launched %d times" % (k["name"], k["launches"]))
        if not (0 <= k["min_ms"] <= k["mean_ms"] <= k["max_ms"]):
            fail("%s: min/mean/max out of order" % k["name"])

    events = trace["traceEvents"]
    complete = [e for e in events if e["ph"] == "X"]
    run_events = [e for e in complete if e["cat"] == "run"]
    kernel_events = [e for e in complete if e["cat"] != "run"]
    if len(run_events) != runs:
        fail("%d run events, expected %d" % (len(run_events), runs))
    if len(kernel_events) != runs * len(kernels):
        fail("%d kernel events, expected %d kernels x %d runs"
             % (len(kernel_events), len(kernels), runs))
    by_id = {k["id"]: k for k in kernels}
    counts = {}
    for e in kernel_events:
        k = by_id[e["args"]["kernel_id"]]
        counts[k["id"]] = counts.get(k["id"], 0) + 1
        if e["name"] != k["name"] or e["cat"] != k["category"]:
            fail("event %s/%s does not match kernel %s/%s"
                 % (e["name"], e["cat"], k["name"], k["category"]))
        if e["args"]["onnx_nodes"] != k["onnx_nodes"]:
            fail("event %s: nodes %s" % (e["name"], e["args"]["onnx_nodes"]))
        if e["ts"] < 0 or e["dur"] < 0:
            fail("event %s: negative time" % e["name"])
        run = [r for r in run_events if r["args"]["run"] == e["args"]["run"]]
        if len(run) != 1 or run[0]["tid"] != e["tid"]:
            fail("event %s: no run event on its thread" % e["name"])
        r = run[0]
        # Microsecond values with 3 decimals: allow the rounding.
        if e["ts"] < r["ts"] - 0.002 or \
                e["ts"] + e["dur"] > r["ts"] + r["dur"] + 0.002:
            fail("event %s lies outside its run" % e["name"])
    if any(c != runs for c in counts.values()) or len(counts) != len(kernels):
        fail("not one event per kernel per run")
    print("check_profile: OK: %d kernels x %d runs" % (len(kernels), runs))


if __name__ == "__main__":
    main()
