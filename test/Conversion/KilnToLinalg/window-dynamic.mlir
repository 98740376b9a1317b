// RUN: kiln-opt %s --convert-kiln-to-linalg --split-input-file -verify-diagnostics | FileCheck %s

// Convolutions and pools over run-time image sizes: the padded input is a
// tensor.pad of the run-time sizes, the results are sized from the
// symbolic shapes (ONNX's rule, kiln/Analysis/SymbolicShapes.h), and
// GlobalAveragePool divides by the run-time count of its window.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:.+]]: tensor<?x3x?x?xf32>
// CHECK: %[[PAD:.+]] = tensor.pad %[[X]] low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: tensor<?x3x?x?xf32> to tensor<?x3x?x?xf32>
// CHECK: linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%[[PAD]], %{{.+}} : tensor<?x3x?x?xf32>, tensor<8x3x3x3xf32>)
// CHECK: linalg.depthwise_conv_2d_nchw_chw {{.*}} -> tensor<?x8x?x?xf32>
// CHECK: linalg.pooling_nchw_max {{.*}} -> tensor<?x8x?x?xf32>
// CHECK: linalg.pooling_nchw_sum {{.*}} -> tensor<?x8x?x?xf32>
// The average of 2x2 windows: divided by 4 everywhere.
// CHECK: arith.divf %{{.+}}, %cst{{.*}} : f32
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction", "reduction"]
// CHECK: %[[H:.+]] = tensor.dim %{{.+}}, %c2
// CHECK: %[[H1:.+]] = arith.muli %{{.+}}, %[[H]]
// CHECK: %[[W:.+]] = tensor.dim %{{.+}}, %c3
// CHECK: arith.muli %[[H1]], %[[W]]
// CHECK: %[[COUNT:.+]] = arith.sitofp %{{.+}} : i64 to f32
// CHECK: arith.divf %{{.+}}, %[[COUNT]] : f32
func.func @main(%x: tensor<?x3x?x?xf32> {kiln.name = "x", kiln.dims = ["n", "", "h", "w"]})
    -> (tensor<?x8x?x?xf32>, tensor<?x8x1x1xf32>) {
  %none = kiln.none
  %wt = kiln.constant dense<0.5> : tensor<8x3x3x3xf32>
  %wd = kiln.constant dense<0.25> : tensor<8x1x3x3xf32>
  %c = kiln.conv %x, %wt, %none {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>}
      : (tensor<?x3x?x?xf32>, tensor<8x3x3x3xf32>, none) -> tensor<?x8x?x?xf32>
  %d = kiln.conv %c, %wd, %none {group = 8 : i64, pads = array<i64: 1, 1, 1, 1>}
      : (tensor<?x8x?x?xf32>, tensor<8x1x3x3xf32>, none) -> tensor<?x8x?x?xf32>
  %p, %i = kiln.max_pool %d {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>}
      : (tensor<?x8x?x?xf32>) -> (tensor<?x8x?x?xf32>, tensor<?x8x?x?xi64>)
  %a = kiln.average_pool %p {kernel_shape = array<i64: 2, 2>}
      : (tensor<?x8x?x?xf32>) -> tensor<?x8x?x?xf32>
  %g = kiln.global_average_pool %a : (tensor<?x8x?x?xf32>) -> tensor<?x8x1x1xf32>
  return %a, %g : tensor<?x8x?x?xf32>, tensor<?x8x1x1xf32>
}

// -----

// What the lowering cannot size at run time is refused with the node: a
// grouped (not depthwise) convolution, SAME padding, ceil_mode.
func.func @main(%x: tensor<1x8x?x?xf32> {kiln.name = "x", kiln.dims = ["", "", "h", "w"]})
    -> (tensor<1x8x?x?xf32>, tensor<1x8x?x?xf32>, tensor<1x8x?x?xf32>) {
  %none = kiln.none
  %wg = kiln.constant dense<0.5> : tensor<8x4x3x3xf32>
  // expected-error @+1 {{dynamic shape (this op's lowering needs static shapes}}
  %g = kiln.conv %x, %wg, %none {group = 2 : i64, pads = array<i64: 1, 1, 1, 1>}
      : (tensor<1x8x?x?xf32>, tensor<8x4x3x3xf32>, none) -> tensor<1x8x?x?xf32>
  // expected-error @+1 {{dynamic shape (this op's lowering needs static shapes}}
  %s, %si = kiln.max_pool %x {auto_pad = "SAME_UPPER", kernel_shape = array<i64: 3, 3>}
      : (tensor<1x8x?x?xf32>) -> (tensor<1x8x?x?xf32>, tensor<1x8x?x?xi64>)
  // expected-error @+1 {{dynamic shape (this op's lowering needs static shapes}}
  %c = kiln.average_pool %x {ceil_mode = 1 : i64, kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>}
      : (tensor<1x8x?x?xf32>) -> tensor<1x8x?x?xf32>
  return %g, %s, %c : tensor<1x8x?x?xf32>, tensor<1x8x?x?xf32>, tensor<1x8x?x?xf32>
}
