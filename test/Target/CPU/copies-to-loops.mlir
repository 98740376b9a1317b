// RUN: kiln-opt %s --kiln-cpu-copies-to-loops | FileCheck %s

// A copy into the interior of a padded buffer becomes linalg.copy (parallel,
// vectorizable loops later) instead of a one-thread memrefCopy call; a copy
// between two identity layouts stays one memcpy.
// CHECK-LABEL: func.func @copies
//       CHECK:   %[[VIEW:.+]] = memref.subview
//       CHECK:   linalg.copy ins(%{{.+}} : memref<2x3x4x4xf32>) outs(%[[VIEW]] : memref<2x3x4x4xf32, strided<[108, 36, 6, 1], offset: 7>>)
//       CHECK:   memref.copy %{{.+}}, %{{.+}} : memref<2x3x4x4xf32> to memref<2x3x4x4xf32>
func.func @copies(%in: memref<2x3x4x4xf32>, %padded: memref<2x3x6x6xf32>, %out: memref<2x3x4x4xf32>) {
  %view = memref.subview %padded[0, 0, 1, 1] [2, 3, 4, 4] [1, 1, 1, 1] : memref<2x3x6x6xf32> to memref<2x3x4x4xf32, strided<[108, 36, 6, 1], offset: 7>>
  memref.copy %in, %view : memref<2x3x4x4xf32> to memref<2x3x4x4xf32, strided<[108, 36, 6, 1], offset: 7>>
  memref.copy %in, %out : memref<2x3x4x4xf32> to memref<2x3x4x4xf32>
  return
}

// The same with a run-time batch (symbolic dims).
// CHECK-LABEL: func.func @dynamic_copies
//       CHECK:   linalg.copy ins(%{{.+}} : memref<?x3x4x4xf32>) outs(%{{.+}} : memref<?x3x4x4xf32, strided<[108, 36, 6, 1], offset: 7>>)
//       CHECK:   memref.copy %{{.+}}, %{{.+}} : memref<?x3x4x4xf32> to memref<?x3x4x4xf32>
func.func @dynamic_copies(%in: memref<?x3x4x4xf32>, %padded: memref<?x3x6x6xf32>, %out: memref<?x3x4x4xf32>, %n: index) {
  %view = memref.subview %padded[0, 0, 1, 1] [%n, 3, 4, 4] [1, 1, 1, 1] : memref<?x3x6x6xf32> to memref<?x3x4x4xf32, strided<[108, 36, 6, 1], offset: 7>>
  memref.copy %in, %view : memref<?x3x4x4xf32> to memref<?x3x4x4xf32, strided<[108, 36, 6, 1], offset: 7>>
  memref.copy %in, %out : memref<?x3x4x4xf32> to memref<?x3x4x4xf32>
  return
}
