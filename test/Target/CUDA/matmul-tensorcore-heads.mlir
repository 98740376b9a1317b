// REQUIRES: cuda-target, ptxas
// A projection reshaped into heads ([2, 16, 64] x [64, 128] -> [2, 16, 4,
// 32]): reshape propagation gives the contraction two m loops (batch, seq)
// and two n loops (heads, head dim); the tensor-core kernel folds both
// pairs (M = 32, N = 128: a grid of 2 x 1 blocks) and writes the 4-D
// result through the epilogue's own indexing. The output projection of
// heads has two k loops, folded the same way.
//
// RUN: kiln-compile %s -O0 --target=cuda:sm_80 --emit=ptx -o %t.ptx 2>&1 | FileCheck %s --check-prefix=REMARK --allow-empty
// RUN: FileCheck %s < %t.ptx
// RUN: %ptxas -arch=sm_80 %t.ptx -o %t.cubin
// RUN: kiln-opt %s --convert-kiln-to-linalg --kiln-cuda-pipeline | FileCheck %s --check-prefix=HOST

func.func @main(%x: tensor<2x16x64xf16>, %w: tensor<64x128xf16>,
                %o: tensor<2x16x4x32xf16>, %wo: tensor<128x64xf16>)
    -> (tensor<2x16x4x32xf16>, tensor<2x16x64xf16>) {
  %m = kiln.matmul %x, %w : (tensor<2x16x64xf16>, tensor<64x128xf16>) -> tensor<2x16x128xf16> loc("/h/MatMul")
  %s = kiln.constant dense<[2, 16, 4, 32]> : tensor<4xi64>
  %r = kiln.reshape %m, %s : (tensor<2x16x128xf16>, tensor<4xi64>) -> tensor<2x16x4x32xf16> loc("/h/Reshape")
  // The output projection of heads: [2, 16, 4, 32] reshaped to [2, 16,
  // 128] x [128, 64]: two k loops (heads, head dim) folded into K = 128.
  %s2 = kiln.constant dense<[2, 16, 128]> : tensor<3xi64>
  %f = kiln.reshape %o, %s2 : (tensor<2x16x4x32xf16>, tensor<3xi64>) -> tensor<2x16x128xf16> loc("/h/Reshape2")
  %p = kiln.matmul %f, %wo : (tensor<2x16x128xf16>, tensor<128x64xf16>) -> tensor<2x16x64xf16> loc("/h/OutProj")
  return %r, %p : tensor<2x16x4x32xf16>, tensor<2x16x64xf16>
}

// REMARK-NOT: remark
// CHECK: // kernel k0_matmul <- ONNX nodes: /h/MatMul
// CHECK-NEXT: // kernel k1_matmul <- ONNX nodes: /h/OutProj
// CHECK-NOT: // kernel
// CHECK: .visible .entry k0_matmul(
// CHECK: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// CHECK: .visible .entry k1_matmul(
// CHECK: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// CHECK-NOT: .entry

// HOST: gpu.launch_func {{ *}}@kiln_kernels::@k0_matmul blocks in (%c2, %c1, %c1) threads in (%c128, %c1, %c1)
// HOST: gpu.launch_func {{ *}}@kiln_kernels::@k1_matmul blocks in (%c1, %c1, %c1) threads in (%c128, %c1, %c1)
// HOST-NOT: gpu.launch_func
