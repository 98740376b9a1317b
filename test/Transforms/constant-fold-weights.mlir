// RUN: kiln-opt %s -split-input-file -kiln-constant-fold=size-limit=64 | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-constant-fold="size-limit=64 weight-size-limit=64" | FileCheck %s --check-prefix=LIMIT
// A value computed from constants only and used only as a matmul or
// convolution weight (directly or through more such ops) is folded above
// size-limit, up to weight-size-limit: left computed, the Tile, Expand and
// Mul would run, and the weight be transposed, in every run.

// CHECK-LABEL: func.func @tiled_weight
// CHECK: %[[W:.+]] = kiln.constant dense_resource<{{.+}}> : tensor<16x32xf32>
// CHECK-NOT: kiln.tile
// CHECK-NOT: kiln.expand
// CHECK-NOT: kiln.mul
// CHECK: kiln.gemm %arg0, %[[W]], %{{.+}} {transB = 1 : i64}
// LIMIT-LABEL: func.func @tiled_weight
// LIMIT: kiln.tile
// LIMIT: kiln.mul
// LIMIT: kiln.gemm
func.func @tiled_weight(%x: tensor<1x32xf32>) -> tensor<1x16xf32> {
  %rows = kiln.constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0, 24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0]]> : tensor<1x32xf32>
  %repeats = kiln.constant dense<[16, 1]> : tensor<2xi64>
  %tiled = kiln.tile %rows, %repeats : (tensor<1x32xf32>, tensor<2xi64>) -> tensor<16x32xf32>
  %scale = kiln.constant dense<[[1.0], [2.0], [3.0], [4.0], [5.0], [6.0], [7.0], [8.0], [9.0], [10.0], [11.0], [12.0], [13.0], [14.0], [15.0], [16.0]]> : tensor<16x1xf32>
  %shape = kiln.constant dense<[16, 32]> : tensor<2xi64>
  %scales = kiln.expand %scale, %shape : (tensor<16x1xf32>, tensor<2xi64>) -> tensor<16x32xf32>
  %w = kiln.mul %tiled, %scales : (tensor<16x32xf32>, tensor<16x32xf32>) -> tensor<16x32xf32>
  %c = kiln.constant dense<0.5> : tensor<16xf32>
  %y = kiln.gemm %x, %w, %c {alpha = 1.0 : f32, beta = 1.0 : f32, transA = 0 : i64, transB = 1 : i64} : (tensor<1x32xf32>, tensor<16x32xf32>, tensor<16xf32>) -> tensor<1x16xf32>
  return %y : tensor<1x16xf32>
}

// -----

// The same values also read as an activation (an Add with the input): the
// Tile stays computed.
// CHECK-LABEL: func.func @not_only_a_weight
// CHECK: kiln.tile
// CHECK: kiln.gemm
func.func @not_only_a_weight(%x: tensor<1x32xf32>) -> (tensor<1x16xf32>, tensor<16x32xf32>) {
  %rows = kiln.constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0, 24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0]]> : tensor<1x32xf32>
  %repeats = kiln.constant dense<[16, 1]> : tensor<2xi64>
  %tiled = kiln.tile %rows, %repeats : (tensor<1x32xf32>, tensor<2xi64>) -> tensor<16x32xf32>
  %none = kiln.none
  %y = kiln.gemm %x, %tiled, %none {alpha = 1.0 : f32, beta = 1.0 : f32, transA = 0 : i64, transB = 1 : i64} : (tensor<1x32xf32>, tensor<16x32xf32>, none) -> tensor<1x16xf32>
  %s = kiln.add %tiled, %x : (tensor<16x32xf32>, tensor<1x32xf32>) -> tensor<16x32xf32>
  return %y, %s : tensor<1x16xf32>, tensor<16x32xf32>
}

// -----

// A convolution filter expanded from one row per output channel.
// CHECK-LABEL: func.func @expanded_filter
// CHECK: %[[W:.+]] = kiln.constant dense<{{.+}}> : tensor<4x2x3x3xf32>
// CHECK-NOT: kiln.expand
// CHECK: kiln.conv %arg0, %[[W]]
func.func @expanded_filter(%x: tensor<1x2x5x5xf32>) -> tensor<1x4x3x3xf32> {
  %v = kiln.constant dense<[[[[1.0]]], [[[2.0]]], [[[3.0]]], [[[4.0]]]]> : tensor<4x1x1x1xf32>
  %shape = kiln.constant dense<[4, 2, 3, 3]> : tensor<4xi64>
  %w = kiln.expand %v, %shape : (tensor<4x1x1x1xf32>, tensor<4xi64>) -> tensor<4x2x3x3xf32>
  %none = kiln.none
  %y = kiln.conv %x, %w, %none {kernel_shape = array<i64: 3, 3>} : (tensor<1x2x5x5xf32>, tensor<4x2x3x3xf32>, none) -> tensor<1x4x3x3xf32>
  return %y : tensor<1x4x3x3xf32>
}

// -----

// A weight read transposed by the matmul and as it is by a Gather (a tied
// embedding) is not folded into a second, transposed copy.
// CHECK-LABEL: func.func @tied_embedding
// CHECK: kiln.transpose
// CHECK: kiln.gather
func.func @tied_embedding(%h: tensor<1x4xf32>, %ids: tensor<2xi64>) -> (tensor<1x8xf32>, tensor<2x4xf32>) {
  %e = kiln.constant dense<[[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0], [8.0, 9.0, 10.0, 11.0], [12.0, 13.0, 14.0, 15.0], [16.0, 17.0, 18.0, 19.0], [20.0, 21.0, 22.0, 23.0], [24.0, 25.0, 26.0, 27.0], [28.0, 29.0, 30.0, 31.0]]> : tensor<8x4xf32>
  %et = kiln.transpose %e {perm = array<i64: 1, 0>} : (tensor<8x4xf32>) -> tensor<4x8xf32>
  %logits = kiln.matmul %h, %et : (tensor<1x4xf32>, tensor<4x8xf32>) -> tensor<1x8xf32>
  %x = kiln.gather %e, %ids : (tensor<8x4xf32>, tensor<2xi64>) -> tensor<2x4xf32>
  return %logits, %x : tensor<1x8xf32>, tensor<2x4xf32>
}
