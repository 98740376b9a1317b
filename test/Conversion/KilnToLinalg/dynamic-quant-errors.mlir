// RUN: kiln-opt %s --convert-kiln-to-linalg --split-input-file -verify-diagnostics
// What the QDQ lowerings keep static on dynamic dims, reported on the op.

// Per-axis parameters along a dynamic dim (one per channel of a run-time
// count).
func.func @main(%x: tensor<?x?xi8> {kiln.name = "x", kiln.dims = ["b", "c"]}) -> tensor<?x?xf32> {
  %s = kiln.constant dense<[0.1, 0.2, 0.3, 0.4]> : tensor<4xf32>
  %z = kiln.constant dense<0> : tensor<4xi8>
  // expected-error @+1 {{cannot lower kiln.dequantize_linear to the CPU: dynamic shape (this op's lowering needs static shapes; give them with --input-shapes=name:AxBxC)}}
  %0 = kiln.dequantize_linear %x, %s, %z {axis = 1 : i64} : (tensor<?x?xi8>, tensor<4xf32>, tensor<4xi8>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// The int8 GEMM's K (A's last dim) is the weight's: static.
func.func @main(%a: tensor<?x?xi8> {kiln.name = "a", kiln.dims = ["m", "k"]}) -> tensor<?x5xf32> {
  %azp = kiln.constant dense<0> : tensor<i8>
  %w = kiln.constant dense<1> : tensor<5x4xi8>
  %none = kiln.none
  %sums = kiln.constant dense<4> : tensor<5xi32>
  %scale = kiln.constant dense<0.5> : tensor<5xf32>
  // expected-error @+1 {{cannot lower kiln.quantized_matmul to the CPU: dynamic shape (this op's lowering needs static shapes; give them with --input-shapes=name:AxBxC)}}
  %y = kiln.quantized_matmul %a, %azp, %w, %none, %sums, %scale, %none, %none, %none
      : (tensor<?x?xi8>, tensor<i8>, tensor<5x4xi8>, none, tensor<5xi32>, tensor<5xf32>, none, none, none) -> tensor<?x5xf32>
  return %y : tensor<?x5xf32>
}

// -----

// MatMulInteger with a zero point per row of A: M must be static.
func.func @main(%a: tensor<?x4xi8> {kiln.name = "a", kiln.dims = ["m", ""]}) -> tensor<?x3xi32> {
  %b = kiln.constant dense<1> : tensor<4x3xi8>
  %azp = kiln.constant dense<[1, 2]> : tensor<2xi8>
  %none = kiln.none
  // expected-error @+1 {{cannot lower kiln.matmul_integer to the CPU: dynamic shape (this op's lowering needs static shapes; give them with --input-shapes=name:AxBxC)}}
  %y = kiln.matmul_integer %a, %b, %azp, %none : (tensor<?x4xi8>, tensor<4x3xi8>, tensor<2xi8>, none) -> tensor<?x3xi32>
  return %y : tensor<?x3xi32>
}
