// RUN: kiln-opt %s --convert-kiln-to-linalg --split-input-file | FileCheck %s
// RUN: kiln-opt %s --convert-kiln-to-linalg --split-input-file | mlir-opt --one-shot-bufferize=bufferize-function-boundaries --split-input-file > /dev/null

// Broadcasting binary op: the smaller operand's map drops/pins dims.
// CHECK-DAG: #[[$ID:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[$ROW:.+]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG: #[[$COL:.+]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-LABEL: func.func @add_broadcast
// CHECK: linalg.generic {indexing_maps = [#[[$ID]], #[[$ROW]], #[[$ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK: arith.addf
// CHECK: linalg.generic {indexing_maps = [#[[$ID]], #[[$COL]], #[[$ID]]]
// CHECK: arith.subi
func.func @add_broadcast(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %c: tensor<2x3xi32>, %d: tensor<2x1xi32>) -> (tensor<2x3xf32>, tensor<2x3xi32>) {
  %0 = kiln.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = kiln.sub %c, %d : (tensor<2x3xi32>, tensor<2x1xi32>) -> tensor<2x3xi32>
  return %0, %1 : tensor<2x3xf32>, tensor<2x3xi32>
}

// -----

// Signedness: unsigned ONNX types pick the unsigned arith ops on signless
// tensors.
// CHECK-LABEL: func.func @signedness
// CHECK-SAME: (%{{.*}}: tensor<4xi8>, %{{.*}}: tensor<4xi8>, %{{.*}}: tensor<4xi8>, %{{.*}}: tensor<4xi8>)
// CHECK: arith.divui
// CHECK: arith.divsi
// CHECK: arith.cmpi ult
// CHECK: arith.cmpi slt
// CHECK: arith.maxui
// CHECK: arith.minsi
// CHECK: arith.remui
func.func @signedness(%a: tensor<4xui8>, %b: tensor<4xui8>, %c: tensor<4xi8>, %d: tensor<4xi8>)
    -> (tensor<4xui8>, tensor<4xi8>, tensor<4xi1>, tensor<4xi1>, tensor<4xui8>, tensor<4xi8>, tensor<4xui8>) {
  %0 = kiln.div %a, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  %1 = kiln.div %c, %d : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi8>
  %2 = kiln.less %a, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xi1>
  %3 = kiln.less %c, %d : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi1>
  %4 = kiln.max %a, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  %5 = kiln.min %c, %d : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi8>
  %6 = kiln.mod %a, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<4xui8>, tensor<4xi8>, tensor<4xi1>, tensor<4xi1>, tensor<4xui8>, tensor<4xi8>, tensor<4xui8>
}

// -----

// Python-style integer Mod: the remainder is fixed up to the divisor's sign;
// fmod = 1 is the plain remainder.
// CHECK-LABEL: func.func @mod
// CHECK: %[[REM:.+]] = arith.remsi %[[X:.+]], %[[Y:.+]] : i32
// CHECK: arith.cmpi slt, %[[REM]]
// CHECK: arith.cmpi slt, %[[Y]]
// CHECK: arith.xori
// CHECK: %[[FIX:.+]] = arith.andi
// CHECK: %[[ADD:.+]] = arith.addi %[[REM]], %[[Y]]
// CHECK: arith.select %[[FIX]], %[[ADD]], %[[REM]]
// CHECK: linalg.generic
// CHECK: arith.remsi
// CHECK-NEXT: linalg.yield
// CHECK: linalg.generic
// CHECK: arith.remf
func.func @mod(%a: tensor<4xi32>, %b: tensor<4xi32>, %c: tensor<4xf32>) -> (tensor<4xi32>, tensor<4xi32>, tensor<4xf32>) {
  %0 = kiln.mod %a, %b : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  %1 = kiln.mod %a, %b {fmod = 1 : i64} : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  %2 = kiln.mod %c, %c {fmod = 1 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0, %1, %2 : tensor<4xi32>, tensor<4xi32>, tensor<4xf32>
}

// -----

// f16 math is computed in f32 and rounded once.
// CHECK-LABEL: func.func @half
// CHECK: ^bb0(%[[IN:.+]]: f16, %{{.+}}: f16):
// CHECK-NEXT: %[[W:.+]] = arith.extf %[[IN]] : f16 to f32
// CHECK: math.erf
// CHECK: arith.mulf
// CHECK: %[[R:.+]] = arith.mulf
// CHECK-NEXT: %[[T:.+]] = arith.truncf %[[R]] : f32 to f16
// CHECK-NEXT: linalg.yield %[[T]] : f16
func.func @half(%a: tensor<4xf16>) -> tensor<4xf16> {
  %0 = kiln.gelu %a : tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

// Round is half-to-even; Relu is maximumf against +0 (NaN propagates).
// CHECK-LABEL: func.func @round_relu
// CHECK: math.roundeven
// CHECK: %[[Z:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: arith.maximumf %{{.+}}, %[[Z]]
func.func @round_relu(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = kiln.round %a : tensor<4xf32>
  %1 = kiln.relu %a : tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// Clip: bounds are scalars read outside the loop; a missing bound is skipped.
// CHECK-LABEL: func.func @clip
// CHECK: %[[HI:.+]] = tensor.extract %{{.+}}[%{{.+}}] : tensor<1xi32>
// CHECK: linalg.generic
// CHECK: %[[M:.+]] = arith.minsi %{{.+}}, %[[HI]] : i32
// CHECK-NOT: arith.maxsi
// CHECK: linalg.yield %[[M]]
func.func @clip(%a: tensor<4xi32>, %hi: tensor<1xi32>) -> tensor<4xi32> {
  %none = kiln.none
  %0 = kiln.clip %a, %none, %hi : (tensor<4xi32>, none, tensor<1xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// Cast: ONNX semantics (float -> unsigned is fptoui; uint -> float uitofp;
// to bool is != 0); Identity disappears.
// CHECK-LABEL: func.func @cast
// CHECK: arith.fptoui %{{.+}} : f32 to i8
// CHECK: arith.uitofp %{{.+}} : i8 to f16
// CHECK: arith.cmpf une
// CHECK: return %{{.+}}, %{{.+}}, %{{.+}}, %arg0
func.func @cast(%a: tensor<4xf32>, %b: tensor<4xui8>) -> (tensor<4xui8>, tensor<4xf16>, tensor<4xi1>, tensor<4xf32>) {
  %0 = kiln.cast %a {to = ui8} : (tensor<4xf32>) -> tensor<4xui8>
  %1 = kiln.cast_like %b, %0 : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  %t = kiln.cast %a {to = f16} : (tensor<4xf32>) -> tensor<4xf16>
  %2 = kiln.cast_like %b, %t : (tensor<4xui8>, tensor<4xf16>) -> tensor<4xf16>
  %3 = kiln.cast %a {to = i1} : (tensor<4xf32>) -> tensor<4xi1>
  %4 = kiln.identity %a : tensor<4xf32>
  return %1, %2, %3, %4 : tensor<4xui8>, tensor<4xf16>, tensor<4xi1>, tensor<4xf32>
}

// -----

// Where broadcasts all three operands; Mean divides the sum by the count.
// CHECK-DAG: #[[$C:.+]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-DAG: #[[$X:.+]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG: #[[$Y:.+]] = affine_map<(d0, d1) -> ()>
// CHECK-LABEL: func.func @where_mean
// CHECK: linalg.generic {indexing_maps = [#[[$C]], #[[$X]], #[[$Y]], #{{.+}}]
// CHECK: arith.select
// CHECK: linalg.generic
// CHECK: arith.addf
// CHECK: arith.addf
// CHECK: %[[N:.+]] = arith.constant 3.000000e+00 : f32
// CHECK: arith.divf %{{.+}}, %[[N]]
func.func @where_mean(%c: tensor<2x1xi1>, %x: tensor<3xf32>, %y: tensor<f32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %0 = kiln.where %c, %x, %y : (tensor<2x1xi1>, tensor<3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %1 = kiln.mean %0, %x, %y : (tensor<2x3xf32>, tensor<3xf32>, tensor<f32>) -> tensor<2x3xf32>
  return %0, %1 : tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// Pow: same-type float exponent is powf in place; an integer exponent (and
// an integer base) goes through f64 as ONNX Runtime's std::pow.
// CHECK-LABEL: func.func @pow
// CHECK: math.powf %{{.+}}, %{{.+}} : f32
// CHECK: linalg.generic
// CHECK: arith.extf %{{.+}} : f32 to f64
// CHECK: arith.sitofp %{{.+}} : i64 to f64
// CHECK: math.powf %{{.+}}, %{{.+}} : f64
// CHECK: arith.truncf %{{.+}} : f64 to f32
// CHECK: linalg.generic
// CHECK: arith.sitofp %{{.+}} : i32 to f64
// CHECK: math.powf
// CHECK: arith.fptosi %{{.+}} : f64 to i32
func.func @pow(%a: tensor<4xf32>, %b: tensor<f32>, %c: tensor<i64>, %d: tensor<4xi32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xi32>) {
  %0 = kiln.pow %a, %b : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %1 = kiln.pow %a, %c : (tensor<4xf32>, tensor<i64>) -> tensor<4xf32>
  %2 = kiln.pow %d, %d : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return %0, %1, %2 : tensor<4xf32>, tensor<4xf32>, tensor<4xi32>
}

// -----

// BitShift: a shift by the width or more gives 0 instead of poison.
// CHECK-LABEL: func.func @bit_shift
// CHECK: %[[W:.+]] = arith.constant 8 : i8
// CHECK: %[[FAR:.+]] = arith.cmpi uge, %[[Y:.+]], %[[W]]
// CHECK: %[[S:.+]] = arith.shrui %{{.+}}, %[[Y]]
// CHECK: arith.select %[[FAR]], %{{.+}}, %[[S]]
func.func @bit_shift(%a: tensor<4xui8>, %b: tensor<ui8>) -> tensor<4xui8> {
  %0 = kiln.bit_shift %a, %b {direction = "RIGHT"} : (tensor<4xui8>, tensor<ui8>) -> tensor<4xui8>
  return %0 : tensor<4xui8>
}

// -----

// IsInf with only +inf detected; IsNaN is an unordered self-compare.
// CHECK-LABEL: func.func @is_inf_nan
// CHECK: arith.cmpf oeq, %{{.+}}, %{{.+}} : f32
// CHECK-NOT: 0xFF800000
// CHECK: linalg.yield
// CHECK: arith.cmpf uno
func.func @is_inf_nan(%a: tensor<4xf32>) -> (tensor<4xi1>, tensor<4xi1>) {
  %0 = kiln.is_inf %a {detect_negative = 0 : i64, detect_positive = 1 : i64} : (tensor<4xf32>) -> tensor<4xi1>
  %1 = kiln.is_nan %a : (tensor<4xf32>) -> tensor<4xi1>
  return %0, %1 : tensor<4xi1>, tensor<4xi1>
}

// -----

// Pow by a one-element constant 2 or 3 is x * x (* x), as ONNX Runtime;
// other constants stay powf.
// CHECK-LABEL: func.func @pow_square
// CHECK: linalg.generic
// CHECK: %[[W:.+]] = arith.extf %{{.+}} : f16 to f32
// CHECK: %[[SQ:.+]] = arith.mulf %[[W]], %[[W]] : f32
// CHECK: arith.truncf %[[SQ]] : f32 to f16
// CHECK: linalg.generic
// CHECK: %[[SQI:.+]] = arith.muli %[[X:.+]], %[[X]] : i32
// CHECK: arith.muli %[[SQI]], %[[X]] : i32
// CHECK: linalg.generic
// CHECK: math.powf
func.func @pow_square(%a: tensor<4xf16>, %b: tensor<4xi32>, %c: tensor<4xf32>) -> (tensor<4xf16>, tensor<4xi32>, tensor<4xf32>) {
  %two = kiln.constant dense<2.0> : tensor<f16>
  %three = kiln.constant dense<3> : tensor<1xi64>
  %half = kiln.constant dense<0.5> : tensor<f32>
  %0 = kiln.pow %a, %two : (tensor<4xf16>, tensor<f16>) -> tensor<4xf16>
  %1 = kiln.pow %b, %three : (tensor<4xi32>, tensor<1xi64>) -> tensor<4xi32>
  %2 = kiln.pow %c, %half : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %0, %1, %2 : tensor<4xf16>, tensor<4xi32>, tensor<4xf32>
}
