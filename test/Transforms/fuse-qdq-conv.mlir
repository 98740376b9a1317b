// RUN: kiln-opt %s -split-input-file -kiln-fuse-qdq -kiln-dce | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-fuse-qdq -kiln-pass-statistics -o /dev/null 2>&1 | FileCheck %s --check-prefix=STATS

// kiln-fuse-qdq on convolutions: DQ(x) -> Conv(DQ(w constant), bias)
// (-> Relu) (-> Q) into kiln.quantized_conv with the int8 weight kept;
// grouped convs, non-constant weights and per-input-channel weight scales
// stay float.

// Per-channel weight, i32 bias with the combined scale, Relu, Q: one op
// with the weight in OHWI layout (int8), row sums [sum w[m]] and scales
// x_scale * w_scale[m]; the padding and strides carried over.
// CHECK-LABEL: func.func @conv_bias_relu_q
// CHECK-DAG: %[[W:.+]] = kiln.constant dense<{{\[\[\[\[}}1], [2]], {{\[\[}}3], [4]]], {{\[\[\[}}-1], [0]], {{\[\[}}0], [5]]]]> : tensor<2x2x2x1xi8>
// CHECK-DAG: %[[SUMS:.+]] = kiln.constant dense<[10, 4]> : tensor<2xi32>
// CHECK-DAG: %[[SCALE:.+]] = kiln.constant dense<[5.000000e-02, 2.500000e-02]> : tensor<2xf32>
// CHECK-DAG: %[[B:.+]] = kiln.constant dense<[7, -9]> : tensor<2xi32>
// CHECK: %[[Y:.+]] = kiln.quantized_conv %arg0, %{{.+}}, %[[W]], %{{.+}}, %[[SUMS]], %[[SCALE]], %[[B]], %{{.+}}, %{{.+}} {activation = "relu", dilations = array<i64: 1, 1>, pads = array<i64: 1, 0, 1, 0>, strides = array<i64: 2, 1>}
// CHECK-SAME: (tensor<1x1x5x4xui8>, tensor<ui8>, tensor<2x2x2x1xi8>, none, tensor<2xi32>, tensor<2xf32>, tensor<2xi32>, tensor<f32>, tensor<ui8>) -> tensor<1x2x3x3xui8>
// CHECK-NOT: kiln.conv
// CHECK-NOT: kiln.dequantize_linear
// CHECK: return %[[Y]]
func.func @conv_bias_relu_q(%x: tensor<1x1x5x4xui8>) -> tensor<1x2x3x3xui8> {
  %xs = kiln.constant dense<0.5> : tensor<f32>
  %xz = kiln.constant dense<128> : tensor<ui8>
  %w = kiln.constant dense<[[[[1, 2], [3, 4]]], [[[-1, 0], [0, 5]]]]> : tensor<2x1x2x2xi8>
  %ws = kiln.constant dense<[0.1, 0.05]> : tensor<2xf32>
  %wz = kiln.constant dense<0> : tensor<2xi8>
  %b = kiln.constant dense<[7, -9]> : tensor<2xi32>
  %bs = kiln.constant dense<[0.05, 0.025]> : tensor<2xf32>
  %ys = kiln.constant dense<0.2> : tensor<f32>
  %yz = kiln.constant dense<0> : tensor<ui8>
  %xf = kiln.dequantize_linear %x, %xs, %xz : (tensor<1x1x5x4xui8>, tensor<f32>, tensor<ui8>) -> tensor<1x1x5x4xf32>
  %wf = kiln.dequantize_linear %w, %ws, %wz {axis = 0 : i64} : (tensor<2x1x2x2xi8>, tensor<2xf32>, tensor<2xi8>) -> tensor<2x1x2x2xf32>
  %none = kiln.none
  %bf = kiln.dequantize_linear %b, %bs, %none {axis = 0 : i64} : (tensor<2xi32>, tensor<2xf32>, none) -> tensor<2xf32>
  %c = kiln.conv %xf, %wf, %bf {pads = array<i64: 1, 0, 1, 0>, strides = array<i64: 2, 1>} : (tensor<1x1x5x4xf32>, tensor<2x1x2x2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  %r = kiln.relu %c : tensor<1x2x3x3xf32>
  %y = kiln.quantize_linear %r, %ys, %yz : (tensor<1x2x3x3xf32>, tensor<f32>, tensor<ui8>) -> tensor<1x2x3x3xui8>
  return %y : tensor<1x2x3x3xui8>
}

// -----

// Per-tensor asymmetric weight, no bias, float consumers (no Q): an f32
// result; SAME_UPPER resolved to explicit pads; the weight zero point kept.
// CHECK-LABEL: func.func @conv_same_float_out
// CHECK: %[[WZ:.+]] = kiln.constant dense<3> : tensor<1xi8>
// CHECK: kiln.quantized_conv %arg0, %{{.+}}, %{{.+}}, %[[WZ]], %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}
// CHECK-SAME: (tensor<1x2x4x4xi8>, tensor<i8>, tensor<3x3x3x2xi8>, tensor<1xi8>, tensor<3xi32>, tensor<1xf32>, none, none, none) -> tensor<1x3x4x4xf32>
// CHECK-NEXT: kiln.sigmoid
func.func @conv_same_float_out(%x: tensor<1x2x4x4xi8>) -> tensor<1x3x4x4xf32> {
  %xs = kiln.constant dense<0.5> : tensor<f32>
  %xz = kiln.constant dense<-4> : tensor<i8>
  %w = kiln.constant dense<1> : tensor<3x2x3x3xi8>
  %ws = kiln.constant dense<0.25> : tensor<f32>
  %wz = kiln.constant dense<3> : tensor<i8>
  %xf = kiln.dequantize_linear %x, %xs, %xz : (tensor<1x2x4x4xi8>, tensor<f32>, tensor<i8>) -> tensor<1x2x4x4xf32>
  %wf = kiln.dequantize_linear %w, %ws, %wz : (tensor<3x2x3x3xi8>, tensor<f32>, tensor<i8>) -> tensor<3x2x3x3xf32>
  %none = kiln.none
  %c = kiln.conv %xf, %wf, %none {auto_pad = "SAME_UPPER"} : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>, none) -> tensor<1x3x4x4xf32>
  %s = kiln.sigmoid %c : tensor<1x3x4x4xf32>
  return %s : tensor<1x3x4x4xf32>
}

// -----

// The weight [M, C, KH, KW] = [1, 2, 1, 2] becomes OHWI [1, 1, 2, 2]:
// w[0, c, 0, kw] at [0, 0, kw, c]; dilation carried over.
// CHECK-LABEL: func.func @conv_weight_ohwi
// CHECK: %[[W:.+]] = kiln.constant dense<{{\[\[\[\[}}1, 3], [2, 4]]]]> : tensor<1x1x2x2xi8>
// CHECK: kiln.quantized_conv %arg0, %{{.+}}, %[[W]], {{.+}} {dilations = array<i64: 1, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
// CHECK-SAME: -> tensor<1x1x3x2xf32>
func.func @conv_weight_ohwi(%x: tensor<1x2x3x4xi8>) -> tensor<1x1x3x2xf32> {
  %xs = kiln.constant dense<0.5> : tensor<f32>
  %xz = kiln.constant dense<1> : tensor<i8>
  %w = kiln.constant dense<[[[[1, 2]], [[3, 4]]]]> : tensor<1x2x1x2xi8>
  %ws = kiln.constant dense<0.25> : tensor<f32>
  %none = kiln.none
  %xf = kiln.dequantize_linear %x, %xs, %xz : (tensor<1x2x3x4xi8>, tensor<f32>, tensor<i8>) -> tensor<1x2x3x4xf32>
  %wf = kiln.dequantize_linear %w, %ws, %none : (tensor<1x2x1x2xi8>, tensor<f32>, none) -> tensor<1x2x1x2xf32>
  %c = kiln.conv %xf, %wf, %none {dilations = array<i64: 1, 2>} : (tensor<1x2x3x4xf32>, tensor<1x2x1x2xf32>, none) -> tensor<1x1x3x2xf32>
  return %c : tensor<1x1x3x2xf32>
}

// -----

// A float bias (f32 constant) is added after the scale: an f32 bias operand.
// CHECK-LABEL: func.func @conv_float_bias
// CHECK: %[[B:.+]] = kiln.constant dense<[5.000000e-01, -2.500000e-01]> : tensor<2xf32>
// CHECK: kiln.quantized_conv %arg0, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[B]], %{{.+}}, %{{.+}} {dilations
// CHECK-SAME: tensor<2xf32>, tensor<f32>, tensor<i8>) -> tensor<1x2x3x3xi8>
func.func @conv_float_bias(%x: tensor<1x1x3x3xi8>) -> tensor<1x2x3x3xi8> {
  %xs = kiln.constant dense<0.5> : tensor<f32>
  %xz = kiln.constant dense<0> : tensor<i8>
  %w = kiln.constant dense<2> : tensor<2x1x1x1xi8>
  %ws = kiln.constant dense<0.25> : tensor<f32>
  %b = kiln.constant dense<[0.5, -0.25]> : tensor<2xf32>
  %ys = kiln.constant dense<0.1> : tensor<f32>
  %yz = kiln.constant dense<1> : tensor<i8>
  %xf = kiln.dequantize_linear %x, %xs, %xz : (tensor<1x1x3x3xi8>, tensor<f32>, tensor<i8>) -> tensor<1x1x3x3xf32>
  %none = kiln.none
  %wf = kiln.dequantize_linear %w, %ws, %none : (tensor<2x1x1x1xi8>, tensor<f32>, none) -> tensor<2x1x1x1xf32>
  %c = kiln.conv %xf, %wf, %b : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  %y = kiln.quantize_linear %c, %ys, %yz : (tensor<1x2x3x3xf32>, tensor<f32>, tensor<i8>) -> tensor<1x2x3x3xi8>
  return %y : tensor<1x2x3x3xi8>
}

// -----

// Depthwise (group = 2): left in float.
// CHECK-LABEL: func.func @conv_depthwise_left
// CHECK-NOT: kiln.quantized_conv
// CHECK: kiln.conv
func.func @conv_depthwise_left(%x: tensor<1x2x4x4xi8>) -> tensor<1x2x2x2xf32> {
  %xs = kiln.constant dense<0.5> : tensor<f32>
  %w = kiln.constant dense<1> : tensor<2x1x3x3xi8>
  %ws = kiln.constant dense<0.25> : tensor<f32>
  %xz = kiln.constant dense<0> : tensor<i8>
  %xf = kiln.dequantize_linear %x, %xs, %xz : (tensor<1x2x4x4xi8>, tensor<f32>, tensor<i8>) -> tensor<1x2x4x4xf32>
  %none = kiln.none
  %wf = kiln.dequantize_linear %w, %ws, %none : (tensor<2x1x3x3xi8>, tensor<f32>, none) -> tensor<2x1x3x3xf32>
  %c = kiln.conv %xf, %wf, %none {group = 2 : i64} : (tensor<1x2x4x4xf32>, tensor<2x1x3x3xf32>, none) -> tensor<1x2x2x2xf32>
  return %c : tensor<1x2x2x2xf32>
}

// -----

// Weight scales per input channel (axis 1) would scale the reduction:
// left alone. So is a weight that is not a constant.
// CHECK-LABEL: func.func @conv_left_alone
// CHECK-NOT: kiln.quantized_conv
// CHECK: kiln.conv
// CHECK: kiln.conv
func.func @conv_left_alone(%x: tensor<1x2x4x4xi8>, %wq: tensor<3x2x3x3xi8>) -> (tensor<1x3x2x2xf32>, tensor<1x3x2x2xf32>) {
  %xs = kiln.constant dense<0.5> : tensor<f32>
  %xz = kiln.constant dense<0> : tensor<i8>
  %w = kiln.constant dense<1> : tensor<3x2x3x3xi8>
  %ws = kiln.constant dense<[0.25, 0.5]> : tensor<2xf32>
  %ws1 = kiln.constant dense<0.25> : tensor<f32>
  %xf = kiln.dequantize_linear %x, %xs, %xz : (tensor<1x2x4x4xi8>, tensor<f32>, tensor<i8>) -> tensor<1x2x4x4xf32>
  %none = kiln.none
  %wf = kiln.dequantize_linear %w, %ws, %none {axis = 1 : i64} : (tensor<3x2x3x3xi8>, tensor<2xf32>, none) -> tensor<3x2x3x3xf32>
  %wf2 = kiln.dequantize_linear %wq, %ws1, %none : (tensor<3x2x3x3xi8>, tensor<f32>, none) -> tensor<3x2x3x3xf32>
  %c = kiln.conv %xf, %wf, %none : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>, none) -> tensor<1x3x2x2xf32>
  %c2 = kiln.conv %xf, %wf2, %none : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>, none) -> tensor<1x3x2x2xf32>
  return %c, %c2 : tensor<1x3x2x2xf32>, tensor<1x3x2x2xf32>
}

// Over the file: two int8 results, two f32, three convs left in float.
// STATS-LABEL: kiln-fuse-qdq
// STATS: (convs-quantized) 2 :
// STATS-NEXT: (convs-dequantized) 2 :
// STATS-NEXT: (convs-left-float) 3 :
