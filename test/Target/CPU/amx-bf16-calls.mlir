// RUN: kiln-opt %s --kiln-cpu-amx-bf16-calls | FileCheck %s

// bf16 x bf16 -> f32 matmuls become an scf.parallel over (batch,) blocks of
// 128 columns, each a call to kiln_abi_bf16gemm_f32 (A, B, C as aligned
// pointer, offset, row stride; then M, K, n0, n1). f32 matmuls, and matmuls
// with user-defined (transposed) maps, stay.
// CHECK: func.func private @kiln_abi_bf16gemm_f32(index, index, index, index, index, index, index, index, index, index, index, index, index)

// CHECK-LABEL: func.func @matmul
// CHECK-DAG: %[[C128:.+]] = arith.constant 128 : index
// CHECK: %[[BLOCKS:.+]] = arith.ceildivui %{{.+}}, %[[C128]]
// CHECK: scf.parallel (%[[B:.+]]) = (%{{.+}}) to (%[[BLOCKS]])
// CHECK: %[[N0:.+]] = arith.muli %[[B]], %[[C128]]
// CHECK: %[[N1:.+]] = arith.minui
// CHECK: func.call @kiln_abi_bf16gemm_f32({{.*}}, %[[N0]], %[[N1]])
// CHECK-NOT: linalg.matmul ins({{.*}}bf16
// CHECK: linalg.matmul ins(%{{.+}}, %{{.+}} : memref<8x300xf32>
func.func @matmul(%a: memref<8x300xbf16>, %b: memref<300x130xbf16>, %c: memref<8x130xf32>,
                  %af: memref<8x300xf32>, %bf: memref<300x130xf32>) {
  linalg.matmul ins(%a, %b : memref<8x300xbf16>, memref<300x130xbf16>) outs(%c : memref<8x130xf32>)
  linalg.matmul ins(%af, %bf : memref<8x300xf32>, memref<300x130xf32>) outs(%c : memref<8x130xf32>)
  return
}

// The batch is the outer parallel dimension; each call's offsets step by
// the operands' batch strides.
// CHECK-LABEL: func.func @batch
// CHECK: scf.parallel (%[[I:.+]], %[[J:.+]]) =
// CHECK: arith.muli %[[I]]
// CHECK: func.call @kiln_abi_bf16gemm_f32
// CHECK-NOT: linalg.batch_matmul
func.func @batch(%a: memref<4x64x32xbf16>, %b: memref<4x32x64xbf16>, %c: memref<4x64x64xf32>) {
  linalg.batch_matmul ins(%a, %b : memref<4x64x32xbf16>, memref<4x32x64xbf16>) outs(%c : memref<4x64x64xf32>)
  return
}

// A transposed B (user-defined maps) is not the kernel's layout.
// CHECK-LABEL: func.func @transposed
// CHECK-NOT: func.call
// CHECK: linalg.matmul
func.func @transposed(%a: memref<8x32xbf16>, %b: memref<64x32xbf16>, %c: memref<8x64xf32>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%a, %b : memref<8x32xbf16>, memref<64x32xbf16>) outs(%c : memref<8x64xf32>)
  return
}

// Fewer than 4 rows (a GEMV): left to the vectorized codegen kernel.
// CHECK-LABEL: func.func @gemv
// CHECK-NOT: func.call
// CHECK: linalg.matmul
func.func @gemv(%a: memref<2x32xbf16>, %b: memref<32x64xbf16>, %c: memref<2x64xf32>) {
  linalg.matmul ins(%a, %b : memref<2x32xbf16>, memref<32x64xbf16>) outs(%c : memref<2x64xf32>)
  return
}
