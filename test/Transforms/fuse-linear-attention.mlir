// RUN: kiln-opt %s -split-input-file -kiln-fuse-linear-attention | FileCheck %s

// The form a PyTorch module exports (models/generate_linear_attention.py):
// φ = elu + 1, kv = φKᵀ·V, num = φQ·kv, z = φQ·(ΣφK)ᵀ, num / (z + eps).

// CHECK-LABEL: func.func @elu1
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<2x4x5x8xf32>, %[[K:[^:]+]]: tensor<2x4x7x8xf32>, %[[V:[^:]+]]: tensor<2x4x7x16xf32>)
// CHECK-NEXT: %[[Y:.+]] = kiln.linear_attention %[[Q]], %[[K]], %[[V]] {eps = 9.99999974E-5 : f32, feature_map = "elu1", num_heads = 4 : i64, num_kv_heads = 4 : i64} : (tensor<2x4x5x8xf32>, tensor<2x4x7x8xf32>, tensor<2x4x7x16xf32>) -> tensor<2x4x5x16xf32>
// CHECK-NEXT: return %[[Y]]
func.func @elu1(%q: tensor<2x4x5x8xf32>, %k: tensor<2x4x7x8xf32>, %v: tensor<2x4x7x16xf32>) -> tensor<2x4x5x16xf32> {
  %one = kiln.constant dense<1.0> : tensor<f32>
  %eps = kiln.constant dense<1.0e-4> : tensor<f32>
  %axes = kiln.constant dense<-2> : tensor<1xi64>
  %qe = kiln.elu %q {alpha = 1.0 : f32} : tensor<2x4x5x8xf32>
  %fq = kiln.add %qe, %one : (tensor<2x4x5x8xf32>, tensor<f32>) -> tensor<2x4x5x8xf32>
  %ke = kiln.elu %k {alpha = 1.0 : f32} : tensor<2x4x7x8xf32>
  %fk = kiln.add %one, %ke : (tensor<f32>, tensor<2x4x7x8xf32>) -> tensor<2x4x7x8xf32>
  %fkt = kiln.transpose %fk {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x4x7x8xf32>) -> tensor<2x4x8x7xf32>
  %kv = kiln.matmul %fkt, %v : (tensor<2x4x8x7xf32>, tensor<2x4x7x16xf32>) -> tensor<2x4x8x16xf32>
  %num = kiln.matmul %fq, %kv : (tensor<2x4x5x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x5x16xf32>
  %ksum = kiln.reduce_sum %fk, %axes {keepdims = 1 : i64} : (tensor<2x4x7x8xf32>, tensor<1xi64>) -> tensor<2x4x1x8xf32>
  %ksumt = kiln.transpose %ksum {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x4x1x8xf32>) -> tensor<2x4x8x1xf32>
  %z = kiln.matmul %fq, %ksumt : (tensor<2x4x5x8xf32>, tensor<2x4x8x1xf32>) -> tensor<2x4x5x1xf32>
  %den = kiln.add %z, %eps : (tensor<2x4x5x1xf32>, tensor<f32>) -> tensor<2x4x5x1xf32>
  %y = kiln.div %num, %den : (tensor<2x4x5x16xf32>, tensor<2x4x5x1xf32>) -> tensor<2x4x5x16xf32>
  return %y : tensor<2x4x5x16xf32>
}

// -----

// relu, the normaliser as ReduceSum(φQ * ΣφK, -1) (the einsum-free form of
// the paper's code), eps on the left of the Add, axes as an attribute.

// CHECK-LABEL: func.func @relu_elementwise_normaliser
// CHECK-NEXT: %[[Y:.+]] = kiln.linear_attention %{{.*}}, %{{.*}}, %{{.*}} {eps = 0.00999999977 : f32, feature_map = "relu", num_heads = 2 : i64, num_kv_heads = 2 : i64}
// CHECK-NEXT: return %[[Y]]
func.func @relu_elementwise_normaliser(%q: tensor<1x2x6x8xf32>, %k: tensor<1x2x6x8xf32>, %v: tensor<1x2x6x4xf32>) -> tensor<1x2x6x4xf32> {
  %none = kiln.none
  %eps = kiln.constant dense<1.0e-2> : tensor<1xf32>
  %fq = kiln.relu %q : tensor<1x2x6x8xf32>
  %fk = kiln.relu %k : tensor<1x2x6x8xf32>
  %fkt = kiln.transpose %fk {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x6x8xf32>) -> tensor<1x2x8x6xf32>
  %kv = kiln.matmul %fkt, %v : (tensor<1x2x8x6xf32>, tensor<1x2x6x4xf32>) -> tensor<1x2x8x4xf32>
  %num = kiln.matmul %fq, %kv : (tensor<1x2x6x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x6x4xf32>
  %ksum = kiln.reduce_sum %fk, %none {axes = array<i64: 2>, keepdims = 1 : i64} : (tensor<1x2x6x8xf32>, none) -> tensor<1x2x1x8xf32>
  %prod = kiln.mul %ksum, %fq : (tensor<1x2x1x8xf32>, tensor<1x2x6x8xf32>) -> tensor<1x2x6x8xf32>
  %z = kiln.reduce_sum %prod, %none {axes = array<i64: -1>, keepdims = 1 : i64} : (tensor<1x2x6x8xf32>, none) -> tensor<1x2x6x1xf32>
  %den = kiln.add %eps, %z : (tensor<1xf32>, tensor<1x2x6x1xf32>) -> tensor<1x2x6x1xf32>
  %y = kiln.div %num, %den : (tensor<1x2x6x4xf32>, tensor<1x2x6x1xf32>) -> tensor<1x2x6x4xf32>
  return %y : tensor<1x2x6x4xf32>
}

// -----

// exp after a GQA repetition of K and V (Unsqueeze/Expand/Reshape): the
// fused op reads the un-repeated K and V.

// CHECK-LABEL: func.func @exp_gqa
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<1x4x6x8xf32>, %[[K:[^:]+]]: tensor<1x2x6x8xf32>, %[[V:[^:]+]]: tensor<1x2x6x8xf32>)
// CHECK-NEXT: %[[Y:.+]] = kiln.linear_attention %[[Q]], %[[K]], %[[V]] {feature_map = "exp", num_heads = 4 : i64, num_kv_heads = 2 : i64} : (tensor<1x4x6x8xf32>, tensor<1x2x6x8xf32>, tensor<1x2x6x8xf32>) -> tensor<1x4x6x8xf32>
// CHECK-NEXT: return %[[Y]]
func.func @exp_gqa(%q: tensor<1x4x6x8xf32>, %k: tensor<1x2x6x8xf32>, %v: tensor<1x2x6x8xf32>) -> tensor<1x4x6x8xf32> {
  %axis2 = kiln.constant dense<2> : tensor<1xi64>
  %eshape = kiln.constant dense<[1, 2, 2, 6, 8]> : tensor<5xi64>
  %rshape = kiln.constant dense<[1, 4, 6, 8]> : tensor<4xi64>
  %eps = kiln.constant dense<1.0e-6> : tensor<f32>
  %ku = kiln.unsqueeze %k, %axis2 : (tensor<1x2x6x8xf32>, tensor<1xi64>) -> tensor<1x2x1x6x8xf32>
  %ke = kiln.expand %ku, %eshape : (tensor<1x2x1x6x8xf32>, tensor<5xi64>) -> tensor<1x2x2x6x8xf32>
  %kr = kiln.reshape %ke, %rshape : (tensor<1x2x2x6x8xf32>, tensor<4xi64>) -> tensor<1x4x6x8xf32>
  %vu = kiln.unsqueeze %v, %axis2 : (tensor<1x2x6x8xf32>, tensor<1xi64>) -> tensor<1x2x1x6x8xf32>
  %ve = kiln.expand %vu, %eshape : (tensor<1x2x1x6x8xf32>, tensor<5xi64>) -> tensor<1x2x2x6x8xf32>
  %vr = kiln.reshape %ve, %rshape : (tensor<1x2x2x6x8xf32>, tensor<4xi64>) -> tensor<1x4x6x8xf32>
  %fq = kiln.exp %q : tensor<1x4x6x8xf32>
  %fk = kiln.exp %kr : tensor<1x4x6x8xf32>
  %fkt = kiln.transpose %fk {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x4x6x8xf32>) -> tensor<1x4x8x6xf32>
  %kv = kiln.matmul %fkt, %vr : (tensor<1x4x8x6xf32>, tensor<1x4x6x8xf32>) -> tensor<1x4x8x8xf32>
  %num = kiln.matmul %fq, %kv : (tensor<1x4x6x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x6x8xf32>
  %ksum = kiln.reduce_sum %fk, %axis2 {keepdims = 1 : i64} : (tensor<1x4x6x8xf32>, tensor<1xi64>) -> tensor<1x4x1x8xf32>
  %ksumt = kiln.transpose %ksum {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x4x1x8xf32>) -> tensor<1x4x8x1xf32>
  %z = kiln.matmul %fq, %ksumt : (tensor<1x4x6x8xf32>, tensor<1x4x8x1xf32>) -> tensor<1x4x6x1xf32>
  %den = kiln.add %z, %eps : (tensor<1x4x6x1xf32>, tensor<f32>) -> tensor<1x4x6x1xf32>
  %y = kiln.div %num, %den : (tensor<1x4x6x8xf32>, tensor<1x4x6x1xf32>) -> tensor<1x4x6x8xf32>
  return %y : tensor<1x4x6x8xf32>
}

// -----

// φQ has a user outside the pattern: not fused.

// CHECK-LABEL: func.func @feature_escapes
// CHECK-NOT: kiln.linear_attention
func.func @feature_escapes(%q: tensor<1x2x6x8xf32>, %k: tensor<1x2x6x8xf32>, %v: tensor<1x2x6x4xf32>) -> (tensor<1x2x6x4xf32>, tensor<1x2x6x8xf32>) {
  %axes = kiln.constant dense<2> : tensor<1xi64>
  %eps = kiln.constant dense<1.0e-6> : tensor<f32>
  %fq = kiln.relu %q : tensor<1x2x6x8xf32>
  %fk = kiln.relu %k : tensor<1x2x6x8xf32>
  %fkt = kiln.transpose %fk {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x6x8xf32>) -> tensor<1x2x8x6xf32>
  %kv = kiln.matmul %fkt, %v : (tensor<1x2x8x6xf32>, tensor<1x2x6x4xf32>) -> tensor<1x2x8x4xf32>
  %num = kiln.matmul %fq, %kv : (tensor<1x2x6x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x6x4xf32>
  %ksum = kiln.reduce_sum %fk, %axes {keepdims = 1 : i64} : (tensor<1x2x6x8xf32>, tensor<1xi64>) -> tensor<1x2x1x8xf32>
  %ksumt = kiln.transpose %ksum {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x1x8xf32>) -> tensor<1x2x8x1xf32>
  %z = kiln.matmul %fq, %ksumt : (tensor<1x2x6x8xf32>, tensor<1x2x8x1xf32>) -> tensor<1x2x6x1xf32>
  %den = kiln.add %z, %eps : (tensor<1x2x6x1xf32>, tensor<f32>) -> tensor<1x2x6x1xf32>
  %y = kiln.div %num, %den : (tensor<1x2x6x4xf32>, tensor<1x2x6x1xf32>) -> tensor<1x2x6x4xf32>
  return %y, %fq : tensor<1x2x6x4xf32>, tensor<1x2x6x8xf32>
}

// -----

// Not kiln.linear_attention: different feature maps on Q and K; a normaliser
// over φ(Q) instead of φ(K); elu with alpha 0.5; eps that
// is not a constant.

// CHECK-LABEL: func.func @not_linear_attention
// CHECK-NOT: kiln.linear_attention
func.func @not_linear_attention(%q: tensor<1x2x6x8xf32>, %k: tensor<1x2x6x8xf32>, %v: tensor<1x2x6x4xf32>, %e: tensor<f32>) -> (tensor<1x2x6x4xf32>, tensor<1x2x6x4xf32>, tensor<1x2x6x4xf32>, tensor<1x2x6x4xf32>) {
  %axes = kiln.constant dense<2> : tensor<1xi64>
  %eps = kiln.constant dense<1.0e-6> : tensor<f32>
  %one = kiln.constant dense<1.0> : tensor<f32>
  // relu on Q, exp on K.
  %fq = kiln.relu %q : tensor<1x2x6x8xf32>
  %fk = kiln.exp %k : tensor<1x2x6x8xf32>
  %fkt = kiln.transpose %fk {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x6x8xf32>) -> tensor<1x2x8x6xf32>
  %kv = kiln.matmul %fkt, %v : (tensor<1x2x8x6xf32>, tensor<1x2x6x4xf32>) -> tensor<1x2x8x4xf32>
  %num = kiln.matmul %fq, %kv : (tensor<1x2x6x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x6x4xf32>
  %ksum = kiln.reduce_sum %fk, %axes {keepdims = 1 : i64} : (tensor<1x2x6x8xf32>, tensor<1xi64>) -> tensor<1x2x1x8xf32>
  %ksumt = kiln.transpose %ksum {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x1x8xf32>) -> tensor<1x2x8x1xf32>
  %z = kiln.matmul %fq, %ksumt : (tensor<1x2x6x8xf32>, tensor<1x2x8x1xf32>) -> tensor<1x2x6x1xf32>
  %den = kiln.add %z, %eps : (tensor<1x2x6x1xf32>, tensor<f32>) -> tensor<1x2x6x1xf32>
  %y = kiln.div %num, %den : (tensor<1x2x6x4xf32>, tensor<1x2x6x1xf32>) -> tensor<1x2x6x4xf32>
  // The normaliser sums φ(Q) instead of φ(K).
  %fq2 = kiln.relu %q : tensor<1x2x6x8xf32>
  %fk2 = kiln.relu %k : tensor<1x2x6x8xf32>
  %fkt2 = kiln.transpose %fk2 {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x6x8xf32>) -> tensor<1x2x8x6xf32>
  %kv2 = kiln.matmul %fkt2, %v : (tensor<1x2x8x6xf32>, tensor<1x2x6x4xf32>) -> tensor<1x2x8x4xf32>
  %num2 = kiln.matmul %fq2, %kv2 : (tensor<1x2x6x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x6x4xf32>
  %qsum2 = kiln.reduce_sum %fq2, %axes {keepdims = 1 : i64} : (tensor<1x2x6x8xf32>, tensor<1xi64>) -> tensor<1x2x1x8xf32>
  %qsumt2 = kiln.transpose %qsum2 {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x1x8xf32>) -> tensor<1x2x8x1xf32>
  %z2 = kiln.matmul %fq2, %qsumt2 : (tensor<1x2x6x8xf32>, tensor<1x2x8x1xf32>) -> tensor<1x2x6x1xf32>
  %den2 = kiln.add %z2, %eps : (tensor<1x2x6x1xf32>, tensor<f32>) -> tensor<1x2x6x1xf32>
  %y2 = kiln.div %num2, %den2 : (tensor<1x2x6x4xf32>, tensor<1x2x6x1xf32>) -> tensor<1x2x6x4xf32>
  // elu with alpha 0.5.
  %qe3 = kiln.elu %q {alpha = 0.5 : f32} : tensor<1x2x6x8xf32>
  %fq3 = kiln.add %qe3, %one : (tensor<1x2x6x8xf32>, tensor<f32>) -> tensor<1x2x6x8xf32>
  %ke3 = kiln.elu %k {alpha = 0.5 : f32} : tensor<1x2x6x8xf32>
  %fk3 = kiln.add %ke3, %one : (tensor<1x2x6x8xf32>, tensor<f32>) -> tensor<1x2x6x8xf32>
  %fkt3 = kiln.transpose %fk3 {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x6x8xf32>) -> tensor<1x2x8x6xf32>
  %kv3 = kiln.matmul %fkt3, %v : (tensor<1x2x8x6xf32>, tensor<1x2x6x4xf32>) -> tensor<1x2x8x4xf32>
  %num3 = kiln.matmul %fq3, %kv3 : (tensor<1x2x6x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x6x4xf32>
  %ksum3 = kiln.reduce_sum %fk3, %axes {keepdims = 1 : i64} : (tensor<1x2x6x8xf32>, tensor<1xi64>) -> tensor<1x2x1x8xf32>
  %ksumt3 = kiln.transpose %ksum3 {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x1x8xf32>) -> tensor<1x2x8x1xf32>
  %z3 = kiln.matmul %fq3, %ksumt3 : (tensor<1x2x6x8xf32>, tensor<1x2x8x1xf32>) -> tensor<1x2x6x1xf32>
  %den3 = kiln.add %z3, %eps : (tensor<1x2x6x1xf32>, tensor<f32>) -> tensor<1x2x6x1xf32>
  %y3 = kiln.div %num3, %den3 : (tensor<1x2x6x4xf32>, tensor<1x2x6x1xf32>) -> tensor<1x2x6x4xf32>
  // eps from an argument.
  %fq4 = kiln.relu %q : tensor<1x2x6x8xf32>
  %fk4 = kiln.relu %k : tensor<1x2x6x8xf32>
  %fkt4 = kiln.transpose %fk4 {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x6x8xf32>) -> tensor<1x2x8x6xf32>
  %kv4 = kiln.matmul %fkt4, %v : (tensor<1x2x8x6xf32>, tensor<1x2x6x4xf32>) -> tensor<1x2x8x4xf32>
  %num4 = kiln.matmul %fq4, %kv4 : (tensor<1x2x6x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x6x4xf32>
  %ksum4 = kiln.reduce_sum %fk4, %axes {keepdims = 1 : i64} : (tensor<1x2x6x8xf32>, tensor<1xi64>) -> tensor<1x2x1x8xf32>
  %ksumt4 = kiln.transpose %ksum4 {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x1x8xf32>) -> tensor<1x2x8x1xf32>
  %z4 = kiln.matmul %fq4, %ksumt4 : (tensor<1x2x6x8xf32>, tensor<1x2x8x1xf32>) -> tensor<1x2x6x1xf32>
  %den4 = kiln.add %z4, %e : (tensor<1x2x6x1xf32>, tensor<f32>) -> tensor<1x2x6x1xf32>
  %y4 = kiln.div %num4, %den4 : (tensor<1x2x6x4xf32>, tensor<1x2x6x1xf32>) -> tensor<1x2x6x4xf32>
  return %y, %y2, %y3, %y4 : tensor<1x2x6x4xf32>, tensor<1x2x6x4xf32>, tensor<1x2x6x4xf32>, tensor<1x2x6x4xf32>
}

// -----

// The normaliser inverted and multiplied (Z = 1 / (...) in the paper's
// code): Mul(num, Reciprocal(z + eps)) and Mul(Div(1, z + eps), num).

// CHECK-LABEL: func.func @reciprocal_forms
// CHECK-NEXT: %[[Y:.+]] = kiln.linear_attention %{{.*}}, %{{.*}}, %{{.*}} {feature_map = "relu", num_heads = 2 : i64, num_kv_heads = 2 : i64}
// CHECK-NEXT: %[[Z:.+]] = kiln.linear_attention %{{.*}}, %{{.*}}, %{{.*}} {feature_map = "relu", num_heads = 2 : i64, num_kv_heads = 2 : i64}
// CHECK-NEXT: return %[[Y]], %[[Z]]
func.func @reciprocal_forms(%q: tensor<1x2x6x8xf32>, %k: tensor<1x2x6x8xf32>, %v: tensor<1x2x6x4xf32>) -> (tensor<1x2x6x4xf32>, tensor<1x2x6x4xf32>) {
  %axes = kiln.constant dense<2> : tensor<1xi64>
  %eps = kiln.constant dense<1.0e-6> : tensor<f32>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %fq = kiln.relu %q : tensor<1x2x6x8xf32>
  %fk = kiln.relu %k : tensor<1x2x6x8xf32>
  %fkt = kiln.transpose %fk {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x6x8xf32>) -> tensor<1x2x8x6xf32>
  %kv = kiln.matmul %fkt, %v : (tensor<1x2x8x6xf32>, tensor<1x2x6x4xf32>) -> tensor<1x2x8x4xf32>
  %num = kiln.matmul %fq, %kv : (tensor<1x2x6x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x6x4xf32>
  %ksum = kiln.reduce_sum %fk, %axes {keepdims = 1 : i64} : (tensor<1x2x6x8xf32>, tensor<1xi64>) -> tensor<1x2x1x8xf32>
  %ksumt = kiln.transpose %ksum {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x1x8xf32>) -> tensor<1x2x8x1xf32>
  %z = kiln.matmul %fq, %ksumt : (tensor<1x2x6x8xf32>, tensor<1x2x8x1xf32>) -> tensor<1x2x6x1xf32>
  %den = kiln.add %z, %eps : (tensor<1x2x6x1xf32>, tensor<f32>) -> tensor<1x2x6x1xf32>
  %r = kiln.reciprocal %den : tensor<1x2x6x1xf32>
  %y = kiln.mul %num, %r : (tensor<1x2x6x4xf32>, tensor<1x2x6x1xf32>) -> tensor<1x2x6x4xf32>
  %fq2 = kiln.relu %q : tensor<1x2x6x8xf32>
  %fk2 = kiln.relu %k : tensor<1x2x6x8xf32>
  %fkt2 = kiln.transpose %fk2 {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x6x8xf32>) -> tensor<1x2x8x6xf32>
  %kv2 = kiln.matmul %fkt2, %v : (tensor<1x2x8x6xf32>, tensor<1x2x6x4xf32>) -> tensor<1x2x8x4xf32>
  %num2 = kiln.matmul %fq2, %kv2 : (tensor<1x2x6x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x6x4xf32>
  %ksum2 = kiln.reduce_sum %fk2, %axes {keepdims = 1 : i64} : (tensor<1x2x6x8xf32>, tensor<1xi64>) -> tensor<1x2x1x8xf32>
  %ksumt2 = kiln.transpose %ksum2 {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x1x8xf32>) -> tensor<1x2x8x1xf32>
  %z2 = kiln.matmul %fq2, %ksumt2 : (tensor<1x2x6x8xf32>, tensor<1x2x8x1xf32>) -> tensor<1x2x6x1xf32>
  %den2 = kiln.add %eps, %z2 : (tensor<f32>, tensor<1x2x6x1xf32>) -> tensor<1x2x6x1xf32>
  %r2 = kiln.div %one, %den2 : (tensor<f32>, tensor<1x2x6x1xf32>) -> tensor<1x2x6x1xf32>
  %y2 = kiln.mul %r2, %num2 : (tensor<1x2x6x1xf32>, tensor<1x2x6x4xf32>) -> tensor<1x2x6x4xf32>
  return %y, %y2 : tensor<1x2x6x4xf32>, tensor<1x2x6x4xf32>
}
