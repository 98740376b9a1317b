// RUN: kiln-opt %s -split-input-file -kiln-cpu-find-weight-transforms | FileCheck %s

// kiln-cpu-find-weight-transforms: what @main computes from weights alone
// (kiln.weight arguments, constants, run-time sizes) runs on every call.
// Recorded: the transpose of a weight (named by the kiln op it came from
// and its ONNX node), a broadcast of a weight to an input's batch. Not
// recorded: views (collapse_shape), ops that read an input, a fill of a
// constant, a transform whose result is unused, a weight inserted into a
// tensor that an input fills too (a ViT's class token and its patches).

// CHECK: module attributes {kiln.weight_transforms = [
// CHECK-SAME: {bytes = 8192 : i64, onnx_nodes = ["/lm_head/Transpose"], op = "kiln.transpose", weights = ["embed"]},
// CHECK-SAME: {bytes = 0 : i64, onnx_nodes = [], op = "linalg.broadcast", weights = ["bias"]}]}
#map = affine_map<(d0, d1) -> (d0, d1)>
func.func @main(%x: tensor<?x64xf32> {kiln.name = "x"},
                %embed: tensor<32x64xf32> {kiln.weight = "embed"},
                %bias: tensor<64xf32> {kiln.weight = "bias"})
    -> (tensor<?x32xf32>, tensor<?x64xf32>, tensor<2048xf32>, tensor<2x64xf32>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x32xf32>
  %t = linalg.transpose ins(%embed : tensor<32x64xf32>) outs(%e : tensor<64x32xf32>) permutation = [1, 0] loc(#lm)
  %n = tensor.dim %x, %c0 : tensor<?x64xf32>
  %acc0 = tensor.empty(%n) : tensor<?x32xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc0 : tensor<?x32xf32>) -> tensor<?x32xf32>
  %y = linalg.matmul ins(%x, %t : tensor<?x64xf32>, tensor<64x32xf32>) outs(%acc : tensor<?x32xf32>) -> tensor<?x32xf32>
  %be = tensor.empty(%n) : tensor<?x64xf32>
  %b = linalg.broadcast ins(%bias : tensor<64xf32>) outs(%be : tensor<?x64xf32>) dimensions = [0]
  %s = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : tensor<?x64xf32>, tensor<?x64xf32>) outs(%be : tensor<?x64xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %r = arith.addf %a, %c : f32
    linalg.yield %r : f32
  } -> tensor<?x64xf32>
  %flat = tensor.collapse_shape %embed [[0, 1]] : tensor<32x64xf32> into tensor<2048xf32>
  %e2 = tensor.empty() : tensor<64x32xf32>
  %unused = linalg.transpose ins(%embed : tensor<32x64xf32>) outs(%e2 : tensor<64x32xf32>) permutation = [1, 0]
  %cat0 = tensor.empty() : tensor<2x64xf32>
  %tok = tensor.expand_shape %bias [[0, 1]] output_shape [1, 64] : tensor<64xf32> into tensor<1x64xf32>
  %cat1 = tensor.insert_slice %tok into %cat0[0, 0] [1, 64] [1, 1] : tensor<1x64xf32> into tensor<2x64xf32>
  %row = tensor.extract_slice %x[0, 0] [1, 64] [1, 1] : tensor<?x64xf32> to tensor<1x64xf32>
  %cat = tensor.insert_slice %row into %cat1[1, 0] [1, 64] [1, 1] : tensor<1x64xf32> into tensor<2x64xf32>
  return %y, %s, %flat, %cat : tensor<?x32xf32>, tensor<?x64xf32>, tensor<2048xf32>, tensor<2x64xf32>
}
#lm = loc(fused<"kiln.transpose">["/lm_head/Transpose"])

// -----

// A dynamic batch: the class token broadcast to the batch and inserted
// beside the patches (the concatenation's copy), and a buffer of a run-time
// size that a call fills (oneDNN's output): nothing is a weight transform,
// not even the add of the position embedding to the concatenation.
// CHECK: module attributes {kiln.weight_transforms = []}
#map2 = affine_map<(d0, d1, d2) -> (0, d1, d2)>
#map3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func private @fill(memref<1xf32>, index)
func.func @main(%x: tensor<?x4x8xf32> {kiln.name = "x"},
                %cls: tensor<1x1x8xf32> {kiln.weight = "class_token"},
                %pos: tensor<1x5x8xf32> {kiln.weight = "pos"})
    -> tensor<?x5x8xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x4x8xf32>
  %buf = memref.alloc(%n) {alignment = 64 : i64} : memref<?x4x8xf32>
  %view = memref.reinterpret_cast %buf to offset: [0], sizes: [1], strides: [1] : memref<?x4x8xf32> to memref<1xf32>
  func.call @fill(%view, %n) : (memref<1xf32>, index) -> ()
  %patches = bufferization.to_tensor %buf restrict writable : memref<?x4x8xf32> to tensor<?x4x8xf32>
  %e = tensor.empty(%n) : tensor<?x1x8xf32>
  %tok = linalg.generic {indexing_maps = [#map2, #map3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%cls : tensor<1x1x8xf32>) outs(%e : tensor<?x1x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<?x1x8xf32>
  %cat0 = tensor.empty(%n) : tensor<?x5x8xf32>
  %cat1 = tensor.insert_slice %tok into %cat0[0, 0, 0] [%n, 1, 8] [1, 1, 1] : tensor<?x1x8xf32> into tensor<?x5x8xf32>
  %cat = tensor.insert_slice %patches into %cat1[0, 1, 0] [%n, 4, 8] [1, 1, 1] : tensor<?x4x8xf32> into tensor<?x5x8xf32>
  %sum = linalg.generic {indexing_maps = [#map3, #map2, #map3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%cat, %pos : tensor<?x5x8xf32>, tensor<1x5x8xf32>) outs(%cat0 : tensor<?x5x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<?x5x8xf32>
  return %sum : tensor<?x5x8xf32>
}
