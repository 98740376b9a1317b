// RUN: kiln-opt %s -split-input-file -canonicalize | FileCheck %s

// CHECK-LABEL: func.func @identities
// CHECK-SAME: (%[[X:.+]]: tensor<2x?xf32>, %[[P:.+]]: tensor<4xi1>)
// CHECK-NEXT: return %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[P]]
func.func @identities(%x: tensor<2x?xf32>, %p: tensor<4xi1>)
    -> (tensor<2x?xf32>, tensor<2x?xf32>, tensor<2x?xf32>, tensor<2x?xf32>, tensor<2x?xf32>, tensor<4xi1>) {
  %0 = kiln.identity %x : tensor<2x?xf32>
  %1 = kiln.cast %x {to = f32} : (tensor<2x?xf32>) -> tensor<2x?xf32>
  %2 = kiln.cast_like %x, %x : (tensor<2x?xf32>, tensor<2x?xf32>) -> tensor<2x?xf32>
  %n = kiln.neg %x : tensor<2x?xf32>
  %3 = kiln.neg %n : tensor<2x?xf32>
  %r = kiln.reciprocal %x : tensor<2x?xf32>
  %4 = kiln.reciprocal %r : tensor<2x?xf32>
  %q = kiln.not %p : tensor<4xi1>
  %5 = kiln.not %q : tensor<4xi1>
  return %0, %1, %2, %3, %4, %5 : tensor<2x?xf32>, tensor<2x?xf32>, tensor<2x?xf32>, tensor<2x?xf32>, tensor<2x?xf32>, tensor<4xi1>
}

// -----

// Not folded: a cast that changes the type, a single Neg.
// CHECK-LABEL: func.func @not_identities
// CHECK: kiln.cast
// CHECK: kiln.neg
// CHECK: kiln.neg
// CHECK-NOT: kiln.neg
func.func @not_identities(%x: tensor<4xf32>, %i: tensor<4xi32>) -> (tensor<4xf16>, tensor<4xf32>, tensor<4xi32>) {
  %0 = kiln.cast %x {to = f16} : (tensor<4xf32>) -> tensor<4xf16>
  %1 = kiln.neg %x : tensor<4xf32>
  %2 = kiln.neg %i : tensor<4xi32>
  return %0, %1, %2 : tensor<4xf16>, tensor<4xf32>, tensor<4xi32>
}

// -----

// Float arithmetic is done in the element type; 1/3 is f32's 0.333333343.
// CHECK-LABEL: func.func @float_arithmetic
// CHECK-DAG: %[[ADD:.+]] = kiln.constant dense<3.000000e-01> : tensor<2x3xf32>
// CHECK-DAG: %[[DIV:.+]] = kiln.constant dense<0.333333343> : tensor<2x3xf32>
// CHECK-DAG: %[[HALF:.+]] = kiln.constant dense<1.000000e+00> : tensor<4xf16>
// CHECK-DAG: %[[SUB:.+]] = kiln.constant dense<-1.000000e+00> : tensor<2x3xf32>
// CHECK-DAG: %[[MUL:.+]] = kiln.constant dense<6.000000e+00> : tensor<2x3xf32>
// CHECK: return %[[ADD]], %[[DIV]], %[[HALF]], %[[SUB]], %[[MUL]]
func.func @float_arithmetic() -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<4xf16>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %a = kiln.constant dense<0.1> : tensor<2x3xf32>
  %b = kiln.constant dense<0.2> : tensor<3xf32>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %three = kiln.constant dense<3.0> : tensor<2x1xf32>
  %two = kiln.constant dense<2.0> : tensor<f32>
  // 0.1f + 0.2f is 0.3f exactly in f32 (not 0.30000000000000004 as in f64).
  %0 = kiln.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = kiln.div %one, %three : (tensor<f32>, tensor<2x1xf32>) -> tensor<2x1xf32>
  %d = kiln.mul %1, %b : (tensor<2x1xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // Chains fold one op at a time: (1 + 1) - 1 in f16.
  %h1 = kiln.constant dense<1.0> : tensor<4xf16>
  %h2 = kiln.add %h1, %h1 : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
  %h3 = kiln.sub %h2, %h1 : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
  %2 = kiln.sub %two, %three : (tensor<f32>, tensor<2x1xf32>) -> tensor<2x1xf32>
  %s = kiln.mul %2, %one : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %s3 = kiln.add %s, %b : (tensor<2x1xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %s4 = kiln.sub %s3, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %m = kiln.mul %two, %three : (tensor<f32>, tensor<2x1xf32>) -> tensor<2x1xf32>
  %m2 = kiln.max %m, %b, %one : (tensor<2x1xf32>, tensor<3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %dd = kiln.div %d, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %0, %dd, %h3, %s4, %m2 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<4xf16>, tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// f16 rounding: 2048 + 1 is 2048 in f16.
// CHECK-LABEL: func.func @half_rounding
// CHECK: %[[Z:.+]] = kiln.constant dense<0.000000e+00> : tensor<2xf16>
// CHECK: return %[[Z]]
func.func @half_rounding() -> tensor<2xf16> {
  %big = kiln.constant dense<2048.0> : tensor<2xf16>
  %one = kiln.constant dense<1.0> : tensor<2xf16>
  %0 = kiln.add %big, %one : (tensor<2xf16>, tensor<2xf16>) -> tensor<2xf16>
  %1 = kiln.sub %0, %big : (tensor<2xf16>, tensor<2xf16>) -> tensor<2xf16>
  return %1 : tensor<2xf16>
}

// -----

// Integers wrap around; signed and unsigned follow the element type.
// CHECK-LABEL: func.func @integer_arithmetic
// CHECK-DAG: %[[WRAP:.+]] = kiln.constant dense<-128> : tensor<4xi8>
// CHECK-DAG: %[[UWRAP:.+]] = kiln.constant dense<4> : tensor<4xui8>
// CHECK-DAG: %[[SDIV:.+]] = kiln.constant dense<-3> : tensor<4xi32>
// CHECK-DAG: %[[UMAX:.+]] = kiln.constant dense<200> : tensor<4xui8>
// CHECK-DAG: %[[SMAX:.+]] = kiln.constant dense<1> : tensor<4xi8>
// CHECK-DAG: %[[NEG:.+]] = kiln.constant dense<-128> : tensor<3xi8>
// CHECK: return %[[WRAP]], %[[UWRAP]], %[[SDIV]], %[[UMAX]], %[[SMAX]], %[[NEG]]
func.func @integer_arithmetic() -> (tensor<4xi8>, tensor<4xui8>, tensor<4xi32>, tensor<4xui8>, tensor<4xi8>, tensor<3xi8>) {
  %a = kiln.constant dense<127> : tensor<4xi8>
  %one = kiln.constant dense<1> : tensor<i8>
  %0 = kiln.add %a, %one : (tensor<4xi8>, tensor<i8>) -> tensor<4xi8>
  %u = kiln.constant dense<250> : tensor<4xui8>
  %ten = kiln.constant dense<10> : tensor<ui8>
  %1 = kiln.add %u, %ten : (tensor<4xui8>, tensor<ui8>) -> tensor<4xui8>
  %m7 = kiln.constant dense<-7> : tensor<4xi32>
  %two = kiln.constant dense<2> : tensor<i32>
  %2 = kiln.div %m7, %two : (tensor<4xi32>, tensor<i32>) -> tensor<4xi32>
  %v = kiln.constant dense<200> : tensor<4xui8>
  %w = kiln.constant dense<100> : tensor<ui8>
  %3 = kiln.max %v, %w : (tensor<4xui8>, tensor<ui8>) -> tensor<4xui8>
  %s = kiln.constant dense<-56> : tensor<4xi8>
  %4 = kiln.max %s, %one : (tensor<4xi8>, tensor<i8>) -> tensor<4xi8>
  %min = kiln.constant dense<-128> : tensor<3xi8>
  %5 = kiln.neg %min : tensor<3xi8>
  return %0, %1, %2, %3, %4, %5 : tensor<4xi8>, tensor<4xui8>, tensor<4xi32>, tensor<4xui8>, tensor<4xi8>, tensor<3xi8>
}

// -----

// Mod: fmod = 0 takes the divisor's sign, fmod = 1 the dividend's.
// CHECK-LABEL: func.func @mod
// CHECK-DAG: %[[PY:.+]] = kiln.constant dense<2> : tensor<2xi32>
// CHECK-DAG: %[[C:.+]] = kiln.constant dense<-1> : tensor<2xi32>
// CHECK-DAG: %[[F:.+]] = kiln.constant dense<-1.500000e+00> : tensor<2xf32>
// CHECK: return %[[PY]], %[[C]], %[[F]]
func.func @mod() -> (tensor<2xi32>, tensor<2xi32>, tensor<2xf32>) {
  %a = kiln.constant dense<-7> : tensor<2xi32>
  %b = kiln.constant dense<3> : tensor<2xi32>
  %0 = kiln.mod %a, %b : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  %1 = kiln.mod %a, %b {fmod = 1} : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  %x = kiln.constant dense<-5.5> : tensor<2xf32>
  %y = kiln.constant dense<2.0> : tensor<2xf32>
  %2 = kiln.mod %x, %y {fmod = 1} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0, %1, %2 : tensor<2xi32>, tensor<2xi32>, tensor<2xf32>
}

// -----

// Not folded: integer division by zero, non-splat operands, a dynamic result.
// CHECK-LABEL: func.func @not_folded
// CHECK: kiln.div
// CHECK: kiln.add
// CHECK: kiln.add
func.func @not_folded(%x: tensor<?xf32>) -> (tensor<4xi32>, tensor<2xf32>, tensor<?xf32>) {
  %a = kiln.constant dense<7> : tensor<4xi32>
  %z = kiln.constant dense<0> : tensor<i32>
  %0 = kiln.div %a, %z : (tensor<4xi32>, tensor<i32>) -> tensor<4xi32>
  %v = kiln.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %1 = kiln.add %v, %v : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %2 = kiln.add %x, %one : (tensor<?xf32>, tensor<f32>) -> tensor<?xf32>
  return %0, %1, %2 : tensor<4xi32>, tensor<2xf32>, tensor<?xf32>
}

// -----

// Unary math on splats, in f32 (libm's float functions) or the element type.
// CHECK-LABEL: func.func @unary
// CHECK-DAG: %[[EXP:.+]] = kiln.constant dense<2.71828175> : tensor<3xf32>
// CHECK-DAG: %[[ZERO:.+]] = kiln.constant dense<0.000000e+00> : tensor<3xf32>
// CHECK-DAG: %[[SQRT:.+]] = kiln.constant dense<1.41421354> : tensor<3xf32>
// CHECK-DAG: %[[SIGM:.+]] = kiln.constant dense<0.731058597> : tensor<3xf32>
// CHECK-DAG: %[[M3:.+]] = kiln.constant dense<-3.000000e+00> : tensor<3xf32>
// CHECK-DAG: %[[M2:.+]] = kiln.constant dense<-2.000000e+00> : tensor<3xf32>
// CHECK-DAG: %[[M1:.+]] = kiln.constant dense<-1.000000e+00> : tensor<3xf32>
// CHECK-DAG: %[[ABS:.+]] = kiln.constant dense<2.500000e+00> : tensor<3xf32>
// CHECK-DAG: %[[RCP:.+]] = kiln.constant dense<4.000000e-01> : tensor<3xf32>
// CHECK: return %[[EXP]], %[[ZERO]], %[[SQRT]], %[[SIGM]], %[[M2]], %[[M3]], %[[M2]], %[[M1]], %[[ABS]], %[[RCP]], %[[ZERO]] :
func.func @unary() -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) {
  %one = kiln.constant dense<1.0> : tensor<3xf32>
  %two = kiln.constant dense<2.0> : tensor<3xf32>
  %m25 = kiln.constant dense<-2.5> : tensor<3xf32>
  %0 = kiln.exp %one : tensor<3xf32>
  %1 = kiln.log %one : tensor<3xf32>
  %2 = kiln.sqrt %two : tensor<3xf32>
  %3 = kiln.sigmoid %one : tensor<3xf32>
  // Round halves to even: -2.5 -> -2; Floor -2.5 -> -3; Ceil -2.5 -> -2.
  %4 = kiln.round %m25 : tensor<3xf32>
  %5 = kiln.floor %m25 : tensor<3xf32>
  %6 = kiln.ceil %m25 : tensor<3xf32>
  %7 = kiln.sign %m25 : tensor<3xf32>
  %8 = kiln.abs %m25 : tensor<3xf32>
  %9 = kiln.reciprocal %m25 : tensor<3xf32>
  %10 = kiln.relu %m25 : tensor<3xf32>
  %11 = kiln.neg %9 : tensor<3xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %11, %10 : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
}

// -----

// Comparisons and logic give i1 splats.
// CHECK-LABEL: func.func @compare_and_logic
// CHECK-DAG: %[[T:.+]] = kiln.constant dense<true> : tensor<2x2xi1>
// CHECK-DAG: %[[F:.+]] = kiln.constant dense<false> : tensor<2x2xi1>
// CHECK-DAG: %[[UT:.+]] = kiln.constant dense<true> : tensor<2xi1>
// CHECK: return %[[T]], %[[F]], %[[F]], %[[T]], %[[F]], %[[UT]], %[[T]], %[[F]]
func.func @compare_and_logic() -> (tensor<2x2xi1>, tensor<2x2xi1>, tensor<2x2xi1>, tensor<2x2xi1>, tensor<2x2xi1>, tensor<2xi1>, tensor<2x2xi1>, tensor<2x2xi1>) {
  %a = kiln.constant dense<1.0> : tensor<2x2xf32>
  %b = kiln.constant dense<2.0> : tensor<2xf32>
  %nan = kiln.constant dense<0x7FC00000> : tensor<f32>
  %0 = kiln.less %a, %b : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xi1>
  %1 = kiln.greater_or_equal %a, %b : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xi1>
  // NaN compares unordered: neither equal nor less.
  %2 = kiln.equal %a, %nan : (tensor<2x2xf32>, tensor<f32>) -> tensor<2x2xi1>
  %3 = kiln.less_or_equal %a, %a : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xi1>
  %4 = kiln.less %a, %nan : (tensor<2x2xf32>, tensor<f32>) -> tensor<2x2xi1>
  // 200 > 100 as ui8 (as i8 it would be -56 < 100).
  %u = kiln.constant dense<200> : tensor<2xui8>
  %v = kiln.constant dense<100> : tensor<ui8>
  %5 = kiln.greater %u, %v : (tensor<2xui8>, tensor<ui8>) -> tensor<2xi1>
  %6 = kiln.or %0, %1 : (tensor<2x2xi1>, tensor<2x2xi1>) -> tensor<2x2xi1>
  %n = kiln.not %6 : tensor<2x2xi1>
  %7 = kiln.and %n, %0 : (tensor<2x2xi1>, tensor<2x2xi1>) -> tensor<2x2xi1>
  %x = kiln.xor %0, %0 : (tensor<2x2xi1>, tensor<2x2xi1>) -> tensor<2x2xi1>
  %8 = kiln.or %7, %x : (tensor<2x2xi1>, tensor<2x2xi1>) -> tensor<2x2xi1>
  return %0, %1, %2, %3, %4, %5, %6, %8 : tensor<2x2xi1>, tensor<2x2xi1>, tensor<2x2xi1>, tensor<2x2xi1>, tensor<2x2xi1>, tensor<2xi1>, tensor<2x2xi1>, tensor<2x2xi1>
}

// -----

// Variadic Sum and Mean; a single operand is the identity.
// CHECK-LABEL: func.func @variadic
// CHECK-SAME: (%[[X:.+]]: tensor<4xf32>)
// CHECK-DAG: %[[SUM:.+]] = kiln.constant dense<6.000000e+00> : tensor<2x4xf32>
// CHECK-DAG: %[[MEAN:.+]] = kiln.constant dense<2.000000e+00> : tensor<2x4xf32>
// CHECK-DAG: %[[MIN:.+]] = kiln.constant dense<1.000000e+00> : tensor<2x4xf32>
// CHECK: return %[[SUM]], %[[MEAN]], %[[MIN]], %[[X]], %[[X]]
func.func @variadic(%x: tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %a = kiln.constant dense<1.0> : tensor<4xf32>
  %b = kiln.constant dense<2.0> : tensor<2x1xf32>
  %c = kiln.constant dense<3.0> : tensor<f32>
  %0 = kiln.sum %a, %b, %c : (tensor<4xf32>, tensor<2x1xf32>, tensor<f32>) -> tensor<2x4xf32>
  %1 = kiln.mean %a, %b, %c : (tensor<4xf32>, tensor<2x1xf32>, tensor<f32>) -> tensor<2x4xf32>
  %2 = kiln.min %c, %b, %a : (tensor<f32>, tensor<2x1xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %3 = kiln.sum %x : (tensor<4xf32>) -> tensor<4xf32>
  %4 = kiln.mean %x : (tensor<4xf32>) -> tensor<4xf32>
  return %0, %1, %2, %3, %4 : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Cast of small constants, element by element.
// CHECK-LABEL: func.func @cast_constants
// CHECK-DAG: %[[TRUNC:.+]] = kiln.constant dense<[1, -1, 2, 0]> : tensor<4xi32>
// CHECK-DAG: %[[BOOL:.+]] = kiln.constant dense<true> : tensor<4xi1>
// CHECK-DAG: %[[UNS:.+]] = kiln.constant dense<2.550000e+02> : tensor<3xf32>
// CHECK-DAG: %[[NARROW:.+]] = kiln.constant dense<[44, -56]> : tensor<2xi8>
// CHECK-DAG: %[[HALF:.+]] = kiln.constant dense<[1.000000e+00, 2.048000e+03]> : tensor<2xf16>
// CHECK-DAG: %[[LIKE:.+]] = kiln.constant dense<[1, 0]> : tensor<2xi64>
// CHECK: return %[[TRUNC]], %[[BOOL]], %[[UNS]], %[[NARROW]], %[[HALF]], %[[LIKE]]
func.func @cast_constants(%t: tensor<1xi64>) -> (tensor<4xi32>, tensor<4xi1>, tensor<3xf32>, tensor<2xi8>, tensor<2xf16>, tensor<2xi64>) {
  %f = kiln.constant dense<[1.9, -1.9, 2.5, -0.5]> : tensor<4xf32>
  %0 = kiln.cast %f {to = i32} : (tensor<4xf32>) -> tensor<4xi32>
  // Every element is non-zero, so every bool is true.
  %1 = kiln.cast %f {to = i1} : (tensor<4xf32>) -> tensor<4xi1>
  // ui8 255 is 255, not -1.
  %u = kiln.constant dense<255> : tensor<3xui8>
  %2 = kiln.cast %u {to = f32} : (tensor<3xui8>) -> tensor<3xf32>
  %i = kiln.constant dense<[300, 200]> : tensor<2xi32>
  %3 = kiln.cast %i {to = i8} : (tensor<2xi32>) -> tensor<2xi8>
  %d = kiln.constant dense<[1.0, 2049.0]> : tensor<2xf64>
  %4 = kiln.cast %d {to = f16} : (tensor<2xf64>) -> tensor<2xf16>
  %b = kiln.constant dense<[true, false]> : tensor<2xi1>
  %5 = kiln.cast_like %b, %t : (tensor<2xi1>, tensor<1xi64>) -> tensor<2xi64>
  return %0, %1, %2, %3, %4, %5 : tensor<4xi32>, tensor<4xi1>, tensor<3xf32>, tensor<2xi8>, tensor<2xf16>, tensor<2xi64>
}

// -----

// Not folded: NaN to an integer is undefined; a large non-splat constant.
// CHECK-LABEL: func.func @cast_not_folded
// CHECK: kiln.cast
// CHECK: kiln.cast
func.func @cast_not_folded() -> (tensor<2xi32>, tensor<65xf16>) {
  %nan = kiln.constant dense<[0x7FC00000, 1.0]> : tensor<2xf32>
  %0 = kiln.cast %nan {to = i32} : (tensor<2xf32>) -> tensor<2xi32>
  %big = kiln.constant dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0, 24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0, 32.0, 33.0, 34.0, 35.0, 36.0, 37.0, 38.0, 39.0, 40.0, 41.0, 42.0, 43.0, 44.0, 45.0, 46.0, 47.0, 48.0, 49.0, 50.0, 51.0, 52.0, 53.0, 54.0, 55.0, 56.0, 57.0, 58.0, 59.0, 60.0, 61.0, 62.0, 63.0, 64.0]> : tensor<65xf32>
  %1 = kiln.cast %big {to = f16} : (tensor<65xf32>) -> tensor<65xf16>
  return %0, %1 : tensor<2xi32>, tensor<65xf16>
}

// -----

// Activations on splats, computed in f32 as ONNX defines them.
// CHECK-LABEL: func.func @activations
// CHECK-DAG: %[[LEAKY:.+]] = kiln.constant dense<-2.000000e-01> : tensor<2xf32>
// CHECK-DAG: %[[HSIG:.+]] = kiln.constant dense<0.099999994> : tensor<2xf32>
// CHECK-DAG: %[[ELU:.+]] = kiln.constant dense<-0.864664733> : tensor<2xf32>
// CHECK-DAG: %[[SELU:.+]] = kiln.constant dense<-1.52016652> : tensor<2xf32>
// CHECK-DAG: %[[THR:.+]] = kiln.constant dense<0.000000e+00> : tensor<2xf32>
// CHECK-DAG: %[[HSW:.+]] = kiln.constant dense<-0.333333313> : tensor<2xf32>
// CHECK-DAG: %[[GELU:.+]] = kiln.constant dense<-0.0455002785> : tensor<2xf32>
// CHECK-DAG: %[[GELUT:.+]] = kiln.constant dense<-0.0454022884> : tensor<2xf32>
// CHECK-DAG: %[[SHR:.+]] = kiln.constant dense<-1.500000e+00> : tensor<2xf32>
// CHECK: return %[[LEAKY]], %[[HSIG]], %[[ELU]], %[[SELU]], %[[THR]], %[[HSW]], %[[GELU]], %[[GELUT]], %[[SHR]] :
func.func @activations() -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) {
  %x = kiln.constant dense<-2.0> : tensor<2xf32>
  %0 = kiln.leaky_relu %x {alpha = 0.1 : f32} : tensor<2xf32>
  // max(0, min(1, 0.2 * -2 + 0.5)) in f32 arithmetic: 0.099999994, not 0.1.
  %1 = kiln.hard_sigmoid %x : tensor<2xf32>
  %2 = kiln.elu %x : tensor<2xf32>
  %3 = kiln.selu %x : tensor<2xf32>
  %4 = kiln.thresholded_relu %x : tensor<2xf32>
  // -2 * (1/6 * -2 + 1/2) in f32: -0.333333313 (f32(-1/3) is -0.333333343).
  %5 = kiln.hard_swish %x : tensor<2xf32>
  %6 = kiln.gelu %x : tensor<2xf32>
  %7 = kiln.gelu %x {approximate = "tanh"} : tensor<2xf32>
  // -2 < -lambd: -2 + bias
  %8 = kiln.shrink %x {bias = 0.5 : f32, lambd = 1.0 : f32} : tensor<2xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8 : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
}

// -----

// CHECK-LABEL: func.func @predicates
// CHECK-DAG: %[[T:.+]] = kiln.constant dense<true> : tensor<3xi1>
// CHECK-DAG: %[[F:.+]] = kiln.constant dense<false> : tensor<3xi1>
// CHECK: return %[[T]], %[[F]], %[[T]], %[[F]]
func.func @predicates() -> (tensor<3xi1>, tensor<3xi1>, tensor<3xi1>, tensor<3xi1>) {
  %nan = kiln.constant dense<0x7FC00000> : tensor<3xf32>
  %ninf = kiln.constant dense<0xFF800000> : tensor<3xf32>
  %0 = kiln.is_nan %nan : (tensor<3xf32>) -> tensor<3xi1>
  %1 = kiln.is_nan %ninf : (tensor<3xf32>) -> tensor<3xi1>
  %2 = kiln.is_inf %ninf : (tensor<3xf32>) -> tensor<3xi1>
  %3 = kiln.is_inf %ninf {detect_negative = 0} : (tensor<3xf32>) -> tensor<3xi1>
  return %0, %1, %2, %3 : tensor<3xi1>, tensor<3xi1>, tensor<3xi1>, tensor<3xi1>
}

// -----

// Clip with no bounds is the identity; splat bounds clamp a splat.
// CHECK-LABEL: func.func @clip
// CHECK-SAME: (%[[X:.+]]: tensor<?xf32>)
// CHECK-DAG: %[[LO:.+]] = kiln.constant dense<1.000000e+00> : tensor<4xf32>
// CHECK-DAG: %[[HI:.+]] = kiln.constant dense<6> : tensor<4xui8>
// CHECK-DAG: %[[IN:.+]] = kiln.constant dense<-3> : tensor<4xi32>
// CHECK: return %[[X]], %[[LO]], %[[HI]], %[[IN]]
func.func @clip(%x: tensor<?xf32>) -> (tensor<?xf32>, tensor<4xf32>, tensor<4xui8>, tensor<4xi32>) {
  %none = kiln.none
  %0 = kiln.clip %x, %none, %none : (tensor<?xf32>, none, none) -> tensor<?xf32>
  %v = kiln.constant dense<-2.0> : tensor<4xf32>
  %lo = kiln.constant dense<1.0> : tensor<f32>
  %1 = kiln.clip %v, %lo, %none : (tensor<4xf32>, tensor<f32>, none) -> tensor<4xf32>
  // 200 > 6 as ui8.
  %u = kiln.constant dense<200> : tensor<4xui8>
  %six = kiln.constant dense<6> : tensor<ui8>
  %2 = kiln.clip %u, %none, %six : (tensor<4xui8>, none, tensor<ui8>) -> tensor<4xui8>
  %i = kiln.constant dense<-3> : tensor<4xi32>
  %ilo = kiln.constant dense<-5> : tensor<i32>
  %ihi = kiln.constant dense<5> : tensor<1xi32>
  %3 = kiln.clip %i, %ilo, %ihi : (tensor<4xi32>, tensor<i32>, tensor<1xi32>) -> tensor<4xi32>
  return %0, %1, %2, %3 : tensor<?xf32>, tensor<4xf32>, tensor<4xui8>, tensor<4xi32>
}

// -----

// A splat condition picks an operand.
// CHECK-LABEL: func.func @where
// CHECK-SAME: (%[[A:.+]]: tensor<2x3xf32>, %[[B:.+]]: tensor<2x3xf32>, %[[C:.+]]: tensor<3xf32>)
// CHECK-DAG: %[[S:.+]] = kiln.constant dense<5.000000e+00> : tensor<2x3xf32>
// CHECK-DAG: %[[W:.+]] = kiln.where
// CHECK: return %[[A]], %[[B]], %[[S]], %[[W]]
func.func @where(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>, %c: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %t = kiln.constant dense<true> : tensor<2x3xi1>
  %f = kiln.constant dense<false> : tensor<1xi1>
  %five = kiln.constant dense<5.0> : tensor<f32>
  %0 = kiln.where %t, %a, %b : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = kiln.where %f, %a, %b : (tensor<1xi1>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = kiln.where %t, %five, %b : (tensor<2x3xi1>, tensor<f32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  // The chosen operand needs broadcasting and is not constant: kept.
  %3 = kiln.where %t, %c, %b : (tensor<2x3xi1>, tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0, %1, %2, %3 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @pow_prelu_bits
// CHECK-DAG: %[[POW:.+]] = kiln.constant dense<8.000000e+00> : tensor<2xf32>
// CHECK-DAG: %[[SQRT:.+]] = kiln.constant dense<1.41421354> : tensor<2xf32>
// CHECK-DAG: %[[PRELU:.+]] = kiln.constant dense<-5.000000e-01> : tensor<2xf32>
// CHECK-DAG: %[[IPRELU:.+]] = kiln.constant dense<-6> : tensor<2xi32>
// CHECK-DAG: %[[SHL:.+]] = kiln.constant dense<160> : tensor<2xui8>
// CHECK-DAG: %[[SHR:.+]] = kiln.constant dense<12> : tensor<2xui8>
// CHECK-DAG: %[[AND:.+]] = kiln.constant dense<2> : tensor<2xi32>
// CHECK-DAG: %[[NOT:.+]] = kiln.constant dense<-7> : tensor<2xi32>
// CHECK-DAG: %[[BIG:.+]] = kiln.bit_shift
// CHECK-DAG: %[[IPOW:.+]] = kiln.pow
// CHECK: return %[[POW]], %[[SQRT]], %[[PRELU]], %[[IPRELU]], %[[SHL]], %[[SHR]], %[[AND]], %[[NOT]], %[[BIG]], %[[IPOW]]
func.func @pow_prelu_bits() -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xi32>, tensor<2xui8>, tensor<2xui8>, tensor<2xi32>, tensor<2xi32>, tensor<2xui8>, tensor<2xi32>) {
  %two = kiln.constant dense<2.0> : tensor<2xf32>
  %three = kiln.constant dense<3> : tensor<i64>
  %half = kiln.constant dense<0.5> : tensor<f32>
  %0 = kiln.pow %two, %three : (tensor<2xf32>, tensor<i64>) -> tensor<2xf32>
  %1 = kiln.pow %two, %half : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  %m1 = kiln.constant dense<-1.0> : tensor<2xf32>
  %2 = kiln.prelu %m1, %half : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  %m2 = kiln.constant dense<-2> : tensor<2xi32>
  %s3 = kiln.constant dense<3> : tensor<i32>
  %3 = kiln.prelu %m2, %s3 : (tensor<2xi32>, tensor<i32>) -> tensor<2xi32>
  %x = kiln.constant dense<50> : tensor<2xui8>
  %by2 = kiln.constant dense<2> : tensor<ui8>
  // 40 << 2 = 160; 50 >> 2 = 12.
  %forty = kiln.constant dense<40> : tensor<2xui8>
  %4 = kiln.bit_shift %forty, %by2 {direction = "LEFT"} : (tensor<2xui8>, tensor<ui8>) -> tensor<2xui8>
  %5 = kiln.bit_shift %x, %by2 {direction = "RIGHT"} : (tensor<2xui8>, tensor<ui8>) -> tensor<2xui8>
  %a = kiln.constant dense<6> : tensor<2xi32>
  %6 = kiln.bitwise_and %a, %s3 : (tensor<2xi32>, tensor<i32>) -> tensor<2xi32>
  %7 = kiln.bitwise_not %a : tensor<2xi32>
  // Shifting by the bit width or more is undefined: kept.
  %by8 = kiln.constant dense<8> : tensor<ui8>
  %8 = kiln.bit_shift %x, %by8 {direction = "LEFT"} : (tensor<2xui8>, tensor<ui8>) -> tensor<2xui8>
  // Integer bases are left to the runtime.
  %9 = kiln.pow %m2, %three : (tensor<2xi32>, tensor<i64>) -> tensor<2xi32>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9 : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xi32>, tensor<2xui8>, tensor<2xui8>, tensor<2xi32>, tensor<2xi32>, tensor<2xui8>, tensor<2xi32>
}
