#!/usr/bin/env python3
#===- test/E2E/dnnl_calls.py - oneDNN convolutions and matmuls vs numpy ---===#
#
# With --kernels=auto (the default), float32 2-D convolutions and matmuls of
# 128+ rows by a weight run through oneDNN (kiln-cpu-dnnl-calls,
# runtime/abi/kiln_abi_dnnl.cpp). This builds small ONNX models that reach
# every argument of those calls (grouped, depthwise, strided, dilated
# convolutions; max and average pools with padding and ceil_mode;
# asymmetric, SAME_UPPER and SAME_LOWER padding; no bias; the
# residual added before and after Relu; HardSwish and Clip(0, 6) as
# post-ops; a squeeze-and-excitation 1x1 layer left to Kiln; a Conv whose filter is a graph
# input; a dynamic batch at three sizes; run-time image sizes (explicit and
# SAME padding) at three sizes each; MatMul of a 3-D input, Gemm with a
# bias), checks with `kiln-compile --emit=linalg` that each one's
# convolutions and matmuls are oneDNN calls, compiles it with the kiln
# package and compares the outputs with float64 numpy references written
# from the ONNX definitions (|kiln - numpy| <= 1e-4 + 1e-4 |numpy|).
# oneDNN picks its kernels for the CPU at run time: the checks run with
# its best ISA, then again in a child process capped at AVX2
# (DNNL_MAX_CPU_ISA=AVX2) so that the AVX2 kernels run on an AVX-512
# machine too; a CPU without AVX2 reports that pass as skipped.
# A Kiln built without oneDNN: exit 77 (skipped), nothing is claimed.
#
#   dnnl_calls.py --kiln-compile BIN --workdir DIR
#
#===----------------------------------------------------------------------===#

import argparse
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from kiln_e2e import E2EError, compile_and_run

RTOL, ATOL = 1e-4, 1e-4


def conv_ref(x, w, b, strides, pads, dilations, group):
    """ONNX Conv (NCHW, OIHW) in float64; pads = [top, left, bottom, right]."""
    x = x.astype(np.float64)
    w = w.astype(np.float64)
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    oh = (h + pads[0] + pads[2] - dilations[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (wd + pads[1] + pads[3] - dilations[1] * (kw - 1) - 1) // strides[1] + 1
    y = np.zeros((n, m, oh, ow))
    mg = m // group
    for g in range(group):
        xs = xp[:, g * cg:(g + 1) * cg]
        for i in range(kh):
            for j in range(kw):
                r0, c0 = i * dilations[0], j * dilations[1]
                patch = xs[:, :, r0:r0 + strides[0] * (oh - 1) + 1:strides[0],
                           c0:c0 + strides[1] * (ow - 1) + 1:strides[1]]
                y[:, g * mg:(g + 1) * mg] += np.einsum(
                    "nchw,mc->nmhw", patch, w[g * mg:(g + 1) * mg, :, i, j])
    if b is not None:
        y += b.astype(np.float64)[None, :, None, None]
    return y


def same_pads(size, k, s, d, upper):
    out = -(-size // s)
    total = max(0, (out - 1) * s + d * (k - 1) + 1 - size)
    small = total // 2
    begin = small if upper else total - small
    return begin, total - begin


def conv_model(name, rng, shape, m, k, strides=(1, 1), pads=(0, 0, 0, 0),
               dilations=(1, 1), group=1, bias=True, auto_pad=None,
               residual=None, filter_input=False, dynamic_batch=False,
               activation=None):
    """Conv [+ residual Add, Relu in the order `residual`: None, 'before'
    (Relu(conv + r)) or 'after' (Relu(conv) + r)] [+ `activation`:
    'hard_swish' (HardSwish) or 'relu6' (Clip to constants 0 and 6)]."""
    n, c, h, wd = shape
    w = (rng.standard_normal((m, c // group, k, k)) * 0.2).astype(np.float32)
    b = rng.standard_normal(m).astype(np.float32) if bias else None
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        up = auto_pad == "SAME_UPPER"
        t, bo = same_pads(h, k, strides[0], dilations[0], up)
        l, r = same_pads(wd, k, strides[1], dilations[1], up)
        ref_pads = (t, l, bo, r)
    else:
        ref_pads = pads
    x = rng.standard_normal(shape).astype(np.float32)
    conv_in, block_in = "x", x
    if residual:
        # A ResNet block: the skip connection is an activation of the
        # network (channels-last like the convolution), here the output of
        # a 1x1 convolution of the input.
        w0 = (rng.standard_normal((c, c, 1, 1)) * 0.2).astype(np.float32)
        block_in = conv_ref(x, w0, None, (1, 1), (0, 0, 0, 0), (1, 1), 1)
        conv_in = "h"
    y = conv_ref(block_in, w, b, strides, ref_pads, dilations, group)
    attrs = dict(strides=list(strides), dilations=list(dilations),
                 group=group, kernel_shape=[k, k])
    if auto_pad:
        attrs["auto_pad"] = auto_pad
    else:
        attrs["pads"] = list(pads)
    inputs = [conv_in, "w"] + (["b"] if bias else [])
    nodes = [helper.make_node("Conv", inputs, ["c"], **attrs)]
    if residual:
        nodes.insert(0, helper.make_node("Conv", ["x", "w0"], ["h"]))
    feeds = [x]
    graph_inputs = [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, ["batch" if dynamic_batch else n, c, h, wd])]
    initializers = []
    if filter_input:
        graph_inputs.append(helper.make_tensor_value_info(
            "w", TensorProto.FLOAT, list(w.shape)))
        feeds.append(w)
    else:
        initializers.append(numpy_helper.from_array(w, "w"))
    if bias:
        initializers.append(numpy_helper.from_array(b, "b"))
    if residual:
        initializers.append(numpy_helper.from_array(w0, "w0"))
    out = "c"
    if residual:
        r = block_in
        if residual == "before":
            nodes += [helper.make_node("Add", ["c", "h"], ["s"]),
                      helper.make_node("Relu", ["s"], ["y"])]
            y = np.maximum(y + r, 0)
        else:
            nodes += [helper.make_node("Relu", ["c"], ["a"]),
                      helper.make_node("Add", ["a", "h"], ["y"])]
            y = np.maximum(y, 0) + r
        out = "y"
    if activation == "hard_swish":
        nodes.append(helper.make_node("HardSwish", [out], ["act"]))
        y = y * np.clip(y / 6 + 0.5, 0, 1)
        out = "act"
    elif activation == "relu6":
        nodes.append(helper.make_node("Clip", [out, "lo", "hi"], ["act"]))
        initializers += [numpy_helper.from_array(np.float32(0), "lo"),
                         numpy_helper.from_array(np.float32(6), "hi")]
        y = np.clip(y, 0, 6)
        out = "act"
    oshape = ["batch" if dynamic_batch else y.shape[0]] + list(y.shape[1:])
    graph = helper.make_graph(
        nodes, name, graph_inputs,
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, oshape)],
        initializers)
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model, feeds, [y]


def pool_ref(x, kind, k, s, pads, ceil, include_pad):
    """ONNX MaxPool / AveragePool (NCHW) in float64; pads [t, l, b, r]."""
    x = x.astype(np.float64)
    n, c, h, w = x.shape
    def out(size, p0, p1, kk, ss):
        span = size + p0 + p1 - kk
        return (-(-span // ss) if ceil else span // ss) + 1
    oh, ow = out(h, pads[0], pads[2], k, s), out(w, pads[1], pads[3], k, s)
    y = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            r0, c0 = i * s - pads[0], j * s - pads[1]
            r1, c1 = r0 + k, c0 + k
            win = x[:, :, max(r0, 0):min(r1, h), max(c0, 0):min(c1, w)]
            if kind == "MaxPool":
                y[:, :, i, j] = win.max(axis=(2, 3))
            elif include_pad:
                # The explicit pads count, not the ceil_mode overhang.
                rows = min(r1, h + pads[2]) - r0
                cols = min(c1, w + pads[3]) - c0
                y[:, :, i, j] = win.sum(axis=(2, 3)) / (rows * cols)
            else:
                y[:, :, i, j] = win.mean(axis=(2, 3))
    return y


def pool_models(rng):
    for name, kind, k, s, pads, ceil, include in [
            ("maxpool_resnet", "MaxPool", 3, 2, (1, 1, 1, 1), 0, 0),
            ("maxpool_ceil", "MaxPool", 3, 2, (0, 0, 0, 0), 1, 0),
            ("avgpool_pads_counted", "AveragePool", 3, 2, (1, 1, 1, 1), 0, 1),
            ("avgpool_ceil_pads_excluded", "AveragePool", 3, 2,
             (1, 0, 1, 0), 1, 0)]:
        x = rng.standard_normal((2, 8, 11, 11)).astype(np.float32)
        y = pool_ref(x, kind, k, s, pads, ceil, include)
        attrs = dict(kernel_shape=[k, k], strides=[s, s], pads=list(pads),
                     ceil_mode=ceil)
        if kind == "AveragePool":
            attrs["count_include_pad"] = include
        graph = helper.make_graph(
            [helper.make_node(kind, ["x"], ["y"], **attrs)], name,
            [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                           list(x.shape))],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                           list(y.shape))])
        yield name, graph, [x], [y]


def matmul_models(rng):
    a = rng.standard_normal((2, 96, 48)).astype(np.float32)
    w = (rng.standard_normal((48, 80)) * 0.2).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["a", "w"], ["y"])], "matmul",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 96, 48])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 96, 80])],
        [numpy_helper.from_array(w, "w")])
    yield "matmul_3d", graph, [a], [a.astype(np.float64) @ w]
    a = rng.standard_normal((160, 64)).astype(np.float32)
    wt = (rng.standard_normal((72, 64)) * 0.2).astype(np.float32)
    c = rng.standard_normal(72).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Gemm", ["a", "w", "c"], ["y"], transB=1)], "gemm",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [160, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [160, 72])],
        [numpy_helper.from_array(wt, "w"), numpy_helper.from_array(c, "c")])
    yield "gemm_bias", graph, [a], [a.astype(np.float64) @ wt.T.astype(np.float64) + c]


def cases(rng):
    yield ("conv_basic",) + conv_model("conv_basic", rng, (1, 8, 12, 12), 16,
                                       3, pads=(1, 1, 1, 1))
    yield ("conv_strided_asym",) + conv_model(
        "conv_strided_asym", rng, (2, 6, 13, 11), 10, 3, strides=(2, 1),
        pads=(0, 1, 2, 1), bias=False)
    yield ("conv_dilated_same_upper",) + conv_model(
        "conv_dilated_same_upper", rng, (1, 4, 10, 9), 8, 3, strides=(2, 2),
        dilations=(2, 1), auto_pad="SAME_UPPER")
    yield ("conv_same_lower",) + conv_model(
        "conv_same_lower", rng, (1, 4, 8, 8), 6, 2, auto_pad="SAME_LOWER")
    yield ("conv_grouped",) + conv_model("conv_grouped", rng, (1, 12, 9, 9),
                                         18, 3, pads=(1, 1, 1, 1), group=3)
    yield ("conv_depthwise",) + conv_model(
        "conv_depthwise", rng, (1, 16, 10, 10), 16, 3, strides=(2, 2),
        pads=(1, 1, 1, 1), group=16)
    yield ("conv_residual_before_relu",) + conv_model(
        "conv_residual_before_relu", rng, (1, 8, 8, 8), 8, 3,
        pads=(1, 1, 1, 1), residual="before")
    yield ("conv_residual_after_relu",) + conv_model(
        "conv_residual_after_relu", rng, (1, 8, 8, 8), 8, 1,
        residual="after")
    yield ("conv_filter_input",) + conv_model(
        "conv_filter_input", rng, (1, 5, 7, 7), 4, 3, pads=(1, 1, 1, 1),
        filter_input=True)
    # MobileNetV3's epilogues: oneDNN's hardswish and clip post-ops (the
    # filters scaled up so that both bounds of each are crossed).
    yield ("conv_hard_swish",) + conv_model(
        "conv_hard_swish", rng, (2, 16, 9, 9), 16, 3, pads=(1, 1, 1, 1),
        group=16, activation="hard_swish")
    yield ("conv_relu6",) + conv_model(
        "conv_relu6", rng, (1, 24, 7, 7), 32, 1, activation="relu6")
    # A squeeze-and-excitation layer (1x1 filter over a 1x1 image) is a
    # matrix-vector product Kiln's own kernel runs: no oneDNN call.
    yield ("se_fc_relu6",) + conv_model(
        "se_fc_relu6", rng, (3, 64, 1, 1), 96, 1, activation="relu6")
    for name, graph, feeds, expected in list(matmul_models(rng)) + list(
            pool_models(rng)):
        model = helper.make_model(graph,
                                  opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        yield name, model, feeds, expected


def check(tag, got, expected):
    for i, want in enumerate(expected):
        have = np.asarray(got[i], dtype=np.float64)
        if have.shape != want.shape:
            return f"FAIL {tag}: output {i} shape {have.shape}, want {want.shape}"
        err = np.abs(have - want)
        bad = err > ATOL + RTOL * np.abs(want)
        if bad.any():
            return (f"FAIL {tag}: output {i}: {int(bad.sum())} elements off, "
                    f"max abs error {err.max():.3g}")
    return None


def calls_in(kiln_compile, path, workdir, shapes=None, kernel=None):
    out = os.path.join(workdir, os.path.basename(path) + ".mlir")
    cmd = [kiln_compile, path, "--emit=linalg", "-o", out]
    if shapes:
        cmd.append(f"--input-shapes={shapes}")
    subprocess.run(cmd, check=True, capture_output=True)
    text = open(out).read()
    if kernel:
        return text.count(f"call @{kernel}")
    return (text.count("call @kiln_abi_dnnl_conv2d_f32"),
            text.count("call @kiln_abi_dnnl_matmul_f32"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln-compile", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--isa", default="",
                    help="(internal) the DNNL_MAX_CPU_ISA this process has")
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    # Is oneDNN in this build? A model with one convolution tells.
    rng = np.random.default_rng(0)
    probe, _, _ = conv_model("probe", rng, (1, 4, 6, 6), 4, 3)
    probe_path = os.path.join(args.workdir, "probe.onnx")
    onnx.save(probe, probe_path)
    if calls_in(args.kiln_compile, probe_path, args.workdir) == (0, 0):
        print("SKIP: this Kiln is built without oneDNN (libdnnl-dev): "
              "--kernels=auto compiles convolutions as codegen")
        return 77
    failures = 0
    rng = np.random.default_rng(1)
    for name, model, feeds, expected in cases(rng):
        path = os.path.join(args.workdir, f"{name}.onnx")
        onnx.save(model, path)
        if "pool" in name:
            pools = calls_in(args.kiln_compile, path, args.workdir,
                             kernel="kiln_abi_dnnl_pool2d_f32")
            if pools != 1:
                print(f"FAIL {name}: {pools} oneDNN pooling calls, want 1")
                failures += 1
                continue
        convs, matmuls = calls_in(args.kiln_compile, path, args.workdir)
        want_conv = name.startswith("conv")
        want = ((2 if "residual" in name else 1, 0) if want_conv else
                (0, 0) if "pool" in name or name.startswith("se_") else
                (0, 1))
        if (convs, matmuls) != want:
            print(f"FAIL {name}: {convs} oneDNN convolution and {matmuls} "
                  f"matmul calls, want {want[0]} and {want[1]}")
            failures += 1
            continue
        try:
            got = compile_and_run(path, feeds, threads=2)
        except E2EError as e:
            print(f"FAIL {name}: {str(e).strip()[:400]}")
            failures += 1
            continue
        message = check(name, got, expected)
        print(message or f"PASS {name}: "
              f"{'Kiln kernel' if name.startswith('se_') else 'oneDNN call'}"
              ", matches numpy")
        failures += message is not None
    # A run-time batch: one artifact at three batch sizes (the call takes
    # the batch at run time).
    model, _, _ = conv_model("conv_dynamic", np.random.default_rng(2),
                             (1, 6, 9, 9), 8, 3, pads=(1, 1, 1, 1),
                             dynamic_batch=True)
    path = os.path.join(args.workdir, "conv_dynamic.onnx")
    onnx.save(model, path)
    weights = {t.name: numpy_helper.to_array(t)
               for t in model.graph.initializer}
    import kiln
    artifact = os.path.join(args.workdir, "conv_dynamic.kiln")
    kiln.compile(path).save(artifact)
    session = kiln.InferenceSession(artifact, threads=2)
    for batch in (1, 3, 2):
        x = np.random.default_rng(batch).standard_normal(
            (batch, 6, 9, 9)).astype(np.float32)
        want = conv_ref(x, weights["w"], weights["b"], (1, 1), (1, 1, 1, 1),
                        (1, 1), 1)
        got = session.run(None, {"x": x})
        message = check(f"conv_dynamic batch={batch}", got, [want])
        print(message or f"PASS conv_dynamic batch={batch}: matches numpy")
        failures += message is not None
    # Run-time image sizes: one artifact per padding rule (explicit, SAME_UPPER,
    # SAME_LOWER with an even kernel), the convolution a oneDNN call whose
    # sizes and padding are computed at run time, checked against numpy at
    # three sizes each (odd ones included).
    for auto_pad, k in ((None, 3), ("SAME_UPPER", 3), ("SAME_LOWER", 4)):
        tag = f"conv_image_{(auto_pad or 'explicit').lower()}"
        model, _, _ = conv_model(tag, np.random.default_rng(3), (1, 5, 8, 8),
                                 8, k, strides=(2, 2), pads=(1, 1, 1, 1),
                                 auto_pad=auto_pad, dynamic_batch=True)
        graph_input = model.graph.input[0].type.tensor_type.shape
        graph_input.dim[2].dim_param = "height"
        graph_input.dim[3].dim_param = "width"
        graph_output = model.graph.output[0].type.tensor_type.shape
        graph_output.dim[2].dim_param = "out_height"
        graph_output.dim[3].dim_param = "out_width"
        path = os.path.join(args.workdir, tag + ".onnx")
        onnx.save(model, path)
        convs, _ = calls_in(args.kiln_compile, path, args.workdir)
        if convs != 1:
            print(f"FAIL {tag}: {convs} oneDNN convolution calls (want 1)")
            failures += 1
            continue
        weights = {t.name: numpy_helper.to_array(t)
                   for t in model.graph.initializer}
        artifact = os.path.join(args.workdir, tag + ".kiln")
        kiln.compile(path).save(artifact)
        session = kiln.InferenceSession(artifact, threads=2)
        for batch, h, w in ((1, 8, 8), (2, 17, 23), (1, 30, 9)):
            x = np.random.default_rng(h * w).standard_normal(
                (batch, 5, h, w)).astype(np.float32)
            if auto_pad:
                up = auto_pad == "SAME_UPPER"
                t, bo = same_pads(h, k, 2, 1, up)
                l, r = same_pads(w, k, 2, 1, up)
                pads = (t, l, bo, r)
            else:
                pads = (1, 1, 1, 1)
            want = conv_ref(x, weights["w"], weights["b"], (2, 2), pads,
                            (1, 1), 1)
            got = session.run(None, {"x": x})
            message = check(f"{tag} {batch}x5x{h}x{w}", got, [want])
            print(message or f"PASS {tag} {batch}x5x{h}x{w}: oneDNN call "
                  "at a run-time size, matches numpy")
            failures += message is not None
    label = args.isa or "best ISA"
    print(f"dnnl calls ({label}): {failures} failure(s)")
    if not args.isa:
        flags = open("/proc/cpuinfo").read()
        if " avx2" not in flags:
            print("SKIP dnnl calls capped at AVX2: this CPU has no AVX2")
        elif " avx512f" not in flags:
            print("(AVX2 is this CPU's best ISA: the pass above ran it)")
        else:
            # oneDNN's verbose lines say which kernels ran.
            env = dict(os.environ, DNNL_MAX_CPU_ISA="AVX2",
                       ONEDNN_MAX_CPU_ISA="AVX2", DNNL_VERBOSE="1")
            child = subprocess.run(
                [sys.executable, __file__, "--kiln-compile", args.kiln_compile,
                 "--workdir", os.path.join(args.workdir, "avx2"),
                 "--isa", "AVX2"], env=env, capture_output=True, text=True)
            execs = [line for line in child.stdout.splitlines()
                     if line.startswith(("onednn_verbose,exec",
                                         "dnnl_verbose,exec"))]
            for line in child.stdout.splitlines():
                if "_verbose," not in line:
                    print(line)
            print(child.stderr, end="")
            wide = [line for line in execs if "avx512" in line]
            if child.returncode != 0:
                failures += 1
            elif not execs or wide:
                print(f"FAIL capped at AVX2: {len(execs)} oneDNN kernels ran, "
                      f"{len(wide)} of them AVX-512")
                failures += 1
            else:
                print(f"PASS capped at AVX2: {len(execs)} oneDNN kernel runs, "
                      "none AVX-512")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
