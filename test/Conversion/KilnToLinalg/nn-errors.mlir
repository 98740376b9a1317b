// RUN: kiln-opt %s --convert-kiln-to-linalg --split-input-file -verify-diagnostics

func.func @gemm_int_alpha(%a: tensor<3x4xi32>, %b: tensor<4x5xi32>) -> tensor<3x5xi32> {
  %none = kiln.none
  // expected-error @+2 {{failed to legalize operation 'kiln.gemm'}}
  // expected-error @+1 {{cannot lower kiln.gemm to the CPU: integer Gemm with alpha or beta other than 1}}
  %0 = kiln.gemm %a, %b, %none {alpha = 2.0 : f32} : (tensor<3x4xi32>, tensor<4x5xi32>, none) -> tensor<3x5xi32>
  return %0 : tensor<3x5xi32>
}
