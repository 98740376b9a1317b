//===- KilnLayoutOps.td - Channels-last (NHWC) convolution and pooling ---*- tablegen -*-===//
//
// Kiln's own ops (no ONNX operator of this name): made by Kiln's passes, each
// with a decomposition back into ONNX-level kiln ops (kiln-decompose-fused).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LAYOUT_OPS_TD
#define KILN_LAYOUT_OPS_TD

include "kiln/Dialect/KilnBase.td"

#endif // KILN_LAYOUT_OPS_TD
