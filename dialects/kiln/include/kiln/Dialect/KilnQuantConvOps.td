//===- KilnQuantConvOps.td - The integer convolution ---------*- tablegen -*-===//
//
// kiln.quantized_conv, the convolution counterpart of kiln.quantized_matmul
// (KilnQuantOps.td). Its own family: only kiln-fuse-qdq, its lowering and
// the dialect's registration use it, so its declarations live in
// KilnQuantConvOps.h rather than KilnOps.h.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_QUANT_CONV_OPS_TD
#define KILN_QUANT_CONV_OPS_TD

include "kiln/Dialect/KilnBase.td"

def Kiln_QConvInt8Tensor : RankedTensorOf<[I8, UI8]>;

def Kiln_QuantizedConvOp : Kiln_Op<"quantized_conv", [Pure]> {
  let summary = "2-D integer convolution against a constant int8 weight "
                "with a fused requantizing or dequantizing epilogue";
  let description = [{
    The integer form of Conv(DequantizeLinear(X), DequantizeLinear(W), B)
    (ReLU) (QuantizeLinear) with group 1, made by `kiln-fuse-qdq`:

    ```
    acc[n, m, oh, ow] = sum_{c, kh, kw} (Xp[n, c, oh*sh + kh*dh, ow*sw + kw*dw]
                                         - x_zero_point)
                                        * (W[m, kh, kw, c] - w_zero_point[m])
                        (+ bias[m] when bias is i32)               (int32)
    v = f32(acc) * scale[m] (+ bias[m] when bias is f32)           (f32)
    v = max(v, 0)                                     activation = "relu"
    Y = v                                           (no y_scale: f32 result)
    Y = saturate(roundeven(v / y_scale) + y_zero_point)            (int8)
    ```

    `Xp` is `X` ([N, C, H, W], i8 or ui8) padded with `pads` (top, left,
    bottom, right) with the value `x_zero_point`, so that a padded element
    dequantizes to 0 as in the float graph. `W` is the weight in OHWI
    layout, [M, KH, KW, C] (i8 or ui8; the pass permutes the graph's
    constant at compile time). `x_zero_point` (or `none`) is
    per-tensor; `w_zero_point` (or `none`) per-tensor or one per output
    channel. `w_row_sums` is the i32 `[M]` vector `sum_{c,kh,kw} W[m, ...]`,
    folded at compile time. `scale` (f32, one or `M` elements) is
    `x_scale * w_scale[m]`. `bias` (or `none`) is i32 `[M]` in units of
    `scale` (added exactly in the accumulator), or f32 `[M]` added after the
    scale (a float bias, or one quantized with another scale). `y_scale` /
    `y_zero_point` (both, or both `none`) are per-tensor; the result has
    `y_zero_point`'s element type, or is f32 when they are absent.

    The lowering transposes X to NHWC, pads it, copies it into the im2col
    matrix [N*OH*OW, KH*KW*C] (runs of C contiguous bytes), then runs the
    same int8 GEMM and epilogue as kiln.quantized_matmul, written back as
    NCHW.

    ```mlir
    %y = kiln.quantized_conv %x, %xzp, %w, %none, %sums, %scale, %bias, %ys, %yzp
        {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, activation = "relu"}
        : (tensor<1x8x16x16xui8>, tensor<ui8>, tensor<16x3x3x8xi8>, none, tensor<16xi32>, tensor<16xf32>,
           tensor<16xi32>, tensor<f32>, tensor<ui8>) -> tensor<1x16x16x16xui8>
    ```
  }];
  let arguments = (ins Kiln_QConvInt8Tensor:$X,
                   Kiln_Optional<Kiln_QConvInt8Tensor>:$x_zero_point,
                   Kiln_QConvInt8Tensor:$W,
                   Kiln_Optional<Kiln_QConvInt8Tensor>:$w_zero_point,
                   RankedTensorOf<[I32]>:$w_row_sums,
                   RankedTensorOf<[F32]>:$scale,
                   Kiln_Optional<RankedTensorOf<[I32, F32]>>:$bias,
                   Kiln_Optional<RankedTensorOf<[F32]>>:$y_scale,
                   Kiln_Optional<Kiln_QConvInt8Tensor>:$y_zero_point,
                   DenseI64ArrayAttr:$strides,
                   DenseI64ArrayAttr:$pads,
                   DenseI64ArrayAttr:$dilations,
                   DefaultValuedAttr<StrAttr, "\"none\"">:$activation);
  let results = (outs RankedTensorOf<[I8, UI8, F32]>:$Y);
  let assemblyFormat = [{
    operands attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // KILN_QUANT_CONV_OPS_TD
