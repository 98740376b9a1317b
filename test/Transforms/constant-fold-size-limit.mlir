// RUN: kiln-opt %s -split-input-file -kiln-constant-fold=size-limit=64 | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-constant-fold=size-limit=64 -kiln-pass-statistics -o /dev/null 2>&1 | FileCheck %s --check-prefix=STATS
// size-limit is in bytes of stored constant data: 16 f32 fit, 32 do not; a
// splat is stored as one element whatever its shape; constants that die with
// the folded op do not count.

// CHECK-LABEL: func.func @within_limit
// CHECK: %[[C:.+]] = kiln.constant dense<{{.+}}> : tensor<4x4xf32>
// CHECK-NOT: kiln.transpose
// CHECK: return %[[C]]
func.func @within_limit() -> tensor<4x4xf32> {
  %r = kiln.constant dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]> : tensor<16xi64>
  %f = kiln.cast %r {to = f32} : (tensor<16xi64>) -> tensor<16xf32>
  %s = kiln.constant dense<[4, 4]> : tensor<2xi64>
  %m = kiln.reshape %f, %s : (tensor<16xf32>, tensor<2xi64>) -> tensor<4x4xf32>
  %t = kiln.transpose %m {perm = array<i64: 1, 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return %t : tensor<4x4xf32>
}

// -----

// A result of 128 bytes stays computed; its splat-producing neighbour folds.
// CHECK-LABEL: func.func @above_limit_stays
// CHECK-DAG: kiln.constant dense<2.000000e+00> : tensor<32x32xf32>
// CHECK-DAG: kiln.tile
// CHECK-NOT: kiln.mul
func.func @above_limit_stays() -> (tensor<32xf32>, tensor<32x32xf32>) {
  %v = kiln.constant dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]> : tensor<8xf32>
  %rep = kiln.constant dense<4> : tensor<1xi64>
  %0 = kiln.tile %v, %rep : (tensor<8xf32>, tensor<1xi64>) -> tensor<32xf32>
  %one = kiln.constant dense<1.0> : tensor<32x32xf32>
  %two = kiln.constant dense<2.0> : tensor<f32>
  %1 = kiln.mul %one, %two : (tensor<32x32xf32>, tensor<f32>) -> tensor<32x32xf32>
  return %0, %1 : tensor<32xf32>, tensor<32x32xf32>
}

// -----

// A 100-byte constant used only by the Transpose dies with it: folding adds
// nothing, so it is folded above the limit. Used elsewhere too, it would be
// kept alongside the transposed copy: the fold stays computed.
// CHECK-LABEL: func.func @single_use_weight
// CHECK: %[[T:.+]] = kiln.constant dense<{{\[}}[1.000000e+00, 6.000000e+00, {{.+}}]]> : tensor<5x5xf32>
// CHECK-NOT: kiln.transpose
// CHECK: return %[[T]]
func.func @single_use_weight() -> tensor<5x5xf32> {
  %w = kiln.constant dense<[[1.0, 2.0, 3.0, 4.0, 5.0], [6.0, 7.0, 8.0, 9.0, 10.0], [11.0, 12.0, 13.0, 14.0, 15.0], [16.0, 17.0, 18.0, 19.0, 20.0], [21.0, 22.0, 23.0, 24.0, 25.0]]> : tensor<5x5xf32>
  %0 = kiln.transpose %w {perm = array<i64: 1, 0>} : (tensor<5x5xf32>) -> tensor<5x5xf32>
  return %0 : tensor<5x5xf32>
}

// -----

// CHECK-LABEL: func.func @shared_weight_stays
// CHECK: kiln.transpose
func.func @shared_weight_stays() -> (tensor<5x5xf32>, tensor<5x5xf32>) {
  %w = kiln.constant dense<[[1.0, 2.0, 3.0, 4.0, 5.0], [6.0, 7.0, 8.0, 9.0, 10.0], [11.0, 12.0, 13.0, 14.0, 15.0], [16.0, 17.0, 18.0, 19.0, 20.0], [21.0, 22.0, 23.0, 24.0, 25.0]]> : tensor<5x5xf32>
  %0 = kiln.transpose %w {perm = array<i64: 1, 0>} : (tensor<5x5xf32>) -> tensor<5x5xf32>
  return %0, %w : tensor<5x5xf32>, tensor<5x5xf32>
}

// Cast, Reshape, Transpose, Mul and the single-use Transpose folded; the
// Tile and the shared Transpose skipped, each counted once.
// STATS-LABEL: kiln-constant-fold
// STATS-NEXT: (ops-folded) 5 :
// STATS-NEXT: (batch-norms-folded) 0 :
// STATS-NEXT: (constant-bytes-created) {{[0-9]+}} :
// STATS-NEXT: (skipped-by-size) 2 :
