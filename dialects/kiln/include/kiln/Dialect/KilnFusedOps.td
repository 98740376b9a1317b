//===- KilnFusedOps.td - Fused normalizations, activations and matmul/conv epilogues ---*- tablegen -*-===//
//
// Kiln's own ops (no ONNX operator of this name): made by Kiln's passes, each
// with a decomposition back into ONNX-level kiln ops (kiln-decompose-fused).
//
// LayerNorm and GELU have no op here: kiln-fuse-normalization and
// kiln-fuse-activations produce the ONNX-level kiln.layer_normalization and
// kiln.gelu, which every backend already knows.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_FUSED_OPS_TD
#define KILN_FUSED_OPS_TD

include "kiln/Dialect/KilnBase.td"
include "kiln/Dialect/KilnWindowAttrs.td"

/// The activations a fused matmul or convolution applies to its result.
def Kiln_EpilogueActivationAttr : StringBasedAttr<And<[StrAttrPred, Or<!foreach(v,
      ["none", "relu", "gelu", "gelu_tanh", "silu", "sigmoid", "tanh",
       "hard_swish", "relu6"],
      CPred<"::llvm::cast<::mlir::StringAttr>($_self).getValue() == \"" # v # "\"">)>]>,
    "string attribute whose value is one of \"none\", \"relu\", \"gelu\", " #
    "\"gelu_tanh\", \"silu\", \"sigmoid\", \"tanh\", \"hard_swish\", " #
    "\"relu6\"">;

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

def Kiln_RMSNormOp : Kiln_OnnxOp<"rms_norm"> {
  let summary = "RMS normalization: X / sqrt(mean(X^2) + epsilon) * scale";
  let description = [{
    Root-mean-square normalization (Zhang & Sennrich 2019, as in Llama and T5)
    over the dims from `axis` to the last:

    ```
    N = X / sqrt(mean(X * X over X.dims[axis:]) + epsilon)
    Y = N * scale
    ```

    `scale` has `X`'s element type and is unidirectionally broadcastable to
    the normalized dims `X.shape[axis:]` (typically their exact shape). As in
    ONNX LayerNormalization, `stash_type` is the ONNX dtype code (1 f32,
    10 f16, 11 f64, 16 bf16) of the precision `N` is computed in: `X` is cast
    to it, `N` is cast back to `X`'s element type before the multiplication
    by `scale`. This is PyTorch's Llama RMSNorm, which upcasts to f32 and
    casts back before applying the weight. The result has `X`'s type.

    Made by `kiln-fuse-normalization`; `kiln-decompose-fused` rewrites it
    into Mul, ReduceMean, Add, Sqrt, Div, Mul (with Casts when `stash_type`
    differs from `X`'s element type).

    ```mlir
    %y = kiln.rms_norm %x, %w {axis = -1 : i64, epsilon = 1.0e-06 : f32, stash_type = 1 : i64}
        : (tensor<1x128x512xf32>, tensor<512xf32>) -> tensor<1x128x512xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$X, Kiln_FloatTensor:$scale,
                   DefaultValuedAttr<I64Attr, "-1">:$axis,
                   DefaultValuedAttr<F32Attr, "1e-5f">:$epsilon,
                   DefaultValuedAttr<I64Attr, "1">:$stash_type);
  let results = (outs Kiln_FloatTensor:$Y);
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Activations
//===----------------------------------------------------------------------===//

def Kiln_SiLUOp : Kiln_SameTypeUnaryOp<"silu", Kiln_FloatTensor> {
  let summary = "SiLU (swish): y = x * sigmoid(x), elementwise";
  let description = [{
    `y = x / (1 + exp(-x))` for each element of `X`; the result has the type
    of `X`. Made by `kiln-fuse-activations` from `Mul(x, Sigmoid(x))`.

    ```mlir
    %y = kiln.silu %x : tensor<2x?xf32>
    ```
  }];
}

def Kiln_SwiGLUOp : Kiln_Op<"swiglu", [Pure, Elementwise, SameOperandsAndResultType,
                                       InferTypeOpInterface]> {
  let summary = "SwiGLU gate: y = silu(gate) * up, elementwise";
  let description = [{
    The gated linear unit of Llama-style MLPs (Shazeer 2020):
    `y = gate * sigmoid(gate) * up`. `gate`, `up` and the result have one
    type (no broadcasting). Made by `kiln-fuse-activations` from
    `Mul(silu(gate), up)` in either operand order.

    ```mlir
    %y = kiln.swiglu %gate, %up : tensor<1x128x1376xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$gate, Kiln_FloatTensor:$up);
  let results = (outs Kiln_FloatTensor:$Y);
  let assemblyFormat = "$gate `,` $up attr-dict `:` type($Y)";
}

//===----------------------------------------------------------------------===//
// Matmul and convolution with epilogues
//===----------------------------------------------------------------------===//

def Kiln_FusedMatMulOp : Kiln_OnnxOp<"fused_matmul"> {
  let summary = "MatMul (or Gemm) with bias, activation and residual add";
  let description = [{
    ```
    P = alpha * matmul(A, trans_b ? transpose_last2(B) : B)
    Y = act(P + bias) + residual          residual_before_activation = false
    Y = act(P + bias + residual)          residual_before_activation = true
    ```

    `matmul` is ONNX MatMul (numpy: 1-D operands promoted, batch dims
    broadcast). With `trans_b`, `B` (rank >= 2) is used with its last two
    dims swapped, as Gemm's `transB` and as a weight stored N x K. `bias`
    (or `none`) is 1-D with `N` elements, the last dim of `P`. `residual`
    (or `none`) has `P`'s shape (numpy broadcasting applies, but must not
    change the shape). `act` is `activation`: `none`, `relu`, `gelu`
    (exact, erf), `gelu_tanh`, `silu`, `sigmoid`, `tanh`, `hard_swish`
    (ONNX HardSwish) or `relu6` (Clip to [0, 6]). Every operand has
    one element type, which is the result's. `residual_before_activation`
    only matters when `activation` is not `none`; the fusion pass then sets
    it to the order it found (a ResNet block adds the shortcut before its
    ReLU, a transformer adds it after the MLP).

    ONNX Gemm with `transA = 0`, `beta = 1` (or no `C`) and a 1-D `C` folds
    into this op: `alpha` and `transB` carry over, `C` becomes `bias`.

    Made by `kiln-fuse-epilogues`; `kiln-decompose-fused` rewrites it into
    Gemm (2-D operands) or Transpose/MatMul/Mul, then Add, the activation,
    Add.

    ```mlir
    %y = kiln.fused_matmul %x, %w, %b, %res {activation = "gelu", trans_b = true}
        : (tensor<1x128x512xf32>, tensor<2048x512xf32>, tensor<2048xf32>, tensor<1x128x2048xf32>)
        -> tensor<1x128x2048xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$A, Kiln_FloatTensor:$B,
                   Kiln_OptFloatTensor:$bias, Kiln_OptFloatTensor:$residual,
                   DefaultValuedAttr<Kiln_EpilogueActivationAttr, "\"none\"">:$activation,
                   DefaultValuedAttr<BoolAttr, "false">:$residual_before_activation,
                   DefaultValuedAttr<BoolAttr, "false">:$trans_b,
                   DefaultValuedAttr<F32Attr, "1.0f">:$alpha);
  let results = (outs Kiln_FloatTensor:$Y);
}

def Kiln_FusedConvOp : Kiln_OnnxOp<"fused_conv"> {
  let summary = "Conv with bias, activation and residual add";
  let description = [{
    ```
    C = conv(X, W, B)                      (ONNX Conv, same attributes)
    Y = act(C) + residual                  residual_before_activation = false
    Y = act(C + residual)                  residual_before_activation = true
    ```

    `X`, `W`, `B` and the window attributes (`auto_pad`, `dilations`,
    `group`, `kernel_shape`, `pads`, `strides`) are those of `kiln.conv`.
    `residual` (or `none`) has the result's shape `N x M x D1' ...`. `act`
    is `activation`: `none`, `relu`, `gelu` (exact, erf), `gelu_tanh`,
    `silu`, `sigmoid`, `tanh`, `hard_swish` or `relu6` (Clip to [0, 6]).
    A PyTorch ResNet basic block's second
    convolution is `relu(conv + bn + shortcut)`: after BatchNormalization
    is folded into the Conv's bias, it becomes one `kiln.fused_conv` with
    `residual_before_activation = true`.

    Made by `kiln-fuse-epilogues` (a channel bias `[M, 1, 1]` added after a
    Conv without `B` becomes `B`); `kiln-decompose-fused` rewrites it into
    Conv, Add, the activation, Add.

    ```mlir
    %y = kiln.fused_conv %x, %w, %b, %shortcut {activation = "relu", pads = array<i64: 1, 1, 1, 1>, residual_before_activation = true}
        : (tensor<1x64x56x56xf32>, tensor<64x64x3x3xf32>, tensor<64xf32>, tensor<1x64x56x56xf32>)
        -> tensor<1x64x56x56xf32>
    ```
  }];
  let arguments = !con((ins Kiln_FloatTensor:$X, Kiln_FloatTensor:$W,
                            Kiln_OptFloatTensor:$B, Kiln_OptFloatTensor:$residual),
                       Kiln_ConvWindowAttrs,
                       (ins DefaultValuedAttr<Kiln_EpilogueActivationAttr, "\"none\"">:$activation,
                            DefaultValuedAttr<BoolAttr, "false">:$residual_before_activation));
  let results = (outs Kiln_FloatTensor:$Y);
}

def Kiln_FusedConvNhwcOp : Kiln_OnnxOp<"fused_conv_nhwc"> {
  let summary = "Channels-last Conv (OHWI filter) with bias, activation and residual add";
  let description = [{
    The channels-last form of `kiln.fused_conv`:

    ```
    C = conv_nhwc(X, W, B)                 (kiln.conv_nhwc, same attributes)
    Y = act(C) + residual                  residual_before_activation = false
    Y = act(C + residual)                  residual_before_activation = true
    ```

    `X` (`N x D1 ... Dn x C`), the OHWI filter `W` (`M x k1 ... kn x
    C/group`), the optional bias `B` (`M` elements) and the window
    attributes (`auto_pad`, `dilations`, `group`, `kernel_shape`, `pads`,
    `strides`) are those of `kiln.conv_nhwc`, and every shape rule of
    `kiln.conv` applies to the permuted shapes. The result is `N x out1 ...
    outn x M`. `residual` (or `none`) has the result's shape (numpy
    broadcasting applies, but must not change the shape). `act` is
    `activation`: `none`, `relu`, `gelu` (exact, erf), `gelu_tanh`, `silu`,
    `sigmoid`, `tanh`, `hard_swish` or `relu6` (Clip to [0, 6]).

    Made by `kiln-fuse-epilogues` from a `kiln.conv_nhwc` (as
    kiln-optimize-layout leaves a ResNet at -O3): a channel bias `[M]` or
    `[1, 1, 1, M]` added after a conv without `B` becomes `B`.
    `kiln-decompose-fused` rewrites it into `kiln.conv_nhwc`, Add, the
    activation, Add (and the conv further into Transpose, Conv, Transpose).

    ```mlir
    %y = kiln.fused_conv_nhwc %x, %w, %b, %shortcut {activation = "relu", pads = array<i64: 1, 1, 1, 1>, residual_before_activation = true}
        : (tensor<1x56x56x64xf32>, tensor<64x3x3x64xf32>, tensor<64xf32>, tensor<1x56x56x64xf32>)
        -> tensor<1x56x56x64xf32>
    ```
  }];
  let arguments = !con((ins Kiln_FloatTensor:$X, Kiln_FloatTensor:$W,
                            Kiln_OptFloatTensor:$B, Kiln_OptFloatTensor:$residual),
                       Kiln_ConvWindowAttrs,
                       (ins DefaultValuedAttr<Kiln_EpilogueActivationAttr, "\"none\"">:$activation,
                            DefaultValuedAttr<BoolAttr, "false">:$residual_before_activation));
  let results = (outs Kiln_FloatTensor:$Y);
}

#endif // KILN_FUSED_OPS_TD
