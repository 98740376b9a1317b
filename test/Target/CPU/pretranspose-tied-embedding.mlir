// A weight gathered by rows and read transposed by a matmul (a tied LM
// head: logits = h . E^T, E the token embedding) is stored once, transposed:
// the Gather reads the columns of E^T and transposes the rows it gathered
// back, the matmul reads E^T as it is. Neither the weight nor a copy of it
// is transposed in a run (a decode step of a 135M decoder spent 63% of its
// time transposing E). A splat weight read transposed is the swapped splat.
// RUN: kiln-opt %s -split-input-file --kiln-hoist-weights=min-bytes=8 | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kiln-cpu-linalg-pipeline | FileCheck %s --check-prefix=LINALG

// CHECK-LABEL: func.func @main(
// CHECK-SAME: %arg0: tensor<1x2xi64> {kiln.name = "ids"}
// CHECK-SAME: %arg1: tensor<3x4xf32> {kiln.weight = "embed.T", kiln.weight_value = dense_resource<[[E:weight.T]]> : tensor<3x4xf32>}
// CHECK: %[[COLS:.+]] = kiln.gather %arg1, %arg0 {axis = 1 : i64} : (tensor<3x4xf32>, tensor<1x2xi64>) -> tensor<3x1x2xf32>
// CHECK: %[[ROWS:.+]] = kiln.transpose %[[COLS]] {perm = array<i64: 1, 2, 0>} : (tensor<3x1x2xf32>) -> tensor<1x2x3xf32>
// CHECK: %[[H:.+]] = kiln.relu %[[ROWS]]
// CHECK: kiln.fused_matmul %[[H]], %arg1, %{{.+}}, %{{.+}} : (tensor<1x2x3xf32>, tensor<3x4xf32>, none, none) -> tensor<1x2x4xf32>
// CHECK: kiln.constant dense<2.500000e-01> : tensor<3x5xf32>
// CHECK: kiln.gemm %{{.+}}, %{{.+}}, %{{.+}} : (tensor<2x3xf32>, tensor<3x5xf32>, none)
// CHECK-NOT: trans
// The transposed bytes (after the 4-byte alignment header): the columns of
// E = [[1 2 3] [4 5 6] [7 8 9] [10 11 12]], i.e. 1 4 7 10 2 5 8 11 3 6 9 12.
// CHECK: [[E]]: "0x100000000000803F000080400000E04000002041000000400000A0400000004100003041000040400000C0400000104100004041"

// After lowering, the only linalg.transpose moves the two gathered rows
// (2 x 3 elements), the Gather reads E^T, the matmul reads it as it is, and
// the splat Gemm is a row sum.
// LINALG-LABEL: func.func @main(
// LINALG: %[[E:.+]] = arith.constant dense_resource<weight.T> : tensor<3x4xf32>
// LINALG-NOT: linalg.transpose
// LINALG: tensor.extract %[[E]]
// LINALG: linalg.transpose ins(%{{.+}} : tensor<3x1x2xf32>) outs(%{{.+}} : tensor<1x2x3xf32>)
// LINALG-NOT: linalg.transpose
// LINALG: linalg.matmul ins(%{{.+}}, %[[E]] : tensor<2x3xf32>, tensor<3x4xf32>)
// LINALG-NOT: linalg.transpose
// LINALG-NOT: linalg.matmul
// LINALG: return
func.func @main(%ids: tensor<1x2xi64> {kiln.name = "ids"}) -> (tensor<1x2x4xf32>, tensor<2x5xf32>) {
  %e = kiln.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0], [10.0, 11.0, 12.0]]> : tensor<4x3xf32> loc("embed")
  %x = kiln.gather %e, %ids : (tensor<4x3xf32>, tensor<1x2xi64>) -> tensor<1x2x3xf32>
  %h = kiln.relu %x : tensor<1x2x3xf32>
  %none = kiln.none
  %logits = kiln.fused_matmul %h, %e, %none, %none {trans_b = true} : (tensor<1x2x3xf32>, tensor<4x3xf32>, none, none) -> tensor<1x2x4xf32>
  %s = kiln.constant dense<0.25> : tensor<5x3xf32>
  %flat = kiln.constant dense<[2, 3]> : tensor<2xi64>
  %h2 = kiln.reshape %h, %flat : (tensor<1x2x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  %y = kiln.gemm %h2, %s, %none {alpha = 1.0 : f32, beta = 1.0 : f32, transA = 0 : i64, transB = 1 : i64} : (tensor<2x3xf32>, tensor<5x3xf32>, none) -> tensor<2x5xf32>
  return %logits, %y : tensor<1x2x4xf32>, tensor<2x5xf32>
}

// -----

// The same head as kiln-decompose-fused leaves it for a batched activation
// (a Transpose, then MatMul): the Transpose is dropped.
// CHECK-LABEL: func.func @main(
// CHECK-SAME: %arg1: tensor<3x4xf32> {kiln.weight = "embed.T"
// CHECK: kiln.gather %arg1, %arg0 {axis = 1 : i64}
// CHECK-NOT: kiln.transpose %arg1
// CHECK: kiln.matmul %{{.+}}, %arg1 : (tensor<1x2x3xf32>, tensor<3x4xf32>) -> tensor<1x2x4xf32>
// LINALG-LABEL: func.func @main(
// LINALG: %[[E:.+]] = arith.constant dense_resource<weight.T> : tensor<3x4xf32>
// LINALG-NOT: linalg.transpose ins(%[[E]]
// LINALG: linalg.matmul ins(%{{.+}}, %[[E]] : tensor<2x3xf32>, tensor<3x4xf32>)
func.func @main(%ids: tensor<1x2xi64> {kiln.name = "ids"}) -> tensor<1x2x4xf32> {
  %e = kiln.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0], [10.0, 11.0, 12.0]]> : tensor<4x3xf32> loc("embed")
  %x = kiln.gather %e, %ids : (tensor<4x3xf32>, tensor<1x2xi64>) -> tensor<1x2x3xf32>
  %et = kiln.transpose %e {perm = array<i64: 1, 0>} : (tensor<4x3xf32>) -> tensor<3x4xf32>
  %logits = kiln.matmul %x, %et : (tensor<1x2x3xf32>, tensor<3x4xf32>) -> tensor<1x2x4xf32>
  return %logits : tensor<1x2x4xf32>
}

// -----

// The decoder as exported for generation: token ids [batch, seq] with
// symbolic dims (a real torch.onnx export of a Llama with a tied head spent
// 91% of a decode step transposing E before this held for dynamic dims).
// CHECK-LABEL: func.func @main(
// CHECK-SAME: %arg1: tensor<3x4xf32> {kiln.weight = "embed.T"
// CHECK: kiln.gather %arg1, %arg0 {axis = 1 : i64} : (tensor<3x4xf32>, tensor<?x?xi64>) -> tensor<3x?x?xf32>
// CHECK: kiln.transpose %{{.+}} {perm = array<i64: 1, 2, 0>} : (tensor<3x?x?xf32>) -> tensor<?x?x3xf32>
// CHECK-NOT: kiln.transpose %arg1
// CHECK: kiln.matmul %{{.+}}, %arg1 : (tensor<?x?x3xf32>, tensor<3x4xf32>) -> tensor<?x?x4xf32>
// LINALG-LABEL: func.func @main(
// LINALG: %[[E:.+]] = arith.constant dense_resource<weight.T> : tensor<3x4xf32>
// LINALG-NOT: linalg.transpose ins(%[[E]]
// LINALG: linalg.matmul ins(%{{.+}}, %[[E]] : tensor<?x3xf32>, tensor<3x4xf32>)
func.func @main(%ids: tensor<?x?xi64> {kiln.name = "ids", kiln.dims = ["batch", "seq"]}) -> tensor<?x?x4xf32> {
  %e = kiln.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0], [10.0, 11.0, 12.0]]> : tensor<4x3xf32> loc("embed")
  %x = kiln.gather %e, %ids : (tensor<4x3xf32>, tensor<?x?xi64>) -> tensor<?x?x3xf32>
  %et = kiln.transpose %e {perm = array<i64: 1, 0>} : (tensor<4x3xf32>) -> tensor<3x4xf32>
  %logits = kiln.matmul %x, %et : (tensor<?x?x3xf32>, tensor<3x4xf32>) -> tensor<?x?x4xf32>
  return %logits : tensor<?x?x4xf32>
}
