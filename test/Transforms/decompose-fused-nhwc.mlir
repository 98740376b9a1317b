// RUN: kiln-opt %s -split-input-file -kiln-decompose-fused=ops=fused_conv_nhwc | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-decompose-fused | FileCheck %s --check-prefix=ALL

// kiln.fused_conv_nhwc back into kiln.conv_nhwc and its epilogue; with every
// decomposition, the conv further into Transpose, Conv, Transpose.

// CHECK-LABEL: func.func @fused_conv_nhwc
// CHECK-SAME: (%[[X:.+]]: tensor<1x8x8x3xf32>, %[[W:.+]]: tensor<4x3x3x3xf32>, %[[B:.+]]: tensor<4xf32>, %[[R:.+]]: tensor<1x8x8x4xf32>)
// CHECK: %[[C:.+]] = kiln.conv_nhwc %[[X]], %[[W]], %[[B]] {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x8x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x8x8x4xf32>
// CHECK-NEXT: %[[CR:.+]] = kiln.add %[[C]], %[[R]]
// CHECK-NEXT: %[[Y:.+]] = kiln.relu %[[CR]]
// CHECK-NEXT: return %[[Y]]
// ALL-LABEL: func.func @fused_conv_nhwc
// ALL-NOT: kiln.conv_nhwc
// ALL: %[[T:.+]] = kiln.transpose
// ALL: %[[C:.+]] = kiln.conv {{.*}} -> tensor<1x4x8x8xf32>
// ALL: %[[CL:.+]] = kiln.transpose %[[C]] {perm = array<i64: 0, 2, 3, 1>}
// ALL: %[[CR:.+]] = kiln.add %[[CL]],
// ALL: %[[Y:.+]] = kiln.relu %[[CR]]
// ALL: return %[[Y]]
func.func @fused_conv_nhwc(%x: tensor<1x8x8x3xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>, %r: tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32> {
  %y = kiln.fused_conv_nhwc %x, %w, %b, %r {activation = "relu", pads = array<i64: 1, 1, 1, 1>, residual_before_activation = true} : (tensor<1x8x8x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
  return %y : tensor<1x8x8x4xf32>
}

// -----

// No bias; the residual after the activation.
// CHECK-LABEL: func.func @fused_conv_nhwc_silu_residual
// CHECK-SAME: (%[[X:.+]]: tensor<2x6x6x4xf32>, %[[W:.+]]: tensor<8x1x1x4xf32>, %[[R:.+]]: tensor<2x6x6x8xf32>)
// CHECK: %[[C:.+]] = kiln.conv_nhwc %[[X]], %[[W]], %{{.+}} {strides = array<i64: 1, 1>} :
// CHECK-NEXT: %[[S:.+]] = kiln.sigmoid %[[C]]
// CHECK-NEXT: %[[A:.+]] = kiln.mul %[[C]], %[[S]]
// CHECK-NEXT: %[[Y:.+]] = kiln.add %[[A]], %[[R]]
// CHECK-NEXT: return %[[Y]]
func.func @fused_conv_nhwc_silu_residual(%x: tensor<2x6x6x4xf32>, %w: tensor<8x1x1x4xf32>, %r: tensor<2x6x6x8xf32>) -> tensor<2x6x6x8xf32> {
  %none = kiln.none
  %y = kiln.fused_conv_nhwc %x, %w, %none, %r {activation = "silu", strides = array<i64: 1, 1>} : (tensor<2x6x6x4xf32>, tensor<8x1x1x4xf32>, none, tensor<2x6x6x8xf32>) -> tensor<2x6x6x8xf32>
  return %y : tensor<2x6x6x8xf32>
}
