// RUN: kiln-opt %s -split-input-file -kiln-fuse-activations | FileCheck %s

// GELU (erf and tanh forms), SiLU and SwiGLU written out as PyTorch exports
// them, and forms that must be left alone.

// torch.onnx's F.gelu: Div(x, sqrt 2) -> Erf -> Add 1 -> Mul x -> Mul 0.5.
// CHECK-LABEL: func.func @gelu_erf_torch
// CHECK-SAME: (%[[X:.+]]: tensor<2x16x64xf32>)
// CHECK-NEXT: %[[Y:.+]] = kiln.gelu %[[X]] : tensor<2x16x64xf32>
// CHECK-NEXT: return %[[Y]]
func.func @gelu_erf_torch(%x: tensor<2x16x64xf32>) -> tensor<2x16x64xf32> {
  %sqrt2 = kiln.constant dense<1.41421354> : tensor<f32>
  %one = kiln.constant dense<1.000000e+00> : tensor<f32>
  %half = kiln.constant dense<5.000000e-01> : tensor<f32>
  %0 = kiln.div %x, %sqrt2 : (tensor<2x16x64xf32>, tensor<f32>) -> tensor<2x16x64xf32>
  %1 = kiln.erf %0 : tensor<2x16x64xf32>
  %2 = kiln.add %1, %one : (tensor<2x16x64xf32>, tensor<f32>) -> tensor<2x16x64xf32>
  %3 = kiln.mul %x, %2 : (tensor<2x16x64xf32>, tensor<2x16x64xf32>) -> tensor<2x16x64xf32>
  %4 = kiln.mul %3, %half : (tensor<2x16x64xf32>, tensor<f32>) -> tensor<2x16x64xf32>
  return %4 : tensor<2x16x64xf32>
}

// -----

// x * 0.5 first, x * (1/sqrt 2) instead of the division, 1-element
// constants on the left.
// CHECK-LABEL: func.func @gelu_erf_reordered
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>)
// CHECK-NEXT: %[[Y:.+]] = kiln.gelu %[[X]] : tensor<4x8xf32>
// CHECK-NEXT: return %[[Y]]
func.func @gelu_erf_reordered(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %rsqrt2 = kiln.constant dense<0.707106769> : tensor<1xf32>
  %one = kiln.constant dense<1.000000e+00> : tensor<1xf32>
  %half = kiln.constant dense<5.000000e-01> : tensor<1xf32>
  %h = kiln.mul %half, %x : (tensor<1xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %0 = kiln.mul %rsqrt2, %x : (tensor<1xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = kiln.erf %0 : tensor<4x8xf32>
  %2 = kiln.add %one, %1 : (tensor<1xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = kiln.mul %h, %2 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %3 : tensor<4x8xf32>
}

// -----

// Half precision: sqrt 2 rounded to f16 (1.4140625) is within the f16
// tolerance.
// CHECK-LABEL: func.func @gelu_erf_f16
// CHECK: kiln.gelu %{{.+}} : tensor<4x8xf16>
// CHECK-NOT: kiln.erf
func.func @gelu_erf_f16(%x: tensor<4x8xf16>) -> tensor<4x8xf16> {
  %sqrt2 = kiln.constant dense<1.414060e+00> : tensor<f16>
  %one = kiln.constant dense<1.000000e+00> : tensor<f16>
  %half = kiln.constant dense<5.000000e-01> : tensor<f16>
  %0 = kiln.div %x, %sqrt2 : (tensor<4x8xf16>, tensor<f16>) -> tensor<4x8xf16>
  %1 = kiln.erf %0 : tensor<4x8xf16>
  %2 = kiln.add %1, %one : (tensor<4x8xf16>, tensor<f16>) -> tensor<4x8xf16>
  %3 = kiln.mul %x, %2 : (tensor<4x8xf16>, tensor<4x8xf16>) -> tensor<4x8xf16>
  %4 = kiln.mul %3, %half : (tensor<4x8xf16>, tensor<f16>) -> tensor<4x8xf16>
  return %4 : tensor<4x8xf16>
}

// -----

// torch.onnx's F.gelu(approximate="tanh"): x * (x * x) for the cube,
// constants on the left.
// CHECK-LABEL: func.func @gelu_tanh_torch
// CHECK-SAME: (%[[X:.+]]: tensor<2x32xf32>)
// CHECK-NEXT: %[[Y:.+]] = kiln.gelu %[[X]] {approximate = "tanh"} : tensor<2x32xf32>
// CHECK-NEXT: return %[[Y]]
func.func @gelu_tanh_torch(%x: tensor<2x32xf32>) -> tensor<2x32xf32> {
  %beta = kiln.constant dense<0.797884583> : tensor<f32>
  %kappa = kiln.constant dense<4.471500e-02> : tensor<f32>
  %one = kiln.constant dense<1.000000e+00> : tensor<f32>
  %half = kiln.constant dense<5.000000e-01> : tensor<f32>
  %sq = kiln.mul %x, %x : (tensor<2x32xf32>, tensor<2x32xf32>) -> tensor<2x32xf32>
  %cube = kiln.mul %x, %sq : (tensor<2x32xf32>, tensor<2x32xf32>) -> tensor<2x32xf32>
  %0 = kiln.mul %kappa, %cube : (tensor<f32>, tensor<2x32xf32>) -> tensor<2x32xf32>
  %1 = kiln.add %x, %0 : (tensor<2x32xf32>, tensor<2x32xf32>) -> tensor<2x32xf32>
  %2 = kiln.mul %beta, %1 : (tensor<f32>, tensor<2x32xf32>) -> tensor<2x32xf32>
  %3 = kiln.tanh %2 : tensor<2x32xf32>
  %4 = kiln.add %one, %3 : (tensor<f32>, tensor<2x32xf32>) -> tensor<2x32xf32>
  %5 = kiln.mul %x, %4 : (tensor<2x32xf32>, tensor<2x32xf32>) -> tensor<2x32xf32>
  %6 = kiln.mul %half, %5 : (tensor<f32>, tensor<2x32xf32>) -> tensor<2x32xf32>
  return %6 : tensor<2x32xf32>
}

// -----

// Hugging Face's NewGELUActivation: 0.5 * x first, Pow(x, 3.0), constants on
// the right.
// CHECK-LABEL: func.func @gelu_tanh_hf
// CHECK-SAME: (%[[X:.+]]: tensor<2x32xf32>)
// CHECK-NEXT: %[[Y:.+]] = kiln.gelu %[[X]] {approximate = "tanh"} : tensor<2x32xf32>
// CHECK-NEXT: return %[[Y]]
func.func @gelu_tanh_hf(%x: tensor<2x32xf32>) -> tensor<2x32xf32> {
  %beta = kiln.constant dense<0.797884583> : tensor<f32>
  %kappa = kiln.constant dense<4.471500e-02> : tensor<f32>
  %three = kiln.constant dense<3.000000e+00> : tensor<f32>
  %one = kiln.constant dense<1.000000e+00> : tensor<f32>
  %half = kiln.constant dense<5.000000e-01> : tensor<f32>
  %h = kiln.mul %x, %half : (tensor<2x32xf32>, tensor<f32>) -> tensor<2x32xf32>
  %cube = kiln.pow %x, %three : (tensor<2x32xf32>, tensor<f32>) -> tensor<2x32xf32>
  %0 = kiln.mul %cube, %kappa : (tensor<2x32xf32>, tensor<f32>) -> tensor<2x32xf32>
  %1 = kiln.add %x, %0 : (tensor<2x32xf32>, tensor<2x32xf32>) -> tensor<2x32xf32>
  %2 = kiln.mul %1, %beta : (tensor<2x32xf32>, tensor<f32>) -> tensor<2x32xf32>
  %3 = kiln.tanh %2 : tensor<2x32xf32>
  %4 = kiln.add %3, %one : (tensor<2x32xf32>, tensor<f32>) -> tensor<2x32xf32>
  %5 = kiln.mul %h, %4 : (tensor<2x32xf32>, tensor<2x32xf32>) -> tensor<2x32xf32>
  return %5 : tensor<2x32xf32>
}

// -----

// bfloat16: the constants are rounded to bf16 (0.796875, 0.0446777).
// CHECK-LABEL: func.func @gelu_tanh_bf16
// CHECK-SAME: (%[[X:.+]]: tensor<2x32xbf16>)
// CHECK-NEXT: %[[Y:.+]] = kiln.gelu %[[X]] {approximate = "tanh"} : tensor<2x32xbf16>
func.func @gelu_tanh_bf16(%x: tensor<2x32xbf16>) -> tensor<2x32xbf16> {
  %beta = kiln.constant dense<0.797884583> : tensor<bf16>
  %kappa = kiln.constant dense<4.471500e-02> : tensor<bf16>
  %three = kiln.constant dense<3.000000e+00> : tensor<bf16>
  %one = kiln.constant dense<1.000000e+00> : tensor<bf16>
  %half = kiln.constant dense<5.000000e-01> : tensor<bf16>
  %h = kiln.mul %x, %half : (tensor<2x32xbf16>, tensor<bf16>) -> tensor<2x32xbf16>
  %cube = kiln.pow %x, %three : (tensor<2x32xbf16>, tensor<bf16>) -> tensor<2x32xbf16>
  %0 = kiln.mul %cube, %kappa : (tensor<2x32xbf16>, tensor<bf16>) -> tensor<2x32xbf16>
  %1 = kiln.add %x, %0 : (tensor<2x32xbf16>, tensor<2x32xbf16>) -> tensor<2x32xbf16>
  %2 = kiln.mul %1, %beta : (tensor<2x32xbf16>, tensor<bf16>) -> tensor<2x32xbf16>
  %3 = kiln.tanh %2 : tensor<2x32xbf16>
  %4 = kiln.add %3, %one : (tensor<2x32xbf16>, tensor<bf16>) -> tensor<2x32xbf16>
  %5 = kiln.mul %h, %4 : (tensor<2x32xbf16>, tensor<2x32xbf16>) -> tensor<2x32xbf16>
  return %5 : tensor<2x32xbf16>
}

// -----

// Negative: 0.6 is not 0.5.
// CHECK-LABEL: func.func @gelu_wrong_half
// CHECK-NOT: kiln.gelu
// CHECK: kiln.erf
func.func @gelu_wrong_half(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %sqrt2 = kiln.constant dense<1.41421354> : tensor<f32>
  %one = kiln.constant dense<1.000000e+00> : tensor<f32>
  %half = kiln.constant dense<6.000000e-01> : tensor<f32>
  %0 = kiln.div %x, %sqrt2 : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %1 = kiln.erf %0 : tensor<4x8xf32>
  %2 = kiln.add %1, %one : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %3 = kiln.mul %x, %2 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %4 = kiln.mul %3, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  return %4 : tensor<4x8xf32>
}

// -----

// Negative: 0.0447 is 0.044715 to 3 significant digits only, too far for
// f32.
// CHECK-LABEL: func.func @gelu_tanh_wrong_kappa
// CHECK-NOT: kiln.gelu
// CHECK: kiln.tanh
func.func @gelu_tanh_wrong_kappa(%x: tensor<2x32xf32>) -> tensor<2x32xf32> {
  %beta = kiln.constant dense<0.797884583> : tensor<f32>
  %kappa = kiln.constant dense<4.470000e-02> : tensor<f32>
  %three = kiln.constant dense<3.000000e+00> : tensor<f32>
  %one = kiln.constant dense<1.000000e+00> : tensor<f32>
  %half = kiln.constant dense<5.000000e-01> : tensor<f32>
  %h = kiln.mul %x, %half : (tensor<2x32xf32>, tensor<f32>) -> tensor<2x32xf32>
  %cube = kiln.pow %x, %three : (tensor<2x32xf32>, tensor<f32>) -> tensor<2x32xf32>
  %0 = kiln.mul %cube, %kappa : (tensor<2x32xf32>, tensor<f32>) -> tensor<2x32xf32>
  %1 = kiln.add %x, %0 : (tensor<2x32xf32>, tensor<2x32xf32>) -> tensor<2x32xf32>
  %2 = kiln.mul %1, %beta : (tensor<2x32xf32>, tensor<f32>) -> tensor<2x32xf32>
  %3 = kiln.tanh %2 : tensor<2x32xf32>
  %4 = kiln.add %3, %one : (tensor<2x32xf32>, tensor<f32>) -> tensor<2x32xf32>
  %5 = kiln.mul %h, %4 : (tensor<2x32xf32>, tensor<2x32xf32>) -> tensor<2x32xf32>
  return %5 : tensor<2x32xf32>
}

// -----

// Negative: the erf is also returned, so it cannot be folded away.
// CHECK-LABEL: func.func @gelu_extra_user
// CHECK-NOT: kiln.gelu
// CHECK: kiln.erf
func.func @gelu_extra_user(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %sqrt2 = kiln.constant dense<1.41421354> : tensor<f32>
  %one = kiln.constant dense<1.000000e+00> : tensor<f32>
  %half = kiln.constant dense<5.000000e-01> : tensor<f32>
  %0 = kiln.div %x, %sqrt2 : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %1 = kiln.erf %0 : tensor<4x8xf32>
  %2 = kiln.add %1, %one : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %3 = kiln.mul %x, %2 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %4 = kiln.mul %3, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  return %4, %1 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Negative: the 0.5 broadcasts the result to a larger shape.
// CHECK-LABEL: func.func @gelu_broadcasting_constant
// CHECK-NOT: kiln.gelu
func.func @gelu_broadcasting_constant(%x: tensor<8xf32>) -> tensor<2x8xf32> {
  %sqrt2 = kiln.constant dense<1.41421354> : tensor<f32>
  %one = kiln.constant dense<1.000000e+00> : tensor<f32>
  %half = kiln.constant dense<5.000000e-01> : tensor<2x1xf32>
  %0 = kiln.div %x, %sqrt2 : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %1 = kiln.erf %0 : tensor<8xf32>
  %2 = kiln.add %1, %one : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %3 = kiln.mul %x, %2 : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %4 = kiln.mul %3, %half : (tensor<8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  return %4 : tensor<2x8xf32>
}

// -----

// CHECK-LABEL: func.func @silu
// CHECK-SAME: (%[[X:.+]]: tensor<2x?xf32>, %[[Z:.+]]: tensor<3xf32>)
// CHECK-DAG: %[[A:.+]] = kiln.silu %[[X]] : tensor<2x?xf32>
// CHECK-DAG: %[[B:.+]] = kiln.silu %[[Z]] : tensor<3xf32>
// CHECK: return %[[A]], %[[B]]
func.func @silu(%x: tensor<2x?xf32>, %z: tensor<3xf32>) -> (tensor<2x?xf32>, tensor<3xf32>) {
  %0 = kiln.sigmoid %x : tensor<2x?xf32>
  %1 = kiln.mul %x, %0 : (tensor<2x?xf32>, tensor<2x?xf32>) -> tensor<2x?xf32>
  %2 = kiln.sigmoid %z : tensor<3xf32>
  %3 = kiln.mul %2, %z : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %1, %3 : tensor<2x?xf32>, tensor<3xf32>
}

// -----

// Negative: the sigmoid has another user; x * sigmoid(y) is not SiLU.
// CHECK-LABEL: func.func @silu_negative
// CHECK-NOT: kiln.silu
// CHECK: return
func.func @silu_negative(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %0 = kiln.sigmoid %x : tensor<4xf32>
  %1 = kiln.mul %x, %0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %2 = kiln.sigmoid %y : tensor<4xf32>
  %3 = kiln.mul %x, %2 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %1, %0, %3 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// The Llama MLP as exported: Sigmoid(gate), Mul(gate, ·), Mul(·, up).
// CHECK-LABEL: func.func @swiglu
// CHECK-SAME: (%[[G:.+]]: tensor<2x16x512xf32>, %[[U:.+]]: tensor<2x16x512xf32>)
// CHECK-NEXT: %[[Y:.+]] = kiln.swiglu %[[G]], %[[U]] : tensor<2x16x512xf32>
// CHECK-NEXT: return %[[Y]]
func.func @swiglu(%g: tensor<2x16x512xf32>, %u: tensor<2x16x512xf32>) -> tensor<2x16x512xf32> {
  %0 = kiln.sigmoid %g : tensor<2x16x512xf32>
  %1 = kiln.mul %g, %0 : (tensor<2x16x512xf32>, tensor<2x16x512xf32>) -> tensor<2x16x512xf32>
  %2 = kiln.mul %1, %u : (tensor<2x16x512xf32>, tensor<2x16x512xf32>) -> tensor<2x16x512xf32>
  return %2 : tensor<2x16x512xf32>
}

// -----

// up first.
// CHECK-LABEL: func.func @swiglu_up_first
// CHECK-SAME: (%[[G:.+]]: tensor<8xf32>, %[[U:.+]]: tensor<8xf32>)
// CHECK-NEXT: %[[Y:.+]] = kiln.swiglu %[[G]], %[[U]] : tensor<8xf32>
func.func @swiglu_up_first(%g: tensor<8xf32>, %u: tensor<8xf32>) -> tensor<8xf32> {
  %0 = kiln.sigmoid %g : tensor<8xf32>
  %1 = kiln.mul %0, %g : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %2 = kiln.mul %u, %1 : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %2 : tensor<8xf32>
}

// -----

// Negative for SwiGLU: up broadcasts (shapes differ), and a SiLU with two
// users; both SiLUs are fused on their own.
// CHECK-LABEL: func.func @swiglu_negative
// CHECK-SAME: (%[[G:.+]]: tensor<4x8xf32>, %[[U:.+]]: tensor<8xf32>, %[[H:.+]]: tensor<8xf32>)
// CHECK-NOT: kiln.swiglu
// CHECK-DAG: %[[S:.+]] = kiln.silu %[[G]]
// CHECK-DAG: kiln.mul %[[S]], %[[U]] : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK-DAG: %[[T:.+]] = kiln.silu %[[H]]
// CHECK-DAG: kiln.mul %[[T]], %[[U]] : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
// CHECK-NOT: kiln.swiglu
func.func @swiglu_negative(%g: tensor<4x8xf32>, %u: tensor<8xf32>, %h: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %0 = kiln.sigmoid %g : tensor<4x8xf32>
  %1 = kiln.mul %g, %0 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = kiln.mul %1, %u : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %3 = kiln.sigmoid %h : tensor<8xf32>
  %4 = kiln.mul %h, %3 : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %5 = kiln.mul %4, %u : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %2, %5, %4 : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>
}
