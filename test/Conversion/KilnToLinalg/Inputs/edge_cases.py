#!/usr/bin/env python3
#===- edge_cases.py - One-node ONNX models on the edges of ONNX semantics -===#
#
# Writes OUT/<case>/model.onnx and OUT/<case>/test_data_set_0/{input,output}_N.pb
# for elementwise, reduction and quantization ops on inputs the ONNX backend
# tests leave out: mixed-sign integer Mod/Div, rounding ties, NaN and -0,
# infinities, argmax ties, saturation, shifts by the full width. The expected
# outputs are ONNX Runtime's (the reference Kiln matches). Prints the case
# names, one a line.
#
#   edge_cases.py OUT
#
#===----------------------------------------------------------------------===#

import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper

NAN, INF = float("nan"), float("inf")


def f32(*v):
    return np.array(v, dtype=np.float32)


def i32(*v):
    return np.array(v, dtype=np.int32)


def u8(*v):
    return np.array(v, dtype=np.uint8)


class Const:
    """An input that is an initializer of the model (e.g. constant axes)."""

    def __init__(self, value):
        self.value = np.asarray(value)


def axes(*v):
    return Const(np.array(v, dtype=np.int64))


# Random operands of the integer matmuls and convolutions (fixed seed).
rng = np.random.default_rng(0)


# name: (op, attributes, inputs, number of outputs, opset)
CASES = {
    "mod_int_python": ("Mod", {}, [i32(-7, 7, -7, 7, 0, 5), i32(3, -3, -3, 3, 2, -5)]),
    "mod_int_fmod": ("Mod", {"fmod": 1}, [i32(-7, 7, -7, 7, 0, 5), i32(3, -3, -3, 3, 2, -5)]),
    "mod_float_fmod": ("Mod", {"fmod": 1}, [f32(-7.5, 7.5, -7.5, 7.5), f32(2, -2, -2, 2)]),
    "div_int_trunc": ("Div", {}, [i32(-7, 7, -7, 7, -1), i32(2, -2, -2, 2, 3)]),
    "div_uint8": ("Div", {}, [u8(255, 7, 200), u8(2, 3, 255)]),
    "round_ties": ("Round", {}, [f32(0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4999, 1e8, -0.0)]),
    "pow_int": ("Pow", {}, [i32(2, 3, -2, 5, 7), i32(10, 3, 3, 0, 2)]),
    "pow_float_int_exp": ("Pow", {}, [f32(2, -3, 0.5, 10), np.array([3, 3, -2, 1], np.int64)]),
    "pow_const_square_f16": ("Pow", {}, [np.array([3, -0.5, 200, 300], np.float16), Const(np.array(2, np.float16))]),
    "pow_const_cube_int": ("Pow", {}, [i32(-3, 5, 1000), Const(np.array([3], np.int64))]),
    "pow_const_half": ("Pow", {}, [f32(4, 2, 0), Const(np.array(0.5, np.float32))]),
    "relu_zero_nan": ("Relu", {}, [f32(-0.0, 0.0, -1, 1, NAN)]),
    "max_nan": ("Max", {}, [f32(NAN, 1, 2, -0.0), f32(1, NAN, 3, 0.0)]),
    "min_nan": ("Min", {}, [f32(NAN, 1, 2, -0.0), f32(1, NAN, 3, 0.0)]),
    "max_uint8": ("Max", {}, [u8(200, 1), u8(100, 250), u8(3, 3)]),
    "argmax_ties_first": ("ArgMax", {"axis": 1}, [f32(1, 3, 3, 2, 2, 2).reshape(2, 3)]),
    "argmax_ties_last": ("ArgMax", {"axis": 1, "select_last_index": 1}, [f32(1, 3, 3, 2, 2, 2).reshape(2, 3)]),
    "argmin_ties_last_int": ("ArgMin", {"axis": 0, "keepdims": 0, "select_last_index": 1}, [i32(1, 5, 1, 5, 0, 0).reshape(3, 2)]),
    "argmax_neg_inf": ("ArgMax", {"axis": 1}, [f32(-INF, -INF, -INF, 0).reshape(2, 2)]),
    "reduce_log_sum_exp_large": ("ReduceLogSumExp", {"keepdims": 0}, [f32(1000, 1000, 999, -INF, -INF, -INF, 1, 2, 3).reshape(3, 3), axes(1)]),
    "reduce_mean_int": ("ReduceMean", {"keepdims": 1}, [i32(1, 2, 2, -7, 0, 0).reshape(2, 3), axes(1)]),
    "reduce_max_uint8": ("ReduceMax", {"keepdims": 0}, [u8(1, 200, 3, 4).reshape(2, 2), axes(0)]),
    "reduce_prod_f16": ("ReduceProd", {"keepdims": 0}, [np.array([1.5, 2, 3, 0.5, 4, 8], np.float16).reshape(2, 3), axes(-1)]),
    "quantize_ties_uint8": ("QuantizeLinear", {}, [f32(0.5, 1.5, 2.5, -0.5, 300, -300, 127.5), f32(1.0), u8(0)]),
    "quantize_ties_int8": ("QuantizeLinear", {}, [f32(0.25, 0.75, 1.25, -0.25, -0.75, 100, -100), np.array(0.5, np.float32), np.array(3, np.int8)]),
    "dequantize_int32": ("DequantizeLinear", {}, [i32(-1000, 0, 1000), f32(0.25), i32(0)]),
    "dynamic_quantize_zeros": ("DynamicQuantizeLinear", {}, [np.zeros((2, 3), np.float32)], 3),
    "dynamic_quantize_negative": ("DynamicQuantizeLinear", {}, [f32(-1, -2.5, -0.3, -4)], 3),
    "bitshift_uint8_left": ("BitShift", {"direction": "LEFT"}, [u8(1, 255, 3, 1), u8(7, 1, 0, 8)]),
    "bitshift_uint8_right": ("BitShift", {"direction": "RIGHT"}, [u8(128, 255, 3, 255), u8(7, 1, 0, 8)]),
    "sign_float": ("Sign", {}, [f32(-2, 0, -0.0, 3, NAN)]),
    "sign_int": ("Sign", {}, [i32(-2, 0, 3)]),
    "isinf_positive": ("IsInf", {"detect_negative": 0}, [f32(INF, -INF, 0, NAN)]),
    "clip_int8_crossed": ("Clip", {}, [np.array([-100, 0, 100], np.int8), np.array(10, np.int8), np.array(5, np.int8)]),
    "clip_nan": ("Clip", {}, [f32(NAN, -5, 5), f32(-1), f32(1)]),
    "cast_float_to_int": ("Cast", {"to": onnx.TensorProto.INT32}, [f32(-2.7, 2.7, -0.5, 1e6)]),
    "cast_float_to_uint8": ("Cast", {"to": onnx.TensorProto.UINT8}, [f32(3.9, 0.2, 255)]),
    "cast_float_to_bool": ("Cast", {"to": onnx.TensorProto.BOOL}, [f32(0.0, -0.0, NAN, 0.1)]),
    "cast_uint8_to_float": ("Cast", {"to": onnx.TensorProto.FLOAT}, [u8(255, 0, 128)]),
    "shrink_int": ("Shrink", {"lambd": 1.5, "bias": 1.0}, [i32(-3, -1, 0, 1, 2, 5)]),
    "softplus_large": ("Softplus", {}, [f32(100, -100, 0, 20)]),
    "gelu_tanh": ("Gelu", {"approximate": "tanh"}, [f32(-3, -0.5, 0, 0.5, 3)], 1, 20),
    "hardswish": ("HardSwish", {}, [f32(-4, -3, -1, 0, 1, 3, 4)]),
    "mean_f16": ("Mean", {}, [np.array([1, 2, 65000], np.float16), np.array([2, 2, 65000], np.float16), np.array([0.001, 0, 1], np.float16)]),
    "where_uint8": ("Where", {}, [np.array([True, False, True]), u8(1, 2, 3), u8(9)]),
    "argmax_nan": ("ArgMax", {"axis": 1}, [f32(1, NAN, 3, NAN, 2, 5).reshape(2, 3)]),
    "reduce_max_nan": ("ReduceMax", {"keepdims": 0}, [f32(1, NAN, 3, 4, 2, 5).reshape(2, 3), axes(1)]),
    "reduce_min_nan": ("ReduceMin", {"keepdims": 0}, [f32(1, NAN, 3, 4, 2, 5).reshape(2, 3), axes(1)]),
    "reduce_l2_f16": ("ReduceL2", {"keepdims": 0}, [np.array([300, 400, 1, 2], np.float16).reshape(2, 2), axes(1)]),
    "reduce_l2_int": ("ReduceL2", {"keepdims": 0}, [i32(3, 4, 5, 6, 1, 1).reshape(2, 3), axes(1)]),
    "reduce_log_sum_int": ("ReduceLogSum", {"keepdims": 0}, [i32(3, 4, 5, 60, 1, 1).reshape(2, 3), axes(1)]),
    "reduce_log_sum_exp_int": ("ReduceLogSumExp", {"keepdims": 0}, [i32(3, 4, 5, 6, 1, 1, 5, 5, 4, 5, 5, 5).reshape(4, 3), axes(1)]),
    "reduce_l1_int": ("ReduceL1", {"keepdims": 0}, [i32(3, -4, 5, -6).reshape(2, 2), axes(0)]),
    "pow_neg_frac": ("Pow", {}, [f32(-8, 8, 0, -2), f32(1 / 3, 1 / 3, -1, 2)]),
    "selu": ("Selu", {}, [f32(-3, -0.0, 0, 2)]),
    "celu": ("Celu", {"alpha": 2.0}, [f32(-3, -0.5, 0, 2)]),
    "mish": ("Mish", {}, [f32(-30, -1, 0, 1, 30)]),
    "sigmoid_large": ("Sigmoid", {}, [f32(-100, -20, 0, 20, 100)]),
    "erf_f16": ("Erf", {}, [np.array([-1, 0, 0.5, 3], np.float16)]),
    "qlinear_matmul_ties": ("QLinearMatMul", {}, [u8(1, 3).reshape(1, 2), np.array(1.0, np.float32), np.array(0, np.uint8), u8(1, 1).reshape(2, 1), np.array(1.0, np.float32), np.array(0, np.uint8), np.array(8.0, np.float32), np.array(0, np.uint8)]),
    "dequantize_axis_uint8": ("DequantizeLinear", {"axis": 0}, [u8(0, 255, 10, 20).reshape(2, 2), f32(0.5, 2), u8(128, 10)]),
    "quantize_f16": ("QuantizeLinear", {}, [np.array([0.5, 1.5, -3, 1000], np.float16), np.array(1.0, np.float16), np.array(0, np.int8)]),
    "cast_int64_to_f32": ("Cast", {"to": onnx.TensorProto.FLOAT}, [np.array([2**53 + 1, -2**40 - 1], np.int64)]),
    "sum_f16": ("Sum", {}, [np.array([1, 2048], np.float16), np.array([2048, 1], np.float16), np.array([0.5, 0.5], np.float16)]),
    "less_uint32": ("Less", {}, [np.array([1, 4000000000], np.uint32), np.array([4000000000, 1], np.uint32)]),
    "equal_nan": ("Equal", {}, [f32(NAN, 1), f32(NAN, 1)]),
    "mod_int8_python": ("Mod", {}, [np.array([-128, 127, -5], np.int8), np.array([3, -3, 127], np.int8)]),
    "abs_int8_min": ("Abs", {}, [np.array([-128, -1, 5], np.int8)]),
    "matmul_integer_zp": ("MatMulInteger", {}, [u8(1, 2, 3, 4, 5, 6).reshape(2, 3), np.array([[-1, 2], [3, -4], [5, 6]], np.int8), u8(2), np.array([1, -1], np.int8)]),
    # Broader shapes and types: quantized 16-bit, batched and 1-D integer
    # matmuls, grouped/strided/auto-padded integer convolutions.
    "reduce_sum_multi_axes": ("ReduceSum", {"keepdims": 1}, [rng.standard_normal((2, 3, 4, 5)).astype(np.float32), axes(0, 2)]),
    "reduce_mean_f16_big": ("ReduceMean", {"keepdims": 0}, [np.array([65000, 65000, 1, 3], np.float16).reshape(2, 2), axes(1)]),
    "reduce_sum_int64": ("ReduceSum", {"keepdims": 0}, [np.array([2**40, 2**40, 1, -1], np.int64).reshape(2, 2), axes(0)]),
    "argmax_f16": ("ArgMax", {"axis": 0, "keepdims": 0}, [np.array([1, 5, 5, 2], np.float16).reshape(2, 2)]),
    "quantize_int16": ("QuantizeLinear", {}, [f32(1000.5, -70000, 70000, 2.5), np.array(1.0, np.float32), np.array(0, np.int16)], 1, 21),
    "quantize_uint16": ("QuantizeLinear", {}, [f32(1000.5, -70000, 70000, 2.5), np.array(1.0, np.float32), np.array(7, np.uint16)], 1, 21),
    "dequantize_int16": ("DequantizeLinear", {}, [np.array([-32768, 5, 32767], np.int16), np.array(0.5, np.float32), np.array(-3, np.int16)], 1, 21),
    "dynamic_quantize_random": ("DynamicQuantizeLinear", {}, [rng.standard_normal((3, 7)).astype(np.float32) * 3], 3),
    "matmul_integer_batched": ("MatMulInteger", {}, [rng.integers(0, 255, (2, 3, 4)).astype(np.uint8), rng.integers(0, 255, (4, 5)).astype(np.uint8), u8(100), u8(7)]),
    "matmul_integer_1d": ("MatMulInteger", {}, [rng.integers(0, 255, (4,)).astype(np.uint8), rng.integers(-128, 127, (4, 5)).astype(np.int8)]),
    "matmul_integer_bcast": ("MatMulInteger", {}, [rng.integers(0, 255, (1, 3, 4)).astype(np.uint8), rng.integers(0, 255, (2, 4, 2)).astype(np.uint8)]),
    "conv_integer_group": ("ConvInteger", {"group": 2, "pads": [1, 1, 1, 1], "strides": [2, 1]}, [rng.integers(0, 255, (1, 4, 5, 5)).astype(np.uint8), rng.integers(0, 255, (4, 2, 3, 3)).astype(np.uint8), u8(128), u8(3)]),
    "conv_integer_same": ("ConvInteger", {"auto_pad": "SAME_LOWER", "strides": [2, 2]}, [rng.integers(0, 255, (1, 2, 6, 6)).astype(np.uint8), rng.integers(0, 255, (3, 2, 2, 2)).astype(np.uint8)]),
    "qlinear_conv_bias": ("QLinearConv", {"pads": [1, 1, 1, 1]}, [rng.integers(0, 255, (1, 2, 4, 4)).astype(np.uint8), np.array(0.05, np.float32), np.array(120, np.uint8), rng.integers(-128, 127, (3, 2, 3, 3)).astype(np.int8), f32(0.01, 0.02, 0.03), np.zeros(3, np.int8), np.array(0.2, np.float32), np.array(128, np.uint8), i32(100, -200, 300)]),
    "qlinear_matmul_3d": ("QLinearMatMul", {}, [rng.integers(0, 255, (2, 3, 4)).astype(np.uint8), np.array(0.1, np.float32), np.array(128, np.uint8), rng.integers(-128, 127, (4, 2)).astype(np.int8), np.array(0.05, np.float32), np.array(0, np.int8), np.array(0.3, np.float32), np.array(10, np.uint8)]),
    "where_bcast": ("Where", {}, [np.array([[True], [False]]), f32(1, 2, 3), np.array(9, np.float32)]),
    "clip_f16": ("Clip", {}, [np.array([-3, 0.5, 7], np.float16), np.array(-1, np.float16), np.array(2, np.float16)]),
    "xor_bool": ("Xor", {}, [np.array([True, False, True]), np.array([True])]),
    "castlike_u8_f16": ("CastLike", {}, [u8(3, 250), np.array([1], np.float16)]),
    "add_scalar_bcast": ("Add", {}, [rng.standard_normal((2, 1, 3)).astype(np.float32), rng.standard_normal((4, 1)).astype(np.float32)]),
    "mul_int64": ("Mul", {}, [np.array([2**31, -3], np.int64), np.array([4, 2**40], np.int64)]),
    "sub_uint8_wrap": ("Sub", {}, [u8(1, 200), u8(2, 100)]),
    "pow_f16": ("Pow", {}, [np.array([2, 3, 0.5], np.float16), np.array([10, 2, 3], np.float16)]),
    "reciprocal_zero": ("Reciprocal", {}, [f32(0, -0.0, 4)]),
    "log_neg": ("Log", {}, [f32(-1, 0, 1)]),
    "sqrt_neg": ("Sqrt", {}, [f32(-1, 0, 4)]),
    "acosh_atanh": ("Atanh", {}, [f32(-1, 0.5, 2)]),
    "softsign": ("Softsign", {}, [f32(-INF, -1, 0, 1e30)]),
    "gelu_none": ("Gelu", {}, [f32(-10, -1, 0, 1, 10)], 1, 20),
    "bitwise_and_i16": ("BitwiseAnd", {}, [np.array([-1, 0x0f0f], np.int16), np.array([0x1234, -1], np.int16)]),
    "isnan": ("IsNaN", {}, [f32(NAN, INF, 0)]),
    "floor_ceil": ("Ceil", {}, [f32(-1.5, -0.5, 0.5, 1e10)]),
}


def main():
    out = sys.argv[1]
    for name, case in CASES.items():
        op, attrs, inputs = case[:3]
        n_out = case[3] if len(case) > 3 else 1
        opset = case[4] if len(case) > 4 else 19
        in_names = [f"in{i}" for i in range(len(inputs))]
        constants = [
            numpy_helper.from_array(a.value, n)
            for n, a in zip(in_names, inputs) if isinstance(a, Const)
        ]
        feeds = {n: a for n, a in zip(in_names, inputs)
                 if not isinstance(a, Const)}
        out_names = [f"out{i}" for i in range(n_out)]
        node = helper.make_node(op, in_names, out_names, **attrs)
        graph_inputs = [
            helper.make_tensor_value_info(
                n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
            for n, a in feeds.items()
        ]
        # Output types from ONNX's shape inference of the node.
        schema = onnx.defs.get_schema(op, opset)
        inferred = onnx.shape_inference.infer_node_outputs(
            schema, node,
            {v.name: v.type for v in graph_inputs} | {
                c.name: helper.make_tensor_type_proto(c.data_type, c.dims)
                for c in constants},
            {c.name: c for c in constants})
        graph = helper.make_graph([node], name, graph_inputs, [
            helper.make_value_info(n, inferred[n]) for n in out_names
        ], initializer=constants)
        model = helper.make_model(
            graph, opset_imports=[helper.make_opsetid("", opset)])
        model.ir_version = 9
        onnx.checker.check_model(model)

        options = ort.SessionOptions()
        options.graph_optimization_level = (
            ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
        session = ort.InferenceSession(model.SerializeToString(), options,
                                       providers=["CPUExecutionProvider"])
        results = session.run(None, feeds)

        folder = os.path.join(out, name, "test_data_set_0")
        os.makedirs(folder, exist_ok=True)
        onnx.save(model, os.path.join(out, name, "model.onnx"))
        for prefix, tensors in (("input", list(feeds.values())),
                                ("output", results)):
            for i, t in enumerate(tensors):
                with open(os.path.join(folder, f"{prefix}_{i}.pb"), "wb") as f:
                    f.write(numpy_helper.from_array(np.asarray(t)).SerializeToString())
        print(name)


if __name__ == "__main__":
    main()
