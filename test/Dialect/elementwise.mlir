// RUN: kiln-opt %s -split-input-file | kiln-opt | FileCheck %s

// Every elementwise op, with dynamic dims and broadcasting. Inference is
// exercised by the declared result types: a static dim the op infers
// differently fails to verify (see elementwise-invalid.mlir).

// CHECK-LABEL: func.func @unary_float
// CHECK: kiln.abs %{{.+}} : tensor<2x?xf32>
// CHECK: kiln.neg %{{.+}} : tensor<2x?xf32>
// CHECK: kiln.exp %{{.+}} : tensor<2x?xf32>
// CHECK: kiln.log %{{.+}} : tensor<2x?xf32>
// CHECK: kiln.sqrt %{{.+}} : tensor<2x?xf32>
// CHECK: kiln.reciprocal %{{.+}} : tensor<2x?xf32>
// CHECK: kiln.relu %{{.+}} : tensor<2x?xf32>
// CHECK: kiln.sigmoid %{{.+}} : tensor<2x?xf32>
// CHECK: kiln.hard_swish %{{.+}} : tensor<2x?xf32>
// CHECK: kiln.tanh %{{.+}} : tensor<2x?xf32>
// CHECK: kiln.erf %{{.+}} : tensor<2x?xf32>
// CHECK: kiln.softplus %{{.+}} : tensor<2x?xf32>
// CHECK: kiln.softsign %{{.+}} : tensor<2x?xf32>
// CHECK: kiln.mish %{{.+}} : tensor<2x?xf32>
// CHECK: kiln.sin %{{.+}} : tensor<2x?xf32>
// CHECK: kiln.cos %{{.+}} : tensor<2x?xf32>
// CHECK: kiln.tan %{{.+}} : tensor<2x?xf32>
// CHECK: kiln.asin %{{.+}} : tensor<2x?xf32>
// CHECK: kiln.acos %{{.+}} : tensor<2x?xf32>
// CHECK: kiln.atan %{{.+}} : tensor<2x?xf32>
// CHECK: kiln.sinh %{{.+}} : tensor<2x?xf32>
// CHECK: kiln.cosh %{{.+}} : tensor<2x?xf32>
// CHECK: kiln.asinh %{{.+}} : tensor<2x?xf32>
// CHECK: kiln.acosh %{{.+}} : tensor<2x?xf32>
// CHECK: kiln.atanh %{{.+}} : tensor<2x?xf32>
// CHECK: kiln.floor %{{.+}} : tensor<2x?xf32>
// CHECK: kiln.ceil %{{.+}} : tensor<2x?xf32>
// CHECK: kiln.round %{{.+}} : tensor<2x?xf32>
// CHECK: kiln.sign %{{.+}} : tensor<2x?xf32>
// CHECK: kiln.identity %{{.+}} : tensor<2x?xf32>
// CHECK: kiln.leaky_relu %{{.+}} : tensor<2x?xf32>
// CHECK: kiln.hard_sigmoid %{{.+}} : tensor<2x?xf32>
// CHECK: kiln.elu %{{.+}} : tensor<2x?xf32>
// CHECK: kiln.selu %{{.+}} : tensor<2x?xf32>
// CHECK: kiln.celu %{{.+}} : tensor<2x?xf32>
// CHECK: kiln.thresholded_relu %{{.+}} : tensor<2x?xf32>
// CHECK: kiln.gelu %{{.+}} : tensor<2x?xf32>
// CHECK: kiln.shrink %{{.+}} : tensor<2x?xf32>
func.func @unary_float(%x: tensor<2x?xf32>) -> tensor<2x?xf32> {
  %0 = kiln.abs %x : tensor<2x?xf32>
  %1 = kiln.neg %x : tensor<2x?xf32>
  %2 = kiln.exp %x : tensor<2x?xf32>
  %3 = kiln.log %x : tensor<2x?xf32>
  %4 = kiln.sqrt %x : tensor<2x?xf32>
  %5 = kiln.reciprocal %x : tensor<2x?xf32>
  %6 = kiln.relu %x : tensor<2x?xf32>
  %7 = kiln.sigmoid %x : tensor<2x?xf32>
  %8 = kiln.hard_swish %x : tensor<2x?xf32>
  %9 = kiln.tanh %x : tensor<2x?xf32>
  %10 = kiln.erf %x : tensor<2x?xf32>
  %11 = kiln.softplus %x : tensor<2x?xf32>
  %12 = kiln.softsign %x : tensor<2x?xf32>
  %13 = kiln.mish %x : tensor<2x?xf32>
  %14 = kiln.sin %x : tensor<2x?xf32>
  %15 = kiln.cos %x : tensor<2x?xf32>
  %16 = kiln.tan %x : tensor<2x?xf32>
  %17 = kiln.asin %x : tensor<2x?xf32>
  %18 = kiln.acos %x : tensor<2x?xf32>
  %19 = kiln.atan %x : tensor<2x?xf32>
  %20 = kiln.sinh %x : tensor<2x?xf32>
  %21 = kiln.cosh %x : tensor<2x?xf32>
  %22 = kiln.asinh %x : tensor<2x?xf32>
  %23 = kiln.acosh %x : tensor<2x?xf32>
  %24 = kiln.atanh %x : tensor<2x?xf32>
  %25 = kiln.floor %x : tensor<2x?xf32>
  %26 = kiln.ceil %x : tensor<2x?xf32>
  %27 = kiln.round %x : tensor<2x?xf32>
  %28 = kiln.sign %x : tensor<2x?xf32>
  %29 = kiln.identity %x : tensor<2x?xf32>
  %30 = kiln.leaky_relu %x : tensor<2x?xf32>
  %31 = kiln.hard_sigmoid %x : tensor<2x?xf32>
  %32 = kiln.elu %x : tensor<2x?xf32>
  %33 = kiln.selu %x : tensor<2x?xf32>
  %34 = kiln.celu %x : tensor<2x?xf32>
  %35 = kiln.thresholded_relu %x : tensor<2x?xf32>
  %36 = kiln.gelu %x : tensor<2x?xf32>
  %37 = kiln.shrink %x : tensor<2x?xf32>
  return %37 : tensor<2x?xf32>
}

// -----

// CHECK-LABEL: func.func @unary_int
// CHECK: kiln.abs %{{.+}} : tensor<?x4xui8>
// CHECK: kiln.neg %{{.+}} : tensor<?x4xi32>
// CHECK: kiln.relu %{{.+}} : tensor<?x4xi64>
// CHECK: kiln.sign %{{.+}} : tensor<?x4xi16>
// CHECK: kiln.erf %{{.+}} : tensor<?x4xi32>
// CHECK: kiln.identity %{{.+}} : tensor<?x4xi1>
// CHECK: kiln.shrink %{{.+}} : tensor<?x4xi8>
// CHECK: kiln.bitwise_not %{{.+}} : tensor<?x4xui16>
// CHECK: kiln.not %{{.+}} : tensor<?x4xi1>
func.func @unary_int(%xi1: tensor<?x4xi1>, %xi16: tensor<?x4xi16>, %xi32: tensor<?x4xi32>, %xi64: tensor<?x4xi64>, %xi8: tensor<?x4xi8>, %xui16: tensor<?x4xui16>, %xui8: tensor<?x4xui8>) {
  %0 = kiln.abs %xui8 : tensor<?x4xui8>
  %1 = kiln.neg %xi32 : tensor<?x4xi32>
  %2 = kiln.relu %xi64 : tensor<?x4xi64>
  %3 = kiln.sign %xi16 : tensor<?x4xi16>
  %4 = kiln.erf %xi32 : tensor<?x4xi32>
  %5 = kiln.identity %xi1 : tensor<?x4xi1>
  %6 = kiln.shrink %xi8 : tensor<?x4xi8>
  %7 = kiln.bitwise_not %xui16 : tensor<?x4xui16>
  %8 = kiln.not %xi1 : tensor<?x4xi1>
  return
}

// -----
// Attributes: non-default values print, ONNX defaults are elided.
// CHECK-LABEL: func.func @unary_attributes
// CHECK: kiln.leaky_relu %{{.+}} {alpha = 1.000000e-01 : f32} : tensor<4xf32>
// CHECK: kiln.leaky_relu %{{.+}} : tensor<4xf32>
// CHECK: kiln.hard_sigmoid %{{.+}} {alpha = 1.000000e+00 : f32, beta = 0.000000e+00 : f32} : tensor<4xf32>
// CHECK: kiln.elu %{{.+}} {alpha = 2.000000e+00 : f32} : tensor<4xf32>
// CHECK: kiln.selu %{{.+}} : tensor<4xf32>
// CHECK: kiln.selu %{{.+}} {gamma = 2.000000e+00 : f32} : tensor<4xf32>
// CHECK: kiln.celu %{{.+}} {alpha = 5.000000e-01 : f32} : tensor<4xf32>
// CHECK: kiln.thresholded_relu %{{.+}} {alpha = 3.000000e+00 : f32} : tensor<4xf32>
// CHECK: kiln.gelu %{{.+}} {approximate = "tanh"} : tensor<4xf32>
// CHECK: kiln.gelu %{{.+}} : tensor<4xf32>
// CHECK: kiln.shrink %{{.+}} {bias = 1.000000e+00 : f32, lambd = 2.000000e+00 : f32} : tensor<4xf32>
func.func @unary_attributes(%x: tensor<4xf32>) {
  %0 = kiln.leaky_relu %x {alpha = 0.1 : f32} : tensor<4xf32>
  %1 = kiln.leaky_relu %x {alpha = 0.01 : f32} : tensor<4xf32>
  %2 = kiln.hard_sigmoid %x {alpha = 1.0 : f32, beta = 0.0 : f32} : tensor<4xf32>
  %3 = kiln.elu %x {alpha = 2.0 : f32} : tensor<4xf32>
  %4 = kiln.selu %x {alpha = 1.67326319217681884765625 : f32} : tensor<4xf32>
  %5 = kiln.selu %x {gamma = 2.0 : f32} : tensor<4xf32>
  %6 = kiln.celu %x {alpha = 0.5 : f32} : tensor<4xf32>
  %7 = kiln.thresholded_relu %x {alpha = 3.0 : f32} : tensor<4xf32>
  %8 = kiln.gelu %x {approximate = "tanh"} : tensor<4xf32>
  %9 = kiln.gelu %x {approximate = "none"} : tensor<4xf32>
  %10 = kiln.shrink %x {bias = 1.0 : f32, lambd = 2.0 : f32} : tensor<4xf32>
  return
}

// -----

// CHECK-LABEL: func.func @predicates
// CHECK: kiln.is_nan %{{.+}} : (tensor<?x3xf16>) -> tensor<?x3xi1>
// CHECK: kiln.is_inf %{{.+}} {detect_negative = 0 : i64} : (tensor<?x3xf16>) -> tensor<?x3xi1>
// CHECK: kiln.is_inf %{{.+}} : (tensor<?x3xf16>) -> tensor<2x3xi1>
func.func @predicates(%x: tensor<?x3xf16>) {
  %0 = kiln.is_nan %x : (tensor<?x3xf16>) -> tensor<?x3xi1>
  %1 = kiln.is_inf %x {detect_negative = 0, detect_positive = 1} : (tensor<?x3xf16>) -> tensor<?x3xi1>
  // A declared type may refine a dynamic dim.
  %2 = kiln.is_inf %x : (tensor<?x3xf16>) -> tensor<2x3xi1>
  return
}

// -----

// CHECK-LABEL: func.func @clip
// CHECK: %[[NONE:.+]] = kiln.none
// CHECK: kiln.clip %{{.+}}, %[[NONE]], %[[NONE]] : (tensor<2x?xf32>, none, none) -> tensor<2x?xf32>
// CHECK: kiln.clip %{{.+}}, %{{.+}}, %[[NONE]] : (tensor<2x?xf32>, tensor<f32>, none) -> tensor<2x?xf32>
// CHECK: kiln.clip %{{.+}}, %[[NONE]], %{{.+}} : (tensor<2x?xf32>, none, tensor<1xf32>) -> tensor<2x?xf32>
// CHECK: kiln.clip %{{.+}}, %{{.+}}, %{{.+}} : (tensor<8xi8>, tensor<i8>, tensor<i8>) -> tensor<8xi8>
func.func @clip(%x: tensor<2x?xf32>, %lo: tensor<f32>, %hi: tensor<1xf32>,
                %i: tensor<8xi8>, %ilo: tensor<i8>) {
  %none = kiln.none
  %0 = kiln.clip %x, %none, %none : (tensor<2x?xf32>, none, none) -> tensor<2x?xf32>
  %1 = kiln.clip %x, %lo, %none : (tensor<2x?xf32>, tensor<f32>, none) -> tensor<2x?xf32>
  %2 = kiln.clip %x, %none, %hi : (tensor<2x?xf32>, none, tensor<1xf32>) -> tensor<2x?xf32>
  %3 = kiln.clip %i, %ilo, %ilo : (tensor<8xi8>, tensor<i8>, tensor<i8>) -> tensor<8xi8>
  return
}

// -----

// CHECK-LABEL: func.func @cast
// CHECK: kiln.cast %{{.+}} {to = i64} : (tensor<2x?xf32>) -> tensor<2x?xi64>
// CHECK: kiln.cast %{{.+}} {saturate = 0 : i64, to = f16} : (tensor<2x?xf32>) -> tensor<2x?xf16>
// CHECK: kiln.cast %{{.+}} {to = i1} : (tensor<2x?xf32>) -> tensor<2x?xi1>
// CHECK: kiln.cast %{{.+}} {to = ui8} : (tensor<2x?xf32>) -> tensor<2x?xui8>
// CHECK: kiln.cast_like %{{.+}}, %{{.+}} : (tensor<2x?xf32>, tensor<1xbf16>) -> tensor<2x?xbf16>
func.func @cast(%x: tensor<2x?xf32>, %t: tensor<1xbf16>) {
  %0 = kiln.cast %x {to = i64} : (tensor<2x?xf32>) -> tensor<2x?xi64>
  %1 = kiln.cast %x {to = f16, saturate = 0} : (tensor<2x?xf32>) -> tensor<2x?xf16>
  %2 = kiln.cast %x {to = i1} : (tensor<2x?xf32>) -> tensor<2x?xi1>
  %3 = kiln.cast %x {to = ui8} : (tensor<2x?xf32>) -> tensor<2x?xui8>
  %4 = kiln.cast_like %x, %t : (tensor<2x?xf32>, tensor<1xbf16>) -> tensor<2x?xbf16>
  return
}

// -----

// CHECK-LABEL: func.func @arithmetic
// CHECK: kiln.add %{{.+}}, %{{.+}} : (tensor<2x?xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK: kiln.sub %{{.+}}, %{{.+}} : (tensor<3xf32>, tensor<2x?xf32>) -> tensor<2x3xf32>
// CHECK: kiln.mul %{{.+}}, %{{.+}} : (tensor<2x?xf32>, tensor<f32>) -> tensor<2x?xf32>
// CHECK: kiln.div %{{.+}}, %{{.+}} : (tensor<?x1x5xi32>, tensor<4x1xi32>) -> tensor<?x4x5xi32>
// CHECK: kiln.mod %{{.+}}, %{{.+}} : (tensor<?x1x5xi32>, tensor<4x1xi32>) -> tensor<?x4x5xi32>
// CHECK: kiln.mod %{{.+}}, %{{.+}} {fmod = 1 : i64} : (tensor<2x?xf32>, tensor<f32>) -> tensor<2x?xf32>
// CHECK: kiln.pow %{{.+}}, %{{.+}} : (tensor<2x?xf32>, tensor<i64>) -> tensor<2x?xf32>
// CHECK: kiln.pow %{{.+}}, %{{.+}} : (tensor<?x1x5xi32>, tensor<3x1xf16>) -> tensor<?x3x5xi32>
// CHECK: kiln.add %{{.+}}, %{{.+}} : (tensor<?xui16>, tensor<?xui16>) -> tensor<?xui16>
func.func @arithmetic(%a: tensor<2x?xf32>, %b: tensor<3xf32>, %s: tensor<f32>,
                      %i: tensor<?x1x5xi32>, %j: tensor<4x1xi32>, %e: tensor<i64>,
                      %h: tensor<3x1xf16>, %u: tensor<?xui16>) {
  %0 = kiln.add %a, %b : (tensor<2x?xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = kiln.sub %b, %a : (tensor<3xf32>, tensor<2x?xf32>) -> tensor<2x3xf32>
  %2 = kiln.mul %a, %s : (tensor<2x?xf32>, tensor<f32>) -> tensor<2x?xf32>
  %3 = kiln.div %i, %j : (tensor<?x1x5xi32>, tensor<4x1xi32>) -> tensor<?x4x5xi32>
  %4 = kiln.mod %i, %j {fmod = 0} : (tensor<?x1x5xi32>, tensor<4x1xi32>) -> tensor<?x4x5xi32>
  %5 = kiln.mod %a, %s {fmod = 1} : (tensor<2x?xf32>, tensor<f32>) -> tensor<2x?xf32>
  %6 = kiln.pow %a, %e : (tensor<2x?xf32>, tensor<i64>) -> tensor<2x?xf32>
  %7 = kiln.pow %i, %h : (tensor<?x1x5xi32>, tensor<3x1xf16>) -> tensor<?x3x5xi32>
  %8 = kiln.add %u, %u : (tensor<?xui16>, tensor<?xui16>) -> tensor<?xui16>
  return
}

// -----

// CHECK-LABEL: func.func @variadic
// CHECK: kiln.max %{{.+}} : (tensor<2x?xf32>) -> tensor<2x?xf32>
// CHECK: kiln.min %{{.+}}, %{{.+}} : (tensor<2x?xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK: kiln.sum %{{.+}}, %{{.+}}, %{{.+}} : (tensor<2x?xf32>, tensor<3xf32>, tensor<1x1xf32>) -> tensor<2x3xf32>
// CHECK: kiln.mean %{{.+}}, %{{.+}} : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
// CHECK: kiln.max %{{.+}}, %{{.+}} : (tensor<4xui8>, tensor<1xui8>) -> tensor<4xui8>
func.func @variadic(%a: tensor<2x?xf32>, %b: tensor<3xf32>, %c: tensor<1x1xf32>,
                    %s: tensor<f32>, %u: tensor<4xui8>, %v: tensor<1xui8>) {
  %0 = kiln.max %a : (tensor<2x?xf32>) -> tensor<2x?xf32>
  %1 = kiln.min %a, %b : (tensor<2x?xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %2 = kiln.sum %a, %b, %c : (tensor<2x?xf32>, tensor<3xf32>, tensor<1x1xf32>) -> tensor<2x3xf32>
  %3 = kiln.mean %b, %s : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %4 = kiln.max %u, %v : (tensor<4xui8>, tensor<1xui8>) -> tensor<4xui8>
  return
}

// -----

// CHECK-LABEL: func.func @comparisons
// CHECK: kiln.equal %{{.+}}, %{{.+}} : (tensor<2x?xf32>, tensor<3xf32>) -> tensor<2x3xi1>
// CHECK: kiln.equal %{{.+}}, %{{.+}} : (tensor<?xi1>, tensor<?xi1>) -> tensor<?xi1>
// CHECK: kiln.less %{{.+}}, %{{.+}} : (tensor<2x?xf32>, tensor<3xf32>) -> tensor<2x3xi1>
// CHECK: kiln.less_or_equal %{{.+}}, %{{.+}} : (tensor<2x?xf32>, tensor<3xf32>) -> tensor<2x3xi1>
// CHECK: kiln.greater %{{.+}}, %{{.+}} : (tensor<2x?xf32>, tensor<3xf32>) -> tensor<2x3xi1>
// CHECK: kiln.greater_or_equal %{{.+}}, %{{.+}} : (tensor<?x4xi64>, tensor<i64>) -> tensor<?x4xi1>
func.func @comparisons(%a: tensor<2x?xf32>, %b: tensor<3xf32>, %p: tensor<?xi1>,
                       %i: tensor<?x4xi64>, %j: tensor<i64>) {
  %0 = kiln.equal %a, %b : (tensor<2x?xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %1 = kiln.equal %p, %p : (tensor<?xi1>, tensor<?xi1>) -> tensor<?xi1>
  %2 = kiln.less %a, %b : (tensor<2x?xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %3 = kiln.less_or_equal %a, %b : (tensor<2x?xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %4 = kiln.greater %a, %b : (tensor<2x?xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %5 = kiln.greater_or_equal %i, %j : (tensor<?x4xi64>, tensor<i64>) -> tensor<?x4xi1>
  return
}

// -----

// CHECK-LABEL: func.func @logic_and_bits
// CHECK: kiln.and %{{.+}}, %{{.+}} : (tensor<?x1xi1>, tensor<3xi1>) -> tensor<?x3xi1>
// CHECK: kiln.or %{{.+}}, %{{.+}} : (tensor<?x1xi1>, tensor<3xi1>) -> tensor<?x3xi1>
// CHECK: kiln.xor %{{.+}}, %{{.+}} : (tensor<?x1xi1>, tensor<3xi1>) -> tensor<?x3xi1>
// CHECK: kiln.bit_shift %{{.+}}, %{{.+}} {direction = "LEFT"} : (tensor<4xui8>, tensor<ui8>) -> tensor<4xui8>
// CHECK: kiln.bit_shift %{{.+}}, %{{.+}} {direction = "RIGHT"} : (tensor<4xui8>, tensor<ui8>) -> tensor<4xui8>
// CHECK: kiln.bitwise_and %{{.+}}, %{{.+}} : (tensor<2x?xi32>, tensor<?xi32>) -> tensor<2x?xi32>
// CHECK: kiln.bitwise_or %{{.+}}, %{{.+}} : (tensor<2x?xi32>, tensor<?xi32>) -> tensor<2x?xi32>
// CHECK: kiln.bitwise_xor %{{.+}}, %{{.+}} : (tensor<2x?xi32>, tensor<?xi32>) -> tensor<2x?xi32>
func.func @logic_and_bits(%p: tensor<?x1xi1>, %q: tensor<3xi1>, %u: tensor<4xui8>,
                          %s: tensor<ui8>, %i: tensor<2x?xi32>, %j: tensor<?xi32>) {
  %0 = kiln.and %p, %q : (tensor<?x1xi1>, tensor<3xi1>) -> tensor<?x3xi1>
  %1 = kiln.or %p, %q : (tensor<?x1xi1>, tensor<3xi1>) -> tensor<?x3xi1>
  %2 = kiln.xor %p, %q : (tensor<?x1xi1>, tensor<3xi1>) -> tensor<?x3xi1>
  %3 = kiln.bit_shift %u, %s {direction = "LEFT"} : (tensor<4xui8>, tensor<ui8>) -> tensor<4xui8>
  %4 = kiln.bit_shift %u, %s {direction = "RIGHT"} : (tensor<4xui8>, tensor<ui8>) -> tensor<4xui8>
  %5 = kiln.bitwise_and %i, %j : (tensor<2x?xi32>, tensor<?xi32>) -> tensor<2x?xi32>
  %6 = kiln.bitwise_or %i, %j : (tensor<2x?xi32>, tensor<?xi32>) -> tensor<2x?xi32>
  %7 = kiln.bitwise_xor %i, %j : (tensor<2x?xi32>, tensor<?xi32>) -> tensor<2x?xi32>
  return
}

// -----

// CHECK-LABEL: func.func @where_and_prelu
// CHECK: kiln.where %{{.+}}, %{{.+}}, %{{.+}} : (tensor<2x1xi1>, tensor<3xf32>, tensor<f32>) -> tensor<2x3xf32>
// CHECK: kiln.where %{{.+}}, %{{.+}}, %{{.+}} : (tensor<?x1x1xi1>, tensor<3xf32>, tensor<4x1xf32>) -> tensor<?x4x3xf32>
// CHECK: kiln.prelu %{{.+}}, %{{.+}} : (tensor<1x3x?x?xf32>, tensor<3x1x1xf32>) -> tensor<1x3x?x?xf32>
// CHECK: kiln.prelu %{{.+}}, %{{.+}} : (tensor<1x3x?x?xf32>, tensor<f32>) -> tensor<1x3x?x?xf32>
func.func @where_and_prelu(%c: tensor<2x1xi1>, %a: tensor<3xf32>, %s: tensor<f32>,
                           %d: tensor<?x1x1xi1>, %b: tensor<4x1xf32>,
                           %x: tensor<1x3x?x?xf32>, %slope: tensor<3x1x1xf32>) {
  %0 = kiln.where %c, %a, %s : (tensor<2x1xi1>, tensor<3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %1 = kiln.where %d, %a, %b : (tensor<?x1x1xi1>, tensor<3xf32>, tensor<4x1xf32>) -> tensor<?x4x3xf32>
  %2 = kiln.prelu %x, %slope : (tensor<1x3x?x?xf32>, tensor<3x1x1xf32>) -> tensor<1x3x?x?xf32>
  %3 = kiln.prelu %x, %s : (tensor<1x3x?x?xf32>, tensor<f32>) -> tensor<1x3x?x?xf32>
  return
}
