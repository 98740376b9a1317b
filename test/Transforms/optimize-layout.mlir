// RUN: kiln-opt %s -split-input-file -kiln-optimize-layout | FileCheck %s

// Transpose sinking and cancellation (prefer-nhwc off; no conv here).

// Unary ops pass the transpose down to its inverse, where both cancel.
// CHECK-LABEL: func.func @unary_cancel(
// CHECK-SAME:    %[[X:.+]]: tensor<1x2x2x3xf32>
// CHECK-NOT:     kiln.transpose
// CHECK:         %[[R:.+]] = kiln.relu %[[X]] : tensor<1x2x2x3xf32>
// CHECK-NEXT:    %[[L:.+]] = kiln.leaky_relu %[[R]] {alpha = 1.000000e-01 : f32} : tensor<1x2x2x3xf32>
// CHECK-NEXT:    return %[[L]]
func.func @unary_cancel(%x: tensor<1x2x2x3xf32>) -> tensor<1x2x2x3xf32> {
  %t = kiln.transpose %x {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x2x2x3xf32>) -> tensor<1x3x2x2xf32>
  %r = kiln.relu %t : tensor<1x3x2x2xf32>
  %e = kiln.leaky_relu %r {alpha = 0.1 : f32} : tensor<1x3x2x2xf32>
  %b = kiln.transpose %e {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x3x2x2xf32>) -> tensor<1x2x2x3xf32>
  return %b : tensor<1x2x2x3xf32>
}

// -----

// A per-channel NCHW constant [C, 1, 1] becomes [C] against NHWC data.
// CHECK-LABEL: func.func @per_channel_constant(
// CHECK-SAME:    %[[X:.+]]: tensor<1x2x2x3xf32>
// CHECK:         %[[C:.+]] = kiln.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00]> : tensor<3xf32>
// CHECK:         %[[A:.+]] = kiln.add %[[X]], %[[C]] : (tensor<1x2x2x3xf32>, tensor<3xf32>) -> tensor<1x2x2x3xf32>
// CHECK:         kiln.transpose %[[A]] {perm = array<i64: 0, 3, 1, 2>}
func.func @per_channel_constant(%x: tensor<1x2x2x3xf32>) -> tensor<1x3x2x2xf32> {
  %t = kiln.transpose %x {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x2x2x3xf32>) -> tensor<1x3x2x2xf32>
  %c = kiln.constant dense<[[[1.0]], [[2.0]], [[3.0]]]> : tensor<3x1x1xf32>
  %a = kiln.add %t, %c : (tensor<1x3x2x2xf32>, tensor<3x1x1xf32>) -> tensor<1x3x2x2xf32>
  return %a : tensor<1x3x2x2xf32>
}

// -----

// The other operand, a constant, is transposed at compile time.
// CHECK-LABEL: func.func @constant_transposed(
// CHECK-SAME:    %[[X:.+]]: tensor<3x2xf32>
// CHECK:         %[[C:.+]] = kiln.constant dense<{{\[\[}}1.000000e+00, 4.000000e+00], [2.000000e+00, 5.000000e+00], [3.000000e+00, 6.000000e+00]]> : tensor<3x2xf32>
// CHECK:         %[[S:.+]] = kiln.sub %[[C]], %[[X]] : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
// CHECK:         kiln.transpose %[[S]] {perm = array<i64: 1, 0>}
func.func @constant_transposed(%x: tensor<3x2xf32>) -> tensor<2x3xf32> {
  %t = kiln.transpose %x {perm = array<i64: 1, 0>} : (tensor<3x2xf32>) -> tensor<2x3xf32>
  %c = kiln.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %s = kiln.sub %c, %t : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %s : tensor<2x3xf32>
}

// -----

// A lower-rank constant is broadcast to the full rank before it is
// transposed: [3] against [2, 3] becomes [3, 1] against [3, 2].
// CHECK-LABEL: func.func @rank_broadcast(
// CHECK-SAME:    %[[X:.+]]: tensor<3x2xf32>
// CHECK:         %[[C:.+]] = kiln.constant dense<{{\[\[}}1.000000e+00], [2.000000e+00], [3.000000e+00]]> : tensor<3x1xf32>
// CHECK:         %[[M:.+]] = kiln.mul %[[X]], %[[C]] : (tensor<3x2xf32>, tensor<3x1xf32>) -> tensor<3x2xf32>
// CHECK:         kiln.transpose %[[M]] {perm = array<i64: 1, 0>}
func.func @rank_broadcast(%x: tensor<3x2xf32>) -> tensor<2x3xf32> {
  %t = kiln.transpose %x {perm = array<i64: 1, 0>} : (tensor<3x2xf32>) -> tensor<2x3xf32>
  %c = kiln.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %s = kiln.mul %t, %c : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %s : tensor<2x3xf32>
}

// -----

// Both operands transposed alike; a scalar stays as it is.
// CHECK-LABEL: func.func @both_transposed(
// CHECK-SAME:    %[[A:[^:]+]]: tensor<1x2x2x3xf32>, %[[B:[^:]+]]: tensor<1x2x2x3xf32>
// CHECK-DAG:     %[[TWO:.+]] = kiln.constant dense<2.000000e+00> : tensor<f32>
// CHECK:         %[[S:.+]] = kiln.add %[[A]], %[[B]]
// CHECK:         %[[M:.+]] = kiln.mul %[[S]], %[[TWO]]
// CHECK:         %[[T:.+]] = kiln.transpose %[[M]] {perm = array<i64: 0, 3, 1, 2>}
// CHECK-NOT:     kiln.transpose
// CHECK:         return %[[T]]
func.func @both_transposed(%a: tensor<1x2x2x3xf32>, %b: tensor<1x2x2x3xf32>) -> tensor<1x3x2x2xf32> {
  %ta = kiln.transpose %a {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x2x2x3xf32>) -> tensor<1x3x2x2xf32>
  %tb = kiln.transpose %b {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x2x2x3xf32>) -> tensor<1x3x2x2xf32>
  %s = kiln.add %ta, %tb : (tensor<1x3x2x2xf32>, tensor<1x3x2x2xf32>) -> tensor<1x3x2x2xf32>
  %two = kiln.constant dense<2.0> : tensor<f32>
  %m = kiln.mul %s, %two : (tensor<1x3x2x2xf32>, tensor<f32>) -> tensor<1x3x2x2xf32>
  return %m : tensor<1x3x2x2xf32>
}

// -----

// Comparison and Where (bool result, three operands, a [1] constant). The
// Greater merges two transposes into one although T(x) has another user;
// then the Where takes both.
// CHECK-LABEL: func.func @where_compare(
// CHECK-SAME:    %[[X:[^:]+]]: tensor<3x2xf32>, %[[Y:[^:]+]]: tensor<3x2xf32>
// CHECK:         %[[G:.+]] = kiln.greater %[[X]], %[[Y]] : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x2xi1>
// CHECK:         %[[W:.+]] = kiln.where %[[G]], %[[X]], %{{.+}} : (tensor<3x2xi1>, tensor<3x2xf32>, tensor<1xf32>) -> tensor<3x2xf32>
// CHECK:         kiln.transpose %[[W]] {perm = array<i64: 1, 0>}
// CHECK-NOT:     kiln.transpose
func.func @where_compare(%x: tensor<3x2xf32>, %y: tensor<3x2xf32>) -> tensor<2x3xf32> {
  %tx = kiln.transpose %x {perm = array<i64: 1, 0>} : (tensor<3x2xf32>) -> tensor<2x3xf32>
  %ty = kiln.transpose %y {perm = array<i64: 1, 0>} : (tensor<3x2xf32>) -> tensor<2x3xf32>
  %c = kiln.greater %tx, %ty : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  %z = kiln.constant dense<0.0> : tensor<1xf32>
  %w = kiln.where %c, %tx, %z : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<1xf32>) -> tensor<2x3xf32>
  return %w : tensor<2x3xf32>
}

// -----

// Negative: the other operand is neither a constant nor transposed alike.
// CHECK-LABEL: func.func @neg_other_operand(
// CHECK:         %[[T:.+]] = kiln.transpose
// CHECK:         kiln.add %[[T]], %{{.+}} : (tensor<2x3xf32>, tensor<2x3xf32>)
func.func @neg_other_operand(%x: tensor<3x2xf32>, %y: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %t = kiln.transpose %x {perm = array<i64: 1, 0>} : (tensor<3x2xf32>) -> tensor<2x3xf32>
  %s = kiln.add %t, %y : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %s : tensor<2x3xf32>
}

// -----

// Negative: the transpose also feeds a MatMul, which it cannot pass; moving
// it below the Relu would leave two transposes.
// CHECK-LABEL: func.func @neg_shared_with_matmul(
// CHECK:         %[[T:.+]] = kiln.transpose
// CHECK:         kiln.relu %[[T]] : tensor<2x3xf32>
// CHECK:         kiln.matmul %[[T]]
func.func @neg_shared_with_matmul(%x: tensor<3x2xf32>, %w: tensor<3x4xf32>) -> (tensor<2x3xf32>, tensor<2x4xf32>) {
  %t = kiln.transpose %x {perm = array<i64: 1, 0>} : (tensor<3x2xf32>) -> tensor<2x3xf32>
  %r = kiln.relu %t : tensor<2x3xf32>
  %m = kiln.matmul %t, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  return %r, %m : tensor<2x3xf32>, tensor<2x4xf32>
}

// -----

// Negative: the constant has a higher rank than the transpose, so the result
// rank is not the transpose's.
// CHECK-LABEL: func.func @neg_higher_rank_constant(
// CHECK:         %[[T:.+]] = kiln.transpose
// CHECK:         kiln.add %[[T]], %{{.+}} : (tensor<2x3xf32>, tensor<4x2x3xf32>)
func.func @neg_higher_rank_constant(%x: tensor<3x2xf32>) -> tensor<4x2x3xf32> {
  %t = kiln.transpose %x {perm = array<i64: 1, 0>} : (tensor<3x2xf32>) -> tensor<2x3xf32>
  %c = kiln.constant dense<1.0> : tensor<4x2x3xf32>
  %s = kiln.add %t, %c : (tensor<2x3xf32>, tensor<4x2x3xf32>) -> tensor<4x2x3xf32>
  return %s : tensor<4x2x3xf32>
}

// -----

// Negative: two transposes with different permutations.
// CHECK-LABEL: func.func @neg_different_perms(
// CHECK:         %[[A:.+]] = kiln.transpose %{{.+}} {perm = array<i64: 1, 2, 0>}
// CHECK:         %[[B:.+]] = kiln.transpose %{{.+}} {perm = array<i64: 2, 0, 1>}
// CHECK:         kiln.add %[[A]], %[[B]]
func.func @neg_different_perms(%a: tensor<2x3x4xf32>, %b: tensor<4x2x3xf32>) -> tensor<3x4x2xf32> {
  %ta = kiln.transpose %a {perm = array<i64: 1, 2, 0>} : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
  %tb = kiln.transpose %b {perm = array<i64: 2, 0, 1>} : (tensor<4x2x3xf32>) -> tensor<3x4x2xf32>
  %s = kiln.add %ta, %tb : (tensor<3x4x2xf32>, tensor<3x4x2xf32>) -> tensor<3x4x2xf32>
  return %s : tensor<3x4x2xf32>
}

// -----

// Negative: a transpose with two users, neither of which removes a
// transpose: moving it would copy it, so it stays.
// CHECK-LABEL: func.func @neg_shared_unary_users(
// CHECK-SAME:    %[[X:.+]]: tensor<3x2xf32>
// CHECK:         %[[T:.+]] = kiln.transpose %[[X]]
// CHECK:         kiln.relu %[[T]] : tensor<2x3xf32>
// CHECK:         kiln.exp %[[T]] : tensor<2x3xf32>
// CHECK-NOT:     kiln.transpose
func.func @neg_shared_unary_users(%x: tensor<3x2xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %t = kiln.transpose %x {perm = array<i64: 1, 0>} : (tensor<3x2xf32>) -> tensor<2x3xf32>
  %r = kiln.relu %t : tensor<2x3xf32>
  %e = kiln.exp %t : tensor<2x3xf32>
  return %r, %e : tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// Reduction axes are remapped (axes operand: a new constant), keepdims = 1.
// CHECK-LABEL: func.func @reduce_keepdims(
// CHECK-SAME:    %[[X:.+]]: tensor<1x4x4x3xf32>
// CHECK:         %[[AX:.+]] = kiln.constant dense<2> : tensor<1xi64>
// CHECK:         %[[R:.+]] = kiln.reduce_sum %[[X]], %[[AX]] : (tensor<1x4x4x3xf32>, tensor<1xi64>) -> tensor<1x4x1x3xf32>
// CHECK:         kiln.transpose %[[R]] {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x4x1x3xf32>) -> tensor<1x3x4x1xf32>
func.func @reduce_keepdims(%x: tensor<1x4x4x3xf32>) -> tensor<1x3x4x1xf32> {
  %t = kiln.transpose %x {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x4x4x3xf32>) -> tensor<1x3x4x4xf32>
  %axes = kiln.constant dense<[-1]> : tensor<1xi64>
  %r = kiln.reduce_sum %t, %axes : (tensor<1x3x4x4xf32>, tensor<1xi64>) -> tensor<1x3x4x1xf32>
  return %r : tensor<1x3x4x1xf32>
}

// -----

// keepdims = 0 (axes attribute): the surviving dims keep their order, so no
// transpose is left.
// CHECK-LABEL: func.func @reduce_no_keepdims(
// CHECK-SAME:    %[[X:.+]]: tensor<1x4x5x3xf32>
// CHECK-NOT:     kiln.transpose
// CHECK:         %[[R:.+]] = kiln.reduce_mean %[[X]], %{{.+}} {axes = array<i64: 1, 2>, keepdims = 0 : i64} : (tensor<1x4x5x3xf32>, none) -> tensor<1x3xf32>
// CHECK-NEXT:    return %[[R]]
func.func @reduce_no_keepdims(%x: tensor<1x4x5x3xf32>) -> tensor<1x3xf32> {
  %t = kiln.transpose %x {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x4x5x3xf32>) -> tensor<1x3x4x5xf32>
  %none = kiln.none
  %r = kiln.reduce_mean %t, %none {axes = array<i64: 2, 3>, keepdims = 0 : i64} : (tensor<1x3x4x5xf32>, none) -> tensor<1x3xf32>
  return %r : tensor<1x3xf32>
}

// -----

// keepdims = 0 where the surviving dims swap: a 2-D transpose remains.
// CHECK-LABEL: func.func @reduce_no_keepdims_permuted(
// CHECK:         %[[R:.+]] = kiln.reduce_max %{{.+}}, %{{.+}} {keepdims = 0 : i64} : (tensor<2x3x4xf32>, tensor<1xi64>) -> tensor<2x4xf32>
// CHECK:         kiln.transpose %[[R]] {perm = array<i64: 1, 0>} : (tensor<2x4xf32>) -> tensor<4x2xf32>
func.func @reduce_no_keepdims_permuted(%x: tensor<2x3x4xf32>) -> tensor<4x2xf32> {
  %t = kiln.transpose %x {perm = array<i64: 2, 1, 0>} : (tensor<2x3x4xf32>) -> tensor<4x3x2xf32>
  %axes = kiln.constant dense<[1]> : tensor<1xi64>
  %r = kiln.reduce_max %t, %axes {keepdims = 0 : i64} : (tensor<4x3x2xf32>, tensor<1xi64>) -> tensor<4x2xf32>
  return %r : tensor<4x2xf32>
}

// -----

// ArgMax: axis 2 of the transposed tensor is axis 0 of its input.
// CHECK-LABEL: func.func @arg_max(
// CHECK:         %[[R:.+]] = kiln.arg_max %{{.+}} {keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<3x4xi64>
// CHECK:         kiln.transpose %[[R]] {perm = array<i64: 1, 0>}
func.func @arg_max(%x: tensor<2x3x4xf32>) -> tensor<4x3xi64> {
  %t = kiln.transpose %x {perm = array<i64: 2, 1, 0>} : (tensor<2x3x4xf32>) -> tensor<4x3x2xf32>
  %r = kiln.arg_max %t {axis = 2 : i64, keepdims = 0 : i64} : (tensor<4x3x2xf32>) -> tensor<4x3xi64>
  return %r : tensor<4x3xi64>
}

// -----

// CHECK-LABEL: func.func @softmax_axis(
// CHECK:         %[[S:.+]] = kiln.softmax %{{.+}} {axis = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK:         kiln.transpose %[[S]] {perm = array<i64: 0, 2, 1>}
func.func @softmax_axis(%x: tensor<2x3x4xf32>) -> tensor<2x4x3xf32> {
  %t = kiln.transpose %x {perm = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  %s = kiln.softmax %t {axis = -1 : i64} : (tensor<2x4x3xf32>) -> tensor<2x4x3xf32>
  return %s : tensor<2x4x3xf32>
}

// -----

// LayerNormalization: legal when the normalized dims stay in place.
// CHECK-LABEL: func.func @layer_norm_legal(
// CHECK:         %[[Y:[^,]+]], %{{.+}}, %{{.+}} = kiln.layer_normalization %{{.+}}, %{{.+}}, %{{.+}} : (tensor<4x2x8xf32>, tensor<8xf32>, none)
// CHECK:         kiln.transpose %[[Y]] {perm = array<i64: 1, 0, 2>}
func.func @layer_norm_legal(%x: tensor<4x2x8xf32>, %scale: tensor<8xf32>) -> tensor<2x4x8xf32> {
  %t = kiln.transpose %x {perm = array<i64: 1, 0, 2>} : (tensor<4x2x8xf32>) -> tensor<2x4x8xf32>
  %none = kiln.none
  %y, %m, %i = kiln.layer_normalization %t, %scale, %none {axis = -1 : i64} : (tensor<2x4x8xf32>, tensor<8xf32>, none) -> (tensor<2x4x8xf32>, tensor<2x4x1xf32>, tensor<2x4x1xf32>)
  return %y : tensor<2x4x8xf32>
}

// -----

// Negative: the transpose moves a normalized dim.
// CHECK-LABEL: func.func @neg_layer_norm_illegal(
// CHECK:         %[[T:.+]] = kiln.transpose
// CHECK:         kiln.layer_normalization %[[T]]
func.func @neg_layer_norm_illegal(%x: tensor<2x8x4xf32>, %scale: tensor<8xf32>) -> tensor<2x4x8xf32> {
  %t = kiln.transpose %x {perm = array<i64: 0, 2, 1>} : (tensor<2x8x4xf32>) -> tensor<2x4x8xf32>
  %none = kiln.none
  %y, %m, %i = kiln.layer_normalization %t, %scale, %none {axis = -1 : i64} : (tensor<2x4x8xf32>, tensor<8xf32>, none) -> (tensor<2x4x8xf32>, tensor<2x4x1xf32>, tensor<2x4x1xf32>)
  return %y : tensor<2x4x8xf32>
}

// -----

// CHECK-LABEL: func.func @compose(
// CHECK:         kiln.transpose %{{.+}} {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT:    return
func.func @compose(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  %a = kiln.transpose %x {perm = array<i64: 1, 2, 0>} : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
  %b = kiln.transpose %a {perm = array<i64: 1, 2, 0>} : (tensor<3x4x2xf32>) -> tensor<4x2x3xf32>
  return %b : tensor<4x2x3xf32>
}

// -----

// A transpose of a constant (reversed dims, no perm) folds.
// CHECK-LABEL: func.func @fold_constant(
// CHECK-NEXT:    %[[C:.+]] = kiln.constant dense<{{\[\[}}1, 4], [2, 5], [3, 6]]> : tensor<3x2xi32>
// CHECK-NEXT:    return %[[C]]
func.func @fold_constant() -> tensor<3x2xi32> {
  %c = kiln.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>
  %t = kiln.transpose %c : (tensor<2x3xi32>) -> tensor<3x2xi32>
  return %t : tensor<3x2xi32>
}

// -----

// ... a dense_resource constant too.
// CHECK-LABEL: func.func @fold_resource(
// CHECK-NEXT:    %[[C:.+]] = kiln.constant dense<{{\[\[}}1.000000e+00, 3.000000e+00], [2.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>
// CHECK-NEXT:    return %[[C]]
func.func @fold_resource() -> tensor<2x2xf32> {
  %c = kiln.constant dense_resource<weight> : tensor<2x2xf32>
  %t = kiln.transpose %c {perm = array<i64: 1, 0>} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  return %t : tensor<2x2xf32>
}

{-#
  dialect_resources: {
    builtin: {
      weight: "0x040000000000803F000000400000404000008040"
    }
  }
#-}

// -----

// BatchNormalization whose channel dim the transpose moves becomes the same
// per-channel affine map x * a + b on the input's channel dim:
// a = scale / sqrt(var + eps) = [1, 1, 1], b = B - mean * a = [0.5, -1, -3].
// CHECK-LABEL: func.func @batch_norm_channel_moves(
// CHECK-SAME:    %[[X:.+]]: tensor<1x2x2x3xf32>
// CHECK-DAG:     %[[A:.+]] = kiln.constant dense<1.000000e+00> : tensor<3xf32>
// CHECK-DAG:     %[[B:.+]] = kiln.constant dense<[5.000000e-01, -1.000000e+00, -3.000000e+00]> : tensor<3xf32>
// CHECK:         %[[M:.+]] = kiln.mul %[[X]], %[[A]]
// CHECK:         %[[S:.+]] = kiln.add %[[M]], %[[B]]
// CHECK:         kiln.transpose %[[S]] {perm = array<i64: 0, 3, 1, 2>}
func.func @batch_norm_channel_moves(%x: tensor<1x2x2x3xf32>) -> tensor<1x3x2x2xf32> {
  %t = kiln.transpose %x {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x2x2x3xf32>) -> tensor<1x3x2x2xf32>
  %scale = kiln.constant dense<[1.0, 2.0, 4.0]> : tensor<3xf32>
  %bias = kiln.constant dense<[0.5, 0.0, -1.0]> : tensor<3xf32>
  %mean = kiln.constant dense<[0.0, 1.0, 2.0]> : tensor<3xf32>
  %var = kiln.constant dense<[1.0, 4.0, 16.0]> : tensor<3xf32>
  %y = kiln.batch_normalization %t, %scale, %bias, %mean, %var {epsilon = 0.0 : f32} : (tensor<1x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x3x2x2xf32>
  return %y : tensor<1x3x2x2xf32>
}

// -----

// A transpose that keeps the channel dim moves past BatchNormalization.
// CHECK-LABEL: func.func @batch_norm_channel_kept(
// CHECK:         %[[B:.+]] = kiln.batch_normalization %{{.+}} : (tensor<1x3x2x4xf32>
// CHECK:         kiln.transpose %[[B]] {perm = array<i64: 0, 1, 3, 2>}
func.func @batch_norm_channel_kept(%x: tensor<1x3x2x4xf32>, %s: tensor<3xf32>) -> tensor<1x3x4x2xf32> {
  %t = kiln.transpose %x {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x3x2x4xf32>) -> tensor<1x3x4x2xf32>
  %y = kiln.batch_normalization %t, %s, %s, %s, %s : (tensor<1x3x4x2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x3x4x2xf32>
  return %y : tensor<1x3x4x2xf32>
}

// -----

// Negative: parameters not known at compile time, channel dim moved.
// CHECK-LABEL: func.func @neg_batch_norm_runtime_params(
// CHECK:         %[[T:.+]] = kiln.transpose
// CHECK:         kiln.batch_normalization %[[T]]
func.func @neg_batch_norm_runtime_params(%x: tensor<1x2x2x3xf32>, %s: tensor<3xf32>) -> tensor<1x3x2x2xf32> {
  %t = kiln.transpose %x {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x2x2x3xf32>) -> tensor<1x3x2x2xf32>
  %y = kiln.batch_normalization %t, %s, %s, %s, %s : (tensor<1x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x3x2x2xf32>
  return %y : tensor<1x3x2x2xf32>
}

// -----

// A transpose that moves only dims of size 1 is a reshape.
// CHECK-LABEL: func.func @unit_dims_reshape(
// CHECK-SAME:    %[[X:.+]]: tensor<?x1x1x8xf32>
// CHECK:         %[[S:.+]] = kiln.constant dense<[-1, 8, 1, 1]> : tensor<4xi64>
// CHECK:         kiln.reshape %[[X]], %[[S]] : (tensor<?x1x1x8xf32>, tensor<4xi64>) -> tensor<?x8x1x1xf32>
// CHECK-NOT:     kiln.transpose
func.func @unit_dims_reshape(%x: tensor<?x1x1x8xf32>) -> tensor<?x8x1x1xf32> {
  %t = kiln.transpose %x {perm = array<i64: 0, 3, 1, 2>} : (tensor<?x1x1x8xf32>) -> tensor<?x8x1x1xf32>
  return %t : tensor<?x8x1x1xf32>
}

// -----

// A transpose that moves only 1s and keeps the type disappears.
// CHECK-LABEL: func.func @unit_dims_same_type(
// CHECK-SAME:    %[[X:.+]]: tensor<1x3x1xf32>
// CHECK-NEXT:    return %[[X]]
func.func @unit_dims_same_type(%x: tensor<1x3x1xf32>) -> tensor<1x3x1xf32> {
  %t = kiln.transpose %x {perm = array<i64: 2, 1, 0>} : (tensor<1x3x1xf32>) -> tensor<1x3x1xf32>
  return %t : tensor<1x3x1xf32>
}

// -----

// Concat of inputs transposed alike: the transpose goes below it and the
// axis follows it (NHWC -> NCHW, axis 1 = channels becomes axis 3), then
// cancels against the next one (a SqueezeNet Fire module between two
// channels-last convolutions). Inputs transposed differently stay.
// CHECK-LABEL: func.func @concat_channels(
// CHECK-SAME: %[[A:.+]]: tensor<1x8x8x16xf32>, %[[B:.+]]: tensor<1x8x8x32xf32>
// CHECK-NOT: kiln.transpose
// CHECK: %[[C:.+]] = kiln.concat %[[A]], %[[B]] {axis = 3 : i64} : (tensor<1x8x8x16xf32>, tensor<1x8x8x32xf32>) -> tensor<1x8x8x48xf32>
// CHECK-NOT: kiln.transpose
// CHECK: return %[[C]]
func.func @concat_channels(%a: tensor<1x8x8x16xf32>, %b: tensor<1x8x8x32xf32>) -> tensor<1x8x8x48xf32> {
  %ta = kiln.transpose %a {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x8x8x16xf32>) -> tensor<1x16x8x8xf32>
  %tb = kiln.transpose %b {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x8x8x32xf32>) -> tensor<1x32x8x8xf32>
  %c = kiln.concat %ta, %tb {axis = 1 : i64} : (tensor<1x16x8x8xf32>, tensor<1x32x8x8xf32>) -> tensor<1x48x8x8xf32>
  %t = kiln.transpose %c {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x48x8x8xf32>) -> tensor<1x8x8x48xf32>
  return %t : tensor<1x8x8x48xf32>
}

// CHECK-LABEL: func.func @concat_mixed(
// CHECK: kiln.transpose
// CHECK: kiln.concat {{.*}}{axis = 1 : i64}
func.func @concat_mixed(%a: tensor<1x8x8x16xf32>, %b: tensor<1x32x8x8xf32>) -> tensor<1x48x8x8xf32> {
  %ta = kiln.transpose %a {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x8x8x16xf32>) -> tensor<1x16x8x8xf32>
  %c = kiln.concat %ta, %b {axis = 1 : i64} : (tensor<1x16x8x8xf32>, tensor<1x32x8x8xf32>) -> tensor<1x48x8x8xf32>
  return %c : tensor<1x48x8x8xf32>
}
