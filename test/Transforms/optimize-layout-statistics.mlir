// RUN: kiln-opt %s -kiln-optimize-layout="prefer-nhwc=true matmul-weight-layout=nk" --kiln-pass-statistics -o /dev/null 2>&1 | FileCheck %s

// Two convs and a GlobalAveragePool: 3 ops converted, 6 transposes inserted
// around them; 4 cancel in pairs and the one before Flatten becomes a
// reshape: 5 removed, so one transpose (at the input) remains. The Gemm's
// constant weight is relaid.

// CHECK: kiln-optimize-layout
// CHECK-DAG: (transposes-removed) 5 :
// CHECK-DAG: (transposes-inserted) 6 :
// CHECK-DAG: (ops-converted-to-nhwc) 3 :
// CHECK-DAG: (weights-relaid) 1 :
func.func @convs(%x: tensor<1x3x8x8xf32>) -> tensor<1x2xf32> {
  %none = kiln.none
  %w = kiln.constant dense<1.0> : tensor<4x3x3x3xf32>
  %w2 = kiln.constant dense<1.0> : tensor<4x4x3x3xf32>
  %fc = kiln.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]]> : tensor<4x2xf32>
  %c = kiln.conv %x, %w, %none {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, none) -> tensor<1x4x8x8xf32>
  %r = kiln.relu %c : tensor<1x4x8x8xf32>
  %c2 = kiln.conv %r, %w2, %none {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>, none) -> tensor<1x4x8x8xf32>
  %g = kiln.global_average_pool %c2 : (tensor<1x4x8x8xf32>) -> tensor<1x4x1x1xf32>
  %f = kiln.flatten %g : (tensor<1x4x1x1xf32>) -> tensor<1x4xf32>
  %y = kiln.gemm %f, %fc, %none : (tensor<1x4xf32>, tensor<4x2xf32>, none) -> tensor<1x2xf32>
  return %y : tensor<1x2xf32>
}
