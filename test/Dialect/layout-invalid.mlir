// RUN: kiln-opt %s -split-input-file -verify-diagnostics

// The channels-last ops report the NCHW rules' errors, on their own dims.

func.func @conv_nhwc_channels(%x: tensor<1x8x8x3xf32>, %w: tensor<4x3x3x2xf32>) {
  %none = kiln.none
  // expected-error @+2 {{X has 3 channels but W.dim1 * group = 2 * 1 is 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.conv_nhwc %x, %w, %none : (tensor<1x8x8x3xf32>, tensor<4x3x3x2xf32>, none) -> tensor<1x6x6x4xf32>
  return
}

// -----

func.func @conv_nhwc_contradicted(%x: tensor<1x8x8x3xf32>, %w: tensor<4x3x3x3xf32>) {
  %none = kiln.none
  // expected-error @+2 {{inferred type(s) 'tensor<1x6x6x4xf32>' are incompatible with return type(s) of operation 'tensor<1x4x6x6xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.conv_nhwc %x, %w, %none : (tensor<1x8x8x3xf32>, tensor<4x3x3x3xf32>, none) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_nhwc_bias(%x: tensor<1x8x8x3xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{B has 3 elements but 4 channels are needed}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.conv_nhwc %x, %w, %b : (tensor<1x8x8x3xf32>, tensor<4x3x3x3xf32>, tensor<3xf32>) -> tensor<1x6x6x4xf32>
  return
}

// -----

func.func @pool_nhwc_rank(%x: tensor<1x8xf32>) {
  // expected-error @+2 {{X must have rank >= 3 (N, a spatial dim and C), got 'tensor<1x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.max_pool_nhwc %x {kernel_shape = array<i64: 2>} : (tensor<1x8xf32>) -> tensor<1x4xf32>
  return
}

// -----

func.func @pool_nhwc_kernel(%x: tensor<1x8x8x3xf32>) {
  // expected-error @+2 {{kernel_shape has 1 entries but the input has 2 spatial dims}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.average_pool_nhwc %x {kernel_shape = array<i64: 2>} : (tensor<1x8x8x3xf32>) -> tensor<1x4x4x3xf32>
  return
}

// -----

func.func @global_pool_nhwc_rank(%x: tensor<8x3xf32>) {
  // expected-error @+2 {{X must have rank >= 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.global_average_pool_nhwc %x : (tensor<8x3xf32>) -> tensor<8x3xf32>
  return
}
