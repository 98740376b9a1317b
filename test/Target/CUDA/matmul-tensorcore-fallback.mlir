// REQUIRES: cuda-target, ptxas
// A fp16 matmul the tensor-core kernel cannot take (K = 20: its 16-byte
// loads need K and N multiples of 8) keeps the scalar kernel, and
// kiln-compile says so with a remark naming the ONNX node.
//
// RUN: kiln-compile %s -O0 --target=cuda:sm_80 --emit=ptx -o %t.ptx 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: FileCheck %s < %t.ptx
// RUN: %ptxas -arch=sm_80 %t.ptx -o %t.cubin

func.func @main(%x: tensor<64x20xf16>, %w: tensor<20x32xf16>) -> tensor<64x32xf16> {
  %m = kiln.matmul %x, %w : (tensor<64x20xf16>, tensor<20x32xf16>) -> tensor<64x32xf16> loc("/f/MatMul")
  return %m : tensor<64x32xf16>
}

// REMARK: remark: CUDA: the contraction of ONNX node '/f/MatMul' is not on tensor cores (K and N must be multiples of 8 (K = 20, N = 32)); it keeps the scalar kernel

// CHECK: // kernel k0_matmul <- ONNX nodes: /f/MatMul
// CHECK: .visible .entry k0_matmul(
// CHECK-NOT: mma.sync
// CHECK-NOT: ldmatrix
// CHECK: {{fma.rn.f32|mul.rn.f32}}
