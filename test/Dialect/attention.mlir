// RUN: kiln-opt %s -split-input-file | kiln-opt | FileCheck %s

// kiln.attention and kiln.linear_attention: inferred result types
// ([B, num_heads, Sq, Dv]) and a round trip through the printer.

// CHECK-LABEL: func.func @attention_gqa_causal
// CHECK: kiln.attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {causal = true, num_heads = 8 : i64, num_kv_heads = 2 : i64, scale = 0.176776692 : f32} : (tensor<2x8x16x32xf32>, tensor<2x2x16x32xf32>, tensor<2x2x16x64xf32>, none) -> tensor<2x8x16x64xf32>
func.func @attention_gqa_causal(%q: tensor<2x8x16x32xf32>, %k: tensor<2x2x16x32xf32>, %v: tensor<2x2x16x64xf32>) -> tensor<2x8x16x64xf32> {
  %none = kiln.none
  %y = kiln.attention %q, %k, %v, %none {num_heads = 8 : i64, num_kv_heads = 2 : i64, scale = 0.176776692 : f32, causal = true} : (tensor<2x8x16x32xf32>, tensor<2x2x16x32xf32>, tensor<2x2x16x64xf32>, none) -> tensor<2x8x16x64xf32>
  return %y : tensor<2x8x16x64xf32>
}

// -----

// causal = false is the default and not printed; masks broadcast.
// CHECK-LABEL: func.func @attention_masks
// CHECK: kiln.attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {num_heads = 4 : i64, num_kv_heads = 4 : i64, scale = 1.250000e-01 : f32} : (tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x1x1x?xi1>) -> tensor<?x4x?x64xf16>
// CHECK: kiln.attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {num_heads = 4 : i64, num_kv_heads = 1 : i64, scale = 1.000000e+00 : f32} : (tensor<?x4x?x64xf16>, tensor<?x1x?x64xf16>, tensor<?x1x?x64xf16>, tensor<7x9xf16>) -> tensor<?x4x?x64xf16>
func.func @attention_masks(%q: tensor<?x4x?x64xf16>, %k: tensor<?x4x?x64xf16>, %v: tensor<?x4x?x64xf16>, %keep: tensor<?x1x1x?xi1>,
                           %k1: tensor<?x1x?x64xf16>, %v1: tensor<?x1x?x64xf16>, %bias: tensor<7x9xf16>) -> (tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>) {
  %y = kiln.attention %q, %k, %v, %keep {num_heads = 4 : i64, num_kv_heads = 4 : i64, scale = 0.125 : f32, causal = false} : (tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x1x1x?xi1>) -> tensor<?x4x?x64xf16>
  %z = kiln.attention %q, %k1, %v1, %bias {num_heads = 4 : i64, num_kv_heads = 1 : i64, scale = 1.0 : f32} : (tensor<?x4x?x64xf16>, tensor<?x1x?x64xf16>, tensor<?x1x?x64xf16>, tensor<7x9xf16>) -> tensor<?x4x?x64xf16>
  return %y, %z : tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>
}

// -----

// The batch dim comes from whichever operand has it static.
// CHECK-LABEL: func.func @attention_batch_from_kv
// CHECK: -> tensor<3x2x5x8xf32>
func.func @attention_batch_from_kv(%q: tensor<?x2x5x4xf32>, %k: tensor<3x2x7x4xf32>, %v: tensor<?x2x7x8xf32>) -> tensor<3x2x5x8xf32> {
  %none = kiln.none
  %y = kiln.attention %q, %k, %v, %none {num_heads = 2 : i64, num_kv_heads = 2 : i64, scale = 0.5 : f32} : (tensor<?x2x5x4xf32>, tensor<3x2x7x4xf32>, tensor<?x2x7x8xf32>, none) -> tensor<3x2x5x8xf32>
  return %y : tensor<3x2x5x8xf32>
}

// -----

// CHECK-LABEL: func.func @linear_attention
// CHECK: kiln.linear_attention %{{.*}}, %{{.*}}, %{{.*}} {feature_map = "elu1", num_heads = 4 : i64, num_kv_heads = 4 : i64} : (tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32>, tensor<2x4x64x16xf32>) -> tensor<2x4x64x16xf32>
// CHECK: kiln.linear_attention %{{.*}}, %{{.*}}, %{{.*}} {eps = 1.000000e-03 : f32, feature_map = "relu", num_heads = 4 : i64, num_kv_heads = 2 : i64} : (tensor<2x4x?x32xf32>, tensor<2x2x64x32xf32>, tensor<2x2x64x16xf32>) -> tensor<2x4x?x16xf32>
func.func @linear_attention(%q: tensor<2x4x64x32xf32>, %k: tensor<2x4x64x32xf32>, %v: tensor<2x4x64x16xf32>,
                            %q2: tensor<2x4x?x32xf32>, %k2: tensor<2x2x64x32xf32>, %v2: tensor<2x2x64x16xf32>) -> (tensor<2x4x64x16xf32>, tensor<2x4x?x16xf32>) {
  %y = kiln.linear_attention %q, %k, %v {feature_map = "elu1", eps = 1.0e-6 : f32, num_heads = 4 : i64, num_kv_heads = 4 : i64} : (tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32>, tensor<2x4x64x16xf32>) -> tensor<2x4x64x16xf32>
  %z = kiln.linear_attention %q2, %k2, %v2 {feature_map = "relu", eps = 1.0e-3 : f32, num_heads = 4 : i64, num_kv_heads = 2 : i64} : (tensor<2x4x?x32xf32>, tensor<2x2x64x32xf32>, tensor<2x2x64x16xf32>) -> tensor<2x4x?x16xf32>
  return %y, %z : tensor<2x4x64x16xf32>, tensor<2x4x?x16xf32>
}

// -----

// The [B, S, H, D] layout: heads and sequence swapped in Q, K, V and Y.
// CHECK-LABEL: func.func @bshd
//       CHECK:   kiln.attention {{.*}}layout = "bshd"{{.*}} -> tensor<2x16x8x32xf32>
func.func @bshd(%q: tensor<2x16x8x32xf32>, %k: tensor<2x16x2x32xf32>, %v: tensor<2x16x2x32xf32>) -> tensor<2x16x8x32xf32> {
  %none = kiln.none
  %y = kiln.attention %q, %k, %v, %none {causal = true, layout = "bshd", num_heads = 8 : i64, num_kv_heads = 2 : i64, scale = 0.176776692 : f32} : (tensor<2x16x8x32xf32>, tensor<2x16x2x32xf32>, tensor<2x16x2x32xf32>, none) -> tensor<2x16x8x32xf32>
  return %y : tensor<2x16x8x32xf32>
}
