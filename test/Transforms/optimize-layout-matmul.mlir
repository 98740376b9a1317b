// RUN: kiln-opt %s -split-input-file -kiln-optimize-layout=matmul-weight-layout=nk | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-optimize-layout=matmul-weight-layout=kn | FileCheck %s --check-prefix=KN
// RUN: not kiln-opt %s -split-input-file -kiln-optimize-layout=matmul-weight-layout=xy 2>&1 | FileCheck %s --check-prefix=BAD

// matmul-weight-layout=nk: constant MatMul/Gemm weights stored [N, K] and
// read with Gemm transB = 1; kn (the default) leaves them as they are.

// BAD: error: kiln-optimize-layout: matmul-weight-layout must be kn or nk, got 'xy'

// MatMul with a constant [K, N] weight: Gemm reading it as [N, K].
// CHECK-LABEL: func.func @matmul_2d(
// CHECK-SAME:    %[[A:.+]]: tensor<?x2xf32>
// CHECK-DAG:     %[[B:.+]] = kiln.constant dense<{{\[\[}}1.000000e+00, 4.000000e+00], [2.000000e+00, 5.000000e+00], [3.000000e+00, 6.000000e+00]]> : tensor<3x2xf32>
// CHECK-DAG:     %[[NONE:.+]] = kiln.none
// CHECK:         %[[Y:.+]] = kiln.gemm %[[A]], %[[B]], %[[NONE]] {transB = 1 : i64} : (tensor<?x2xf32>, tensor<3x2xf32>, none) -> tensor<?x3xf32>
// CHECK:         return %[[Y]]
// KN-LABEL: func.func @matmul_2d(
// KN:         kiln.matmul
// KN-NOT:     kiln.gemm
func.func @matmul_2d(%a: tensor<?x2xf32>) -> tensor<?x3xf32> {
  %b = kiln.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %y = kiln.matmul %a, %b : (tensor<?x2xf32>, tensor<2x3xf32>) -> tensor<?x3xf32>
  return %y : tensor<?x3xf32>
}

// -----

// A static rank-3 A is reshaped to 2-D around the Gemm.
// CHECK-LABEL: func.func @matmul_3d_static(
// CHECK-SAME:    %[[A:.+]]: tensor<2x4x2xf32>
// CHECK-DAG:     %[[B:.+]] = kiln.constant dense<{{\[\[}}1.000000e+00, 4.000000e+00], [2.000000e+00, 5.000000e+00], [3.000000e+00, 6.000000e+00]]> : tensor<3x2xf32>
// CHECK-DAG:     %[[S2:.+]] = kiln.constant dense<[8, 2]> : tensor<2xi64>
// CHECK:         %[[A2:.+]] = kiln.reshape %[[A]], %[[S2]] : (tensor<2x4x2xf32>, tensor<2xi64>) -> tensor<8x2xf32>
// CHECK:         %[[G:.+]] = kiln.gemm %[[A2]], %[[B]], %{{.+}} {transB = 1 : i64} : (tensor<8x2xf32>, tensor<3x2xf32>, none) -> tensor<8x3xf32>
// CHECK:         %[[S3:.+]] = kiln.constant dense<[2, 4, 3]> : tensor<3xi64>
// CHECK:         %[[Y:.+]] = kiln.reshape %[[G]], %[[S3]] : (tensor<8x3xf32>, tensor<3xi64>) -> tensor<2x4x3xf32>
// CHECK:         return %[[Y]]
// KN-LABEL: func.func @matmul_3d_static(
// KN:         kiln.matmul
func.func @matmul_3d_static(%a: tensor<2x4x2xf32>) -> tensor<2x4x3xf32> {
  %b = kiln.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %y = kiln.matmul %a, %b : (tensor<2x4x2xf32>, tensor<2x3xf32>) -> tensor<2x4x3xf32>
  return %y : tensor<2x4x3xf32>
}

// -----

// Negative: a dynamic batch dim; the MatMul stays.
// CHECK-LABEL: func.func @neg_matmul_3d_dynamic(
// CHECK:         kiln.constant {{.*}} : tensor<2x3xf32>
// CHECK:         kiln.matmul
// CHECK-NOT:     kiln.gemm
// KN-LABEL: func.func @neg_matmul_3d_dynamic(
func.func @neg_matmul_3d_dynamic(%a: tensor<?x4x2xf32>) -> tensor<?x4x3xf32> {
  %b = kiln.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %y = kiln.matmul %a, %b : (tensor<?x4x2xf32>, tensor<2x3xf32>) -> tensor<?x4x3xf32>
  return %y : tensor<?x4x3xf32>
}

// -----

// Gemm with transB = 0 gets the transposed constant and transB = 1 (its
// other attributes kept); one with transB = 1 already is left alone.
// CHECK-LABEL: func.func @gemm(
// CHECK-SAME:    %[[A:[^:]+]]: tensor<4x2xf32>, %[[C:[^:]+]]: tensor<3xf32>
// CHECK:         %[[B:.+]] = kiln.constant dense<{{\[\[}}1.000000e+00, 4.000000e+00], [2.000000e+00, 5.000000e+00], [3.000000e+00, 6.000000e+00]]> : tensor<3x2xf32>
// CHECK:         %[[BT:.+]] = kiln.constant dense<{{\[\[}}1.000000e+00, 4.000000e+00], [2.000000e+00, 5.000000e+00], [3.000000e+00, 6.000000e+00]]> : tensor<3x2xf32>
// CHECK:         kiln.gemm %[[A]], %[[B]], %[[C]] {alpha = 2.000000e+00 : f32, transB = 1 : i64} : (tensor<4x2xf32>, tensor<3x2xf32>, tensor<3xf32>)
// CHECK:         kiln.gemm %[[A]], %[[BT]], %[[C]] {transB = 1 : i64}
// KN-LABEL: func.func @gemm(
// KN:         kiln.gemm %{{.+}}, %{{.+}}, %{{.+}} {alpha = 2.000000e+00 : f32} : (tensor<4x2xf32>, tensor<2x3xf32>, tensor<3xf32>)
func.func @gemm(%a: tensor<4x2xf32>, %c: tensor<3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  %b = kiln.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %bt = kiln.constant dense<[[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]]> : tensor<3x2xf32>
  %y = kiln.gemm %a, %b, %c {alpha = 2.0 : f32} : (tensor<4x2xf32>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %z = kiln.gemm %a, %bt, %c {transB = 1 : i64} : (tensor<4x2xf32>, tensor<3x2xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  return %y, %z : tensor<4x3xf32>, tensor<4x3xf32>
}

// -----

// A weight shared by two MatMuls is transposed once.
// CHECK-LABEL: func.func @shared_weight(
// CHECK:         %[[B:.+]] = kiln.constant dense<{{\[\[}}1.000000e+00, 4.000000e+00], [2.000000e+00, 5.000000e+00], [3.000000e+00, 6.000000e+00]]> : tensor<3x2xf32>
// CHECK-NOT:     kiln.constant
// CHECK:         kiln.gemm %{{.+}}, %[[B]]
// CHECK:         kiln.gemm %{{.+}}, %[[B]]
// KN-LABEL: func.func @shared_weight(
func.func @shared_weight(%a: tensor<1x2xf32>, %b: tensor<5x2xf32>) -> (tensor<1x3xf32>, tensor<5x3xf32>) {
  %w = kiln.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %y = kiln.matmul %a, %w : (tensor<1x2xf32>, tensor<2x3xf32>) -> tensor<1x3xf32>
  %z = kiln.matmul %b, %w : (tensor<5x2xf32>, tensor<2x3xf32>) -> tensor<5x3xf32>
  return %y, %z : tensor<1x3xf32>, tensor<5x3xf32>
}

// -----

// Negative: a weight that is not a constant.
// CHECK-LABEL: func.func @neg_runtime_weight(
// CHECK:         kiln.matmul
// KN-LABEL: func.func @neg_runtime_weight(
func.func @neg_runtime_weight(%a: tensor<4x2xf32>, %b: tensor<2x3xf32>) -> tensor<4x3xf32> {
  %y = kiln.matmul %a, %b : (tensor<4x2xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}
