// RUN: kiln-opt %s -split-input-file -verify-diagnostics

func.func @constant_result_type_mismatch() -> tensor<3xi64> {
  // expected-error @+2 {{'kiln.constant' op inferred type(s) 'tensor<2xi64>' are incompatible with return type(s) of operation 'tensor<3xi64>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = "kiln.constant"() {value = dense<[1, 2]> : tensor<2xi64>} : () -> tensor<3xi64>
  return %0 : tensor<3xi64>
}

// -----

func.func @unranked_result() {
  // expected-error @+1 {{must be ranked tensor}}
  %0 = "kiln.constant"() {value = dense<[1, 2]> : tensor<2xi64>} : () -> tensor<*xi64>
  return
}
