// RUN: kiln-opt %s -split-input-file -kiln-decompose-fused | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-decompose-fused -kiln-fuse-attention -kiln-fuse-linear-attention | FileCheck %s --check-prefix=ROUNDTRIP
// RUN: kiln-opt %s -split-input-file -kiln-decompose-fused=ops=linear_attention | FileCheck %s --check-prefix=ONLY

// kiln.attention: K and V repeated to the query heads, scores scaled, the
// causal mask a constant lower triangle with Where to the lowest f32.

// CHECK-LABEL: func.func @gqa_causal
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<2x4x3x8xf32>, %[[K:[^:]+]]: tensor<2x2x3x8xf32>, %[[V:[^:]+]]: tensor<2x2x3x16xf32>)
// CHECK-DAG: %[[KEEP:.+]] = kiln.constant dense<{{\[}}[true, false, false], [true, true, false], [true, true, true]]> : tensor<3x3xi1>
// CHECK-DAG: %[[LOWEST:.+]] = kiln.constant dense<-3.40282347E+38> : tensor<f32>
// CHECK-DAG: %[[SCALE:.+]] = kiln.constant dense<0.353553385> : tensor<f32>
// CHECK-DAG: %[[VSHAPE:.+]] = kiln.constant dense<[0, 4, -1, 16]> : tensor<4xi64>
// CHECK-DAG: %[[KSHAPE:.+]] = kiln.constant dense<[0, 4, -1, 8]> : tensor<4xi64>
// CHECK-DAG: %[[REPS:.+]] = kiln.constant dense<[1, 1, 2, 1, 1]> : tensor<5xi64>
// CHECK-DAG: %[[AXIS:.+]] = kiln.constant dense<2> : tensor<1xi64>
// CHECK: %[[KU:.+]] = kiln.unsqueeze %[[K]], %[[AXIS]]
// CHECK: %[[KE:.+]] = kiln.expand %[[KU]], %[[REPS]] : (tensor<2x2x1x3x8xf32>, tensor<5xi64>) -> tensor<2x2x2x3x8xf32>
// CHECK: %[[KR:.+]] = kiln.reshape %[[KE]], %[[KSHAPE]] : (tensor<2x2x2x3x8xf32>, tensor<4xi64>) -> tensor<2x4x3x8xf32>
// CHECK: %[[VU:.+]] = kiln.unsqueeze %[[V]], %[[AXIS]]
// CHECK: %[[VE:.+]] = kiln.expand %[[VU]], %[[REPS]]
// CHECK: %[[VR:.+]] = kiln.reshape %[[VE]], %[[VSHAPE]] : (tensor<2x2x2x3x16xf32>, tensor<4xi64>) -> tensor<2x4x3x16xf32>
// CHECK: %[[KT:.+]] = kiln.transpose %[[KR]] {perm = array<i64: 0, 1, 3, 2>}
// CHECK: %[[S:.+]] = kiln.matmul %[[Q]], %[[KT]]
// CHECK: %[[SS:.+]] = kiln.mul %[[S]], %[[SCALE]]
// CHECK: %[[M:.+]] = kiln.where %[[KEEP]], %[[SS]], %[[LOWEST]]
// CHECK: %[[P:.+]] = kiln.softmax %[[M]] : (tensor<2x4x3x3xf32>)
// CHECK: %[[Y:.+]] = kiln.matmul %[[P]], %[[VR]] : (tensor<2x4x3x3xf32>, tensor<2x4x3x16xf32>) -> tensor<2x4x3x16xf32>
// CHECK: return %[[Y]]

// ONLY-LABEL: func.func @gqa_causal
// ONLY: kiln.attention

// ROUNDTRIP-LABEL: func.func @gqa_causal
// ROUNDTRIP: kiln.attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {causal = true, num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 0.353553385 : f32}
// ROUNDTRIP-NOT: kiln.softmax
func.func @gqa_causal(%q: tensor<2x4x3x8xf32>, %k: tensor<2x2x3x8xf32>, %v: tensor<2x2x3x16xf32>) -> tensor<2x4x3x16xf32> {
  %none = kiln.none
  %y = kiln.attention %q, %k, %v, %none {num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 0.353553385 : f32, causal = true} : (tensor<2x4x3x8xf32>, tensor<2x2x3x8xf32>, tensor<2x2x3x16xf32>, none) -> tensor<2x4x3x16xf32>
  return %y : tensor<2x4x3x16xf32>
}

// -----

// Float mask: added after the scale; scale 1 adds no Mul. f16 stays f16.

// CHECK-LABEL: func.func @additive_mask
// CHECK-SAME: %[[MASK:[^:]+]]: tensor<1x1x4x4xf16>
// CHECK: %[[S:.+]] = kiln.matmul
// CHECK-NEXT: %[[M:.+]] = kiln.add %[[S]], %[[MASK]] : (tensor<1x2x4x4xf16>, tensor<1x1x4x4xf16>) -> tensor<1x2x4x4xf16>
// CHECK-NEXT: kiln.softmax %[[M]]

// ROUNDTRIP-LABEL: func.func @additive_mask
// ROUNDTRIP: kiln.attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {num_heads = 2 : i64, num_kv_heads = 2 : i64, scale = 1.000000e+00 : f32} : (tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16>, tensor<1x1x4x4xf16>)
func.func @additive_mask(%q: tensor<1x2x4x8xf16>, %k: tensor<1x2x4x8xf16>, %v: tensor<1x2x4x8xf16>, %mask: tensor<1x1x4x4xf16>) -> tensor<1x2x4x8xf16> {
  %y = kiln.attention %q, %k, %v, %mask {num_heads = 2 : i64, num_kv_heads = 2 : i64, scale = 1.0 : f32} : (tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16>, tensor<1x1x4x4xf16>) -> tensor<1x2x4x8xf16>
  return %y : tensor<1x2x4x8xf16>
}

// -----

// Dynamic lengths: the repetition reshapes through the shape of K, and the
// causal mask (bottom-right aligned) is computed with Range/LessOrEqual; the
// i1 mask goes through Where to the lowest f16 first.

// CHECK-LABEL: func.func @dynamic_causal_bool_mask
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<?x4x?x?xf16>, %[[K:[^:]+]]: tensor<?x2x?x?xf16>, %[[V:[^:]+]]: tensor<?x2x?x?xf16>, %[[KEEP:[^:]+]]: tensor<?x1x1x?xi1>)
// CHECK-DAG: %[[LOWEST:.+]] = kiln.constant dense<-6.550400e+04> : tensor<f16>
// CHECK: %[[KB:.+]] = kiln.shape %[[K]] {end = 1 : i64}
// CHECK: %[[KREST:.+]] = kiln.shape %[[K]] {start = 2 : i64}
// CHECK: %[[KSHAPE:.+]] = kiln.concat %[[KB]], %{{.*}}, %[[KREST]] {axis = 0 : i64}
// CHECK: %[[KR:.+]] = kiln.reshape %{{.*}}, %[[KSHAPE]] : (tensor<?x2x2x?x?xf16>, tensor<4xi64>) -> tensor<?x4x?x?xf16>
// CHECK: %[[S:.+]] = kiln.matmul %[[Q]], %{{.*}}
// CHECK: %[[M:.+]] = kiln.where %[[KEEP]], %[[S]], %[[LOWEST]]
// CHECK: %[[SQ:.+]] = kiln.shape %[[Q]] {end = 3 : i64, start = 2 : i64}
// CHECK: %[[SKV:.+]] = kiln.shape %[[KR]] {end = 3 : i64, start = 2 : i64}
// CHECK: %[[ROWS:.+]] = kiln.range
// CHECK: %[[COLS:.+]] = kiln.range
// CHECK: %[[OFF:.+]] = kiln.sub
// CHECK: %[[LAST:.+]] = kiln.add %[[ROWS]], %[[OFF]]
// CHECK: %[[LASTCOL:.+]] = kiln.unsqueeze %[[LAST]]
// CHECK: %[[CAUSAL:.+]] = kiln.less_or_equal %[[COLS]], %[[LASTCOL]] : (tensor<?xi64>, tensor<?x1xi64>) -> tensor<?x?xi1>
// CHECK: %[[C:.+]] = kiln.where %[[CAUSAL]], %[[M]], %[[LOWEST]]
// CHECK: kiln.softmax %[[C]]
func.func @dynamic_causal_bool_mask(%q: tensor<?x4x?x?xf16>, %k: tensor<?x2x?x?xf16>, %v: tensor<?x2x?x?xf16>, %m: tensor<?x1x1x?xi1>) -> tensor<?x4x?x?xf16> {
  %y = kiln.attention %q, %k, %v, %m {num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 1.0 : f32, causal = true} : (tensor<?x4x?x?xf16>, tensor<?x2x?x?xf16>, tensor<?x2x?x?xf16>, tensor<?x1x1x?xi1>) -> tensor<?x4x?x?xf16>
  return %y : tensor<?x4x?x?xf16>
}

// -----

// kiln.linear_attention, elu+1, GQA: φ applied to the 2 KV heads before
// the repetition; num / (φQ · ΣφK + eps).

// CHECK-LABEL: func.func @linear_elu1_gqa
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<2x4x5x8xf32>, %[[K:[^:]+]]: tensor<2x2x7x8xf32>, %[[V:[^:]+]]: tensor<2x2x7x16xf32>)
// CHECK-DAG: %[[EPS:.+]] = kiln.constant dense<9.99999997E-7> : tensor<f32>
// CHECK-DAG: %[[ONE:.+]] = kiln.constant dense<1.000000e+00> : tensor<f32>
// CHECK-DAG: %[[SEQ:.+]] = kiln.constant dense<2> : tensor<1xi64>
// CHECK: %[[QE:.+]] = kiln.elu %[[Q]] : tensor<2x4x5x8xf32>
// CHECK: %[[FQ:.+]] = kiln.add %[[QE]], %[[ONE]]
// CHECK: %[[KE:.+]] = kiln.elu %[[K]] : tensor<2x2x7x8xf32>
// CHECK: %[[FK:.+]] = kiln.add %[[KE]], %[[ONE]]
// CHECK: %[[FKU:.+]] = kiln.unsqueeze %[[FK]]
// CHECK: %[[FKE:.+]] = kiln.expand %[[FKU]]
// CHECK: %[[FKR:.+]] = kiln.reshape %[[FKE]], %{{.*}} : (tensor<2x2x2x7x8xf32>, tensor<4xi64>) -> tensor<2x4x7x8xf32>
// CHECK: %[[VR:.+]] = kiln.reshape %{{.*}} -> tensor<2x4x7x16xf32>
// CHECK: %[[FKT:.+]] = kiln.transpose %[[FKR]] {perm = array<i64: 0, 1, 3, 2>}
// CHECK: %[[KV:.+]] = kiln.matmul %[[FKT]], %[[VR]] : (tensor<2x4x8x7xf32>, tensor<2x4x7x16xf32>) -> tensor<2x4x8x16xf32>
// CHECK: %[[NUM:.+]] = kiln.matmul %[[FQ]], %[[KV]] : (tensor<2x4x5x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x5x16xf32>
// CHECK: %[[KSUM:.+]] = kiln.reduce_sum %[[FKR]], %[[SEQ]] : (tensor<2x4x7x8xf32>, tensor<1xi64>) -> tensor<2x4x1x8xf32>
// CHECK: %[[KSUMT:.+]] = kiln.transpose %[[KSUM]] {perm = array<i64: 0, 1, 3, 2>}
// CHECK: %[[DEN:.+]] = kiln.matmul %[[FQ]], %[[KSUMT]] : (tensor<2x4x5x8xf32>, tensor<2x4x8x1xf32>) -> tensor<2x4x5x1xf32>
// CHECK: %[[DENE:.+]] = kiln.add %[[DEN]], %[[EPS]]
// CHECK: %[[Y:.+]] = kiln.div %[[NUM]], %[[DENE]] : (tensor<2x4x5x16xf32>, tensor<2x4x5x1xf32>) -> tensor<2x4x5x16xf32>
// CHECK: return %[[Y]]

// ONLY-LABEL: func.func @linear_elu1_gqa
// ONLY-NOT: kiln.linear_attention
// ONLY: kiln.div

// ROUNDTRIP-LABEL: func.func @linear_elu1_gqa
// ROUNDTRIP: kiln.linear_attention %{{.*}}, %{{.*}}, %{{.*}} {feature_map = "elu1", num_heads = 4 : i64, num_kv_heads = 2 : i64} : (tensor<2x4x5x8xf32>, tensor<2x2x7x8xf32>, tensor<2x2x7x16xf32>) -> tensor<2x4x5x16xf32>
func.func @linear_elu1_gqa(%q: tensor<2x4x5x8xf32>, %k: tensor<2x2x7x8xf32>, %v: tensor<2x2x7x16xf32>) -> tensor<2x4x5x16xf32> {
  %y = kiln.linear_attention %q, %k, %v {feature_map = "elu1", eps = 1.0e-6 : f32, num_heads = 4 : i64, num_kv_heads = 2 : i64} : (tensor<2x4x5x8xf32>, tensor<2x2x7x8xf32>, tensor<2x2x7x16xf32>) -> tensor<2x4x5x16xf32>
  return %y : tensor<2x4x5x16xf32>
}

// -----

// relu and exp feature maps.

// CHECK-LABEL: func.func @linear_relu_exp
// CHECK: kiln.relu
// CHECK: kiln.relu
// CHECK: kiln.div
// CHECK: kiln.exp
// CHECK: kiln.exp
// CHECK: kiln.div

// ROUNDTRIP-LABEL: func.func @linear_relu_exp
// ROUNDTRIP: kiln.linear_attention {{.*}} {eps = 1.000000e-03 : f32, feature_map = "relu", num_heads = 2 : i64, num_kv_heads = 2 : i64}
// ROUNDTRIP: kiln.linear_attention {{.*}} {feature_map = "exp", num_heads = 2 : i64, num_kv_heads = 2 : i64}
func.func @linear_relu_exp(%q: tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) {
  %y = kiln.linear_attention %q, %q, %q {feature_map = "relu", eps = 1.0e-3 : f32, num_heads = 2 : i64, num_kv_heads = 2 : i64} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %z = kiln.linear_attention %q, %q, %q {feature_map = "exp", num_heads = 2 : i64, num_kv_heads = 2 : i64} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %y, %z : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
}
