// The CPU backend's stages on a small graph: the matmul a
// named linalg op that elementwise fusion leaves alone, the bias+relu chain
// one generic, and the lowered entry exported as kiln_entry(void**).
//
// RUN: kiln-compile %s -O0 --emit=linalg -o - | FileCheck %s --check-prefix=LINALG
// RUN: kiln-compile %s -O0 --emit=llvm -o - | FileCheck %s
// RUN: kiln-compile %s -O0 --emit=llvm-dialect -o - | FileCheck %s --check-prefix=LLVM
// RUN: kiln-compile %s -O0 --kernels=library --emit=llvm-dialect -o - | FileCheck %s --check-prefix=LIB
// RUN: kiln-compile %s -O0 --no-parallel --emit=llvm-dialect -o - | FileCheck %s --check-prefix=SERIAL
// RUN: kiln-compile %s -O0 --emit=asm -o - | FileCheck %s --check-prefix=ASM
// RUN: kiln-compile %s -O0 -o %t.kiln && kiln-run %t.kiln --info | FileCheck %s --check-prefix=INFO

func.func @main(%x: tensor<64x64xf32> {kiln.name = "x"}) -> (tensor<64x32xf32> {kiln.name = "y"}) {
  %w = kiln.constant dense<0.5> : tensor<64x32xf32>
  %b = kiln.constant dense<0.25> : tensor<32xf32>
  %w2 = kiln.add %w, %w : (tensor<64x32xf32>, tensor<64x32xf32>) -> tensor<64x32xf32>
  %m = kiln.matmul %x, %w2 : (tensor<64x64xf32>, tensor<64x32xf32>) -> tensor<64x32xf32>
  %a = kiln.add %m, %b : (tensor<64x32xf32>, tensor<32xf32>) -> tensor<64x32xf32>
  %r = kiln.relu %a : tensor<64x32xf32>
  return %r : tensor<64x32xf32>
}

// LINALG-LABEL: func.func @main
// LINALG-SAME: {kiln.name = "x"}
// LINALG: linalg.matmul
// LINALG: linalg.generic
// LINALG-SAME: iterator_types = ["parallel", "parallel"]
// LINALG: arith.addf
// LINALG: arith.maximumf
// LINALG-NOT: linalg.generic

// The optimized LLVM IR exports kiln_entry only (kiln_main is internal and
// inlined into it; no public @main).
// CHECK-NOT: define {{.*}}@main(
// CHECK: define void @kiln_entry(ptr

// LLVM: llvm.func internal @kiln_main(
// LLVM: omp.parallel
// LLVM: llvm.func @kiln_entry(%{{.*}}: !llvm.ptr)
// LLVM: llvm.load
// LLVM: llvm.call @kiln_main

// LIB: llvm.call @kiln_abi_sgemm(
// LIB-NOT: linalg.matmul

// SERIAL-NOT: omp.parallel
// SERIAL: llvm.func @kiln_entry

// ASM: kiln_entry:

// INFO: inputs: 1
// INFO: 0 x float32 [64, 64]
// INFO: outputs: 1
// INFO: 0 y float32 [64, 32]
