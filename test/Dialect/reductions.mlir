// RUN: kiln-opt %s -split-input-file | kiln-opt | FileCheck %s

// Axes from the attribute, keepdims 1 (default) and 0, negative axes.
// CHECK-LABEL: func.func @attribute_axes
// CHECK: kiln.reduce_sum %{{.+}}, %{{.+}} {axes = array<i64: 1>} : (tensor<2x?x4xf32>, none) -> tensor<2x1x4xf32>
// CHECK: kiln.reduce_mean %{{.+}}, %{{.+}} {axes = array<i64: -1, 0>, keepdims = 0 : i64} : (tensor<2x?x4xf32>, none) -> tensor<?xf32>
// CHECK: kiln.reduce_max %{{.+}}, %{{.+}} {axes = array<i64: 2>, keepdims = 0 : i64} : (tensor<2x?x4xi8>, none) -> tensor<2x?xi8>
// CHECK: kiln.reduce_min %{{.+}}, %{{.+}} {axes = array<i64: 0>} : (tensor<?x3xi1>, none) -> tensor<1x3xi1>
func.func @attribute_axes(%x: tensor<2x?x4xf32>, %i: tensor<2x?x4xi8>, %b: tensor<?x3xi1>) {
  %none = kiln.none
  %0 = kiln.reduce_sum %x, %none {axes = array<i64: 1>, keepdims = 1} : (tensor<2x?x4xf32>, none) -> tensor<2x1x4xf32>
  %1 = kiln.reduce_mean %x, %none {axes = array<i64: -1, 0>, keepdims = 0} : (tensor<2x?x4xf32>, none) -> tensor<?xf32>
  %2 = kiln.reduce_max %i, %none {axes = array<i64: 2>, keepdims = 0} : (tensor<2x?x4xi8>, none) -> tensor<2x?xi8>
  %3 = kiln.reduce_min %b, %none {axes = array<i64: 0>} : (tensor<?x3xi1>, none) -> tensor<1x3xi1>
  return
}

// -----

// Axes from a constant operand (the opset 18 form).
// CHECK-LABEL: func.func @operand_axes
// CHECK: kiln.reduce_prod %{{.+}}, %{{.+}} : (tensor<2x?x4xf32>, tensor<2xi64>) -> tensor<1x?x1xf32>
// CHECK: kiln.reduce_l1 %{{.+}}, %{{.+}} {keepdims = 0 : i64} : (tensor<2x?x4xf32>, tensor<2xi64>) -> tensor<?xf32>
// CHECK: kiln.reduce_l2 %{{.+}}, %{{.+}} {keepdims = 0 : i64} : (tensor<2x?x4xi64>, tensor<1xi64>) -> tensor<2x4xi64>
func.func @operand_axes(%x: tensor<2x?x4xf32>, %i: tensor<2x?x4xi64>) {
  %axes = kiln.constant dense<[0, -1]> : tensor<2xi64>
  %one = kiln.constant dense<[1]> : tensor<1xi64>
  %0 = kiln.reduce_prod %x, %axes : (tensor<2x?x4xf32>, tensor<2xi64>) -> tensor<1x?x1xf32>
  %1 = kiln.reduce_l1 %x, %axes {keepdims = 0} : (tensor<2x?x4xf32>, tensor<2xi64>) -> tensor<?xf32>
  %2 = kiln.reduce_l2 %i, %one {keepdims = 0} : (tensor<2x?x4xi64>, tensor<1xi64>) -> tensor<2x4xi64>
  return
}

// -----

// Missing or empty axes reduce everything, unless noop_with_empty_axes.
// CHECK-LABEL: func.func @empty_axes
// CHECK: kiln.reduce_log_sum %{{.+}}, %{{.+}} : (tensor<2x?x4xf32>, none) -> tensor<1x1x1xf32>
// CHECK: kiln.reduce_log_sum_exp %{{.+}}, %{{.+}} {keepdims = 0 : i64} : (tensor<2x?x4xf32>, none) -> tensor<f32>
// CHECK: kiln.reduce_sum_square %{{.+}}, %{{.+}} {keepdims = 0 : i64} : (tensor<2x?x4xf32>, tensor<0xi64>) -> tensor<f32>
// CHECK: kiln.reduce_sum_square %{{.+}}, %{{.+}} {keepdims = 0 : i64, noop_with_empty_axes = 1 : i64} : (tensor<2x?x4xf32>, tensor<0xi64>) -> tensor<2x?x4xf32>
// CHECK: kiln.reduce_sum %{{.+}}, %{{.+}} {noop_with_empty_axes = 1 : i64} : (tensor<2x?x4xf32>, none) -> tensor<2x?x4xf32>
// CHECK: kiln.reduce_sum %{{.+}}, %{{.+}} {axes = array<i64>, keepdims = 0 : i64} : (tensor<2x?x4xf32>, none) -> tensor<f32>
func.func @empty_axes(%x: tensor<2x?x4xf32>) {
  %none = kiln.none
  %empty = kiln.constant dense<> : tensor<0xi64>
  %0 = kiln.reduce_log_sum %x, %none : (tensor<2x?x4xf32>, none) -> tensor<1x1x1xf32>
  %1 = kiln.reduce_log_sum_exp %x, %none {keepdims = 0} : (tensor<2x?x4xf32>, none) -> tensor<f32>
  %2 = kiln.reduce_sum_square %x, %empty {keepdims = 0} : (tensor<2x?x4xf32>, tensor<0xi64>) -> tensor<f32>
  %3 = kiln.reduce_sum_square %x, %empty {keepdims = 0, noop_with_empty_axes = 1} : (tensor<2x?x4xf32>, tensor<0xi64>) -> tensor<2x?x4xf32>
  %4 = kiln.reduce_sum %x, %none {noop_with_empty_axes = 1} : (tensor<2x?x4xf32>, none) -> tensor<2x?x4xf32>
  %5 = kiln.reduce_sum %x, %none {axes = array<i64>, keepdims = 0} : (tensor<2x?x4xf32>, none) -> tensor<f32>
  return
}

// -----

// Axes whose values are unknown: keepdims keeps the rank (only 1s are
// certain); without keepdims the count of axes gives the rank.
// CHECK-LABEL: func.func @unknown_axes
// CHECK: kiln.reduce_sum %{{.+}}, %{{.+}} : (tensor<2x1x?xf32>, tensor<?xi64>) -> tensor<?x1x?xf32>
// CHECK: kiln.reduce_sum %{{.+}}, %{{.+}} : (tensor<2x1x?xf32>, tensor<?xi64>) -> tensor<2x1x1xf32>
// CHECK: kiln.reduce_mean %{{.+}}, %{{.+}} {keepdims = 0 : i64} : (tensor<2x1x?xf32>, tensor<2xi64>) -> tensor<?xf32>
// CHECK: kiln.reduce_max %{{.+}}, %{{.+}} {keepdims = 0 : i64} : (tensor<2x1x?xf32>, tensor<2xi64>) -> tensor<2xf32>
func.func @unknown_axes(%x: tensor<2x1x?xf32>, %axes: tensor<?xi64>, %two: tensor<2xi64>) {
  %0 = kiln.reduce_sum %x, %axes : (tensor<2x1x?xf32>, tensor<?xi64>) -> tensor<?x1x?xf32>
  // A declared type may be more static than the inferred one.
  %1 = kiln.reduce_sum %x, %axes : (tensor<2x1x?xf32>, tensor<?xi64>) -> tensor<2x1x1xf32>
  %2 = kiln.reduce_mean %x, %two {keepdims = 0} : (tensor<2x1x?xf32>, tensor<2xi64>) -> tensor<?xf32>
  %3 = kiln.reduce_max %x, %two {keepdims = 0} : (tensor<2x1x?xf32>, tensor<2xi64>) -> tensor<2xf32>
  return
}

// -----

// CHECK-LABEL: func.func @arg_reductions
// CHECK: kiln.arg_max %{{.+}} : (tensor<2x?x4xf32>) -> tensor<1x?x4xi64>
// CHECK: kiln.arg_max %{{.+}} {axis = -1 : i64, keepdims = 0 : i64, select_last_index = 1 : i64} : (tensor<2x?x4xf32>) -> tensor<2x?xi64>
// CHECK: kiln.arg_min %{{.+}} {axis = 1 : i64} : (tensor<2x?x4xui8>) -> tensor<2x1x4xi64>
// CHECK: kiln.arg_min %{{.+}} {axis = 1 : i64, keepdims = 0 : i64} : (tensor<2x?x4xui8>) -> tensor<2x4xi64>
func.func @arg_reductions(%x: tensor<2x?x4xf32>, %u: tensor<2x?x4xui8>) {
  %0 = kiln.arg_max %x : (tensor<2x?x4xf32>) -> tensor<1x?x4xi64>
  %1 = kiln.arg_max %x {axis = -1, keepdims = 0, select_last_index = 1} : (tensor<2x?x4xf32>) -> tensor<2x?xi64>
  %2 = kiln.arg_min %u {axis = 1} : (tensor<2x?x4xui8>) -> tensor<2x1x4xi64>
  %3 = kiln.arg_min %u {axis = 1, keepdims = 0} : (tensor<2x?x4xui8>) -> tensor<2x4xi64>
  return
}
