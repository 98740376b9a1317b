// RUN: kiln-opt %s -split-input-file -kiln-fuse-epilogues | FileCheck %s

// Bias, activation and residual folded into kiln.fused_matmul and
// kiln.fused_conv, and chains that must be left alone.

// MatMul + a constant bias (a dense_resource blob) + GELU.
// CHECK-LABEL: func.func @matmul_bias_gelu
// CHECK-SAME: (%[[A:.+]]: tensor<2x4x8xf32>, %[[W:.+]]: tensor<8x4xf32>)
// CHECK: %[[B:.+]] = kiln.constant dense_resource<bias> : tensor<4xf32>
// CHECK: %[[NONE:.+]] = kiln.none
// CHECK-NEXT: %[[Y:.+]] = kiln.fused_matmul %[[A]], %[[W]], %[[B]], %[[NONE]] {activation = "gelu"} : (tensor<2x4x8xf32>, tensor<8x4xf32>, tensor<4xf32>, none) -> tensor<2x4x4xf32>
// CHECK-NEXT: return %[[Y]]
func.func @matmul_bias_gelu(%a: tensor<2x4x8xf32>, %w: tensor<8x4xf32>) -> tensor<2x4x4xf32> {
  %b = kiln.constant dense_resource<bias> : tensor<4xf32>
  %0 = kiln.matmul %a, %w : (tensor<2x4x8xf32>, tensor<8x4xf32>) -> tensor<2x4x4xf32>
  %1 = kiln.add %0, %b : (tensor<2x4x4xf32>, tensor<4xf32>) -> tensor<2x4x4xf32>
  %2 = kiln.gelu %1 : tensor<2x4x4xf32>
  return %2 : tensor<2x4x4xf32>
}

{-#
  dialect_resources: {
    builtin: {
      bias: "0x040000000000803F000000400000404000008040"
    }
  }
#-}

// -----

// A [1, 1, N] bias on the left is re-typed to [N]; SiLU.
// CHECK-LABEL: func.func @matmul_bias_rank3_silu
// CHECK-DAG: %[[B:.+]] = kiln.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>
// CHECK: kiln.fused_matmul %{{.+}}, %{{.+}}, %[[B]], %{{.+}} {activation = "silu"}
// CHECK-NOT: kiln.add
func.func @matmul_bias_rank3_silu(%a: tensor<2x4x8xf32>, %w: tensor<8x4xf32>) -> tensor<2x4x4xf32> {
  %b = kiln.constant dense<[[[1.0, 2.0, 3.0, 4.0]]]> : tensor<1x1x4xf32>
  %0 = kiln.matmul %a, %w : (tensor<2x4x8xf32>, tensor<8x4xf32>) -> tensor<2x4x4xf32>
  %1 = kiln.add %b, %0 : (tensor<1x1x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %2 = kiln.silu %1 : tensor<2x4x4xf32>
  return %2 : tensor<2x4x4xf32>
}

// -----

// The transformer block's residual stream: x + MatMul(h, W), no activation.
// CHECK-LABEL: func.func @matmul_residual
// CHECK-SAME: (%[[X:.+]]: tensor<2x16x32xf32>, %[[H:.+]]: tensor<2x16x64xf32>, %[[W:.+]]: tensor<64x32xf32>)
// CHECK: %[[NONE:.+]] = kiln.none
// CHECK-NEXT: %[[Y:.+]] = kiln.fused_matmul %[[H]], %[[W]], %[[NONE]], %[[X]] :
// CHECK-NEXT: return %[[Y]]
func.func @matmul_residual(%x: tensor<2x16x32xf32>, %h: tensor<2x16x64xf32>, %w: tensor<64x32xf32>) -> tensor<2x16x32xf32> {
  %0 = kiln.matmul %h, %w : (tensor<2x16x64xf32>, tensor<64x32xf32>) -> tensor<2x16x32xf32>
  %1 = kiln.add %x, %0 : (tensor<2x16x32xf32>, tensor<2x16x32xf32>) -> tensor<2x16x32xf32>
  return %1 : tensor<2x16x32xf32>
}

// -----

// B = Transpose(W) over the last two dims: W is read with trans_b; ReLU.
// CHECK-LABEL: func.func @matmul_transposed_weight
// CHECK-SAME: (%[[A:.+]]: tensor<4x8xf32>, %[[W:.+]]: tensor<16x8xf32>)
// CHECK: %[[Y:.+]] = kiln.fused_matmul %[[A]], %[[W]], %{{.+}}, %{{.+}} {activation = "relu", trans_b = true} : (tensor<4x8xf32>, tensor<16x8xf32>, none, none) -> tensor<4x16xf32>
// CHECK-NEXT: return %[[Y]]
func.func @matmul_transposed_weight(%a: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
  %wt = kiln.transpose %w {perm = array<i64: 1, 0>} : (tensor<16x8xf32>) -> tensor<8x16xf32>
  %0 = kiln.matmul %a, %wt : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %1 = kiln.relu %0 : tensor<4x16xf32>
  return %1 : tensor<4x16xf32>
}

// -----

// A MatMul reading a weight stored N x K through a single-use Transpose is
// rewritten for that alone; a Transpose with another user is kept, and
// its MatMul with nothing after it is left alone.
// CHECK-LABEL: func.func @matmul_transposed_weight_only
// CHECK-SAME: (%[[A:.+]]: tensor<2x4x8xf32>, %[[W:.+]]: tensor<16x8xf32>, %[[V:.+]]: tensor<2x16x8xf32>)
// CHECK: %[[Y:.+]] = kiln.fused_matmul %[[A]], %[[W]], %{{.+}}, %{{.+}} {trans_b = true} : (tensor<2x4x8xf32>, tensor<16x8xf32>, none, none) -> tensor<2x4x16xf32>
// CHECK: %[[VT:.+]] = kiln.transpose %[[V]] {perm = array<i64: 0, 2, 1>}
// CHECK: %[[Z:.+]] = kiln.matmul %[[A]], %[[VT]]
// CHECK: return %[[Y]], %[[Z]], %[[VT]]
func.func @matmul_transposed_weight_only(%a: tensor<2x4x8xf32>, %w: tensor<16x8xf32>, %v: tensor<2x16x8xf32>) -> (tensor<2x4x16xf32>, tensor<2x4x16xf32>, tensor<2x8x16xf32>) {
  %wt = kiln.transpose %w {perm = array<i64: 1, 0>} : (tensor<16x8xf32>) -> tensor<8x16xf32>
  %0 = kiln.matmul %a, %wt : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
  %vt = kiln.transpose %v {perm = array<i64: 0, 2, 1>} : (tensor<2x16x8xf32>) -> tensor<2x8x16xf32>
  %1 = kiln.matmul %a, %vt : (tensor<2x4x8xf32>, tensor<2x8x16xf32>) -> tensor<2x4x16xf32>
  return %0, %1, %vt : tensor<2x4x16xf32>, tensor<2x4x16xf32>, tensor<2x8x16xf32>
}

// -----

// Gemm: C is the bias, alpha and transB carry over; then Tanh and a residual.
// CHECK-LABEL: func.func @gemm
// CHECK-SAME: (%[[A:.+]]: tensor<4x8xf32>, %[[W:.+]]: tensor<16x8xf32>, %[[C:.+]]: tensor<1x16xf32>, %[[R:.+]]: tensor<4x16xf32>)
// CHECK: %[[B:.+]] = kiln.reshape %[[C]], %{{.+}} : (tensor<1x16xf32>, tensor<1xi64>) -> tensor<16xf32>
// CHECK: %[[Y:.+]] = kiln.fused_matmul %[[A]], %[[W]], %[[B]], %[[R]] {activation = "tanh", alpha = 5.000000e-01 : f32, trans_b = true}
// CHECK-NEXT: return %[[Y]]
func.func @gemm(%a: tensor<4x8xf32>, %w: tensor<16x8xf32>, %c: tensor<1x16xf32>, %r: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %0 = kiln.gemm %a, %w, %c {alpha = 0.5 : f32, transB = 1 : i64} : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<1x16xf32>) -> tensor<4x16xf32>
  %1 = kiln.tanh %0 : tensor<4x16xf32>
  %2 = kiln.add %1, %r : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  return %2 : tensor<4x16xf32>
}

// -----

// Gemms left alone: beta != 1 with C, transA, a C that is not a bias, and
// one with nothing after it.
// CHECK-LABEL: func.func @gemm_negative
// CHECK-NOT: kiln.fused_matmul
// CHECK: return
func.func @gemm_negative(%a: tensor<4x8xf32>, %w: tensor<8x16xf32>, %c: tensor<16xf32>, %m: tensor<4x1xf32>, %at: tensor<8x4xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>) {
  %0 = kiln.gemm %a, %w, %c {beta = 2.0 : f32} : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %1 = kiln.relu %0 : tensor<4x16xf32>
  %2 = kiln.gemm %at, %w, %c {transA = 1 : i64} : (tensor<8x4xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %3 = kiln.relu %2 : tensor<4x16xf32>
  %4 = kiln.gemm %a, %w, %m : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<4x1xf32>) -> tensor<4x16xf32>
  %5 = kiln.relu %4 : tensor<4x16xf32>
  %6 = kiln.gemm %a, %w, %c : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %1, %3, %5, %6 : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

// Extra users: the MatMul's result is returned too (nothing fused); the
// bias Add's result is returned (the bias is fused, the ReLU stays).
// CHECK-LABEL: func.func @matmul_extra_users
// CHECK-SAME: (%[[A:.+]]: tensor<4x8xf32>, %[[W:.+]]: tensor<8x16xf32>, %[[B:.+]]: tensor<16xf32>)
// CHECK: %[[P:.+]] = kiln.matmul %[[A]], %[[W]]
// CHECK: %[[R1:.+]] = kiln.relu
// CHECK: %[[F:.+]] = kiln.fused_matmul %[[A]], %[[W]], %[[B]], %{{.+}} :
// CHECK-NEXT: %[[R2:.+]] = kiln.relu %[[F]]
// CHECK-NEXT: return %[[R1]], %[[P]], %[[R2]], %[[F]]
func.func @matmul_extra_users(%a: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>) {
  %0 = kiln.matmul %a, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %1 = kiln.add %0, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %2 = kiln.relu %1 : tensor<4x16xf32>
  %3 = kiln.matmul %a, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %4 = kiln.add %3, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %5 = kiln.relu %4 : tensor<4x16xf32>
  return %2, %0, %5, %4 : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

// A column-broadcast add ([M, 1]) is not a bias over the last dim.
// CHECK-LABEL: func.func @matmul_row_add
// CHECK-NOT: kiln.fused_matmul
// CHECK: kiln.matmul
func.func @matmul_row_add(%a: tensor<4x8xf32>, %w: tensor<8x16xf32>, %m: tensor<4x1xf32>) -> tensor<4x16xf32> {
  %0 = kiln.matmul %a, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %1 = kiln.add %0, %m : (tensor<4x16xf32>, tensor<4x1xf32>) -> tensor<4x16xf32>
  return %1 : tensor<4x16xf32>
}

// -----

// ResNet's Conv (BatchNormalization folded into B) + ReLU.
// CHECK-LABEL: func.func @conv_relu
// CHECK-SAME: (%[[X:.+]]: tensor<1x3x8x8xf32>, %[[W:.+]]: tensor<4x3x3x3xf32>, %[[B:.+]]: tensor<4xf32>)
// CHECK: %[[Y:.+]] = kiln.fused_conv %[[X]], %[[W]], %[[B]], %{{.+}} {activation = "relu", pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, none) -> tensor<1x4x8x8xf32>
// CHECK-NEXT: return %[[Y]]
func.func @conv_relu(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x4x8x8xf32> {
  %0 = kiln.conv %x, %w, %b {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
  %1 = kiln.relu %0 : tensor<1x4x8x8xf32>
  return %1 : tensor<1x4x8x8xf32>
}

// -----

// A ResNet basic block's end: Conv without B, a [C, 1, 1] bias, the
// shortcut, then ReLU: relu(conv + b + shortcut).
// CHECK-LABEL: func.func @conv_bias_residual_relu
// CHECK-SAME: (%[[X:.+]]: tensor<1x4x8x8xf32>, %[[W:.+]]: tensor<4x4x3x3xf32>, %[[S:.+]]: tensor<1x4x8x8xf32>)
// CHECK-DAG: %[[B:.+]] = kiln.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>
// CHECK: %[[Y:.+]] = kiln.fused_conv %[[X]], %[[W]], %[[B]], %[[S]] {activation = "relu", pads = array<i64: 1, 1, 1, 1>, residual_before_activation = true}
// CHECK-NEXT: return %[[Y]]
func.func @conv_bias_residual_relu(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>, %s: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %none = kiln.none
  %b = kiln.constant dense<[[[1.0]], [[2.0]], [[3.0]], [[4.0]]]> : tensor<4x1x1xf32>
  %0 = kiln.conv %x, %w, %none {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>, none) -> tensor<1x4x8x8xf32>
  %1 = kiln.add %0, %b : (tensor<1x4x8x8xf32>, tensor<4x1x1xf32>) -> tensor<1x4x8x8xf32>
  %2 = kiln.add %1, %s : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %3 = kiln.relu %2 : tensor<1x4x8x8xf32>
  return %3 : tensor<1x4x8x8xf32>
}

// -----

// The residual after the activation: act(conv) + shortcut.
// CHECK-LABEL: func.func @conv_relu_then_residual
// CHECK-SAME: (%[[X:.+]]: tensor<1x4x8x8xf32>, %[[W:.+]]: tensor<4x4x1x1xf32>, %[[B:.+]]: tensor<4xf32>, %[[S:.+]]: tensor<1x4x8x8xf32>)
// CHECK: %[[Y:.+]] = kiln.fused_conv %[[X]], %[[W]], %[[B]], %[[S]] {activation = "sigmoid"} :
// CHECK-NEXT: return %[[Y]]
func.func @conv_relu_then_residual(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x1x1xf32>, %b: tensor<4xf32>, %s: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %0 = kiln.conv %x, %w, %b : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
  %1 = kiln.sigmoid %0 : tensor<1x4x8x8xf32>
  %2 = kiln.add %s, %1 : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  return %2 : tensor<1x4x8x8xf32>
}

// -----

// Left alone: a channel add after a Conv that already has B, and a Conv
// whose ReLU is not its only user.
// CHECK-LABEL: func.func @conv_negative
// CHECK-NOT: kiln.fused_conv
// CHECK: return
func.func @conv_negative(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x1x1xf32>, %b: tensor<4xf32>, %c: tensor<4x1x1xf32>) -> (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) {
  %0 = kiln.conv %x, %w, %b : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
  %1 = kiln.add %0, %c : (tensor<1x4x8x8xf32>, tensor<4x1x1xf32>) -> tensor<1x4x8x8xf32>
  %2 = kiln.conv %x, %w, %b : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
  %3 = kiln.relu %2 : tensor<1x4x8x8xf32>
  return %1, %2, %3 : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>
}
