// RUN: kiln-opt %s --convert-kiln-to-linalg --split-input-file -verify-diagnostics
// What the lowering does not do on dynamic dims yet is reported on the op.

// A lowering that needs static shapes.
func.func @main(%x: tensor<?x8x2x3xf32> {kiln.name = "x"}) -> tensor<?x2x4x6xf32> {
  // expected-error @+1 {{cannot lower kiln.depth_to_space to the CPU: dynamic shape (this op's lowering needs static shapes; give them with --input-shapes=name:AxBxC)}}
  %0 = kiln.depth_to_space %x {blocksize = 2 : i64, mode = "CRD"} : (tensor<?x8x2x3xf32>) -> tensor<?x2x4x6xf32>
  return %0 : tensor<?x2x4x6xf32>
}

// -----

// A dim whose size is not known in terms of the inputs' dims (a slice with
// step 2 over a dynamic dim), reported where it is made and where it is
// used.
func.func @main(%x: tensor<?x4xf32> {kiln.name = "x"}) -> tensor<?x4xf32> {
  %z = kiln.constant dense<0> : tensor<1xi64>
  %end = kiln.constant dense<9223372036854775807> : tensor<1xi64>
  %two = kiln.constant dense<2> : tensor<1xi64>
  // expected-error @+1 {{cannot lower kiln.slice to the CPU: dynamic shape: the size of a dynamic dim of its result is not known in terms of the inputs' dims}}
  %0 = kiln.slice %x, %z, %end, %z, %two : (tensor<?x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x4xf32>
  // expected-error @+1 {{cannot lower kiln.add to the CPU: dynamic shape: the size of a dynamic dim is not known in terms of the inputs' dims since kiln.slice}}
  %1 = kiln.add %0, %0 : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return %1 : tensor<?x4xf32>
}
