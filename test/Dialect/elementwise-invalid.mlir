// RUN: kiln-opt %s -split-input-file -verify-diagnostics

// Element types ONNX forbids.

func.func @exp_of_int(%x: tensor<4xi32>) {
  // expected-error @+1 {{'kiln.exp' op operand #0 must be ranked tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<4xi32>'}}
  %0 = kiln.exp %x : tensor<4xi32>
  return
}

// -----

func.func @neg_of_unsigned(%x: tensor<4xui8>) {
  // expected-error @+1 {{'kiln.neg' op operand #0 must be ranked tensor of}}
  %0 = kiln.neg %x : tensor<4xui8>
  return
}

// -----

func.func @not_of_float(%x: tensor<4xf32>) {
  // expected-error @+1 {{'kiln.not' op operand #0 must be ranked tensor of 1-bit signless integer values}}
  %0 = kiln.not %x : tensor<4xf32>
  return
}

// -----

func.func @celu_of_f16(%x: tensor<4xf16>) {
  // expected-error @+1 {{'kiln.celu' op operand #0 must be ranked tensor of 32-bit float values}}
  %0 = kiln.celu %x : tensor<4xf16>
  return
}

// -----

func.func @and_of_float(%a: tensor<4xf32>) {
  // expected-error @+1 {{'kiln.and' op operand #0 must be ranked tensor of 1-bit signless integer values}}
  %0 = kiln.and %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  return
}

// -----

func.func @bit_shift_of_signed(%a: tensor<4xi8>) {
  // expected-error @+1 {{'kiln.bit_shift' op operand #0 must be ranked tensor of 8-bit unsigned integer or 16-bit unsigned integer or 32-bit unsigned integer or 64-bit unsigned integer values}}
  %0 = kiln.bit_shift %a, %a {direction = "LEFT"} : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi8>
  return
}

// -----

func.func @sum_of_int(%a: tensor<4xi32>) {
  // expected-error @+1 {{'kiln.sum' op operand #0 must be variadic of ranked tensor of 16-bit float}}
  %0 = kiln.sum %a : (tensor<4xi32>) -> tensor<4xi32>
  return
}

// -----

func.func @pow_of_unsigned(%a: tensor<4xui8>, %e: tensor<f32>) {
  // expected-error @+1 {{'kiln.pow' op operand #0 must be ranked tensor of}}
  %0 = kiln.pow %a, %e : (tensor<4xui8>, tensor<f32>) -> tensor<4xui8>
  return
}

// -----

func.func @bitwise_not_of_bool(%a: tensor<4xi1>) {
  // expected-error @+1 {{'kiln.bitwise_not' op operand #0 must be ranked tensor of 8-bit signless integer}}
  %0 = kiln.bitwise_not %a : tensor<4xi1>
  return
}

// -----

// Operands of one element type.

func.func @add_of_mixed_types(%a: tensor<4xf32>, %b: tensor<4xi32>) {
  // expected-error @+2 {{operands must have the same element type, got 'f32' and 'i32'}}
  // expected-error @+1 {{'kiln.add' op failed to infer returned types}}
  %0 = kiln.add %a, %b : (tensor<4xf32>, tensor<4xi32>) -> tensor<4xf32>
  return
}

// -----

func.func @less_of_mixed_types(%a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error @+2 {{operands must have the same element type, got 'f32' and 'f16'}}
  // expected-error @+1 {{'kiln.less' op failed to infer returned types}}
  %0 = kiln.less %a, %b : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xi1>
  return
}

// -----

func.func @max_of_mixed_types(%a: tensor<4xf32>, %b: tensor<4xf32>, %c: tensor<4xf64>) {
  // expected-error @+2 {{operands must have the same element type, got 'f32' and 'f64'}}
  // expected-error @+1 {{'kiln.max' op failed to infer returned types}}
  %0 = kiln.max %a, %b, %c : (tensor<4xf32>, tensor<4xf32>, tensor<4xf64>) -> tensor<4xf32>
  return
}

// -----

func.func @where_of_mixed_types(%c: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xi64>) {
  // expected-error @+2 {{operands must have the same element type, got 'f32' and 'i64'}}
  // expected-error @+1 {{'kiln.where' op failed to infer returned types}}
  %0 = kiln.where %c, %a, %b : (tensor<4xi1>, tensor<4xf32>, tensor<4xi64>) -> tensor<4xf32>
  return
}

// -----

func.func @where_of_float_condition(%c: tensor<4xf32>, %a: tensor<4xf32>) {
  // expected-error @+1 {{'kiln.where' op operand #0 must be ranked tensor of 1-bit signless integer values}}
  %0 = kiln.where %c, %a, %a : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @prelu_of_mixed_types(%x: tensor<4xf32>, %s: tensor<4xf16>) {
  // expected-error @+2 {{operands must have the same element type, got 'f32' and 'f16'}}
  // expected-error @+1 {{'kiln.prelu' op failed to infer returned types}}
  %0 = kiln.prelu %x, %s : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return
}

// -----

// Shapes.

func.func @add_not_broadcastable(%a: tensor<2x3xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{operands are not broadcastable: dimension 1 of the result is 3 in one operand and 4 in another}}
  // expected-error @+1 {{'kiln.add' op failed to infer returned types}}
  %0 = kiln.add %a, %b : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @where_not_broadcastable(%c: tensor<5x1xi1>, %a: tensor<3xf32>, %b: tensor<2x1xf32>) {
  // expected-error @+2 {{operands are not broadcastable: dimension 0 of the result is 5 in one operand and 2 in another}}
  // expected-error @+1 {{'kiln.where' op failed to infer returned types}}
  %0 = kiln.where %c, %a, %b : (tensor<5x1xi1>, tensor<3xf32>, tensor<2x1xf32>) -> tensor<5x3xf32>
  return
}

// -----

func.func @add_wrong_result_shape(%a: tensor<2x?xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{'kiln.add' op inferred type(s) 'tensor<2x3xf32>' are incompatible with return type(s) of operation 'tensor<2x4xf32>'}}
  // expected-error @+1 {{'kiln.add' op failed to infer returned types}}
  %0 = kiln.add %a, %b : (tensor<2x?xf32>, tensor<3xf32>) -> tensor<2x4xf32>
  return
}

// -----

// A result less static than inference verifies (a pass that folds an
// operand may let inference see a size the result type does not state).
func.func @add_result_less_static(%a: tensor<2x?xf32>, %b: tensor<3xf32>) {
  %0 = kiln.add %a, %b : (tensor<2x?xf32>, tensor<3xf32>) -> tensor<2x?xf32>
  return
}

// -----

func.func @pow_result_has_base_type(%a: tensor<4xf32>, %e: tensor<f16>) {
  // expected-error @+2 {{'kiln.pow' op inferred type(s) 'tensor<4xf32>' are incompatible with return type(s) of operation 'tensor<4xf16>'}}
  // expected-error @+1 {{'kiln.pow' op failed to infer returned types}}
  %0 = kiln.pow %a, %e : (tensor<4xf32>, tensor<f16>) -> tensor<4xf16>
  return
}

// -----

func.func @equal_result_not_bool(%a: tensor<4xf32>) {
  // expected-error @+1 {{'kiln.equal' op result #0 must be ranked tensor of 1-bit signless integer values, but got 'tensor<4xf32>'}}
  %0 = kiln.equal %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @is_nan_wrong_shape(%x: tensor<4xf32>) {
  // expected-error @+2 {{'kiln.is_nan' op inferred type(s) 'tensor<4xi1>' are incompatible with return type(s) of operation 'tensor<5xi1>'}}
  // expected-error @+1 {{'kiln.is_nan' op failed to infer returned types}}
  %0 = kiln.is_nan %x : (tensor<4xf32>) -> tensor<5xi1>
  return
}

// -----

func.func @sum_of_nothing() {
  // expected-error @+2 {{requires at least one operand}}
  // expected-error @+1 {{'kiln.sum' op failed to infer returned types}}
  %0 = kiln.sum : () -> tensor<4xf32>
  return
}

// -----

func.func @prelu_slope_rank(%x: tensor<3xf32>, %s: tensor<2x3xf32>) {
  // expected-error @+2 {{slope of rank 2 does not broadcast to X of rank 1}}
  // expected-error @+1 {{'kiln.prelu' op failed to infer returned types}}
  %0 = kiln.prelu %x, %s : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @prelu_slope_dim(%x: tensor<1x3x8x8xf32>, %s: tensor<4x1x1xf32>) {
  // expected-error @+2 {{slope does not broadcast to X: dimension 1 of X is 3 and of slope 4}}
  // expected-error @+1 {{'kiln.prelu' op failed to infer returned types}}
  %0 = kiln.prelu %x, %s : (tensor<1x3x8x8xf32>, tensor<4x1x1xf32>) -> tensor<1x3x8x8xf32>
  return
}

// -----

func.func @prelu_slope_grows_x(%x: tensor<1x3xf32>, %s: tensor<4x3xf32>) {
  // expected-error @+2 {{slope does not broadcast to X: dimension 0 of X is 1 and of slope 4}}
  // expected-error @+1 {{'kiln.prelu' op failed to infer returned types}}
  %0 = kiln.prelu %x, %s : (tensor<1x3xf32>, tensor<4x3xf32>) -> tensor<1x3xf32>
  return
}

// -----

// Clip bounds.

func.func @clip_bound_not_scalar(%x: tensor<4xf32>, %lo: tensor<2xf32>) {
  %none = kiln.none
  // expected-error @+2 {{min must be a scalar, got 'tensor<2xf32>'}}
  // expected-error @+1 {{'kiln.clip' op failed to infer returned types}}
  %0 = kiln.clip %x, %lo, %none : (tensor<4xf32>, tensor<2xf32>, none) -> tensor<4xf32>
  return
}

// -----

func.func @clip_bound_type(%x: tensor<4xf32>, %hi: tensor<f16>) {
  %none = kiln.none
  // expected-error @+2 {{max must have the input's element type 'f32', got 'f16'}}
  // expected-error @+1 {{'kiln.clip' op failed to infer returned types}}
  %0 = kiln.clip %x, %none, %hi : (tensor<4xf32>, none, tensor<f16>) -> tensor<4xf32>
  return
}

// -----

// Attributes.

func.func @mod_float_without_fmod(%a: tensor<4xf32>) {
  // expected-error @+1 {{'kiln.mod' op fmod must be 1 for floating-point operands, got 0}}
  %0 = kiln.mod %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @mod_bad_fmod(%a: tensor<4xi32>) {
  // expected-error @+1 {{'kiln.mod' op attribute 'fmod' failed to satisfy constraint: 64-bit signless integer attribute whose value is 0 or 1}}
  %0 = kiln.mod %a, %a {fmod = 2} : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return
}

// -----

func.func @gelu_bad_approximate(%x: tensor<4xf32>) {
  // expected-error @+1 {{'kiln.gelu' op attribute 'approximate' failed to satisfy constraint: string attribute whose value is one of "none", "tanh"}}
  %0 = kiln.gelu %x {approximate = "fast"} : tensor<4xf32>
  return
}

// -----

func.func @bit_shift_bad_direction(%a: tensor<4xui8>) {
  // expected-error @+1 {{'kiln.bit_shift' op attribute 'direction' failed to satisfy constraint: string attribute whose value is one of "LEFT", "RIGHT"}}
  %0 = kiln.bit_shift %a, %a {direction = "UP"} : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  return
}

// -----

func.func @bit_shift_without_direction(%a: tensor<4xui8>) {
  // expected-error @+1 {{'kiln.bit_shift' op requires attribute 'direction'}}
  %0 = kiln.bit_shift %a, %a : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  return
}

// -----

func.func @is_inf_bad_flag(%x: tensor<4xf32>) {
  // expected-error @+1 {{'kiln.is_inf' op attribute 'detect_negative' failed to satisfy constraint: 64-bit signless integer attribute whose value is 0 or 1}}
  %0 = kiln.is_inf %x {detect_negative = -1} : (tensor<4xf32>) -> tensor<4xi1>
  return
}

// -----

func.func @leaky_relu_alpha_type(%x: tensor<4xf32>) {
  // expected-error @+1 {{'kiln.leaky_relu' op attribute 'alpha' failed to satisfy constraint: 32-bit float attribute}}
  %0 = kiln.leaky_relu %x {alpha = 0.1 : f64} : tensor<4xf32>
  return
}

// -----

// Cast.

func.func @cast_without_to(%x: tensor<4xf32>) {
  // expected-error @+1 {{'kiln.cast' op requires attribute 'to'}}
  %0 = kiln.cast %x : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @cast_to_unsupported(%x: tensor<4xf32>) {
  // expected-error @+2 {{cannot cast to 'i4': not a kiln element type}}
  // expected-error @+1 {{'kiln.cast' op failed to infer returned types}}
  %0 = kiln.cast %x {to = i4} : (tensor<4xf32>) -> tensor<4xi64>
  return
}

// -----

func.func @cast_result_not_to(%x: tensor<4xf32>) {
  // expected-error @+2 {{'kiln.cast' op inferred type(s) 'tensor<4xi32>' are incompatible with return type(s) of operation 'tensor<4xi64>'}}
  // expected-error @+1 {{'kiln.cast' op failed to infer returned types}}
  %0 = kiln.cast %x {to = i32} : (tensor<4xf32>) -> tensor<4xi64>
  return
}

// -----

func.func @cast_like_result(%x: tensor<4xf32>, %t: tensor<f16>) {
  // expected-error @+2 {{'kiln.cast_like' op inferred type(s) 'tensor<4xf16>' are incompatible with return type(s) of operation 'tensor<4xf32>'}}
  // expected-error @+1 {{'kiln.cast_like' op failed to infer returned types}}
  %0 = kiln.cast_like %x, %t : (tensor<4xf32>, tensor<f16>) -> tensor<4xf32>
  return
}
