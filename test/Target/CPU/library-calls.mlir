// kiln-cpu-library-calls (--kernels=library) on bufferized IR: matmuls and
// convolutions become calls into libkiln_abi_blas.a, and a convolution takes
// in its input's zero padding, its output's initialization (bias broadcast
// or zeros) and the Relu / residual epilogue after it, when the buffers show
// that nothing else sees the difference.
//
// RUN: kiln-opt %s --kiln-cpu-library-calls --cse | FileCheck %s

#bias = affine_map<(d0, d1, d2, d3) -> (d1)>
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>

// Padding, bias and Relu folded: the call reads the unpadded input (%arg0),
// the bias (%arg2) and writes the Relu into %arg3; no loops are left.
// CHECK-LABEL: func.func @pad_bias_relu
// CHECK-NOT: linalg.
// CHECK-NOT: memref.copy
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG: %[[X:.*]] = memref.extract_aligned_pointer_as_index %arg0
// CHECK-DAG: %[[B:.*]] = memref.extract_aligned_pointer_as_index %arg2
// CHECK-DAG: %[[Y:.*]] = memref.extract_aligned_pointer_as_index %arg3
// CHECK: call @kiln_abi_conv2d_nchw_f32(%[[X]],
// CHECK-SAME: %[[C1]], %[[C1]], %[[C2]], %[[B]], %{{.*}}, %[[C2]], %{{.*}}, %{{.*}}, %[[Y]], %{{.*}})
// CHECK-NOT: memref<1x3x10x10xf32>
// CHECK-NOT: linalg.
// CHECK: return
func.func @pad_bias_relu(%x: memref<1x3x8x8xf32>, %w: memref<4x3x3x3xf32>,
                         %b: memref<4xf32>, %y: memref<1x4x8x8xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %pad = memref.alloc() {alignment = 64 : i64} : memref<1x3x10x10xf32>
  linalg.map outs(%pad : memref<1x3x10x10xf32>)
    (%init: f32) {
      linalg.yield %zero : f32
    }
  %view = memref.subview %pad[0, 0, 1, 1] [1, 3, 8, 8] [1, 1, 1, 1]
      : memref<1x3x10x10xf32> to memref<1x3x8x8xf32, strided<[300, 100, 10, 1], offset: 11>>
  memref.copy %x, %view : memref<1x3x8x8xf32> to memref<1x3x8x8xf32, strided<[300, 100, 10, 1], offset: 11>>
  %acc = memref.alloc() {alignment = 64 : i64} : memref<1x4x8x8xf32>
  linalg.generic {indexing_maps = [#bias, #id],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%b : memref<4xf32>) outs(%acc : memref<1x4x8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%pad, %w : memref<1x3x10x10xf32>, memref<4x3x3x3xf32>)
      outs(%acc : memref<1x4x8x8xf32>)
  linalg.generic {indexing_maps = [#id, #id],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%acc : memref<1x4x8x8xf32>) outs(%y : memref<1x4x8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  }
  memref.dealloc %pad : memref<1x3x10x10xf32>
  memref.dealloc %acc : memref<1x4x8x8xf32>
  return
}

// The residual Add then Relu, in place (flags 3), zero-initialized output
// (mode 1), no padding (0, 0).
// CHECK-LABEL: func.func @zero_residual_relu
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[C3:.*]] = arith.constant 3 : index
// CHECK-DAG: %[[R:.*]] = memref.extract_aligned_pointer_as_index %arg2
// CHECK-DAG: %[[Y:.*]] = memref.extract_aligned_pointer_as_index %arg3
// CHECK: call @kiln_abi_conv2d_nchw_f32(
// CHECK-SAME: %[[C0]], %[[C0]], %[[C1]], %[[C0]], %[[C0]], %[[C3]], %[[R]], %{{.*}}, %[[Y]], %{{.*}})
// CHECK-NOT: linalg.
// CHECK: return
func.func @zero_residual_relu(%x: memref<1x4x6x6xf32>, %w: memref<4x4x3x3xf32>,
                              %res: memref<1x4x4x4xf32>, %y: memref<1x4x4x4xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<1x4x4x4xf32>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : memref<1x4x6x6xf32>, memref<4x4x3x3xf32>)
      outs(%y : memref<1x4x4x4xf32>)
  linalg.generic {indexing_maps = [#id, #id, #id],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%res, %y : memref<1x4x4x4xf32>, memref<1x4x4x4xf32>)
      outs(%y : memref<1x4x4x4xf32>) {
  ^bb0(%a: f32, %c: f32, %out: f32):
    %s = arith.addf %c, %a : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  }
  return
}

// Left alone: the unpadded input is written between the copy and the
// convolution (the padded copy is the old value), and the epilogue is not
// Add/Relu. The call accumulates into the output (mode 0, no epilogue).
// CHECK-LABEL: func.func @not_folded
// CHECK: linalg.map
// CHECK: memref.copy
// CHECK: linalg.fill
// CHECK: call @kiln_abi_conv2d_nchw_f32(
// CHECK: linalg.generic
// CHECK: arith.mulf
// CHECK: return
func.func @not_folded(%x: memref<1x3x8x8xf32>, %w: memref<4x3x3x3xf32>,
                      %y: memref<1x4x8x8xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %two = arith.constant 2.000000e+00 : f32
  %pad = memref.alloc() {alignment = 64 : i64} : memref<1x3x10x10xf32>
  linalg.map outs(%pad : memref<1x3x10x10xf32>)
    (%init: f32) {
      linalg.yield %zero : f32
    }
  %view = memref.subview %pad[0, 0, 1, 1] [1, 3, 8, 8] [1, 1, 1, 1]
      : memref<1x3x10x10xf32> to memref<1x3x8x8xf32, strided<[300, 100, 10, 1], offset: 11>>
  memref.copy %x, %view : memref<1x3x8x8xf32> to memref<1x3x8x8xf32, strided<[300, 100, 10, 1], offset: 11>>
  linalg.fill ins(%two : f32) outs(%x : memref<1x3x8x8xf32>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%pad, %w : memref<1x3x10x10xf32>, memref<4x3x3x3xf32>)
      outs(%y : memref<1x4x8x8xf32>)
  linalg.generic {indexing_maps = [#id, #id],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%y : memref<1x4x8x8xf32>) outs(%y : memref<1x4x8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.mulf %in, %two : f32
    linalg.yield %r : f32
  }
  memref.dealloc %pad : memref<1x3x10x10xf32>
  return
}

// Matmuls: one call each, strides passed through.
// CHECK-LABEL: func.func @matmuls
// CHECK: call @kiln_abi_sgemm(
// CHECK: call @kiln_abi_sgemm_batched(
// CHECK-NOT: linalg.
func.func @matmuls(%a: memref<4x8xf32>, %b: memref<8x16xf32>, %c: memref<4x16xf32>,
                   %ba: memref<2x4x8xf32>, %bb: memref<2x8x16xf32>, %bc: memref<2x4x16xf32>) {
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>) outs(%c : memref<4x16xf32>)
  linalg.batch_matmul ins(%ba, %bb : memref<2x4x8xf32>, memref<2x8x16xf32>) outs(%bc : memref<2x4x16xf32>)
  return
}
