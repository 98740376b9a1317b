// RUN: kiln-opt %s -split-input-file -verify-diagnostics
//
// Each case declares a result type that contradicts what inference must
// compute, so that the error pins the inferred type (a declared type may
// otherwise refine a `?`, which would hide a weaker inference).

// The ONNX LayerNormalization function computes the number of reduced axes as
// Neg(axis): ConstantOfShape(Neg([-1])) is a 1-element vector.
func.func @neg_of_axis() -> tensor<2xi64> {
  %axis = kiln.constant dense<-1> : tensor<1xi64>
  %n = kiln.neg %axis : tensor<1xi64>
  // expected-error @+2 {{inferred type(s) 'tensor<1xi64>' are incompatible with return type(s) of operation 'tensor<2xi64>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %ones = kiln.constant_of_shape %n {value = dense<1> : tensor<1xi64>} : (tensor<1xi64>) -> tensor<2xi64>
  return %ones : tensor<2xi64>
}

// -----

// Abs of a known vector is known: Reshape to [|-2|, |-6|].
func.func @abs_of_shape(%x: tensor<12xf32>) -> tensor<6x2xf32> {
  %s = kiln.constant dense<[-2, -6]> : tensor<2xi64>
  %a = kiln.abs %s : tensor<2xi64>
  // expected-error @+2 {{inferred type(s) 'tensor<2x6xf32>' are incompatible with return type(s) of operation 'tensor<6x2xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.reshape %x, %a : (tensor<12xf32>, tensor<2xi64>) -> tensor<6x2xf32>
  return %y : tensor<6x2xf32>
}
