// RUN: kiln-opt %s -split-input-file -kiln-constant-fold | FileCheck %s
// kiln-constant-fold on elementwise ops: general (non-splat) constants with
// numpy broadcasting, ONNX numerics (float32 arithmetic, integer
// wrap-around, truncating integer division), and what must stay.

// f32 arithmetic in float: 0.1f + 0.2f is float(0.3), 6 + 0.2f is 6.1999998.
// CHECK-LABEL: func.func @broadcast_add_f32
// CHECK: %[[C:.+]] = kiln.constant dense<{{\[}}[1.700000e+00, -1.500000e+00, 3.000000e-01], [4.200000e+00, 5.500000e+00, 6.1999998]]> : tensor<2x3xf32>
// CHECK-NOT: kiln.add
// CHECK: return %[[C]]
func.func @broadcast_add_f32() -> tensor<2x3xf32> {
  %a = kiln.constant dense<[[1.5, -2.0, 0.1], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %b = kiln.constant dense<[0.2, 0.5, 0.2]> : tensor<3xf32>
  %0 = kiln.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Both operands broadcast: [2x1] - [3] -> [2x3]; and Mul, Div in f32.
// CHECK-LABEL: func.func @multidirectional
// CHECK-DAG: %[[S:.+]] = kiln.constant dense<{{\[}}[0, -1, -2], [10, 9, 8]]> : tensor<2x3xi64>
// CHECK-DAG: %[[M:.+]] = kiln.constant dense<{{\[}}[3.000000e+00], [7.500000e+00]]> : tensor<2x1xf32>
// CHECK-DAG: %[[D:.+]] = kiln.constant dense<[0.333333343, 2.500000e-01]> : tensor<2xf32>
// CHECK: return %[[S]], %[[M]], %[[D]]
func.func @multidirectional() -> (tensor<2x3xi64>, tensor<2x1xf32>, tensor<2xf32>) {
  %a = kiln.constant dense<[[1], [11]]> : tensor<2x1xi64>
  %b = kiln.constant dense<[1, 2, 3]> : tensor<3xi64>
  %0 = kiln.sub %a, %b : (tensor<2x1xi64>, tensor<3xi64>) -> tensor<2x3xi64>
  %x = kiln.constant dense<[[2.0], [5.0]]> : tensor<2x1xf32>
  %y = kiln.constant dense<1.5> : tensor<f32>
  %1 = kiln.mul %x, %y : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %q = kiln.constant dense<[3.0, 4.0]> : tensor<2xf32>
  %2 = kiln.div %one, %q : (tensor<f32>, tensor<2xf32>) -> tensor<2xf32>
  return %0, %1, %2 : tensor<2x3xi64>, tensor<2x1xf32>, tensor<2xf32>
}

// -----

// Integers wrap around (65535 * 65534 in i32, 0 - 1 in ui8); Div truncates
// toward zero (-7 / 2 = -3); Mod takes the divisor's sign, fmod = 1 the
// dividend's.
// CHECK-LABEL: func.func @integer_numerics
// CHECK-DAG: %[[A:.+]] = kiln.constant dense<[-56, 127, 10]> : tensor<3xi8>
// CHECK-DAG: %[[D:.+]] = kiln.constant dense<[-3, 3, -4, 1073741823]> : tensor<4xi32>
// CHECK-DAG: %[[M:.+]] = kiln.constant dense<[0, -196606]> : tensor<2xi32>
// CHECK-DAG: %[[U:.+]] = kiln.constant dense<[255, 100]> : tensor<2xui8>
// CHECK-DAG: %[[R:.+]] = kiln.constant dense<[1, 2, -2, -1]> : tensor<4xi32>
// CHECK-DAG: %[[F:.+]] = kiln.constant dense<[1, -1, 1, -1]> : tensor<4xi32>
// CHECK: return %[[A]], %[[D]], %[[M]], %[[U]], %[[R]], %[[F]]
func.func @integer_numerics() -> (tensor<3xi8>, tensor<4xi32>, tensor<2xi32>, tensor<2xui8>, tensor<4xi32>, tensor<4xi32>) {
  %i = kiln.constant dense<[100, -128, 7]> : tensor<3xi8>
  %j = kiln.constant dense<[100, -1, 3]> : tensor<3xi8>
  %0 = kiln.add %i, %j : (tensor<3xi8>, tensor<3xi8>) -> tensor<3xi8>
  %n = kiln.constant dense<[-7, 7, -8, 2147483647]> : tensor<4xi32>
  %two = kiln.constant dense<2> : tensor<i32>
  %1 = kiln.div %n, %two : (tensor<4xi32>, tensor<i32>) -> tensor<4xi32>
  %big = kiln.constant dense<[65536, 65535]> : tensor<2xi32>
  %k = kiln.constant dense<[65536, 65534]> : tensor<2xi32>
  %2 = kiln.mul %big, %k : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  %u = kiln.constant dense<[0, 200]> : tensor<2xui8>
  %v = kiln.constant dense<[1, 100]> : tensor<2xui8>
  %3 = kiln.sub %u, %v : (tensor<2xui8>, tensor<2xui8>) -> tensor<2xui8>
  %m = kiln.constant dense<[7, -7, 7, -7]> : tensor<4xi32>
  %md = kiln.constant dense<[3, 3, -3, -3]> : tensor<4xi32>
  %4 = kiln.mod %m, %md {fmod = 0 : i64} : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  %5 = kiln.mod %m, %md {fmod = 1 : i64} : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return %0, %1, %2, %3, %4, %5 : tensor<3xi8>, tensor<4xi32>, tensor<2xi32>, tensor<2xui8>, tensor<4xi32>, tensor<4xi32>
}

// -----

// Integer division by zero is undefined: not folded.
// CHECK-LABEL: func.func @division_by_zero_stays
// CHECK: kiln.div
// CHECK: kiln.mod
func.func @division_by_zero_stays() -> (tensor<2xi32>, tensor<2xi32>) {
  %a = kiln.constant dense<[5, 6]> : tensor<2xi32>
  %b = kiln.constant dense<[1, 0]> : tensor<2xi32>
  %0 = kiln.div %a, %b : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  %1 = kiln.mod %a, %b : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  return %0, %1 : tensor<2xi32>, tensor<2xi32>
}

// -----

// A non-constant operand: nothing to fold.
// CHECK-LABEL: func.func @non_constant_stays
// CHECK: kiln.mul %{{.+}}, %{{.+}} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
// CHECK: kiln.exp
func.func @non_constant_stays(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %b = kiln.constant dense<[0.2, 0.5, 0.2]> : tensor<3xf32>
  %0 = kiln.mul %x, %b : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %1 = kiln.exp %x : tensor<3xf32>
  return %0, %1 : tensor<3xf32>, tensor<3xf32>
}

// -----

// Unary math, Pow (x^2 as x*x, as ONNX Runtime), Max/Min/Sum/Mean.
// CHECK-LABEL: func.func @unary_and_variadic
// CHECK-DAG: %[[SQ:.+]] = kiln.constant dense<[2.000000e+00, 1.41421354, 0.000000e+00]> : tensor<3xf32>
// CHECK-DAG: %[[NG:.+]] = kiln.constant dense<[-4.000000e+00, -2.000000e+00, -0.000000e+00]> : tensor<3xf32>
// CHECK-DAG: %[[RL:.+]] = kiln.constant dense<[0.000000e+00, 3.000000e+00]> : tensor<2xf32>
// CHECK-DAG: %[[PW:.+]] = kiln.constant dense<[1.600000e+01, 4.000000e+00, 0.000000e+00]> : tensor<3xf32>
// CHECK-DAG: %[[MX:.+]] = kiln.constant dense<[4.000000e+00, 3.000000e+00, 1.000000e+00]> : tensor<3xf32>
// CHECK-DAG: %[[MN:.+]] = kiln.constant dense<[-1, 2]> : tensor<2xi64>
// CHECK-DAG: %[[ME:.+]] = kiln.constant dense<[2.500000e+00, 2.500000e+00, 5.000000e-01]> : tensor<3xf32>
// CHECK-DAG: %[[AB:.+]] = kiln.constant dense<[1, 128]> : tensor<2xi64>
// CHECK: return %[[SQ]], %[[NG]], %[[RL]], %[[PW]], %[[MX]], %[[MN]], %[[ME]], %[[AB]]
func.func @unary_and_variadic() -> (tensor<3xf32>, tensor<3xf32>, tensor<2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2xi64>, tensor<3xf32>, tensor<2xi64>) {
  %x = kiln.constant dense<[4.0, 2.0, 0.0]> : tensor<3xf32>
  %0 = kiln.sqrt %x : tensor<3xf32>
  %1 = kiln.neg %x : tensor<3xf32>
  %r = kiln.constant dense<[-1.0, 3.0]> : tensor<2xf32>
  %2 = kiln.relu %r : tensor<2xf32>
  %e = kiln.constant dense<2.0> : tensor<f32>
  %3 = kiln.pow %x, %e : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %y = kiln.constant dense<[1.0, 3.0, 1.0]> : tensor<3xf32>
  %4 = kiln.max %x, %y : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %i = kiln.constant dense<[-1, 5]> : tensor<2xi64>
  %j = kiln.constant dense<[3, 2]> : tensor<2xi64>
  %5 = kiln.min %i, %j : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
  %6 = kiln.mean %x, %y : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %k = kiln.constant dense<[-1, -128]> : tensor<2xi64>
  %7 = kiln.abs %k : tensor<2xi64>
  return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<3xf32>, tensor<3xf32>, tensor<2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2xi64>, tensor<3xf32>, tensor<2xi64>
}

// -----

// Comparisons and logic give i1 (NaN compares false); Where selects with
// broadcasting. And/Not results equal to earlier constants are merged.
// CHECK-LABEL: func.func @compare_logic_where
// CHECK-DAG: %[[EQ:.+]] = kiln.constant dense<[true, false, false]> : tensor<3xi1>
// CHECK-DAG: %[[LT:.+]] = kiln.constant dense<[false, true, false]> : tensor<3xi1>
// CHECK-DAG: %[[GT:.+]] = kiln.constant dense<[false, false, true]> : tensor<3xi1>
// CHECK-DAG: %[[NAN:.+]] = kiln.constant dense<false> : tensor<2xi1>
// CHECK-DAG: %[[W:.+]] = kiln.constant dense<{{\[}}[1.000000e+00, 9.000000e+00, 9.000000e+00], [2.000000e+00, 9.000000e+00, 9.000000e+00]]> : tensor<2x3xf32>
// CHECK-NOT: kiln.and
// CHECK-NOT: kiln.not
// CHECK: return %[[EQ]], %[[LT]], %[[GT]], %[[NAN]], %[[GT]], %[[EQ]], %[[W]]
func.func @compare_logic_where() -> (tensor<3xi1>, tensor<3xi1>, tensor<3xi1>, tensor<2xi1>, tensor<3xi1>, tensor<3xi1>, tensor<2x3xf32>) {
  %a = kiln.constant dense<[1, 2, 3]> : tensor<3xi64>
  %b = kiln.constant dense<[1, 5, -3]> : tensor<3xi64>
  %0 = kiln.equal %a, %b : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi1>
  %1 = kiln.less %a, %b : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi1>
  %2 = kiln.greater %a, %b : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi1>
  %n = kiln.constant dense<[0x7FC00000, 1.0]> : tensor<2xf32>
  %m = kiln.constant dense<[0x7FC00000, 2.0]> : tensor<2xf32>
  %3 = kiln.greater_or_equal %n, %m : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xi1>
  %p = kiln.constant dense<[true, false, true]> : tensor<3xi1>
  %4 = kiln.and %p, %2 : (tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
  %5 = kiln.not %4 : tensor<3xi1>
  %6 = kiln.and %5, %0 : (tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
  %x = kiln.constant dense<[[1.0], [2.0]]> : tensor<2x1xf32>
  %y = kiln.constant dense<9.0> : tensor<f32>
  %7 = kiln.where %6, %x, %y : (tensor<3xi1>, tensor<2x1xf32>, tensor<f32>) -> tensor<2x3xf32>
  return %0, %1, %2, %3, %4, %6, %7 : tensor<3xi1>, tensor<3xi1>, tensor<3xi1>, tensor<2xi1>, tensor<3xi1>, tensor<3xi1>, tensor<2x3xf32>
}

// -----

// Cast: float to int truncates toward zero (as ONNX Runtime's static_cast);
// float to f16 rounds to nearest, ties to even (1 + 2^-11 -> 1, 1 + 3 * 2^-11
// -> 1 + 2^-9); int to float rounds once (16777217 -> 2^24, 0x4B800000);
// out-of-range ints wrap (300 -> 44); numbers to bool are x != 0.
// CHECK-LABEL: func.func @cast
// CHECK-DAG: %[[I:.+]] = kiln.constant dense<[-2, 2, 0, -128]> : tensor<4xi8>
// CHECK-DAG: %[[H:.+]] = kiln.constant dense<[1.000000e+00, 1.001950e+00, 6.550400e+04]> : tensor<3xf16>
// CHECK-DAG: %[[F:.+]] = kiln.constant dense<[1.000000e+00, 0x4B800000, -1.000000e+00]> : tensor<3xf32>
// CHECK-DAG: %[[B:.+]] = kiln.constant dense<[true, false, true]> : tensor<3xi1>
// CHECK-DAG: %[[W:.+]] = kiln.constant dense<[-1, 44]> : tensor<2xi8>
// CHECK: return %[[I]], %[[H]], %[[F]], %[[B]], %[[W]]
func.func @cast() -> (tensor<4xi8>, tensor<3xf16>, tensor<3xf32>, tensor<3xi1>, tensor<2xi8>) {
  %f = kiln.constant dense<[-2.7, 2.7, -0.5, -128.9]> : tensor<4xf32>
  %0 = kiln.cast %f {to = i8} : (tensor<4xf32>) -> tensor<4xi8>
  %g = kiln.constant dense<[1.00048828125, 1.00146484375, 65504.0]> : tensor<3xf32>
  %1 = kiln.cast %g {to = f16} : (tensor<3xf32>) -> tensor<3xf16>
  %i = kiln.constant dense<[1, 16777217, -1]> : tensor<3xi64>
  %2 = kiln.cast %i {to = f32} : (tensor<3xi64>) -> tensor<3xf32>
  %b = kiln.constant dense<[0.5, 0.0, 0x7FC00000]> : tensor<3xf32>
  %3 = kiln.cast %b {to = i1} : (tensor<3xf32>) -> tensor<3xi1>
  %w = kiln.constant dense<[255, 300]> : tensor<2xi32>
  %4 = kiln.cast %w {to = i8} : (tensor<2xi32>) -> tensor<2xi8>
  return %0, %1, %2, %3, %4 : tensor<4xi8>, tensor<3xf16>, tensor<3xf32>, tensor<3xi1>, tensor<2xi8>
}

// -----

// Out-of-range and NaN float-to-int casts are undefined: not folded.
// CHECK-LABEL: func.func @cast_out_of_range_stays
// CHECK: kiln.cast
// CHECK: kiln.cast
func.func @cast_out_of_range_stays() -> (tensor<2xi32>, tensor<2xui8>) {
  %f = kiln.constant dense<[1.0, 3.0e9]> : tensor<2xf32>
  %0 = kiln.cast %f {to = i32} : (tensor<2xf32>) -> tensor<2xi32>
  %g = kiln.constant dense<[1.0, 0x7FC00000]> : tensor<2xf32>
  %1 = kiln.cast %g {to = ui8} : (tensor<2xf32>) -> tensor<2xui8>
  return %0, %1 : tensor<2xi32>, tensor<2xui8>
}

// -----

// dense_resource operands are read from their blobs; a large result is a
// dense_resource blob too.
// CHECK-LABEL: func.func @dense_resource_operands
// CHECK-DAG: %[[S:.+]] = kiln.constant dense<[2.000000e+00, 3.000000e+00, 4.000000e+00, 5.000000e+00]> : tensor<4xf32>
// CHECK-DAG: %[[B:.+]] = kiln.constant dense_resource<{{.+}}> : tensor<256xf32>
// CHECK: return %[[S]], %[[B]]
func.func @dense_resource_operands() -> (tensor<4xf32>, tensor<256xf32>) {
  %r = kiln.constant dense_resource<four_floats> : tensor<4xf32>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %0 = kiln.add %r, %one : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %shape = kiln.constant dense<[64, 4]> : tensor<2xi64>
  %e = kiln.expand %0, %shape : (tensor<4xf32>, tensor<2xi64>) -> tensor<64x4xf32>
  %flat = kiln.constant dense<256> : tensor<1xi64>
  %1 = kiln.reshape %e, %flat : (tensor<64x4xf32>, tensor<1xi64>) -> tensor<256xf32>
  return %0, %1 : tensor<4xf32>, tensor<256xf32>
}

{-#
  dialect_resources: {
    builtin: {
      four_floats: "0x040000000000803F000000400000404000008040"
    }
  }
#-}

// -----

// bf16 rounds to nearest even after the float add (1 + 2^-8 -> 1); f64 is
// computed in double (0.1 + 0.2 is not 0.3).
// CHECK-LABEL: func.func @bf16_and_f64
// CHECK-DAG: %[[B:.+]] = kiln.constant dense<[1.000000e+00, 6.000000e+00]> : tensor<2xbf16>
// CHECK-DAG: %[[D:.+]] = kiln.constant dense<[0.30000000000000004, 4.000000e+00]> : tensor<2xf64>
// CHECK: return %[[B]], %[[D]]
func.func @bf16_and_f64() -> (tensor<2xbf16>, tensor<2xf64>) {
  %a = kiln.constant dense<[1.0, 3.0]> : tensor<2xbf16>
  %b = kiln.constant dense<[0.00390625, 3.0]> : tensor<2xbf16>
  %0 = kiln.add %a, %b : (tensor<2xbf16>, tensor<2xbf16>) -> tensor<2xbf16>
  %c = kiln.constant dense<[0.1, 1.0]> : tensor<2xf64>
  %d = kiln.constant dense<[0.2, 3.0]> : tensor<2xf64>
  %1 = kiln.add %c, %d : (tensor<2xf64>, tensor<2xf64>) -> tensor<2xf64>
  return %0, %1 : tensor<2xbf16>, tensor<2xf64>
}

// -----

// A dense_resource whose blob is not in the IR (printed without
// --keep-constants) has unknown contents: left alone.
// CHECK-LABEL: func.func @elided_blob_stays
// CHECK: kiln.add
func.func @elided_blob_stays() -> tensor<4xf32> {
  %r = kiln.constant dense_resource<not_loaded> : tensor<4xf32>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %0 = kiln.add %r, %one : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
