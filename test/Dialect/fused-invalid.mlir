// RUN: kiln-opt %s -split-input-file -verify-diagnostics

// What the fused ops reject.

func.func @rms_norm_scale_too_large(%x: tensor<2x8xf32>, %w: tensor<2x8xf32>) {
  // expected-error @+2 {{scale of type 'tensor<2x8xf32>' has more dims than the normalized dims of 'tensor<2x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.rms_norm %x, %w : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @rms_norm_scale_mismatch(%x: tensor<2x8xf32>, %w: tensor<4xf32>) {
  // expected-error @+2 {{scale of type 'tensor<4xf32>' does not broadcast to the normalized dims of 'tensor<2x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.rms_norm %x, %w : (tensor<2x8xf32>, tensor<4xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @rms_norm_axis(%x: tensor<2x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+2 {{axis}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.rms_norm %x, %w {axis = 2 : i64} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @rms_norm_stash(%x: tensor<2x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{stash_type 7 is not a float dtype code (1, 10, 11 or 16)}}
  %0 = kiln.rms_norm %x, %w {stash_type = 7 : i64} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @rms_norm_epsilon(%x: tensor<2x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{epsilon -1.000000e+00 must be non-negative}}
  %0 = kiln.rms_norm %x, %w {epsilon = -1.0 : f32} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @swiglu_shapes(%g: tensor<2x8xf32>, %u: tensor<8xf32>) {
  // expected-error @+1 {{all non-scalar operands/results must have the same shape and base type}}
  %0 = "kiln.swiglu"(%g, %u) : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @fused_matmul_activation(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) {
  %none = kiln.none
  // expected-error @+1 {{attribute 'activation' failed to satisfy constraint: string attribute whose value is one of "none", "relu", "gelu", "gelu_tanh", "silu", "sigmoid", "tanh"}}
  %0 = kiln.fused_matmul %a, %b, %none, %none {activation = "elu"} : (tensor<4x8xf32>, tensor<8x16xf32>, none, none) -> tensor<4x16xf32>
  return
}

// -----

func.func @fused_matmul_trans_b_rank(%a: tensor<8xf32>, %b: tensor<8xf32>) {
  %none = kiln.none
  // expected-error @+2 {{trans_b needs B of rank >= 2, got 'tensor<8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.fused_matmul %a, %b, %none, %none {trans_b = true} : (tensor<8xf32>, tensor<8xf32>, none, none) -> tensor<f32>
  return
}

// -----

func.func @fused_matmul_bias(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %bias: tensor<1x16xf32>) {
  %none = kiln.none
  // expected-error @+2 {{bias must be 1-D with 16 elements (the result's last dim), got 'tensor<1x16xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.fused_matmul %a, %b, %bias, %none : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<1x16xf32>, none) -> tensor<4x16xf32>
  return
}

// -----

func.func @fused_matmul_residual_grows(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %r: tensor<2x4x16xf32>) {
  %none = kiln.none
  // expected-error @+2 {{residual of shape 'tensor<2x4x16xf32>' would change the result's shape by broadcasting}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.fused_matmul %a, %b, %none, %r : (tensor<4x8xf32>, tensor<8x16xf32>, none, tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  return
}

// -----

func.func @fused_matmul_element_types(%a: tensor<4x8xf32>, %b: tensor<8x16xf16>) {
  %none = kiln.none
  // expected-error @+2 {{A has element type 'f32' but B has 'f16'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.fused_matmul %a, %b, %none, %none : (tensor<4x8xf32>, tensor<8x16xf16>, none, none) -> tensor<4x16xf32>
  return
}

// -----

func.func @fused_conv_bias(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<3xf32>) {
  %none = kiln.none
  // expected-error @+2 {{B has 3 elements but 4 channels are needed}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.fused_conv %x, %w, %b, %none : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<3xf32>, none) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @fused_conv_residual(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %r: tensor<1x4x8x8xf32>) {
  %none = kiln.none
  // expected-error @+2 {{operands are not broadcastable}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.fused_conv %x, %w, %none, %r : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, none, tensor<1x4x8x8xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @fused_conv_nhwc_bias(%x: tensor<1x8x8x3xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<3xf32>) {
  %none = kiln.none
  // expected-error @+2 {{B has 3 elements but 4 channels are needed}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.fused_conv_nhwc %x, %w, %b, %none : (tensor<1x8x8x3xf32>, tensor<4x3x3x3xf32>, tensor<3xf32>, none) -> tensor<1x6x6x4xf32>
  return
}

// -----

// A residual laid out channels-first does not broadcast to N x H x W x M.
func.func @fused_conv_nhwc_residual(%x: tensor<1x8x8x3xf32>, %w: tensor<4x3x3x3xf32>, %r: tensor<1x4x6x6xf32>) {
  %none = kiln.none
  // expected-error @+2 {{operands are not broadcastable}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.fused_conv_nhwc %x, %w, %none, %r : (tensor<1x8x8x3xf32>, tensor<4x3x3x3xf32>, none, tensor<1x4x6x6xf32>) -> tensor<1x6x6x4xf32>
  return
}

// -----

// A residual that broadcasting would grow.
func.func @fused_conv_nhwc_residual_grows(%x: tensor<1x8x8x3xf32>, %w: tensor<4x3x3x3xf32>, %r: tensor<2x6x6x4xf32>) {
  %none = kiln.none
  // expected-error @+2 {{would change the result's shape by broadcasting}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.fused_conv_nhwc %x, %w, %none, %r : (tensor<1x8x8x3xf32>, tensor<4x3x3x3xf32>, none, tensor<2x6x6x4xf32>) -> tensor<1x6x6x4xf32>
  return
}

// -----

// The filter is OHWI: its last dim is C / group (3), not 8.
func.func @fused_conv_nhwc_filter(%x: tensor<1x8x8x3xf32>, %w: tensor<4x3x3x8xf32>) {
  %none = kiln.none
  // expected-error @+2 {{W.dim1 * group = 8 * 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.fused_conv_nhwc %x, %w, %none, %none : (tensor<1x8x8x3xf32>, tensor<4x3x3x8xf32>, none, none) -> tensor<1x6x6x4xf32>
  return
}

// -----

func.func @fused_conv_nhwc_rank(%x: tensor<8x3xf32>, %w: tensor<4x3xf32>) {
  %none = kiln.none
  // expected-error @+2 {{X must have rank >= 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.fused_conv_nhwc %x, %w, %none, %none : (tensor<8x3xf32>, tensor<4x3xf32>, none, none) -> tensor<8x4xf32>
  return
}

// -----

func.func @fused_conv_nhwc_activation(%x: tensor<1x8x8x3xf32>, %w: tensor<4x3x3x3xf32>) {
  %none = kiln.none
  // expected-error @+1 {{attribute 'activation' failed to satisfy constraint}}
  %0 = kiln.fused_conv_nhwc %x, %w, %none, %none {activation = "gelu_erf"} : (tensor<1x8x8x3xf32>, tensor<4x3x3x3xf32>, none, none) -> tensor<1x6x6x4xf32>
  return
}
