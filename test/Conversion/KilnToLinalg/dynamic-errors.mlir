// RUN: kiln-opt %s --convert-kiln-to-linalg --split-input-file -verify-diagnostics
// What the lowering does not do on dynamic dims yet is reported on the op.

// A lowering that needs static shapes.
func.func @main(%x: tensor<?x4xf32> {kiln.name = "x"}) -> tensor<?x4xf32> {
  %k = kiln.constant dense<1> : tensor<i64>
  // expected-error @+1 {{cannot lower kiln.cum_sum to the CPU: dynamic shape (this op's lowering needs static shapes; give them with --input-shapes=name:AxBxC)}}
  %0 = kiln.cum_sum %x, %k : (tensor<?x4xf32>, tensor<i64>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// A dim whose size is not known in terms of the inputs' dims (a slice to a
// run-time end, which may be clamped), reported where it is used.
func.func @main(%x: tensor<?x4xf32> {kiln.name = "x"}, %t: tensor<8x4xf32>) -> tensor<?x4xf32> {
  %s = kiln.shape %x {end = 1 : i64} : (tensor<?x4xf32>) -> tensor<1xi64>
  %z = kiln.constant dense<0> : tensor<1xi64>
  %none = kiln.none
  // expected-error @+1 {{cannot lower kiln.slice to the CPU: dynamic shape (this op's lowering needs static shapes}}
  %0 = kiln.slice %t, %z, %s, %z, %none : (tensor<8x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<?x4xf32>
  // expected-error @+1 {{cannot lower kiln.add to the CPU: dynamic shape: the size of a dynamic dim is not known in terms of the inputs' dims since kiln.slice}}
  %1 = kiln.add %0, %x : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return %1 : tensor<?x4xf32>
}
