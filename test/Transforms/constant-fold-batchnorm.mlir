// RUN: kiln-opt %s -split-input-file -kiln-constant-fold | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-constant-fold=fold-batch-norm=false | FileCheck %s --check-prefix=OFF
// RUN: kiln-opt %s -split-input-file -kiln-constant-fold -kiln-pass-statistics -o /dev/null 2>&1 | FileCheck %s --check-prefix=STATS
// Inference BatchNormalization folded into the Conv or Gemm before it:
// s = scale / sqrt(var + epsilon), W' = W * s, B' = (B - mean) * s + beta.

// Without a Conv bias. s = [1 / sqrt(3 + 1), 2 / sqrt(0 + 1)] = [0.5, 2].
// CHECK-LABEL: func.func @conv_without_bias
// CHECK-SAME: (%[[X:.+]]: tensor<1x1x2x2xf32>)
// CHECK-DAG: %[[W:.+]] = kiln.constant dense<{{\[}}{{\[}}{{\[}}[1.000000e+00]]], {{\[}}{{\[}}[6.000000e+00]]]]> : tensor<2x1x1x1xf32>
// CHECK-DAG: %[[B:.+]] = kiln.constant dense<[0.000000e+00, -1.000000e+00]> : tensor<2xf32>
// CHECK: %[[Y:.+]] = kiln.conv %[[X]], %[[W]], %[[B]]
// CHECK-NOT: kiln.batch_normalization
// CHECK: return %[[Y]]
// OFF-LABEL: func.func @conv_without_bias
// OFF: kiln.batch_normalization
func.func @conv_without_bias(%x: tensor<1x1x2x2xf32>) -> tensor<1x2x2x2xf32> {
  %none = kiln.none
  %w = kiln.constant dense<[[[[2.0]]], [[[3.0]]]]> : tensor<2x1x1x1xf32>
  %y = kiln.conv %x, %w, %none {kernel_shape = array<i64: 1, 1>} : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>, none) -> tensor<1x2x2x2xf32>
  %scale = kiln.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %beta = kiln.constant dense<[0.5, -1.0]> : tensor<2xf32>
  %mean = kiln.constant dense<[1.0, 0.0]> : tensor<2xf32>
  %var = kiln.constant dense<[3.0, 0.0]> : tensor<2xf32>
  %z = kiln.batch_normalization %y, %scale, %beta, %mean, %var {epsilon = 1.0 : f32} : (tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  return %z : tensor<1x2x2x2xf32>
}

// -----

// With a Conv bias [4, 1] and a splat scale 1: s = [0.5, 1], W' = [1, 3],
// B' = [(4 - 1) * 0.5 + 0.5, (1 - 0) * 1 - 1] = [2, 0].
// CHECK-LABEL: func.func @conv_with_bias
// CHECK-DAG: %[[W:.+]] = kiln.constant dense<{{\[}}{{\[}}{{\[}}[1.000000e+00]]], {{\[}}{{\[}}[3.000000e+00]]]]> : tensor<2x1x1x1xf32>
// CHECK-DAG: %[[B:.+]] = kiln.constant dense<[2.000000e+00, 0.000000e+00]> : tensor<2xf32>
// CHECK: kiln.conv %{{.+}}, %[[W]], %[[B]]
// CHECK-NOT: kiln.batch_normalization
func.func @conv_with_bias(%x: tensor<1x1x2x2xf32>) -> tensor<1x2x2x2xf32> {
  %w = kiln.constant dense<[[[[2.0]]], [[[3.0]]]]> : tensor<2x1x1x1xf32>
  %b = kiln.constant dense<[4.0, 1.0]> : tensor<2xf32>
  %y = kiln.conv %x, %w, %b {kernel_shape = array<i64: 1, 1>} : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  %scale = kiln.constant dense<1.0> : tensor<2xf32>
  %beta = kiln.constant dense<[0.5, -1.0]> : tensor<2xf32>
  %mean = kiln.constant dense<[1.0, 0.0]> : tensor<2xf32>
  %var = kiln.constant dense<[3.0, 0.0]> : tensor<2xf32>
  %z = kiln.batch_normalization %y, %scale, %beta, %mean, %var {epsilon = 1.0 : f32} : (tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  return %z : tensor<1x2x2x2xf32>
}

// -----

// A Conv whose result has another user keeps its BatchNormalization.
// CHECK-LABEL: func.func @conv_with_other_user_stays
// CHECK: kiln.conv
// CHECK: kiln.batch_normalization
func.func @conv_with_other_user_stays(%x: tensor<1x1x2x2xf32>) -> (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) {
  %none = kiln.none
  %w = kiln.constant dense<[[[[2.0]]], [[[3.0]]]]> : tensor<2x1x1x1xf32>
  %y = kiln.conv %x, %w, %none : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>, none) -> tensor<1x2x2x2xf32>
  %p = kiln.constant dense<1.0> : tensor<2xf32>
  %z = kiln.batch_normalization %y, %p, %p, %p, %p : (tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  return %y, %z : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
}

// -----

// Non-constant weights or statistics: nothing to fold.
// CHECK-LABEL: func.func @non_constant_stays
// CHECK: kiln.batch_normalization
// CHECK: kiln.batch_normalization
func.func @non_constant_stays(%x: tensor<1x1x2x2xf32>, %w: tensor<2x1x1x1xf32>, %mean: tensor<2xf32>) -> (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) {
  %none = kiln.none
  %y = kiln.conv %x, %w, %none : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>, none) -> tensor<1x2x2x2xf32>
  %p = kiln.constant dense<1.0> : tensor<2xf32>
  %z = kiln.batch_normalization %y, %p, %p, %p, %p : (tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  %cw = kiln.constant dense<[[[[2.0]]], [[[3.0]]]]> : tensor<2x1x1x1xf32>
  %y2 = kiln.conv %x, %cw, %none : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>, none) -> tensor<1x2x2x2xf32>
  %z2 = kiln.batch_normalization %y2, %p, %p, %mean, %p : (tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  return %z, %z2 : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
}

// -----

// Gemm with transB = 1 (B is N x K): rows of B scale, and C' = (beta_gemm *
// C - mean) * s + beta with beta_gemm then 1: s = [0.5, 2],
// C' = [(2 * 1 - 1) * 0.5 + 0.5, (2 * 2 - 0) * 2 - 1] = [1, 7].
// CHECK-LABEL: func.func @gemm
// CHECK-DAG: %[[W:.+]] = kiln.constant dense<{{\[}}[5.000000e-01, 1.000000e+00, 1.500000e+00], [8.000000e+00, 1.000000e+01, 1.200000e+01]]> : tensor<2x3xf32>
// CHECK-DAG: %[[C:.+]] = kiln.constant dense<[1.000000e+00, 7.000000e+00]> : tensor<2xf32>
// CHECK: kiln.gemm %{{.+}}, %[[W]], %[[C]] {transB = 1 : i64}
// CHECK-NOT: kiln.batch_normalization
func.func @gemm(%a: tensor<4x3xf32>) -> tensor<4x2xf32> {
  %b = kiln.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %c = kiln.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %y = kiln.gemm %a, %b, %c {beta = 2.0 : f32, transB = 1 : i64} : (tensor<4x3xf32>, tensor<2x3xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  %scale = kiln.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %beta = kiln.constant dense<[0.5, -1.0]> : tensor<2xf32>
  %mean = kiln.constant dense<[1.0, 0.0]> : tensor<2xf32>
  %var = kiln.constant dense<[3.0, 0.0]> : tensor<2xf32>
  %z = kiln.batch_normalization %y, %scale, %beta, %mean, %var {epsilon = 1.0 : f32} : (tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  return %z : tensor<4x2xf32>
}

// Three BatchNormalizations folded: new weights and biases of 8 + 8 (twice)
// and 24 + 8 bytes (Gemm) are 64 bytes of constants.
// STATS-LABEL: kiln-constant-fold
// STATS-NEXT: (ops-folded) 0 :
// STATS-NEXT: (batch-norms-folded) 3 :
// STATS-NEXT: (constant-bytes-created) 64 :
// STATS-NEXT: (skipped-by-size) 0 :
