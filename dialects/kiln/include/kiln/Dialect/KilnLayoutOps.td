//===- KilnLayoutOps.td - Channels-last (NHWC) convolution and pooling ---*- tablegen -*-===//
//
// Kiln's own ops (no ONNX operator of this name): made by kiln-optimize-layout
// with `prefer-nhwc`. Each is its NCHW ONNX counterpart with the channel dim
// moved last: `kiln.conv_nhwc(X, W)` equals
// `transpose(kiln.conv(transpose(X, [0, n+1, 1..n]), transpose(W, [0, n+1, 1..n])), [0, 2..n+1, 1])`.
// Result types are inferred by the NCHW shape rules (NNShapes.h) on the
// permuted shapes (lib/LayoutOps.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LAYOUT_OPS_TD
#define KILN_LAYOUT_OPS_TD

include "kiln/Dialect/KilnBase.td"
include "kiln/Dialect/KilnWindowAttrs.td"

def Kiln_ConvNhwcOp : Kiln_OnnxOp<"conv_nhwc"> {
  let summary = "Conv on channels-last data, with an OHWI filter";
  let description = [{
    ONNX Conv with the channel dim last. `X` is `N x D1 ... Dn x C`; the
    filter `W` is OHWI: `M x k1 ... kn x C/group` (ONNX's `M x C/group x
    k1 ... kn` with the input-channel dim moved last, the layout cuDNN's
    NHWC kernels and XNNPACK read); the optional bias `B` has `M` elements.
    The result is `N x out1 ... outn x M`. The attributes (`auto_pad`,
    `dilations`, `group`, `kernel_shape`, `pads`, `strides`) index the
    spatial dims in order, exactly as for `kiln.conv`, and every shape rule of
    `kiln.conv` applies. kiln-optimize-layout transposes a constant filter at
    compile time.

    ```mlir
    %y = kiln.conv_nhwc %x, %w, %b {group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>}
        : (tensor<?x224x224x3xf32>, tensor<64x3x3x3xf32>, tensor<64xf32>) -> tensor<?x112x112x64xf32>
    ```
  }];
  let arguments = !con((ins Kiln_FloatTensor:$X, Kiln_FloatTensor:$W,
                            Kiln_OptFloatTensor:$B),
                       Kiln_ConvWindowAttrs);
  let results = (outs Kiln_FloatTensor:$Y);
}

def Kiln_MaxPoolNhwcOp : Kiln_OnnxOp<"max_pool_nhwc"> {
  let summary = "MaxPool on channels-last data (no indices)";
  let description = [{
    ONNX MaxPool with the channel dim last: `X` is `N x D1 ... Dn x C`, the
    result `N x out1 ... outn x C`, the window attributes and output-size
    rules those of `kiln.max_pool` (including `ceil_mode`). Unlike
    `kiln.max_pool` the op has no `Indices` result (and so no
    `storage_order`): kiln-optimize-layout converts a MaxPool only when its
    indices are unused.

    ```mlir
    %y = kiln.max_pool_nhwc %x {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>}
        : (tensor<1x112x112x64xf32>) -> tensor<1x56x56x64xf32>
    ```
  }];
  let arguments = !con((ins RankedTensorOf<[Kiln_Float, I8, UI8]>:$X),
                       Kiln_PoolWindowAttrs);
  let results = (outs RankedTensorOf<[Kiln_Float, I8, UI8]>:$Y);
}

def Kiln_AveragePoolNhwcOp : Kiln_OnnxOp<"average_pool_nhwc"> {
  let summary = "AveragePool on channels-last data";
  let description = [{
    ONNX AveragePool with the channel dim last: `X` is `N x D1 ... Dn x C`,
    the result `N x out1 ... outn x C`; attributes (`count_include_pad`
    included) and output sizes as for `kiln.average_pool`.

    ```mlir
    %y = kiln.average_pool_nhwc %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>}
        : (tensor<?x8x8x16xf32>) -> tensor<?x4x4x16xf32>
    ```
  }];
  let arguments = !con((ins Kiln_FloatTensor:$X), Kiln_PoolWindowAttrs,
                       (ins DefaultValuedAttr<I64Attr, "0">:$count_include_pad));
  let results = (outs Kiln_FloatTensor:$Y);
}

def Kiln_GlobalAveragePoolNhwcOp : Kiln_OnnxOp<"global_average_pool_nhwc"> {
  let summary = "GlobalAveragePool on channels-last data";
  let description = [{
    The mean over every spatial dim of `X` (`N x D1 ... Dn x C`, rank >= 3);
    the result is `N x 1 ... 1 x C`.

    ```mlir
    %y = kiln.global_average_pool_nhwc %x : (tensor<?x7x7x512xf32>) -> tensor<?x1x1x512xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$X);
  let results = (outs Kiln_FloatTensor:$Y);
}

#endif // KILN_LAYOUT_OPS_TD
