// RUN: kiln-opt %s -split-input-file | kiln-opt | FileCheck %s

// The fused op family round-trips with inferred result types.

// CHECK-LABEL: func.func @rms_norm
// CHECK: kiln.rms_norm %{{.*}}, %{{.*}} {epsilon = 9.99999997E-7 : f32} : (tensor<?x16x256xf32>, tensor<256xf32>) -> tensor<?x16x256xf32>
// CHECK: kiln.rms_norm %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<2x8x16xf16>, tensor<8x1xf16>) -> tensor<2x8x16xf16>
// CHECK: kiln.rms_norm %{{.*}}, %{{.*}} : (tensor<4x8xbf16>, tensor<bf16>) -> tensor<4x8xbf16>
func.func @rms_norm(%x: tensor<?x16x256xf32>, %w: tensor<256xf32>, %h: tensor<2x8x16xf16>, %hw: tensor<8x1xf16>, %b: tensor<4x8xbf16>, %bw: tensor<bf16>) -> (tensor<?x16x256xf32>, tensor<2x8x16xf16>, tensor<4x8xbf16>) {
  %0 = kiln.rms_norm %x, %w {epsilon = 1.0e-06 : f32} : (tensor<?x16x256xf32>, tensor<256xf32>) -> tensor<?x16x256xf32>
  %1 = kiln.rms_norm %h, %hw {axis = 1 : i64} : (tensor<2x8x16xf16>, tensor<8x1xf16>) -> tensor<2x8x16xf16>
  %2 = kiln.rms_norm %b, %bw {stash_type = 1 : i64} : (tensor<4x8xbf16>, tensor<bf16>) -> tensor<4x8xbf16>
  return %0, %1, %2 : tensor<?x16x256xf32>, tensor<2x8x16xf16>, tensor<4x8xbf16>
}

// -----

// CHECK-LABEL: func.func @activations
// CHECK: %[[S:.+]] = kiln.silu %{{.*}} : tensor<2x?xf32>
// CHECK: kiln.swiglu %[[S]], %{{.*}} : tensor<2x?xf32>
func.func @activations(%x: tensor<2x?xf32>, %u: tensor<2x?xf32>) -> tensor<2x?xf32> {
  %0 = kiln.silu %x : tensor<2x?xf32>
  %1 = kiln.swiglu %0, %u : tensor<2x?xf32>
  return %1 : tensor<2x?xf32>
}

// -----

// CHECK-LABEL: func.func @fused_matmul
// CHECK: kiln.fused_matmul %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {activation = "gelu_tanh", trans_b = true} : (tensor<?x128x512xf32>, tensor<2048x512xf32>, tensor<2048xf32>, none) -> tensor<?x128x2048xf32>
// CHECK: kiln.fused_matmul %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {activation = "relu", alpha = 5.000000e-01 : f32, residual_before_activation = true} : (tensor<4x8xf32>, tensor<8x16xf32>, none, tensor<4x16xf32>) -> tensor<4x16xf32>
// CHECK: kiln.fused_matmul %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x1x4x8xf16>, tensor<3x8x16xf16>, tensor<16xf16>, tensor<1x16xf16>) -> tensor<2x3x4x16xf16>
func.func @fused_matmul(%a: tensor<?x128x512xf32>, %w: tensor<2048x512xf32>, %b: tensor<2048xf32>,
                        %a2: tensor<4x8xf32>, %w2: tensor<8x16xf32>, %r2: tensor<4x16xf32>,
                        %a3: tensor<2x1x4x8xf16>, %w3: tensor<3x8x16xf16>, %b3: tensor<16xf16>, %r3: tensor<1x16xf16>)
    -> (tensor<?x128x2048xf32>, tensor<4x16xf32>, tensor<2x3x4x16xf16>) {
  %none = kiln.none
  %0 = kiln.fused_matmul %a, %w, %b, %none {activation = "gelu_tanh", trans_b = true} : (tensor<?x128x512xf32>, tensor<2048x512xf32>, tensor<2048xf32>, none) -> tensor<?x128x2048xf32>
  %1 = kiln.fused_matmul %a2, %w2, %none, %r2 {activation = "relu", alpha = 0.5 : f32, residual_before_activation = true} : (tensor<4x8xf32>, tensor<8x16xf32>, none, tensor<4x16xf32>) -> tensor<4x16xf32>
  %2 = kiln.fused_matmul %a3, %w3, %b3, %r3 : (tensor<2x1x4x8xf16>, tensor<3x8x16xf16>, tensor<16xf16>, tensor<1x16xf16>) -> tensor<2x3x4x16xf16>
  return %0, %1, %2 : tensor<?x128x2048xf32>, tensor<4x16xf32>, tensor<2x3x4x16xf16>
}

// -----

// CHECK-LABEL: func.func @fused_conv
// CHECK: kiln.fused_conv %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {activation = "relu", pads = array<i64: 1, 1, 1, 1>, residual_before_activation = true, strides = array<i64: 2, 2>} : (tensor<?x64x56x56xf32>, tensor<128x64x3x3xf32>, tensor<128xf32>, tensor<?x128x28x28xf32>) -> tensor<?x128x28x28xf32>
// CHECK: kiln.fused_conv %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {activation = "silu", auto_pad = "SAME_UPPER", group = 4 : i64} : (tensor<1x8x5x5xf32>, tensor<8x2x3x3xf32>, none, none) -> tensor<1x8x5x5xf32>
func.func @fused_conv(%x: tensor<?x64x56x56xf32>, %w: tensor<128x64x3x3xf32>, %b: tensor<128xf32>, %s: tensor<?x128x28x28xf32>,
                      %x2: tensor<1x8x5x5xf32>, %w2: tensor<8x2x3x3xf32>) -> (tensor<?x128x28x28xf32>, tensor<1x8x5x5xf32>) {
  %none = kiln.none
  %0 = kiln.fused_conv %x, %w, %b, %s {activation = "relu", pads = array<i64: 1, 1, 1, 1>, residual_before_activation = true, strides = array<i64: 2, 2>} : (tensor<?x64x56x56xf32>, tensor<128x64x3x3xf32>, tensor<128xf32>, tensor<?x128x28x28xf32>) -> tensor<?x128x28x28xf32>
  %1 = kiln.fused_conv %x2, %w2, %none, %none {activation = "silu", auto_pad = "SAME_UPPER", group = 4 : i64} : (tensor<1x8x5x5xf32>, tensor<8x2x3x3xf32>, none, none) -> tensor<1x8x5x5xf32>
  return %0, %1 : tensor<?x128x28x28xf32>, tensor<1x8x5x5xf32>
}

// -----

// CHECK-LABEL: func.func @fused_conv_nhwc
// CHECK: kiln.fused_conv_nhwc %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {activation = "relu", pads = array<i64: 1, 1, 1, 1>, residual_before_activation = true, strides = array<i64: 2, 2>} : (tensor<?x56x56x64xf32>, tensor<128x3x3x64xf32>, tensor<128xf32>, tensor<?x28x28x128xf32>) -> tensor<?x28x28x128xf32>
// CHECK: kiln.fused_conv_nhwc %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {activation = "silu", auto_pad = "SAME_UPPER", group = 4 : i64} : (tensor<1x5x5x8xf32>, tensor<8x3x3x2xf32>, none, none) -> tensor<1x5x5x8xf32>
// CHECK: kiln.fused_conv_nhwc %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : (tensor<1x5x5x8xf32>, tensor<8x3x3x2xf32>, none, tensor<8xf32>) -> tensor<1x3x3x8xf32>
func.func @fused_conv_nhwc(%x: tensor<?x56x56x64xf32>, %w: tensor<128x3x3x64xf32>, %b: tensor<128xf32>, %s: tensor<?x28x28x128xf32>,
                           %x2: tensor<1x5x5x8xf32>, %w2: tensor<8x3x3x2xf32>, %r2: tensor<8xf32>) -> (tensor<?x28x28x128xf32>, tensor<1x5x5x8xf32>, tensor<1x3x3x8xf32>) {
  %none = kiln.none
  %0 = kiln.fused_conv_nhwc %x, %w, %b, %s {activation = "relu", pads = array<i64: 1, 1, 1, 1>, residual_before_activation = true, strides = array<i64: 2, 2>} : (tensor<?x56x56x64xf32>, tensor<128x3x3x64xf32>, tensor<128xf32>, tensor<?x28x28x128xf32>) -> tensor<?x28x28x128xf32>
  %1 = kiln.fused_conv_nhwc %x2, %w2, %none, %none {activation = "silu", auto_pad = "SAME_UPPER", group = 4 : i64} : (tensor<1x5x5x8xf32>, tensor<8x3x3x2xf32>, none, none) -> tensor<1x5x5x8xf32>
  // A residual broadcast over the channels (it leaves the shape unchanged).
  %2 = kiln.fused_conv_nhwc %x2, %w2, %none, %r2 {group = 4 : i64} : (tensor<1x5x5x8xf32>, tensor<8x3x3x2xf32>, none, tensor<8xf32>) -> tensor<1x3x3x8xf32>
  return %0, %1, %2 : tensor<?x28x28x128xf32>, tensor<1x5x5x8xf32>, tensor<1x3x3x8xf32>
}
