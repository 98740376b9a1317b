// RUN: kiln-opt %s --convert-kiln-to-linalg --split-input-file -verify-diagnostics

// A zero point per column of A (not per row) is not an ONNX form.
func.func @bad_zero_point(%a: tensor<2x4xui8>, %b: tensor<4x3xui8>, %az: tensor<4xui8>) -> tensor<2x3xi32> {
  %none = kiln.none
  // expected-error @+2 {{cannot lower kiln.matmul_integer to the CPU: a zero point that is neither per-tensor nor per-row of A / per-column of B}}
  // expected-error @+1 {{cannot lower kiln.matmul_integer to the CPU: no lowering for this op or these operand types}}
  %0 = kiln.matmul_integer %a, %b, %az, %none : (tensor<2x4xui8>, tensor<4x3xui8>, tensor<4xui8>, none) -> tensor<2x3xi32>
  return %0 : tensor<2x3xi32>
}
