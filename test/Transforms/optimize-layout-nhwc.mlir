// RUN: kiln-opt %s -split-input-file -kiln-optimize-layout=prefer-nhwc=true | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-optimize-layout=prefer-nhwc=false | FileCheck %s --check-prefix=NCHW

// prefer-nhwc: convolution and pooling in channels-last form, the
// transposes between them cancelled, the filters transposed to OHWI at
// compile time.

// Conv, Relu, MaxPool, two convs with a residual Add, AveragePool,
// GlobalAveragePool and Flatten: one transpose at the input, and the
// [N, 1, 1, C] -> [N, C, 1, 1] transpose before Flatten is a reshape.
// The first filter (OIHW 4x2x1x2) in OHWI: W'[m, 0, w, c] = W[m, c, 0, w].
// CHECK-LABEL: func.func @resnet_block(
// CHECK-SAME:    %[[X:.+]]: tensor<1x2x8x8xf32>
// CHECK-DAG:     %[[W0:.+]] = kiln.constant dense<{{\[\[\[\[}}1.000000e+00, 3.000000e+00], [2.000000e+00, 4.000000e+00]]], {{\[\[\[}}5.000000e+00, 7.000000e+00], [6.000000e+00, 8.000000e+00]]], {{.*}} : tensor<4x1x2x2xf32>
// CHECK-DAG:     %[[W1:.+]] = kiln.constant dense<5.000000e-01> : tensor<4x3x3x4xf32>
// CHECK:         %[[T:.+]] = kiln.transpose %[[X]] {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x2x8x8xf32>) -> tensor<1x8x8x2xf32>
// CHECK-NOT:     kiln.transpose
// CHECK:         %[[C0:.+]] = kiln.conv_nhwc %[[T]], %[[W0]], %{{.+}} {pads = array<i64: 0, 0, 0, 1>} : (tensor<1x8x8x2xf32>, tensor<4x1x2x2xf32>, tensor<4xf32>) -> tensor<1x8x8x4xf32>
// CHECK:         %[[R0:.+]] = kiln.relu %[[C0]] : tensor<1x8x8x4xf32>
// CHECK:         %[[P:.+]] = kiln.max_pool_nhwc %[[R0]] {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x8x8x4xf32>) -> tensor<1x4x4x4xf32>
// CHECK:         %[[C1:.+]] = kiln.conv_nhwc %[[P]], %[[W1]]
// CHECK:         %[[R1:.+]] = kiln.relu %[[C1]]
// CHECK:         %[[C2:.+]] = kiln.conv_nhwc %[[R1]], %[[W1]]
// CHECK:         %[[A:.+]] = kiln.add %[[C2]], %[[P]] : (tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
// CHECK:         %[[R2:.+]] = kiln.relu %[[A]]
// CHECK:         %[[AP:.+]] = kiln.average_pool_nhwc %[[R2]] {{.*}} -> tensor<1x2x2x4xf32>
// CHECK:         %[[G:.+]] = kiln.global_average_pool_nhwc %[[AP]] : (tensor<1x2x2x4xf32>) -> tensor<1x1x1x4xf32>
// CHECK:         %[[S:.+]] = kiln.constant dense<[1, 4, 1, 1]> : tensor<4xi64>
// CHECK:         %[[RS:.+]] = kiln.reshape %[[G]], %[[S]] : (tensor<1x1x1x4xf32>, tensor<4xi64>) -> tensor<1x4x1x1xf32>
// CHECK:         %[[F:.+]] = kiln.flatten %[[RS]]
// CHECK-NOT:     kiln.transpose
// CHECK:         return %[[F]]

// NCHW-LABEL: func.func @resnet_block(
// NCHW-NOT:     nhwc
// NCHW-NOT:     kiln.transpose
// NCHW:         kiln.conv %{{.+}}, %{{.+}}, %{{.+}} {pads = array<i64: 0, 0, 0, 1>} : (tensor<1x2x8x8xf32>, tensor<4x2x1x2xf32>, tensor<4xf32>)
// NCHW-NOT:     nhwc
// NCHW:         kiln.global_average_pool %
// NCHW-NOT:     kiln.transpose
func.func @resnet_block(%x: tensor<1x2x8x8xf32>) -> tensor<1x4xf32> {
  %none = kiln.none
  %w0 = kiln.constant dense<[[[[1.0, 2.0]], [[3.0, 4.0]]], [[[5.0, 6.0]], [[7.0, 8.0]]], [[[1.0, 1.0]], [[1.0, 1.0]]], [[[0.0, 1.0]], [[1.0, 0.0]]]]> : tensor<4x2x1x2xf32>
  %b0 = kiln.constant dense<[0.1, 0.2, 0.3, 0.4]> : tensor<4xf32>
  %w1 = kiln.constant dense<0.5> : tensor<4x4x3x3xf32>
  %c0 = kiln.conv %x, %w0, %b0 {pads = array<i64: 0, 0, 0, 1>} : (tensor<1x2x8x8xf32>, tensor<4x2x1x2xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
  %r0 = kiln.relu %c0 : tensor<1x4x8x8xf32>
  %p, %pi = kiln.max_pool %r0 {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x4x8x8xf32>) -> (tensor<1x4x4x4xf32>, tensor<1x4x4x4xi64>)
  %c1 = kiln.conv %p, %w1, %none {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x4x4xf32>, tensor<4x4x3x3xf32>, none) -> tensor<1x4x4x4xf32>
  %r1 = kiln.relu %c1 : tensor<1x4x4x4xf32>
  %c2 = kiln.conv %r1, %w1, %none {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x4x4xf32>, tensor<4x4x3x3xf32>, none) -> tensor<1x4x4x4xf32>
  %a = kiln.add %c2, %p : (tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %r2 = kiln.relu %a : tensor<1x4x4x4xf32>
  %ap = kiln.average_pool %r2 {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x4x4x4xf32>) -> tensor<1x4x2x2xf32>
  %g = kiln.global_average_pool %ap : (tensor<1x4x2x2xf32>) -> tensor<1x4x1x1xf32>
  %f = kiln.flatten %g : (tensor<1x4x1x1xf32>) -> tensor<1x4xf32>
  return %f : tensor<1x4xf32>
}

// -----

// An NCHW result keeps one transpose at the output; a filter that is not a
// constant is transposed by an op.
// CHECK-LABEL: func.func @nchw_output(
// CHECK-SAME:    %[[X:[^:]+]]: tensor<?x3x8x8xf32>, %[[W:[^:]+]]: tensor<4x3x3x3xf32>
// CHECK:         %[[TX:.+]] = kiln.transpose %[[X]] {perm = array<i64: 0, 2, 3, 1>} : (tensor<?x3x8x8xf32>) -> tensor<?x8x8x3xf32>
// CHECK:         %[[TW:.+]] = kiln.transpose %[[W]] {perm = array<i64: 0, 2, 3, 1>}
// CHECK:         %[[C:.+]] = kiln.conv_nhwc %[[TX]], %[[TW]], %{{.+}} : (tensor<?x8x8x3xf32>, tensor<4x3x3x3xf32>, none) -> tensor<?x6x6x4xf32>
// CHECK:         %[[S:.+]] = kiln.sigmoid %[[C]] : tensor<?x6x6x4xf32>
// CHECK:         %[[B:.+]] = kiln.transpose %[[S]] {perm = array<i64: 0, 3, 1, 2>} : (tensor<?x6x6x4xf32>) -> tensor<?x4x6x6xf32>
// CHECK:         return %[[B]]
// NCHW-LABEL: func.func @nchw_output(
// NCHW:         kiln.conv %
func.func @nchw_output(%x: tensor<?x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<?x4x6x6xf32> {
  %none = kiln.none
  %c = kiln.conv %x, %w, %none : (tensor<?x3x8x8xf32>, tensor<4x3x3x3xf32>, none) -> tensor<?x4x6x6xf32>
  %s = kiln.sigmoid %c : tensor<?x4x6x6xf32>
  return %s : tensor<?x4x6x6xf32>
}

// -----

// BatchNormalization between convs (not folded into the conv yet) becomes a
// per-channel Mul and Add on the NHWC data, so no transpose stays around it.
// CHECK-LABEL: func.func @batch_norm_between(
// CHECK-DAG:     %[[ZERO:.+]] = kiln.constant dense<0.000000e+00> : tensor<2xf32>
// CHECK-DAG:     %[[SCALE:.+]] = kiln.constant dense<[2.000000e+00, 4.000000e+00]> : tensor<2xf32>
// CHECK:         kiln.transpose
// CHECK:         %[[C:.+]] = kiln.conv_nhwc
// CHECK:         %[[M:.+]] = kiln.mul %[[C]], %[[SCALE]] : (tensor<1x4x4x2xf32>, tensor<2xf32>) -> tensor<1x4x4x2xf32>
// CHECK:         %[[A:.+]] = kiln.add %[[M]], %[[ZERO]]
// CHECK:         %[[R:.+]] = kiln.relu %[[A]]
// CHECK:         %[[C2:.+]] = kiln.conv_nhwc %[[R]]
// CHECK:         kiln.transpose %[[C2]] {perm = array<i64: 0, 3, 1, 2>}
// CHECK-NOT:     kiln.batch_normalization
// NCHW-LABEL: func.func @batch_norm_between(
// NCHW:         kiln.batch_normalization
func.func @batch_norm_between(%x: tensor<1x3x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %none = kiln.none
  %w = kiln.constant dense<1.0> : tensor<2x3x1x1xf32>
  %s = kiln.constant dense<[2.0, 4.0]> : tensor<2xf32>
  %z = kiln.constant dense<[0.0, 0.0]> : tensor<2xf32>
  %v = kiln.constant dense<[1.0, 1.0]> : tensor<2xf32>
  %c = kiln.conv %x, %w, %none : (tensor<1x3x4x4xf32>, tensor<2x3x1x1xf32>, none) -> tensor<1x2x4x4xf32>
  %b = kiln.batch_normalization %c, %s, %z, %z, %v {epsilon = 0.0 : f32} : (tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  %r = kiln.relu %b : tensor<1x2x4x4xf32>
  %w2 = kiln.constant dense<1.0> : tensor<2x2x1x1xf32>
  %c2 = kiln.conv %r, %w2, %none : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, none) -> tensor<1x2x4x4xf32>
  return %c2 : tensor<1x2x4x4xf32>
}

// -----

// Negative: a MaxPool whose indices are used stays NCHW.
// CHECK-LABEL: func.func @neg_max_pool_indices(
// CHECK-NOT:     nhwc
// CHECK-NOT:     kiln.transpose
// CHECK:         kiln.max_pool %
// NCHW-LABEL: func.func @neg_max_pool_indices(
func.func @neg_max_pool_indices(%x: tensor<1x4x8x8xf32>) -> (tensor<1x4x4x4xf32>, tensor<1x4x4x4xi64>) {
  %y, %i = kiln.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x4x8x8xf32>) -> (tensor<1x4x4x4xf32>, tensor<1x4x4x4xi64>)
  return %y, %i : tensor<1x4x4x4xf32>, tensor<1x4x4x4xi64>
}

// -----

// Ops sharing an input share its transpose.
// CHECK-LABEL: func.func @shared_input(
// CHECK-SAME:    %[[X:.+]]: tensor<1x3x8x8xf32>
// CHECK:         %[[T:.+]] = kiln.transpose %[[X]] {perm = array<i64: 0, 2, 3, 1>}
// CHECK-NOT:     kiln.transpose %[[X]]
// CHECK:         kiln.conv_nhwc %[[T]]
// CHECK:         kiln.average_pool_nhwc %[[T]]
// NCHW-LABEL: func.func @shared_input(
func.func @shared_input(%x: tensor<1x3x8x8xf32>) -> (tensor<1x4x6x6xf32>, tensor<1x3x4x4xf32>) {
  %none = kiln.none
  %w = kiln.constant dense<1.0> : tensor<4x3x3x3xf32>
  %c = kiln.conv %x, %w, %none : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, none) -> tensor<1x4x6x6xf32>
  %p = kiln.average_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  return %c, %p : tensor<1x4x6x6xf32>, tensor<1x3x4x4xf32>
}
