// RUN: kiln-opt %s --convert-kiln-to-linalg --split-input-file | FileCheck %s
// A matmul whose B is a splat constant c (ConstantOfShape, or an Expand of
// one value: how some exporters write weights) is c * (the row sums of A)
// in every column: a reduction over K and a broadcast, never a GEMM on a
// filled K x N buffer, nor a transpose of one (transB).

// CHECK-LABEL: func.func @gemm_splat_transb
// CHECK-NOT: linalg.transpose
// CHECK-NOT: linalg.matmul
// CHECK: %[[SUMS:.+]] = linalg.generic {{.+}} iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<2x8xf32>) outs(%{{.+}} : tensor<2xf32>)
// CHECK: arith.addf
// CHECK: %[[P:.+]] = linalg.generic {{.+}} iterator_types = ["parallel", "parallel"]} ins(%[[SUMS]] : tensor<2xf32>) outs(%{{.+}} : tensor<2x6xf32>)
// CHECK: arith.constant 2.500000e-01 : f32
// CHECK: arith.mulf
// CHECK: linalg.generic {{.+}} ins(%[[P]], %arg1 : tensor<2x6xf32>, tensor<6xf32>)
// CHECK-NOT: linalg.matmul
func.func @gemm_splat_transb(%a: tensor<2x8xf32>, %c: tensor<6xf32>) -> tensor<2x6xf32> {
  %b = kiln.constant dense<0.25> : tensor<6x8xf32>
  %0 = kiln.gemm %a, %b, %c {alpha = 1.0 : f32, beta = 1.0 : f32, transA = 0 : i64, transB = 1 : i64} : (tensor<2x8xf32>, tensor<6x8xf32>, tensor<6xf32>) -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}

// -----

// fused_matmul (trans_b, bias, ReLU) on a batched A: the sums keep the
// batch dims, the epilogue follows.
// CHECK-LABEL: func.func @fused_matmul_splat
// CHECK-NOT: linalg.transpose
// CHECK-NOT: linalg.matmul
// CHECK: %[[SUMS:.+]] = linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%arg0 : tensor<3x2x8xf32>) outs(%{{.+}} : tensor<3x2xf32>)
// CHECK: %[[P:.+]] = linalg.generic {{.+}} ins(%[[SUMS]] : tensor<3x2xf32>) outs(%{{.+}} : tensor<3x2x6xf32>)
// CHECK: arith.constant -5.000000e-01 : f32
// CHECK: linalg.generic {{.+}} ins(%[[P]], %arg1 : tensor<3x2x6xf32>, tensor<6xf32>)
// CHECK: arith.maximumf
// CHECK-NOT: linalg.matmul
func.func @fused_matmul_splat(%a: tensor<3x2x8xf32>, %bias: tensor<6xf32>) -> tensor<3x2x6xf32> {
  %b = kiln.constant dense<-0.5> : tensor<6x8xf32>
  %none = kiln.none
  %0 = kiln.fused_matmul %a, %b, %bias, %none {activation = "relu", trans_b = true} : (tensor<3x2x8xf32>, tensor<6x8xf32>, tensor<6xf32>, none) -> tensor<3x2x6xf32>
  return %0 : tensor<3x2x6xf32>
}

// -----

// MatMul with a splat B [K, N].
// CHECK-LABEL: func.func @matmul_splat
// CHECK-NOT: linalg.matmul
// CHECK: linalg.generic {{.+}} iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<4x8xf32>)
// CHECK: arith.constant 3.000000e+00 : f32
// CHECK-NOT: linalg.matmul
func.func @matmul_splat(%a: tensor<4x8xf32>) -> tensor<4x5xf32> {
  %b = kiln.constant dense<3.0> : tensor<8x5xf32>
  %0 = kiln.matmul %a, %b : (tensor<4x8xf32>, tensor<8x5xf32>) -> tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}

// -----

// A B that is not a splat keeps the GEMM.
// CHECK-LABEL: func.func @matmul_dense
// CHECK: linalg.matmul
func.func @matmul_dense(%a: tensor<4x2xf32>) -> tensor<4x2xf32> {
  %b = kiln.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %0 = kiln.matmul %a, %b : (tensor<4x2xf32>, tensor<2x2xf32>) -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}
