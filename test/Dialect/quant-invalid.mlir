// RUN: kiln-opt %s -split-input-file -verify-diagnostics

func.func @quantize_block_size(%x: tensor<4x8xf32>, %s: tensor<4x2xf32>) {
  %none = kiln.none
  // expected-error @+1 {{block_size 4 is not supported: Kiln implements per-tensor and per-axis quantization, not blocked quantization}}
  %y = kiln.quantize_linear %x, %s, %none {block_size = 4 : i64} : (tensor<4x8xf32>, tensor<4x2xf32>, none) -> tensor<4x8xui8>
  return
}

// -----

func.func @quantize_axis_size(%x: tensor<1x64x8x8xf32>, %s: tensor<8xf32>) {
  %none = kiln.none
  // expected-error @+1 {{y_scale has 8 elements but x.dim[1] is 64 (per-axis quantization along axis 1)}}
  %y = kiln.quantize_linear %x, %s, %none : (tensor<1x64x8x8xf32>, tensor<8xf32>, none) -> tensor<1x64x8x8xui8>
  return
}

// -----

func.func @quantize_axis_range(%x: tensor<4x8xf32>, %s: tensor<8xf32>) {
  %none = kiln.none
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %y = kiln.quantize_linear %x, %s, %none {axis = 2 : i64} : (tensor<4x8xf32>, tensor<8xf32>, none) -> tensor<4x8xui8>
  return
}

// -----

func.func @quantize_scale_rank(%x: tensor<4x8xf32>, %s: tensor<4x8xf32>) {
  %none = kiln.none
  // expected-error @+1 {{y_scale must be a scalar or 1-D (per-axis), got 'tensor<4x8xf32>'}}
  %y = kiln.quantize_linear %x, %s, %none : (tensor<4x8xf32>, tensor<4x8xf32>, none) -> tensor<4x8xui8>
  return
}

// -----

func.func @quantize_zero_point_shape(%x: tensor<4x8xf32>, %s: tensor<8xf32>, %zp: tensor<ui8>) {
  // expected-error @+1 {{y_zero_point of type 'tensor<ui8>' does not have the shape of y_scale 'tensor<8xf32>'}}
  %y = kiln.quantize_linear %x, %s, %zp : (tensor<4x8xf32>, tensor<8xf32>, tensor<ui8>) -> tensor<4x8xui8>
  return
}

// -----

func.func @quantize_dtype_mismatch(%x: tensor<4x8xf32>, %s: tensor<f32>, %zp: tensor<ui8>) {
  // expected-error @+2 {{output_dtype 'i8' does not match y_zero_point's element type 'ui8'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.quantize_linear %x, %s, %zp {output_dtype = i8} : (tensor<4x8xf32>, tensor<f32>, tensor<ui8>) -> tensor<4x8xui8>
  return
}

// -----

func.func @quantize_dtype_float(%x: tensor<4x8xf32>, %s: tensor<f32>) {
  %none = kiln.none
  // expected-error @+2 {{output_dtype 'f16' is not one of i8, ui8, i16, ui16}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.quantize_linear %x, %s, %none {output_dtype = f16} : (tensor<4x8xf32>, tensor<f32>, none) -> tensor<4x8xui8>
  return
}

// -----

// Without a zero point or output_dtype the result is ui8.
func.func @quantize_default_ui8(%x: tensor<4x8xf32>, %s: tensor<f32>) {
  %none = kiln.none
  // expected-error @+2 {{inferred type(s) 'tensor<4x8xui8>' are incompatible with return type(s) of operation 'tensor<4x8xi8>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.quantize_linear %x, %s, %none : (tensor<4x8xf32>, tensor<f32>, none) -> tensor<4x8xi8>
  return
}

// -----

func.func @quantize_saturate(%x: tensor<4x8xf32>, %s: tensor<f32>) {
  %none = kiln.none
  // expected-error @+1 {{saturate is 2 but must be 0 or 1}}
  %y = kiln.quantize_linear %x, %s, %none {saturate = 2 : i64} : (tensor<4x8xf32>, tensor<f32>, none) -> tensor<4x8xui8>
  return
}

// -----

func.func @dequantize_zero_point_type(%x: tensor<4x8xi8>, %s: tensor<f32>, %zp: tensor<ui8>) {
  // expected-error @+1 {{x has element type 'i8' but x_zero_point has 'ui8'}}
  %y = kiln.dequantize_linear %x, %s, %zp : (tensor<4x8xi8>, tensor<f32>, tensor<ui8>) -> tensor<4x8xf32>
  return
}

// -----

func.func @dequantize_axis_size(%x: tensor<4x8xi8>, %s: tensor<4xf32>) {
  %none = kiln.none
  // expected-error @+1 {{x_scale has 4 elements but x.dim[1] is 8 (per-axis quantization along axis 1)}}
  %y = kiln.dequantize_linear %x, %s, %none : (tensor<4x8xi8>, tensor<4xf32>, none) -> tensor<4x8xf32>
  return
}

// -----

func.func @dequantize_block_size(%x: tensor<4x8xi8>, %s: tensor<4x2xf32>) {
  %none = kiln.none
  // expected-error @+1 {{block_size 4 is not supported}}
  %y = kiln.dequantize_linear %x, %s, %none {block_size = 4 : i64} : (tensor<4x8xi8>, tensor<4x2xf32>, none) -> tensor<4x8xf32>
  return
}

// -----

func.func @dequantize_scale_type(%x: tensor<4x8xi8>, %s: tensor<f16>) {
  %none = kiln.none
  // expected-error @+2 {{inferred type(s) 'tensor<4x8xf16>' are incompatible with return type(s) of operation 'tensor<4x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.dequantize_linear %x, %s, %none : (tensor<4x8xi8>, tensor<f16>, none) -> tensor<4x8xf32>
  return
}

// -----

func.func @dynamic_quantize_scale_shape(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{#1 must be 0D tensor of 32-bit float values}}
  %y, %s, %zp = kiln.dynamic_quantize_linear %x : (tensor<4x8xf32>) -> (tensor<4x8xui8>, tensor<1xf32>, tensor<ui8>)
  return
}

// -----

func.func @matmul_integer_shapes(%a: tensor<4x8xui8>, %b: tensor<4x2xi8>) {
  %none = kiln.none
  // expected-error @+2 {{matmul contracting dims differ: A has 8 columns but B has 4 rows}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.matmul_integer %a, %b, %none, %none : (tensor<4x8xui8>, tensor<4x2xi8>, none, none) -> tensor<4x2xi32>
  return
}

// -----

func.func @matmul_integer_zero_point(%a: tensor<4x8xui8>, %b: tensor<8x2xi8>, %zp: tensor<ui8>) {
  %none = kiln.none
  // expected-error @+2 {{B has element type 'i8' but b_zero_point has 'ui8'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.matmul_integer %a, %b, %none, %zp : (tensor<4x8xui8>, tensor<8x2xi8>, none, tensor<ui8>) -> tensor<4x2xi32>
  return
}

// -----

func.func @qlinear_matmul_result(%a: tensor<2x4xui8>, %s: tensor<f32>, %azp: tensor<ui8>, %b: tensor<4x3xi8>, %bzp: tensor<i8>) {
  // expected-error @+2 {{inferred type(s) 'tensor<2x3xi8>' are incompatible with return type(s) of operation 'tensor<2x3xui8>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.qlinear_matmul %a, %s, %azp, %b, %s, %bzp, %s, %bzp : (tensor<2x4xui8>, tensor<f32>, tensor<ui8>, tensor<4x3xi8>, tensor<f32>, tensor<i8>, tensor<f32>, tensor<i8>) -> tensor<2x3xui8>
  return
}

// -----

func.func @qlinear_matmul_zero_point(%a: tensor<2x4xui8>, %s: tensor<f32>, %azp: tensor<i8>, %b: tensor<4x3xi8>) {
  // expected-error @+2 {{a has element type 'ui8' but a_zero_point has 'i8'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.qlinear_matmul %a, %s, %azp, %b, %s, %azp, %s, %azp : (tensor<2x4xui8>, tensor<f32>, tensor<i8>, tensor<4x3xi8>, tensor<f32>, tensor<i8>, tensor<f32>, tensor<i8>) -> tensor<2x3xi8>
  return
}

// -----

func.func @qlinear_conv_w_scale(%x: tensor<1x3x8x8xui8>, %s: tensor<f32>, %xzp: tensor<ui8>, %w: tensor<16x3x3x3xi8>, %ws: tensor<8xf32>, %wzp: tensor<i8>) {
  %none = kiln.none
  // expected-error @+2 {{w_scale has 8 elements but 16 channels are needed}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.qlinear_conv %x, %s, %xzp, %w, %ws, %wzp, %s, %xzp, %none : (tensor<1x3x8x8xui8>, tensor<f32>, tensor<ui8>, tensor<16x3x3x3xi8>, tensor<8xf32>, tensor<i8>, tensor<f32>, tensor<ui8>, none) -> tensor<1x16x6x6xui8>
  return
}

// -----

func.func @qlinear_conv_bias(%x: tensor<1x3x8x8xui8>, %s: tensor<f32>, %xzp: tensor<ui8>, %w: tensor<16x3x3x3xi8>, %wzp: tensor<i8>, %b: tensor<8xi32>) {
  // expected-error @+2 {{B has 8 elements but 16 channels are needed}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.qlinear_conv %x, %s, %xzp, %w, %s, %wzp, %s, %xzp, %b : (tensor<1x3x8x8xui8>, tensor<f32>, tensor<ui8>, tensor<16x3x3x3xi8>, tensor<f32>, tensor<i8>, tensor<f32>, tensor<ui8>, tensor<8xi32>) -> tensor<1x16x6x6xui8>
  return
}

// -----

func.func @qlinear_conv_kernel(%x: tensor<1x3x8x8xui8>, %s: tensor<f32>, %xzp: tensor<ui8>, %w: tensor<16x3x3x3xi8>, %wzp: tensor<i8>) {
  %none = kiln.none
  // expected-error @+2 {{kernel_shape has 1 entries but the input has 2 spatial dims}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.qlinear_conv %x, %s, %xzp, %w, %s, %wzp, %s, %xzp, %none {kernel_shape = array<i64: 3>} : (tensor<1x3x8x8xui8>, tensor<f32>, tensor<ui8>, tensor<16x3x3x3xi8>, tensor<f32>, tensor<i8>, tensor<f32>, tensor<ui8>, none) -> tensor<1x16x6x6xui8>
  return
}

// -----

func.func @conv_integer_channels(%x: tensor<1x4x8x8xui8>, %w: tensor<16x3x3x3xui8>) {
  %none = kiln.none
  // expected-error @+2 {{X has 4 channels but W.dim1 * group = 3 * 1 is 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.conv_integer %x, %w, %none, %none : (tensor<1x4x8x8xui8>, tensor<16x3x3x3xui8>, none, none) -> tensor<1x16x6x6xi32>
  return
}

// -----

func.func @conv_integer_zero_point(%x: tensor<1x3x8x8xui8>, %w: tensor<16x3x3x3xui8>, %zp: tensor<i8>) {
  %none = kiln.none
  // expected-error @+2 {{x has element type 'ui8' but x_zero_point has 'i8'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.conv_integer %x, %w, %zp, %none : (tensor<1x3x8x8xui8>, tensor<16x3x3x3xui8>, tensor<i8>, none) -> tensor<1x16x6x6xi32>
  return
}

// -----

func.func @conv_integer_contradicted(%x: tensor<1x3x8x8xui8>, %w: tensor<16x3x3x3xui8>) {
  %none = kiln.none
  // expected-error @+2 {{inferred type(s) 'tensor<1x16x3x3xi32>' are incompatible with return type(s) of operation 'tensor<1x16x4x4xi32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.conv_integer %x, %w, %none, %none {strides = array<i64: 2, 2>} : (tensor<1x3x8x8xui8>, tensor<16x3x3x3xui8>, none, none) -> tensor<1x16x4x4xi32>
  return
}
