// RUN: kiln-opt %s --convert-kiln-to-linalg --split-input-file -verify-diagnostics
// What the control-flow lowering does not do is reported on the op.

// A scan output whose shape changes from one iteration to the next.
func.func @main(%m: tensor<i64>, %x: tensor<1xf32>) -> tensor<?x?xf32> {
  %none = kiln.none
  // expected-error @+2 {{cannot lower kiln.loop to the CPU: no lowering for this op or these operand types}}
  // expected-error @+1 {{cannot lower kiln.loop to the CPU: scan output 0 (result 1) may change shape from one iteration to the next: not supported yet}}
  %r:2 = kiln.loop %m, %none, %x : (tensor<i64>, none, tensor<1xf32>) -> (tensor<?xf32>, tensor<?x?xf32>) {
  ^bb0(%i: tensor<i64>, %go: tensor<i1>, %acc: tensor<?xf32>):
    %more = kiln.concat %acc, %x {axis = 0 : i64} : (tensor<?xf32>, tensor<1xf32>) -> tensor<?xf32>
    kiln.yield %go, %more, %more : tensor<i1>, tensor<?xf32>, tensor<?xf32>
  }
  return %r#1 : tensor<?x?xf32>
}

// -----

// A scan output's data-dependent length reaches an op that sizes its result
// from the symbolic shapes.
func.func @main(%m: tensor<i64>, %c: tensor<i1>, %x: tensor<2xf32>) -> tensor<?x2xf32> {
  %all = kiln.loop %m, %c : (tensor<i64>, tensor<i1>) -> tensor<?x2xf32> {
  ^bb0(%i: tensor<i64>, %go: tensor<i1>):
    kiln.yield %go, %x : tensor<i1>, tensor<2xf32>
  }
  // expected-error @+1 {{cannot lower kiln.relu to the CPU: dynamic shape: the size of a dynamic dim is not known in terms of the inputs' dims since kiln.loop}}
  %r = kiln.relu %all : tensor<?x2xf32>
  return %r : tensor<?x2xf32>
}
