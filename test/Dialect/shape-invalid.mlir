// RUN: kiln-opt %s -split-input-file -verify-diagnostics
// One case per rule that the shape ops' inference and verification enforce.
// The rules live in inferReturnTypes, so each failure also reports that
// inference failed.

func.func @reshape_two_wildcards(%x: tensor<2x3xf32>) {
  %c = kiln.constant dense<[-1, -1]> : tensor<2xi64>
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{shape has more than one -1 (at 0 and 1)}}
  %y = kiln.reshape %x, %c : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  return
}

// -----

func.func @reshape_bad_count(%x: tensor<2x3xf32>) {
  %c = kiln.constant dense<[4, -1]> : tensor<2xi64>
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{6 elements are not a multiple of 4}}
  %y = kiln.reshape %x, %c : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<4x?xf32>
  return
}

// -----

func.func @reshape_count_mismatch(%x: tensor<2x3xf32>) {
  %c = kiln.constant dense<[5]> : tensor<1xi64>
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{the element counts differ (6 vs 5)}}
  %y = kiln.reshape %x, %c : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<5xf32>
  return
}

// -----

func.func @reshape_negative(%x: tensor<2x3xf32>) {
  %c = kiln.constant dense<[-2, 3]> : tensor<2xi64>
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{shape[0] is -2: dims must be >= -1}}
  %y = kiln.reshape %x, %c : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<?x3xf32>
  return
}

// -----

func.func @reshape_allowzero_wildcard(%x: tensor<2x3xf32>) {
  %c = kiln.constant dense<[0, -1]> : tensor<2xi64>
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{with allowzero = 1 the shape cannot hold both a 0 and a -1}}
  %y = kiln.reshape %x, %c {allowzero = 1 : i64} : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<0x?xf32>
  return
}

// -----

func.func @reshape_dynamic_length(%x: tensor<2x3xf32>, %s: tensor<?xi64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{the `shape` operand must be a 1-D tensor of static length}}
  %y = kiln.reshape %x, %s : (tensor<2x3xf32>, tensor<?xi64>) -> tensor<6xf32>
  return
}

// -----

func.func @reshape_wrong_declared_type(%x: tensor<?x128x8xf32>) {
  %c = kiln.constant dense<[0, -1, 64]> : tensor<3xi64>
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{inferred type(s) 'tensor<?x16x64xf32>' are incompatible with return type(s) of operation 'tensor<?x17x64xf32>'}}
  %y = kiln.reshape %x, %c : (tensor<?x128x8xf32>, tensor<3xi64>) -> tensor<?x17x64xf32>
  return
}

// -----

func.func @transpose_bad_perm(%x: tensor<2x3x4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{perm is not a permutation of [0, 3): entry 0}}
  %y = kiln.transpose %x {perm = array<i64: 0, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<2x2x3xf32>
  return
}

// -----

func.func @transpose_perm_size(%x: tensor<2x3x4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{perm has 2 entries for an input of rank 3}}
  %y = kiln.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3x4xf32>) -> tensor<3x2xf32>
  return
}

// -----

func.func @flatten_axis(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{axis 3 is out of range [-2, 2] for rank 2}}
  %y = kiln.flatten %x {axis = 3 : i64} : (tensor<2x3xf32>) -> tensor<6x1xf32>
  return
}

// -----

func.func @squeeze_not_one(%x: tensor<2x3xf32>) {
  %none = kiln.none
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{cannot squeeze dim 1 of size 3}}
  %y = kiln.squeeze %x, %none {axes = array<i64: 1>} : (tensor<2x3xf32>, none) -> tensor<2xf32>
  return
}

// -----

func.func @squeeze_unknown_axes(%x: tensor<1x3xf32>, %axes: tensor<1xi64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{the `axes` must be known at compile time}}
  %y = kiln.squeeze %x, %axes : (tensor<1x3xf32>, tensor<1xi64>) -> tensor<3xf32>
  return
}

// -----

func.func @squeeze_both_axes(%x: tensor<1x3xf32>) {
  %axes = kiln.constant dense<0> : tensor<1xi64>
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{not both}}
  %y = kiln.squeeze %x, %axes {axes = array<i64: 0>} : (tensor<1x3xf32>, tensor<1xi64>) -> tensor<3xf32>
  return
}

// -----

func.func @unsqueeze_axis_range(%x: tensor<3xf32>) {
  %axes = kiln.constant dense<2> : tensor<1xi64>
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{axes 2 is out of range for rank 2}}
  %y = kiln.unsqueeze %x, %axes : (tensor<3xf32>, tensor<1xi64>) -> tensor<3x1xf32>
  return
}

// -----

func.func @unsqueeze_repeated(%x: tensor<3xf32>) {
  %none = kiln.none
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{axes repeats axis 0}}
  %y = kiln.unsqueeze %x, %none {axes = array<i64: 0, -3>} : (tensor<3xf32>, none) -> tensor<1x1x3xf32>
  return
}

// -----

func.func @unsqueeze_no_axes(%x: tensor<3xf32>) {
  %none = kiln.none
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{unsqueeze needs axes}}
  %y = kiln.unsqueeze %x, %none : (tensor<3xf32>, none) -> tensor<3xf32>
  return
}

// -----

func.func @concat_mismatch(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{dimension 1 is 3 in one operand and 4 in operand 1}}
  %y = kiln.concat %a, %b {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @concat_rank(%a: tensor<2x3xf32>, %b: tensor<2xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{operand 1 has rank 1, operand 0 has rank 2}}
  %y = kiln.concat %a, %b {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @concat_axis(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %y = kiln.concat %a {axis = 2 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @split_sum(%x: tensor<2x5xf32>) {
  %none = kiln.none
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{split sizes add up to 4 but the split dim is 5}}
  %y:2 = kiln.split %x, %none {axis = 1 : i64, split = array<i64: 2, 2>} : (tensor<2x5xf32>, none) -> (tensor<2x2xf32>, tensor<2x2xf32>)
  return
}

// -----

func.func @split_count(%x: tensor<2x5xf32>) {
  %s = kiln.constant dense<[2, 3]> : tensor<2xi64>
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{num_outputs is 3 but there are 2 split sizes}}
  %y:3 = kiln.split %x, %s {axis = 1 : i64, num_outputs = 3 : i64} : (tensor<2x5xf32>, tensor<2xi64>) -> (tensor<2x2xf32>, tensor<2x3xf32>, tensor<2x3xf32>)
  return
}

// -----

func.func @split_nothing(%x: tensor<2x5xf32>) {
  %none = kiln.none
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{split needs num_outputs or split sizes}}
  %y:2 = kiln.split %x, %none {axis = 1 : i64} : (tensor<2x5xf32>, none) -> (tensor<2x2xf32>, tensor<2x3xf32>)
  return
}

// -----

func.func @slice_zero_step(%x: tensor<4xf32>) {
  %c = kiln.constant dense<0> : tensor<1xi64>
  %none = kiln.none
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{steps[0] is 0}}
  %y = kiln.slice %x, %c, %c, %none, %c : (tensor<4xf32>, tensor<1xi64>, tensor<1xi64>, none, tensor<1xi64>) -> tensor<?xf32>
  return
}

// -----

func.func @slice_lengths(%x: tensor<4xf32>) {
  %a = kiln.constant dense<0> : tensor<1xi64>
  %b = kiln.constant dense<[1, 2]> : tensor<2xi64>
  %none = kiln.none
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{starts has 1 entries but ends has 2}}
  %y = kiln.slice %x, %a, %b, %none, %none : (tensor<4xf32>, tensor<1xi64>, tensor<2xi64>, none, none) -> tensor<?xf32>
  return
}

// -----

func.func @gather_axis(%x: tensor<4x3xf32>, %i: tensor<2xi64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{axis -3 is out of range for rank 2}}
  %y = kiln.gather %x, %i {axis = -3 : i64} : (tensor<4x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  return
}

// -----

func.func @gather_elements_rank(%x: tensor<4x3xf32>, %i: tensor<2xi64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{indices have rank 1, data has rank 2}}
  %y = kiln.gather_elements %x, %i : (tensor<4x3xf32>, tensor<2xi64>) -> tensor<2xf32>
  return
}

// -----

func.func @gather_nd_k(%x: tensor<4x3xf32>, %i: tensor<2x3xi64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{the last dim of indices is 3, must be in [1, 2]}}
  %y = kiln.gather_nd %x, %i : (tensor<4x3xf32>, tensor<2x3xi64>) -> tensor<2xf32>
  return
}

// -----

func.func @scatter_reduction(%x: tensor<4xf32>, %i: tensor<2xi64>, %u: tensor<2xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{reduction "sum" is not one of none, add, mul, max, min}}
  %y = kiln.scatter_elements %x, %i, %u {reduction = "sum"} : (tensor<4xf32>, tensor<2xi64>, tensor<2xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @scatter_nd_updates(%x: tensor<8xf32>, %i: tensor<4x1xi64>, %u: tensor<3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{dimension 0 is 4 in one and 3 in the other}}
  %y = kiln.scatter_nd %x, %i, %u : (tensor<8xf32>, tensor<4x1xi64>, tensor<3xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @expand_conflict(%x: tensor<3xf32>) {
  %c = kiln.constant dense<[2, 4]> : tensor<2xi64>
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{not broadcastable}}
  %y = kiln.expand %x, %c : (tensor<3xf32>, tensor<2xi64>) -> tensor<2x4xf32>
  return
}

// -----

func.func @tile_length(%x: tensor<3xf32>) {
  %c = kiln.constant dense<[2, 4]> : tensor<2xi64>
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{repeats has 2 entries for an input of rank 1}}
  %y = kiln.tile %x, %c : (tensor<3xf32>, tensor<2xi64>) -> tensor<6xf32>
  return
}

// -----

func.func @constant_of_shape_value(%s: tensor<2xi64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{value must have one element}}
  %y = kiln.constant_of_shape %s {value = dense<[1, 2]> : tensor<2xi64>} : (tensor<2xi64>) -> tensor<?x?xi64>
  return
}

// -----

func.func @range_not_scalar(%a: tensor<1xi64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{start, limit and delta must be scalars}}
  %y = kiln.range %a, %a, %a : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?xi64>
  return
}

// -----

func.func @range_zero_delta(%a: tensor<i64>) {
  %z = kiln.constant dense<0> : tensor<i64>
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{delta is 0}}
  %y = kiln.range %a, %a, %z : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  return
}

// -----

func.func @eye_like_rank(%x: tensor<3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{eye_like needs a 2-D input}}
  %y = kiln.eye_like %x : (tensor<3xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @one_hot_values(%i: tensor<4xi64>, %d: tensor<i64>, %v: tensor<3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{values must be [off, on]}}
  %y = kiln.one_hot %i, %d, %v : (tensor<4xi64>, tensor<i64>, tensor<3xf32>) -> tensor<4x?xf32>
  return
}

// -----

func.func @trilu_rank(%x: tensor<3xf32>) {
  %none = kiln.none
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{trilu needs rank >= 2}}
  %y = kiln.trilu %x, %none : (tensor<3xf32>, none) -> tensor<3xf32>
  return
}

// -----

func.func @cum_sum_axis(%x: tensor<3xf32>) {
  %a = kiln.constant dense<1> : tensor<i64>
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{axis 1 is out of range for rank 1}}
  %y = kiln.cum_sum %x, %a : (tensor<3xf32>, tensor<i64>) -> tensor<3xf32>
  return
}

// -----

func.func @reverse_sequence_axes(%x: tensor<4x2xf32>, %l: tensor<2xi64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{batch_axis and time_axis must be 0 and 1, got 1 and 1}}
  %y = kiln.reverse_sequence %x, %l {batch_axis = 1 : i64, time_axis = 1 : i64} : (tensor<4x2xf32>, tensor<2xi64>) -> tensor<4x2xf32>
  return
}

// -----

func.func @depth_to_space_mode(%x: tensor<1x8x2x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{mode "ABC" is not DCR or CRD}}
  %y = kiln.depth_to_space %x {blocksize = 2 : i64, mode = "ABC"} : (tensor<1x8x2x3xf32>) -> tensor<1x2x4x6xf32>
  return
}

// -----

func.func @depth_to_space_channels(%x: tensor<1x6x2x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{dim 1 (6) is not a multiple of 4}}
  %y = kiln.depth_to_space %x {blocksize = 2 : i64} : (tensor<1x6x2x3xf32>) -> tensor<1x1x4x6xf32>
  return
}

// -----

func.func @space_to_depth_height(%x: tensor<1x2x3x4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{dim 2 (3) is not a multiple of 2}}
  %y = kiln.space_to_depth %x {blocksize = 2 : i64} : (tensor<1x2x3x4xf32>) -> tensor<1x8x1x2xf32>
  return
}

// -----

func.func @top_k_too_large(%x: tensor<2x4xf32>) {
  %k = kiln.constant dense<5> : tensor<1xi64>
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{K is 5 for a dim of size 4}}
  %y:2 = kiln.top_k %x, %k : (tensor<2x4xf32>, tensor<1xi64>) -> (tensor<2x5xf32>, tensor<2x5xi64>)
  return
}

// -----

func.func @tensor_scatter_update_shape(%p: tensor<2x2x8x4xf32>, %u: tensor<2x3x1x4xf32>, %i: tensor<2xi64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{update and past_cache outside the axis: dimension 1 is 2 in one and 3 in the other}}
  %y = kiln.tensor_scatter %p, %u, %i {axis = 2 : i64} : (tensor<2x2x8x4xf32>, tensor<2x3x1x4xf32>, tensor<2xi64>) -> tensor<2x2x8x4xf32>
  return
}

// -----

func.func @tensor_scatter_batch_axis(%p: tensor<2x8xf32>, %u: tensor<1x8xf32>) {
  %none = kiln.none
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{axis is the batch dim 0}}
  %y = kiln.tensor_scatter %p, %u, %none {axis = 0 : i64} : (tensor<2x8xf32>, tensor<1x8xf32>, none) -> tensor<2x8xf32>
  return
}

// -----

func.func @tensor_scatter_mode(%p: tensor<2x8xf32>, %u: tensor<2x1xf32>) {
  %none = kiln.none
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{mode "ring" is not one of linear, circular}}
  %y = kiln.tensor_scatter %p, %u, %none {axis = 1 : i64, mode = "ring"} : (tensor<2x8xf32>, tensor<2x1xf32>, none) -> tensor<2x8xf32>
  return
}

// -----

func.func @tensor_scatter_indices(%p: tensor<2x8xf32>, %u: tensor<2x1xf32>, %i: tensor<3xi64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{write_indices and the batch: dimension 0 is 3 in one and 2 in the other}}
  %y = kiln.tensor_scatter %p, %u, %i {axis = 1 : i64} : (tensor<2x8xf32>, tensor<2x1xf32>, tensor<3xi64>) -> tensor<2x8xf32>
  return
}
