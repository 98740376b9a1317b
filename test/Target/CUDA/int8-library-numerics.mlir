// REQUIRES: cuda-target, mlir-runner
// kiln-cuda-int8-prepare's rewrite, run on the host: the signed int8
// matmul (what kiln_rt_cuda_qgemm computes) plus 128 * rowsum(W) must give
// exactly what the CPU's contraction (A as u8, a shifted i8) gives, for an
// int8 activation with a weight that is an entry buffer (the row sums are a
// reduction) and for a uint8 activation with a constant weight (the row
// sums are folded). Both pipelines print the same numbers, which are
// numpy's (a - a_zp) @ w.T for these operands.
//
// DEFINE: %{lower} = --one-shot-bufferize=bufferize-function-boundaries --convert-linalg-to-loops --convert-scf-to-cf --expand-strided-metadata --lower-affine --finalize-memref-to-llvm --convert-math-to-llvm --convert-arith-to-llvm --convert-cf-to-llvm --convert-func-to-llvm --reconcile-unrealized-casts
// RUN: kiln-opt %s --convert-kiln-to-linalg \
// RUN:   | mlir-opt %{lower} \
// RUN:   | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN:   | FileCheck %s
// RUN: kiln-opt %s --pass-pipeline='builtin.module(convert-kiln-to-linalg,func.func(kiln-cuda-int8-prepare))' \
// RUN:   | FileCheck %s --check-prefix=PREPARED
// RUN: kiln-opt %s --pass-pipeline='builtin.module(convert-kiln-to-linalg,func.func(kiln-cuda-int8-prepare))' \
// RUN:   | mlir-opt %{lower} \
// RUN:   | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN:   | FileCheck %s

func.func @qmm_i8(%a: tensor<4x8xi8>, %w: tensor<8x8xi8>) -> tensor<4x8xf32> {
  %azp = kiln.constant dense<3> : tensor<i8>
  %none = kiln.none
  %sums = kiln.constant dense<[224, -138, 149, 302, -40, -124, 278, 67]> : tensor<8xi32>
  %scale = kiln.constant dense<1.0> : tensor<f32>
  %y = kiln.quantized_matmul %a, %azp, %w, %none, %sums, %scale, %none, %none, %none
      : (tensor<4x8xi8>, tensor<i8>, tensor<8x8xi8>, none, tensor<8xi32>, tensor<f32>, none, none, none) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

func.func @qmm_u8(%a: tensor<4x8xui8>) -> tensor<4x8xf32> {
  %azp = kiln.constant dense<130> : tensor<ui8>
  %w = kiln.constant dense<[[-128, 127, -12, 70, -36, 28, 69, 106], [-19, -118, 55, 7, 95, -11, -34, -113], [-11, 36, 69, 90, -73, 23, 77, -62], [-40, 87, 20, 2, 44, 2, 123, 64], [-115, -91, 11, 81, -111, 46, 66, 73], [95, -79, 14, 77, -37, -80, -6, -108], [-72, 90, 42, 92, 87, 96, -49, -8], [30, -58, 107, -127, 86, 37, -64, 56]]> : tensor<8x8xi8>
  %none = kiln.none
  %sums = kiln.constant dense<[224, -138, 149, 302, -40, -124, 278, 67]> : tensor<8xi32>
  %scale = kiln.constant dense<1.0> : tensor<f32>
  %y = kiln.quantized_matmul %a, %azp, %w, %none, %sums, %scale, %none, %none, %none
      : (tensor<4x8xui8>, tensor<ui8>, tensor<8x8xi8>, none, tensor<8xi32>, tensor<f32>, none, none, none) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

func.func @main() {
  %ai = kiln.constant dense<[[-128, 127, 65, 115, -120, -92, 82, 114], [-65, -49, 94, -20, -59, 83, -63, -24], [36, 12, -107, -121, 93, 64, 86, 9], [81, -44, -13, 73, -97, -51, -97, -12]]> : tensor<4x8xi8>
  %w = kiln.constant dense<[[-128, 127, -12, 70, -36, 28, 69, 106], [-19, -118, 55, 7, 95, -11, -34, -113], [-11, 36, 69, 90, -73, 23, 77, -62], [-40, 87, 20, 2, 44, 2, 123, 64], [-115, -91, 11, 81, -111, 46, 66, 73], [95, -79, 14, 77, -37, -80, -6, -108], [-72, 90, 42, 92, 87, 96, -49, -8], [30, -58, 107, -127, 86, 37, -64, 56]]> : tensor<8x8xi8>
  %au = kiln.constant dense<[[0, 255, 98, 103, 231, 52, 128, 67], [5, 192, 15, 71, 127, 124, 29, 251], [191, 246, 23, 185, 75, 138, 236, 70], [185, 41, 82, 248, 107, 132, 74, 29]]> : tensor<4x8xui8>
  %yi = call @qmm_i8(%ai, %w) : (tensor<4x8xi8>, tensor<8x8xi8>) -> tensor<4x8xf32>
  %yu = call @qmm_u8(%au) : (tensor<4x8xui8>) -> tensor<4x8xf32>
  %ci = tensor.cast %yi : tensor<4x8xf32> to tensor<*xf32>
  call @printMemrefF32(%ci) : (tensor<*xf32>) -> ()
  %cu = tensor.cast %yu : tensor<4x8xf32> to tensor<*xf32>
  call @printMemrefF32(%cu) : (tensor<*xf32>) -> ()
  return
}

func.func private @printMemrefF32(tensor<*xf32>)

// PREPARED-LABEL: func.func @qmm_i8
// PREPARED-NOT: arith.xori
// PREPARED: linalg.matmul indexing_maps = [#{{.+}}, #{{.+}}, #{{.+}}] {kiln.cuda.qgemm} ins(%arg0, %arg1 : tensor<4x8xi8>, tensor<8x8xi8>)
// PREPARED: iterator_types = ["parallel", "reduction"]} ins(%arg1 : tensor<8x8xi8>)
// PREPARED-LABEL: func.func @qmm_u8
// PREPARED: arith.xori %{{.+}}, %c-128_i8
// PREPARED: linalg.matmul
// PREPARED-SAME: {kiln.cuda.qgemm}
// PREPARED: arith.constant dense<[28672, -17664, 19072, 38656, -5120, -15872, 35584, 8576]> : tensor<8xi32>

// CHECK: [58597,   -33818,   26258,   28711,   36135,   -13060,   8920,   -31645],
// CHECK-NEXT: [-3546,   10797,   6043,   -12444,   15925,   -3643,   7658,   13974],
// CHECK-NEXT: [-5610,   -4228,   -17937,   11690,   -17136,   -18020,   -8023,   9467],
// CHECK-NEXT: [-17263,   -137,   1934,   -25157,   1722,   26529,   -12942,   -10574]]
// CHECK: [18373,   3411,   -4123,   15391,   -18494,   -15433,   18683,   -8745],
// CHECK-NEXT: [26921,   -22137,   -24836,   3153,   4913,   -34797,   7466,   602],
// CHECK-NEXT: [15216,   -22484,   17153,   12416,   -5204,   6607,   -2117,   -37910],
// CHECK-NEXT: [-23193,   18753,   7174,   -25027,   2380,   32605,   -1387,   -17286]]
