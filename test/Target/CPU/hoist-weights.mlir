// kiln-hoist-weights: constants above min-bytes become arguments of @main
// after the graph inputs, named after their initializer, their elements in
// kiln.weight_value; splats and small constants stay.
// RUN: kiln-opt %s --kiln-hoist-weights=min-bytes=8 | FileCheck %s

// CHECK-LABEL: func.func @main(
// CHECK-SAME: %arg0: tensor<2x2xf32> {kiln.name = "x"}
// CHECK-SAME: %arg1: tensor<2x2xf32> {kiln.weight = "fc.weight", kiln.weight_value = dense<{{\[\[}}1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>}
// CHECK-NOT: %arg2
// CHECK: kiln.constant dense<5.000000e-01> : tensor<2x2xf32>
// CHECK: kiln.constant dense<1.000000e+00> : tensor<1xf32>
// CHECK: kiln.matmul %arg0, %arg1
func.func @main(%x: tensor<2x2xf32> {kiln.name = "x"}) -> tensor<2x2xf32> {
  %w = kiln.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32> loc("fc.weight")
  %s = kiln.constant dense<0.5> : tensor<2x2xf32>
  %c = kiln.constant dense<1.0> : tensor<1xf32>
  %m = kiln.matmul %x, %w : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %a = kiln.add %m, %s : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %b = kiln.add %a, %c : (tensor<2x2xf32>, tensor<1xf32>) -> tensor<2x2xf32>
  return %b : tensor<2x2xf32>
}
