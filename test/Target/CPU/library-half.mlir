// --kernels=library calls BLAS sgemm for the f32 matmuls; the f16 ones, which
// BLAS does not take, get the codegen micro-kernels (operands widened to f32
// in registers, f32 accumulation) instead of scalar loops: fp16 models ran
// 15-20x slower with library kernels than with codegen ones before.
//
// RUN: kiln-compile %s -O0 --cpu=haswell --kernels=library --emit=llvm-dialect -o - | FileCheck %s
// RUN: kiln-opt %s --split-input-file --kiln-cpu-tile-and-vectorize="half-only=1" | FileCheck %s --check-prefix=PASS

func.func @main(%x: tensor<8x64xf16> {kiln.name = "x"}, %a: tensor<8x64xf32> {kiln.name = "a"}) -> (tensor<8x32xf16> {kiln.name = "z"}, tensor<8x32xf32> {kiln.name = "b"}) {
  %w = kiln.constant dense<0.5> : tensor<64x32xf16>
  %m = kiln.matmul %x, %w : (tensor<8x64xf16>, tensor<64x32xf16>) -> tensor<8x32xf16>
  %v = kiln.constant dense<0.25> : tensor<64x32xf32>
  %n = kiln.matmul %a, %v : (tensor<8x64xf32>, tensor<64x32xf32>) -> tensor<8x32xf32>
  return %m, %n : tensor<8x32xf16>, tensor<8x32xf32>
}

// @mixed's f32 matmul: BLAS, called from the function.
// CHECK-LABEL: llvm.func @mixed(
// CHECK: llvm.call @kiln_abi_sgemm(
// Its f16 matmul, in a kernel function of its own: vector loads of f16
// widened to f32 vectors, f32 FMAs.
// CHECK-LABEL: llvm.func internal @mixed_kernel_
// CHECK: llvm.fpext {{.*}} : vector<{{[0-9]+}}xf16> to vector<{{[0-9]+}}xf32>
// CHECK: llvm.intr.fmuladd{{.*}} -> vector<16xf32>

// -----

// The pass with half-only: the f16 contraction is tiled (scf.forall thread
// blocks, vector.contract on f32), the f32 one is left as linalg.matmul.
// PASS-LABEL: func.func @mixed
// PASS: scf.forall
// PASS: vector.contract {{.*}} into vector<{{[0-9]+}}x{{[0-9]+}}xf32>
// PASS: linalg.matmul ins(%arg2, %arg3 : tensor<32x64xf32>, tensor<64x128xf32>)
func.func @mixed(%a: tensor<32x64xf16>, %b: tensor<64x128xf16>, %c: tensor<32x64xf32>, %d: tensor<64x128xf32>) -> (tensor<32x128xf32>, tensor<32x128xf32>) {
  %cst = arith.constant 0.0 : f32
  %0 = tensor.empty() : tensor<32x128xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<32x128xf32>) -> tensor<32x128xf32>
  %2 = linalg.matmul ins(%a, %b : tensor<32x64xf16>, tensor<64x128xf16>) outs(%1 : tensor<32x128xf32>) -> tensor<32x128xf32>
  %3 = linalg.matmul ins(%c, %d : tensor<32x64xf32>, tensor<64x128xf32>) outs(%1 : tensor<32x128xf32>) -> tensor<32x128xf32>
  return %2, %3 : tensor<32x128xf32>, tensor<32x128xf32>
}
