// RUN: kiln-opt %s -split-input-file -kiln-fuse-qdq -kiln-dce | FileCheck %s

// kiln-fuse-qdq: Q(DQ(y)) round trips, and DQ -> MatMul/Gemm (-> bias,
// Relu) (-> Q) into kiln.quantized_matmul; forms that must be left alone.

// Q(DQ(y)) with the same scale and zero point is y.
// CHECK-LABEL: func.func @round_trip
// CHECK-SAME: (%[[Y:.+]]: tensor<4x8xi8>)
// CHECK-NEXT: return %[[Y]]
func.func @round_trip(%y: tensor<4x8xi8>) -> tensor<4x8xi8> {
  %s = kiln.constant dense<0.5> : tensor<f32>
  %z = kiln.constant dense<3> : tensor<i8>
  %f = kiln.dequantize_linear %y, %s, %z : (tensor<4x8xi8>, tensor<f32>, tensor<i8>) -> tensor<4x8xf32>
  %q = kiln.quantize_linear %f, %s, %z : (tensor<4x8xf32>, tensor<f32>, tensor<i8>) -> tensor<4x8xi8>
  return %q : tensor<4x8xi8>
}

// -----

// Equal constants (not the same value) count as the same parameters.
// CHECK-LABEL: func.func @round_trip_equal_constants
// CHECK-SAME: (%[[Y:.+]]: tensor<4x8xui8>)
// CHECK-NEXT: return %[[Y]]
func.func @round_trip_equal_constants(%y: tensor<4x8xui8>) -> tensor<4x8xui8> {
  %s = kiln.constant dense<0.5> : tensor<f32>
  %s2 = kiln.constant dense<0.5> : tensor<f32>
  %z = kiln.constant dense<128> : tensor<ui8>
  %z2 = kiln.constant dense<128> : tensor<ui8>
  %f = kiln.dequantize_linear %y, %s, %z : (tensor<4x8xui8>, tensor<f32>, tensor<ui8>) -> tensor<4x8xf32>
  %q = kiln.quantize_linear %f, %s2, %z2 : (tensor<4x8xf32>, tensor<f32>, tensor<ui8>) -> tensor<4x8xui8>
  return %q : tensor<4x8xui8>
}

// -----

// Different scales: Q(DQ(y)) requantizes, not an identity.
// CHECK-LABEL: func.func @round_trip_other_scale
// CHECK: kiln.dequantize_linear
// CHECK: kiln.quantize_linear
func.func @round_trip_other_scale(%y: tensor<4x8xi8>) -> tensor<4x8xi8> {
  %s = kiln.constant dense<0.5> : tensor<f32>
  %s2 = kiln.constant dense<0.25> : tensor<f32>
  %z = kiln.constant dense<3> : tensor<i8>
  %f = kiln.dequantize_linear %y, %s, %z : (tensor<4x8xi8>, tensor<f32>, tensor<i8>) -> tensor<4x8xf32>
  %q = kiln.quantize_linear %f, %s2, %z : (tensor<4x8xf32>, tensor<f32>, tensor<i8>) -> tensor<4x8xi8>
  return %q : tensor<4x8xi8>
}

// -----

// Per-axis round trip along different axes: left alone.
// CHECK-LABEL: func.func @round_trip_other_axis
// CHECK: kiln.quantize_linear
func.func @round_trip_other_axis(%y: tensor<4x4xi8>) -> tensor<4x4xi8> {
  %s = kiln.constant dense<[0.5, 0.25, 1.0, 2.0]> : tensor<4xf32>
  %z = kiln.constant dense<0> : tensor<4xi8>
  %f = kiln.dequantize_linear %y, %s, %z {axis = 0 : i64} : (tensor<4x4xi8>, tensor<4xf32>, tensor<4xi8>) -> tensor<4x4xf32>
  %q = kiln.quantize_linear %f, %s, %z {axis = 1 : i64} : (tensor<4x4xf32>, tensor<4xf32>, tensor<4xi8>) -> tensor<4x4xi8>
  return %q : tensor<4x4xi8>
}

// -----

// MatMul with a per-column symmetric weight, then Q: an int8 result. The
// weight is transposed to [N, K] at compile time, its row sums and the
// combined scales a_scale * w_scale[n] folded.
// CHECK-LABEL: func.func @matmul_q_per_channel
// CHECK-DAG: %[[SUMS:.+]] = kiln.constant dense<[11, 11, 8]> : tensor<3xi32>
// CHECK-DAG: %[[SCALE:.+]] = kiln.constant dense<[1.250000e-01, 6.250000e-02, 2.500000e-01]> : tensor<3xf32>
// CHECK-DAG: %[[W:.+]] = kiln.constant dense<{{\[}}[1, 4, 7, -1], [-2, 5, 8, 0], [3, -6, 9, 2]]> : tensor<3x4xi8>
// CHECK-DAG: %[[NONE:.+]] = kiln.none
// CHECK-DAG: %[[AZ:.+]] = kiln.constant dense<3> : tensor<i8>
// CHECK-DAG: %[[YS:.+]] = kiln.constant dense<7.500000e-01> : tensor<f32>
// CHECK-DAG: %[[YZ:.+]] = kiln.constant dense<-2> : tensor<i8>
// CHECK: %[[A:.+]] = kiln.quantize_linear %arg0
// CHECK: %[[R:.+]] = kiln.quantized_matmul %[[A]], %[[AZ]], %[[W]], %[[NONE]], %[[SUMS]], %[[SCALE]], %[[NONE]], %[[YS]], %[[YZ]] :
// CHECK-SAME: -> tensor<2x3xi8>
// CHECK-NOT: kiln.matmul
// CHECK: return %[[R]]
func.func @matmul_q_per_channel(%x: tensor<2x4xf32>) -> tensor<2x3xi8> {
  %s = kiln.constant dense<0.5> : tensor<f32>
  %z = kiln.constant dense<3> : tensor<i8>
  %w = kiln.constant dense<[[1, -2, 3], [4, 5, -6], [7, 8, 9], [-1, 0, 2]]> : tensor<4x3xi8>
  %ws = kiln.constant dense<[0.25, 0.125, 0.5]> : tensor<3xf32>
  %ys = kiln.constant dense<0.75> : tensor<f32>
  %yz = kiln.constant dense<-2> : tensor<i8>
  %none = kiln.none
  %q = kiln.quantize_linear %x, %s, %z : (tensor<2x4xf32>, tensor<f32>, tensor<i8>) -> tensor<2x4xi8>
  %a = kiln.dequantize_linear %q, %s, %z : (tensor<2x4xi8>, tensor<f32>, tensor<i8>) -> tensor<2x4xf32>
  %wf = kiln.dequantize_linear %w, %ws, %none {axis = 1 : i64} : (tensor<4x3xi8>, tensor<3xf32>, none) -> tensor<4x3xf32>
  %m = kiln.matmul %a, %wf : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  %r = kiln.quantize_linear %m, %ys, %yz : (tensor<2x3xf32>, tensor<f32>, tensor<i8>) -> tensor<2x3xi8>
  return %r : tensor<2x3xi8>
}

// -----

// The same per-channel weight with its axis written as -1 (ONNX allows a
// negative axis): it fuses as axis 1 does.
// CHECK-LABEL: func.func @matmul_q_per_channel_negative_axis
// CHECK: kiln.quantized_matmul
// CHECK-NOT: kiln.matmul
func.func @matmul_q_per_channel_negative_axis(%x: tensor<2x4xf32>) -> tensor<2x3xi8> {
  %s = kiln.constant dense<0.5> : tensor<f32>
  %z = kiln.constant dense<3> : tensor<i8>
  %w = kiln.constant dense<[[1, -2, 3], [4, 5, -6], [7, 8, 9], [-1, 0, 2]]> : tensor<4x3xi8>
  %ws = kiln.constant dense<[0.25, 0.125, 0.5]> : tensor<3xf32>
  %ys = kiln.constant dense<0.75> : tensor<f32>
  %yz = kiln.constant dense<-2> : tensor<i8>
  %none = kiln.none
  %q = kiln.quantize_linear %x, %s, %z : (tensor<2x4xf32>, tensor<f32>, tensor<i8>) -> tensor<2x4xi8>
  %a = kiln.dequantize_linear %q, %s, %z : (tensor<2x4xi8>, tensor<f32>, tensor<i8>) -> tensor<2x4xf32>
  %wf = kiln.dequantize_linear %w, %ws, %none {axis = -1 : i64} : (tensor<4x3xi8>, tensor<3xf32>, none) -> tensor<4x3xf32>
  %m = kiln.matmul %a, %wf : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  %r = kiln.quantize_linear %m, %ys, %yz : (tensor<2x3xf32>, tensor<f32>, tensor<i8>) -> tensor<2x3xi8>
  return %r : tensor<2x3xi8>
}

// -----

// Gemm (transB) with an i32 bias whose scale is a_scale * w_scale, a Relu
// and Q: bias and activation go into the op; the weight is already [N, K].
// An asymmetric per-tensor weight keeps its zero point.
// CHECK-LABEL: func.func @gemm_bias_relu_q
// CHECK-DAG: %[[BIAS:.+]] = kiln.constant dense<[5, -7]> : tensor<2xi32>
// CHECK-DAG: %[[WZ:.+]] = kiln.constant dense<4> : tensor<1xui8>
// CHECK-DAG: %[[W:.+]] = kiln.constant dense<{{\[}}[1, 2, 3], [4, 5, 6]]> : tensor<2x3xui8>
// CHECK: %[[R:.+]] = kiln.quantized_matmul %arg0, %{{.+}}, %[[W]], %[[WZ]], %{{.+}}, %{{.+}}, %[[BIAS]], %{{.+}}, %{{.+}} {activation = "relu"}
// CHECK-SAME: -> tensor<5x2xui8>
// CHECK-NOT: kiln.gemm
// CHECK-NOT: kiln.relu
// CHECK: return %[[R]]
func.func @gemm_bias_relu_q(%aq: tensor<5x3xui8>) -> tensor<5x2xui8> {
  %as = kiln.constant dense<0.5> : tensor<f32>
  %az = kiln.constant dense<128> : tensor<ui8>
  %w = kiln.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xui8>
  %ws = kiln.constant dense<0.25> : tensor<f32>
  %wz = kiln.constant dense<4> : tensor<ui8>
  %b = kiln.constant dense<[5, -7]> : tensor<2xi32>
  %bs = kiln.constant dense<0.125> : tensor<f32>
  %ys = kiln.constant dense<0.1> : tensor<f32>
  %yz = kiln.constant dense<0> : tensor<ui8>
  %a = kiln.dequantize_linear %aq, %as, %az : (tensor<5x3xui8>, tensor<f32>, tensor<ui8>) -> tensor<5x3xf32>
  %wf = kiln.dequantize_linear %w, %ws, %wz : (tensor<2x3xui8>, tensor<f32>, tensor<ui8>) -> tensor<2x3xf32>
  %none_b = kiln.none
  %bf = kiln.dequantize_linear %b, %bs, %none_b : (tensor<2xi32>, tensor<f32>, none) -> tensor<2xf32>
  %g = kiln.gemm %a, %wf, %bf {transB = 1 : i64} : (tensor<5x3xf32>, tensor<2x3xf32>, tensor<2xf32>) -> tensor<5x2xf32>
  %r = kiln.relu %g : tensor<5x2xf32>
  %q = kiln.quantize_linear %r, %ys, %yz : (tensor<5x2xf32>, tensor<f32>, tensor<ui8>) -> tensor<5x2xui8>
  return %q : tensor<5x2xui8>
}

// -----

// MatMul + Add(DQ(bias)) feeding float consumers (two uses, no Q): an f32
// result with the bias in the op; the 3-D activation keeps its shape.
// CHECK-LABEL: func.func @matmul_bias_float
// CHECK: %[[R:.+]] = kiln.quantized_matmul %arg0, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} :
// CHECK-SAME: tensor<2xi32>, none, none) -> tensor<2x3x2xf32>
// CHECK-NOT: kiln.matmul
// CHECK-NOT: kiln.add %
// CHECK: %[[T:.+]] = kiln.tanh %[[R]]
// CHECK: kiln.mul %[[T]], %[[R]]
func.func @matmul_bias_float(%aq: tensor<2x3x4xi8>) -> tensor<2x3x2xf32> {
  %as = kiln.constant dense<0.5> : tensor<f32>
  %az = kiln.constant dense<-1> : tensor<i8>
  %w = kiln.constant dense<[[1, 2], [3, 4], [5, 6], [7, 8]]> : tensor<4x2xi8>
  %ws = kiln.constant dense<[0.25, 0.5]> : tensor<2xf32>
  %b = kiln.constant dense<[9, -9]> : tensor<2xi32>
  %bs = kiln.constant dense<[0.125, 0.25]> : tensor<2xf32>
  %bz = kiln.constant dense<0> : tensor<2xi32>
  %a = kiln.dequantize_linear %aq, %as, %az : (tensor<2x3x4xi8>, tensor<f32>, tensor<i8>) -> tensor<2x3x4xf32>
  %none_w = kiln.none
  %wf = kiln.dequantize_linear %w, %ws, %none_w {axis = 1 : i64} : (tensor<4x2xi8>, tensor<2xf32>, none) -> tensor<4x2xf32>
  %bf = kiln.dequantize_linear %b, %bs, %bz {axis = 0 : i64} : (tensor<2xi32>, tensor<2xf32>, tensor<2xi32>) -> tensor<2xf32>
  %m = kiln.matmul %a, %wf : (tensor<2x3x4xf32>, tensor<4x2xf32>) -> tensor<2x3x2xf32>
  %y = kiln.add %bf, %m : (tensor<2xf32>, tensor<2x3x2xf32>) -> tensor<2x3x2xf32>
  %t = kiln.tanh %y : tensor<2x3x2xf32>
  %r = kiln.mul %t, %y : (tensor<2x3x2xf32>, tensor<2x3x2xf32>) -> tensor<2x3x2xf32>
  return %r : tensor<2x3x2xf32>
}

// -----

// A bias whose scale is not a_scale * w_scale stays a float Add after an
// f32-result quantized matmul; so does the Q after it.
// CHECK-LABEL: func.func @bias_other_scale
// CHECK: %[[R:.+]] = kiln.quantized_matmul
// CHECK-SAME: -> tensor<2x2xf32>
// CHECK: kiln.add
// CHECK: kiln.quantize_linear
func.func @bias_other_scale(%aq: tensor<2x4xi8>) -> tensor<2x2xi8> {
  %as = kiln.constant dense<0.5> : tensor<f32>
  %w = kiln.constant dense<[[1, 2], [3, 4], [5, 6], [7, 8]]> : tensor<4x2xi8>
  %ws = kiln.constant dense<0.25> : tensor<f32>
  %b = kiln.constant dense<[9, -9]> : tensor<2xi32>
  %bs = kiln.constant dense<0.3> : tensor<f32>
  %none_aq = kiln.none
  %a = kiln.dequantize_linear %aq, %as, %none_aq : (tensor<2x4xi8>, tensor<f32>, none) -> tensor<2x4xf32>
  %none_w = kiln.none
  %wf = kiln.dequantize_linear %w, %ws, %none_w : (tensor<4x2xi8>, tensor<f32>, none) -> tensor<4x2xf32>
  %none_b = kiln.none
  %bf = kiln.dequantize_linear %b, %bs, %none_b : (tensor<2xi32>, tensor<f32>, none) -> tensor<2xf32>
  %m = kiln.matmul %a, %wf : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x2xf32>
  %y = kiln.add %m, %bf : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  %yz = kiln.constant dense<1> : tensor<i8>
  %q = kiln.quantize_linear %y, %as, %yz : (tensor<2x2xf32>, tensor<f32>, tensor<i8>) -> tensor<2x2xi8>
  return %q : tensor<2x2xi8>
}

// -----

// Left alone: a weight that is not constant, a weight quantized along K,
// and two activations (attention scores).
// CHECK-LABEL: func.func @not_fused
// CHECK-NOT: kiln.quantized_matmul
// CHECK-COUNT-3: kiln.matmul
func.func @not_fused(%aq: tensor<2x4xi8>, %wq: tensor<4x3xi8>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x2xf32>) {
  %as = kiln.constant dense<0.5> : tensor<f32>
  %w = kiln.constant dense<1> : tensor<4x3xi8>
  %ks = kiln.constant dense<[0.5, 0.25, 1.0, 2.0]> : tensor<4xf32>
  %none_aq = kiln.none
  %a = kiln.dequantize_linear %aq, %as, %none_aq : (tensor<2x4xi8>, tensor<f32>, none) -> tensor<2x4xf32>
  %none_wq = kiln.none
  %wf = kiln.dequantize_linear %wq, %as, %none_wq : (tensor<4x3xi8>, tensor<f32>, none) -> tensor<4x3xf32>
  %m1 = kiln.matmul %a, %wf : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  %none_w = kiln.none
  %wk = kiln.dequantize_linear %w, %ks, %none_w {axis = 0 : i64} : (tensor<4x3xi8>, tensor<4xf32>, none) -> tensor<4x3xf32>
  %m2 = kiln.matmul %a, %wk : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  %at = kiln.transpose %a {perm = array<i64: 1, 0>} : (tensor<2x4xf32>) -> tensor<4x2xf32>
  %m3 = kiln.matmul %a, %at : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x2xf32>
  return %m1, %m2, %m3 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x2xf32>
}
