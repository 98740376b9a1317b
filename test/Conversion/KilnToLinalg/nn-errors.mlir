// RUN: kiln-opt %s --convert-kiln-to-linalg --split-input-file -verify-diagnostics

func.func @gemm_int_alpha(%a: tensor<3x4xi32>, %b: tensor<4x5xi32>) -> tensor<3x5xi32> {
  %none = kiln.none
  // expected-error @+2 {{cannot lower kiln.gemm to the CPU: no lowering for this op or these operand types}}
  // expected-error @+1 {{cannot lower kiln.gemm to the CPU: integer Gemm with alpha or beta other than 1}}
  %0 = kiln.gemm %a, %b, %none {alpha = 2.0 : f32} : (tensor<3x4xi32>, tensor<4x5xi32>, none) -> tensor<3x5xi32>
  return %0 : tensor<3x5xi32>
}

// -----

func.func @dropout_training(%x: tensor<4xf32>, %t: tensor<i1>) -> tensor<4xf32> {
  %none = kiln.none
  // expected-error @+2 {{cannot lower kiln.dropout to the CPU: no lowering for this op or these operand types}}
  // expected-error @+1 {{cannot lower kiln.dropout to the CPU: training_mode is not a constant (inference only)}}
  %y, %m = kiln.dropout %x, %none, %t : (tensor<4xf32>, none, tensor<i1>) -> (tensor<4xf32>, tensor<4xi1>)
  return %y : tensor<4xf32>
}

// -----

func.func @pad_runtime_axes(%x: tensor<3x4xf32>, %a: tensor<1xi64>) -> tensor<3x6xf32> {
  %none = kiln.none
  %p = kiln.constant dense<[1, 1]> : tensor<2xi64>
  // expected-error @+2 {{cannot lower kiln.pad to the CPU: no lowering for this op or these operand types}}
  // expected-error @+1 {{cannot lower kiln.pad to the CPU: axes is not a constant}}
  %0 = kiln.pad %x, %p, %none, %a {mode = "constant"} : (tensor<3x4xf32>, tensor<2xi64>, none, tensor<1xi64>) -> tensor<3x6xf32>
  return %0 : tensor<3x6xf32>
}

// -----

func.func @resize_antialias(%x: tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32> {
  %none = kiln.none
  %c = kiln.constant dense<[1.0, 1.0, 2.0, 2.0]> : tensor<4xf32>
  // expected-error @+2 {{cannot lower kiln.resize to the CPU: no lowering for this op or these operand types}}
  // expected-error @+1 {{cannot lower kiln.resize to the CPU: antialias = 1}}
  %0 = kiln.resize %x, %none, %c, %none {mode = "linear", antialias = 1 : i64} : (tensor<1x1x2x2xf32>, none, tensor<4xf32>, none) -> tensor<1x1x4x4xf32>
  return %0 : tensor<1x1x4x4xf32>
}

// -----

func.func @max_pool_int_indices(%x: tensor<1x1x4x4xi8>) -> tensor<1x1x2x2xi64> {
  // expected-error @+2 {{cannot lower kiln.max_pool to the CPU: no lowering for this op or these operand types}}
  // expected-error @+1 {{cannot lower kiln.max_pool to the CPU: MaxPool Indices of an integer tensor}}
  %y, %i = kiln.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x1x4x4xi8>) -> (tensor<1x1x2x2xi8>, tensor<1x1x2x2xi64>)
  return %i : tensor<1x1x2x2xi64>
}
