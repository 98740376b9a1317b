// RUN: kiln-opt %s -split-input-file -verify-diagnostics

// Shape errors come from type inference (followed by "failed to infer
// returned types"); attribute checks that do not change the result type
// come from the verifiers alone.

func.func @heads_not_divisible(%q: tensor<1x6x4x8xf32>, %k: tensor<1x4x4x8xf32>, %v: tensor<1x4x4x8xf32>) {
  %none = kiln.none
  // expected-error @+2 {{num_heads 6 is not a multiple of num_kv_heads 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.attention %q, %k, %v, %none {num_heads = 6 : i64, num_kv_heads = 4 : i64, scale = 1.0 : f32} : (tensor<1x6x4x8xf32>, tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>, none) -> tensor<1x6x4x8xf32>
  return
}

// -----

func.func @q_heads_mismatch(%q: tensor<1x8x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) {
  %none = kiln.none
  // expected-error @+2 {{Q has 8 heads but num_heads is 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.attention %q, %k, %v, %none {num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 1.0 : f32} : (tensor<1x8x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, none) -> tensor<1x4x4x8xf32>
  return
}

// -----

func.func @kv_heads_mismatch(%q: tensor<1x8x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x4x4x8xf32>) {
  %none = kiln.none
  // expected-error @+2 {{V has 4 heads but num_kv_heads is 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.attention %q, %k, %v, %none {num_heads = 8 : i64, num_kv_heads = 2 : i64, scale = 1.0 : f32} : (tensor<1x8x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x4x4x8xf32>, none) -> tensor<1x8x4x8xf32>
  return
}

// -----

func.func @head_dim_mismatch(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x16xf32>, %v: tensor<1x2x4x8xf32>) {
  %none = kiln.none
  // expected-error @+2 {{the head dim is 8 in Q but 16 in K}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.attention %q, %k, %v, %none {num_heads = 2 : i64, num_kv_heads = 2 : i64, scale = 1.0 : f32} : (tensor<1x2x4x8xf32>, tensor<1x2x4x16xf32>, tensor<1x2x4x8xf32>, none) -> tensor<1x2x4x8xf32>
  return
}

// -----

func.func @kv_length_mismatch(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x6x8xf32>) {
  %none = kiln.none
  // expected-error @+2 {{the key length is 5 in K but 6 in V}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.attention %q, %k, %v, %none {num_heads = 2 : i64, num_kv_heads = 2 : i64, scale = 1.0 : f32} : (tensor<1x2x4x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x6x8xf32>, none) -> tensor<1x2x4x8xf32>
  return
}

// -----

func.func @rank3(%q: tensor<2x4x8xf32>, %k: tensor<2x4x8xf32>, %v: tensor<2x4x8xf32>) {
  %none = kiln.none
  // expected-error @+2 {{Q must have rank 4 ([B, heads, seq, head_dim]), got 'tensor<2x4x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.attention %q, %k, %v, %none {num_heads = 2 : i64, num_kv_heads = 2 : i64, scale = 1.0 : f32} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, none) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @element_types(%q: tensor<1x2x4x8xf16>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) {
  %none = kiln.none
  // expected-error @+2 {{Q, K and V must have one element type}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.attention %q, %k, %v, %none {num_heads = 2 : i64, num_kv_heads = 2 : i64, scale = 1.0 : f32} : (tensor<1x2x4x8xf16>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, none) -> tensor<1x2x4x8xf16>
  return
}

// -----

func.func @mask_shape(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x5x8xf32>, %m: tensor<4x4xi1>) {
  // expected-error @+2 {{mask 'tensor<4x4xi1>' does not broadcast to the scores' shape [1, 2, 4, 5]}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.attention %q, %k, %v, %m {num_heads = 2 : i64, num_kv_heads = 2 : i64, scale = 1.0 : f32} : (tensor<1x2x4x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x8xf32>, tensor<4x4xi1>) -> tensor<1x2x4x8xf32>
  return
}

// -----

func.func @mask_type(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x5x8xf32>, %m: tensor<4x5xf16>) {
  // expected-error @+2 {{mask must be i1 or have Q's element type 'f32', got 'tensor<4x5xf16>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.attention %q, %k, %v, %m {num_heads = 2 : i64, num_kv_heads = 2 : i64, scale = 1.0 : f32} : (tensor<1x2x4x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x8xf32>, tensor<4x5xf16>) -> tensor<1x2x4x8xf32>
  return
}

// -----

func.func @result_contradicted(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x5x3xf32>) {
  %none = kiln.none
  // expected-error @+2 {{inferred type(s) 'tensor<1x2x4x3xf32>' are incompatible with return type(s) of operation 'tensor<1x2x4x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.attention %q, %k, %v, %none {num_heads = 2 : i64, num_kv_heads = 2 : i64, scale = 1.0 : f32} : (tensor<1x2x4x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x3xf32>, none) -> tensor<1x2x4x8xf32>
  return
}

// -----

func.func @scale_not_finite(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x5x8xf32>) {
  %none = kiln.none
  // expected-error @+1 {{scale must be finite}}
  %y = kiln.attention %q, %k, %v, %none {num_heads = 2 : i64, num_kv_heads = 2 : i64, scale = 0x7F800000 : f32} : (tensor<1x2x4x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x8xf32>, none) -> tensor<1x2x4x8xf32>
  return
}

// -----

func.func @feature_map(%q: tensor<1x2x4x8xf32>) {
  // expected-error @+1 {{feature_map 'softmax' is not one of elu1, relu, exp}}
  %y = kiln.linear_attention %q, %q, %q {feature_map = "softmax", num_heads = 2 : i64, num_kv_heads = 2 : i64} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return
}

// -----

func.func @eps_negative(%q: tensor<1x2x4x8xf32>) {
  // expected-error @+1 {{eps must be finite and >= 0, got -1}}
  %y = kiln.linear_attention %q, %q, %q {feature_map = "exp", eps = -1.0 : f32, num_heads = 2 : i64, num_kv_heads = 2 : i64} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return
}

// -----

func.func @linear_kv_heads(%q: tensor<1x4x4x8xf32>, %k: tensor<1x3x4x8xf32>) {
  // expected-error @+2 {{num_heads 4 is not a multiple of num_kv_heads 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.linear_attention %q, %k, %k {feature_map = "relu", num_heads = 4 : i64, num_kv_heads = 3 : i64} : (tensor<1x4x4x8xf32>, tensor<1x3x4x8xf32>, tensor<1x3x4x8xf32>) -> tensor<1x4x4x8xf32>
  return
}
