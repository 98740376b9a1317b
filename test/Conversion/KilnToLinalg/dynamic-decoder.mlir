// RUN: kiln-opt %s --convert-kiln-to-linalg --split-input-file | FileCheck %s
// The ops of a decoder step with a linear-attention state
// (models/generate_seed_variants.py --form decoder) on dynamic dims.

// CumSum along a dynamic axis: the loop runs to the run-time size (0 runs
// no iteration: an empty prompt adds nothing to the state); the running
// sum and the result have the other dims' run-time sizes.
// CHECK-LABEL: func.func @main
// CHECK: arith.constant dense<1> : tensor<i64>
// CHECK: %[[B:.+]] = tensor.dim %arg0, %{{.+}} : tensor<?x?x4xf32>
// CHECK: %[[S:.+]] = tensor.dim %arg0, %{{.+}} : tensor<?x?x4xf32>
// CHECK: %[[ACC:.+]] = tensor.empty(%[[B]]) : tensor<?x1x4xf32>
// CHECK: %[[SUM:.+]] = linalg.fill ins(%{{.+}}) outs(%[[ACC]] : tensor<?x1x4xf32>)
// CHECK: %[[OUT:.+]] = tensor.empty(%[[B]], %[[S]]) : tensor<?x?x4xf32>
// CHECK: %[[N:.+]] = tensor.dim %arg0, %{{.+}} : tensor<?x?x4xf32>
// CHECK: scf.for %[[T:.+]] = %{{.+}} to %[[N]] step %{{.+}} iter_args(%{{.+}} = %[[SUM]], %{{.+}} = %[[OUT]])
// CHECK: tensor.extract_slice %arg0[0, %[[T]], 0] [%[[B]], 1, 4] [1, 1, 1]
func.func @main(%x: tensor<?x?x4xf32> {kiln.name = "x", kiln.dims = ["batch", "seq", ""]}) -> tensor<?x?x4xf32> {
  %axis = kiln.constant dense<1> : tensor<i64>
  %0 = kiln.cum_sum %x, %axis : (tensor<?x?x4xf32>, tensor<i64>) -> tensor<?x?x4xf32>
  return %0 : tensor<?x?x4xf32>
}

// -----

// A query group against its KV head's state, batch dims [batch, 2, 4, seq]
// with two dynamic ones: collapsed for linalg.batch_matmul, and back by a
// reshape with a shape tensor (an expand_shape with two dynamic dims in a
// group crashes MLIR's strided-metadata expansion).
// CHECK-LABEL: func.func @main
// CHECK: tensor.collapse_shape {{.+}} {{\[}}[0, 1, 2, 3], [4], [5]] : tensor<?x2x4x?x1x8xf32> into tensor<?x1x8xf32>
// CHECK: linalg.batch_matmul
// CHECK: %[[SHAPE:.+]] = tensor.from_elements %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : tensor<6xindex>
// CHECK: tensor.reshape %{{.+}}(%[[SHAPE]]) : (tensor<?x1x8xf32>, tensor<6xindex>) -> tensor<?x2x4x?x1x8xf32>
// CHECK-NOT: tensor.expand_shape
func.func @main(%q: tensor<?x2x4x?x1x8xf32> {kiln.name = "q", kiln.dims = ["batch", "", "", "seq", "", ""]}, %s: tensor<?x2x1x?x8x8xf32> {kiln.name = "s", kiln.dims = ["batch", "", "", "seq", "", ""]}) -> tensor<?x2x4x?x1x8xf32> {
  %0 = kiln.matmul %q, %s : (tensor<?x2x4x?x1x8xf32>, tensor<?x2x1x?x8x8xf32>) -> tensor<?x2x4x?x1x8xf32>
  return %0 : tensor<?x2x4x?x1x8xf32>
}
