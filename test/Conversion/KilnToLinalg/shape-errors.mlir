// RUN: kiln-opt %s --convert-kiln-to-linalg --split-input-file -verify-diagnostics
// Shape-family nodes the CPU lowering rejects, each with a message naming
// the node and what is missing.

// The starts of a Slice decide which elements are read: they must be known.
func.func @slice_runtime_starts(%x: tensor<8x6xf32>, %st: tensor<1xi64>) -> tensor<8x3xf32> {
  %en = kiln.constant dense<[100]> : tensor<1xi64>
  %ax = kiln.constant dense<[1]> : tensor<1xi64>
  %none = kiln.none
  // expected-error @+2 {{cannot lower kiln.slice to the CPU: starts is not a constant}}
  // expected-error @+1 {{failed to legalize operation 'kiln.slice'}}
  %a = kiln.slice %x, %st, %en, %ax, %none : (tensor<8x6xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<8x3xf32>
  return %a : tensor<8x3xf32>
}
