// RUN: kiln-opt %s --convert-kiln-to-linalg --split-input-file | FileCheck %s
// RUN: kiln-opt %s --convert-kiln-to-linalg --split-input-file | mlir-opt --one-shot-bufferize=bufferize-function-boundaries --split-input-file > /dev/null

// Axes from a constant operand (negative counted from the end); keepdims
// restores the reduced dims with expand_shape.
// CHECK-DAG: #[[$IN:.+]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[$OUT:.+]] = affine_map<(d0, d1, d2) -> (d1)>
// CHECK-LABEL: func.func @sum_keepdims
// CHECK: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[INIT:.+]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.+}} : tensor<3xf32>)
// CHECK: %[[SUM:.+]] = linalg.generic {indexing_maps = [#[[$IN]], #[[$OUT]]], iterator_types = ["reduction", "parallel", "reduction"]} ins(%arg0 : tensor<2x3x4xf32>) outs(%[[INIT]] : tensor<3xf32>)
// CHECK: arith.addf
// CHECK: tensor.expand_shape %[[SUM]] {{\[}}[0, 1, 2]] output_shape [1, 3, 1] : tensor<3xf32> into tensor<1x3x1xf32>
func.func @sum_keepdims(%a: tensor<2x3x4xf32>) -> tensor<1x3x1xf32> {
  %axes = kiln.constant dense<[0, -1]> : tensor<2xi64>
  %0 = kiln.reduce_sum %a, %axes : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<1x3x1xf32>
  return %0 : tensor<1x3x1xf32>
}

// -----

// f16 accumulates in f32; Mean divides by the element count and rounds
// once; no axes reduce everything.
// CHECK-LABEL: func.func @mean_f16
// CHECK: linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<f32>)
// CHECK: linalg.generic
// CHECK: arith.extf %{{.+}} : f16 to f32
// CHECK: arith.addf %{{.+}}, %{{.+}} : f32
// CHECK: linalg.generic
// CHECK: %[[N:.+]] = arith.constant 2.400000e+01 : f32
// CHECK: arith.divf %{{.+}}, %[[N]] : f32
// CHECK: arith.truncf %{{.+}} : f32 to f16
func.func @mean_f16(%a: tensor<2x3x4xf16>) -> tensor<f16> {
  %none = kiln.none
  %0 = kiln.reduce_mean %a, %none {keepdims = 0 : i64} : (tensor<2x3x4xf16>, none) -> tensor<f16>
  return %0 : tensor<f16>
}

// -----

// Unsigned max starts from 0 and uses maxui; the axes attribute form;
// noop_with_empty_axes with no axes is the identity.
// CHECK-LABEL: func.func @max_unsigned
// CHECK: %[[Z:.+]] = arith.constant 0 : i8
// CHECK: linalg.fill ins(%[[Z]] : i8)
// CHECK: iterator_types = ["reduction", "parallel"]
// CHECK: arith.maxui
// CHECK: return %{{.+}}, %arg0
func.func @max_unsigned(%a: tensor<2x3xui8>) -> (tensor<3xui8>, tensor<2x3xui8>) {
  %none = kiln.none
  %0 = kiln.reduce_max %a, %none {axes = array<i64: 0>, keepdims = 0 : i64} : (tensor<2x3xui8>, none) -> tensor<3xui8>
  %1 = kiln.reduce_min %a, %none {noop_with_empty_axes = 1 : i64} : (tensor<2x3xui8>, none) -> tensor<2x3xui8>
  return %0, %1 : tensor<3xui8>, tensor<2x3xui8>
}

// -----

// LogSumExp is max-shifted: max, shift (0 where infinite), sum of
// exp(x - shift), log(sum) + shift.
// CHECK-LABEL: func.func @log_sum_exp
// CHECK: %[[NINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK: linalg.fill ins(%[[NINF]] : f32)
// CHECK: arith.maximumf
// CHECK: %[[SHIFT:.+]] = linalg.generic
// CHECK: math.absf
// CHECK: arith.select
// CHECK: %[[SUM:.+]] = linalg.generic {{.*}} ins(%arg0, %[[SHIFT]] : tensor<2x4xf32>, tensor<2xf32>)
// CHECK: arith.subf
// CHECK: math.exp
// CHECK: linalg.generic {{.*}} ins(%[[SUM]], %[[SHIFT]] : tensor<2xf32>, tensor<2xf32>)
// CHECK: %[[LOG:.+]] = math.log
// CHECK: arith.addf %[[LOG]]
func.func @log_sum_exp(%a: tensor<2x4xf32>) -> tensor<2x1xf32> {
  %axes = kiln.constant dense<[1]> : tensor<1xi64>
  %0 = kiln.reduce_log_sum_exp %a, %axes : (tensor<2x4xf32>, tensor<1xi64>) -> tensor<2x1xf32>
  return %0 : tensor<2x1xf32>
}

// -----

// L2 of everything with keepdims: a 0-d accumulator expanded with an empty
// reassociation.
// CHECK-LABEL: func.func @l2_all
// CHECK: arith.mulf
// CHECK: math.sqrt
// CHECK: tensor.expand_shape %{{.+}} [] output_shape [1, 1] : tensor<f32> into tensor<1x1xf32>
func.func @l2_all(%a: tensor<2x4xf32>) -> tensor<1x1xf32> {
  %none = kiln.none
  %0 = kiln.reduce_l2 %a, %none : (tensor<2x4xf32>, none) -> tensor<1x1xf32>
  return %0 : tensor<1x1xf32>
}

// -----

// ArgMax: value and index carried together, starting (as ONNX Runtime)
// from the first element along the axis; select_last_index makes ties win
// (>=); the index comes from linalg.index of the axis.
// CHECK-LABEL: func.func @arg_max
// CHECK: %[[FIRST:.+]] = tensor.extract_slice %arg0[0, 0] [2, 1] [1, 1] : tensor<2x3xi32> to tensor<2xi32>
// CHECK: %[[INIT:.+]] = linalg.generic {{.*}} ins(%[[FIRST]] : tensor<2xi32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<2x3xi32>) outs(%[[INIT]], %{{.+}} : tensor<2xi32>, tensor<2xi64>)
// CHECK: %[[B:.+]] = arith.cmpi sge
// CHECK: %[[I:.+]] = linalg.index 1 : index
// CHECK: %[[I64:.+]] = arith.index_cast %[[I]] : index to i64
// CHECK: arith.select %[[B]], %{{.+}}, %{{.+}} : i32
// CHECK: arith.select %[[B]], %[[I64]], %{{.+}} : i64
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]
// CHECK: arith.cmpf olt
func.func @arg_max(%a: tensor<2x3xi32>, %b: tensor<2x3xf32>) -> (tensor<2xi64>, tensor<1x3xi64>) {
  %0 = kiln.arg_max %a {axis = -1 : i64, keepdims = 0 : i64, select_last_index = 1 : i64} : (tensor<2x3xi32>) -> tensor<2xi64>
  %1 = kiln.arg_min %b {axis = 0 : i64} : (tensor<2x3xf32>) -> tensor<1x3xi64>
  return %0, %1 : tensor<2xi64>, tensor<1x3xi64>
}

// -----

// Axes known only at run time: the static shapes decide (keepdims: the dims
// that become 1; without: the one way the result dims embed).
// CHECK-LABEL: func.func @runtime_axes
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]
// CHECK: tensor.expand_shape
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel", "parallel"]
// CHECK-NOT: tensor.expand_shape
// CHECK: return
func.func @runtime_axes(%a: tensor<2x3x4xf32>, %axes: tensor<1xi64>) -> (tensor<2x1x4xf32>, tensor<3x4xf32>) {
  %0 = kiln.reduce_sum %a, %axes : (tensor<2x3x4xf32>, tensor<1xi64>) -> tensor<2x1x4xf32>
  %1 = kiln.reduce_sum %a, %axes {keepdims = 0 : i64} : (tensor<2x3x4xf32>, tensor<1xi64>) -> tensor<3x4xf32>
  return %0, %1 : tensor<2x1x4xf32>, tensor<3x4xf32>
}

// -----

// Float ReduceMax as ONNX Runtime: from the first element of each reduced
// slice (widened to f32 for f16), take x when x > acc (NaN after the first
// element is skipped).
// CHECK-LABEL: func.func @max_float
// CHECK: %[[FIRST:.+]] = tensor.extract_slice %arg0[0, 0] [1, 3] [1, 1] : tensor<2x3xf16> to tensor<3xf16>
// CHECK: %[[INIT:.+]] = linalg.generic {{.*}} ins(%[[FIRST]] : tensor<3xf16>) outs(%{{.+}} : tensor<3xf32>)
// CHECK: arith.extf
// CHECK: linalg.generic {{.*}} ins(%arg0 : tensor<2x3xf16>) outs(%[[INIT]] : tensor<3xf32>)
// CHECK: %[[X:.+]] = arith.extf %{{.+}} : f16 to f32
// CHECK: %[[GT:.+]] = arith.cmpf ogt, %[[X]], %[[ACC:.+]] : f32
// CHECK: arith.select %[[GT]], %[[X]], %[[ACC]] : f32
// CHECK: arith.truncf %{{.+}} : f32 to f16
func.func @max_float(%a: tensor<2x3xf16>) -> tensor<3xf16> {
  %none = kiln.none
  %0 = kiln.reduce_max %a, %none {axes = array<i64: 0>, keepdims = 0 : i64} : (tensor<2x3xf16>, none) -> tensor<3xf16>
  return %0 : tensor<3xf16>
}

// -----

// Integer L2 as ONNX Runtime: the sum of squares in i32, the sqrt through
// f64 and back toward zero.
// CHECK-LABEL: func.func @l2_int
// CHECK: arith.muli
// CHECK: arith.addi
// CHECK: linalg.generic
// CHECK: %[[F:.+]] = arith.sitofp %{{.+}} : i32 to f64
// CHECK: %[[S:.+]] = math.sqrt %[[F]] : f64
// CHECK: arith.fptosi %[[S]] : f64 to i32
func.func @l2_int(%a: tensor<2x4xi32>) -> tensor<2xi32> {
  %none = kiln.none
  %0 = kiln.reduce_l2 %a, %none {axes = array<i64: 1>, keepdims = 0 : i64} : (tensor<2x4xi32>, none) -> tensor<2xi32>
  return %0 : tensor<2xi32>
}
