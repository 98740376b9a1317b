//===- KilnNNOps.td - Linear algebra and neural-network ops --*- tablegen -*-===//

#ifndef KILN_NN_OPS_TD
#define KILN_NN_OPS_TD

include "kiln/Dialect/KilnBase.td"

def Kiln_MatMulOp : Kiln_OnnxOp<"matmul"> {
  let summary = "ONNX MatMul (numpy matmul semantics)";
  let arguments = (ins Kiln_NumericTensor:$A, Kiln_NumericTensor:$B);
  let results = (outs Kiln_NumericTensor:$Y);
}

#endif // KILN_NN_OPS_TD
