//===- KilnAttentionOps.td - kiln.attention and kiln.linear_attention ---*- tablegen -*-===//
//
// Kiln's own ops (no ONNX operator of this name): made by Kiln's passes, each
// with a decomposition back into ONNX-level kiln ops (kiln-decompose-fused).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_ATTENTION_OPS_TD
#define KILN_ATTENTION_OPS_TD

include "kiln/Dialect/KilnBase.td"

#endif // KILN_ATTENTION_OPS_TD
