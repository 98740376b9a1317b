//===- KilnNNOps.td - Linear algebra and neural-network ops --*- tablegen -*-===//
//
// Shape rules shared between ops (matmul, convolution and pooling windows)
// live in NNShapes.h/.cpp, which the quantization family uses too.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_NN_OPS_TD
#define KILN_NN_OPS_TD

include "kiln/Dialect/KilnBase.td"
include "kiln/Dialect/KilnWindowAttrs.td"

/// An op whose results all have the shape of its first operand: the first
/// result has its type, further results (Dropout's mask) the same shape with
/// their own element type, given by `extraResultElementTypes` (C++ exprs
/// of the element type, `$_ctx` being the MLIRContext). Checks of
/// attributes and further operands are in each op's verifier.
class Kiln_ShapePreservingOp<string mnemonic, list<string> extraResultElementTypes = [],
                             list<Trait> traits = []>
    : Kiln_OnnxOp<mnemonic, traits> {
  let hasVerifier = 1;
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *ctx, std::optional<::mlir::Location>,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &results) {
      auto first = ::llvm::cast<::mlir::RankedTensorType>(
          adaptor.getOperands()[0].getType());
      results.push_back(first);
      ::llvm::SmallVector<::mlir::Type> extraElementTypes{}] #
        !interleave(!foreach(t, extraResultElementTypes,
                             !subst("$_ctx", "ctx", t)), ", ") # [{};
      for (::mlir::Type element : extraElementTypes)
        results.push_back(first.clone(element));
      return ::mlir::success();
    }
  }];
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

def Kiln_MatMulOp : Kiln_OnnxOp<"matmul"> {
  let summary = "ONNX MatMul (numpy matmul semantics)";
  let description = [{
    Matrix product with numpy's rules: a 1-D `A` is promoted to a row
    (`1xK`) and a 1-D `B` to a column (`Kx1`), the promoted dim being removed
    from the result; the batch dims (all but the last two) broadcast.
    `A` and `B` have the same element type.

    ```mlir
    %y = kiln.matmul %a, %b : (tensor<?x1x4x8xf32>, tensor<3x8x16xf32>) -> tensor<?x3x4x16xf32>
    %v = kiln.matmul %m, %x : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4xf32>
    ```
  }];
  let arguments = (ins Kiln_NumericTensor:$A, Kiln_NumericTensor:$B);
  let results = (outs Kiln_NumericTensor:$Y);
}

def Kiln_GemmOp : Kiln_OnnxOp<"gemm"> {
  let summary = "ONNX Gemm: alpha * op(A) * op(B) + beta * C";
  let description = [{
    `A` and `B` are 2-D; `op(A)` is `A` transposed when `transA` is 1 (so
    `MxK`), likewise `op(B)` (`KxN`). `C` is optional (`none`) and
    unidirectionally broadcastable to `MxN`. The result is `MxN`.

    ```mlir
    %y = kiln.gemm %a, %b, %c {alpha = 1.0 : f32, beta = 1.0 : f32, transA = 0 : i64, transB = 1 : i64}
        : (tensor<?x256xf32>, tensor<10x256xf32>, tensor<10xf32>) -> tensor<?x10xf32>
    ```
  }];
  let arguments = (ins Kiln_NumericTensor:$A, Kiln_NumericTensor:$B,
                   Kiln_Optional<Kiln_NumericTensor>:$C,
                   DefaultValuedAttr<F32Attr, "1.0f">:$alpha,
                   DefaultValuedAttr<F32Attr, "1.0f">:$beta,
                   DefaultValuedAttr<I64Attr, "0">:$transA,
                   DefaultValuedAttr<I64Attr, "0">:$transB);
  let results = (outs Kiln_NumericTensor:$Y);
}

def Kiln_EinsumOp : Kiln_OnnxOp<"einsum"> {
  let summary = "ONNX Einsum (explicit or implicit output, with ellipsis)";
  let description = [{
    Einstein summation over the variadic `Inputs` as written in `equation`
    (`"bij,bjk->bik"`; without `->` the output lists the letters that occur
    once, alphabetically; `...` stands for broadcast leading dims). Every
    input has the same element type.

    ```mlir
    %y = kiln.einsum %a, %b {equation = "bij,bjk->bik"}
        : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
    ```
  }];
  let arguments = (ins Variadic<Kiln_NumericTensor>:$Inputs, StrAttr:$equation);
  let results = (outs Kiln_NumericTensor:$Output);
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

def Kiln_ConvOp : Kiln_OnnxOp<"conv"> {
  let summary = "ONNX Conv";
  let description = [{
    `X` is `N x C x D1 ... Dn`, `W` is `M x C/group x k1 ... kn`, the optional
    bias `B` has `M` elements. Unset `kernel_shape` is `W`'s spatial dims,
    unset `strides`/`dilations` are 1s and unset `pads` 0s. With `auto_pad`
    SAME_UPPER/SAME_LOWER each output dim is `ceil(D / stride)`; otherwise
    `floor((D + pad_begin + pad_end - dilation * (k - 1) - 1) / stride) + 1`
    (VALID: no padding). Nonzero `pads` are rejected with an `auto_pad`
    other than NOTSET.

    ```mlir
    %y = kiln.conv %x, %w, %b {auto_pad = "NOTSET", group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>}
        : (tensor<?x3x224x224xf32>, tensor<64x3x3x3xf32>, tensor<64xf32>) -> tensor<?x64x112x112xf32>
    ```
  }];
  let arguments = !con((ins Kiln_FloatTensor:$X, Kiln_FloatTensor:$W,
                            Kiln_OptFloatTensor:$B),
                       Kiln_ConvWindowAttrs);
  let results = (outs Kiln_FloatTensor:$Y);
}

def Kiln_ConvTransposeOp : Kiln_OnnxOp<"conv_transpose"> {
  let summary = "ONNX ConvTranspose";
  let description = [{
    `X` is `N x C x D1 ... Dn`, `W` is `C x M/group x k1 ... kn`; the result
    has `M = W.dim1 * group` channels. Each output dim is `output_shape[i]`
    when given, else `D * stride` for SAME_UPPER/SAME_LOWER, else
    `stride * (D - 1) + output_padding + dilation * (k - 1) + 1 - pad_begin -
    pad_end`. `output_padding` entries are smaller than the stride or the
    dilation.

    ```mlir
    %y = kiln.conv_transpose %x, %w, %none {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, output_padding = array<i64: 1, 1>}
        : (tensor<1x8x5x5xf32>, tensor<8x4x3x3xf32>, none) -> tensor<1x4x10x10xf32>
    ```
  }];
  let arguments = !con((ins Kiln_FloatTensor:$X, Kiln_FloatTensor:$W,
                            Kiln_OptFloatTensor:$B),
                       Kiln_ConvWindowAttrs,
                       (ins OptionalAttr<DenseI64ArrayAttr>:$output_padding,
                            OptionalAttr<DenseI64ArrayAttr>:$output_shape));
  let results = (outs Kiln_FloatTensor:$Y);
}

def Kiln_MaxPoolOp : Kiln_OnnxOp<"max_pool"> {
  let summary = "ONNX MaxPool, with the indices of the maxima";
  let description = [{
    Output dims follow Conv's rule; with `ceil_mode` 1 the division rounds up,
    but a window that would start in the end padding is dropped (as ONNX's
    reference and PyTorch do). `Indices` are flattened indices into `X`,
    row-major when `storage_order` is 0, column-major when 1.

    ```mlir
    %y, %i = kiln.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, ceil_mode = 1 : i64}
        : (tensor<1x64x112x112xf32>) -> (tensor<1x64x56x56xf32>, tensor<1x64x56x56xi64>)
    ```
  }];
  let arguments = !con((ins RankedTensorOf<[Kiln_Float, I8, UI8]>:$X),
                       Kiln_PoolWindowAttrs,
                       (ins DefaultValuedAttr<I64Attr, "0">:$storage_order));
  let results = (outs RankedTensorOf<[Kiln_Float, I8, UI8]>:$Y, Kiln_I64Tensor:$Indices);
}

def Kiln_AveragePoolOp : Kiln_OnnxOp<"average_pool"> {
  let summary = "ONNX AveragePool";
  let description = [{
    Output dims as for MaxPool. `count_include_pad` 1 divides by the whole
    window, padding included.

    ```mlir
    %y = kiln.average_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>}
        : (tensor<?x16x8x8xf32>) -> tensor<?x16x4x4xf32>
    ```
  }];
  let arguments = !con((ins Kiln_FloatTensor:$X), Kiln_PoolWindowAttrs,
                       (ins DefaultValuedAttr<I64Attr, "0">:$count_include_pad));
  let results = (outs Kiln_FloatTensor:$Y);
}

def Kiln_LpPoolOp : Kiln_OnnxOp<"lp_pool"> {
  let summary = "ONNX LpPool: the p-norm of each window";
  let description = [{
    Output dims as for MaxPool.

    ```mlir
    %y = kiln.lp_pool %x {kernel_shape = array<i64: 3>, p = 2 : i64}
        : (tensor<1x4x10xf32>) -> tensor<1x4x8xf32>
    ```
  }];
  let arguments = !con((ins Kiln_FloatTensor:$X), Kiln_PoolWindowAttrs,
                       (ins DefaultValuedAttr<I64Attr, "2">:$p));
  let results = (outs Kiln_FloatTensor:$Y);
}

/// GlobalAveragePool, GlobalMaxPool, GlobalLpPool: `N x C x D1 ... Dn` to
/// `N x C x 1 ... 1`.
class Kiln_GlobalPoolOp<string mnemonic, dag extraAttrs = (ins)>
    : Kiln_OnnxOp<mnemonic> {
  let arguments = !con((ins Kiln_FloatTensor:$X), extraAttrs);
  let results = (outs Kiln_FloatTensor:$Y);
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, std::optional<::mlir::Location> location,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &results) {
      return ::kiln::inferGlobalPoolType(location, adaptor.getX(), results);
    }
  }];
}

def Kiln_GlobalAveragePoolOp : Kiln_GlobalPoolOp<"global_average_pool"> {
  let summary = "ONNX GlobalAveragePool: the mean over all spatial dims";
  let description = [{
    ```mlir
    %y = kiln.global_average_pool %x : (tensor<?x512x7x7xf32>) -> tensor<?x512x1x1xf32>
    ```
  }];
}

def Kiln_GlobalMaxPoolOp : Kiln_GlobalPoolOp<"global_max_pool"> {
  let summary = "ONNX GlobalMaxPool: the maximum over all spatial dims";
  let description = [{
    ```mlir
    %y = kiln.global_max_pool %x : (tensor<1x8x5x5x5xf32>) -> tensor<1x8x1x1x1xf32>
    ```
  }];
}

def Kiln_GlobalLpPoolOp
    : Kiln_GlobalPoolOp<"global_lp_pool", (ins DefaultValuedAttr<I64Attr, "2">:$p)> {
  let summary = "ONNX GlobalLpPool: the p-norm over all spatial dims";
  let description = [{
    ```mlir
    %y = kiln.global_lp_pool %x {p = 2 : i64} : (tensor<1x8x5x5xf32>) -> tensor<1x8x1x1xf32>
    ```
  }];
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

def Kiln_BatchNormalizationOp : Kiln_ShapePreservingOp<"batch_normalization"> {
  let summary = "ONNX BatchNormalization, inference mode only";
  let description = [{
    `X` is `N x C x D1 ... Dn` (rank >= 2); `scale`, `B`, `input_mean` and
    `input_var` have `C` elements. Kiln implements inference mode only:
    `training_mode` 1 (which adds the running mean and variance outputs) is
    rejected, so the op has the one result `Y`.

    ```mlir
    %y = kiln.batch_normalization %x, %scale, %b, %mean, %var {epsilon = 1.0e-05 : f32, momentum = 0.9 : f32, training_mode = 0 : i64}
        : (tensor<?x64x56x56xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<?x64x56x56xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$X, Kiln_FloatTensor:$scale,
                   Kiln_FloatTensor:$B, Kiln_FloatTensor:$input_mean,
                   Kiln_FloatTensor:$input_var,
                   DefaultValuedAttr<F32Attr, "1e-5f">:$epsilon,
                   DefaultValuedAttr<F32Attr, "0.9f">:$momentum,
                   DefaultValuedAttr<I64Attr, "0">:$training_mode);
  let results = (outs Kiln_FloatTensor:$Y);
}

def Kiln_InstanceNormalizationOp : Kiln_ShapePreservingOp<"instance_normalization"> {
  let summary = "ONNX InstanceNormalization";
  let description = [{
    `input` is `N x C x D1 ... Dn` (rank >= 3); `scale` and `B` have `C`
    elements.

    ```mlir
    %y = kiln.instance_normalization %x, %scale, %b {epsilon = 1.0e-05 : f32}
        : (tensor<1x8x16x16xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<1x8x16x16xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, Kiln_FloatTensor:$scale,
                   Kiln_FloatTensor:$B,
                   DefaultValuedAttr<F32Attr, "1e-5f">:$epsilon);
  let results = (outs Kiln_FloatTensor:$output);
}

def Kiln_LayerNormalizationOp : Kiln_OnnxOp<"layer_normalization"> {
  let summary = "ONNX LayerNormalization, with its Mean and InvStdDev outputs";
  let description = [{
    Normalizes over the dims from `axis` to the last. `Scale` and the
    optional `B` are unidirectionally broadcastable to those dims. `Mean` and
    `InvStdDev` have `X`'s shape with the normalized dims kept as 1; their
    element type is `stash_type` (an ONNX dtype code: 1 f32, 10 f16, 11 f64,
    16 bf16).

    ```mlir
    %y, %mean, %inv = kiln.layer_normalization %x, %scale, %b {axis = -1 : i64, epsilon = 1.0e-05 : f32, stash_type = 1 : i64}
        : (tensor<?x128x768xf16>, tensor<768xf16>, tensor<768xf16>)
        -> (tensor<?x128x768xf16>, tensor<?x128x1xf32>, tensor<?x128x1xf32>)
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$X, Kiln_FloatTensor:$Scale,
                   Kiln_OptFloatTensor:$B,
                   DefaultValuedAttr<I64Attr, "-1">:$axis,
                   DefaultValuedAttr<F32Attr, "1e-5f">:$epsilon,
                   DefaultValuedAttr<I64Attr, "1">:$stash_type);
  let results = (outs Kiln_FloatTensor:$Y, Kiln_FloatTensor:$Mean,
                 Kiln_FloatTensor:$InvStdDev);
}

def Kiln_GroupNormalizationOp : Kiln_ShapePreservingOp<"group_normalization"> {
  let summary = "ONNX GroupNormalization (opset 21: per-channel scale and bias)";
  let description = [{
    `X` is `N x C x D1 ... Dn`; the `C` channels form `num_groups` groups
    (`C % num_groups == 0`); `scale` and `bias` have `C` elements (the
    opset-18 form with `num_groups` elements is rejected). `stash_type` is
    the ONNX dtype code of the statistics' precision (1 f32, 10 f16, 11 f64,
    16 bf16).

    ```mlir
    %y = kiln.group_normalization %x, %scale, %bias {epsilon = 1.0e-05 : f32, num_groups = 4 : i64, stash_type = 1 : i64}
        : (tensor<2x8x4x4xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8x4x4xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$X, Kiln_FloatTensor:$scale,
                   Kiln_FloatTensor:$bias,
                   DefaultValuedAttr<F32Attr, "1e-5f">:$epsilon,
                   I64Attr:$num_groups,
                   DefaultValuedAttr<I64Attr, "1">:$stash_type);
  let results = (outs Kiln_FloatTensor:$Y);
}

def Kiln_LpNormalizationOp : Kiln_ShapePreservingOp<"lp_normalization"> {
  let summary = "ONNX LpNormalization along one axis (p is 1 or 2)";
  let description = [{
    ```mlir
    %y = kiln.lp_normalization %x {axis = -1 : i64, p = 2 : i64} : (tensor<4x16xf32>) -> tensor<4x16xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input,
                   DefaultValuedAttr<I64Attr, "-1">:$axis,
                   DefaultValuedAttr<I64Attr, "2">:$p);
  let results = (outs Kiln_FloatTensor:$output);
}

def Kiln_LRNOp : Kiln_ShapePreservingOp<"lrn"> {
  let summary = "ONNX LRN: local response normalization across channels";
  let description = [{
    `X` is `N x C x D1 ... Dn` (rank >= 3); `size` (the number of channels
    summed over) is positive.

    ```mlir
    %y = kiln.lrn %x {alpha = 1.0e-04 : f32, beta = 0.75 : f32, bias = 1.0 : f32, size = 5 : i64}
        : (tensor<1x96x55x55xf32>) -> tensor<1x96x55x55xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$X,
                   DefaultValuedAttr<F32Attr, "1e-4f">:$alpha,
                   DefaultValuedAttr<F32Attr, "0.75f">:$beta,
                   DefaultValuedAttr<F32Attr, "1.0f">:$bias,
                   I64Attr:$size);
  let results = (outs Kiln_FloatTensor:$Y);
}

def Kiln_MeanVarianceNormalizationOp
    : Kiln_ShapePreservingOp<"mean_variance_normalization"> {
  let summary = "ONNX MeanVarianceNormalization over `axes`";
  let description = [{
    `(X - mean) / sqrt(variance)`, the statistics taken over `axes` (distinct,
    in range for `X`'s rank).

    ```mlir
    %y = kiln.mean_variance_normalization %x {axes = array<i64: 0, 2, 3>}
        : (tensor<2x3x4x4xf32>) -> tensor<2x3x4x4xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$X,
                   DefaultValuedAttr<DenseI64ArrayAttr, "{0, 2, 3}">:$axes);
  let results = (outs Kiln_FloatTensor:$Y);
}

/// Softmax, LogSoftmax, Hardmax: along one axis, same type in and out.
class Kiln_SoftmaxLikeOp<string mnemonic> : Kiln_ShapePreservingOp<mnemonic> {
  let arguments = (ins Kiln_FloatTensor:$input,
                   DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs Kiln_FloatTensor:$output);
}

def Kiln_SoftmaxOp : Kiln_SoftmaxLikeOp<"softmax"> {
  let summary = "ONNX Softmax along `axis` (opset 13: one axis, not flattened)";
  let description = [{
    ```mlir
    %y = kiln.softmax %x {axis = -1 : i64} : (tensor<?x12x128x128xf32>) -> tensor<?x12x128x128xf32>
    ```
  }];
}

def Kiln_LogSoftmaxOp : Kiln_SoftmaxLikeOp<"log_softmax"> {
  let summary = "ONNX LogSoftmax along `axis`";
  let description = [{
    ```mlir
    %y = kiln.log_softmax %x {axis = 1 : i64} : (tensor<8x10xf32>) -> tensor<8x10xf32>
    ```
  }];
}

def Kiln_HardmaxOp : Kiln_SoftmaxLikeOp<"hardmax"> {
  let summary = "ONNX Hardmax: 1 at the first maximum along `axis`, else 0";
  let description = [{
    ```mlir
    %y = kiln.hardmax %x {axis = -1 : i64} : (tensor<8x10xf32>) -> tensor<8x10xf32>
    ```
  }];
}

def Kiln_DropoutOp
    : Kiln_ShapePreservingOp<"dropout", ["::mlir::IntegerType::get($_ctx, 1)"]> {
  let summary = "ONNX Dropout, inference mode: the identity and an all-true mask";
  let description = [{
    `ratio` (a float scalar) and `training_mode` (an i1 scalar) are optional.
    Kiln implements inference only: a `training_mode` known to be true is
    rejected, and a known `ratio` must lie in [0, 1). `mask` has `data`'s
    shape and element type i1.

    ```mlir
    %y, %mask = kiln.dropout %x, %none, %none {seed = 0 : i64}
        : (tensor<?x768xf32>, none, none) -> (tensor<?x768xf32>, tensor<?x768xi1>)
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$data, Kiln_OptFloatTensor:$ratio,
                   Kiln_Optional<Kiln_BoolTensor>:$training_mode,
                   OptionalAttr<I64Attr>:$seed);
  let results = (outs Kiln_FloatTensor:$output, Kiln_BoolTensor:$mask);
}

//===----------------------------------------------------------------------===//
// Padding and resampling
//===----------------------------------------------------------------------===//

def Kiln_PadOp : Kiln_OnnxOp<"pad"> {
  let summary = "ONNX Pad (constant, reflect, edge or wrap)";
  let description = [{
    `pads` is a 1-D i64 tensor `[x1_begin, x2_begin, ..., x1_end, x2_end, ...]`
    over `axes` (all axes when `axes` is `none`); pads may be negative
    (cropping). `constant_value` is an optional scalar of `data`'s element
    type. A result dim is known when the input dim and its pads are known
    (through `kiln::getKnownIntValues`); otherwise it is `?`.

    ```mlir
    %pads = kiln.constant dense<[0, 0, 1, 1, 0, 0, 1, 1]> : tensor<8xi64>
    %y = kiln.pad %x, %pads, %none, %none {mode = "reflect"}
        : (tensor<1x3x8x8xf32>, tensor<8xi64>, none, none) -> tensor<1x3x10x10xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data, Kiln_I64Tensor:$pads,
                   Kiln_OptTensor:$constant_value,
                   Kiln_Optional<Kiln_IndexTensor>:$axes,
                   DefaultValuedAttr<StrAttr, "\"constant\"">:$mode);
  let results = (outs Kiln_Tensor:$output);
}

def Kiln_ResizeOp : Kiln_OnnxOp<"resize"> {
  let summary = "ONNX Resize (nearest, linear or cubic)";
  let description = [{
    Exactly one of `scales` (f32) and `sizes` (i64) is given, over `axes`
    (all axes when unset); an empty `scales` tensor counts as absent, as
    older exporters write it. A result dim is `sizes[i]`, adjusted by
    `keep_aspect_ratio_policy` `not_larger`/`not_smaller` to
    `round(D * scale)` with one scale for all `axes`, or `floor(D *
    scales[i])`; `?` where the input dim or the value is unknown.

    ```mlir
    %scales = kiln.constant dense<[1.0, 1.0, 2.0, 2.0]> : tensor<4xf32>
    %y = kiln.resize %x, %none, %scales, %none {mode = "nearest"}
        : (tensor<1x3x8x8xf32>, none, tensor<4xf32>, none) -> tensor<1x3x16x16xf32>
    ```
  }];
  let arguments = (ins Kiln_NumericTensor:$X, Kiln_OptFloatTensor:$roi,
                   Kiln_Optional<RankedTensorOf<[F32]>>:$scales,
                   Kiln_OptI64Tensor:$sizes,
                   DefaultValuedAttr<I64Attr, "0">:$antialias,
                   OptionalAttr<DenseI64ArrayAttr>:$axes,
                   DefaultValuedAttr<StrAttr, "\"half_pixel\"">:$coordinate_transformation_mode,
                   DefaultValuedAttr<F32Attr, "-0.75f">:$cubic_coeff_a,
                   DefaultValuedAttr<I64Attr, "0">:$exclude_outside,
                   DefaultValuedAttr<F32Attr, "0.0f">:$extrapolation_value,
                   DefaultValuedAttr<StrAttr, "\"stretch\"">:$keep_aspect_ratio_policy,
                   DefaultValuedAttr<StrAttr, "\"nearest\"">:$mode,
                   DefaultValuedAttr<StrAttr, "\"round_prefer_floor\"">:$nearest_mode);
  let results = (outs Kiln_NumericTensor:$Y);
  let hasVerifier = 1;
}

#endif // KILN_NN_OPS_TD
