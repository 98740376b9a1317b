//===- KilnReductionOps.td - Reductions ----------------------*- tablegen -*-===//

#ifndef KILN_REDUCTION_OPS_TD
#define KILN_REDUCTION_OPS_TD

include "kiln/Dialect/KilnBase.td"

def Kiln_ReduceSumOp : Kiln_OnnxOp<"reduce_sum"> {
  let summary = "ONNX ReduceSum";
  let arguments = (ins Kiln_NumericTensor:$data, Kiln_OptI64Tensor:$axes,
                   I64Attr:$keepdims, I64Attr:$noop_with_empty_axes);
  let results = (outs Kiln_NumericTensor:$reduced);
}

#endif // KILN_REDUCTION_OPS_TD
