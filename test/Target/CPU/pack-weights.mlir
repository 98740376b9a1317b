// kiln-cpu-pack-weights: a [K, N] weight read as MatMul's (or Gemm's) B is
// stored as [ceil(N / panel), K, panel] column panels, zero-padded, and the
// ops read it through a transpose -> collapse -> slice view, which
// kiln-cpu-tile-and-vectorize folds into its thread blocks
// (tile-and-vectorize-panels.mlir).
// RUN: kiln-opt %s -split-input-file --kiln-cpu-pack-weights="panel=4 min-bytes=0" | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kiln-cpu-pack-weights="panel=4 min-bytes=0 skip-bf16=true" | FileCheck %s --check-prefix=AMX

// CHECK-LABEL: func.func @main(
// CHECK-SAME: %arg1: tensor<2x2x4xf32> {kiln.weight = "w", kiln.weight_value = dense_resource<[[W:w.panels]]> : tensor<2x2x4xf32>}
// CHECK: %[[E:.+]] = tensor.empty() : tensor<2x2x4xf32>
// CHECK: %[[T:.+]] = linalg.transpose ins(%arg1 : tensor<2x2x4xf32>) outs(%[[E]] : tensor<2x2x4xf32>) permutation = [1, 0, 2]
// CHECK: %[[C:.+]] = tensor.collapse_shape %[[T]] {{\[\[}}0], [1, 2]] : tensor<2x2x4xf32> into tensor<2x8xf32>
// CHECK: %[[S:.+]] = tensor.extract_slice %[[C]][0, 0] [2, 6] [1, 1] : tensor<2x8xf32> to tensor<2x6xf32>
// CHECK: kiln.matmul %arg0, %[[S]] : (tensor<3x2xf32>, tensor<2x6xf32>) -> tensor<3x6xf32>
// The panels of W = [[1 .. 6] [7 .. 12]] (after the 4-byte alignment
// header): [1 2 3 4] [7 8 9 10], then [5 6 0 0] [11 12 0 0].
// CHECK: [[W]]: "0x100000000000803F0000004000004040000080400000E0400000004100001041000020410000A0400000C040000000000000000000003041000040410000000000000000"
func.func @main(%x: tensor<3x2xf32> {kiln.name = "x"}, %w: tensor<2x6xf32> {kiln.weight = "w", kiln.weight_value = dense<[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [7.0, 8.0, 9.0, 10.0, 11.0, 12.0]]> : tensor<2x6xf32>}) -> tensor<3x6xf32> {
  %y = kiln.matmul %x, %w : (tensor<3x2xf32>, tensor<2x6xf32>) -> tensor<3x6xf32>
  return %y : tensor<3x6xf32>
}

// -----

// A tied LM head (Gather of the columns and the matmul): packed, the Gather
// reads the view too (the tile pass re-indexes its tensor.extract). Gemm
// without transB is packed; a weight that an elementwise op reads, or no
// wider than one panel, stays [K, N].
// CHECK-LABEL: func.func @main(
// CHECK-SAME: %arg1: tensor<2x2x4xf32> {kiln.weight = "head"
// CHECK-SAME: %arg2: tensor<2x3x4xf32> {kiln.weight = "g"
// CHECK-SAME: %arg3: tensor<2x8xf32> {kiln.weight = "other"
// CHECK-SAME: %arg4: tensor<2x4xf32> {kiln.weight = "narrow"
// CHECK: %[[G:.+]] = linalg.transpose ins(%arg2
// CHECK: %[[GC:.+]] = tensor.collapse_shape %[[G]]
// CHECK: %[[H:.+]] = linalg.transpose ins(%arg1
// CHECK: %[[HC:.+]] = tensor.collapse_shape %[[H]]
// CHECK: kiln.gather %[[HC]], %arg0 {axis = 1 : i64}
// CHECK: kiln.matmul %{{.+}}, %[[HC]]
// CHECK: kiln.gemm %{{.+}}, %[[GC]]
// CHECK: kiln.matmul %{{.+}}, %arg3
// CHECK: kiln.add %arg3
// CHECK: kiln.matmul %{{.+}}, %arg4
func.func @main(%ids: tensor<1x2xi64> {kiln.name = "ids"},
                %head: tensor<2x8xf32> {kiln.weight = "head", kiln.weight_value = dense<[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], [9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0]]> : tensor<2x8xf32>},
                %g: tensor<3x8xf32> {kiln.weight = "g", kiln.weight_value = dense<[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], [9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]]> : tensor<3x8xf32>},
                %other: tensor<2x8xf32> {kiln.weight = "other", kiln.weight_value = dense<[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], [9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0]]> : tensor<2x8xf32>},
                %narrow: tensor<2x4xf32> {kiln.weight = "narrow", kiln.weight_value = dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]]> : tensor<2x4xf32>})
    -> (tensor<1x2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x4xf32>) {
  %cols = kiln.gather %head, %ids {axis = 1 : i64} : (tensor<2x8xf32>, tensor<1x2xi64>) -> tensor<2x1x2xf32>
  %rows = kiln.transpose %cols {perm = array<i64: 1, 2, 0>} : (tensor<2x1x2xf32>) -> tensor<1x2x2xf32>
  %logits = kiln.matmul %rows, %head : (tensor<1x2x2xf32>, tensor<2x8xf32>) -> tensor<1x2x8xf32>
  %flat = kiln.constant dense<[2, 2]> : tensor<2xi64>
  %h = kiln.reshape %rows, %flat : (tensor<1x2x2xf32>, tensor<2xi64>) -> tensor<2x2xf32>
  %none = kiln.none
  %h3 = kiln.constant dense<1.0> : tensor<2x3xf32>
  %y = kiln.gemm %h3, %g, %none {alpha = 1.0 : f32, beta = 1.0 : f32, transA = 0 : i64, transB = 0 : i64} : (tensor<2x3xf32>, tensor<3x8xf32>, none) -> tensor<2x8xf32>
  %z = kiln.matmul %h, %other : (tensor<2x2xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %a = kiln.add %other, %other : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %n = kiln.matmul %h, %narrow : (tensor<2x2xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %logits, %y, %z, %a, %n : tensor<1x2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x4xf32>
}

// -----

// bf16 weights: packed, except for the matmuls the AMX-BF16 kernel takes
// (skip-bf16: 4 static rows or more), which it reads row-major.
// CHECK-LABEL: func.func @main(
// CHECK-SAME: %arg1: tensor<2x2x4xbf16>
// AMX: func.func @main(%arg0: tensor<4x2xbf16> {kiln.name = "x"}, %arg1: tensor<2x8xbf16>
// AMX-NEXT: kiln.matmul %arg0, %arg1
func.func @main(%x: tensor<4x2xbf16> {kiln.name = "x"}, %w: tensor<2x8xbf16> {kiln.weight = "w", kiln.weight_value = dense<[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], [9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0]]> : tensor<2x8xbf16>}) -> tensor<4x8xbf16> {
  %y = kiln.matmul %x, %w : (tensor<4x2xbf16>, tensor<2x8xbf16>) -> tensor<4x8xbf16>
  return %y : tensor<4x8xbf16>
}

// -----

// Fewer rows (a decode step's one) or a run-time row count are the tile
// pass's vectorized kernel on AMX targets too: their weights are packed.
// CHECK-LABEL: func.func @main(%arg0: tensor<1x2xbf16>
// CHECK-SAME: %arg2: tensor<2x2x4xbf16>
// CHECK-SAME: %arg3: tensor<2x2x4xbf16>
// AMX-LABEL: func.func @main(%arg0: tensor<1x2xbf16>
// AMX-SAME: %arg2: tensor<2x2x4xbf16>
// AMX-SAME: %arg3: tensor<2x2x4xbf16>
func.func @main(%x: tensor<1x2xbf16> {kiln.name = "x"}, %d: tensor<?x2xbf16> {kiln.name = "d"},
                %w: tensor<2x8xbf16> {kiln.weight = "w", kiln.weight_value = dense<[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], [9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0]]> : tensor<2x8xbf16>},
                %v: tensor<2x8xbf16> {kiln.weight = "v", kiln.weight_value = dense<[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], [9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0]]> : tensor<2x8xbf16>}) -> (tensor<1x8xbf16>, tensor<?x8xbf16>) {
  %y = kiln.matmul %x, %w : (tensor<1x2xbf16>, tensor<2x8xbf16>) -> tensor<1x8xbf16>
  %z = kiln.matmul %d, %v : (tensor<?x2xbf16>, tensor<2x8xbf16>) -> tensor<?x8xbf16>
  return %y, %z : tensor<1x8xbf16>, tensor<?x8xbf16>
}
