// RUN: kiln-opt %s -split-input-file -kiln-fuse-attention | FileCheck %s

// Multi-head attention as PyTorch exports it: Kᵀ by a Transpose, the scores
// divided by sqrt(head_dim), no mask.

// CHECK-LABEL: func.func @mha
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<1x4x6x8xf32>, %[[K:[^:]+]]: tensor<1x4x6x8xf32>, %[[V:[^:]+]]: tensor<1x4x6x16xf32>)
// CHECK: %[[NONE:.+]] = kiln.none
// CHECK: %[[Y:.+]] = kiln.attention %[[Q]], %[[K]], %[[V]], %[[NONE]] {num_heads = 4 : i64, num_kv_heads = 4 : i64, scale = 0.353553385 : f32} : (tensor<1x4x6x8xf32>, tensor<1x4x6x8xf32>, tensor<1x4x6x16xf32>, none) -> tensor<1x4x6x16xf32>
// CHECK-NOT: kiln.softmax
// CHECK: return %[[Y]]
func.func @mha(%q: tensor<1x4x6x8xf32>, %k: tensor<1x4x6x8xf32>, %v: tensor<1x4x6x16xf32>) -> tensor<1x4x6x16xf32> {
  %kt = kiln.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x4x6x8xf32>) -> tensor<1x4x8x6xf32>
  %s = kiln.matmul %q, %kt : (tensor<1x4x6x8xf32>, tensor<1x4x8x6xf32>) -> tensor<1x4x6x6xf32>
  %c = kiln.constant dense<2.828427> : tensor<f32>
  %d = kiln.div %s, %c : (tensor<1x4x6x6xf32>, tensor<f32>) -> tensor<1x4x6x6xf32>
  %p = kiln.softmax %d {axis = -1 : i64} : (tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  %y = kiln.matmul %p, %v : (tensor<1x4x6x6xf32>, tensor<1x4x6x16xf32>) -> tensor<1x4x6x16xf32>
  return %y : tensor<1x4x6x16xf32>
}

// -----

// The Llama block after constant folding: K and V repeated by
// Unsqueeze/Expand/Reshape (repeat_kv), a lower-triangular i1 constant with
// Where to float-min. The fused op reads the un-repeated K and V.

// CHECK-LABEL: func.func @llama_gqa_causal
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<2x4x4x8xf32>, %[[K:[^:]+]]: tensor<2x2x4x8xf32>, %[[V:[^:]+]]: tensor<2x2x4x8xf32>)
// CHECK: %[[NONE:.+]] = kiln.none
// CHECK-NEXT: %[[Y:.+]] = kiln.attention %[[Q]], %[[K]], %[[V]], %[[NONE]] {causal = true, num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 0.353553385 : f32}
// CHECK-NEXT: return %[[Y]]
func.func @llama_gqa_causal(%q: tensor<2x4x4x8xf32>, %k: tensor<2x2x4x8xf32>, %v: tensor<2x2x4x8xf32>) -> tensor<2x4x4x8xf32> {
  %axes = kiln.constant dense<2> : tensor<1xi64>
  %eshape = kiln.constant dense<[2, 2, 2, 4, 8]> : tensor<5xi64>
  %rshape = kiln.constant dense<[2, 4, 4, 8]> : tensor<4xi64>
  %ku = kiln.unsqueeze %k, %axes : (tensor<2x2x4x8xf32>, tensor<1xi64>) -> tensor<2x2x1x4x8xf32>
  %ke = kiln.expand %ku, %eshape : (tensor<2x2x1x4x8xf32>, tensor<5xi64>) -> tensor<2x2x2x4x8xf32>
  %kr = kiln.reshape %ke, %rshape : (tensor<2x2x2x4x8xf32>, tensor<4xi64>) -> tensor<2x4x4x8xf32>
  %vu = kiln.unsqueeze %v, %axes : (tensor<2x2x4x8xf32>, tensor<1xi64>) -> tensor<2x2x1x4x8xf32>
  %ve = kiln.expand %vu, %eshape : (tensor<2x2x1x4x8xf32>, tensor<5xi64>) -> tensor<2x2x2x4x8xf32>
  %vr = kiln.reshape %ve, %rshape : (tensor<2x2x2x4x8xf32>, tensor<4xi64>) -> tensor<2x4x4x8xf32>
  %kt = kiln.transpose %kr {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x4x4x8xf32>) -> tensor<2x4x8x4xf32>
  %s = kiln.matmul %q, %kt : (tensor<2x4x4x8xf32>, tensor<2x4x8x4xf32>) -> tensor<2x4x4x4xf32>
  %c = kiln.constant dense<2.828427> : tensor<f32>
  %d = kiln.div %s, %c : (tensor<2x4x4x4xf32>, tensor<f32>) -> tensor<2x4x4x4xf32>
  %keep = kiln.constant dense<[[true, false, false, false], [true, true, false, false], [true, true, true, false], [true, true, true, true]]> : tensor<4x4xi1>
  %min = kiln.constant dense<0xFF7FFFFF> : tensor<f32>
  %m = kiln.where %keep, %d, %min : (tensor<4x4xi1>, tensor<2x4x4x4xf32>, tensor<f32>) -> tensor<2x4x4x4xf32>
  %p = kiln.softmax %m {axis = -1 : i64} : (tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xf32>
  %y = kiln.matmul %p, %vr : (tensor<2x4x4x4xf32>, tensor<2x4x4x8xf32>) -> tensor<2x4x4x8xf32>
  return %y : tensor<2x4x4x8xf32>
}

// -----

// The causal mask as imported before constant folding:
// Cast(Trilu(ConstantOfShape(1.0), upper = 0)) to bool, Where to -inf.

// CHECK-LABEL: func.func @causal_unfolded
// CHECK-NEXT: kiln.none
// CHECK-NEXT: kiln.attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {causal = true, num_heads = 2 : i64, num_kv_heads = 2 : i64, scale = 1.000000e+00 : f32}
// CHECK-NEXT: return
func.func @causal_unfolded(%q: tensor<1x2x3x8xf32>, %k: tensor<1x2x3x8xf32>, %v: tensor<1x2x3x8xf32>, %len: tensor<2xi64>) -> tensor<1x2x3x8xf32> {
  %none = kiln.none
  %kt = kiln.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x3x8xf32>) -> tensor<1x2x8x3xf32>
  %s = kiln.matmul %q, %kt : (tensor<1x2x3x8xf32>, tensor<1x2x8x3xf32>) -> tensor<1x2x3x3xf32>
  %ones = kiln.constant_of_shape %len {value = dense<1.0> : tensor<1xf32>} : (tensor<2xi64>) -> tensor<3x3xf32>
  %tril = kiln.trilu %ones, %none {upper = 0 : i64} : (tensor<3x3xf32>, none) -> tensor<3x3xf32>
  %keep = kiln.cast %tril {to = i1} : (tensor<3x3xf32>) -> tensor<3x3xi1>
  %ninf = kiln.constant dense<0xFF800000> : tensor<f32>
  %m = kiln.where %keep, %s, %ninf : (tensor<3x3xi1>, tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3x3xf32>
  %p = kiln.softmax %m {axis = 3 : i64} : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %y = kiln.matmul %p, %v : (tensor<1x2x3x3xf32>, tensor<1x2x3x8xf32>) -> tensor<1x2x3x8xf32>
  return %y : tensor<1x2x3x8xf32>
}

// -----

// An additive causal mask of 0 and -inf, [1, 1, Sq, Skv], after the scale.
// Sq = 2 < Skv = 4: the mask keeps j <= i + 2 (aligned to the bottom right).

// CHECK-LABEL: func.func @causal_additive_bottom_right
// CHECK: kiln.attention {{.*}} {causal = true, num_heads = 2 : i64, num_kv_heads = 2 : i64, scale = 1.250000e-01 : f32}
// CHECK-NOT: kiln.add
func.func @causal_additive_bottom_right(%q: tensor<1x2x2x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x2x8xf32> {
  %kt = kiln.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %s = kiln.matmul %q, %kt : (tensor<1x2x2x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x2x4xf32>
  %c = kiln.constant dense<0.125> : tensor<1xf32>
  %d = kiln.mul %c, %s : (tensor<1xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %mask = kiln.constant dense<[[[[0.0, 0.0, 0.0, 0xFF800000], [0.0, 0.0, 0.0, 0.0]]]]> : tensor<1x1x2x4xf32>
  %m = kiln.add %d, %mask : (tensor<1x2x2x4xf32>, tensor<1x1x2x4xf32>) -> tensor<1x2x2x4xf32>
  %p = kiln.softmax %m {axis = -1 : i64} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %y = kiln.matmul %p, %v : (tensor<1x2x2x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x2x8xf32>
  return %y : tensor<1x2x2x8xf32>
}

// -----

// A lower triangle aligned to the top left (torch.tril(ones(2, 4))) with
// Sq != Skv is not kiln.attention's causal alignment: it stays a mask.

// CHECK-LABEL: func.func @tril_top_left_stays_mask
// CHECK: %[[KEEP:.+]] = kiln.constant dense<{{.*}}> : tensor<2x4xi1>
// CHECK: kiln.attention %{{.*}}, %{{.*}}, %{{.*}}, %[[KEEP]] {num_heads = 2 : i64, num_kv_heads = 2 : i64, scale = 1.000000e+00 : f32}
func.func @tril_top_left_stays_mask(%q: tensor<1x2x2x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x2x8xf32> {
  %kt = kiln.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %s = kiln.matmul %q, %kt : (tensor<1x2x2x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x2x4xf32>
  %keep = kiln.constant dense<[[true, false, false, false], [true, true, false, false]]> : tensor<2x4xi1>
  %min = kiln.constant dense<-1.0e+09> : tensor<f32>
  %m = kiln.where %keep, %s, %min : (tensor<2x4xi1>, tensor<1x2x2x4xf32>, tensor<f32>) -> tensor<1x2x2x4xf32>
  %p = kiln.softmax %m {axis = -1 : i64} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %y = kiln.matmul %p, %v : (tensor<1x2x2x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x2x8xf32>
  return %y : tensor<1x2x2x8xf32>
}

// -----

// A constant mask that is not causal (the upper triangle) stays a mask.

// CHECK-LABEL: func.func @not_causal_stays_mask
// CHECK: %[[KEEP:.+]] = kiln.constant dense<{{.*}}> : tensor<3x3xi1>
// CHECK: kiln.attention %{{.*}}, %{{.*}}, %{{.*}}, %[[KEEP]] {num_heads = 2 : i64, num_kv_heads = 2 : i64, scale = 1.000000e+00 : f32}
func.func @not_causal_stays_mask(%q: tensor<1x2x3x8xf32>, %k: tensor<1x2x3x8xf32>, %v: tensor<1x2x3x8xf32>) -> tensor<1x2x3x8xf32> {
  %kt = kiln.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x3x8xf32>) -> tensor<1x2x8x3xf32>
  %s = kiln.matmul %q, %kt : (tensor<1x2x3x8xf32>, tensor<1x2x8x3xf32>) -> tensor<1x2x3x3xf32>
  %keep = kiln.constant dense<[[true, true, true], [false, true, true], [false, false, true]]> : tensor<3x3xi1>
  %min = kiln.constant dense<0xFF7FFFFF> : tensor<f32>
  %m = kiln.where %keep, %s, %min : (tensor<3x3xi1>, tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3x3xf32>
  %p = kiln.softmax %m {axis = -1 : i64} : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %y = kiln.matmul %p, %v : (tensor<1x2x3x3xf32>, tensor<1x2x3x8xf32>) -> tensor<1x2x3x8xf32>
  return %y : tensor<1x2x3x8xf32>
}

// -----

// A padding mask (a function argument) added to the scores stays a float
// mask operand, whichever side of the Add it is on.

// CHECK-LABEL: func.func @additive_padding_mask
// CHECK-SAME: %[[MASK:[^:]+]]: tensor<2x1x1x5xf32>
// CHECK: kiln.attention %{{.*}}, %{{.*}}, %{{.*}}, %[[MASK]] {num_heads = 2 : i64, num_kv_heads = 2 : i64, scale = 1.250000e-01 : f32} : (tensor<2x2x5x8xf32>, tensor<2x2x5x8xf32>, tensor<2x2x5x8xf32>, tensor<2x1x1x5xf32>) -> tensor<2x2x5x8xf32>
func.func @additive_padding_mask(%q: tensor<2x2x5x8xf32>, %k: tensor<2x2x5x8xf32>, %v: tensor<2x2x5x8xf32>, %mask: tensor<2x1x1x5xf32>) -> tensor<2x2x5x8xf32> {
  %kt = kiln.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x2x5x8xf32>) -> tensor<2x2x8x5xf32>
  %s = kiln.matmul %q, %kt : (tensor<2x2x5x8xf32>, tensor<2x2x8x5xf32>) -> tensor<2x2x5x5xf32>
  %c = kiln.constant dense<0.125> : tensor<f32>
  %d = kiln.mul %s, %c : (tensor<2x2x5x5xf32>, tensor<f32>) -> tensor<2x2x5x5xf32>
  %m = kiln.add %mask, %d : (tensor<2x1x1x5xf32>, tensor<2x2x5x5xf32>) -> tensor<2x2x5x5xf32>
  %p = kiln.softmax %m {axis = -1 : i64} : (tensor<2x2x5x5xf32>) -> tensor<2x2x5x5xf32>
  %y = kiln.matmul %p, %v : (tensor<2x2x5x5xf32>, tensor<2x2x5x8xf32>) -> tensor<2x2x5x8xf32>
  return %y : tensor<2x2x5x8xf32>
}

// -----

// A boolean padding mask with Where stays an i1 mask operand.

// CHECK-LABEL: func.func @bool_padding_mask
// CHECK-SAME: %[[KEEP:[^:]+]]: tensor<2x1x1x5xi1>
// CHECK: kiln.attention %{{.*}}, %{{.*}}, %{{.*}}, %[[KEEP]] {num_heads = 2 : i64, num_kv_heads = 2 : i64, scale = 1.000000e+00 : f32}
func.func @bool_padding_mask(%q: tensor<2x2x5x8xf32>, %k: tensor<2x2x5x8xf32>, %v: tensor<2x2x5x8xf32>, %keep: tensor<2x1x1x5xi1>) -> tensor<2x2x5x8xf32> {
  %kt = kiln.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x2x5x8xf32>) -> tensor<2x2x8x5xf32>
  %s = kiln.matmul %q, %kt : (tensor<2x2x5x8xf32>, tensor<2x2x8x5xf32>) -> tensor<2x2x5x5xf32>
  %min = kiln.constant dense<-1.0e+04> : tensor<f32>
  %m = kiln.where %keep, %s, %min : (tensor<2x1x1x5xi1>, tensor<2x2x5x5xf32>, tensor<f32>) -> tensor<2x2x5x5xf32>
  %p = kiln.softmax %m {axis = -1 : i64} : (tensor<2x2x5x5xf32>) -> tensor<2x2x5x5xf32>
  %y = kiln.matmul %p, %v : (tensor<2x2x5x5xf32>, tensor<2x2x5x8xf32>) -> tensor<2x2x5x8xf32>
  return %y : tensor<2x2x5x8xf32>
}

// -----

// F.scaled_dot_product_attention's export: sqrt(scale) on Q and on Kᵀ.

// CHECK-LABEL: func.func @sdpa_split_scale
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<1x2x4x16xf32>, %[[K:[^:]+]]: tensor<1x2x4x16xf32>
// CHECK: kiln.attention %[[Q]], %[[K]], %{{.*}}, %{{.*}} {num_heads = 2 : i64, num_kv_heads = 2 : i64, scale = 2.500000e-01 : f32}
// CHECK-NOT: kiln.mul
func.func @sdpa_split_scale(%q: tensor<1x2x4x16xf32>, %k: tensor<1x2x4x16xf32>, %v: tensor<1x2x4x16xf32>) -> tensor<1x2x4x16xf32> {
  %c = kiln.constant dense<0.5> : tensor<1xf32>
  %qs = kiln.mul %q, %c : (tensor<1x2x4x16xf32>, tensor<1xf32>) -> tensor<1x2x4x16xf32>
  %kt = kiln.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x16xf32>) -> tensor<1x2x16x4xf32>
  %ks = kiln.mul %kt, %c : (tensor<1x2x16x4xf32>, tensor<1xf32>) -> tensor<1x2x16x4xf32>
  %s = kiln.matmul %qs, %ks : (tensor<1x2x4x16xf32>, tensor<1x2x16x4xf32>) -> tensor<1x2x4x4xf32>
  %p = kiln.softmax %s {axis = -1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %y = kiln.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x16xf32>) -> tensor<1x2x4x16xf32>
  return %y : tensor<1x2x4x16xf32>
}

// -----

// K given already transposed ([B, H, D, S]): the fused op reads it through
// a Transpose. K split from [B, S, H, D] by one Transpose (0, 2, 3, 1) is
// composed into a single Transpose (0, 2, 1, 3).

// CHECK-LABEL: func.func @k_pretransposed
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<1x2x4x8xf32>, %[[KT:[^:]+]]: tensor<1x2x8x4xf32>, %[[V:[^:]+]]: tensor<1x2x4x8xf32>, %[[KS:[^:]+]]: tensor<1x4x2x8xf32>)
// CHECK: %[[K1:.+]] = kiln.transpose %[[KT]] {perm = array<i64: 0, 1, 3, 2>}
// CHECK: kiln.attention %[[Q]], %[[K1]], %[[V]]
// CHECK: %[[K2:.+]] = kiln.transpose %[[KS]] {perm = array<i64: 0, 2, 1, 3>}
// CHECK: kiln.attention %[[Q]], %[[K2]], %[[V]]
func.func @k_pretransposed(%q: tensor<1x2x4x8xf32>, %kt: tensor<1x2x8x4xf32>, %v: tensor<1x2x4x8xf32>, %ks: tensor<1x4x2x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) {
  %s = kiln.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %p = kiln.softmax %s {axis = -1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %y = kiln.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %kt2 = kiln.transpose %ks {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x4x2x8xf32>) -> tensor<1x2x8x4xf32>
  %s2 = kiln.matmul %q, %kt2 : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %p2 = kiln.softmax %s2 {axis = -1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %y2 = kiln.matmul %p2, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %y, %y2 : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
}

// -----

// GQA through Tile: Unsqueeze + Tile [1, 1, rep, 1, 1] + Reshape, and Tile
// along the sequence [1, 1, rep, 1] + Reshape; both give head h the KV head
// h / rep.

// CHECK-LABEL: func.func @gqa_tile
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<1x6x4x8xf32>, %[[K:[^:]+]]: tensor<1x2x4x8xf32>, %[[V:[^:]+]]: tensor<1x2x4x8xf32>)
// CHECK: kiln.attention %[[Q]], %[[K]], %[[V]], %{{.*}} {num_heads = 6 : i64, num_kv_heads = 2 : i64, scale = 1.000000e+00 : f32}
// CHECK-NOT: kiln.tile
func.func @gqa_tile(%q: tensor<1x6x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x6x4x8xf32> {
  %axes = kiln.constant dense<2> : tensor<1xi64>
  %reps5 = kiln.constant dense<[1, 1, 3, 1, 1]> : tensor<5xi64>
  %reps4 = kiln.constant dense<[1, 1, 3, 1]> : tensor<4xi64>
  %rshape = kiln.constant dense<[1, 6, 4, 8]> : tensor<4xi64>
  %ku = kiln.unsqueeze %k, %axes : (tensor<1x2x4x8xf32>, tensor<1xi64>) -> tensor<1x2x1x4x8xf32>
  %kt5 = kiln.tile %ku, %reps5 : (tensor<1x2x1x4x8xf32>, tensor<5xi64>) -> tensor<1x2x3x4x8xf32>
  %kr = kiln.reshape %kt5, %rshape : (tensor<1x2x3x4x8xf32>, tensor<4xi64>) -> tensor<1x6x4x8xf32>
  %vt4 = kiln.tile %v, %reps4 : (tensor<1x2x4x8xf32>, tensor<4xi64>) -> tensor<1x2x12x8xf32>
  %vr = kiln.reshape %vt4, %rshape : (tensor<1x2x12x8xf32>, tensor<4xi64>) -> tensor<1x6x4x8xf32>
  %kt = kiln.transpose %kr {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x6x4x8xf32>) -> tensor<1x6x8x4xf32>
  %s = kiln.matmul %q, %kt : (tensor<1x6x4x8xf32>, tensor<1x6x8x4xf32>) -> tensor<1x6x4x4xf32>
  %p = kiln.softmax %s {axis = -1 : i64} : (tensor<1x6x4x4xf32>) -> tensor<1x6x4x4xf32>
  %y = kiln.matmul %p, %vr : (tensor<1x6x4x4xf32>, tensor<1x6x4x8xf32>) -> tensor<1x6x4x8xf32>
  return %y : tensor<1x6x4x8xf32>
}

// -----

// Tile along the heads ([1, rep, 1, 1]) gives head h the KV head h % KV, not
// h / rep: the attention is fused on the repeated K and V, no GQA.

// CHECK-LABEL: func.func @tile_heads_not_gqa
// CHECK: %[[KR:.+]] = kiln.tile %{{.*}}
// CHECK: %[[VR:.+]] = kiln.tile %{{.*}}
// CHECK: kiln.attention %{{.*}}, %[[KR]], %[[VR]], %{{.*}} {num_heads = 6 : i64, num_kv_heads = 6 : i64, scale = 1.000000e+00 : f32}
func.func @tile_heads_not_gqa(%q: tensor<1x6x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x6x4x8xf32> {
  %reps = kiln.constant dense<[1, 3, 1, 1]> : tensor<4xi64>
  %kr = kiln.tile %k, %reps : (tensor<1x2x4x8xf32>, tensor<4xi64>) -> tensor<1x6x4x8xf32>
  %vr = kiln.tile %v, %reps : (tensor<1x2x4x8xf32>, tensor<4xi64>) -> tensor<1x6x4x8xf32>
  %kt = kiln.transpose %kr {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x6x4x8xf32>) -> tensor<1x6x8x4xf32>
  %s = kiln.matmul %q, %kt : (tensor<1x6x4x8xf32>, tensor<1x6x8x4xf32>) -> tensor<1x6x4x4xf32>
  %p = kiln.softmax %s {axis = -1 : i64} : (tensor<1x6x4x4xf32>) -> tensor<1x6x4x4xf32>
  %y = kiln.matmul %p, %vr : (tensor<1x6x4x4xf32>, tensor<1x6x4x8xf32>) -> tensor<1x6x4x8xf32>
  return %y : tensor<1x6x4x8xf32>
}

// -----

// The probabilities are also returned: not fused.

// CHECK-LABEL: func.func @probs_escape
// CHECK-NOT: kiln.attention
// CHECK: kiln.softmax
func.func @probs_escape(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>) {
  %kt = kiln.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %s = kiln.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %p = kiln.softmax %s {axis = -1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %y = kiln.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %y, %p : tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>
}

// -----

// The raw scores have a second user: not fused.

// CHECK-LABEL: func.func @scores_escape
// CHECK-NOT: kiln.attention
func.func @scores_escape(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>) {
  %kt = kiln.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %s = kiln.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %c = kiln.constant dense<2.0> : tensor<f32>
  %d = kiln.div %s, %c : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %p = kiln.softmax %d {axis = -1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %y = kiln.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %y, %s : tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>
}

// -----

// Softmax over the queries, a fill value that is not very negative, a
// scale that is not a constant: not attention as kiln.attention defines it.

// CHECK-LABEL: func.func @not_attention
// CHECK-NOT: kiln.attention
func.func @not_attention(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %keep: tensor<4x4xi1>, %t: tensor<f32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) {
  %kt = kiln.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %s = kiln.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %p = kiln.softmax %s {axis = 2 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %y = kiln.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %kt2 = kiln.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %s2 = kiln.matmul %q, %kt2 : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %fill = kiln.constant dense<-100.0> : tensor<f32>
  %m2 = kiln.where %keep, %s2, %fill : (tensor<4x4xi1>, tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %p2 = kiln.softmax %m2 {axis = -1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %y2 = kiln.matmul %p2, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %kt3 = kiln.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %s3 = kiln.matmul %q, %kt3 : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %d3 = kiln.div %s3, %t : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %p3 = kiln.softmax %d3 {axis = -1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %y3 = kiln.matmul %p3, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %y, %y2, %y3 : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
}

// -----

// Q and Kᵀ whose batch dims broadcast (K shared by every batch): not fused.

// CHECK-LABEL: func.func @batch_broadcast
// CHECK-NOT: kiln.attention
func.func @batch_broadcast(%q: tensor<2x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32> {
  %kt = kiln.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %s = kiln.matmul %q, %kt : (tensor<2x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<2x2x4x4xf32>
  %p = kiln.softmax %s {axis = -1 : i64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %y = kiln.matmul %p, %v : (tensor<2x2x4x4xf32>, tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32>
  return %y : tensor<2x2x4x8xf32>
}

// -----

// A causal additive mask held as a dense_resource blob (as the importer
// stores constants of 1 KiB and more) is read too.

// CHECK-LABEL: func.func @causal_dense_resource
// CHECK: kiln.attention {{.*}} {causal = true, num_heads = 1 : i64, num_kv_heads = 1 : i64, scale = 1.000000e+00 : f32}
func.func @causal_dense_resource(%q: tensor<1x1x2x4xf32>, %k: tensor<1x1x2x4xf32>, %v: tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32> {
  %kt = kiln.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x1x2x4xf32>) -> tensor<1x1x4x2xf32>
  %s = kiln.matmul %q, %kt : (tensor<1x1x2x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x2x2xf32>
  %mask = kiln.constant dense_resource<causal_mask> : tensor<2x2xf32>
  %m = kiln.add %s, %mask : (tensor<1x1x2x2xf32>, tensor<2x2xf32>) -> tensor<1x1x2x2xf32>
  %p = kiln.softmax %m {axis = -1 : i64} : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %y = kiln.matmul %p, %v : (tensor<1x1x2x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  return %y : tensor<1x1x2x4xf32>
}

{-#
  dialect_resources: {
    builtin: {
      causal_mask: "0x0400000000000000000080FF0000000000000000"
    }
  }
#-}

// -----

// masked_fill(drop, -1e9): Where(drop, fill, scores). A constant strictly
// upper triangle is the causal mask; any other mask is kept, negated, as the
// op's keep-mask.

// CHECK-LABEL: func.func @masked_fill
// CHECK-SAME: %[[DROP:[^:]+]]: tensor<1x1x3x3xi1>
// CHECK: kiln.attention {{.*}} {causal = true, num_heads = 2 : i64, num_kv_heads = 2 : i64, scale = 1.000000e+00 : f32}
// CHECK: %[[KEEP:.+]] = kiln.not %[[DROP]] : tensor<1x1x3x3xi1>
// CHECK: kiln.attention %{{.*}}, %{{.*}}, %{{.*}}, %[[KEEP]] {num_heads = 2 : i64, num_kv_heads = 2 : i64, scale = 1.000000e+00 : f32}
func.func @masked_fill(%q: tensor<1x2x3x8xf32>, %k: tensor<1x2x3x8xf32>, %v: tensor<1x2x3x8xf32>, %drop: tensor<1x1x3x3xi1>) -> (tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>) {
  %fill = kiln.constant dense<-1.0e+09> : tensor<f32>
  %upper = kiln.constant dense<[[false, true, true], [false, false, true], [false, false, false]]> : tensor<3x3xi1>
  %kt = kiln.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x3x8xf32>) -> tensor<1x2x8x3xf32>
  %s = kiln.matmul %q, %kt : (tensor<1x2x3x8xf32>, tensor<1x2x8x3xf32>) -> tensor<1x2x3x3xf32>
  %m = kiln.where %upper, %fill, %s : (tensor<3x3xi1>, tensor<f32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %p = kiln.softmax %m {axis = -1 : i64} : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %y = kiln.matmul %p, %v : (tensor<1x2x3x3xf32>, tensor<1x2x3x8xf32>) -> tensor<1x2x3x8xf32>
  %kt2 = kiln.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x3x8xf32>) -> tensor<1x2x8x3xf32>
  %s2 = kiln.matmul %q, %kt2 : (tensor<1x2x3x8xf32>, tensor<1x2x8x3xf32>) -> tensor<1x2x3x3xf32>
  %m2 = kiln.where %drop, %fill, %s2 : (tensor<1x1x3x3xi1>, tensor<f32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %p2 = kiln.softmax %m2 {axis = -1 : i64} : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %y2 = kiln.matmul %p2, %v : (tensor<1x2x3x3xf32>, tensor<1x2x3x8xf32>) -> tensor<1x2x3x8xf32>
  return %y, %y2 : tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>
}
