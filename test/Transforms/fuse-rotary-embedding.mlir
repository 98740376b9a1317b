// RUN: kiln-opt %s -split-input-file --kiln-fuse-rotary-embedding --kiln-dce | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kiln-fuse-rotary-embedding --kiln-pass-statistics -o /dev/null 2>&1 | FileCheck %s --check-prefix=STATS
// Round trip: decomposing the fused op and fusing again gives the fused op.
// RUN: kiln-opt %s -split-input-file --kiln-fuse-rotary-embedding --kiln-decompose-fused --kiln-fuse-rotary-embedding --kiln-dce | FileCheck %s

// STATS: kiln-fuse-rotary-embedding
// STATS-NEXT: (rotary-embeddings-fused) 2

// The form PyTorch exports for Llama's apply_rotary_pos_emb.
// CHECK-LABEL: func.func @llama_rope
//  CHECK-SAME: (%[[X:.+]]: tensor<2x8x16x32xf32>, %[[COS:.+]]: tensor<16x32xf32>, %[[SIN:.+]]: tensor<16x32xf32>)
//  CHECK-NEXT:   %[[Y:.+]] = kiln.rotary_embedding %[[X]], %[[COS]], %[[SIN]] : (tensor<2x8x16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>) -> tensor<2x8x16x32xf32>
//  CHECK-NEXT:   return %[[Y]]
func.func @llama_rope(%x: tensor<2x8x16x32xf32>, %cos: tensor<16x32xf32>, %sin: tensor<16x32xf32>) -> tensor<2x8x16x32xf32> {
  %c0 = kiln.constant dense<0> : tensor<1xi64>
  %c16 = kiln.constant dense<16> : tensor<1xi64>
  %c3 = kiln.constant dense<3> : tensor<1xi64>
  %c1 = kiln.constant dense<1> : tensor<1xi64>
  %cmax = kiln.constant dense<9223372036854775807> : tensor<1xi64>
  %0 = kiln.mul %x, %cos : (tensor<2x8x16x32xf32>, tensor<16x32xf32>) -> tensor<2x8x16x32xf32>
  %x1 = kiln.slice %x, %c0, %c16, %c3, %c1 : (tensor<2x8x16x32xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x8x16x16xf32>
  %x2 = kiln.slice %x, %c16, %cmax, %c3, %c1 : (tensor<2x8x16x32xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x8x16x16xf32>
  %n = kiln.neg %x2 : tensor<2x8x16x16xf32>
  %r = kiln.concat %n, %x1 {axis = -1 : i64} : (tensor<2x8x16x16xf32>, tensor<2x8x16x16xf32>) -> tensor<2x8x16x32xf32>
  %1 = kiln.mul %r, %sin : (tensor<2x8x16x32xf32>, tensor<16x32xf32>) -> tensor<2x8x16x32xf32>
  %2 = kiln.add %0, %1 : (tensor<2x8x16x32xf32>, tensor<2x8x16x32xf32>) -> tensor<2x8x16x32xf32>
  return %2 : tensor<2x8x16x32xf32>
}

// -----

// Operands of Add and Mul in the other order, axes given as -1, no steps.
// CHECK-LABEL: func.func @swapped_operands
//  CHECK-SAME: (%[[X:.+]]: tensor<4x16x8xf32>, %[[COS:.+]]: tensor<16x8xf32>, %[[SIN:.+]]: tensor<16x8xf32>)
//  CHECK-NEXT:   kiln.rotary_embedding %[[X]], %[[COS]], %[[SIN]]
func.func @swapped_operands(%x: tensor<4x16x8xf32>, %cos: tensor<16x8xf32>, %sin: tensor<16x8xf32>) -> tensor<4x16x8xf32> {
  %c0 = kiln.constant dense<0> : tensor<1xi64>
  %c4 = kiln.constant dense<4> : tensor<1xi64>
  %c8 = kiln.constant dense<8> : tensor<1xi64>
  %cm1 = kiln.constant dense<-1> : tensor<1xi64>
  %none = kiln.none
  %x1 = kiln.slice %x, %c0, %c4, %cm1, %none : (tensor<4x16x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<4x16x4xf32>
  %x2 = kiln.slice %x, %c4, %c8, %cm1, %none : (tensor<4x16x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<4x16x4xf32>
  %n = kiln.neg %x2 : tensor<4x16x4xf32>
  %r = kiln.concat %n, %x1 {axis = 2 : i64} : (tensor<4x16x4xf32>, tensor<4x16x4xf32>) -> tensor<4x16x8xf32>
  %1 = kiln.mul %sin, %r : (tensor<16x8xf32>, tensor<4x16x8xf32>) -> tensor<4x16x8xf32>
  %0 = kiln.mul %cos, %x : (tensor<16x8xf32>, tensor<4x16x8xf32>) -> tensor<4x16x8xf32>
  %2 = kiln.add %1, %0 : (tensor<4x16x8xf32>, tensor<4x16x8xf32>) -> tensor<4x16x8xf32>
  return %2 : tensor<4x16x8xf32>
}

// -----

// The halves swapped the wrong way round (concat(x1, -x2)) is not RoPE.
// CHECK-LABEL: func.func @wrong_rotation
//   CHECK-NOT:   kiln.rotary_embedding
func.func @wrong_rotation(%x: tensor<4x16x8xf32>, %cos: tensor<16x8xf32>, %sin: tensor<16x8xf32>) -> tensor<4x16x8xf32> {
  %c0 = kiln.constant dense<0> : tensor<1xi64>
  %c4 = kiln.constant dense<4> : tensor<1xi64>
  %c8 = kiln.constant dense<8> : tensor<1xi64>
  %cm1 = kiln.constant dense<-1> : tensor<1xi64>
  %none = kiln.none
  %x1 = kiln.slice %x, %c0, %c4, %cm1, %none : (tensor<4x16x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<4x16x4xf32>
  %x2 = kiln.slice %x, %c4, %c8, %cm1, %none : (tensor<4x16x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<4x16x4xf32>
  %n = kiln.neg %x1 : tensor<4x16x4xf32>
  %r = kiln.concat %n, %x2 {axis = 2 : i64} : (tensor<4x16x4xf32>, tensor<4x16x4xf32>) -> tensor<4x16x8xf32>
  %0 = kiln.mul %x, %cos : (tensor<4x16x8xf32>, tensor<16x8xf32>) -> tensor<4x16x8xf32>
  %1 = kiln.mul %r, %sin : (tensor<4x16x8xf32>, tensor<16x8xf32>) -> tensor<4x16x8xf32>
  %2 = kiln.add %0, %1 : (tensor<4x16x8xf32>, tensor<4x16x8xf32>) -> tensor<4x16x8xf32>
  return %2 : tensor<4x16x8xf32>
}

// -----

// An intermediate with another user (the rotated half is also returned) is
// not fused: fusing would compute it twice.
// CHECK-LABEL: func.func @extra_user
//   CHECK-NOT:   kiln.rotary_embedding
func.func @extra_user(%x: tensor<4x16x8xf32>, %cos: tensor<16x8xf32>, %sin: tensor<16x8xf32>) -> (tensor<4x16x8xf32>, tensor<4x16x8xf32>) {
  %c0 = kiln.constant dense<0> : tensor<1xi64>
  %c4 = kiln.constant dense<4> : tensor<1xi64>
  %c8 = kiln.constant dense<8> : tensor<1xi64>
  %cm1 = kiln.constant dense<-1> : tensor<1xi64>
  %none = kiln.none
  %x1 = kiln.slice %x, %c0, %c4, %cm1, %none : (tensor<4x16x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<4x16x4xf32>
  %x2 = kiln.slice %x, %c4, %c8, %cm1, %none : (tensor<4x16x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<4x16x4xf32>
  %n = kiln.neg %x2 : tensor<4x16x4xf32>
  %r = kiln.concat %n, %x1 {axis = 2 : i64} : (tensor<4x16x4xf32>, tensor<4x16x4xf32>) -> tensor<4x16x8xf32>
  %0 = kiln.mul %x, %cos : (tensor<4x16x8xf32>, tensor<16x8xf32>) -> tensor<4x16x8xf32>
  %1 = kiln.mul %r, %sin : (tensor<4x16x8xf32>, tensor<16x8xf32>) -> tensor<4x16x8xf32>
  %2 = kiln.add %0, %1 : (tensor<4x16x8xf32>, tensor<4x16x8xf32>) -> tensor<4x16x8xf32>
  return %2, %r : tensor<4x16x8xf32>, tensor<4x16x8xf32>
}

// -----

// cos/sin that broadcast x to a larger shape: the result is not x's type,
// so this is not a rotary embedding of x.
// CHECK-LABEL: func.func @broadcast_enlarges
//   CHECK-NOT:   kiln.rotary_embedding
func.func @broadcast_enlarges(%x: tensor<1x16x8xf32>, %cos: tensor<4x16x8xf32>, %sin: tensor<4x16x8xf32>) -> tensor<4x16x8xf32> {
  %c0 = kiln.constant dense<0> : tensor<1xi64>
  %c4 = kiln.constant dense<4> : tensor<1xi64>
  %c8 = kiln.constant dense<8> : tensor<1xi64>
  %cm1 = kiln.constant dense<-1> : tensor<1xi64>
  %none = kiln.none
  %x1 = kiln.slice %x, %c0, %c4, %cm1, %none : (tensor<1x16x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<1x16x4xf32>
  %x2 = kiln.slice %x, %c4, %c8, %cm1, %none : (tensor<1x16x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<1x16x4xf32>
  %n = kiln.neg %x2 : tensor<1x16x4xf32>
  %r = kiln.concat %n, %x1 {axis = 2 : i64} : (tensor<1x16x4xf32>, tensor<1x16x4xf32>) -> tensor<1x16x8xf32>
  %0 = kiln.mul %x, %cos : (tensor<1x16x8xf32>, tensor<4x16x8xf32>) -> tensor<4x16x8xf32>
  %1 = kiln.mul %r, %sin : (tensor<1x16x8xf32>, tensor<4x16x8xf32>) -> tensor<4x16x8xf32>
  %2 = kiln.add %0, %1 : (tensor<4x16x8xf32>, tensor<4x16x8xf32>) -> tensor<4x16x8xf32>
  return %2 : tensor<4x16x8xf32>
}
