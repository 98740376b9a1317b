// RUN: kiln-opt %s -split-input-file -verify-diagnostics

func.func @both_axes(%x: tensor<2x3xf32>, %axes: tensor<1xi64>) {
  // expected-error @+2 {{axes must be given as an attribute or as an operand, not both}}
  // expected-error @+1 {{'kiln.reduce_sum' op failed to infer returned types}}
  %0 = kiln.reduce_sum %x, %axes {axes = array<i64: 0>} : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<1x3xf32>
  return
}

// -----

func.func @duplicate_axes(%x: tensor<2x3xf32>) {
  %none = kiln.none
  // expected-error @+2 {{axes contains axis 1 twice}}
  // expected-error @+1 {{'kiln.reduce_mean' op failed to infer returned types}}
  %0 = kiln.reduce_mean %x, %none {axes = array<i64: 1, -1>} : (tensor<2x3xf32>, none) -> tensor<2x1xf32>
  return
}

// -----

func.func @axis_out_of_range(%x: tensor<2x3xf32>) {
  %axes = kiln.constant dense<[2]> : tensor<1xi64>
  // expected-error @+2 {{axes value 2 is out of range for rank 2}}
  // expected-error @+1 {{'kiln.reduce_max' op failed to infer returned types}}
  %0 = kiln.reduce_max %x, %axes : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<2x3xf32>
  return
}

// -----

func.func @negative_axis_out_of_range(%x: tensor<2x3xf32>) {
  %none = kiln.none
  // expected-error @+2 {{axes value -3 is out of range for rank 2}}
  // expected-error @+1 {{'kiln.reduce_min' op failed to infer returned types}}
  %0 = kiln.reduce_min %x, %none {axes = array<i64: -3>} : (tensor<2x3xf32>, none) -> tensor<2x3xf32>
  return
}

// -----

func.func @axis_of_scalar(%x: tensor<f32>) {
  %none = kiln.none
  // expected-error @+2 {{axes value 0 is out of range for rank 0}}
  // expected-error @+1 {{'kiln.reduce_sum' op failed to infer returned types}}
  %0 = kiln.reduce_sum %x, %none {axes = array<i64: 0>} : (tensor<f32>, none) -> tensor<f32>
  return
}

// -----

func.func @unknown_rank(%x: tensor<2x3xf32>, %axes: tensor<?xi64>) {
  // expected-error @+2 {{the rank of the result cannot be inferred: keepdims is 0 and the number of axes is unknown}}
  // expected-error @+1 {{'kiln.reduce_prod' op failed to infer returned types}}
  %0 = kiln.reduce_prod %x, %axes {keepdims = 0} : (tensor<2x3xf32>, tensor<?xi64>) -> tensor<?xf32>
  return
}

// -----

func.func @too_many_axes(%x: tensor<2x3xf32>, %axes: tensor<3xi64>) {
  // expected-error @+2 {{3 axes is more than the rank 2 of data}}
  // expected-error @+1 {{'kiln.reduce_l1' op failed to infer returned types}}
  %0 = kiln.reduce_l1 %x, %axes {keepdims = 0} : (tensor<2x3xf32>, tensor<3xi64>) -> tensor<f32>
  return
}

// -----

func.func @axes_not_1d(%x: tensor<2x3xf32>, %axes: tensor<1x1xi64>) {
  // expected-error @+2 {{axes must be a 1-d tensor, got 'tensor<1x1xi64>'}}
  // expected-error @+1 {{'kiln.reduce_l2' op failed to infer returned types}}
  %0 = kiln.reduce_l2 %x, %axes : (tensor<2x3xf32>, tensor<1x1xi64>) -> tensor<1x1xf32>
  return
}

// -----

func.func @axes_not_i64(%x: tensor<2x3xf32>, %axes: tensor<1xi32>) {
  // expected-error @+1 {{'kiln.reduce_sum' op operand #1 must be optional ranked tensor of 64-bit signless integer values, but got 'tensor<1xi32>'}}
  %0 = kiln.reduce_sum %x, %axes : (tensor<2x3xf32>, tensor<1xi32>) -> tensor<1x1xf32>
  return
}

// -----

func.func @wrong_result(%x: tensor<2x3xf32>) {
  %none = kiln.none
  // expected-error @+2 {{'kiln.reduce_sum' op inferred type(s) 'tensor<2x1xf32>' are incompatible with return type(s) of operation 'tensor<2xf32>'}}
  // expected-error @+1 {{'kiln.reduce_sum' op failed to infer returned types}}
  %0 = kiln.reduce_sum %x, %none {axes = array<i64: 1>} : (tensor<2x3xf32>, none) -> tensor<2xf32>
  return
}

// -----

func.func @unknown_axes_keepdims_result(%x: tensor<2x3xf32>, %axes: tensor<?xi64>) {
  // expected-error @+2 {{'kiln.reduce_sum' op inferred type(s) 'tensor<?x?xf32>' are incompatible with return type(s) of operation 'tensor<2xf32>'}}
  // expected-error @+1 {{'kiln.reduce_sum' op failed to infer returned types}}
  %0 = kiln.reduce_sum %x, %axes : (tensor<2x3xf32>, tensor<?xi64>) -> tensor<2xf32>
  return
}

// -----

func.func @bad_keepdims(%x: tensor<2x3xf32>) {
  %none = kiln.none
  // expected-error @+1 {{'kiln.reduce_sum' op attribute 'keepdims' failed to satisfy constraint: 64-bit signless integer attribute whose value is 0 or 1}}
  %0 = kiln.reduce_sum %x, %none {keepdims = 2} : (tensor<2x3xf32>, none) -> tensor<1x1xf32>
  return
}

// -----

func.func @bad_noop(%x: tensor<2x3xf32>) {
  %none = kiln.none
  // expected-error @+1 {{'kiln.reduce_sum' op attribute 'noop_with_empty_axes' failed to satisfy constraint: 64-bit signless integer attribute whose value is 0 or 1}}
  %0 = kiln.reduce_sum %x, %none {noop_with_empty_axes = -1} : (tensor<2x3xf32>, none) -> tensor<1x1xf32>
  return
}

// -----

func.func @reduce_sum_of_i8(%x: tensor<2x3xi8>) {
  %none = kiln.none
  // expected-error @+1 {{'kiln.reduce_sum' op operand #0 must be ranked tensor of}}
  %0 = kiln.reduce_sum %x, %none : (tensor<2x3xi8>, none) -> tensor<1x1xi8>
  return
}

// -----

func.func @reduce_mean_of_bool(%x: tensor<2x3xi1>) {
  %none = kiln.none
  // expected-error @+1 {{'kiln.reduce_mean' op operand #0 must be ranked tensor of}}
  %0 = kiln.reduce_mean %x, %none : (tensor<2x3xi1>, none) -> tensor<1x1xi1>
  return
}

// -----

func.func @arg_max_axis(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{axis 2 is out of range for rank 2}}
  // expected-error @+1 {{'kiln.arg_max' op failed to infer returned types}}
  %0 = kiln.arg_max %x {axis = 2} : (tensor<2x3xf32>) -> tensor<2x1xi64>
  return
}

// -----

func.func @arg_min_of_scalar(%x: tensor<f32>) {
  // expected-error @+2 {{data must have rank at least 1}}
  // expected-error @+1 {{'kiln.arg_min' op failed to infer returned types}}
  %0 = kiln.arg_min %x : (tensor<f32>) -> tensor<i64>
  return
}

// -----

func.func @arg_max_result_type(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'kiln.arg_max' op result #0 must be ranked tensor of 64-bit signless integer values, but got 'tensor<1x3xi32>'}}
  %0 = kiln.arg_max %x : (tensor<2x3xf32>) -> tensor<1x3xi32>
  return
}

// -----

func.func @arg_max_select_last_index(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'kiln.arg_max' op attribute 'select_last_index' failed to satisfy constraint: 64-bit signless integer attribute whose value is 0 or 1}}
  %0 = kiln.arg_max %x {select_last_index = 3} : (tensor<2x3xf32>) -> tensor<1x3xi64>
  return
}
