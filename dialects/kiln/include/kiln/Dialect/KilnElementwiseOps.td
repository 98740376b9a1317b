//===- KilnElementwiseOps.td - Elementwise ops ---------------*- tablegen -*-===//

#ifndef KILN_ELEMENTWISE_OPS_TD
#define KILN_ELEMENTWISE_OPS_TD

include "kiln/Dialect/KilnBase.td"

def Kiln_ReluOp : Kiln_SameTypeUnaryOp<"relu", Kiln_NumericTensor> {
  let summary = "ONNX Relu: max(x, 0)";
  let description = [{
    ```mlir
    %y = kiln.relu %x : tensor<2x3xf32>
    ```
  }];
}

def Kiln_AddOp : Kiln_OnnxOp<"add", [Commutative]> {
  let summary = "ONNX Add, with numpy broadcasting";
  let description = [{
    ```mlir
    %c = kiln.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    ```
  }];
  let arguments = (ins Kiln_NumericTensor:$A, Kiln_NumericTensor:$B);
  let results = (outs Kiln_NumericTensor:$C);
}

#endif // KILN_ELEMENTWISE_OPS_TD
