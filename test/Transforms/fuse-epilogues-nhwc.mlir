// RUN: kiln-opt %s -split-input-file -kiln-fuse-epilogues | FileCheck %s

// Bias, activation and residual folded into the channels-last
// kiln.fused_conv_nhwc, as kiln-optimize-layout leaves convolutions at -O3,
// and chains that must be left alone. A bias broadcasts over the last dim.

// conv_nhwc without B + a [C] bias + ReLU.
// CHECK-LABEL: func.func @conv_nhwc_bias_relu
// CHECK-SAME: (%[[X:.+]]: tensor<1x8x8x3xf32>, %[[W:.+]]: tensor<4x3x3x3xf32>)
// CHECK-DAG: %[[B:.+]] = kiln.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>
// CHECK-DAG: %[[NONE:.+]] = kiln.none
// CHECK: %[[Y:.+]] = kiln.fused_conv_nhwc %[[X]], %[[W]], %[[B]], %[[NONE]] {activation = "relu", pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x8x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, none) -> tensor<1x8x8x4xf32>
// CHECK-NEXT: return %[[Y]]
func.func @conv_nhwc_bias_relu(%x: tensor<1x8x8x3xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x8x8x4xf32> {
  %none = kiln.none
  %b = kiln.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %0 = kiln.conv_nhwc %x, %w, %none {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x8x3xf32>, tensor<4x3x3x3xf32>, none) -> tensor<1x8x8x4xf32>
  %1 = kiln.add %0, %b : (tensor<1x8x8x4xf32>, tensor<4xf32>) -> tensor<1x8x8x4xf32>
  %2 = kiln.relu %1 : tensor<1x8x8x4xf32>
  return %2 : tensor<1x8x8x4xf32>
}

// -----

// A [1, 1, 1, C] bias held in a dense_resource blob (bias on the left of the
// Add) is re-typed to [C], sharing the blob; then GELU.
// CHECK-LABEL: func.func @conv_nhwc_resource_bias_gelu
// CHECK-SAME: (%[[X:.+]]: tensor<2x6x6x4xf32>, %[[W:.+]]: tensor<8x1x1x4xf32>)
// CHECK-DAG: %[[B:.+]] = kiln.constant dense_resource<nhwc_bias> : tensor<8xf32>
// CHECK: %[[Y:.+]] = kiln.fused_conv_nhwc %[[X]], %[[W]], %[[B]], %{{.+}} {activation = "gelu"} : (tensor<2x6x6x4xf32>, tensor<8x1x1x4xf32>, tensor<8xf32>, none) -> tensor<2x6x6x8xf32>
// CHECK-NEXT: return %[[Y]]
func.func @conv_nhwc_resource_bias_gelu(%x: tensor<2x6x6x4xf32>, %w: tensor<8x1x1x4xf32>) -> tensor<2x6x6x8xf32> {
  %none = kiln.none
  %b = kiln.constant dense_resource<nhwc_bias> : tensor<1x1x1x8xf32>
  %0 = kiln.conv_nhwc %x, %w, %none : (tensor<2x6x6x4xf32>, tensor<8x1x1x4xf32>, none) -> tensor<2x6x6x8xf32>
  %1 = kiln.add %b, %0 : (tensor<1x1x1x8xf32>, tensor<2x6x6x8xf32>) -> tensor<2x6x6x8xf32>
  %2 = kiln.gelu %1 {approximate = "none"} : tensor<2x6x6x8xf32>
  return %2 : tensor<2x6x6x8xf32>
}

{-#
  dialect_resources: {
    builtin: {
      nhwc_bias: "0x040000000000803F0000004000004040000080400000A0400000C0400000E04000000041"
    }
  }
#-}

// -----

// A ResNet basic block's end at -O3: BatchNormalization already folded into
// the conv's B, then the shortcut, then ReLU: relu(conv + shortcut).
// CHECK-LABEL: func.func @conv_nhwc_residual_relu
// CHECK-SAME: (%[[X:.+]]: tensor<1x8x8x4xf32>, %[[W:.+]]: tensor<4x3x3x4xf32>, %[[B:.+]]: tensor<4xf32>, %[[S:.+]]: tensor<1x8x8x4xf32>)
// CHECK: %[[Y:.+]] = kiln.fused_conv_nhwc %[[X]], %[[W]], %[[B]], %[[S]] {activation = "relu", pads = array<i64: 1, 1, 1, 1>, residual_before_activation = true} : (tensor<1x8x8x4xf32>, tensor<4x3x3x4xf32>, tensor<4xf32>, tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
// CHECK-NEXT: return %[[Y]]
func.func @conv_nhwc_residual_relu(%x: tensor<1x8x8x4xf32>, %w: tensor<4x3x3x4xf32>, %b: tensor<4xf32>, %s: tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32> {
  %0 = kiln.conv_nhwc %x, %w, %b {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x8x4xf32>, tensor<4x3x3x4xf32>, tensor<4xf32>) -> tensor<1x8x8x4xf32>
  %1 = kiln.add %s, %0 : (tensor<1x8x8x4xf32>, tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
  %2 = kiln.relu %1 : tensor<1x8x8x4xf32>
  return %2 : tensor<1x8x8x4xf32>
}

// -----

// No B: a [C] bias, the shortcut, then ReLU: relu(conv + b + shortcut); and
// a strided conv whose sigmoid is followed by a residual (after the
// activation).
// CHECK-LABEL: func.func @conv_nhwc_bias_residual
// CHECK-SAME: (%[[X:.+]]: tensor<1x8x8x4xf32>, %[[W:.+]]: tensor<4x3x3x4xf32>, %[[B:.+]]: tensor<4xf32>, %[[S:.+]]: tensor<1x8x8x4xf32>, %[[S2:.+]]: tensor<1x4x4x4xf32>)
// CHECK: %[[Y:.+]] = kiln.fused_conv_nhwc %[[X]], %[[W]], %[[B]], %[[S]] {activation = "relu", pads = array<i64: 1, 1, 1, 1>, residual_before_activation = true}
// CHECK: %[[Z:.+]] = kiln.fused_conv_nhwc %[[X]], %[[W]], %{{.+}}, %[[S2]] {activation = "sigmoid", pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} :
// CHECK-NOT: kiln.add
// CHECK: return %[[Y]], %[[Z]]
func.func @conv_nhwc_bias_residual(%x: tensor<1x8x8x4xf32>, %w: tensor<4x3x3x4xf32>, %b: tensor<4xf32>, %s: tensor<1x8x8x4xf32>, %s2: tensor<1x4x4x4xf32>) -> (tensor<1x8x8x4xf32>, tensor<1x4x4x4xf32>) {
  %none = kiln.none
  %0 = kiln.conv_nhwc %x, %w, %none {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x8x4xf32>, tensor<4x3x3x4xf32>, none) -> tensor<1x8x8x4xf32>
  %1 = kiln.add %0, %b : (tensor<1x8x8x4xf32>, tensor<4xf32>) -> tensor<1x8x8x4xf32>
  %2 = kiln.add %1, %s : (tensor<1x8x8x4xf32>, tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
  %3 = kiln.relu %2 : tensor<1x8x8x4xf32>
  %4 = kiln.conv_nhwc %x, %w, %none {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x8x8x4xf32>, tensor<4x3x3x4xf32>, none) -> tensor<1x4x4x4xf32>
  %5 = kiln.sigmoid %4 : tensor<1x4x4x4xf32>
  %6 = kiln.add %5, %s2 : (tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  return %3, %6 : tensor<1x8x8x4xf32>, tensor<1x4x4x4xf32>
}

// -----

// Left alone: a per-channel constant laid out for NCHW ([C, 1, 1]) adds
// along H of a channels-last result (H = C = 4: it broadcasts, but is no
// channel bias); its ReLU then has no conv directly before it.
// CHECK-LABEL: func.func @conv_nhwc_bias_wrong_dim
// CHECK: %[[C:.+]] = kiln.conv_nhwc
// CHECK-NEXT: %[[A:.+]] = kiln.add %[[C]],
// CHECK-NEXT: kiln.relu %[[A]]
// CHECK-NOT: kiln.fused_conv_nhwc
func.func @conv_nhwc_bias_wrong_dim(%x: tensor<1x4x4x4xf32>, %w: tensor<4x1x1x4xf32>) -> tensor<1x4x4x4xf32> {
  %none = kiln.none
  %c = kiln.constant dense<[[[1.0]], [[2.0]], [[3.0]], [[4.0]]]> : tensor<4x1x1xf32>
  %0 = kiln.conv_nhwc %x, %w, %none : (tensor<1x4x4x4xf32>, tensor<4x1x1x4xf32>, none) -> tensor<1x4x4x4xf32>
  %1 = kiln.add %0, %c : (tensor<1x4x4x4xf32>, tensor<4x1x1xf32>) -> tensor<1x4x4x4xf32>
  %2 = kiln.relu %1 : tensor<1x4x4x4xf32>
  return %2 : tensor<1x4x4x4xf32>
}

// -----

// Left alone: a conv_nhwc whose result has a second user besides its ReLU,
// a channel add after a conv_nhwc that already has B, and a [1, C, 1, 1]
// constant (NCHW's channel dim) that broadcasts along W.
// CHECK-LABEL: func.func @conv_nhwc_negative
// CHECK-NOT: kiln.fused_conv_nhwc
// CHECK: return
func.func @conv_nhwc_negative(%x: tensor<1x4x4x4xf32>, %w: tensor<4x1x1x4xf32>, %b: tensor<4xf32>, %c: tensor<4xf32>) -> (tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>) {
  %none = kiln.none
  %0 = kiln.conv_nhwc %x, %w, %b : (tensor<1x4x4x4xf32>, tensor<4x1x1x4xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32>
  %1 = kiln.relu %0 : tensor<1x4x4x4xf32>
  %2 = kiln.conv_nhwc %x, %w, %b : (tensor<1x4x4x4xf32>, tensor<4x1x1x4xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32>
  %3 = kiln.add %2, %c : (tensor<1x4x4x4xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32>
  %d = kiln.constant dense<[[[[1.0]], [[2.0]], [[3.0]], [[4.0]]]]> : tensor<1x4x1x1xf32>
  %4 = kiln.conv_nhwc %x, %w, %none : (tensor<1x4x4x4xf32>, tensor<4x1x1x4xf32>, none) -> tensor<1x4x4x4xf32>
  %5 = kiln.add %4, %d : (tensor<1x4x4x4xf32>, tensor<1x4x1x1xf32>) -> tensor<1x4x4x4xf32>
  return %0, %1, %3, %5 : tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>
}

// -----

// MobileNetV3's HardSwish and MobileNetV2's ReLU6 (a float Clip to the
// constants 0 and 6) are epilogue activations.
// CHECK-LABEL: func.func @conv_nhwc_hard_swish
// CHECK: %[[Y:.+]] = kiln.fused_conv_nhwc %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} {activation = "hard_swish", group = 4 : i64, pads = array<i64: 1, 1, 1, 1>}
// CHECK-NEXT: return %[[Y]]
func.func @conv_nhwc_hard_swish(%x: tensor<1x8x8x4xf32>, %w: tensor<4x3x3x1xf32>, %b: tensor<4xf32>) -> tensor<1x8x8x4xf32> {
  %0 = kiln.conv_nhwc %x, %w, %b {group = 4 : i64, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x8x4xf32>, tensor<4x3x3x1xf32>, tensor<4xf32>) -> tensor<1x8x8x4xf32>
  %1 = kiln.hard_swish %0 : tensor<1x8x8x4xf32>
  return %1 : tensor<1x8x8x4xf32>
}

// -----

// CHECK-LABEL: func.func @conv_nhwc_relu6
// CHECK: %[[Y:.+]] = kiln.fused_conv_nhwc %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} {activation = "relu6"}
// CHECK-NEXT: return %[[Y]]
func.func @conv_nhwc_relu6(%x: tensor<1x8x8x4xf32>, %w: tensor<8x1x1x4xf32>, %b: tensor<8xf32>) -> tensor<1x8x8x8xf32> {
  %lo = kiln.constant dense<0.0> : tensor<f32>
  %hi = kiln.constant dense<6.0> : tensor<1xf32>
  %0 = kiln.conv_nhwc %x, %w, %b : (tensor<1x8x8x4xf32>, tensor<8x1x1x4xf32>, tensor<8xf32>) -> tensor<1x8x8x8xf32>
  %1 = kiln.clip %0, %lo, %hi : (tensor<1x8x8x8xf32>, tensor<f32>, tensor<1xf32>) -> tensor<1x8x8x8xf32>
  return %1 : tensor<1x8x8x8xf32>
}

// -----

// A Clip to other bounds, or with a bound that is not a constant, stays.
// CHECK-LABEL: func.func @conv_nhwc_clip_not_relu6
// CHECK: %[[C:.+]] = kiln.conv_nhwc
// CHECK: kiln.clip %[[C]]
// CHECK: %[[D:.+]] = kiln.conv_nhwc
// CHECK: kiln.clip %[[D]]
func.func @conv_nhwc_clip_not_relu6(%x: tensor<1x8x8x4xf32>, %w: tensor<8x1x1x4xf32>, %b: tensor<8xf32>, %hi2: tensor<f32>) -> (tensor<1x8x8x8xf32>, tensor<1x8x8x8xf32>) {
  %lo = kiln.constant dense<0.0> : tensor<f32>
  %hi = kiln.constant dense<5.0> : tensor<f32>
  %0 = kiln.conv_nhwc %x, %w, %b : (tensor<1x8x8x4xf32>, tensor<8x1x1x4xf32>, tensor<8xf32>) -> tensor<1x8x8x8xf32>
  %1 = kiln.clip %0, %lo, %hi : (tensor<1x8x8x8xf32>, tensor<f32>, tensor<f32>) -> tensor<1x8x8x8xf32>
  %2 = kiln.conv_nhwc %x, %w, %b : (tensor<1x8x8x4xf32>, tensor<8x1x1x4xf32>, tensor<8xf32>) -> tensor<1x8x8x8xf32>
  %3 = kiln.clip %2, %lo, %hi2 : (tensor<1x8x8x8xf32>, tensor<f32>, tensor<f32>) -> tensor<1x8x8x8xf32>
  return %1, %3 : tensor<1x8x8x8xf32>, tensor<1x8x8x8xf32>
}
