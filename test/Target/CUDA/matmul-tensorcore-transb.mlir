// REQUIRES: cuda-target, ptxas
// Gemm with transB = 1 (a [n, k] weight, as PyTorch's Linear exports it):
// Kiln lowers it to a linalg.transpose copy and a matmul; the tensor-core
// kernel reads the [n, k] weight in place instead (its tile staged like
// A's, B fragments by ldmatrix without .trans), so the transpose kernel,
// which would copy the weight on every run, is gone. The bias is folded.
// The f32 kernel does the same, transposing the chunks into its tile.
//
// RUN: kiln-compile %s -O0 --target=cuda:sm_80 --emit=ptx -o %t80.ptx
// RUN: FileCheck %s < %t80.ptx
// RUN: %ptxas -arch=sm_80 %t80.ptx -o %t80.cubin
// RUN: kiln-compile %s -O0 --target=cuda:sm_90 --emit=ptx -o %t90.ptx
// RUN: %ptxas -arch=sm_90 %t90.ptx -o %t90.cubin
// RUN: kiln-opt %s --convert-kiln-to-linalg --kiln-cuda-pipeline | FileCheck %s --check-prefix=HOST

func.func @main(%x: tensor<40x64xf16>, %w: tensor<48x64xf16>, %c: tensor<48xf16>,
                %y: tensor<40x64xf32>, %v: tensor<48x64xf32>, %d: tensor<48xf32>)
    -> (tensor<40x48xf16>, tensor<40x48xf32>) {
  %g = kiln.gemm %x, %w, %c {transB = 1 : i64} : (tensor<40x64xf16>, tensor<48x64xf16>, tensor<48xf16>) -> tensor<40x48xf16> loc("/t/Gemm")
  // f32: the [n, k] chunks are transposed into the [k][n] tile on the way.
  %h = kiln.gemm %y, %v, %d {transB = 1 : i64} : (tensor<40x64xf32>, tensor<48x64xf32>, tensor<48xf32>) -> tensor<40x48xf32> loc("/t/Gemm32")
  return %g, %h : tensor<40x48xf16>, tensor<40x48xf32>
}

// CHECK: // kernel k0_gemm <- ONNX nodes: /t/Gemm
// CHECK-NEXT: // kernel k1_gemm <- ONNX nodes: /t/Gemm32
// CHECK-NOT: // kernel
// CHECK: .visible .entry k0_gemm(
// A's fragments, then B's from the [n, k] tile: no .trans.
// CHECK-NOT: .trans
// CHECK: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK: ldmatrix.sync.aligned.m8n8.x2.shared.b16
// CHECK-NOT: .trans
// CHECK: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// CHECK-NOT: .trans
// CHECK: .visible .entry k1_gemm(
// CHECK: fma.rn.f32
// CHECK-NOT: .entry

// HOST-NOT: linalg.transpose
// HOST: gpu.launch_func {{ *}}@kiln_kernels::@k0_gemm blocks in (%c1, %c1, %c1) threads in (%c128, %c1, %c1) args(%arg0 : memref<40x64xf16>, %arg1 : memref<48x64xf16>, %arg2 : memref<48xf16>, %{{.*}} : memref<40x48xf16>)
// HOST: gpu.launch_func {{ *}}@kiln_kernels::@k1_gemm blocks in (%c1, %c1, %c1) threads in (%c128, %c1, %c1) args(%arg3 : memref<40x64xf32>, %arg4 : memref<48x64xf32>, %arg5 : memref<48xf32>, %{{.*}} : memref<40x48xf32>)
// HOST-NOT: gpu.launch_func
