//===- KilnWindowAttrs.td - Conv and pooling attribute lists -*- tablegen -*-===//
//
// The sliding-window attributes shared by the convolutions (NN and
// quantization families) and the pools, spliced into op arguments with
// !con. Their C++ counterpart is kiln::WindowAttrs (NNShapes.h).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_WINDOW_ATTRS_TD
#define KILN_WINDOW_ATTRS_TD

include "kiln/Dialect/KilnBase.td"

/// Conv, ConvTranspose, ConvInteger, QLinearConv. dilations, kernel_shape,
/// pads and strides default by rank (1s, W's spatial dims, 0s, 1s).
defvar Kiln_ConvWindowAttrs = (ins
    DefaultValuedAttr<StrAttr, "\"NOTSET\"">:$auto_pad,
    OptionalAttr<DenseI64ArrayAttr>:$dilations,
    DefaultValuedAttr<I64Attr, "1">:$group,
    OptionalAttr<DenseI64ArrayAttr>:$kernel_shape,
    OptionalAttr<DenseI64ArrayAttr>:$pads,
    OptionalAttr<DenseI64ArrayAttr>:$strides);

/// MaxPool, AveragePool, LpPool: kernel_shape is required.
defvar Kiln_PoolWindowAttrs = (ins
    DefaultValuedAttr<StrAttr, "\"NOTSET\"">:$auto_pad,
    DefaultValuedAttr<I64Attr, "0">:$ceil_mode,
    OptionalAttr<DenseI64ArrayAttr>:$dilations,
    DenseI64ArrayAttr:$kernel_shape,
    OptionalAttr<DenseI64ArrayAttr>:$pads,
    OptionalAttr<DenseI64ArrayAttr>:$strides);

#endif // KILN_WINDOW_ATTRS_TD
