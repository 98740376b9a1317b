#!/usr/bin/env python3
#===- test/E2E/ptq.py - kiln-compile --precision=int8 post-training quant. -===#
#
# Kiln's own post-training quantization (kiln-compile --precision=int8
# --calibration=DIR, docs/quantization.md), checked end to end:
#
# 1. Observers against numpy. The scales and zero points Kiln writes into
#    the QDQ model (--emit-qdq-onnx) for a tensor that is a graph input
#    (so numpy sees exactly the values Kiln observed) equal a numpy
#    computation of the same observer and onnxruntime's compute_scale_zp
#    formula: minmax and percentile bit for bit, entropy (TensorRT's KL
#    threshold search, re-implemented here in numpy) to the same histogram
#    bin. Weights: per-channel symmetric int8 and i32 biases bit for bit.
#    Deeper layers (whose input Kiln computes in fp32): within 1e-5.
# 2. onnxruntime runs the exported QDQ model; its output is within 1e-5 of
#    Kiln's int8 artifact's on the MLP (the same integer arithmetic; the
#    output is a softmax of dequantized sums) and within one step of the
#    last activation quantizer on the small CNN (Conv quantized too).
# 3. Accuracy: the int8 MLP against fp32 (--accuracy-report JSON) on the
#    calibration and a held-out set: cosine >= 0.999, max abs error of
#    the probabilities <= 0.05, and the table has every layer.
# 4. Determinism: the same calibration folder gives bit-identical
#    artifacts (all three methods).
# 5. Layouts and errors: DIR/<input name>.npy as well as input_N.npy
#    (same result); a folder without the input, one with a wrong shape and
#    an empty one are errors naming the input; --accuracy-report for fp16.
#
#   ptq.py --kiln-compile BIN --kiln-run BIN --workdir DIR
#
#===----------------------------------------------------------------------===#

import argparse
import math
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True)


# --- numpy references of the observers and parameters ----------------------

def compute_scale_zp(rmin, rmax, qmin, qmax, symmetric):
    """onnxruntime.quantization.quant_utils.compute_scale_zp."""
    rmin = min(np.float32(rmin), np.float32(0))
    rmax = max(np.float32(rmax), np.float32(0))
    if symmetric:
        absmax = max(abs(rmin), abs(rmax))
        rmin, rmax = -absmax, absmax
    scale = (np.float64(rmax) - np.float64(rmin)) / (np.float64(qmax) -
                                                      np.float64(qmin))
    if scale < np.finfo(np.float32).tiny:
        return np.float32(1), 0
    if symmetric:
        zp = int(np.round((qmin + qmax) / 2.0))
    else:
        zp = int(np.round(qmin - np.float64(rmin) / scale))
    return np.float32(scale), min(max(zp, qmin), qmax)


def entropy_bins(hist, n_q=128):
    """TensorRT's KL threshold search as docs/quantization.md states it."""
    n = len(hist)
    best, best_kl = n, math.inf
    hist = hist.astype(np.float64)
    for i in range(n_q, n + 1):
        p = hist[:i].copy()
        p[i - 1] += hist[i:].sum()
        q = np.zeros(i)
        merged = i // n_q
        for j in range(n_q):
            start = j * merged
            stop = i if j == n_q - 1 else start + merged
            seg = hist[start:stop]
            mask = p[start:stop] != 0
            nz = np.count_nonzero(mask)
            if nz:
                q[start:stop] = np.where(mask, seg.sum() / nz, 0)
        pn, qn = p / p.sum(), q / q.sum()
        mask = p > 0
        if np.any(q[mask] == 0):
            continue
        kl = float(np.sum(pn[mask] * np.log(pn[mask] / qn[mask])))
        if kl < best_kl:
            best, best_kl = i, kl
    return best


def observe(values, method, percentile=99.99):
    """(lo, hi, bin width or None) of Kiln's observer on float32 values."""
    x = np.concatenate([v.ravel() for v in values]).astype(np.float32)
    mn, mx = x.min(), x.max()
    if method == "minmax":
        return mn, mx, None
    a = np.abs(x.astype(np.float64))
    width = None
    if method == "percentile":
        t = np.percentile(a, percentile)
    else:
        amax = max(abs(float(mn)), abs(float(mx)))
        idx = np.minimum((a * (2048.0 / amax)).astype(np.int64), 2047)
        hist = np.bincount(idx, minlength=2048)
        width = amax / 2048.0
        t = entropy_bins(hist) * width
    return (np.float32(max(float(mn), -t)), np.float32(min(float(mx), t)),
            width)


# --- reading the QDQ model --------------------------------------------------

def qdq_params(model):
    """For each QuantizeLinear of a graph value, (input name, scale, zp)."""
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    out = []
    for node in model.graph.node:
        if node.op_type == "QuantizeLinear":
            out.append((node.input[0], inits[node.input[1]],
                        inits[node.input[2]]))
    return out


def weight_dqs(model):
    """(int weight, scale, axis) of every DequantizeLinear of an initializer
    of 2 or more dimensions, in graph order."""
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    out = []
    for node in model.graph.node:
        if (node.op_type == "DequantizeLinear" and node.input[0] in inits
                and inits[node.input[0]].ndim >= 2):
            w = inits[node.input[0]]
            axis = next((a.i for a in node.attribute if a.name == "axis"), 1)
            out.append((w, inits[node.input[1]], axis))
    return out


def ort_session(path):
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    return ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])


def make_sets(root, shape, count, rng, gen="normal", layout="index",
              name="input"):
    sets = []
    for i in range(count):
        d = os.path.join(root, f"test_data_set_{i}")
        os.makedirs(d, exist_ok=True)
        if gen == "normal":
            x = rng.standard_normal(shape).astype(np.float32)
        else:  # skewed, non-negative with a long tail
            x = rng.lognormal(0.0, 1.0, size=shape).astype(np.float32)
        np.save(os.path.join(d, "input_0.npy" if layout == "index"
                             else f"{name}.npy"), x)
        sets.append(x)
    return sets


def skewed_model(path):
    """x [8, 64] (non-negative, long-tailed) -> MatMul -> Relu -> Gemm."""
    rng = np.random.default_rng(7)
    w1 = rng.standard_normal((64, 48)).astype(np.float32) * 0.2
    w2 = rng.standard_normal((10, 48)).astype(np.float32) * 0.2
    b2 = rng.standard_normal(10).astype(np.float32) * 0.1
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"], name="/l1/MatMul"),
             helper.make_node("Relu", ["h"], ["r"], name="/act/Relu"),
             helper.make_node("Gemm", ["r", "w2", "b2"], ["y"], transB=1,
                              name="/l2/Gemm")]
    graph = helper.make_graph(
        nodes, "skewed",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 10])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2"),
         numpy_helper.from_array(b2, "b2")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, path)
    return w1, w2, b2


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln-compile", required=True)
    ap.add_argument("--kiln-run", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    wd = args.workdir
    shutil.rmtree(wd, ignore_errors=True)
    os.makedirs(wd)
    kc, kr = args.kiln_compile, args.kiln_run
    r = run([sys.executable, os.path.join(ROOT, "models",
                                          "generate_demo_models.py"),
             "--out", wd, "--only", "mlp,small_cnn", "--static-shapes"])
    if r.returncode:
        print(r.stdout, r.stderr)
        return 1
    mlp = os.path.join(wd, "mlp.onnx")
    rng = np.random.default_rng(0)
    calib = make_sets(os.path.join(wd, "calib"), (4, 784), 8, rng)
    holdout = make_sets(os.path.join(wd, "holdout"), (4, 784), 4, rng)

    # 1 + 4. Observers, parameters and determinism on the MLP's input.
    for method in ("minmax", "percentile", "entropy"):
        qdq = os.path.join(wd, f"mlp_{method}.onnx")
        arts = [os.path.join(wd, f"mlp_{method}_{k}.kiln") for k in (0, 1)]
        ok = True
        for k, art in enumerate(arts):
            cmd = [kc, mlp, "--precision=int8",
                   "--calibration=" + os.path.join(wd, "calib"),
                   "--calibration-method=" + method, "-o", art]
            if k == 0:
                cmd.append("--emit-qdq-onnx=" + qdq)
            r = run(cmd)
            if r.returncode:
                print(r.stdout, r.stderr)
                ok = False
        check(ok, f"{method}: compiles twice")
        if not ok:
            continue
        check(open(arts[0], "rb").read() == open(arts[1], "rb").read(),
              f"{method}: the same calibration gives a bit-identical artifact")
        model = onnx.load(qdq)
        params = qdq_params(model)
        lo, hi, width = observe(calib, method)
        want_scale, want_zp = compute_scale_zp(lo, hi, -128, 127, False)
        name, scale, zp = params[0]
        if width is None:
            check(name == "input" and scale == want_scale and
                  int(zp) == want_zp and zp.dtype == np.int8,
                  f"{method}: input scale/zp {scale!r}/{zp!r} == numpy "
                  f"{want_scale!r}/{want_zp}")
        else:
            # Same histogram bin: the ranges differ by less than one bin.
            have_hi = float(scale) * (127 - int(zp))
            check(name == "input" and
                  abs(float(scale) - float(want_scale)) * 255 <= width * 1.01,
                  f"{method}: input scale {scale!r} == numpy {want_scale!r} "
                  f"within one 2048-bin histogram bin ({width:.3g}; "
                  f"hi {have_hi:.5g})")
        # Weights, per output channel, symmetric [-127, 127], and biases.
        w = {t.name: numpy_helper.to_array(t)
             for t in onnx.load(mlp).graph.initializer}
        dqs = weight_dqs(model)
        ok = len(dqs) == 3
        for (q, s, axis), wname in zip(dqs, ("fc1.weight", "fc2.weight",
                                             "fc3.weight")):
            wf = w[wname]
            absmax = np.abs(wf).max(axis=1 - axis)
            ws = ((absmax.astype(np.float64) * 2) / 254.0).astype(np.float32)
            shape = [1, 1]
            shape[axis] = -1
            wq = np.clip(np.rint(wf / ws.reshape(shape)), -127, 127)
            ok = ok and np.array_equal(s, ws) and np.array_equal(q, wq) \
                and q.dtype == np.int8
        check(ok, f"{method}: weights int8 per output channel == numpy")
        if method == "minmax":
            # fc1's bias (Gemm C) in i32 units of a_scale * w_scale.
            inits = {t.name: numpy_helper.to_array(t)
                     for t in model.graph.initializer}
            gemm = next(n for n in model.graph.node if n.op_type == "Gemm")
            dq = next(n for n in model.graph.node
                      if n.output[0] == gemm.input[2])
            bq, bs = inits[dq.input[0]], inits[dq.input[1]]
            want_bs = np.float32(scale) * dqs[0][1]
            want_bq = np.rint(w["fc1.bias"] / want_bs)
            check(bq.dtype == np.int32 and np.array_equal(bs, want_bs) and
                  np.array_equal(bq, want_bq), "minmax: fc1 bias i32 == numpy")
            # Deeper layers: fc2's input is relu(fc1) in Kiln's fp32.
            sess = ort_session(mlp)
            h = [np.maximum(c @ w["fc1.weight"].T + w["fc1.bias"], 0)
                 for c in calib]
            lo2, hi2, _ = observe(h, "minmax")
            s2, z2 = compute_scale_zp(lo2, hi2, -128, 127, False)
            check(abs(float(params[1][1]) - float(s2)) <= 1e-5 * float(s2)
                  and int(params[1][2]) == z2,
                  f"minmax: fc2 input scale {params[1][1]!r} ~ numpy {s2!r}")

    # The percentile and entropy methods on skewed data (a long tail that
    # they clip), with uint8 activations.
    skewed = os.path.join(wd, "skewed.onnx")
    skewed_model(skewed)
    scal = make_sets(os.path.join(wd, "scalib"), (8, 64), 6, rng,
                     gen="lognormal")
    for method, extra in (("percentile", ["--percentile=99.5"]),
                          ("entropy", []), ("minmax", [])):
        qdq = os.path.join(wd, f"skewed_{method}.onnx")
        r = run([kc, skewed, "--precision=int8", "--activation-type=uint8",
                 "--calibration=" + os.path.join(wd, "scalib"),
                 "--calibration-method=" + method, "--emit-qdq-onnx=" + qdq,
                 "-o", os.path.join(wd, f"skewed_{method}.kiln")] + extra)
        if r.returncode:
            print(r.stdout, r.stderr)
            check(False, f"skewed {method}: compiles")
            continue
        name, scale, zp = qdq_params(onnx.load(qdq))[0]
        lo, hi, width = observe(scal, method, 99.5)
        want_scale, want_zp = compute_scale_zp(lo, hi, 0, 255, False)
        if width is None:
            check(scale == want_scale and int(zp) == want_zp and
                  zp.dtype == np.uint8,
                  f"skewed {method} uint8: scale/zp {scale!r}/{zp!r} == "
                  f"numpy {want_scale!r}/{want_zp}")
        else:
            check(abs(float(scale) - float(want_scale)) * 255 <= width * 1.01
                  and int(zp) == want_zp,
                  f"skewed {method} uint8: scale {scale!r} == numpy "
                  f"{want_scale!r} within one bin ({width:.3g})")
        if method != "minmax":
            check(float(scale) * 255 < float(np.max(np.stack(scal))) * 0.9,
                  f"skewed {method}: the long tail is clipped "
                  f"(range {float(scale) * 255:.4g} of max "
                  f"{float(np.max(np.stack(scal))):.4g})")

    # 2. onnxruntime runs the QDQ model like Kiln's int8 artifact.
    report = os.path.join(wd, "mlp_report.json")
    art = os.path.join(wd, "mlp8.kiln")
    qdq = os.path.join(wd, "mlp8.onnx")
    r = run([kc, mlp, "--precision=int8",
             "--calibration=" + os.path.join(wd, "calib"),
             "--holdout=" + os.path.join(wd, "holdout"),
             "--accuracy-report=" + report, "--emit-qdq-onnx=" + qdq,
             "-o", art])
    check(r.returncode == 0, "mlp: int8 with --accuracy-report and --holdout")
    if r.returncode:
        print(r.stdout, r.stderr)
        return 1
    print(r.stdout)
    sess = ort_session(qdq)
    worst = 0.0
    for i, x in enumerate(holdout):
        out = os.path.join(wd, f"mlp8_out{i}")
        rr = run([kr, art, "--inputs",
                  os.path.join(wd, "holdout", f"test_data_set_{i}"),
                  "--save-outputs", out])
        if rr.returncode:
            print(rr.stdout, rr.stderr)
        kiln = np.load(os.path.join(out, "output_0.npy"))
        ref = sess.run(None, {"input": x})[0]
        worst = max(worst, float(np.abs(kiln - ref).max()))
    check(worst <= 1e-5,
          f"mlp: onnxruntime on the QDQ model == Kiln int8 within 1e-5 "
          f"(max {worst:.3g})")

    # 3. The accuracy report.
    import json
    rep = json.load(open(report))
    outs = rep["outputs"]
    check(len(outs) == 1 and outs[0]["name"] == "probs" and
          set(outs[0]) >= {"calibration", "holdout"},
          "report: the output on calibration and holdout")
    for group in ("calibration", "holdout"):
        q = outs[0][group]
        check(q["cosine_similarity"] >= 0.999 and q["max_abs_error"] <= 0.05
              and q["top1_rows"] == (32 if group == "calibration" else 16),
              f"report: int8 probs vs fp32 on {group}: cosine "
              f"{q['cosine_similarity']:.6f}, max abs "
              f"{q['max_abs_error']:.3g}, top-1 {q['top1_agreement']}")
    layers = [l["node"] for l in rep["layers"]]
    check(layers == ["/fc1/Gemm", "/fc2/MatMul", "/fc3/Gemm"] and all(
        l["precision"] == "int8" and l["holdout"]["cosine_similarity"] > 0.999
        for l in rep["layers"]), f"report: every layer, int8, close: {layers}")
    check(len(rep["quantization"]["layers"]) == 3,
          "report: the quantization table")

    # Conv: the small CNN (integer convolutions, kiln.quantized_conv, with
    # the f32 bias added in the epilogue).
    cnn = os.path.join(wd, "small_cnn.onnx")
    ccal = make_sets(os.path.join(wd, "ccalib"), (2, 3, 32, 32), 3, rng)
    cart, cqdq = os.path.join(wd, "cnn8.kiln"), os.path.join(wd, "cnn8.onnx")
    r = run([kc, cnn, "--precision=int8", "--quantize-ops=Conv,Gemm",
             "--calibration=" + os.path.join(wd, "ccalib"),
             "--emit-qdq-onnx=" + cqdq, "-o", cart])
    check(r.returncode == 0, "small_cnn: Conv and Gemm quantized")
    if r.returncode == 0:
        out = os.path.join(wd, "cnn8_out")
        run([kr, cart, "--inputs", os.path.join(wd, "ccalib",
                                                "test_data_set_0"),
             "--save-outputs", out])
        kiln = np.load(os.path.join(out, "output_0.npy"))
        ref = ort_session(cqdq).run(None, {"input": ccal[0]})[0]
        fp32 = ort_session(cnn).run(None, {"input": ccal[0]})[0]
        last = float(qdq_params(onnx.load(cqdq))[-1][1])
        n_conv = sum(n.op_type == "Conv" for n in onnx.load(cqdq).graph.node)
        check(n_conv == 6 and float(np.abs(kiln - ref).max()) <= last,
              f"small_cnn: onnxruntime QDQ == Kiln int8 within one step of "
              f"the last quantizer ({float(np.abs(kiln - ref).max()):.3g} <= "
              f"{last:.3g}); int8 vs fp32 {float(np.abs(kiln - fp32).max()):.3g}")

    # 5. Layouts and errors.
    named = os.path.join(wd, "named")
    os.makedirs(named)
    np.save(os.path.join(named, "input.npy"), calib[0])
    single = os.path.join(wd, "calib", "test_data_set_0")
    outs = []
    for d in (named, single):
        q = os.path.join(wd, f"layout_{len(outs)}.onnx")
        r = run([kc, mlp, "--precision=int8", "--calibration=" + d,
                 "--emit-qdq-onnx=" + q, "-o", q + ".kiln"])
        outs.append(qdq_params(onnx.load(q)) if r.returncode == 0 else None)
    check(outs[0] is not None and outs[1] is not None and all(
        a[1] == b[1] and a[2] == b[2] for a, b in zip(outs[0], outs[1])),
        "layouts: DIR/input.npy and DIR/input_0.npy give the same scales")

    def expect_error(d, what, must):
        r = run([kc, mlp, "--precision=int8", "--calibration=" + d,
                 "-o", os.path.join(wd, "bad.kiln")])
        msg = (r.stderr + r.stdout).strip().splitlines()
        msg = msg[-1] if msg else ""
        check(r.returncode != 0 and all(m in msg for m in must)
              and not os.path.exists(os.path.join(wd, "bad.kiln")),
              f"error, {what}: {msg}")

    empty = os.path.join(wd, "empty")
    os.makedirs(empty)
    expect_error(empty, "empty folder", ["'input'", "input_0.npy"])
    missing = os.path.join(wd, "missing", "test_data_set_0")
    os.makedirs(missing)
    np.save(os.path.join(missing, "other.npy"), calib[0])
    expect_error(os.path.dirname(missing), "input missing",
                 ["'input'", "test_data_set_0", "no input_0.npy"])
    wrong = os.path.join(wd, "wrong")
    os.makedirs(wrong)
    np.save(os.path.join(wrong, "input_0.npy"),
            np.zeros((4, 783), np.float32))
    expect_error(wrong, "wrong shape", ["'input'", "[4, 783]", "[4, 784]"])
    r = run([kc, mlp, "--precision=int8", "-o", os.path.join(wd, "x.kiln")])
    check(r.returncode != 0 and "--calibration" in r.stderr,
          "error: int8 without --calibration")

    # --accuracy-report for fp16 (the same report code).
    rep16 = os.path.join(wd, "fp16.json")
    r = run([kc, mlp, "--precision=fp16",
             "--calibration=" + os.path.join(wd, "calib"),
             "--holdout=" + os.path.join(wd, "holdout"),
             "--accuracy-report=" + rep16, "-o", os.path.join(wd, "m16.kiln")])
    ok = r.returncode == 0
    if ok:
        rep = json.load(open(rep16))
        ok = (rep["precision"] == "fp16" and len(rep["layers"]) == 3 and
              rep["outputs"][0]["holdout"]["cosine_similarity"] > 0.9999 and
              all(l["precision"] == "fp16" for l in rep["layers"]))
    else:
        print(r.stdout, r.stderr)
    check(ok, "fp16: --accuracy-report per output and layer")

    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
