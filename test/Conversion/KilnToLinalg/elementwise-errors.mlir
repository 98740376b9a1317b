// RUN: kiln-opt %s --convert-kiln-to-linalg --split-input-file -verify-diagnostics

// ONNX allows Erf on integers; Kiln (as ONNX Runtime) computes it on floats
// only.
func.func @erf_int(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+2 {{cannot lower kiln.erf to the CPU: element type integer is not supported by this op}}
  // expected-error @+1 {{cannot lower kiln.erf to the CPU: no lowering for this op or these operand types}}
  %0 = kiln.erf %a : tensor<4xi32>
  return %0 : tensor<4xi32>
}
