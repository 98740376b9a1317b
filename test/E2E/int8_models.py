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
# 2. The demo MLP and transformer block (models/generate_demo_models.py)
#    quantized with onnxruntime.quantization.quantize_static (QDQ format,
#    per-channel int8 weights, int8 activations; the transformer's MatMuls
#    only): Kiln's output with the pass must be within one quantization
#    step of the output's quantizer of ONNX Runtime's (MLP: the softmax's
#    Q/DQ), resp. close to Kiln without the pass (float QDQ arithmetic),
#    and the graph must contain the expected number of
#    kiln.quantized_matmul ops. (Transformer: one step of its coarsest
#    activation quantizer, as its output is a float sum.)
#
#   int8_models.py --kiln-compile BIN --kiln-run BIN --workdir DIR
#
#===----------------------------------------------------------------------===#

import argparse
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

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
    graph = helper.make_graph(
        nodes, "layer",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k])],
        [helper.make_tensor_value_info("y", out_t, [m, n])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8

    x = rng.uniform(-3, 3, size=(m, k)).astype(np.float32)
    # The reference: Q(x) as ONNX (x / scale, round half to even), then
    # the integer matmul and the f32 epilogue.
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
    return model, x, ref, acc


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


def run(cmd, env=None):
    return subprocess.run(cmd, capture_output=True, text=True, env=env)


def compile_model(args, path, artifact, extra=()):
    proc = run([args.kiln_compile, path, "-o", artifact, *extra])
    if proc.returncode != 0:
        raise RuntimeError(f"kiln-compile {path}: {proc.stderr.strip()[:400]}")


def graph_count(args, path, op):
    proc = run([args.kiln_compile, path, "--emit=graph", "-o", "-"])
    return proc.stdout.count(f"= kiln.{op} ")


def run_model(args, artifact, inputs, out_dir, portable=False):
    os.makedirs(out_dir, exist_ok=True)
    cmd = [args.kiln_run, artifact, "--threads", "2", "--save-outputs",
           out_dir]
    for name, value in inputs.items():
        path = os.path.join(out_dir, f"in_{name.replace('/', '_')}.npy")
        np.save(path, value)
        cmd += ["--input", f"{name}={path}"]
    env = dict(os.environ)
    if portable:
        env["KILN_QGEMM_PORTABLE"] = "1"
    proc = run(cmd, env)
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"kiln-run {artifact}: {proc.stderr.strip()[:400]}")
    return np.load(os.path.join(out_dir, "output_0.npy"))


def check_layers(args, rng):
    failures = 0
    for case in LAYER_CASES:
        name = case["name"]
        model, x, ref, _ = layer_model(case, rng)
        path = os.path.join(args.workdir, f"{name}.onnx")
        onnx.save(model, path)
        artifact = os.path.join(args.workdir, f"{name}.kiln")
        compile_model(args, path, artifact)
        fused = graph_count(args, path, "quantized_matmul")
        if fused != 1:
            print(f"FAIL layer {name}: {fused} kiln.quantized_matmul ops, "
                  "expected 1")
            failures += 1
            continue
        for portable in (False, True):
            got = run_model(args, artifact, {"x": x},
                            artifact + (".portable" if portable else ".out"),
                            portable)
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
                    "--out", args.workdir, "--only", "mlp,transformer_block",
                    "--static-shapes"], check=True, stdout=subprocess.DEVNULL)
    # name: (expected quantized matmuls, how close to ONNX Runtime)
    expectations = {"mlp": 3, "transformer_block": 7}
    for name, want_fused in expectations.items():
        fp32 = os.path.join(args.workdir, f"{name}.onnx")
        qdq = os.path.join(args.workdir, f"{name}_qdq.onnx")
        quantize_demo.quantize(fp32, qdq, name)
        model = onnx.load(qdq)
        x = quantize_demo.inputs_for(onnx.load(fp32), seed=1)
        fused = graph_count(args, qdq, "quantized_matmul")
        if fused != want_fused:
            print(f"FAIL model {name}: {fused} kiln.quantized_matmul ops, "
                  f"expected {want_fused}")
            failures += 1
        on = os.path.join(args.workdir, f"{name}_qdq.kiln")
        off = os.path.join(args.workdir, f"{name}_qdq_nofuse.kiln")
        compile_model(args, qdq, on)
        compile_model(args, qdq, off, ["--disable-pass=kiln-fuse-qdq"])
        got = run_model(args, on, x, on + ".out").astype(np.float64)
        float_qdq = run_model(args, off, x, off + ".out").astype(np.float64)
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
              f"matmuls; max abs error vs onnxruntime {err_ort:.3g}, vs "
              f"Kiln without the pass {err_float:.3g} (bound {bound:.3g}, "
              f"one step {step:.3g})")
        failures += 0 if ok else 1
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kiln-compile", required=True)
    parser.add_argument("--kiln-run", required=True)
    parser.add_argument("--workdir", required=True)
    args = parser.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    rng = np.random.default_rng(7)
    failures = check_layers(args, rng) + check_models(args)
    print(f"int8 e2e: {failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
