// RUN: kiln-opt %s --convert-kiln-to-linalg --split-input-file -verify-diagnostics

// Axes known only at run time, and the shapes do not tell which of the two
// 3-sized dims goes.
func.func @ambiguous_axes(%a: tensor<2x3x3xf32>, %axes: tensor<1xi64>) -> tensor<2x3xf32> {
  // expected-error @+2 {{cannot lower kiln.reduce_sum to the CPU: axes that are not a constant, and that the input and result shapes do not determine}}
  // expected-error @+1 {{cannot lower kiln.reduce_sum to the CPU: no lowering for this op or these operand types}}
  %0 = kiln.reduce_sum %a, %axes {keepdims = 0 : i64} : (tensor<2x3x3xf32>, tensor<1xi64>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
