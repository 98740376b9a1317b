// RUN: kiln-opt %s -split-input-file -kiln-decompose-fused | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-decompose-fused=ops=silu | FileCheck %s --check-prefix=ONLY

// Decompositions of kiln.rms_norm, kiln.silu, kiln.swiglu, kiln.fused_matmul
// and kiln.fused_conv back into ONNX-level kiln ops.

// CHECK-LABEL: func.func @rms_norm
// CHECK-SAME: (%[[X:.+]]: tensor<2x8x16xf32>, %[[W:.+]]: tensor<16xf32>)
// CHECK-DAG: %[[EPS:.+]] = kiln.constant dense<9.99999997E-7> : tensor<f32>
// CHECK-DAG: %[[NONE:.+]] = kiln.none
// CHECK: %[[SQ:.+]] = kiln.mul %[[X]], %[[X]]
// CHECK: %[[MEAN:.+]] = kiln.reduce_mean %[[SQ]], %[[NONE]] {axes = array<i64: 2>}
// CHECK-SAME: -> tensor<2x8x1xf32>
// CHECK: %[[SUM:.+]] = kiln.add %[[MEAN]], %[[EPS]]
// CHECK: %[[ROOT:.+]] = kiln.sqrt %[[SUM]]
// CHECK: %[[N:.+]] = kiln.div %[[X]], %[[ROOT]]
// CHECK: %[[Y:.+]] = kiln.mul %[[N]], %[[W]]
// CHECK: return %[[Y]]
// ONLY-LABEL: func.func @rms_norm
// ONLY: kiln.rms_norm
func.func @rms_norm(%x: tensor<2x8x16xf32>, %w: tensor<16xf32>) -> tensor<2x8x16xf32> {
  %y = kiln.rms_norm %x, %w {epsilon = 1.0e-06 : f32} : (tensor<2x8x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// Two normalized dims, statistics in f32 for an f16 input: casts around the
// normalization, the scale applied in f16.
// CHECK-LABEL: func.func @rms_norm_f16_stash
// CHECK-SAME: (%[[X:.+]]: tensor<2x8x16xf16>, %[[W:.+]]: tensor<8x16xf16>)
// CHECK: %[[UP:.+]] = kiln.cast %[[X]] {to = f32} : (tensor<2x8x16xf16>) -> tensor<2x8x16xf32>
// CHECK: %[[SQ:.+]] = kiln.mul %[[UP]], %[[UP]]
// CHECK: kiln.reduce_mean %[[SQ]], %{{.+}} {axes = array<i64: 1, 2>}
// CHECK: %[[N:.+]] = kiln.div %[[UP]], %{{.+}} : (tensor<2x8x16xf32>, tensor<2x1x1xf32>) -> tensor<2x8x16xf32>
// CHECK: %[[DOWN:.+]] = kiln.cast %[[N]] {to = f16} : (tensor<2x8x16xf32>) -> tensor<2x8x16xf16>
// CHECK: kiln.mul %[[DOWN]], %[[W]] : (tensor<2x8x16xf16>, tensor<8x16xf16>) -> tensor<2x8x16xf16>
func.func @rms_norm_f16_stash(%x: tensor<2x8x16xf16>, %w: tensor<8x16xf16>) -> tensor<2x8x16xf16> {
  %y = kiln.rms_norm %x, %w {axis = 1 : i64, epsilon = 1.0e-05 : f32, stash_type = 1 : i64} : (tensor<2x8x16xf16>, tensor<8x16xf16>) -> tensor<2x8x16xf16>
  return %y : tensor<2x8x16xf16>
}

// -----

// CHECK-LABEL: func.func @silu
// CHECK-SAME: (%[[X:.+]]: tensor<4x?xf32>)
// CHECK: %[[S:.+]] = kiln.sigmoid %[[X]] : tensor<4x?xf32>
// CHECK: %[[Y:.+]] = kiln.mul %[[X]], %[[S]]
// CHECK: return %[[Y]]
// ONLY-LABEL: func.func @silu
// ONLY-NOT: kiln.silu
// ONLY: kiln.sigmoid
func.func @silu(%x: tensor<4x?xf32>) -> tensor<4x?xf32> {
  %y = kiln.silu %x : tensor<4x?xf32>
  return %y : tensor<4x?xf32>
}

// -----

// CHECK-LABEL: func.func @swiglu
// CHECK-SAME: (%[[G:.+]]: tensor<2x32xf32>, %[[U:.+]]: tensor<2x32xf32>)
// CHECK: %[[S:.+]] = kiln.sigmoid %[[G]]
// CHECK: %[[SILU:.+]] = kiln.mul %[[G]], %[[S]]
// CHECK: %[[Y:.+]] = kiln.mul %[[SILU]], %[[U]]
// CHECK: return %[[Y]]
func.func @swiglu(%g: tensor<2x32xf32>, %u: tensor<2x32xf32>) -> tensor<2x32xf32> {
  %y = kiln.swiglu %g, %u : tensor<2x32xf32>
  return %y : tensor<2x32xf32>
}

// -----

// 2-D operands: a Gemm carries bias, alpha and trans_b.
// CHECK-LABEL: func.func @fused_matmul_2d
// CHECK-SAME: (%[[A:.+]]: tensor<4x8xf32>, %[[B:.+]]: tensor<16x8xf32>, %[[BIAS:.+]]: tensor<16xf32>)
// CHECK: %[[G:.+]] = kiln.gemm %[[A]], %[[B]], %[[BIAS]] {alpha = 5.000000e-01 : f32, transB = 1 : i64}
// CHECK: %[[Y:.+]] = kiln.relu %[[G]]
// CHECK: return %[[Y]]
func.func @fused_matmul_2d(%a: tensor<4x8xf32>, %b: tensor<16x8xf32>, %bias: tensor<16xf32>) -> tensor<4x16xf32> {
  %none = kiln.none
  %y = kiln.fused_matmul %a, %b, %bias, %none {activation = "relu", alpha = 0.5 : f32, trans_b = true} : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>, none) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// Batched: Transpose, MatMul, alpha, bias, then the residual after the
// activation.
// CHECK-LABEL: func.func @fused_matmul_batched
// CHECK-SAME: (%[[A:.+]]: tensor<2x4x8xf32>, %[[B:.+]]: tensor<16x8xf32>, %[[BIAS:.+]]: tensor<16xf32>, %[[R:.+]]: tensor<2x4x16xf32>)
// CHECK-DAG: %[[ALPHA:.+]] = kiln.constant dense<2.000000e+00> : tensor<f32>
// CHECK: %[[BT:.+]] = kiln.transpose %[[B]] {perm = array<i64: 1, 0>}
// CHECK: %[[P:.+]] = kiln.matmul %[[A]], %[[BT]] : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
// CHECK: %[[S:.+]] = kiln.mul %[[P]], %[[ALPHA]]
// CHECK: %[[PB:.+]] = kiln.add %[[S]], %[[BIAS]]
// CHECK: %[[ACT:.+]] = kiln.gelu %[[PB]] {approximate = "tanh"}
// CHECK: %[[Y:.+]] = kiln.add %[[ACT]], %[[R]]
// CHECK: return %[[Y]]
func.func @fused_matmul_batched(%a: tensor<2x4x8xf32>, %b: tensor<16x8xf32>, %bias: tensor<16xf32>, %r: tensor<2x4x16xf32>) -> tensor<2x4x16xf32> {
  %y = kiln.fused_matmul %a, %b, %bias, %r {activation = "gelu_tanh", alpha = 2.0 : f32, trans_b = true} : (tensor<2x4x8xf32>, tensor<16x8xf32>, tensor<16xf32>, tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  return %y : tensor<2x4x16xf32>
}

// -----

// Residual before the activation; silu is written out.
// CHECK-LABEL: func.func @fused_matmul_residual_first
// CHECK-SAME: (%[[A:.+]]: tensor<2x4x8xf32>, %[[B:.+]]: tensor<8x16xf32>, %[[R:.+]]: tensor<2x4x16xf32>)
// CHECK: %[[P:.+]] = kiln.matmul %[[A]], %[[B]]
// CHECK: %[[PR:.+]] = kiln.add %[[P]], %[[R]]
// CHECK: %[[S:.+]] = kiln.sigmoid %[[PR]]
// CHECK: %[[Y:.+]] = kiln.mul %[[PR]], %[[S]]
// CHECK: return %[[Y]]
func.func @fused_matmul_residual_first(%a: tensor<2x4x8xf32>, %b: tensor<8x16xf32>, %r: tensor<2x4x16xf32>) -> tensor<2x4x16xf32> {
  %none = kiln.none
  %y = kiln.fused_matmul %a, %b, %none, %r {activation = "silu", residual_before_activation = true} : (tensor<2x4x8xf32>, tensor<8x16xf32>, none, tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  return %y : tensor<2x4x16xf32>
}

// -----

// CHECK-LABEL: func.func @fused_conv
// CHECK-SAME: (%[[X:.+]]: tensor<1x3x8x8xf32>, %[[W:.+]]: tensor<4x3x3x3xf32>, %[[B:.+]]: tensor<4xf32>, %[[R:.+]]: tensor<1x4x8x8xf32>)
// CHECK: %[[C:.+]] = kiln.conv %[[X]], %[[W]], %[[B]] {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}
// CHECK: %[[CR:.+]] = kiln.add %[[C]], %[[R]]
// CHECK: %[[Y:.+]] = kiln.relu %[[CR]]
// CHECK: return %[[Y]]
func.func @fused_conv(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>, %r: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %y = kiln.fused_conv %x, %w, %b, %r {activation = "relu", pads = array<i64: 1, 1, 1, 1>, residual_before_activation = true, strides = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  return %y : tensor<1x4x8x8xf32>
}

// -----

// No residual, sigmoid after the conv.
// CHECK-LABEL: func.func @fused_conv_sigmoid
// CHECK: %[[C:.+]] = kiln.conv
// CHECK: %[[Y:.+]] = kiln.sigmoid %[[C]]
// CHECK: return %[[Y]]
func.func @fused_conv_sigmoid(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %none = kiln.none
  %y = kiln.fused_conv %x, %w, %none, %none {activation = "sigmoid"} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, none, none) -> tensor<1x4x6x6xf32>
  return %y : tensor<1x4x6x6xf32>
}
