// RUN: kiln-opt %s -split-input-file -kiln-cpu-vectorize-inner-loops | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-cpu-vectorize-inner-loops=vector-bits=256 | FileCheck %s --check-prefix=AVX2

// kiln-cpu-vectorize-inner-loops: the innermost loop of an elementwise loop
// nest gets a vector body; what it cannot take stays a scalar loop.

// A squeeze-and-excitation scale over 32 channels: the activation is read
// and the product written along the channels, the per-channel scale is
// indexed by the channel too. 16 lanes (AVX-512), two vector iterations, no
// remainder (with 256-bit registers, 8 lanes).
// CHECK-LABEL: func.func @se_scale
// CHECK: scf.for %[[W:.+]] = %c0 to %c112 step %c1
// CHECK: scf.for %[[C:.+]] = %c0 to %c32{{.*}} step %c16
// CHECK-NEXT: %[[S:.+]] = vector.load %arg0[%c0, %c0, %c0, %[[C]]] : memref<1x1x1x32xf32>, vector<16xf32>
// CHECK-NEXT: %[[X:.+]] = vector.load %arg1[%c0, %arg3, %[[W]], %[[C]]] : memref<1x112x112x32xf32>, vector<16xf32>
// CHECK-NEXT: %[[Y:.+]] = arith.mulf %[[S]], %[[X]] : vector<16xf32>
// CHECK-NEXT: vector.store %[[Y]], %arg2[%c0, %arg3, %[[W]], %[[C]]] : memref<1x112x112x32xf32>, vector<16xf32>
// CHECK-NOT: memref.load
// AVX2-LABEL: func.func @se_scale
// AVX2: step %c8
// AVX2: vector<8xf32>
func.func @se_scale(%s: memref<1x1x1x32xf32>, %x: memref<1x112x112x32xf32>, %y: memref<1x112x112x32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c112 = arith.constant 112 : index
  scf.parallel (%h) = (%c0) to (%c112) step (%c1) {
    scf.for %w = %c0 to %c112 step %c1 {
      scf.for %c = %c0 to %c32 step %c1 {
        %a = memref.load %s[%c0, %c0, %c0, %c] : memref<1x1x1x32xf32>
        %b = memref.load %x[%c0, %h, %w, %c] : memref<1x112x112x32xf32>
        %p = arith.mulf %a, %b : f32
        memref.store %p, %y[%c0, %h, %w, %c] : memref<1x112x112x32xf32>
      }
    }
    scf.reduce
  }
  return
}

// -----

// A loop-invariant scalar (a row's bias) is loaded once and broadcast; the
// sigmoid's exp and the compare/select are vectorized; 24 channels take 8
// lanes (three vector iterations, no remainder).
// CHECK-LABEL: func.func @invariant_broadcast
// CHECK: %[[B:.+]] = memref.load %arg1[%arg3] : memref<4xf32>
// CHECK: scf.for %[[C:.+]] = %c0{{.*}} to %c24{{.*}} step %c8
// CHECK: %[[X:.+]] = vector.load %arg0[%arg3, %[[C]]] : memref<4x24xf32>, vector<8xf32>
// CHECK: %[[BV:.+]] = vector.broadcast %[[B]] : f32 to vector<8xf32>
// CHECK: arith.addf %[[X]], %[[BV]] : vector<8xf32>
// CHECK: math.exp %{{.+}} : vector<8xf32>
// CHECK: arith.cmpf ogt, %{{.+}}, %{{.+}} : vector<8xf32>
// CHECK: arith.select %{{.+}}, %{{.+}}, %{{.+}} : vector<8xi1>, vector<8xf32>
// CHECK: vector.store
// CHECK-NOT: scf.for
func.func @invariant_broadcast(%x: memref<4x24xf32>, %bias: memref<4xf32>, %y: memref<4x24xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c24 = arith.constant 24 : index
  %one = arith.constant 1.0 : f32
  scf.for %r = %c0 to %c4 step %c1 {
    %b = memref.load %bias[%r] : memref<4xf32>
    scf.for %c = %c0 to %c24 step %c1 {
      %v = memref.load %x[%r, %c] : memref<4x24xf32>
      %t = arith.addf %v, %b : f32
      %e = math.exp %t : f32
      %d = arith.addf %e, %one : f32
      %g = arith.cmpf ogt, %t, %one : f32
      %o = arith.select %g, %d, %t : f32
      memref.store %o, %y[%r, %c] : memref<4x24xf32>
    }
  }
  return
}

// -----

// A run-time trip count: the vector loop up to lb + (ub - lb) / 16 * 16,
// then the scalar loop from there (the remainder).
// CHECK-LABEL: func.func @dynamic_remainder
// CHECK: %[[SPAN:.+]] = arith.subi %arg2, %c0
// CHECK: %[[Q:.+]] = arith.divui %[[SPAN]], %c16
// CHECK: %[[M:.+]] = arith.muli %[[Q]], %c16
// CHECK: %[[END:.+]] = arith.addi %c0{{.*}}, %[[M]]
// CHECK: scf.for %{{.+}} = %c0{{.*}} to %[[END]] step %c16
// CHECK: arith.negf %{{.+}} : vector<16xf32>
// CHECK: scf.for %[[I:.+]] = %[[END]] to %arg2 step %c1
// CHECK: memref.load %arg0[%[[I]]] : memref<?xf32>
func.func @dynamic_remainder(%x: memref<?xf32>, %y: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %x[%i] : memref<?xf32>
    %o = arith.negf %v : f32
    memref.store %o, %y[%i] : memref<?xf32>
  }
  return
}

// -----

// Left alone: a transposed read (the iv not the last index), the iv in
// arithmetic (an iota), a reduction (loop-carried value), a last dim that is
// not contiguous, fewer iterations than lanes, a store to one address, and
// a store of i1 (a byte per element in memory, a bit per lane in a vector),
// and a math op that only libm computes (acosh: a call per scalar).
// CHECK-LABEL: func.func @not_taken
// CHECK-NOT: vector.
// CHECK: return
func.func @not_taken(%x: memref<32x32xf32>, %y: memref<32x32xf32>, %z: memref<32xf32>,
                     %s: memref<32x32xf32, strided<[1, 32]>>, %acc: memref<f32>,
                     %bits: memref<32xi1>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c32 = arith.constant 32 : index
  %zero = arith.constant 0.0 : f32
  scf.for %r = %c0 to %c32 step %c1 {
    scf.for %c = %c0 to %c32 step %c1 {
      %v = memref.load %x[%c, %r] : memref<32x32xf32>
      memref.store %v, %y[%r, %c] : memref<32x32xf32>
    }
  }
  scf.for %i = %c0 to %c32 step %c1 {
    %ii = arith.index_cast %i : index to i64
    %f = arith.sitofp %ii : i64 to f32
    memref.store %f, %z[%i] : memref<32xf32>
  }
  %sum = scf.for %i = %c0 to %c32 step %c1 iter_args(%a = %zero) -> f32 {
    %v = memref.load %z[%i] : memref<32xf32>
    %n = arith.addf %a, %v : f32
    scf.yield %n : f32
  }
  scf.for %i = %c0 to %c32 step %c1 {
    %v = memref.load %s[%c0, %i] : memref<32x32xf32, strided<[1, 32]>>
    memref.store %v, %z[%i] : memref<32xf32>
  }
  scf.for %i = %c0 to %c3 step %c1 {
    %v = memref.load %z[%i] : memref<32xf32>
    memref.store %v, %y[%c0, %i] : memref<32x32xf32>
  }
  scf.for %i = %c0 to %c32 step %c1 {
    %v = memref.load %z[%i] : memref<32xf32>
    memref.store %v, %acc[] : memref<f32>
  }
  scf.for %i = %c0 to %c32 step %c1 {
    %v = memref.load %z[%i] : memref<32xf32>
    %b = arith.cmpf one, %v, %zero : f32
    memref.store %b, %bits[%i] : memref<32xi1>
  }
  scf.for %i = %c0 to %c32 step %c1 {
    %v = memref.load %z[%i] : memref<32xf32>
    %a = math.acosh %v : f32
    memref.store %a, %z[%i] : memref<32xf32>
  }
  return %sum : f32
}
