// REQUIRES: cuda-target, ptxas
// Bufferization gives the Exp's result the matmul accumulator's buffer
// (the accumulator is dead after the bias add): the epilogue still folds
// into the matmul kernel, because the Exp overwrites the whole buffer
// without reading it. (Were the buffer read later instead, C would have to
// be stored and the add + relu would stay a kernel of their own.)
//
// RUN: kiln-compile %s -O0 --target=cuda:sm_80 --emit=ptx -o %t.ptx
// RUN: FileCheck %s < %t.ptx
// RUN: %ptxas -arch=sm_80 %t.ptx -o %t.cubin
// RUN: kiln-compile %s -O0 --emit=linalg -o - | kiln-opt --pass-pipeline='builtin.module(linalg-fuse-elementwise-ops,one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map})' | FileCheck %s --check-prefix=BUF

func.func @main(%x: tensor<64x64xf32>, %w: tensor<64x32xf32>, %b: tensor<32xf32>, %s: tensor<64x32xf32>) -> (tensor<64x32xf32>, tensor<64x32xf32>) {
  %m = kiln.matmul %x, %w : (tensor<64x64xf32>, tensor<64x32xf32>) -> tensor<64x32xf32> loc("/r/MatMul")
  %a = kiln.add %m, %b : (tensor<64x32xf32>, tensor<32xf32>) -> tensor<64x32xf32> loc("/r/Add")
  %r = kiln.relu %a : tensor<64x32xf32> loc("/r/Relu")
  %e = kiln.exp %s : tensor<64x32xf32> loc("/r/Exp")
  return %r, %e : tensor<64x32xf32>, tensor<64x32xf32>
}

// The buffer reuse this test is about.
// BUF: %[[ACC:.*]] = memref.alloc() {{.*}} : memref<64x32xf32>
// BUF: linalg.matmul {{.*}} outs(%[[ACC]] : memref<64x32xf32>)
// BUF: linalg.generic {{.*}} ins(%[[ACC]], %{{.*}} : memref<64x32xf32>, memref<32xf32>)
// BUF: linalg.generic {{.*}} outs(%[[ACC]] : memref<64x32xf32>)
// BUF: math.exp

// CHECK: // kernel k0_matmul_add_relu <- ONNX nodes: /r/MatMul /r/Add /r/Relu
// CHECK-NEXT: // kernel k1_exp <- ONNX nodes: /r/Exp
// CHECK-NOT: // kernel
// CHECK: .visible .entry k0_matmul_add_relu(
// CHECK: fma.rn.f32
// CHECK: max.NaN.f32
// CHECK: .visible .entry k1_exp(
