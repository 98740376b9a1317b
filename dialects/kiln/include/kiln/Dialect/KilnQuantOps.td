//===- KilnQuantOps.td - Quantization ops --------------------*- tablegen -*-===//

#ifndef KILN_QUANT_OPS_TD
#define KILN_QUANT_OPS_TD

include "kiln/Dialect/KilnBase.td"
include "kiln/Dialect/KilnWindowAttrs.td"

/// The 8-bit integers of the integer matmuls and convolutions.
def Kiln_Int8Tensor : RankedTensorOf<[I8, UI8]>;
/// Types that QuantizeLinear produces and DequantizeLinear consumes.
def Kiln_QuantizedTensor : RankedTensorOf<[I8, UI8, I16, UI16]>;

def Kiln_QuantizeLinearOp : Kiln_OnnxOp<"quantize_linear"> {
  let summary = "ONNX QuantizeLinear: saturate(round(x / y_scale) + y_zero_point)";
  let description = [{
    Per-tensor quantization when `y_scale` is a scalar or has one element;
    per-axis when it is 1-D with `x.dim[axis]` elements. `y_zero_point`, when
    given, has `y_scale`'s shape. The result's element type is
    `y_zero_point`'s, else `output_dtype`, else ui8 (the two must agree when
    both are given). Blocked quantization (`block_size` other than 0) is not
    supported.

    ```mlir
    %q = kiln.quantize_linear %x, %scale, %zp {axis = 1 : i64}
        : (tensor<1x64x8x8xf32>, tensor<64xf32>, tensor<64xi8>) -> tensor<1x64x8x8xi8>
    %u = kiln.quantize_linear %x, %s, %none : (tensor<1x64x8x8xf32>, tensor<f32>, none) -> tensor<1x64x8x8xui8>
    ```
  }];
  let arguments = (ins RankedTensorOf<[Kiln_Float, I32]>:$x,
                   Kiln_FloatTensor:$y_scale,
                   Kiln_Optional<Kiln_QuantizedTensor>:$y_zero_point,
                   DefaultValuedAttr<I64Attr, "1">:$axis,
                   DefaultValuedAttr<I64Attr, "1">:$saturate,
                   DefaultValuedAttr<I64Attr, "0">:$block_size,
                   OptionalAttr<TypeAttr>:$output_dtype);
  let results = (outs Kiln_QuantizedTensor:$y);
  let hasVerifier = 1;
}

def Kiln_DequantizeLinearOp : Kiln_OnnxOp<"dequantize_linear"> {
  let summary = "ONNX DequantizeLinear: (x - x_zero_point) * x_scale";
  let description = [{
    Per-tensor or per-axis as for QuantizeLinear; `x_zero_point` has `x`'s
    element type. The result has `x`'s shape and `x_scale`'s element type.
    Blocked quantization (`block_size` other than 0) is not supported.

    ```mlir
    %y = kiln.dequantize_linear %q, %scale, %zp {axis = 0 : i64}
        : (tensor<64x3x3x3xi8>, tensor<64xf32>, tensor<64xi8>) -> tensor<64x3x3x3xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[I8, UI8, I16, UI16, I32]>:$x,
                   Kiln_FloatTensor:$x_scale,
                   Kiln_Optional<RankedTensorOf<[I8, UI8, I16, UI16, I32]>>:$x_zero_point,
                   DefaultValuedAttr<I64Attr, "1">:$axis,
                   DefaultValuedAttr<I64Attr, "0">:$block_size);
  let results = (outs Kiln_FloatTensor:$y);
  let hasVerifier = 1;
}

def Kiln_DynamicQuantizeLinearOp : Kiln_OnnxOp<"dynamic_quantize_linear"> {
  let summary = "ONNX DynamicQuantizeLinear: f32 to ui8 with computed scale and zero point";
  let description = [{
    ```mlir
    %y, %scale, %zp = kiln.dynamic_quantize_linear %x
        : (tensor<?x768xf32>) -> (tensor<?x768xui8>, tensor<f32>, tensor<ui8>)
    ```
  }];
  let arguments = (ins RankedTensorOf<[F32]>:$x);
  let results = (outs RankedTensorOf<[UI8]>:$y, 0DTensorOf<[F32]>:$y_scale,
                 0DTensorOf<[UI8]>:$y_zero_point);
}

def Kiln_MatMulIntegerOp : Kiln_OnnxOp<"matmul_integer"> {
  let summary = "ONNX MatMulInteger: (A - a_zero_point) x (B - b_zero_point) in i32";
  let description = [{
    The shapes follow MatMul. The optional zero points have their matrix's
    element type.

    ```mlir
    %y = kiln.matmul_integer %a, %b, %azp, %none
        : (tensor<?x128x768xui8>, tensor<768x768xi8>, tensor<ui8>, none) -> tensor<?x128x768xi32>
    ```
  }];
  let arguments = (ins Kiln_Int8Tensor:$A, Kiln_Int8Tensor:$B,
                   Kiln_Optional<Kiln_Int8Tensor>:$a_zero_point,
                   Kiln_Optional<Kiln_Int8Tensor>:$b_zero_point);
  let results = (outs RankedTensorOf<[I32]>:$Y);
}

def Kiln_QLinearMatMulOp : Kiln_OnnxOp<"qlinear_matmul"> {
  let summary = "ONNX QLinearMatMul: a quantized matmul with requantized output";
  let description = [{
    The shapes follow MatMul; each zero point has its tensor's element type
    and the result has `y_zero_point`'s.

    ```mlir
    %y = kiln.qlinear_matmul %a, %as, %azp, %b, %bs, %bzp, %ys, %yzp
        : (tensor<2x4xui8>, tensor<f32>, tensor<ui8>, tensor<4x3xi8>, tensor<f32>, tensor<i8>, tensor<f32>, tensor<ui8>)
        -> tensor<2x3xui8>
    ```
  }];
  let arguments = (ins Kiln_Int8Tensor:$a, Kiln_FloatTensor:$a_scale,
                   Kiln_Int8Tensor:$a_zero_point,
                   Kiln_Int8Tensor:$b, Kiln_FloatTensor:$b_scale,
                   Kiln_Int8Tensor:$b_zero_point,
                   Kiln_FloatTensor:$y_scale, Kiln_Int8Tensor:$y_zero_point);
  let results = (outs Kiln_Int8Tensor:$y);
}

def Kiln_QLinearConvOp : Kiln_OnnxOp<"qlinear_conv"> {
  let summary = "ONNX QLinearConv: a quantized Conv with requantized output";
  let description = [{
    Shapes and attributes follow Conv. `w_scale` and `w_zero_point` are
    per-tensor or have one entry per output channel; the optional bias `B` is
    i32 with one entry per output channel; the result has `y_zero_point`'s
    element type.

    ```mlir
    %y = kiln.qlinear_conv %x, %xs, %xzp, %w, %ws, %wzp, %ys, %yzp, %b {pads = array<i64: 1, 1, 1, 1>}
        : (tensor<1x3x8x8xui8>, tensor<f32>, tensor<ui8>, tensor<16x3x3x3xi8>, tensor<16xf32>, tensor<16xi8>,
           tensor<f32>, tensor<ui8>, tensor<16xi32>) -> tensor<1x16x8x8xui8>
    ```
  }];
  let arguments = !con((ins Kiln_Int8Tensor:$x, Kiln_FloatTensor:$x_scale,
                            Kiln_Int8Tensor:$x_zero_point,
                            Kiln_Int8Tensor:$w, Kiln_FloatTensor:$w_scale,
                            Kiln_Int8Tensor:$w_zero_point,
                            Kiln_FloatTensor:$y_scale, Kiln_Int8Tensor:$y_zero_point,
                            Kiln_Optional<RankedTensorOf<[I32]>>:$B),
                       Kiln_ConvWindowAttrs);
  let results = (outs Kiln_Int8Tensor:$y);
}

def Kiln_ConvIntegerOp : Kiln_OnnxOp<"conv_integer"> {
  let summary = "ONNX ConvInteger: (x - x_zero_point) conv (w - w_zero_point) in i32";
  let description = [{
    Shapes and attributes follow Conv; the optional zero points have their
    tensor's element type (`w_zero_point` per-tensor or per output channel).

    ```mlir
    %y = kiln.conv_integer %x, %w, %xzp, %none {strides = array<i64: 2, 2>}
        : (tensor<1x3x8x8xui8>, tensor<16x3x3x3xui8>, tensor<ui8>, none) -> tensor<1x16x3x3xi32>
    ```
  }];
  let arguments = !con((ins Kiln_Int8Tensor:$x, Kiln_Int8Tensor:$w,
                            Kiln_Optional<Kiln_Int8Tensor>:$x_zero_point,
                            Kiln_Optional<Kiln_Int8Tensor>:$w_zero_point),
                       Kiln_ConvWindowAttrs);
  let results = (outs RankedTensorOf<[I32]>:$y);
}

def Kiln_QuantizedMatMulOp : Kiln_Op<"quantized_matmul", [Pure, Kiln_InferTypes]> {
  let summary = "Integer matmul against a constant int8 weight with a fused "
                "requantizing or dequantizing epilogue";
  let description = [{
    The integer form of DequantizeLinear(A) x DequantizeLinear(W)^T (+ bias)
    (ReLU) (QuantizeLinear), made by `kiln-fuse-qdq`:

    ```
    acc[m, n] = sum_k (A[m, k] - a_zero_point) * (W[n, k] - w_zero_point[n])
                + bias[n]                                       (int32)
    v[m, n]   = f32(acc[m, n]) * scale[n]                       (f32)
    v         = max(v, 0)                              activation = "relu"
    Y         = v                                    (no y_scale: f32 result)
    Y         = saturate(roundeven(v / y_scale) + y_zero_point)   (int8)
    ```

    `A` is `[..., K]` (i8 or ui8; its leading dims are the rows `m`), `W`
    is the weight stored `[N, K]` (i8 or ui8), as Gemm's `transB`.
    `a_zero_point` (or `none`) is per-tensor; `w_zero_point` (or `none`)
    per-tensor or one per output column `n`. `w_row_sums` is the i32
    `[N]` vector `sum_k W[n, k]`, which the pass folds at compile time so
    that the zero-point corrections and the unsigned shift of the VNNI
    kernel cost nothing at run time. `scale` (f32, one or `N` elements) is
    `a_scale * w_scale[n]`; `bias` (or `none`) is i32 `[N]` in units of
    `scale`. `y_scale` / `y_zero_point` (both, or both `none`) are
    per-tensor; the result has `y_zero_point`'s element type, or is f32
    when they are absent. The result's shape is `A`'s with `K` replaced by
    `N`.

    ```mlir
    %y = kiln.quantized_matmul %a, %azp, %w, %none, %sums, %scale, %bias, %ys, %yzp {activation = "relu"}
        : (tensor<8x784xi8>, tensor<i8>, tensor<512x784xi8>, none, tensor<512xi32>, tensor<512xf32>,
           tensor<512xi32>, tensor<f32>, tensor<i8>) -> tensor<8x512xi8>
    ```
  }];
  let arguments = (ins Kiln_Int8Tensor:$A,
                   Kiln_Optional<Kiln_Int8Tensor>:$a_zero_point,
                   Kiln_Int8Tensor:$W,
                   Kiln_Optional<Kiln_Int8Tensor>:$w_zero_point,
                   RankedTensorOf<[I32]>:$w_row_sums,
                   RankedTensorOf<[F32]>:$scale,
                   Kiln_Optional<RankedTensorOf<[I32]>>:$bias,
                   Kiln_Optional<RankedTensorOf<[F32]>>:$y_scale,
                   Kiln_Optional<Kiln_Int8Tensor>:$y_zero_point,
                   DefaultValuedAttr<StrAttr, "\"none\"">:$activation);
  let results = (outs RankedTensorOf<[I8, UI8, F32]>:$Y);
  let assemblyFormat = [{
    operands attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // KILN_QUANT_OPS_TD
