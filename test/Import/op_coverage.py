#!/usr/bin/env python3
#===- test/Import/op_coverage.py - One-node import test for every op -------===#
#
# Builds a one-node ONNX model per case (opset 17, IR 8 unless the case needs
# newer), several cases per op where attributes, broadcasting, missing
# optional inputs or constant shape inputs matter, and checks the result
# types of the `func.func @main` that `kiln-compile --emit=kiln` writes.
#
# Expected types never come from Kiln: element types and shapes come from
# running the model with onnx.reference.ReferenceEvaluator (onnxruntime where
# the reference lacks the op or fails) on deterministic random inputs. Where
# a graph input has a dynamic dim, the expected shape is ONNX shape
# inference's: its static dims, `?` elsewhere (checked against the run).
#
# Graph outputs are declared with their element type and rank only (no dim
# values), so the dims have to come from Kiln's inference.
#
#   op_coverage.py --kiln-compile PATH --workdir DIR [--jobs N] [--filter OP]
#
# Prints a table (op, case, expected, got, PASS/FAIL) and exits 1 on any
# mismatch, import failure or case that could not be evaluated.
#
#===----------------------------------------------------------------------===#

import argparse
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# Every op this test must cover (the Kiln op list).
REQUIRED_OPS = """
Abs Neg Exp Log Sqrt Reciprocal Relu LeakyRelu PRelu Sigmoid HardSigmoid
HardSwish Tanh Erf Softplus Elu Selu Sin Cos Floor Ceil Round Sign Not IsNaN
Clip Cast Identity
Add Sub Mul Div Pow Max Min Sum Mean Mod Equal Less LessOrEqual Greater
GreaterOrEqual And Or Xor Where
ReduceMean ReduceSum ReduceMax ReduceMin ReduceProd ReduceL2 ReduceSumSquare
ArgMax ArgMin
MatMul Gemm Conv ConvTranspose MaxPool AveragePool GlobalAveragePool
GlobalMaxPool BatchNormalization InstanceNormalization LayerNormalization
Softmax LogSoftmax Dropout Pad Resize
Reshape Transpose Flatten Squeeze Unsqueeze Concat Split Slice Gather
GatherElements Expand Tile Shape Size ConstantOfShape Range Constant Trilu
CumSum
QuantizeLinear DequantizeLinear DynamicQuantizeLinear MatMulInteger
QLinearMatMul QLinearConv ConvInteger
""".split()

MLIR_ELEMENT = {
    np.dtype(np.float32): "f32", np.dtype(np.float16): "f16",
    np.dtype(np.float64): "f64",
    np.dtype(np.int8): "i8", np.dtype(np.int16): "i16",
    np.dtype(np.int32): "i32", np.dtype(np.int64): "i64",
    np.dtype(np.uint8): "ui8", np.dtype(np.uint16): "ui16",
    np.dtype(np.uint32): "ui32", np.dtype(np.uint64): "ui64",
    np.dtype(np.bool_): "i1",
}
try:
    import ml_dtypes
    MLIR_ELEMENT[np.dtype(ml_dtypes.bfloat16)] = "bf16"
except ImportError:
    pass

DTYPES = {"f32": np.float32, "f16": np.float16, "f64": np.float64,
          "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
          "u8": np.uint8, "bool": np.bool_}
# Runtime sizes of the symbolic dims used in graph inputs.
SYMBOLS = {"batch": 2, "seq": 5}


# --- Case description -------------------------------------------------------

class In:
    """A graph input. shape items are ints or symbolic names; data, when
    given, is the value fed to the reference run."""

    def __init__(self, dtype, shape, data=None):
        self.dtype, self.shape, self.data = DTYPES[dtype], list(shape), data


class K:
    """An initializer (a constant input)."""

    def __init__(self, value, dtype=None):
        self.value = np.asarray(value, dtype=DTYPES[dtype] if dtype else None)


NONE = ""  # a missing optional input


class Case:
    def __init__(self, op, name, inputs, outputs=1, opset=17, **attrs):
        self.op, self.name, self.inputs = op, name, inputs
        self.outputs, self.opset, self.attrs = outputs, opset, attrs
        self.id = f"{op}.{name}"

    @property
    def dynamic(self):
        return any(isinstance(d, str) for i in self.inputs
                   if isinstance(i, In) for d in i.shape)


def f32(*shape):
    return In("f32", shape)


def cases():
    c = []
    add = c.append
    x = (2, 3, 4)

    # Unary elementwise.
    for op in ["Abs", "Neg", "Exp", "Log", "Sqrt", "Reciprocal", "Relu",
               "Sigmoid", "Tanh", "Erf", "Softplus", "Sin", "Cos", "Floor",
               "Ceil", "Round", "Sign", "HardSwish", "IsNaN"]:
        add(Case(op, "f32", [f32(*x)]))
    add(Case("Abs", "i32", [In("i32", x)]))
    add(Case("Abs", "f64", [In("f64", x)]))
    add(Case("Neg", "i64", [In("i64", x)]))
    add(Case("Relu", "f16", [In("f16", x)]))
    add(Case("Relu", "dynamic", [In("f32", ["batch", 3])]))
    add(Case("Sign", "i32", [In("i32", x)]))
    add(Case("Exp", "f16", [In("f16", x)]))
    add(Case("IsNaN", "f16", [In("f16", x)]))
    add(Case("Sigmoid", "scalar", [f32()]))
    add(Case("LeakyRelu", "default", [f32(*x)]))
    add(Case("LeakyRelu", "alpha", [f32(*x)], alpha=0.2))
    add(Case("PRelu", "slope_same", [f32(*x), K(np.full(x, 0.1, np.float32))]))
    add(Case("PRelu", "slope_c", [f32(*x), K(np.full((4,), 0.1, np.float32))]))
    add(Case("PRelu", "slope_c11", [f32(2, 3, 4, 5),
                                    K(np.full((3, 1, 1), .1, np.float32))]))
    add(Case("HardSigmoid", "default", [f32(*x)]))
    add(Case("HardSigmoid", "alpha_beta", [f32(*x)], alpha=0.5, beta=0.6))
    add(Case("Elu", "default", [f32(*x)]))
    add(Case("Elu", "alpha", [f32(*x)], alpha=0.5))
    add(Case("Selu", "default", [f32(*x)]))
    add(Case("Selu", "alpha_gamma", [f32(*x)], alpha=2.0, gamma=3.0))
    add(Case("Not", "bool", [In("bool", x)]))
    add(Case("Clip", "no_bounds", [f32(*x)]))
    add(Case("Clip", "min", [f32(*x), K(np.float32(-0.5))]))
    add(Case("Clip", "min_max", [f32(*x), K(np.float32(-0.5)),
                                 K(np.float32(0.5))]))
    add(Case("Clip", "max_only", [f32(*x), NONE, K(np.float32(0.5))]))
    add(Case("Clip", "i32", [In("i32", x), K(np.int32(-2)), K(np.int32(2))]))
    for to, name in [(TensorProto.INT64, "f32_to_i64"),
                     (TensorProto.FLOAT16, "f32_to_f16"),
                     (TensorProto.BOOL, "f32_to_bool"),
                     (TensorProto.UINT8, "f32_to_u8"),
                     (TensorProto.DOUBLE, "f32_to_f64")]:
        add(Case("Cast", name, [f32(*x)], to=to))
    add(Case("Cast", "i32_to_f32", [In("i32", x)], to=TensorProto.FLOAT))
    add(Case("Cast", "bool_to_f32", [In("bool", x)], to=TensorProto.FLOAT))
    add(Case("Identity", "f32", [f32(*x)]))
    add(Case("Identity", "i64", [In("i64", (5,))]))

    # Binary elementwise, broadcasting.
    for op in ["Add", "Sub", "Mul", "Div"]:
        add(Case(op, "same", [f32(*x), f32(*x)]))
        add(Case(op, "bcast_last", [f32(*x), f32(4)]))
        add(Case(op, "bcast_both", [f32(2, 1, 4), f32(3, 1)]))
        add(Case(op, "scalar", [f32(*x), K(np.float32(2.0))]))
        add(Case(op, "i32", [In("i32", x), In("i32", (1, 4), np.full(
            (1, 4), 3, np.int32))]))
    add(Case("Add", "dynamic", [In("f32", ["batch", 3]), f32(3)]))
    add(Case("Mul", "i64", [In("i64", (3,)), In("i64", ())]))
    add(Case("Pow", "f32_f32", [f32(*x), f32(4)]))
    add(Case("Pow", "f32_i64", [f32(*x), K(np.int64(2))]))
    add(Case("Pow", "i64_i64", [In("i64", (3,)), K(np.int64(2))]))
    for op in ["Max", "Min", "Sum", "Mean"]:
        add(Case(op, "one", [f32(*x)]))
        add(Case(op, "two_bcast", [f32(*x), f32(3, 1)]))
        add(Case(op, "three", [f32(2, 1, 4), f32(3, 1), f32()]))
    add(Case("Max", "i32", [In("i32", x), In("i32", x)]))
    add(Case("Min", "i64", [In("i64", (3,)), In("i64", (1,))]))
    add(Case("Mod", "i32", [In("i32", x), In("i32", (4,), np.array(
        [2, 3, 5, 7], np.int32))]))
    add(Case("Mod", "f32_fmod", [f32(*x), K(np.float32(1.5))], fmod=1))
    add(Case("Mod", "i64_fmod", [In("i64", (3,)), K(np.int64(2))], fmod=1))
    for op in ["Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"]:
        add(Case(op, "f32_bcast", [f32(*x), f32(4)]))
        add(Case(op, "i64", [In("i64", (2, 3)), In("i64", (2, 1))]))
    add(Case("Equal", "bool", [In("bool", (3,)), In("bool", (3,))]))
    for op in ["And", "Or", "Xor"]:
        add(Case(op, "same", [In("bool", x), In("bool", x)]))
        add(Case(op, "bcast", [In("bool", (2, 1, 4)), In("bool", (3, 1))]))
    add(Case("Where", "same", [In("bool", x), f32(*x), f32(*x)]))
    add(Case("Where", "bcast", [In("bool", (2, 1, 4)), f32(3, 1),
                                K(np.float32(0))]))
    add(Case("Where", "i64", [In("bool", (3,)), In("i64", (3,)),
                              In("i64", (1,))]))

    # Reductions. ReduceSum takes axes as an input since opset 13, the others
    # since opset 18 (an attribute before).
    r = (2, 3, 4)
    for op in ["ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
               "ReduceL2", "ReduceSumSquare"]:
        add(Case(op, "attr_axes_keep", [f32(*r)], axes=[1], keepdims=1))
        add(Case(op, "attr_axes_drop", [f32(*r)], axes=[-1, 0], keepdims=0))
        add(Case(op, "all_keep", [f32(*r)]))
        add(Case(op, "all_drop", [f32(*r)], keepdims=0))
        add(Case(op, "opset18_input_axes", [f32(*r), K([1])], opset=18,
                 keepdims=0))
        add(Case(op, "opset18_no_axes_noop", [f32(*r)], opset=18,
                 noop_with_empty_axes=1))
    add(Case("ReduceMax", "i32", [In("i32", r)], axes=[2], keepdims=1))
    add(Case("ReduceMean", "dynamic", [In("f32", ["batch", "seq", 8])],
             axes=[-1], keepdims=1))
    add(Case("ReduceSum", "input_axes_keep", [f32(*r), K([1])], keepdims=1))
    add(Case("ReduceSum", "input_axes_drop", [f32(*r), K([0, -1])],
             keepdims=0))
    add(Case("ReduceSum", "no_axes_all", [f32(*r)], keepdims=0))
    add(Case("ReduceSum", "no_axes_noop", [f32(*r)], noop_with_empty_axes=1))
    add(Case("ReduceSum", "i64", [In("i64", r), K([2])]))
    add(Case("ReduceSum", "opset18", [f32(*r), K([1])], opset=18))
    for op in ["ArgMax", "ArgMin"]:
        add(Case(op, "default", [f32(*r)]))
        add(Case(op, "axis1_keep", [f32(*r)], axis=1, keepdims=1))
        add(Case(op, "axis_neg_drop", [f32(*r)], axis=-1, keepdims=0))
        add(Case(op, "last_index", [In("i32", r)], axis=2,
                 select_last_index=1))

    # Linear algebra.
    add(Case("MatMul", "2d", [f32(3, 4), f32(4, 5)]))
    add(Case("MatMul", "batched", [f32(2, 3, 4), f32(4, 5)]))
    add(Case("MatMul", "bcast_batch", [f32(2, 1, 3, 4), f32(3, 4, 5)]))
    add(Case("MatMul", "vec_mat", [f32(4), f32(4, 5)]))
    add(Case("MatMul", "mat_vec", [f32(2, 3, 4), f32(4)]))
    add(Case("MatMul", "dynamic", [In("f32", ["batch", "seq", 4]),
                                   f32(4, 6)]))
    add(Case("MatMul", "i32", [In("i32", (3, 4)), In("i32", (4, 2))]))
    add(Case("Gemm", "basic", [f32(3, 4), f32(4, 5), f32(5)]))
    add(Case("Gemm", "trans", [f32(4, 3), f32(5, 4), f32(1, 5)], transA=1,
             transB=1))
    add(Case("Gemm", "no_c", [f32(3, 4), f32(4, 5)], alpha=0.5))
    add(Case("Gemm", "scalar_c", [f32(3, 4), f32(4, 5), K(np.float32(1))],
             beta=2.0))
    add(Case("Gemm", "dynamic", [In("f32", ["batch", 4]),
                                 K(np.ones((6, 4), np.float32)),
                                 K(np.ones(6, np.float32))], transB=1))
    w = lambda *s: K(np.ones(s, np.float32) * 0.1)
    add(Case("Conv", "basic", [f32(1, 3, 8, 8), w(4, 3, 3, 3)]))
    add(Case("Conv", "bias_pads_strides", [f32(2, 3, 9, 9), w(4, 3, 3, 3),
                                           w(4)], pads=[1, 1, 1, 1],
             strides=[2, 2], kernel_shape=[3, 3]))
    add(Case("Conv", "asym_pads_dilations", [f32(1, 2, 10, 10),
                                             w(3, 2, 3, 3)],
             pads=[0, 1, 2, 1], dilations=[2, 2]))
    add(Case("Conv", "depthwise", [f32(1, 4, 8, 8), w(4, 1, 3, 3)], group=4,
             pads=[1, 1, 1, 1]))
    add(Case("Conv", "same_upper", [f32(1, 3, 7, 7), w(2, 3, 3, 3)],
             auto_pad="SAME_UPPER", strides=[2, 2]))
    add(Case("Conv", "valid", [f32(1, 3, 7, 6), w(2, 3, 3, 2)],
             auto_pad="VALID"))
    add(Case("Conv", "1d", [f32(2, 3, 10), w(5, 3, 3)], strides=[3]))
    add(Case("Conv", "3d", [f32(1, 2, 5, 6, 7), w(3, 2, 3, 3, 3)]))
    add(Case("Conv", "dynamic_batch", [In("f32", ["batch", 3, 8, 8]),
                                       w(4, 3, 3, 3), w(4)],
             pads=[1, 1, 1, 1]))
    add(Case("ConvTranspose", "basic", [f32(1, 2, 5, 5), w(2, 3, 3, 3)]))
    add(Case("ConvTranspose", "stride_outpad", [f32(1, 2, 4, 4),
                                                w(2, 3, 3, 3), w(3)],
             strides=[2, 2], output_padding=[1, 1], pads=[1, 1, 1, 1]))
    add(Case("ConvTranspose", "output_shape", [f32(1, 2, 4, 4),
                                               w(2, 3, 3, 3)],
             strides=[2, 2], output_shape=[9, 10]))
    add(Case("ConvTranspose", "group", [f32(1, 4, 5, 5), w(4, 2, 3, 3)],
             group=2, dilations=[2, 2]))
    add(Case("ConvTranspose", "1d", [f32(1, 2, 6), w(2, 4, 3)], strides=[2]))
    add(Case("MaxPool", "k2s2", [f32(1, 3, 8, 8)], kernel_shape=[2, 2],
             strides=[2, 2]))
    add(Case("MaxPool", "pads_ceil", [f32(1, 3, 9, 9)], kernel_shape=[3, 3],
             strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1))
    add(Case("MaxPool", "indices", [f32(1, 2, 6, 6)], outputs=2,
             kernel_shape=[2, 2], strides=[2, 2]))
    add(Case("MaxPool", "dilations", [f32(1, 2, 8, 8)], kernel_shape=[2, 2],
             dilations=[2, 2]))
    add(Case("MaxPool", "same_upper", [f32(1, 2, 7, 7)], kernel_shape=[3, 3],
             strides=[2, 2], auto_pad="SAME_UPPER"))
    add(Case("MaxPool", "1d", [f32(2, 3, 9)], kernel_shape=[3]))
    add(Case("MaxPool", "dynamic", [In("f32", ["batch", 3, 8, 8])],
             kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]))
    add(Case("AveragePool", "k3_pads_count", [f32(1, 3, 8, 8)],
             kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1))
    add(Case("AveragePool", "strides_ceil", [f32(1, 3, 8, 8)],
             kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1))
    add(Case("AveragePool", "1d", [f32(1, 3, 9)], kernel_shape=[2],
             strides=[2]))
    for op in ["GlobalAveragePool", "GlobalMaxPool"]:
        add(Case(op, "2d", [f32(2, 3, 5, 5)]))
        add(Case(op, "1d", [f32(2, 3, 7)]))
        add(Case(op, "dynamic", [In("f32", ["batch", 3, 5, 5])]))
    c3 = lambda v: K(np.full(3, v, np.float32))
    add(Case("BatchNormalization", "inference", [f32(2, 3, 4, 4), c3(1),
                                                 c3(0), c3(0), c3(1)],
             epsilon=1e-5))
    add(Case("BatchNormalization", "training", [f32(2, 3, 4, 4), c3(1),
                                                c3(0), c3(0), c3(1)],
             outputs=3, training_mode=1, momentum=0.9))
    add(Case("BatchNormalization", "1d", [f32(2, 3, 5), c3(1), c3(0),
                                          c3(0), c3(1)]))
    add(Case("InstanceNormalization", "2d", [f32(2, 3, 4, 5), c3(1),
                                             c3(0)]))
    add(Case("InstanceNormalization", "1d", [f32(2, 3, 5), c3(1), c3(0)],
             epsilon=1e-3))
    add(Case("LayerNormalization", "last_axis", [f32(2, 3, 8),
                                                 K(np.ones(8, np.float32)),
                                                 K(np.zeros(8, np.float32))]))
    add(Case("LayerNormalization", "no_bias_axis1", [f32(2, 3, 4),
                                                     K(np.ones(
                                                         (3, 4),
                                                         np.float32))],
             axis=1))
    add(Case("LayerNormalization", "mean_invstd", [f32(2, 3, 8),
                                                   K(np.ones(8, np.float32))],
             outputs=3, epsilon=1e-5))
    for op in ["Softmax", "LogSoftmax"]:
        add(Case(op, "default", [f32(*x)]))
        add(Case(op, "axis0", [f32(*x)], axis=0))
        add(Case(op, "dynamic", [In("f32", ["batch", "seq", 8])], axis=-1))
    add(Case("Dropout", "data_only", [f32(*x)]))
    add(Case("Dropout", "mask", [f32(*x)], outputs=2))
    add(Case("Dropout", "ratio_training_false",
             [f32(*x), K(np.float32(0.3)), K(np.bool_(False))], outputs=2))
    add(Case("Pad", "constant", [f32(2, 3, 4),
                                 K([0, 1, 2, 0, 1, 0])]))
    add(Case("Pad", "constant_value", [f32(2, 3), K([1, 1, 1, 1]),
                                       K(np.float32(5))]))
    add(Case("Pad", "reflect", [f32(1, 3, 4, 4), K([0, 0, 1, 2, 0, 0, 1, 2])],
             mode="reflect"))
    add(Case("Pad", "edge_negative", [f32(3, 5), K([1, -1, 0, 2])],
             mode="edge"))
    add(Case("Pad", "opset18_axes", [f32(2, 3, 4), K([1, 2]), NONE,
                                     K([-1])], opset=18))
    add(Case("Resize", "scales_nearest", [f32(1, 2, 3, 4), NONE,
                                          K(np.array([1, 1, 2, 2],
                                                     np.float32))],
             mode="nearest"))
    add(Case("Resize", "sizes_linear", [f32(1, 2, 4, 4), NONE, NONE,
                                        K([1, 2, 7, 9])], mode="linear"))
    add(Case("Resize", "scales_down_align", [f32(1, 1, 8, 8), NONE,
                                             K(np.array([1, 1, .5, .75],
                                                        np.float32))],
             mode="linear", coordinate_transformation_mode="align_corners"))
    add(Case("Resize", "cubic_empty_roi", [f32(1, 1, 4, 4),
                                           K(np.array([], np.float32)),
                                           K(np.array([1, 1, 1.5, 1.5],
                                                      np.float32))],
             mode="cubic"))

    # Shape and data movement.
    add(Case("Reshape", "minus_one", [f32(2, 3, 4), K([3, -1])]))
    add(Case("Reshape", "zero_copies", [f32(2, 3, 4), K([0, 2, 6])]))
    add(Case("Reshape", "allowzero", [f32(0, 3), K([3, 0])], allowzero=1))
    add(Case("Reshape", "dynamic", [In("f32", ["batch", 3, 4]), K([0, -1])]))
    add(Case("Transpose", "default", [f32(2, 3, 4)]))
    add(Case("Transpose", "perm", [f32(2, 3, 4, 5)], perm=[0, 2, 3, 1]))
    add(Case("Transpose", "dynamic", [In("f32", ["batch", "seq", 4])],
             perm=[1, 0, 2]))
    add(Case("Flatten", "default", [f32(2, 3, 4, 5)]))
    add(Case("Flatten", "axis0", [f32(2, 3, 4)], axis=0))
    add(Case("Flatten", "axis_neg", [f32(2, 3, 4, 5)], axis=-1))
    add(Case("Flatten", "axis3", [f32(2, 3, 4, 5)], axis=3))
    add(Case("Squeeze", "axes", [f32(2, 1, 4, 1), K([1])]))
    add(Case("Squeeze", "neg_axes", [f32(2, 1, 4, 1), K([-1, 1])]))
    add(Case("Squeeze", "no_axes", [f32(1, 3, 1, 4)]))
    add(Case("Unsqueeze", "front", [f32(3, 4), K([0])]))
    add(Case("Unsqueeze", "two_neg", [f32(3, 4), K([1, -1])]))
    add(Case("Unsqueeze", "scalar", [In("i64", ()), K([0])]))
    add(Case("Concat", "axis1", [f32(2, 3), f32(2, 5)], axis=1))
    add(Case("Concat", "three_neg", [f32(2, 3, 1), f32(2, 3, 2),
                                     f32(2, 3, 3)], axis=-1))
    add(Case("Concat", "i64_1d", [In("i64", (1,)), K([4, 5])], axis=0))
    add(Case("Concat", "dynamic", [In("f32", ["batch", 3]),
                                   In("f32", ["batch", 2])], axis=1))
    add(Case("Split", "sizes", [f32(2, 6), K([2, 4])], outputs=2, axis=1))
    add(Case("Split", "equal_inferred", [f32(6, 3)], outputs=3))
    add(Case("Split", "opset18_num_outputs", [f32(2, 7)], outputs=3, axis=1,
             opset=18, num_outputs=3))
    add(Case("Slice", "starts_ends", [f32(4, 5), K([1, 0]), K([3, 4])]))
    add(Case("Slice", "axes_steps", [f32(4, 6, 5), K([0, 1]), K([6, 5]),
                                     K([1, 2]), K([2, 1])]))
    add(Case("Slice", "negative_step", [f32(5, 4), K([-1]), K([-6]), K([0]),
                                        K([-2])]))
    add(Case("Slice", "int_max_end", [f32(3, 8), K([2]), K([2**63 - 1]),
                                      K([-1])]))
    add(Case("Slice", "dynamic", [In("f32", ["batch", 8]), K([1]), K([5]),
                                  K([1])]))
    add(Case("Gather", "axis0", [f32(5, 3), K([0, 4])]))
    add(Case("Gather", "axis1_2d", [f32(2, 5, 3), K([[0, 1], [2, 4]])],
             axis=1))
    add(Case("Gather", "scalar_index", [f32(5, 3), K(np.int64(2))], axis=0))
    add(Case("Gather", "neg_i32", [In("i64", (4,)), K(np.array(
        [-1, 0], np.int32))]))
    add(Case("GatherElements", "axis1", [f32(3, 4), K(np.array(
        [[0, 1], [3, 2], [1, 1]], np.int64))], axis=1))
    add(Case("GatherElements", "axis0_i32", [f32(3, 4), K(np.array(
        [[0, 1, 2, 0]], np.int32))], axis=0))
    add(Case("Expand", "bcast", [f32(3, 1), K([2, 3, 4])]))
    add(Case("Expand", "ones_keep", [f32(2, 3), K([1, 1])]))
    add(Case("Expand", "rank_up", [f32(4), K([3, 1, 4])]))
    add(Case("Tile", "repeats", [f32(2, 3, 4), K([2, 1, 3])]))
    add(Case("Tile", "i64", [In("i64", (3,)), K([4])]))
    add(Case("Shape", "basic", [f32(2, 3, 4)]))
    add(Case("Shape", "start_end", [f32(2, 3, 4, 5)], start=1, end=-1))
    add(Case("Shape", "dynamic", [In("f32", ["batch", "seq", 4])]))
    add(Case("Size", "basic", [f32(2, 3, 4)]))
    add(Case("Size", "dynamic", [In("f32", ["batch", 4])]))
    add(Case("ConstantOfShape", "default_value", [K([2, 3])]))
    add(Case("ConstantOfShape", "i64_value", [K([4])],
             value=numpy_helper.from_array(np.array([7], np.int64))))
    add(Case("ConstantOfShape", "scalar_shape", [K(np.array([], np.int64))],
             value=numpy_helper.from_array(np.array([1.5], np.float32))))
    add(Case("Range", "f32", [K(np.float32(0)), K(np.float32(2.5)),
                              K(np.float32(0.5))]))
    add(Case("Range", "i64", [K(np.int64(1)), K(np.int64(10)),
                              K(np.int64(3))]))
    add(Case("Range", "negative_delta", [K(np.int32(10)), K(np.int32(2)),
                                         K(np.int32(-3))]))
    add(Case("Constant", "tensor", [], value=numpy_helper.from_array(
        np.arange(6, dtype=np.float32).reshape(2, 3))))
    add(Case("Constant", "value_float", [], value_float=2.0))
    add(Case("Constant", "value_ints", [], value_ints=[1, 2, 3]))
    add(Case("Constant", "value_int", [], value_int=4))
    add(Case("Constant", "bool_tensor", [], value=numpy_helper.from_array(
        np.array([True, False]))))
    add(Case("Trilu", "upper", [f32(4, 5)]))
    add(Case("Trilu", "lower_k", [f32(2, 4, 4), K(np.int64(1))], upper=0))
    add(Case("Trilu", "neg_k_i64", [In("i64", (3, 3)), K(np.int64(-1))]))
    add(Case("CumSum", "axis_i64", [f32(3, 4), K(np.int64(1))]))
    add(Case("CumSum", "exclusive_reverse_i32", [In("i32", (2, 5)),
                                                 K(np.int32(-1))],
             exclusive=1, reverse=1))

    # Quantization.
    scale, u8zp, i8zp = K(np.float32(0.05)), K(np.uint8(128)), K(np.int8(0))
    add(Case("QuantizeLinear", "per_tensor_u8", [f32(2, 3, 4), scale, u8zp]))
    add(Case("QuantizeLinear", "per_tensor_i8", [f32(2, 3, 4), scale, i8zp]))
    add(Case("QuantizeLinear", "no_zero_point", [f32(2, 3, 4), scale]))
    add(Case("QuantizeLinear", "per_axis", [f32(2, 3, 4),
                                            K(np.full(3, .1, np.float32)),
                                            K(np.full(3, 10, np.uint8))],
             axis=1))
    add(Case("DequantizeLinear", "per_tensor_u8", [In("u8", (2, 3)), scale,
                                                   u8zp]))
    add(Case("DequantizeLinear", "per_tensor_i8", [In("i8", (2, 3)), scale,
                                                   i8zp]))
    add(Case("DequantizeLinear", "i32_no_zero_point", [In("i32", (4,)),
                                                       scale]))
    add(Case("DequantizeLinear", "per_axis", [In("i8", (2, 3, 4)),
                                              K(np.full(4, .1, np.float32)),
                                              K(np.zeros(4, np.int8))],
             axis=-1))
    add(Case("DynamicQuantizeLinear", "basic", [f32(3, 4)], outputs=3))
    add(Case("MatMulInteger", "u8_zero_points", [In("u8", (3, 4)),
                                                 In("u8", (4, 5)),
                                                 K(np.uint8(1)),
                                                 K(np.uint8(2))]))
    add(Case("MatMulInteger", "no_zero_points", [In("u8", (2, 3, 4)),
                                                 In("u8", (4, 5))]))
    add(Case("MatMulInteger", "i8", [In("i8", (3, 4)), In("i8", (4, 2))]))
    qmm = lambda a, b, zp: [In(a, (3, 4)), scale, zp, In(b, (4, 5)), scale,
                            zp, K(np.float32(0.2)), zp]
    add(Case("QLinearMatMul", "u8", qmm("u8", "u8", u8zp)))
    add(Case("QLinearMatMul", "i8", qmm("i8", "i8", i8zp)))
    wq = K(np.ones((3, 2, 3, 3), np.uint8))
    add(Case("QLinearConv", "u8", [In("u8", (1, 2, 5, 5)), scale, u8zp, wq,
                                   scale, K(np.uint8(0)), K(np.float32(0.2)),
                                   u8zp]))
    add(Case("QLinearConv", "bias_pads_strides",
             [In("u8", (1, 2, 6, 6)), scale, u8zp, wq, scale, K(np.uint8(0)),
              K(np.float32(0.2)), u8zp, K(np.zeros(3, np.int32))],
             pads=[1, 1, 1, 1], strides=[2, 2]))
    add(Case("ConvInteger", "zero_points", [In("u8", (1, 2, 5, 5)), wq,
                                            K(np.uint8(1)), K(np.uint8(0))]))
    add(Case("ConvInteger", "no_zero_points_pads", [In("u8", (1, 2, 5, 5)),
                                                    wq], pads=[1, 1, 1, 1]))
    return c


# --- Building and evaluating ------------------------------------------------

def onnx_type(dtype):
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def build_model(case, output_types=None):
    """output_types: [(numpy dtype, rank)] per output, or None for untyped
    outputs (enough for the reference evaluator)."""
    inputs, initializers, names, feeds = [], [], [], {}
    rng = np.random.default_rng(zlib.crc32(case.id.encode()))
    for n, item in enumerate(case.inputs):
        if isinstance(item, str):
            names.append(item)
            continue
        name = f"in{n}"
        names.append(name)
        if isinstance(item, K):
            initializers.append(numpy_helper.from_array(item.value, name))
            continue
        inputs.append(helper.make_tensor_value_info(
            name, onnx_type(item.dtype), item.shape))
        shape = [SYMBOLS[d] if isinstance(d, str) else d for d in item.shape]
        if item.data is not None:
            feeds[name] = np.asarray(item.data, item.dtype)
        elif item.dtype == np.bool_:
            feeds[name] = rng.random(shape) < 0.5
        elif np.issubdtype(item.dtype, np.integer):
            lo = 0 if np.issubdtype(item.dtype, np.unsignedinteger) else -5
            feeds[name] = rng.integers(lo, 10, shape).astype(item.dtype)
        else:
            feeds[name] = rng.standard_normal(shape).astype(item.dtype)
    while names and names[-1] == NONE:
        names.pop()
    out_names = [f"out{i}" for i in range(case.outputs)]
    node = helper.make_node(case.op, names, out_names, name=f"{case.op}_node",
                            **case.attrs)
    if output_types is None:
        outputs = [onnx.ValueInfoProto(name=n) for n in out_names]
    else:
        outputs = [helper.make_tensor_value_info(n, onnx_type(t), [None] * r)
                   for n, (t, r) in zip(out_names, output_types)]
    graph = helper.make_graph([node], case.id.replace(".", "_"), inputs,
                              outputs, initializers)
    model = helper.make_model(
        graph, producer_name="kiln-op-coverage",
        opset_imports=[helper.make_opsetid("", case.opset)], ir_version=8)
    return model, feeds


def evaluate(case, evaluator):
    """The case's outputs, computed by `evaluator`."""
    model, feeds = build_model(case)
    if evaluator == "reference":
        from onnx.reference import ReferenceEvaluator
        results = ReferenceEvaluator(model).run(None, feeds)
    else:
        import onnxruntime as ort
        typed = onnx.shape_inference.infer_shapes(model, strict_mode=True)
        session = ort.InferenceSession(typed.SerializeToString(),
                                       providers=["CPUExecutionProvider"])
        results = session.run(None, feeds)
    return [np.asarray(r) for r in results]


def evaluate_checked(case):
    """(outputs, typed model, evaluator): the reference evaluator's outputs,
    or onnxruntime's where the reference lacks the op, fails, or gives
    outputs that the ONNX checker's shape inference contradicts."""
    errors = []
    for evaluator in ("reference", "onnxruntime"):
        try:
            results = evaluate(case, evaluator)
            if len(results) != case.outputs:
                raise RuntimeError(f"{len(results)} outputs, the case "
                                   f"declares {case.outputs}")
            model, _ = build_model(case, [(r.dtype, r.ndim) for r in results])
            onnx.checker.check_model(model, full_check=True)
            return results, model, evaluator
        except Exception as e:
            errors.append(f"{evaluator}: {type(e).__name__}: "
                          f"{str(e).strip().splitlines()[0][:200]}")
    raise RuntimeError("; ".join(errors))


def mlir_type(dims, dtype):
    element = MLIR_ELEMENT.get(np.dtype(dtype))
    if element is None:
        raise RuntimeError(f"no MLIR element type for {np.dtype(dtype)}")
    return "tensor<" + "".join(f"{d}x" for d in dims) + element + ">"


def expected_types(case):
    """The expected MLIR result types and the final model to import."""
    results, model, evaluator = evaluate_checked(case)
    types = []
    if case.dynamic:
        inferred = onnx.shape_inference.infer_shapes(
            model, strict_mode=True, data_prop=True)
        for out, r in zip(inferred.graph.output, results):
            dims = out.type.tensor_type.shape.dim
            if len(dims) != r.ndim:
                raise RuntimeError(f"shape inference gives rank {len(dims)}, "
                                   f"the run rank {r.ndim}")
            static = [d.dim_value if d.HasField("dim_value") else "?"
                      for d in dims]
            for s, actual in zip(static, r.shape):
                if s != "?" and s != actual:
                    raise RuntimeError(f"shape inference's {static} "
                                       f"contradicts the run's {r.shape}")
            types.append(mlir_type(static, r.dtype))
    else:
        types = [mlir_type(r.shape, r.dtype) for r in results]
    return types, model, evaluator


SIGNATURE = re.compile(r"func\.func\s+(?:public\s+|private\s+)?@main\(")


def result_types(ir):
    """The result types of `func.func @main(...) -> (...)`."""
    match = SIGNATURE.search(ir)
    if not match:
        raise RuntimeError("no func.func @main in the output")
    depth, i = 1, match.end()
    while depth and i < len(ir):
        depth += {"(": 1, ")": -1}.get(ir[i], 0)
        i += 1
    rest = ir[i:].lstrip()
    if not rest.startswith("->"):
        return []  # no results
    rest = rest[2:].lstrip()
    if rest.startswith("("):
        depth, j = 1, 1
        while depth and j < len(rest):
            depth += {"(": 1, ")": -1}.get(rest[j], 0)
            j += 1
        segment = rest[1:j - 1]
    else:
        segment = re.match(r"[^\s{]+(?:<[^>]*>)?", rest).group(0)
    # Types only: drop result attribute dictionaries ({kiln.name = "..."}).
    segment = re.sub(r'\{[^{}]*\}', "", segment)
    return [t.replace(" ", "") for t in
            re.findall(r"tensor<[^>]*>|none|[a-z]+[0-9]+", segment)]


def run_case(case, kiln_compile, workdir, timeout):
    row = {"op": case.op, "case": case.name, "expected": "", "got": "",
           "status": "FAIL", "note": ""}
    try:
        expected, model, evaluator = expected_types(case)
    except Exception as e:
        row["note"] = f"cannot evaluate the case: {e}"
        return row
    row["expected"] = ", ".join(expected)
    row["by"] = evaluator
    path = os.path.join(workdir, f"{case.id}.onnx")
    out = os.path.join(workdir, f"{case.id}.mlir")
    onnx.save(model, path)
    if os.path.exists(out):
        os.remove(out)
    try:
        proc = subprocess.run([kiln_compile, path, "--emit=kiln", "-o", out],
                              capture_output=True, text=True,
                              errors="replace", timeout=timeout)
    except subprocess.TimeoutExpired:
        row["got"], row["note"] = "<timeout>", f"timeout after {timeout} s"
        return row
    if proc.returncode != 0:
        errors = [l for l in proc.stderr.splitlines() if "error:" in l]
        kind = ("rejected" if proc.returncode == 1 and errors else
                f"crashed (exit {proc.returncode})")
        row["got"] = f"<{kind}>"
        row["note"] = (errors or proc.stderr.strip().splitlines() or
                       ["(no stderr)"])[0].strip()
        return row
    try:
        with open(out) as f:
            got = result_types(f.read())
    except Exception as e:
        row["got"], row["note"] = "<unparsable>", str(e)
        return row
    row["got"] = ", ".join(got)
    if got == expected:
        row["status"] = "PASS"
    return row


def main():
    parser = argparse.ArgumentParser(
        description="Import a one-node model per op case with kiln-compile "
        "and compare @main's result types with the ONNX reference's.")
    parser.add_argument("--kiln-compile", required=True)
    parser.add_argument("--workdir", required=True,
                        help="where the models and the IR are written")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--filter", help="only cases whose op.case contains "
                        "this")
    args = parser.parse_args()

    kiln_compile = shutil.which(args.kiln_compile) or args.kiln_compile
    if not os.access(kiln_compile, os.X_OK):
        print(f"error: kiln-compile not found: {args.kiln_compile}",
              file=sys.stderr)
        return 1
    os.makedirs(args.workdir, exist_ok=True)

    all_cases = cases()
    ids = [c.id for c in all_cases]
    duplicates = {i for i in ids if ids.count(i) > 1}
    uncovered = [op for op in REQUIRED_OPS
                 if not any(c.op == op for c in all_cases)]
    if duplicates or uncovered:
        print(f"error: cases are incomplete: ops without a case: {uncovered}; "
              f"duplicate case names: {sorted(duplicates)}", file=sys.stderr)
        return 1
    selected = [c for c in all_cases
                if not args.filter or args.filter in c.id]

    import warnings
    warnings.simplefilter("ignore")  # the reference warns on NaN inputs
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        rows = list(pool.map(
            lambda c: run_case(c, kiln_compile, args.workdir, args.timeout),
            selected))

    widths = [max(len(h), *(len(r[k]) for r in rows)) for h, k in
              [("op", "op"), ("case", "case"), ("expected", "expected")]]
    print(f"{'op':<{widths[0]}}  {'case':<{widths[1]}}  "
          f"{'expected':<{widths[2]}}  result  got")
    for r in rows:
        got = r["got"] + (f"  -- {r['note']}" if r["note"] else "")
        print(f"{r['op']:<{widths[0]}}  {r['case']:<{widths[1]}}  "
              f"{r['expected']:<{widths[2]}}  {r['status']:<6}  {got}")

    failed = [r for r in rows if r["status"] != "PASS"]
    ops = sorted({r["op"] for r in rows})
    ops_passing = {r["op"] for r in rows if r["status"] == "PASS"}
    by_ort = sorted({r["op"] for r in rows if r.get("by") == "onnxruntime"})
    if by_ort:
        print(f"\nexpected types from onnxruntime (the reference evaluator "
              f"lacks or fails these): {' '.join(by_ort)}")
    no_pass = [op for op in ops if op not in ops_passing]
    if no_pass:
        print(f"\nops without a passing case ({len(no_pass)}): "
              f"{' '.join(no_pass)}")
    print(f"\n{len(rows)} cases over {len(ops)} ops: "
          f"{len(rows) - len(failed)} PASS, {len(failed)} FAIL")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
