// Attention graphs for attention-numerics.test: each function is evaluated
// as written, after the fusions and after decomposing again.

func.func @llama(%q: tensor<2x4x5x8xf32>, %k: tensor<2x2x5x8xf32>, %v: tensor<2x2x5x8xf32>) -> tensor<2x4x5x8xf32> {
  %none = kiln.none
  %len = kiln.constant dense<5> : tensor<2xi64>
  %axes = kiln.constant dense<2> : tensor<1xi64>
  %eshape = kiln.constant dense<[2, 2, 2, 5, 8]> : tensor<5xi64>
  %rshape = kiln.constant dense<[2, 4, 5, 8]> : tensor<4xi64>
  %ku = kiln.unsqueeze %k, %axes : (tensor<2x2x5x8xf32>, tensor<1xi64>) -> tensor<2x2x1x5x8xf32>
  %ke = kiln.expand %ku, %eshape : (tensor<2x2x1x5x8xf32>, tensor<5xi64>) -> tensor<2x2x2x5x8xf32>
  %kr = kiln.reshape %ke, %rshape : (tensor<2x2x2x5x8xf32>, tensor<4xi64>) -> tensor<2x4x5x8xf32>
  %vu = kiln.unsqueeze %v, %axes : (tensor<2x2x5x8xf32>, tensor<1xi64>) -> tensor<2x2x1x5x8xf32>
  %ve = kiln.expand %vu, %eshape : (tensor<2x2x1x5x8xf32>, tensor<5xi64>) -> tensor<2x2x2x5x8xf32>
  %vr = kiln.reshape %ve, %rshape : (tensor<2x2x2x5x8xf32>, tensor<4xi64>) -> tensor<2x4x5x8xf32>
  %kt = kiln.transpose %kr {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x4x5x8xf32>) -> tensor<2x4x8x5xf32>
  %s = kiln.matmul %q, %kt : (tensor<2x4x5x8xf32>, tensor<2x4x8x5xf32>) -> tensor<2x4x5x5xf32>
  %c = kiln.constant dense<2.828427> : tensor<f32>
  %d = kiln.div %s, %c : (tensor<2x4x5x5xf32>, tensor<f32>) -> tensor<2x4x5x5xf32>
  %ones = kiln.constant_of_shape %len {value = dense<1.0> : tensor<1xf32>} : (tensor<2xi64>) -> tensor<5x5xf32>
  %tril = kiln.trilu %ones, %none {upper = 0 : i64} : (tensor<5x5xf32>, none) -> tensor<5x5xf32>
  %keep = kiln.cast %tril {to = i1} : (tensor<5x5xf32>) -> tensor<5x5xi1>
  %min = kiln.constant dense<0xFF7FFFFF> : tensor<f32>
  %m = kiln.where %keep, %d, %min : (tensor<5x5xi1>, tensor<2x4x5x5xf32>, tensor<f32>) -> tensor<2x4x5x5xf32>
  %p = kiln.softmax %m {axis = -1 : i64} : (tensor<2x4x5x5xf32>) -> tensor<2x4x5x5xf32>
  %y = kiln.matmul %p, %vr : (tensor<2x4x5x5xf32>, tensor<2x4x5x8xf32>) -> tensor<2x4x5x8xf32>
  return %y : tensor<2x4x5x8xf32>
}

// Sq = 3 < Skv = 6, bottom-right causal additive mask; SDPA's split scale.
func.func @bottom_right(%q: tensor<1x2x3x8xf32>, %k: tensor<1x2x6x8xf32>, %v: tensor<1x2x6x4xf32>) -> tensor<1x2x3x4xf32> {
  %c = kiln.constant dense<0.59460355> : tensor<1xf32>
  %qs = kiln.mul %q, %c : (tensor<1x2x3x8xf32>, tensor<1xf32>) -> tensor<1x2x3x8xf32>
  %kt = kiln.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x6x8xf32>) -> tensor<1x2x8x6xf32>
  %ks = kiln.mul %kt, %c : (tensor<1x2x8x6xf32>, tensor<1xf32>) -> tensor<1x2x8x6xf32>
  %s = kiln.matmul %qs, %ks : (tensor<1x2x3x8xf32>, tensor<1x2x8x6xf32>) -> tensor<1x2x3x6xf32>
  %mask = kiln.constant dense<[[0.0, 0.0, 0.0, 0.0, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0.0, 0.0, 0xFF800000], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]]> : tensor<3x6xf32>
  %m = kiln.add %s, %mask : (tensor<1x2x3x6xf32>, tensor<3x6xf32>) -> tensor<1x2x3x6xf32>
  %p = kiln.softmax %m {axis = -1 : i64} : (tensor<1x2x3x6xf32>) -> tensor<1x2x3x6xf32>
  %y = kiln.matmul %p, %v : (tensor<1x2x3x6xf32>, tensor<1x2x6x4xf32>) -> tensor<1x2x3x4xf32>
  return %y : tensor<1x2x3x4xf32>
}

// A boolean padding mask, GQA by Tile along the sequence.
func.func @padding_tile(%q: tensor<2x6x5x8xf32>, %k: tensor<2x2x5x8xf32>, %v: tensor<2x2x5x8xf32>, %keep: tensor<2x1x1x5xi1>) -> tensor<2x6x5x8xf32> {
  %reps = kiln.constant dense<[1, 1, 3, 1]> : tensor<4xi64>
  %rshape = kiln.constant dense<[2, 6, 5, 8]> : tensor<4xi64>
  %kt4 = kiln.tile %k, %reps : (tensor<2x2x5x8xf32>, tensor<4xi64>) -> tensor<2x2x15x8xf32>
  %kr = kiln.reshape %kt4, %rshape : (tensor<2x2x15x8xf32>, tensor<4xi64>) -> tensor<2x6x5x8xf32>
  %vt4 = kiln.tile %v, %reps : (tensor<2x2x5x8xf32>, tensor<4xi64>) -> tensor<2x2x15x8xf32>
  %vr = kiln.reshape %vt4, %rshape : (tensor<2x2x15x8xf32>, tensor<4xi64>) -> tensor<2x6x5x8xf32>
  %kt = kiln.transpose %kr {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x6x5x8xf32>) -> tensor<2x6x8x5xf32>
  %s = kiln.matmul %q, %kt : (tensor<2x6x5x8xf32>, tensor<2x6x8x5xf32>) -> tensor<2x6x5x5xf32>
  %min = kiln.constant dense<0xFF7FFFFF> : tensor<f32>
  %m = kiln.where %keep, %s, %min : (tensor<2x1x1x5xi1>, tensor<2x6x5x5xf32>, tensor<f32>) -> tensor<2x6x5x5xf32>
  %p = kiln.softmax %m {axis = -1 : i64} : (tensor<2x6x5x5xf32>) -> tensor<2x6x5x5xf32>
  %y = kiln.matmul %p, %vr : (tensor<2x6x5x5xf32>, tensor<2x6x5x8xf32>) -> tensor<2x6x5x8xf32>
  return %y : tensor<2x6x5x8xf32>
}

// A float mask argument; K split from [B, S, H, D] by one Transpose.
func.func @additive_k_bshd(%q: tensor<2x2x4x8xf32>, %ks: tensor<2x4x2x8xf32>, %v: tensor<2x2x4x8xf32>, %mask: tensor<2x1x4x4xf32>) -> tensor<2x2x4x8xf32> {
  %kt = kiln.transpose %ks {perm = array<i64: 0, 2, 3, 1>} : (tensor<2x4x2x8xf32>) -> tensor<2x2x8x4xf32>
  %s = kiln.matmul %q, %kt : (tensor<2x2x4x8xf32>, tensor<2x2x8x4xf32>) -> tensor<2x2x4x4xf32>
  %c = kiln.constant dense<0.25> : tensor<f32>
  %d = kiln.mul %c, %s : (tensor<f32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %m = kiln.add %d, %mask : (tensor<2x2x4x4xf32>, tensor<2x1x4x4xf32>) -> tensor<2x2x4x4xf32>
  %p = kiln.softmax %m {axis = 3 : i64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %y = kiln.matmul %p, %v : (tensor<2x2x4x4xf32>, tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32>
  return %y : tensor<2x2x4x8xf32>
}

// masked_fill(drop, -1e9) with a mask argument.
func.func @masked_fill(%q: tensor<2x2x5x8xf32>, %k: tensor<2x2x5x8xf32>, %v: tensor<2x2x5x8xf32>, %drop: tensor<2x1x5x5xi1>) -> tensor<2x2x5x8xf32> {
  %fill = kiln.constant dense<-1.0e+09> : tensor<f32>
  %kt = kiln.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x2x5x8xf32>) -> tensor<2x2x8x5xf32>
  %s = kiln.matmul %q, %kt : (tensor<2x2x5x8xf32>, tensor<2x2x8x5xf32>) -> tensor<2x2x5x5xf32>
  %m = kiln.where %drop, %fill, %s : (tensor<2x1x5x5xi1>, tensor<f32>, tensor<2x2x5x5xf32>) -> tensor<2x2x5x5xf32>
  %p = kiln.softmax %m {axis = -1 : i64} : (tensor<2x2x5x5xf32>) -> tensor<2x2x5x5xf32>
  %y = kiln.matmul %p, %v : (tensor<2x2x5x5xf32>, tensor<2x2x5x8xf32>) -> tensor<2x2x5x8xf32>
  return %y : tensor<2x2x5x8xf32>
}

// Linear attention as models/generate_linear_attention.py builds it.
func.func @linear_elu1_gqa(%q: tensor<2x4x5x8xf32>, %k: tensor<2x2x7x8xf32>, %v: tensor<2x2x7x6xf32>) -> tensor<2x4x5x6xf32> {
  %axis2 = kiln.constant dense<2> : tensor<1xi64>
  %axism2 = kiln.constant dense<-2> : tensor<1xi64>
  %kshape = kiln.constant dense<[2, 2, 2, 7, 8]> : tensor<5xi64>
  %vshape = kiln.constant dense<[2, 2, 2, 7, 6]> : tensor<5xi64>
  %krshape = kiln.constant dense<[2, 4, 7, 8]> : tensor<4xi64>
  %vrshape = kiln.constant dense<[2, 4, 7, 6]> : tensor<4xi64>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %eps = kiln.constant dense<1.0e-6> : tensor<f32>
  %ku = kiln.unsqueeze %k, %axis2 : (tensor<2x2x7x8xf32>, tensor<1xi64>) -> tensor<2x2x1x7x8xf32>
  %ke = kiln.expand %ku, %kshape : (tensor<2x2x1x7x8xf32>, tensor<5xi64>) -> tensor<2x2x2x7x8xf32>
  %kr = kiln.reshape %ke, %krshape : (tensor<2x2x2x7x8xf32>, tensor<4xi64>) -> tensor<2x4x7x8xf32>
  %vu = kiln.unsqueeze %v, %axis2 : (tensor<2x2x7x6xf32>, tensor<1xi64>) -> tensor<2x2x1x7x6xf32>
  %ve = kiln.expand %vu, %vshape : (tensor<2x2x1x7x6xf32>, tensor<5xi64>) -> tensor<2x2x2x7x6xf32>
  %vr = kiln.reshape %ve, %vrshape : (tensor<2x2x2x7x6xf32>, tensor<4xi64>) -> tensor<2x4x7x6xf32>
  %qe = kiln.elu %q {alpha = 1.0 : f32} : tensor<2x4x5x8xf32>
  %fq = kiln.add %qe, %one : (tensor<2x4x5x8xf32>, tensor<f32>) -> tensor<2x4x5x8xf32>
  %kel = kiln.elu %kr {alpha = 1.0 : f32} : tensor<2x4x7x8xf32>
  %fk = kiln.add %kel, %one : (tensor<2x4x7x8xf32>, tensor<f32>) -> tensor<2x4x7x8xf32>
  %fkt = kiln.transpose %fk {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x4x7x8xf32>) -> tensor<2x4x8x7xf32>
  %kv = kiln.matmul %fkt, %vr : (tensor<2x4x8x7xf32>, tensor<2x4x7x6xf32>) -> tensor<2x4x8x6xf32>
  %num = kiln.matmul %fq, %kv : (tensor<2x4x5x8xf32>, tensor<2x4x8x6xf32>) -> tensor<2x4x5x6xf32>
  %ksum = kiln.reduce_sum %fk, %axism2 {keepdims = 1 : i64} : (tensor<2x4x7x8xf32>, tensor<1xi64>) -> tensor<2x4x1x8xf32>
  %ksumt = kiln.transpose %ksum {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x4x1x8xf32>) -> tensor<2x4x8x1xf32>
  %z = kiln.matmul %fq, %ksumt : (tensor<2x4x5x8xf32>, tensor<2x4x8x1xf32>) -> tensor<2x4x5x1xf32>
  %den = kiln.add %z, %eps : (tensor<2x4x5x1xf32>, tensor<f32>) -> tensor<2x4x5x1xf32>
  %y = kiln.div %num, %den : (tensor<2x4x5x6xf32>, tensor<2x4x5x1xf32>) -> tensor<2x4x5x6xf32>
  return %y : tensor<2x4x5x6xf32>
}

// relu, the elementwise normaliser.
func.func @linear_relu(%q: tensor<1x2x6x8xf32>, %k: tensor<1x2x6x8xf32>, %v: tensor<1x2x6x4xf32>) -> tensor<1x2x6x4xf32> {
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

// exp, the normaliser inverted by Reciprocal and multiplied.
func.func @linear_exp_reciprocal(%q: tensor<1x2x6x8xf32>, %k: tensor<1x2x9x8xf32>, %v: tensor<1x2x9x4xf32>) -> tensor<1x2x6x4xf32> {
  %axes = kiln.constant dense<2> : tensor<1xi64>
  %eps = kiln.constant dense<1.0e-3> : tensor<f32>
  %fq = kiln.exp %q : tensor<1x2x6x8xf32>
  %fk = kiln.exp %k : tensor<1x2x9x8xf32>
  %fkt = kiln.transpose %fk {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x9x8xf32>) -> tensor<1x2x8x9xf32>
  %kv = kiln.matmul %fkt, %v : (tensor<1x2x8x9xf32>, tensor<1x2x9x4xf32>) -> tensor<1x2x8x4xf32>
  %num = kiln.matmul %fq, %kv : (tensor<1x2x6x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x6x4xf32>
  %ksum = kiln.reduce_sum %fk, %axes {keepdims = 1 : i64} : (tensor<1x2x9x8xf32>, tensor<1xi64>) -> tensor<1x2x1x8xf32>
  %ksumt = kiln.transpose %ksum {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x1x8xf32>) -> tensor<1x2x8x1xf32>
  %z = kiln.matmul %fq, %ksumt : (tensor<1x2x6x8xf32>, tensor<1x2x8x1xf32>) -> tensor<1x2x6x1xf32>
  %den = kiln.add %z, %eps : (tensor<1x2x6x1xf32>, tensor<f32>) -> tensor<1x2x6x1xf32>
  %r = kiln.reciprocal %den : tensor<1x2x6x1xf32>
  %y = kiln.mul %num, %r : (tensor<1x2x6x4xf32>, tensor<1x2x6x1xf32>) -> tensor<1x2x6x4xf32>
  return %y : tensor<1x2x6x4xf32>
}

// The ops themselves with dynamic dims: the decompositions' dynamic paths
// (causal mask from Range/LessOrEqual, repetition through Shape).
// DIMS @dynamic_attention: 2, 3, 2, 5, 2, 5, 2, 5
func.func @dynamic_attention(%q: tensor<?x4x?x8xf32>, %k: tensor<?x2x?x8xf32>, %v: tensor<?x2x?x6xf32>, %keep: tensor<?x1x1x?xi1>) -> tensor<?x4x?x6xf32> {
  %y = kiln.attention %q, %k, %v, %keep {num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 0.3 : f32, causal = true} : (tensor<?x4x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x6xf32>, tensor<?x1x1x?xi1>) -> tensor<?x4x?x6xf32>
  return %y : tensor<?x4x?x6xf32>
}

// DIMS @dynamic_linear: 2, 3, 4, 2, 5, 4, 2, 5, 6
func.func @dynamic_linear(%q: tensor<?x4x?x?xf32>, %k: tensor<?x2x?x?xf32>, %v: tensor<?x2x?x?xf32>) -> tensor<?x4x?x?xf32> {
  %y = kiln.linear_attention %q, %k, %v {feature_map = "exp", eps = 1.0e-3 : f32, num_heads = 4 : i64, num_kv_heads = 2 : i64} : (tensor<?x4x?x?xf32>, tensor<?x2x?x?xf32>, tensor<?x2x?x?xf32>) -> tensor<?x4x?x?xf32>
  return %y : tensor<?x4x?x?xf32>
}
