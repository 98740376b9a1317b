#!/usr/bin/env python3
#===- test/E2E/int8_models.py - QDQ models through kiln-fuse-qdq vs numpy --===#
#
# Integer matmuls made by kiln-fuse-qdq, compiled for the CPU (the VNNI
# kernel where the CPU has it) and checked in two ways:
#
# 1. Layers built here (QuantizeLinear -> DequantizeLinear -> MatMul/Gemm
#    with a DQ'd int8 weight, per-tensor or per-column, symmetric or not,
#    with or without an i32 bias and Relu, then QuantizeLinear or a float
#    result), against a numpy reference of the same quantized computation:
#      acc = sum (a - za)(w - zw) + bias        int64 in numpy, i32 in Kiln
#      v   = f32(acc) * f32(a_scale * w_scale)  [relu]
#      y   = saturate(roundeven(v / y_scale) + y_zp)    or v itself
#    int8 outputs must be bit-exact, and so must the float ones (one f32
#    rounding each). With a_scale = w_scale = 1 the float output is the
#    int32 accumulator itself, which must be exact too. Every case is also
#    run with KILN_QGEMM_PORTABLE=1 (the kernel's fallback).
#
#    Conv layers likewise (kiln.quantized_conv: 1x1 to 5x5, stride 1/2,
#    padding (with the activation's zero point), dilation, per-channel and
#    per-tensor weights, int8/uint8 activations, i32 or f32 bias, Relu,
#    int8 or f32 results); their artifacts must hold the weight as int8.
#    A depthwise QDQ conv must stay float (no kiln.quantized_conv) and
#    within one step of the integer reference.
#
# 2. The demo MLP, transformer block and small CNN (models/generate_demo_models.py)
#    quantized with onnxruntime.quantization.quantize_static (QDQ format,
#    per-channel int8 weights, int8 activations; the transformer's MatMuls
#    only; the CNN after quant_pre_process folds its BatchNorms, 6 Convs
#    and the classifier, weights int8 in the artifact, also run with
#    KILN_QGEMM_PORTABLE=1): Kiln's output with the pass must be within one quantization
#    step of the output's quantizer of ONNX Runtime's (MLP: the softmax's
#    Q/DQ), resp. close to Kiln without the pass (float QDQ arithmetic),
#    and the graph must contain the expected number of
#    kiln.quantized_matmul ops. (Transformer: one step of its coarsest
#    activation quantizer, as its output is a float sum.)
#
# 3. Dynamic shapes: layers of (1) whose input has symbolic leading dims
#    (an int8 decoder's batch and sequence), one artifact run at several
#    shapes, a single row too, bit-exact vs numpy (the first shape with the
#    portable kernel too); and ONNX's integer ops on [batch, seq, K]
#    (DynamicQuantizeLinear + MatMulInteger, QLinearMatMul), bit-exact vs
#    ONNX Runtime.
#
# Compiled and run in-process through the kiln package
# (PYTHONPATH=<build>/python), 2 threads; the KILN_QGEMM_PORTABLE=1 runs in
# a separate process, as the runtime reads it once per process.
#
#   int8_models.py --workdir DIR
#
#===----------------------------------------------------------------------===#

import argparse
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import kiln
from kiln_e2e import run_artifact

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import quantize_demo  # noqa: E402


def layer_model(case, rng):
    """A QDQ layer and the numpy reference of its integer computation."""
    m, k, n = case["m"], case["k"], case["n"]
    act_t = case.get("act", np.int8)
    onnx_act = TensorProto.INT8 if act_t == np.int8 else TensorProto.UINT8
    lo, hi = (-128, 127) if act_t == np.int8 else (0, 255)
    a_scale = np.float32(case.get("a_scale", 0.02))
    a_zp = act_t(case.get("a_zp", 3 if act_t == np.int8 else 130))
    w = rng.integers(-127, 128, size=(k, n)).astype(np.int8)
    per_col = case.get("per_col", True)
    w_scale = (rng.uniform(0.001, 0.01, size=n).astype(np.float32)
               if per_col else np.float32(case.get("w_scale", 0.005)))
    if case.get("unit_scales"):
        w_scale = np.ones(n, np.float32) if per_col else np.float32(1)
    w_zp = (np.zeros(n, np.int8) if per_col else np.int8(0))
    if case.get("w_asym"):
        w_zp = (rng.integers(-5, 6, size=n).astype(np.int8) if per_col
                else np.int8(4))
    transb = case.get("gemm", False) and case.get("transB", True)
    w_stored = w.T.copy() if transb else w
    combined = (a_scale * w_scale).astype(np.float32)
    bias = (rng.integers(-3000, 3000, size=n).astype(np.int32)
            if case.get("bias") else None)
    y_scale = np.float32(case.get("y_scale", 0.05))
    y_zp = np.int8(case.get("y_zp", -5))

    inits = [
        numpy_helper.from_array(np.array(a_scale), "a_scale"),
        numpy_helper.from_array(np.array(a_zp), "a_zp"),
        numpy_helper.from_array(w_stored, "w_q"),
        numpy_helper.from_array(np.asarray(w_scale), "w_scale"),
        numpy_helper.from_array(np.asarray(w_zp), "w_zp"),
        numpy_helper.from_array(np.array(y_scale), "y_scale"),
        numpy_helper.from_array(np.array(y_zp), "y_zp"),
    ]
    axis = (0 if transb else 1)
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "a_scale", "a_zp"], ["xq"]),
        helper.make_node("DequantizeLinear", ["xq", "a_scale", "a_zp"],
                         ["xd"]),
        helper.make_node("DequantizeLinear", ["w_q", "w_scale", "w_zp"],
                         ["wd"], axis=axis),
    ]
    if bias is not None:
        inits += [numpy_helper.from_array(bias, "b_q"),
                  numpy_helper.from_array(np.asarray(combined), "b_scale")]
        nodes.append(helper.make_node("DequantizeLinear", ["b_q", "b_scale"],
                                      ["bd"], axis=0))
    if case.get("gemm"):
        ins = ["xd", "wd"] + (["bd"] if bias is not None else [])
        nodes.append(helper.make_node("Gemm", ins, ["mm"],
                                      transB=1 if transb else 0))
        last = "mm"
    else:
        nodes.append(helper.make_node("MatMul", ["xd", "wd"], ["mm"]))
        last = "mm"
        if bias is not None:
            nodes.append(helper.make_node("Add", ["mm", "bd"], ["mmb"]))
            last = "mmb"
    if case.get("relu"):
        nodes.append(helper.make_node("Relu", [last], ["r"]))
        last = "r"
    quantized = case.get("quantized_output", True)
    if quantized:
        nodes.append(helper.make_node("QuantizeLinear",
                                      [last, "y_scale", "y_zp"], ["y"]))
        out_t = TensorProto.INT8
    else:
        nodes.append(helper.make_node("Identity", [last], ["y"]))
        out_t = TensorProto.FLOAT
    # Leading dims: [m], or the case's symbolic ones (dynamic shapes).
    lead = case.get("dims", [m])
    graph = helper.make_graph(
        nodes, "layer",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, lead + [k])],
        [helper.make_tensor_value_info("y", out_t, lead + [n])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8

    def reference(x):
        # Q(x) as ONNX (x / scale, round half to even), then the integer
        # matmul and the f32 epilogue.
        xq = np.clip(np.rint(x / a_scale) + np.float32(a_zp), lo, hi)
        acc = (xq.astype(np.int64) - int(a_zp)) @ (
            w.astype(np.int64) - np.asarray(w_zp, np.int64))
        if bias is not None:
            acc = acc + bias
        v = acc.astype(np.float32) * combined
        if case.get("relu"):
            v = np.maximum(v, np.float32(0))
        if quantized:
            ref = np.clip(np.rint(v / y_scale) + np.float32(y_zp), -128,
                          127).astype(np.int8)
        else:
            ref = v.astype(np.float32)
        return ref, acc

    x = rng.uniform(-3, 3, size=(m, k)).astype(np.float32)
    ref, acc = reference(x)
    return model, x, ref, acc, reference


LAYER_CASES = [
    dict(name="matmul_q_per_col", m=8, k=300, n=70),
    dict(name="matmul_q_batch1", m=1, k=784, n=512),
    dict(name="matmul_q_per_tensor_asym_w", m=5, k=64, n=33, per_col=False,
         w_asym=True),
    dict(name="matmul_q_per_col_asym_w", m=3, k=130, n=17, w_asym=True),
    dict(name="matmul_bias_relu_q", m=8, k=256, n=64, bias=True, relu=True),
    dict(name="gemm_transb_bias_q", m=4, k=200, n=96, gemm=True, bias=True),
    dict(name="gemm_bias_relu_q_u8", m=6, k=100, n=40, gemm=True, bias=True,
         relu=True, act=np.uint8),
    dict(name="matmul_float_out", m=7, k=256, n=64, quantized_output=False),
    dict(name="matmul_bias_float_out", m=2, k=96, n=130, bias=True,
         quantized_output=False),
    dict(name="int32_accumulator", m=4, k=500, n=48, a_scale=1.0,
         unit_scales=True, quantized_output=False),
]


# Layers whose leading dims are symbolic, as an int8 decoder's batch and
# sequence: one artifact run at several shapes (a single row too).
DYNAMIC_LAYER_CASES = [
    dict(name="dynamic_matmul_q_per_col", m=0, k=96, n=40,
         dims=["batch", "seq"], shapes=[(2, 5), (1, 1), (3, 17)]),
    dict(name="dynamic_matmul_bias_relu_float_out_u8", m=0, k=64, n=130,
         dims=["rows"], shapes=[(7,), (1,), (33,)], bias=True, relu=True,
         act=np.uint8, quantized_output=False),
    dict(name="dynamic_matmul_per_tensor_asym_w", m=0, k=130, n=17,
         dims=["batch", "seq"], shapes=[(1, 9), (4, 2)], per_col=False,
         w_asym=True),
]


def check_dynamic_layers(args, rng):
    failures = 0
    for case in DYNAMIC_LAYER_CASES:
        name = case["name"]
        model, _, _, _, reference = layer_model(case, rng)
        path = os.path.join(args.workdir, f"{name}.onnx")
        onnx.save(model, path)
        artifact = kiln.compile(path)
        fused = graph_count(path, "quantized_matmul")
        if fused != 1:
            print(f"FAIL dynamic layer {name}: {fused} kiln.quantized_matmul "
                  "ops, expected 1")
            failures += 1
            continue
        for i, lead in enumerate(case["shapes"]):
            x = rng.uniform(-3, 3, size=lead + (case["k"],)).astype(
                np.float32)
            ref, _ = reference(x)
            # The fallback kernel on the first shape.
            for portable in (False, True) if i == 0 else (False,):
                got = run_model(artifact, {"x": x}, portable)
                tag = (f"dynamic layer {name} at {lead}"
                       f"{' (portable kernel)' if portable else ''}")
                if got.dtype != ref.dtype or got.shape != ref.shape:
                    print(f"FAIL {tag}: {got.dtype}{got.shape}, numpy "
                          f"{ref.dtype}{ref.shape}")
                    failures += 1
                elif not np.array_equal(got, ref):
                    diff = np.abs(got.astype(np.float64) -
                                  ref.astype(np.float64))
                    print(f"FAIL {tag}: not bit-exact vs numpy: "
                          f"{int((diff > 0).sum())} of {diff.size} differ, "
                          f"max {diff.max():.3g}")
                    failures += 1
                else:
                    print(f"PASS {tag}: bit-exact vs numpy ({ref.dtype})")
    return failures


def integer_op_models(rng):
    """ONNX's own integer matmuls on [batch, seq, 16] inputs: ONNX
    Runtime's dynamic quantization (DynamicQuantizeLinear, MatMulInteger
    with a per-column weight zero point, the f32 rescale) and QLinearMatMul
    (per-column b_scale) between QuantizeLinear and DequantizeLinear."""
    w = rng.integers(-100, 100, (16, 8)).astype(np.int8)
    dims = ["batch", "seq"]
    x_info = helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                           dims + [16])
    y_info = helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                           dims + [8])
    models = {}
    nodes = [
        helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
        helper.make_node("MatMulInteger", ["xq", "w", "xz", "wz"], ["acc"]),
        helper.make_node("Cast", ["acc"], ["accf"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["xs", "ws"], ["s"]),
        helper.make_node("Mul", ["accf", "s"], ["y"])]
    inits = [numpy_helper.from_array(w, "w"),
             numpy_helper.from_array(
                 np.array([3, -2, 0, 1, 5, -7, 2, 4], np.int8), "wz"),
             numpy_helper.from_array(np.array(0.02, np.float32), "ws")]
    models["dynamic_matmul_integer"] = helper.make_graph(
        nodes, "mmi", [x_info], [y_info], inits)
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "as", "az"], ["xq"]),
        helper.make_node("QLinearMatMul",
                         ["xq", "as", "az", "w", "bs", "bz", "ys", "yz"],
                         ["yq"]),
        helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"])]
    inits = [numpy_helper.from_array(w, "w"),
             numpy_helper.from_array(np.array(0.03, np.float32), "as"),
             numpy_helper.from_array(np.array(128, np.uint8), "az"),
             numpy_helper.from_array(
                 (np.arange(8) * 0.001 + 0.005).astype(np.float32), "bs"),
             numpy_helper.from_array(np.zeros(8, np.int8), "bz"),
             numpy_helper.from_array(np.array(0.05, np.float32), "ys"),
             numpy_helper.from_array(np.array(120, np.uint8), "yz")]
    models["dynamic_qlinear_matmul"] = helper.make_graph(
        nodes, "qlmm", [x_info], [y_info], inits)
    result = {}
    for name, graph in models.items():
        model = helper.make_model(
            graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        result[name] = model
    return result


def check_dynamic_integer_ops(args, rng):
    import onnxruntime as ort
    failures = 0
    for name, model in integer_op_models(rng).items():
        path = os.path.join(args.workdir, f"{name}.onnx")
        onnx.save(model, path)
        artifact = kiln.compile(path)
        session = ort.InferenceSession(model.SerializeToString(),
                                       providers=["CPUExecutionProvider"])
        for lead in [(2, 3), (1, 1), (3, 11)]:
            x = (rng.standard_normal(lead + (16,)) * 2).astype(np.float32)
            want = session.run(None, {"x": x})[0]
            got = run_model(artifact, {"x": x})
            tag = f"dynamic integer ops {name} at {lead}"
            if got.shape != want.shape or not np.array_equal(got, want):
                err = (float(np.abs(got - want).max())
                       if got.shape == want.shape else float("nan"))
                print(f"FAIL {tag}: {got.shape} vs onnxruntime "
                      f"{want.shape}, max abs error {err:.3g}")
                failures += 1
            else:
                print(f"PASS {tag}: bit-exact vs onnxruntime")
    return failures


def conv_model(case, rng):
    """A QDQ Conv layer and the numpy reference of its integer computation
    (as layer_model): the activation padded with its zero point, then
    acc = sum (x - zx)(w - zw[m]) + bias[m], v = f32(acc) * f32(x_scale *
    w_scale[m]) (+ a float bias in f32), Relu, requantized or not."""
    n, c, h, wd = case["shape"]
    m, kh, kw = case["m"], case["k"], case["k"]
    stride, pad, dil = case.get("stride", 1), case.get("pad", 0), case.get(
        "dilation", 1)
    act_t = case.get("act", np.int8)
    onnx_act = TensorProto.INT8 if act_t == np.int8 else TensorProto.UINT8
    lo, hi = (-128, 127) if act_t == np.int8 else (0, 255)
    a_scale = np.float32(case.get("a_scale", 0.02))
    a_zp = act_t(case.get("a_zp", 3 if act_t == np.int8 else 130))
    group = case.get("group", 1)
    w = rng.integers(-127, 128, size=(m, c // group, kh, kw)).astype(np.int8)
    per_ch = case.get("per_channel", True)
    w_scale = (rng.uniform(0.001, 0.01, size=m).astype(np.float32)
               if per_ch else np.float32(0.005))
    if case.get("unit_scales"):
        w_scale = np.ones(m, np.float32) if per_ch else np.float32(1)
    w_zp = np.zeros(m, np.int8) if per_ch else np.int8(0)
    if case.get("w_asym"):
        w_zp = (rng.integers(-5, 6, size=m).astype(np.int8) if per_ch
                else np.int8(4))
    combined = (a_scale * w_scale).astype(np.float32)
    bias_kind = case.get("bias")  # None, "i32" or "f32"
    y_scale = np.float32(case.get("y_scale", 0.05))
    y_zp = np.int8(case.get("y_zp", -5))
    inits = [
        numpy_helper.from_array(np.array(a_scale), "a_scale"),
        numpy_helper.from_array(np.array(a_zp), "a_zp"),
        numpy_helper.from_array(w, "w_q"),
        numpy_helper.from_array(np.asarray(w_scale), "w_scale"),
        numpy_helper.from_array(np.asarray(w_zp), "w_zp"),
        numpy_helper.from_array(np.array(y_scale), "y_scale"),
        numpy_helper.from_array(np.array(y_zp), "y_zp"),
    ]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "a_scale", "a_zp"], ["xq"]),
        helper.make_node("DequantizeLinear", ["xq", "a_scale", "a_zp"],
                         ["xd"]),
        helper.make_node("DequantizeLinear", ["w_q", "w_scale", "w_zp"],
                         ["wd"], axis=0),
    ]
    conv_in = ["xd", "wd"]
    bias = fbias = None
    if bias_kind == "i32":
        bias = rng.integers(-3000, 3000, size=m).astype(np.int32)
        inits += [numpy_helper.from_array(bias, "b_q"),
                  numpy_helper.from_array(
                      np.broadcast_to(combined, (m,)).copy(), "b_scale")]
        nodes.append(helper.make_node("DequantizeLinear", ["b_q", "b_scale"],
                                      ["bd"], axis=0))
        conv_in.append("bd")
    elif bias_kind == "f32":
        fbias = rng.uniform(-0.5, 0.5, size=m).astype(np.float32)
        inits.append(numpy_helper.from_array(fbias, "bd"))
        conv_in.append("bd")
    nodes.append(helper.make_node(
        "Conv", conv_in, ["conv"], kernel_shape=[kh, kw],
        strides=[stride, stride], pads=[pad] * 4, dilations=[dil, dil],
        group=group))
    last = "conv"
    if case.get("relu"):
        nodes.append(helper.make_node("Relu", [last], ["r"]))
        last = "r"
    quantized = case.get("quantized_output", True)
    oh = (h + 2 * pad - (kh - 1) * dil - 1) // stride + 1
    ow = (wd + 2 * pad - (kw - 1) * dil - 1) // stride + 1
    if quantized:
        nodes.append(helper.make_node("QuantizeLinear",
                                      [last, "y_scale", "y_zp"], ["y"]))
        out_t = TensorProto.INT8
    else:
        nodes.append(helper.make_node("Identity", [last], ["y"]))
        out_t = TensorProto.FLOAT
    graph = helper.make_graph(
        nodes, "conv_layer",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, c, h, wd])],
        [helper.make_tensor_value_info("y", out_t, [n, m, oh, ow])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8

    x = rng.uniform(-3, 3, size=(n, c, h, wd)).astype(np.float32)
    xq = np.clip(np.rint(x / a_scale) + np.float32(a_zp), lo, hi).astype(
        np.int64)
    xp = np.pad(xq, ((0, 0), (0, 0), (pad, pad), (pad, pad)),
                constant_values=int(a_zp)) - int(a_zp)
    wz = (w.astype(np.int64) -
          np.asarray(w_zp, np.int64).reshape(-1, 1, 1, 1))
    acc = np.zeros((n, m, oh, ow), np.int64)
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i * dil:i * dil + (oh - 1) * stride + 1:stride,
                       j * dil:j * dil + (ow - 1) * stride + 1:stride]
            cg, mg = c // group, m // group
            for g in range(group):
                acc[:, g * mg:(g + 1) * mg] += np.einsum(
                    "nchw,mc->nmhw", patch[:, g * cg:(g + 1) * cg],
                    wz[g * mg:(g + 1) * mg, :, i, j])
    if bias is not None:
        acc = acc + bias.reshape(1, -1, 1, 1)
    v = acc.astype(np.float32) * np.broadcast_to(
        combined, (m,)).reshape(1, -1, 1, 1)
    if fbias is not None:
        v = (v + fbias.reshape(1, -1, 1, 1)).astype(np.float32)
    if case.get("relu"):
        v = np.maximum(v, np.float32(0))
    if quantized:
        ref = np.clip(np.rint(v / y_scale) + np.float32(y_zp), -128,
                      127).astype(np.int8)
    else:
        ref = v.astype(np.float32)
    return model, x, ref, acc


CONV_CASES = [
    dict(name="conv3x3_pad1_per_ch_bias_relu_q", shape=(1, 8, 10, 10), m=16,
         k=3, pad=1, bias="i32", relu=True),
    dict(name="conv3x3_stride2_pad1_per_tensor_u8_q", shape=(2, 5, 9, 11),
         m=12, k=3, stride=2, pad=1, per_channel=False, act=np.uint8),
    dict(name="conv3x3_stride2_u8_bias_relu_q", shape=(1, 16, 16, 16), m=32,
         k=3, stride=2, pad=1, bias="i32", relu=True, act=np.uint8),
    dict(name="conv1x1_bias_float_out", shape=(1, 32, 7, 7), m=24, k=1,
         bias="i32", quantized_output=False),
    dict(name="conv3x3_asym_w_float_out", shape=(1, 4, 8, 8), m=8, k=3,
         pad=1, w_asym=True, quantized_output=False),
    dict(name="conv3x3_per_tensor_asym_w_u8_q", shape=(1, 3, 12, 12), m=10,
         k=3, pad=2, dilation=2, per_channel=False, w_asym=True,
         act=np.uint8),
    dict(name="conv5x5_float_bias_relu_q", shape=(1, 6, 12, 12), m=9, k=5,
         pad=2, bias="f32", relu=True),
    dict(name="conv_depthwise_left_float", shape=(1, 8, 9, 9), m=8, k=3,
         pad=1, group=8, bias="i32", relu=True),
    dict(name="conv_int32_accumulator_padded", shape=(1, 7, 6, 6), m=5, k=3,
         pad=1, a_scale=1.0, a_zp=-7, unit_scales=True,
         quantized_output=False),
]


def check_conv_layers(args, rng):
    failures = 0
    for case in CONV_CASES:
        name = case["name"]
        model, x, ref, _ = conv_model(case, rng)
        path = os.path.join(args.workdir, f"{name}.onnx")
        onnx.save(model, path)
        artifact = kiln.compile(path)
        fused = graph_count(path, "quantized_conv")
        dtypes = weight_dtypes(artifact)
        if case.get("group", 1) != 1:
            # Left in float: the float QDQ arithmetic, within one step of
            # the integer reference.
            got = run_model(artifact, {"x": x})
            diff = np.abs(got.astype(np.int64) - ref.astype(np.int64)).max()
            ok = fused == 0 and got.dtype == ref.dtype and diff <= 1
            print(f"{'PASS' if ok else 'FAIL'} conv {name}: {fused} "
                  f"kiln.quantized_conv ops (expected 0: left in float), "
                  f"max {diff} step(s) from the integer reference")
            failures += 0 if ok else 1
            continue
        if fused != 1 or dtypes != ["int8"]:
            print(f"FAIL conv {name}: {fused} kiln.quantized_conv ops "
                  f"(expected 1), artifact weights {dtypes} (expected "
                  "['int8'])")
            failures += 1
            continue
        for portable in (False, True):
            got = run_model(artifact, {"x": x}, portable)
            tag = f"conv {name}{' (portable kernel)' if portable else ''}"
            if got.dtype != ref.dtype or got.shape != ref.shape:
                print(f"FAIL {tag}: {got.dtype}{got.shape}, numpy "
                      f"{ref.dtype}{ref.shape}")
                failures += 1
            elif not np.array_equal(got, ref):
                diff = np.abs(got.astype(np.float64) - ref.astype(np.float64))
                print(f"FAIL {tag}: not bit-exact vs numpy: "
                      f"{int((diff > 0).sum())} of {diff.size} differ, "
                      f"max {diff.max():.3g}")
                failures += 1
            else:
                print(f"PASS {tag}: bit-exact vs numpy ({ref.dtype})")
    return failures


def weight_dtypes(artifact):
    """The dtypes of the artifact's weights, from its header."""
    return [w["dtype"] for w in artifact.info.get("weights", [])]


def graph_count(path, op):
    """How many kiln.<op> ops the model's graph has after the -O2 pipeline
    (kiln-compile --emit=graph)."""
    return kiln.ir(path, "graph").count(f"= kiln.{op} ")


def run_model(artifact, inputs, portable=False):
    """The artifact's first output on `inputs`, 2 threads; `portable`: with
    KILN_QGEMM_PORTABLE=1 (the int8 GEMM's fallback kernel), which the
    runtime reads once per process, so in a process of its own."""
    env = {"KILN_QGEMM_PORTABLE": "1"} if portable else None
    return run_artifact(artifact, inputs, threads=2, env=env)[0]


def check_layers(args, rng):
    failures = 0
    for case in LAYER_CASES:
        name = case["name"]
        model, x, ref, _, _ = layer_model(case, rng)
        path = os.path.join(args.workdir, f"{name}.onnx")
        onnx.save(model, path)
        artifact = kiln.compile(path)
        fused = graph_count(path, "quantized_matmul")
        if fused != 1:
            print(f"FAIL layer {name}: {fused} kiln.quantized_matmul ops, "
                  "expected 1")
            failures += 1
            continue
        for portable in (False, True):
            got = run_model(artifact, {"x": x}, portable)
            tag = f"layer {name}{' (portable kernel)' if portable else ''}"
            if got.dtype != ref.dtype or got.shape != ref.shape:
                print(f"FAIL {tag}: {got.dtype}{got.shape}, numpy "
                      f"{ref.dtype}{ref.shape}")
                failures += 1
            elif not np.array_equal(got, ref):
                diff = np.abs(got.astype(np.float64) - ref.astype(np.float64))
                print(f"FAIL {tag}: not bit-exact vs numpy: "
                      f"{int((diff > 0).sum())} of {diff.size} differ, "
                      f"max {diff.max():.3g}")
                failures += 1
            else:
                print(f"PASS {tag}: bit-exact vs numpy ({ref.dtype})")
    return failures


def check_models(args):
    import onnxruntime as ort
    failures = 0
    subprocess.run([sys.executable,
                    os.path.join(ROOT, "models", "generate_demo_models.py"),
                    "--out", args.workdir, "--only",
                    "mlp,transformer_block,small_cnn",
                    "--static-shapes"], check=True, stdout=subprocess.DEVNULL)
    # name: the integer ops expected in the graph
    expectations = {
        "mlp": {"quantized_matmul": 3},
        "transformer_block": {"quantized_matmul": 7},
        "small_cnn": {"quantized_conv": 6, "quantized_matmul": 1},
    }
    for name, want_ops in expectations.items():
        fp32 = os.path.join(args.workdir, f"{name}.onnx")
        qdq = os.path.join(args.workdir, f"{name}_qdq.onnx")
        quantize_demo.quantize(fp32, qdq, name)
        model = onnx.load(qdq)
        x = quantize_demo.inputs_for(onnx.load(fp32), seed=1)
        got_ops = {op: graph_count(qdq, op) for op in want_ops}
        fused = sum(got_ops.values())
        if got_ops != want_ops:
            print(f"FAIL model {name}: integer ops {got_ops}, expected "
                  f"{want_ops}")
            failures += 1
        on = kiln.compile(qdq)
        off = kiln.compile(qdq, disable_passes=["kiln-fuse-qdq"])
        if name == "small_cnn" and set(weight_dtypes(on)) != {"int8"}:
            print(f"FAIL model {name}: artifact weights "
                  f"{weight_dtypes(on)}, expected int8 only")
            failures += 1
        got = run_model(on, x).astype(np.float64)
        if name == "small_cnn":
            # The fallback kernel must give the same integers.
            portable = run_model(on, x, portable=True).astype(np.float64)
            if not np.array_equal(portable, got):
                print(f"FAIL model {name}: KILN_QGEMM_PORTABLE=1 differs "
                      f"by {np.abs(portable - got).max():.3g}")
                failures += 1
        float_qdq = run_model(off, x).astype(np.float64)
        session = ort.InferenceSession(model.SerializeToString(),
                                       providers=["CPUExecutionProvider"])
        want = session.run(None, x)[0].astype(np.float64)
        step = quantize_demo.output_step(model)
        err_ort = float(np.abs(got - want).max())
        err_float = float(np.abs(got - float_qdq).max())
        # The MLP ends in a quantized softmax: one step of its quantizer.
        # The transformer block's output is a float residual sum of
        # dequantized matmuls: one step of its coarsest quantizer.
        bound = step
        ok = err_ort <= bound + 1e-6 and err_float <= bound + 1e-6
        print(f"{'PASS' if ok else 'FAIL'} model {name}: {fused} integer "
              f"ops; max abs error vs onnxruntime {err_ort:.3g}, vs "
              f"Kiln without the pass {err_float:.3g} (bound {bound:.3g}, "
              f"one step {step:.3g})")
        failures += 0 if ok else 1
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workdir", required=True)
    args = parser.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    rng = np.random.default_rng(7)
    failures = (check_layers(args, rng) + check_conv_layers(args, rng) +
                check_models(args) + check_dynamic_layers(args, rng) +
                check_dynamic_integer_ops(args, rng))
    print(f"int8 e2e: {failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
