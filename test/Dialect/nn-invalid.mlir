// RUN: kiln-opt %s -split-input-file -verify-diagnostics

// Shape errors come from type inference, which the verifier follows with
// "failed to infer returned types"; attribute checks that do not change the
// result types come from the ops' verifiers alone.

// A declared type that contradicts the inferred one. The message shows the
// inferred type, which pins the value-dependent rules exactly.
func.func @conv_same_upper_contradicted(%x: tensor<1x3x15x15xf32>, %w: tensor<4x3x3x3xf32>) {
  %none = kiln.none
  // expected-error @+2 {{'kiln.conv' op inferred type(s) 'tensor<1x4x8x8xf32>' are incompatible with return type(s) of operation 'tensor<1x4x7x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.conv %x, %w, %none {auto_pad = "SAME_UPPER", strides = array<i64: 2, 2>} : (tensor<1x3x15x15xf32>, tensor<4x3x3x3xf32>, none) -> tensor<1x4x7x8xf32>
  return
}

// -----

func.func @max_pool_ceil_contradicted(%x: tensor<1x2x7x6xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<1x2x4x3xf32>', 'tensor<1x2x4x3xi64>' are incompatible with return type(s) of operation 'tensor<1x2x3x3xf32>', 'tensor<1x2x3x3xi64>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y, %i = kiln.max_pool %x {ceil_mode = 1 : i64, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 1>, strides = array<i64: 2, 2>} : (tensor<1x2x7x6xf32>) -> (tensor<1x2x3x3xf32>, tensor<1x2x3x3xi64>)
  return
}

// -----

func.func @conv_transpose_contradicted(%x: tensor<1x8x5x5xf32>, %w: tensor<8x4x3x3xf32>) {
  %none = kiln.none
  // expected-error @+2 {{inferred type(s) 'tensor<1x4x10x9xf32>' are incompatible with return type(s) of operation 'tensor<1x4x10x10xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.conv_transpose %x, %w, %none {output_padding = array<i64: 1, 0>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x8x5x5xf32>, tensor<8x4x3x3xf32>, none) -> tensor<1x4x10x10xf32>
  return
}

// -----

func.func @pad_contradicted(%x: tensor<?x3x8x8xf32>) {
  %none = kiln.none
  %pads = kiln.constant dense<[1, 0, 1, -1]> : tensor<4xi64>
  %axes = kiln.constant dense<[1, -1]> : tensor<2xi64>
  // expected-error @+2 {{inferred type(s) 'tensor<?x5x8x7xf32>' are incompatible with return type(s) of operation 'tensor<1x5x8x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.pad %x, %pads, %none, %axes : (tensor<?x3x8x8xf32>, tensor<4xi64>, none, tensor<2xi64>) -> tensor<1x5x8x8xf32>
  return
}

// -----

func.func @pad_unknown_contradicted(%x: tensor<1x3x8x8xf32>, %pads: tensor<8xi64>) {
  %none = kiln.none
  // expected-error @+2 {{inferred type(s) 'tensor<?x?x?x?xf32>' are incompatible with return type(s) of operation 'tensor<1x3x8x8xi32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.pad %x, %pads, %none, %none : (tensor<1x3x8x8xf32>, tensor<8xi64>, none, none) -> tensor<1x3x8x8xi32>
  return
}

// -----

func.func @resize_contradicted(%x: tensor<1x3x8x?xf32>) {
  %none = kiln.none
  %scales = kiln.constant dense<[1.0, 1.0, 0.6, 2.5]> : tensor<4xf32>
  // expected-error @+2 {{inferred type(s) 'tensor<1x3x4x?xf32>' are incompatible with return type(s) of operation 'tensor<1x3x5x20xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.resize %x, %none, %scales, %none : (tensor<1x3x8x?xf32>, none, tensor<4xf32>, none) -> tensor<1x3x5x20xf32>
  return
}

// -----

func.func @matmul_contradicted(%a: tensor<?x1x4x8xf32>, %b: tensor<3x8x16xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<?x3x4x16xf32>' are incompatible with return type(s) of operation 'tensor<?x1x4x16xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.matmul %a, %b : (tensor<?x1x4x8xf32>, tensor<3x8x16xf32>) -> tensor<?x1x4x16xf32>
  return
}

// -----

func.func @layer_norm_contradicted(%x: tensor<2x4x8xf16>, %s: tensor<4x8xf16>) {
  %none = kiln.none
  // expected-error @+2 {{inferred type(s) 'tensor<2x4x8xf16>', 'tensor<2x1x1xf32>', 'tensor<2x1x1xf32>' are incompatible}}
  // expected-error @+1 {{failed to infer returned types}}
  %y, %m, %i = kiln.layer_normalization %x, %s, %none {axis = 1 : i64} : (tensor<2x4x8xf16>, tensor<4x8xf16>, none) -> (tensor<2x4x8xf16>, tensor<2x4x1xf32>, tensor<2x4x1xf32>)
  return
}

// -----

func.func @matmul_contracting(%a: tensor<4x8xf32>, %b: tensor<7x2xf32>) {
  // expected-error @+2 {{matmul contracting dims differ: A has 8 columns but B has 7 rows}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.matmul %a, %b : (tensor<4x8xf32>, tensor<7x2xf32>) -> tensor<4x2xf32>
  return
}

// -----

func.func @matmul_batch(%a: tensor<2x4x8xf32>, %b: tensor<3x8x2xf32>) {
  // expected-error @+2 {{operands are not broadcastable: dimension 0 of the result is 2 in one operand and 3 in another}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.matmul %a, %b : (tensor<2x4x8xf32>, tensor<3x8x2xf32>) -> tensor<2x4x2xf32>
  return
}

// -----

func.func @matmul_element_types(%a: tensor<4x8xf32>, %b: tensor<8x2xf16>) {
  // expected-error @+2 {{A has element type 'f32' but B has 'f16'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.matmul %a, %b : (tensor<4x8xf32>, tensor<8x2xf16>) -> tensor<4x2xf32>
  return
}

// -----

func.func @matmul_scalar(%a: tensor<f32>, %b: tensor<8x2xf32>) {
  // expected-error @+2 {{matmul operands must have rank >= 1, got A of rank 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.matmul %a, %b : (tensor<f32>, tensor<8x2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @gemm_rank(%a: tensor<2x4x8xf32>, %b: tensor<8x2xf32>) {
  %none = kiln.none
  // expected-error @+2 {{A and B must be 2-D, got 'tensor<2x4x8xf32>' and 'tensor<8x2xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.gemm %a, %b, %none : (tensor<2x4x8xf32>, tensor<8x2xf32>, none) -> tensor<4x2xf32>
  return
}

// -----

func.func @gemm_transposed_k(%a: tensor<4x8xf32>, %b: tensor<2x8xf32>) {
  %none = kiln.none
  // expected-error @+2 {{op(A) has 8 columns but op(B) has 2 rows}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.gemm %a, %b, %none : (tensor<4x8xf32>, tensor<2x8xf32>, none) -> tensor<4x8xf32>
  return
}

// -----

func.func @gemm_c(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>, %c: tensor<4xf32>) {
  // expected-error @+2 {{C of type 'tensor<4xf32>' is not unidirectionally broadcastable to 4x2}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.gemm %a, %b, %c : (tensor<4x8xf32>, tensor<8x2xf32>, tensor<4xf32>) -> tensor<4x2xf32>
  return
}

// -----

func.func @einsum_inputs(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{equation 'ij,jk->ik' has 2 input terms but the op has 1 inputs}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.einsum %a {equation = "ij,jk->ik"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @einsum_label(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+2 {{equation label 'j' is 3 in one input and 4 in another}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.einsum %a, %b {equation = "ij,jk->ik"} : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  return
}

// -----

func.func @einsum_rank(%a: tensor<2x3x4xf32>) {
  // expected-error @+2 {{equation term 'ij' does not match an input of rank 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.einsum %a {equation = "ij->i"} : (tensor<2x3x4xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @conv_kernel_shape_entries(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  %none = kiln.none
  // expected-error @+2 {{kernel_shape has 3 entries but the input has 2 spatial dims}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.conv %x, %w, %none {kernel_shape = array<i64: 3, 3, 3>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, none) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_kernel_shape_vs_w(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  %none = kiln.none
  // expected-error @+2 {{kernel_shape[1] is 5 but W's spatial dim 1 is 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.conv %x, %w, %none {kernel_shape = array<i64: 3, 5>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, none) -> tensor<1x4x6x4xf32>
  return
}

// -----

func.func @conv_channels(%x: tensor<1x8x8x8xf32>, %w: tensor<4x2x3x3xf32>) {
  %none = kiln.none
  // expected-error @+2 {{X has 8 channels but W.dim1 * group = 2 * 2 is 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.conv %x, %w, %none {group = 2 : i64} : (tensor<1x8x8x8xf32>, tensor<4x2x3x3xf32>, none) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_group_divides_m(%x: tensor<1x8x8x8xf32>, %w: tensor<6x2x3x3xf32>) {
  %none = kiln.none
  // expected-error @+2 {{W.dim0 is 6, not divisible by group 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.conv %x, %w, %none {group = 4 : i64} : (tensor<1x8x8x8xf32>, tensor<6x2x3x3xf32>, none) -> tensor<1x6x6x6xf32>
  return
}

// -----

func.func @conv_group_zero(%x: tensor<1x8x8x8xf32>, %w: tensor<6x2x3x3xf32>) {
  %none = kiln.none
  // expected-error @+2 {{group is 0 but must be >= 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.conv %x, %w, %none {group = 0 : i64} : (tensor<1x8x8x8xf32>, tensor<6x2x3x3xf32>, none) -> tensor<1x6x6x6xf32>
  return
}

// -----

func.func @conv_w_rank(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3xf32>) {
  %none = kiln.none
  // expected-error @+2 {{W has rank 3 but X has rank 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.conv %x, %w, %none : (tensor<1x3x8x8xf32>, tensor<4x3x3xf32>, none) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_bias(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<8xf32>) {
  // expected-error @+2 {{B has 8 elements but 4 channels are needed}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.conv %x, %w, %b : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<8xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_auto_pad_value(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  %none = kiln.none
  // expected-error @+2 {{auto_pad 'SAME' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.conv %x, %w, %none {auto_pad = "SAME"} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, none) -> tensor<1x4x8x8xf32>
  return
}

// -----

func.func @conv_pads_with_auto_pad(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  %none = kiln.none
  // expected-error @+2 {{pads must be 0 with auto_pad VALID}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.conv %x, %w, %none {auto_pad = "VALID", pads = array<i64: 1, 1, 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, none) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_strides_entries(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  %none = kiln.none
  // expected-error @+2 {{strides has 1 entries but 2 are needed (2 spatial dims)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.conv %x, %w, %none {strides = array<i64: 2>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, none) -> tensor<1x4x3x3xf32>
  return
}

// -----

func.func @conv_pads_entries(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  %none = kiln.none
  // expected-error @+2 {{pads has 2 entries but 4 are needed (a begin and an end for each of 2 spatial dims)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.conv %x, %w, %none {pads = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, none) -> tensor<1x4x8x8xf32>
  return
}

// -----

func.func @conv_negative_pad(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  %none = kiln.none
  // expected-error @+2 {{pads[2] is -1 but must be at least 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.conv %x, %w, %none {pads = array<i64: 0, 0, -1, 0>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, none) -> tensor<1x4x5x6xf32>
  return
}

// -----

func.func @conv_zero_dilation(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  %none = kiln.none
  // expected-error @+2 {{dilations[0] is 0 but must be at least 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.conv %x, %w, %none {dilations = array<i64: 0, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, none) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_kernel_too_large(%x: tensor<1x3x2x8xf32>, %w: tensor<4x3x3x3xf32>) {
  %none = kiln.none
  // expected-error @+2 {{spatial dim 0 of size 2 (2 padded) is smaller than the dilated kernel extent 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.conv %x, %w, %none : (tensor<1x3x2x8xf32>, tensor<4x3x3x3xf32>, none) -> tensor<1x4x1x6xf32>
  return
}

// -----

func.func @conv_x_rank(%x: tensor<3x8xf32>, %w: tensor<4x3xf32>) {
  %none = kiln.none
  // expected-error @+2 {{X must have rank >= 3 (N, C and a spatial dim), got 'tensor<3x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.conv %x, %w, %none : (tensor<3x8xf32>, tensor<4x3xf32>, none) -> tensor<3x4xf32>
  return
}

// -----

func.func @conv_transpose_channels(%x: tensor<1x4x5x5xf32>, %w: tensor<8x4x3x3xf32>) {
  %none = kiln.none
  // expected-error @+2 {{X has 4 channels but W.dim0 is 8}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.conv_transpose %x, %w, %none : (tensor<1x4x5x5xf32>, tensor<8x4x3x3xf32>, none) -> tensor<1x4x7x7xf32>
  return
}

// -----

func.func @conv_transpose_output_padding(%x: tensor<1x8x5x5xf32>, %w: tensor<8x4x3x3xf32>) {
  %none = kiln.none
  // expected-error @+2 {{output_padding[1] is 2 but must be smaller than the stride 2 or the dilation 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.conv_transpose %x, %w, %none {output_padding = array<i64: 1, 2>, strides = array<i64: 2, 2>} : (tensor<1x8x5x5xf32>, tensor<8x4x3x3xf32>, none) -> tensor<1x4x12x13xf32>
  return
}

// -----

func.func @conv_transpose_output_shape(%x: tensor<1x8x5x5xf32>, %w: tensor<8x4x3x3xf32>) {
  %none = kiln.none
  // expected-error @+2 {{output_shape has 3 entries but the input has 2 spatial dims}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.conv_transpose %x, %w, %none {output_shape = array<i64: 1, 10, 10>} : (tensor<1x8x5x5xf32>, tensor<8x4x3x3xf32>, none) -> tensor<1x4x10x10xf32>
  return
}

// -----

func.func @max_pool_rank(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{X must have rank >= 3 (N, C and a spatial dim), got 'tensor<4x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y, %i = kiln.max_pool %x {kernel_shape = array<i64: 2>} : (tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xi64>)
  return
}

// -----

func.func @max_pool_storage_order(%x: tensor<1x2x8x8xf32>) {
  // expected-error @+2 {{storage_order is 2 but must be 0 (row-major) or 1 (column-major)}}
  // expected-error @+1 {{failed to infer returned types}}
  %y, %i = kiln.max_pool %x {kernel_shape = array<i64: 2, 2>, storage_order = 2 : i64} : (tensor<1x2x8x8xf32>) -> (tensor<1x2x7x7xf32>, tensor<1x2x7x7xi64>)
  return
}

// -----

func.func @max_pool_kernel_required(%x: tensor<1x2x8x8xf32>) {
  // expected-error @+1 {{requires attribute 'kernel_shape'}}
  %y, %i = kiln.max_pool %x : (tensor<1x2x8x8xf32>) -> (tensor<1x2x7x7xf32>, tensor<1x2x7x7xi64>)
  return
}

// -----

func.func @average_pool_kernel_entries(%x: tensor<1x2x8x8xf32>) {
  // expected-error @+2 {{kernel_shape has 1 entries but the input has 2 spatial dims}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.average_pool %x {kernel_shape = array<i64: 2>} : (tensor<1x2x8x8xf32>) -> tensor<1x2x7x7xf32>
  return
}

// -----

func.func @average_pool_ceil_mode(%x: tensor<1x2x8x8xf32>) {
  // expected-error @+2 {{ceil_mode is 2 but must be 0 or 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.average_pool %x {ceil_mode = 2 : i64, kernel_shape = array<i64: 2, 2>} : (tensor<1x2x8x8xf32>) -> tensor<1x2x7x7xf32>
  return
}

// -----

func.func @lp_pool_p(%x: tensor<1x2x8xf32>) {
  // expected-error @+2 {{p is 0 but must be at least 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.lp_pool %x {kernel_shape = array<i64: 2>, p = 0 : i64} : (tensor<1x2x8xf32>) -> tensor<1x2x7xf32>
  return
}

// -----

func.func @global_pool_rank(%x: tensor<2x8xf32>) {
  // expected-error @+2 {{X must have rank >= 3 (N, C and a spatial dim), got 'tensor<2x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.global_average_pool %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @batch_norm_training(%x: tensor<2x4x8xf32>, %c: tensor<4xf32>) {
  // expected-error @+1 {{training_mode 1 is not supported: Kiln implements inference mode only}}
  %y = kiln.batch_normalization %x, %c, %c, %c, %c {training_mode = 1 : i64} : (tensor<2x4x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @batch_norm_channels(%x: tensor<2x4x8xf32>, %c: tensor<4xf32>, %v: tensor<5xf32>) {
  // expected-error @+1 {{input_var has 5 elements but 4 channels are needed}}
  %y = kiln.batch_normalization %x, %c, %c, %c, %v : (tensor<2x4x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<5xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @batch_norm_element_type(%x: tensor<2x4x8xf32>, %c: tensor<4xf32>, %h: tensor<4xf16>) {
  // expected-error @+1 {{the input has element type 'f32' but scale has 'f16'}}
  %y = kiln.batch_normalization %x, %h, %c, %c, %c : (tensor<2x4x8xf32>, tensor<4xf16>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @instance_norm_rank(%x: tensor<2x4xf32>, %c: tensor<4xf32>) {
  // expected-error @+1 {{input must have rank >= 3 (N, C, ...), got 'tensor<2x4xf32>'}}
  %y = kiln.instance_normalization %x, %c, %c : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @group_norm_groups(%x: tensor<2x6x8xf32>, %c: tensor<6xf32>) {
  // expected-error @+1 {{the 6 channels are not divisible by num_groups 4}}
  %y = kiln.group_normalization %x, %c, %c {num_groups = 4 : i64} : (tensor<2x6x8xf32>, tensor<6xf32>, tensor<6xf32>) -> tensor<2x6x8xf32>
  return
}

// -----

func.func @group_norm_opset18_scale(%x: tensor<2x6x8xf32>, %g: tensor<3xf32>) {
  // expected-error @+1 {{scale has 3 elements but 6 channels are needed}}
  %y = kiln.group_normalization %x, %g, %g {num_groups = 3 : i64} : (tensor<2x6x8xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x6x8xf32>
  return
}

// -----

func.func @layer_norm_axis(%x: tensor<2x4x8xf32>, %s: tensor<8xf32>) {
  %none = kiln.none
  // expected-error @+2 {{axis 3 is out of range for rank 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %y, %m, %i = kiln.layer_normalization %x, %s, %none {axis = 3 : i64} : (tensor<2x4x8xf32>, tensor<8xf32>, none) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>)
  return
}

// -----

func.func @layer_norm_stash_type(%x: tensor<2x4x8xf32>, %s: tensor<8xf32>) {
  %none = kiln.none
  // expected-error @+2 {{stash_type 7 is not a float dtype code (1, 10, 11 or 16)}}
  // expected-error @+1 {{failed to infer returned types}}
  %y, %m, %i = kiln.layer_normalization %x, %s, %none {stash_type = 7 : i64} : (tensor<2x4x8xf32>, tensor<8xf32>, none) -> (tensor<2x4x8xf32>, tensor<2x4x1xf32>, tensor<2x4x1xf32>)
  return
}

// -----

func.func @layer_norm_scale(%x: tensor<2x4x8xf32>, %s: tensor<4xf32>) {
  %none = kiln.none
  // expected-error @+2 {{operands are not broadcastable}}
  // expected-error @+1 {{failed to infer returned types}}
  %y, %m, %i = kiln.layer_normalization %x, %s, %none : (tensor<2x4x8xf32>, tensor<4xf32>, none) -> (tensor<2x4x8xf32>, tensor<2x4x1xf32>, tensor<2x4x1xf32>)
  return
}

// -----

func.func @layer_norm_scale_wider(%x: tensor<2x4x8xf32>, %s: tensor<4x8xf32>) {
  %none = kiln.none
  // expected-error @+2 {{Scale of type 'tensor<4x8xf32>' does not broadcast to the normalized dims of 'tensor<2x4x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y, %m, %i = kiln.layer_normalization %x, %s, %none : (tensor<2x4x8xf32>, tensor<4x8xf32>, none) -> (tensor<2x4x8xf32>, tensor<2x4x1xf32>, tensor<2x4x1xf32>)
  return
}

// -----

func.func @lp_norm_p(%x: tensor<2x4xf32>) {
  // expected-error @+1 {{p is 3 but must be 1 or 2}}
  %y = kiln.lp_normalization %x {p = 3 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @lrn_size(%x: tensor<1x4x8x8xf32>) {
  // expected-error @+1 {{size is 0 but must be >= 1}}
  %y = kiln.lrn %x {size = 0 : i64} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  return
}

// -----

func.func @mvn_axes(%x: tensor<1x4x8x8xf32>) {
  // expected-error @+1 {{axes lists axis 3 twice}}
  %y = kiln.mean_variance_normalization %x {axes = array<i64: 3, -1>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  return
}

// -----

func.func @softmax_axis(%x: tensor<2x4xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %y = kiln.softmax %x {axis = 2 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @log_softmax_axis(%x: tensor<2x4xf32>) {
  // expected-error @+1 {{axis -3 is out of range for rank 2}}
  %y = kiln.log_softmax %x {axis = -3 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @softmax_contradicted(%x: tensor<2x4xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<2x4xf32>' are incompatible with return type(s) of operation 'tensor<2x4xf16>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.hardmax %x : (tensor<2x4xf32>) -> tensor<2x4xf16>
  return
}

// -----

func.func @dropout_training(%x: tensor<2x4xf32>) {
  %none = kiln.none
  %true = kiln.constant dense<true> : tensor<i1>
  // expected-error @+1 {{training_mode is true, which is not supported: Kiln implements inference mode only}}
  %y, %m = kiln.dropout %x, %none, %true : (tensor<2x4xf32>, none, tensor<i1>) -> (tensor<2x4xf32>, tensor<2x4xi1>)
  return
}

// -----

func.func @dropout_ratio(%x: tensor<2x4xf32>) {
  %none = kiln.none
  %ratio = kiln.constant dense<1.5> : tensor<f32>
  // expected-error @+1 {{ratio is 1.500000e+00 but must be in [0, 1)}}
  %y, %m = kiln.dropout %x, %ratio, %none : (tensor<2x4xf32>, tensor<f32>, none) -> (tensor<2x4xf32>, tensor<2x4xi1>)
  return
}

// -----

func.func @dropout_mask(%x: tensor<2x4xf32>) {
  %none = kiln.none
  // expected-error @+2 {{inferred type(s) 'tensor<2x4xf32>', 'tensor<2x4xi1>' are incompatible with return type(s) of operation 'tensor<2x4xf32>', 'tensor<4x2xi1>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y, %m = kiln.dropout %x, %none, %none : (tensor<2x4xf32>, none, none) -> (tensor<2x4xf32>, tensor<4x2xi1>)
  return
}

// -----

func.func @pad_mode(%x: tensor<2x4xf32>, %pads: tensor<4xi64>) {
  %none = kiln.none
  // expected-error @+2 {{mode 'symmetric' is not one of constant, reflect, edge, wrap}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.pad %x, %pads, %none, %none {mode = "symmetric"} : (tensor<2x4xf32>, tensor<4xi64>, none, none) -> tensor<?x?xf32>
  return
}

// -----

func.func @pad_count(%x: tensor<2x4xf32>, %pads: tensor<6xi64>) {
  %none = kiln.none
  // expected-error @+2 {{pads has 6 entries but 4 are needed (a begin and an end for each of 2 axes)}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.pad %x, %pads, %none, %none : (tensor<2x4xf32>, tensor<6xi64>, none, none) -> tensor<?x?xf32>
  return
}

// -----

func.func @pad_negative_size(%x: tensor<2x4xf32>) {
  %none = kiln.none
  %pads = kiln.constant dense<[0, -3, 0, -2]> : tensor<4xi64>
  // expected-error @+2 {{pads -3 and -2 make axis 1 of size 4 negative (-1)}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.pad %x, %pads, %none, %none : (tensor<2x4xf32>, tensor<4xi64>, none, none) -> tensor<2x?xf32>
  return
}

// -----

func.func @pad_axes_range(%x: tensor<2x4xf32>, %pads: tensor<2xi64>) {
  %none = kiln.none
  %axes = kiln.constant dense<[2]> : tensor<1xi64>
  // expected-error @+2 {{axes entry 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.pad %x, %pads, %none, %axes : (tensor<2x4xf32>, tensor<2xi64>, none, tensor<1xi64>) -> tensor<?x?xf32>
  return
}

// -----

func.func @pad_constant_value(%x: tensor<2x4xf32>, %pads: tensor<4xi64>, %v: tensor<f16>) {
  %none = kiln.none
  // expected-error @+2 {{data has element type 'f32' but constant_value has 'f16'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.pad %x, %pads, %v, %none : (tensor<2x4xf32>, tensor<4xi64>, tensor<f16>, none) -> tensor<?x?xf32>
  return
}

// -----

func.func @resize_both(%x: tensor<1x3x8x8xf32>, %scales: tensor<4xf32>, %sizes: tensor<4xi64>) {
  %none = kiln.none
  // expected-error @+2 {{exactly one of scales and sizes must be given, got both}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.resize %x, %none, %scales, %sizes : (tensor<1x3x8x8xf32>, none, tensor<4xf32>, tensor<4xi64>) -> tensor<?x?x?x?xf32>
  return
}

// -----

func.func @resize_neither(%x: tensor<1x3x8x8xf32>) {
  %none = kiln.none
  // expected-error @+2 {{exactly one of scales and sizes must be given, got neither}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.resize %x, %none, %none, %none : (tensor<1x3x8x8xf32>, none, none, none) -> tensor<?x?x?x?xf32>
  return
}

// -----

func.func @resize_scales_count(%x: tensor<1x3x8x8xf32>, %scales: tensor<2xf32>) {
  %none = kiln.none
  // expected-error @+2 {{scales has 2 entries but 4 are needed (one per axis of X)}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.resize %x, %none, %scales, %none : (tensor<1x3x8x8xf32>, none, tensor<2xf32>, none) -> tensor<?x?x?x?xf32>
  return
}

// -----

func.func @resize_nonpositive_scale(%x: tensor<1x3x8x8xf32>) {
  %none = kiln.none
  %scales = kiln.constant dense<[1.0, 1.0, 0.0, 2.0]> : tensor<4xf32>
  // expected-error @+2 {{scales[2] is 0.000000e+00 but must be positive}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.resize %x, %none, %scales, %none : (tensor<1x3x8x8xf32>, none, tensor<4xf32>, none) -> tensor<?x?x?x?xf32>
  return
}

// -----

func.func @resize_mode(%x: tensor<1x3x8x8xf32>, %sizes: tensor<4xi64>) {
  %none = kiln.none
  // expected-error @+1 {{mode 'bilinear' is not one of nearest, linear, cubic}}
  %y = kiln.resize %x, %none, %none, %sizes {mode = "bilinear"} : (tensor<1x3x8x8xf32>, none, none, tensor<4xi64>) -> tensor<?x?x?x?xf32>
  return
}

// -----

func.func @resize_coordinate_mode(%x: tensor<1x3x8x8xf32>, %sizes: tensor<4xi64>) {
  %none = kiln.none
  // expected-error @+1 {{coordinate_transformation_mode 'corners' is not one of half_pixel, half_pixel_symmetric, pytorch_half_pixel, align_corners, asymmetric, tf_crop_and_resize}}
  %y = kiln.resize %x, %none, %none, %sizes {coordinate_transformation_mode = "corners"} : (tensor<1x3x8x8xf32>, none, none, tensor<4xi64>) -> tensor<?x?x?x?xf32>
  return
}

// -----

func.func @resize_nonpositive_size(%x: tensor<1x3x8x8xf32>) {
  %none = kiln.none
  %sizes = kiln.constant dense<[1, 3, 0, 8]> : tensor<4xi64>
  // expected-error @+2 {{sizes[2] is 0 but must be positive}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.resize %x, %none, %none, %sizes : (tensor<1x3x8x8xf32>, none, none, tensor<4xi64>) -> tensor<?x?x?x?xf32>
  return
}

// -----

func.func @resize_sizes_axes(%x: tensor<1x3x8x8xf32>, %sizes: tensor<4xi64>) {
  %none = kiln.none
  // expected-error @+2 {{sizes has 4 entries but 2 are needed (one per entry of axes)}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.resize %x, %none, %none, %sizes {axes = array<i64: 2, 3>} : (tensor<1x3x8x8xf32>, none, none, tensor<4xi64>) -> tensor<?x?x?x?xf32>
  return
}
