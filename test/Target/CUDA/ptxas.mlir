// REQUIRES: cuda-target, ptxas
// ptxas (CUDA toolkit, no GPU needed) assembles the PTX Kiln writes for
// sm_80 (A100), sm_89 (L4/L40, PTX ISA 7.8) and sm_90 (H100/H200).
//
// RUN: kiln-compile %s -O0 --target=cuda:sm_80 --emit=ptx -o %t80.ptx
// RUN: %ptxas -arch=sm_80 %t80.ptx -o %t80.cubin
// RUN: kiln-compile %s -O0 --target=cuda:sm_89 --emit=ptx -o %t89.ptx
// RUN: %ptxas -arch=sm_89 %t89.ptx -o %t89.cubin
// RUN: kiln-compile %s -O0 --target=cuda:sm_90 --emit=ptx -o %t90.ptx
// RUN: %ptxas -arch=sm_90 %t90.ptx -o %t90.cubin
// RUN: %ptxas -arch=sm_90 %t90.ptx -o %t90b.cubin --verbose 2>&1 | FileCheck %s

func.func @main(%x: tensor<64x64xf32>, %w: tensor<64x32xf32>, %b: tensor<32xf32>, %s: tensor<8x128xf32>) -> (tensor<64x32xf32>, tensor<8x128xf32>) {
  %m = kiln.matmul %x, %w : (tensor<64x64xf32>, tensor<64x32xf32>) -> tensor<64x32xf32> loc("/p/MatMul")
  %a = kiln.add %m, %b : (tensor<64x32xf32>, tensor<32xf32>) -> tensor<64x32xf32> loc("/p/Add")
  %r = kiln.relu %a : tensor<64x32xf32> loc("/p/Relu")
  %p = kiln.softmax %s {axis = -1 : i64} : (tensor<8x128xf32>) -> tensor<8x128xf32> loc("/p/Softmax")
  return %r, %p : tensor<64x32xf32>, tensor<8x128xf32>
}

// CHECK-DAG: Compiling entry function 'k0_matmul_add_relu'
// CHECK-DAG: Compiling entry function 'k1_softmax'
