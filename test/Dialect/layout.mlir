// RUN: kiln-opt %s -split-input-file | kiln-opt | FileCheck %s

// The channels-last ops infer their result types with the NCHW rules on the
// permuted shapes; they print and parse back.

// CHECK-LABEL: func.func @conv_nhwc
func.func @conv_nhwc(%x: tensor<?x224x224x3xf32>, %w: tensor<64x3x3x3xf32>, %b: tensor<64xf32>) -> tensor<?x112x112x64xf32> {
  // CHECK: kiln.conv_nhwc %{{.*}}, %{{.*}}, %{{.*}} {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<?x224x224x3xf32>, tensor<64x3x3x3xf32>, tensor<64xf32>) -> tensor<?x112x112x64xf32>
  %y = kiln.conv_nhwc %x, %w, %b {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<?x224x224x3xf32>, tensor<64x3x3x3xf32>, tensor<64xf32>) -> tensor<?x112x112x64xf32>
  return %y : tensor<?x112x112x64xf32>
}

// -----

// Grouped (depthwise) filter: M x kH x kW x C/group; SAME_UPPER.
// CHECK-LABEL: func.func @conv_nhwc_depthwise
func.func @conv_nhwc_depthwise(%x: tensor<1x15x15x8xf32>, %w: tensor<8x3x3x1xf32>) -> tensor<1x8x8x8xf32> {
  %none = kiln.none
  // CHECK: kiln.conv_nhwc {{.*}} -> tensor<1x8x8x8xf32>
  %y = kiln.conv_nhwc %x, %w, %none {auto_pad = "SAME_UPPER", group = 8 : i64, strides = array<i64: 2, 2>} : (tensor<1x15x15x8xf32>, tensor<8x3x3x1xf32>, none) -> tensor<1x8x8x8xf32>
  return %y : tensor<1x8x8x8xf32>
}

// -----

// CHECK-LABEL: func.func @pools
func.func @pools(%x: tensor<1x112x112x64xf32>) -> (tensor<1x56x56x64xf32>, tensor<1x56x56x64xf32>, tensor<1x1x1x64xf32>) {
  // CHECK: kiln.max_pool_nhwc {{.*}} -> tensor<1x56x56x64xf32>
  %m = kiln.max_pool_nhwc %x {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x112x112x64xf32>) -> tensor<1x56x56x64xf32>
  // CHECK: kiln.average_pool_nhwc {{.*}}count_include_pad = 1 : i64{{.*}} -> tensor<1x56x56x64xf32>
  %a = kiln.average_pool_nhwc %x {count_include_pad = 1 : i64, kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x112x112x64xf32>) -> tensor<1x56x56x64xf32>
  // CHECK: kiln.global_average_pool_nhwc {{.*}} -> tensor<1x1x1x64xf32>
  %g = kiln.global_average_pool_nhwc %x : (tensor<1x112x112x64xf32>) -> tensor<1x1x1x64xf32>
  return %m, %a, %g : tensor<1x56x56x64xf32>, tensor<1x56x56x64xf32>, tensor<1x1x1x64xf32>
}

// -----

// ceil_mode and a dynamic spatial dim; 1-D spatial works too.
// CHECK-LABEL: func.func @pool_ceil_dynamic
func.func @pool_ceil_dynamic(%x: tensor<2x7x?x3xf32>, %y: tensor<2x10x4xf32>) -> (tensor<2x4x?x3xf32>, tensor<2x5x4xf32>) {
  // CHECK: kiln.max_pool_nhwc {{.*}} -> tensor<2x4x?x3xf32>
  %m = kiln.max_pool_nhwc %x {ceil_mode = 1 : i64, kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<2x7x?x3xf32>) -> tensor<2x4x?x3xf32>
  // CHECK: kiln.average_pool_nhwc {{.*}} -> tensor<2x5x4xf32>
  %a = kiln.average_pool_nhwc %y {kernel_shape = array<i64: 2>, strides = array<i64: 2>} : (tensor<2x10x4xf32>) -> tensor<2x5x4xf32>
  return %m, %a : tensor<2x4x?x3xf32>, tensor<2x5x4xf32>
}
