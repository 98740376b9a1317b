// RUN: kiln-opt %s --kiln-cpu-split-parallel-loops | FileCheck %s

// A thread block with a nested parallel loop (the im2col tile fused into a
// convolution's block) and a buffer of its own: the outer loop keeps enough
// dimensions parallel for the threads, the nested one becomes sequential
// (no nested OpenMP region), and the block's buffer is freed at its end.
// CHECK-LABEL: func.func @block
//       CHECK:   scf.parallel (%[[B:.+]]) = (%{{.+}}) to (%{{.+}}) step (%{{.+}}) {
//       CHECK:     scf.for %[[P:.+]] =
//       CHECK:       %[[BUF:.+]] = memref.alloc() : memref<4x8xf32>
//   CHECK-NOT:       scf.parallel
//       CHECK:       scf.for %[[I:.+]] =
//       CHECK:         scf.for %[[J:.+]] =
//       CHECK:           memref.store %{{.+}}, %[[BUF]][%[[I]], %[[J]]]
//       CHECK:       memref.copy %[[BUF]]
//       CHECK:       memref.dealloc %[[BUF]]
//       CHECK:     scf.reduce
func.func @block(%out: memref<8x1024x4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c1024 = arith.constant 1024 : index
  %c256 = arith.constant 256 : index
  %f = arith.constant 1.0 : f32
  scf.parallel (%b, %p) = (%c0, %c0) to (%c8, %c1024) step (%c1, %c256) {
    %buf = memref.alloc() : memref<4x8xf32>
    scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c8) step (%c1, %c1) {
      memref.store %f, %buf[%i, %j] : memref<4x8xf32>
      scf.reduce
    }
    %dst = memref.subview %out[%b, %p, 0, 0] [1, 1, 4, 8] [1, 1, 1, 1] : memref<8x1024x4x8xf32> to memref<4x8xf32, strided<[8, 1], offset: ?>>
    memref.copy %buf, %dst : memref<4x8xf32> to memref<4x8xf32, strided<[8, 1], offset: ?>>
    scf.reduce
  }
  return
}

// Too little work for a parallel region: a loop whose parallel dimensions
// have one iteration, and an elementwise loop nest of fewer than
// min-parallel-elements (4096) iterations, become sequential.
// CHECK-LABEL: func.func @small
//   CHECK-NOT:   scf.parallel
//       CHECK:   scf.for
//       CHECK:   scf.for
//       CHECK:     scf.for
//   CHECK-NOT:   scf.parallel
//       CHECK:   return
func.func @small(%a: memref<1x8xf32>, %b: memref<16x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %f = arith.constant 1.0 : f32
  scf.parallel (%i) = (%c0) to (%c1) step (%c1) {
    scf.for %j = %c0 to %c8 step %c1 {
      memref.store %f, %a[%i, %j] : memref<1x8xf32>
    }
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c16, %c64) step (%c1, %c1) {
    memref.store %f, %b[%i, %j] : memref<16x64xf32>
    scf.reduce
  }
  return
}

// Enough elementwise work (64 x 128 iterations) stays parallel over the
// outer dimension; a one-dimensional loop with a loop body stays as it is.
// CHECK-LABEL: func.func @large
//       CHECK:   scf.parallel (%{{.+}}) = (%{{.+}}) to (%{{.+}}) step (%{{.+}}) {
//       CHECK:     scf.for
//       CHECK:   scf.parallel (%{{.+}}) = (%{{.+}}) to (%{{.+}}) step (%{{.+}}) {
//       CHECK:     scf.for
func.func @large(%a: memref<64x128xf32>, %b: memref<2x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %f = arith.constant 1.0 : f32
  scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c128) step (%c1, %c1) {
    memref.store %f, %a[%i, %j] : memref<64x128xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c2) step (%c1) {
    scf.for %j = %c0 to %c8 step %c1 {
      memref.store %f, %b[%i, %j] : memref<2x8xf32>
    }
    scf.reduce
  }
  return
}

// Symbolic dims. A thread-block loop (a tiled kernel's: vector code in its
// body) keeps all its dimensions parallel: with a run-time M the row blocks
// may be a single one while the column blocks feed the threads.
// CHECK-LABEL: func.func @thread_blocks
//       CHECK:   scf.parallel (%{{.+}}, %{{.+}}) = (%{{.+}}, %{{.+}}) to (%{{.+}}, %{{.+}}) step (%{{.+}}, %{{.+}}) {
//   CHECK-NOT:     scf.for
//       CHECK:     vector.transfer_write
func.func @thread_blocks(%out: memref<?x512xf32>, %m: index) {
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %c256 = arith.constant 256 : index
  %c512 = arith.constant 512 : index
  %v = arith.constant dense<1.0> : vector<32xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%m, %c512) step (%c32, %c256) {
    vector.transfer_write %v, %out[%i, %j] {in_bounds = [true]} : vector<32xf32>, memref<?x512xf32>
    scf.reduce
  }
  return
}

// An elementwise loop over a run-time batch: the dimensions after the
// run-time one are kept parallel as if it were 1, until the static ones are
// enough (here the channels: 64). When only the run-time trip counts tell
// whether the loop is worth a parallel region (a batch of rows of 512), both
// versions are there, picked at run time: parallel from two rows and 4096
// elements on, sequential below (the static code's choice at the same size).
// CHECK-LABEL: func.func @dynamic_batch
//       CHECK:   scf.parallel (%{{.+}}, %{{.+}}) = (%{{.+}}, %{{.+}}) to (%{{.+}}, %{{.+}}) step (%{{.+}}, %{{.+}}) {
//       CHECK:     scf.for
//       CHECK:       scf.for
//       CHECK:   %[[ROWS:.+]] = arith.cmpi sgt, %{{.+}}, %{{.+}} : index
//       CHECK:   %[[ELEMS:.+]] = arith.cmpi sge, %{{.+}}, %{{.+}} : index
//       CHECK:   %[[WORTH:.+]] = arith.andi %[[ROWS]], %[[ELEMS]] : i1
//       CHECK:   scf.if %[[WORTH]] {
//       CHECK:     scf.parallel (%{{.+}}) = (%{{.+}}) to (%{{.+}}) step (%{{.+}}) {
//       CHECK:       scf.for
//       CHECK:   } else {
//   CHECK-NOT:     scf.parallel
//       CHECK:     scf.for
//       CHECK:       scf.for
func.func @dynamic_batch(%a: memref<?x64x56x56xf32>, %b: memref<?x512xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c56 = arith.constant 56 : index
  %c64 = arith.constant 64 : index
  %c512 = arith.constant 512 : index
  %f = arith.constant 1.0 : f32
  scf.parallel (%i, %j, %k, %l) = (%c0, %c0, %c0, %c0) to (%n, %c64, %c56, %c56) step (%c1, %c1, %c1, %c1) {
    memref.store %f, %a[%i, %j, %k, %l] : memref<?x64x56x56xf32>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%n, %c512) step (%c1, %c1) {
    memref.store %f, %b[%i, %j] : memref<?x512xf32>
    scf.reduce
  }
  return
}
