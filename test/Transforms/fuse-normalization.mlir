// RUN: kiln-opt %s -split-input-file -kiln-fuse-normalization | FileCheck %s

// RMSNorm and LayerNorm written out as plain ops, and forms that must be
// left alone.

// The demo transformer block's RMSNorm (PyTorch export): Pow 2, ReduceMean
// over the last axis, Add eps, Sqrt, Div, Mul by the weight on the left. The
// weight is a dense_resource blob, as large initializers are.
// CHECK-LABEL: func.func @rms_norm_torch
// CHECK-SAME: (%[[X:.+]]: tensor<2x16x4xf32>)
// CHECK: %[[W:.+]] = kiln.constant dense_resource<weight> : tensor<4xf32>
// CHECK-NEXT: %[[Y:.+]] = kiln.rms_norm %[[X]], %[[W]] {epsilon = 9.99999997E-7 : f32} : (tensor<2x16x4xf32>, tensor<4xf32>) -> tensor<2x16x4xf32>
// CHECK-NEXT: return %[[Y]]
func.func @rms_norm_torch(%x: tensor<2x16x4xf32>) -> tensor<2x16x4xf32> {
  %none = kiln.none
  %w = kiln.constant dense_resource<weight> : tensor<4xf32>
  %two = kiln.constant dense<2.000000e+00> : tensor<f32>
  %0 = kiln.pow %x, %two : (tensor<2x16x4xf32>, tensor<f32>) -> tensor<2x16x4xf32>
  %1 = kiln.reduce_mean %0, %none {axes = array<i64: -1>} : (tensor<2x16x4xf32>, none) -> tensor<2x16x1xf32>
  %eps = kiln.constant dense<9.99999997E-7> : tensor<f32>
  %2 = kiln.add %1, %eps : (tensor<2x16x1xf32>, tensor<f32>) -> tensor<2x16x1xf32>
  %3 = kiln.sqrt %2 : tensor<2x16x1xf32>
  %4 = kiln.div %x, %3 : (tensor<2x16x4xf32>, tensor<2x16x1xf32>) -> tensor<2x16x4xf32>
  %5 = kiln.mul %w, %4 : (tensor<4xf32>, tensor<2x16x4xf32>) -> tensor<2x16x4xf32>
  return %5 : tensor<2x16x4xf32>
}

{-#
  dialect_resources: {
    builtin: {
      weight: "0x040000000000803F0000803F0000803F0000803F"
    }
  }
#-}

// -----

// x * x, the axes as an operand, eps on the left, x * Reciprocal(Sqrt),
// the weight on the right.
// CHECK-LABEL: func.func @rms_norm_reciprocal
// CHECK-SAME: (%[[X:.+]]: tensor<3x8xf32>, %[[W:.+]]: tensor<8xf32>)
// CHECK-NEXT: %[[Y:.+]] = kiln.rms_norm %[[X]], %[[W]] : (tensor<3x8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
// CHECK-NEXT: return %[[Y]]
func.func @rms_norm_reciprocal(%x: tensor<3x8xf32>, %w: tensor<8xf32>) -> tensor<3x8xf32> {
  %axes = kiln.constant dense<[1]> : tensor<1xi64>
  %eps = kiln.constant dense<9.99999974E-6> : tensor<1xf32>
  %0 = kiln.mul %x, %x : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>
  %1 = kiln.reduce_mean %0, %axes : (tensor<3x8xf32>, tensor<1xi64>) -> tensor<3x1xf32>
  %2 = kiln.add %eps, %1 : (tensor<1xf32>, tensor<3x1xf32>) -> tensor<3x1xf32>
  %3 = kiln.sqrt %2 : tensor<3x1xf32>
  %4 = kiln.reciprocal %3 : tensor<3x1xf32>
  %5 = kiln.mul %x, %4 : (tensor<3x8xf32>, tensor<3x1xf32>) -> tensor<3x8xf32>
  %6 = kiln.mul %5, %w : (tensor<3x8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
  return %6 : tensor<3x8xf32>
}

// -----

// Llama's RMSNorm on f16 activations: Cast to f32, normalize, Cast back,
// weight in f16. The casts become stash_type = 1 (f32).
// CHECK-LABEL: func.func @rms_norm_cast
// CHECK-SAME: (%[[X:.+]]: tensor<2x8xf16>, %[[W:.+]]: tensor<8xf16>)
// CHECK-NEXT: %[[Y:.+]] = kiln.rms_norm %[[X]], %[[W]] {epsilon = 9.99999997E-7 : f32} : (tensor<2x8xf16>, tensor<8xf16>) -> tensor<2x8xf16>
// CHECK-NEXT: return %[[Y]]
func.func @rms_norm_cast(%x: tensor<2x8xf16>, %w: tensor<8xf16>) -> tensor<2x8xf16> {
  %none = kiln.none
  %two = kiln.constant dense<2.000000e+00> : tensor<f32>
  %eps = kiln.constant dense<9.99999997E-7> : tensor<f32>
  %x32 = kiln.cast %x {to = f32} : (tensor<2x8xf16>) -> tensor<2x8xf32>
  %0 = kiln.pow %x32, %two : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %1 = kiln.reduce_mean %0, %none {axes = array<i64: -1>} : (tensor<2x8xf32>, none) -> tensor<2x1xf32>
  %2 = kiln.add %1, %eps : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %3 = kiln.sqrt %2 : tensor<2x1xf32>
  %4 = kiln.div %x32, %3 : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  %5 = kiln.cast %4 {to = f16} : (tensor<2x8xf32>) -> tensor<2x8xf16>
  %6 = kiln.mul %w, %5 : (tensor<8xf16>, tensor<2x8xf16>) -> tensor<2x8xf16>
  return %6 : tensor<2x8xf16>
}

// -----

// f16 without casts: computed in f16 (stash_type 10). Two trailing axes,
// no weight: a scale of ones. eps is 1e-5 as f16 holds it.
// CHECK-LABEL: func.func @rms_norm_two_axes_no_weight
// CHECK-SAME: (%[[X:.+]]: tensor<2x4x8xf16>)
// CHECK: %[[ONES:.+]] = kiln.constant dense<1.000000e+00> : tensor<4x8xf16>
// CHECK-NEXT: %[[Y:.+]] = kiln.rms_norm %[[X]], %[[ONES]] {axis = -2 : i64, epsilon = 1.00135803E-5 : f32, stash_type = 10 : i64}
// CHECK-NEXT: return %[[Y]]
func.func @rms_norm_two_axes_no_weight(%x: tensor<2x4x8xf16>) -> tensor<2x4x8xf16> {
  %none = kiln.none
  %eps = kiln.constant dense<1.0e-05> : tensor<f16>
  %0 = kiln.mul %x, %x : (tensor<2x4x8xf16>, tensor<2x4x8xf16>) -> tensor<2x4x8xf16>
  %1 = kiln.reduce_mean %0, %none {axes = array<i64: -1, 1>} : (tensor<2x4x8xf16>, none) -> tensor<2x1x1xf16>
  %2 = kiln.add %1, %eps : (tensor<2x1x1xf16>, tensor<f16>) -> tensor<2x1x1xf16>
  %3 = kiln.sqrt %2 : tensor<2x1x1xf16>
  %4 = kiln.div %x, %3 : (tensor<2x4x8xf16>, tensor<2x1x1xf16>) -> tensor<2x4x8xf16>
  return %4 : tensor<2x4x8xf16>
}

// -----

// A weight that spans a non-normalized dim stays a Mul after the fused
// normalization.
// CHECK-LABEL: func.func @rms_norm_weight_not_fused
// CHECK-SAME: (%[[X:.+]]: tensor<3x8xf32>, %[[W:.+]]: tensor<3x1xf32>)
// CHECK: %[[N:.+]] = kiln.rms_norm %[[X]], %{{.+}} : (tensor<3x8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
// CHECK-NEXT: %[[Y:.+]] = kiln.mul %[[N]], %[[W]]
// CHECK-NEXT: return %[[Y]]
func.func @rms_norm_weight_not_fused(%x: tensor<3x8xf32>, %w: tensor<3x1xf32>) -> tensor<3x8xf32> {
  %none = kiln.none
  %eps = kiln.constant dense<9.99999974E-6> : tensor<f32>
  %0 = kiln.mul %x, %x : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>
  %1 = kiln.reduce_mean %0, %none {axes = array<i64: 1>} : (tensor<3x8xf32>, none) -> tensor<3x1xf32>
  %2 = kiln.add %1, %eps : (tensor<3x1xf32>, tensor<f32>) -> tensor<3x1xf32>
  %3 = kiln.sqrt %2 : tensor<3x1xf32>
  %4 = kiln.div %x, %3 : (tensor<3x8xf32>, tensor<3x1xf32>) -> tensor<3x8xf32>
  %5 = kiln.mul %4, %w : (tensor<3x8xf32>, tensor<3x1xf32>) -> tensor<3x8xf32>
  return %5 : tensor<3x8xf32>
}

// -----

// Negative: the mean is over a non-trailing axis.
// CHECK-LABEL: func.func @rms_norm_non_trailing_axis
// CHECK-NOT: kiln.rms_norm
// CHECK: kiln.reduce_mean
func.func @rms_norm_non_trailing_axis(%x: tensor<2x16x4xf32>) -> tensor<2x16x4xf32> {
  %none = kiln.none
  %eps = kiln.constant dense<9.99999997E-7> : tensor<f32>
  %0 = kiln.mul %x, %x : (tensor<2x16x4xf32>, tensor<2x16x4xf32>) -> tensor<2x16x4xf32>
  %1 = kiln.reduce_mean %0, %none {axes = array<i64: 1>} : (tensor<2x16x4xf32>, none) -> tensor<2x1x4xf32>
  %2 = kiln.add %1, %eps : (tensor<2x1x4xf32>, tensor<f32>) -> tensor<2x1x4xf32>
  %3 = kiln.sqrt %2 : tensor<2x1x4xf32>
  %4 = kiln.div %x, %3 : (tensor<2x16x4xf32>, tensor<2x1x4xf32>) -> tensor<2x16x4xf32>
  return %4 : tensor<2x16x4xf32>
}

// -----

// Negative: eps is not a constant; keepdims = 0; the sqrt has another user.
// CHECK-LABEL: func.func @rms_norm_negatives
// CHECK-NOT: kiln.rms_norm
// CHECK: return
func.func @rms_norm_negatives(%x: tensor<2x8xf32>, %eps: tensor<f32>, %y: tensor<8x8xf32>) -> (tensor<2x8xf32>, tensor<8x8xf32>, tensor<2x8xf32>, tensor<2x1xf32>) {
  %none = kiln.none
  %0 = kiln.mul %x, %x : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %1 = kiln.reduce_mean %0, %none {axes = array<i64: -1>} : (tensor<2x8xf32>, none) -> tensor<2x1xf32>
  %2 = kiln.add %1, %eps : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %3 = kiln.sqrt %2 : tensor<2x1xf32>
  %4 = kiln.div %x, %3 : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>

  %c = kiln.constant dense<1.0e-06> : tensor<f32>
  %10 = kiln.mul %y, %y : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %11 = kiln.reduce_mean %10, %none {axes = array<i64: -1>, keepdims = 0 : i64} : (tensor<8x8xf32>, none) -> tensor<8xf32>
  %12 = kiln.add %11, %c : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %13 = kiln.sqrt %12 : tensor<8xf32>
  %14 = kiln.div %y, %13 : (tensor<8x8xf32>, tensor<8xf32>) -> tensor<8x8xf32>

  %20 = kiln.mul %x, %x : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %21 = kiln.reduce_mean %20, %none {axes = array<i64: -1>} : (tensor<2x8xf32>, none) -> tensor<2x1xf32>
  %22 = kiln.add %21, %c : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %23 = kiln.sqrt %22 : tensor<2x1xf32>
  %24 = kiln.div %x, %23 : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  return %4, %14, %24, %23 : tensor<2x8xf32>, tensor<8x8xf32>, tensor<2x8xf32>, tensor<2x1xf32>
}

// -----

// LayerNorm written out: ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt,
// Div, Mul gamma, Add beta.
// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME: (%[[X:.+]]: tensor<2x16x32xf32>, %[[G:.+]]: tensor<32xf32>, %[[B:.+]]: tensor<32xf32>)
// CHECK-NEXT: %[[Y:.+]], %{{.+}}, %{{.+}} = kiln.layer_normalization %[[X]], %[[G]], %[[B]] :
// CHECK-SAME: (tensor<2x16x32xf32>, tensor<32xf32>, tensor<32xf32>) -> (tensor<2x16x32xf32>, tensor<2x16x1xf32>, tensor<2x16x1xf32>)
// CHECK-NEXT: return %[[Y]]
func.func @layer_norm(%x: tensor<2x16x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>) -> tensor<2x16x32xf32> {
  %none = kiln.none
  %two = kiln.constant dense<2.000000e+00> : tensor<f32>
  %eps = kiln.constant dense<9.99999974E-6> : tensor<f32>
  %0 = kiln.reduce_mean %x, %none {axes = array<i64: -1>} : (tensor<2x16x32xf32>, none) -> tensor<2x16x1xf32>
  %1 = kiln.sub %x, %0 : (tensor<2x16x32xf32>, tensor<2x16x1xf32>) -> tensor<2x16x32xf32>
  %2 = kiln.pow %1, %two : (tensor<2x16x32xf32>, tensor<f32>) -> tensor<2x16x32xf32>
  %3 = kiln.reduce_mean %2, %none {axes = array<i64: -1>} : (tensor<2x16x32xf32>, none) -> tensor<2x16x1xf32>
  %4 = kiln.add %3, %eps : (tensor<2x16x1xf32>, tensor<f32>) -> tensor<2x16x1xf32>
  %5 = kiln.sqrt %4 : tensor<2x16x1xf32>
  %6 = kiln.div %1, %5 : (tensor<2x16x32xf32>, tensor<2x16x1xf32>) -> tensor<2x16x32xf32>
  %7 = kiln.mul %6, %g : (tensor<2x16x32xf32>, tensor<32xf32>) -> tensor<2x16x32xf32>
  %8 = kiln.add %7, %b : (tensor<2x16x32xf32>, tensor<32xf32>) -> tensor<2x16x32xf32>
  return %8 : tensor<2x16x32xf32>
}

// -----

// Without gamma and beta (elementwise_affine=False), x - mean squared by a
// Mul, the axes as an operand: a scale of ones and no B.
// CHECK-LABEL: func.func @layer_norm_no_affine
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>)
// CHECK-DAG: %[[ONES:.+]] = kiln.constant dense<1.000000e+00> : tensor<8xf32>
// CHECK-DAG: %[[NONE:.+]] = kiln.none
// CHECK: %[[Y:.+]], %{{.+}}, %{{.+}} = kiln.layer_normalization %[[X]], %[[ONES]], %[[NONE]] :
// CHECK-NEXT: return %[[Y]]
func.func @layer_norm_no_affine(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %axes = kiln.constant dense<[-1]> : tensor<1xi64>
  %eps = kiln.constant dense<9.99999974E-6> : tensor<f32>
  %0 = kiln.reduce_mean %x, %axes : (tensor<4x8xf32>, tensor<1xi64>) -> tensor<4x1xf32>
  %1 = kiln.sub %x, %0 : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %2 = kiln.mul %1, %1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = kiln.reduce_mean %2, %axes : (tensor<4x8xf32>, tensor<1xi64>) -> tensor<4x1xf32>
  %4 = kiln.add %3, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %5 = kiln.sqrt %4 : tensor<4x1xf32>
  %6 = kiln.div %1, %5 : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  return %6 : tensor<4x8xf32>
}

// -----

// Negative: the mean is over a non-trailing axis (dim 1 of 2x16x32).
// CHECK-LABEL: func.func @layer_norm_non_trailing_axis
// CHECK-NOT: kiln.layer_normalization
// CHECK-NOT: kiln.rms_norm
// CHECK: return
func.func @layer_norm_non_trailing_axis(%x: tensor<2x16x32xf32>) -> tensor<2x16x32xf32> {
  %none = kiln.none
  %two = kiln.constant dense<2.000000e+00> : tensor<f32>
  %eps = kiln.constant dense<9.99999974E-6> : tensor<f32>
  %0 = kiln.reduce_mean %x, %none {axes = array<i64: 1>} : (tensor<2x16x32xf32>, none) -> tensor<2x1x32xf32>
  %1 = kiln.sub %x, %0 : (tensor<2x16x32xf32>, tensor<2x1x32xf32>) -> tensor<2x16x32xf32>
  %2 = kiln.pow %1, %two : (tensor<2x16x32xf32>, tensor<f32>) -> tensor<2x16x32xf32>
  %3 = kiln.reduce_mean %2, %none {axes = array<i64: 1>} : (tensor<2x16x32xf32>, none) -> tensor<2x1x32xf32>
  %4 = kiln.add %3, %eps : (tensor<2x1x32xf32>, tensor<f32>) -> tensor<2x1x32xf32>
  %5 = kiln.sqrt %4 : tensor<2x1x32xf32>
  %6 = kiln.div %1, %5 : (tensor<2x16x32xf32>, tensor<2x1x32xf32>) -> tensor<2x16x32xf32>
  return %6 : tensor<2x16x32xf32>
}

// -----

// x - mean has a third user: not a LayerNorm. (Its RMSNorm over x - mean
// is still exact, and is what the RMSNorm pattern makes of it.)
// CHECK-LABEL: func.func @layer_norm_centred_extra_user
// CHECK-NOT: kiln.layer_normalization
// CHECK: %[[D:.+]] = kiln.sub
// CHECK: kiln.rms_norm %[[D]]
func.func @layer_norm_centred_extra_user(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %none = kiln.none
  %eps = kiln.constant dense<9.99999974E-6> : tensor<f32>
  %0 = kiln.reduce_mean %x, %none {axes = array<i64: -1>} : (tensor<4x8xf32>, none) -> tensor<4x1xf32>
  %1 = kiln.sub %x, %0 : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %2 = kiln.mul %1, %1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = kiln.reduce_mean %2, %none {axes = array<i64: -1>} : (tensor<4x8xf32>, none) -> tensor<4x1xf32>
  %4 = kiln.add %3, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %5 = kiln.sqrt %4 : tensor<4x1xf32>
  %6 = kiln.div %1, %5 : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  return %6, %1 : tensor<4x8xf32>, tensor<4x8xf32>
}
