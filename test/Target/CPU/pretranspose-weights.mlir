// kiln-hoist-weights first transposes, at compile time, the constant
// weights that Gemm (transB) and fused_matmul (trans_b) read transposed, and
// clears the flags: lowered with the flag, the weight argument was copied by
// a linalg.transpose in every run. A weight also read as it is (tied) stays.
// RUN: kiln-opt %s --kiln-hoist-weights=min-bytes=8 | FileCheck %s

// CHECK-LABEL: func.func @main(
// CHECK-SAME: %arg0: tensor<1x3xf32> {kiln.name = "x"}
// CHECK-SAME: %arg1: tensor<3x2xf32> {kiln.weight = "fc.weight.T", kiln.weight_value = dense_resource<[[FC:weight.T[_0-9]*]]> : tensor<3x2xf32>}
// CHECK-SAME: %arg2: tensor<3x2xf32> {kiln.weight = "fused.weight.T", kiln.weight_value = dense_resource<[[FUSED:weight.T[_0-9]*]]> : tensor<3x2xf32>}
// CHECK-SAME: %arg3: tensor<3x2xf32> {kiln.weight = "tied", kiln.weight_value = dense<{{\[\[}}1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00], [5.000000e+00, 6.000000e+00]]>
// CHECK: kiln.gemm %arg0, %arg1, %{{.+}} : (tensor<1x3xf32>, tensor<3x2xf32>, tensor<2xf32>)
// CHECK: kiln.fused_matmul %arg0, %arg2, %{{.+}}, %{{.+}} : (tensor<1x3xf32>, tensor<3x2xf32>, none, none)
// CHECK: kiln.gemm %{{.+}}, %arg3, %{{.+}} {transB = 1 : i64}
// CHECK: kiln.gemm %arg0, %arg3, %{{.+}} : (tensor<1x3xf32>, tensor<3x2xf32>, tensor<2xf32>)
// The transposed bytes (after the 4-byte alignment header): 1 4 2 5 3 6.
// CHECK-DAG: [[FC]]: "0x100000000000803F00008040000000400000A040000040400000C040"
// CHECK-DAG: [[FUSED]]: "0x100000000000803F00008040000000400000A040000040400000C040"
func.func @main(%x: tensor<1x3xf32> {kiln.name = "x"}) -> (tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x3xf32>, tensor<1x2xf32>) {
  %w = kiln.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32> loc("fc.weight")
  %f = kiln.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32> loc("fused.weight")
  %t = kiln.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32> loc("tied")
  %c = kiln.constant dense<0.5> : tensor<2xf32>
  %none = kiln.none
  %g = kiln.gemm %x, %w, %c {alpha = 1.0 : f32, beta = 1.0 : f32, transA = 0 : i64, transB = 1 : i64} : (tensor<1x3xf32>, tensor<2x3xf32>, tensor<2xf32>) -> tensor<1x2xf32>
  %m = kiln.fused_matmul %x, %f, %none, %none {trans_b = true} : (tensor<1x3xf32>, tensor<2x3xf32>, none, none) -> tensor<1x2xf32>
  %r = kiln.gemm %g, %t, %none {alpha = 1.0 : f32, beta = 1.0 : f32, transA = 0 : i64, transB = 1 : i64} : (tensor<1x2xf32>, tensor<3x2xf32>, none) -> tensor<1x3xf32>
  %z = kiln.gemm %x, %t, %c {alpha = 1.0 : f32, beta = 1.0 : f32, transA = 0 : i64, transB = 0 : i64} : (tensor<1x3xf32>, tensor<3x2xf32>, tensor<2xf32>) -> tensor<1x2xf32>
  return %g, %m, %r, %z : tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x3xf32>, tensor<1x2xf32>
}
