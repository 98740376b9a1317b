// RUN: kiln-opt %s --kiln-cpu-int8-calls | FileCheck %s

// The marked int8 contraction becomes an scf.parallel over blocks of 128
// columns, each a call to kiln_abi_qgemm_s32 (flags: bit 0 A read as u8
// without the xor 0x80 shift, bit 1 W is u8). Unmarked generics stay.
// CHECK: func.func private @kiln_abi_qgemm_s32(index, index, index, index, index, index, index, index, index, index, index, index, index, index)
// CHECK-LABEL: func.func @qgemm
// CHECK-DAG: %[[C128:.+]] = arith.constant 128 : index
// CHECK-DAG: %[[C1:.+]] = arith.constant 1 : index
// CHECK-DAG: %[[BLOCKS:.+]] = arith.ceildivui %{{.+}}, %[[C128]]
// CHECK: scf.parallel (%[[B:.+]]) = (%{{.+}}) to (%[[BLOCKS]]) step (%[[C1]])
// CHECK: %[[N0:.+]] = arith.muli %[[B]], %[[C128]]
// CHECK: %[[N1:.+]] = arith.minui
// CHECK: func.call @kiln_abi_qgemm_s32({{.*}}, %[[N0]], %[[N1]], %{{.+}})
// CHECK-NOT: kiln.int8_matmul
// CHECK: linalg.generic
#a = affine_map<(m, n, k) -> (m, k)>
#w = affine_map<(m, n, k) -> (n, k)>
#c = affine_map<(m, n, k) -> (m, n)>
func.func @qgemm(%a: memref<8x300xi8>, %w: memref<130x300xi8>, %c: memref<8x130xi32>) {
  linalg.generic {indexing_maps = [#a, #w, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %w : memref<8x300xi8>, memref<130x300xi8>) outs(%c : memref<8x130xi32>)
      attrs = {kiln.int8_matmul = {a_shifted = true, w_unsigned = false}} {
  ^bb0(%x: i8, %y: i8, %acc: i32):
    %m = arith.constant -128 : i8
    %xs = arith.xori %x, %m : i8
    %xe = arith.extui %xs : i8 to i32
    %ye = arith.extsi %y : i8 to i32
    %p = arith.muli %xe, %ye : i32
    %s = arith.addi %p, %acc : i32
    linalg.yield %s : i32
  }
  // The same contraction unmarked: plain loops later.
  linalg.generic {indexing_maps = [#a, #w, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %w : memref<8x300xi8>, memref<130x300xi8>) outs(%c : memref<8x130xi32>) {
  ^bb0(%x: i8, %y: i8, %acc: i32):
    %xe = arith.extui %x : i8 to i32
    %ye = arith.extsi %y : i8 to i32
    %p = arith.muli %xe, %ye : i32
    %s = arith.addi %p, %acc : i32
    linalg.yield %s : i32
  }
  return
}
