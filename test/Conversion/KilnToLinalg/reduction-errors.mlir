// RUN: kiln-opt %s --convert-kiln-to-linalg --split-input-file -verify-diagnostics

// Axes computed at run time decide the result's shape: not supported.
func.func @dynamic_axes(%a: tensor<2x4xf32>, %axes: tensor<1xi64>) -> tensor<2x1xf32> {
  // expected-error @+2 {{cannot lower kiln.reduce_sum to the CPU: axes that are not a constant}}
  // expected-error @+1 {{failed to legalize operation 'kiln.reduce_sum'}}
  %0 = kiln.reduce_sum %a, %axes : (tensor<2x4xf32>, tensor<1xi64>) -> tensor<2x1xf32>
  return %0 : tensor<2x1xf32>
}

// -----

func.func @l2_int(%a: tensor<2x4xi32>) -> tensor<1x1xi32> {
  %none = kiln.none
  // expected-error @+2 {{cannot lower kiln.reduce_l2 to the CPU: integer input (only float types are supported for this reduction)}}
  // expected-error @+1 {{failed to legalize operation 'kiln.reduce_l2'}}
  %0 = kiln.reduce_l2 %a, %none : (tensor<2x4xi32>, none) -> tensor<1x1xi32>
  return %0 : tensor<1x1xi32>
}
