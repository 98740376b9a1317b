// RUN: kiln-opt %s --convert-kiln-to-linalg --split-input-file -verify-diagnostics
// Shape-family nodes the CPU lowering rejects, each with a message naming
// the node and what is missing.

// NonZero's output length depends on the data.
func.func @non_zero(%x: tensor<3x4xf32>) -> tensor<2x5xi64> {
  // expected-error @+2 {{cannot lower kiln.non_zero to the CPU: the number of non-zero elements (the output shape) is only known at run time}}
  // expected-error @+1 {{cannot lower kiln.non_zero to the CPU: no lowering for this op or these operand types}}
  %y = "kiln.non_zero"(%x) : (tensor<3x4xf32>) -> tensor<2x5xi64>
  return %y : tensor<2x5xi64>
}

// -----

// A scatter reduction is arithmetic: not defined on bool.
func.func @scatter_bool_add(%x: tensor<4xi1>, %i: tensor<2x1xi64>, %u: tensor<2xi1>) -> tensor<4xi1> {
  // expected-error @+2 {{cannot lower kiln.scatter_nd to the CPU: reduction 'add' on bool}}
  // expected-error @+1 {{cannot lower kiln.scatter_nd to the CPU: no lowering for this op or these operand types}}
  %y = kiln.scatter_nd %x, %i, %u {reduction = "add"} : (tensor<4xi1>, tensor<2x1xi64>, tensor<2xi1>) -> tensor<4xi1>
  return %y : tensor<4xi1>
}
