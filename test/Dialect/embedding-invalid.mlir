// RUN: kiln-opt %s -split-input-file -verify-diagnostics

func.func @odd_dim(%x: tensor<2x16x7xf32>, %t: tensor<16x7xf32>) {
  // expected-error @+1 {{'kiln.rotary_embedding' op the rotated dim has odd size 7}}
  %y = kiln.rotary_embedding %x, %t, %t : (tensor<2x16x7xf32>, tensor<16x7xf32>, tensor<16x7xf32>) -> tensor<2x16x7xf32>
  return
}

// -----

func.func @partial_rotation(%x: tensor<2x16x8xf32>, %t: tensor<16x1xf32>) {
  // expected-error @+1 {{'kiln.rotary_embedding' op cos/sin must cover the whole rotated dim (8), got 'tensor<16x1xf32>'}}
  %y = kiln.rotary_embedding %x, %t, %t : (tensor<2x16x8xf32>, tensor<16x1xf32>, tensor<16x1xf32>) -> tensor<2x16x8xf32>
  return
}

// -----

func.func @tables_enlarge_x(%x: tensor<1x16x8xf32>, %t: tensor<4x16x8xf32>) {
  // expected-error @+2 {{cos/sin of type 'tensor<4x16x8xf32>' broadcast beyond X's shape 'tensor<1x16x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.rotary_embedding %x, %t, %t : (tensor<1x16x8xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>) -> tensor<1x16x8xf32>
  return
}

// -----

func.func @element_types(%x: tensor<16x8xf32>, %t: tensor<16x8xf16>) {
  // expected-error @+2 {{cos and sin must have X's element type 'f32', got 'tensor<16x8xf16>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.rotary_embedding %x, %t, %t : (tensor<16x8xf32>, tensor<16x8xf16>, tensor<16x8xf16>) -> tensor<16x8xf32>
  return
}
