// RUN: kiln-opt %s -split-input-file | FileCheck %s
// RUN: kiln-opt %s -split-input-file -canonicalize | FileCheck %s --check-prefix=CANON
// Value-dependent result shapes: kiln-opt verifies that each declared type is
// compatible with the inferred one, so an inference that contradicts these
// types fails here; shape-inference-pinned.mlir pins the inferred types
// exactly (a declared type may be more static than the inferred one).
// -canonicalize shows the shape values that fold.

// PyTorch's view(x.size(0), -1, 64): the -1 is inferred because the unknown
// dim is x's own dim 0 and cancels out: 128 * 8 / 64 = 16.
// CHECK-LABEL: func.func @exported_view
// CHECK: kiln.reshape {{.*}} -> tensor<?x16x64xf32>
// CANON-LABEL: func.func @exported_view
// CANON: kiln.gather
// CANON: kiln.reshape {{.*}} -> tensor<?x16x64xf32>
func.func @exported_view(%x: tensor<?x128x8xf32>) -> tensor<?x16x64xf32> {
  %s = kiln.shape %x : (tensor<?x128x8xf32>) -> tensor<3xi64>
  %zero = kiln.constant dense<0> : tensor<i64>
  %d0 = kiln.gather %s, %zero {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %ax = kiln.constant dense<0> : tensor<1xi64>
  %u = kiln.unsqueeze %d0, %ax : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %c = kiln.constant dense<[-1, 64]> : tensor<2xi64>
  %shape = kiln.concat %u, %c {axis = 0 : i64} : (tensor<1xi64>, tensor<2xi64>) -> tensor<3xi64>
  %y = kiln.reshape %x, %shape : (tensor<?x128x8xf32>, tensor<3xi64>) -> tensor<?x16x64xf32>
  return %y : tensor<?x16x64xf32>
}

// -----

// The static dims of a partially static tensor are known: take dims 1 and 2
// of its shape, add them and reshape to [-1, d1 + d2].
// CHECK-LABEL: func.func @known_dims_of_dynamic_tensor
// CHECK: kiln.reshape {{.*}} -> tensor<?x136xf32>
// CANON-LABEL: func.func @known_dims_of_dynamic_tensor
// CANON-DAG: kiln.constant dense<[-1, 136]> : tensor<2xi64>
// CANON-NOT: kiln.shape
// CANON: kiln.reshape {{.*}} -> tensor<?x136xf32>
func.func @known_dims_of_dynamic_tensor(%x: tensor<?x128x8xf32>) -> tensor<?x136xf32> {
  %s = kiln.shape %x {start = 1 : i64} : (tensor<?x128x8xf32>) -> tensor<2xi64>
  %i0 = kiln.constant dense<[0]> : tensor<1xi64>
  %i1 = kiln.constant dense<[1]> : tensor<1xi64>
  %a = kiln.gather %s, %i0 {axis = 0 : i64} : (tensor<2xi64>, tensor<1xi64>) -> tensor<1xi64>
  %b = kiln.gather %s, %i1 {axis = 0 : i64} : (tensor<2xi64>, tensor<1xi64>) -> tensor<1xi64>
  %sum = kiln.add %a, %b : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %m1 = kiln.constant dense<[-1]> : tensor<1xi64>
  %shape = kiln.concat %m1, %sum {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %y = kiln.reshape %x, %shape : (tensor<?x128x8xf32>, tensor<2xi64>) -> tensor<?x136xf32>
  return %y : tensor<?x136xf32>
}

// -----

// A 0 copies the input dim (allowzero = 0); the -1 is then inferred.
// CHECK-LABEL: func.func @reshape_zero_copies
// CHECK: kiln.reshape {{.*}} -> tensor<?x32xf32>
// CHECK: kiln.reshape {{.*}} {allowzero = 1 : i64} {{.*}} -> tensor<0x4xf32>
func.func @reshape_zero_copies(%x: tensor<?x4x8xf32>, %e: tensor<0x2x2xf32>) -> (tensor<?x32xf32>, tensor<0x4xf32>) {
  %c = kiln.constant dense<[0, -1]> : tensor<2xi64>
  %y = kiln.reshape %x, %c : (tensor<?x4x8xf32>, tensor<2xi64>) -> tensor<?x32xf32>
  %z = kiln.constant dense<[0, 4]> : tensor<2xi64>
  %w = kiln.reshape %e, %z {allowzero = 1 : i64} : (tensor<0x2x2xf32>, tensor<2xi64>) -> tensor<0x4xf32>
  return %y, %w : tensor<?x32xf32>, tensor<0x4xf32>
}

// -----

// Unknown shape elements give `?` only where they are unknown.
// CHECK-LABEL: func.func @reshape_partial
// CHECK: kiln.reshape {{.*}} -> tensor<?x64xf32>
func.func @reshape_partial(%x: tensor<?x?xf32>, %n: tensor<1xi64>) -> tensor<?x64xf32> {
  %c = kiln.constant dense<[64]> : tensor<1xi64>
  %shape = kiln.concat %n, %c {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %y = kiln.reshape %x, %shape : (tensor<?x?xf32>, tensor<2xi64>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// Slice of a shape, and expand to another tensor's shape.
// CHECK-LABEL: func.func @slice_and_expand
// CHECK: kiln.expand {{.*}} -> tensor<?x5x3xf32>
// CANON-LABEL: func.func @slice_and_expand
// CANON: kiln.slice {{.*}} -> tensor<2xi64>
func.func @slice_and_expand(%x: tensor<3xf32>, %y: tensor<?x5x7xf32>) -> tensor<?x5x3xf32> {
  %s = kiln.shape %y : (tensor<?x5x7xf32>) -> tensor<3xi64>
  %start = kiln.constant dense<0> : tensor<1xi64>
  %end = kiln.constant dense<2> : tensor<1xi64>
  %none = kiln.none
  %head = kiln.slice %s, %start, %end, %none, %none : (tensor<3xi64>, tensor<1xi64>, tensor<1xi64>, none, none) -> tensor<2xi64>
  %one = kiln.constant dense<1> : tensor<1xi64>
  %shape = kiln.concat %head, %one {axis = 0 : i64} : (tensor<2xi64>, tensor<1xi64>) -> tensor<3xi64>
  %z = kiln.expand %x, %shape : (tensor<3xf32>, tensor<3xi64>) -> tensor<?x5x3xf32>
  return %z : tensor<?x5x3xf32>
}

// -----

// ONNX Slice clamping: INT64_MAX ends, negative starts, negative steps.
// CHECK-LABEL: func.func @slice_clamping
// CHECK: -> tensor<7x6xf32>
// CHECK: -> tensor<10x3xf32>
// CHECK: -> tensor<0x6xf32>
func.func @slice_clamping(%x: tensor<10x6xf32>) -> (tensor<7x6xf32>, tensor<10x3xf32>, tensor<0x6xf32>) {
  %none = kiln.none
  %s0 = kiln.constant dense<-7> : tensor<1xi64>
  %max = kiln.constant dense<9223372036854775807> : tensor<1xi64>
  %a = kiln.slice %x, %s0, %max, %none, %none : (tensor<10x6xf32>, tensor<1xi64>, tensor<1xi64>, none, none) -> tensor<7x6xf32>
  %m1 = kiln.constant dense<-1> : tensor<1xi64>
  %rev = kiln.constant dense<-9223372036854775807> : tensor<1xi64>
  %ax1 = kiln.constant dense<1> : tensor<1xi64>
  %st = kiln.constant dense<-2> : tensor<1xi64>
  %b = kiln.slice %x, %m1, %rev, %ax1, %st : (tensor<10x6xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<10x3xf32>
  %s5 = kiln.constant dense<5> : tensor<1xi64>
  %e2 = kiln.constant dense<2> : tensor<1xi64>
  %c = kiln.slice %x, %s5, %e2, %none, %none : (tensor<10x6xf32>, tensor<1xi64>, tensor<1xi64>, none, none) -> tensor<0x6xf32>
  return %a, %b, %c : tensor<7x6xf32>, tensor<10x3xf32>, tensor<0x6xf32>
}

// -----

// ConstantOfShape, Range, Tile, TopK, OneHot, Squeeze and Split take their
// sizes from known values.
// CHECK-LABEL: func.func @known_sizes
// CHECK: kiln.constant_of_shape {{.*}} -> tensor<129xi64>
// CHECK: kiln.range {{.*}} -> tensor<4xi64>
// CHECK: kiln.range {{.*}} -> tensor<3xf32>
// CHECK: kiln.squeeze {{.*}} -> tensor<?x128xf32>
// CHECK: kiln.tile {{.*}} -> tensor<?x384xf32>
// CHECK: kiln.top_k {{.*}} -> (tensor<?x5xf32>, tensor<?x5xi64>)
// CHECK: kiln.split {{.*}} -> (tensor<?x100xf32>, tensor<?x28xf32>)
func.func @known_sizes(%x: tensor<?x128x1xf32>) {
  %s = kiln.shape %x {start = 1 : i64, end = 2 : i64} : (tensor<?x128x1xf32>) -> tensor<1xi64>
  %one = kiln.constant dense<1> : tensor<i64>
  %n = kiln.add %s, %one : (tensor<1xi64>, tensor<i64>) -> tensor<1xi64>
  %fill = kiln.constant_of_shape %n {value = dense<7> : tensor<1xi64>} : (tensor<1xi64>) -> tensor<129xi64>
  %start = kiln.constant dense<10> : tensor<i64>
  %limit = kiln.constant dense<2> : tensor<i64>
  %delta = kiln.constant dense<-2> : tensor<i64>
  %r = kiln.range %start, %limit, %delta : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<4xi64>
  %fs = kiln.constant dense<0.0> : tensor<f32>
  %fl = kiln.constant dense<1.0> : tensor<f32>
  %fd = kiln.constant dense<0.4> : tensor<f32>
  %rf = kiln.range %fs, %fl, %fd : (tensor<f32>, tensor<f32>, tensor<f32>) -> tensor<3xf32>
  %ax = kiln.constant dense<2> : tensor<1xi64>
  %sq = kiln.squeeze %x, %ax : (tensor<?x128x1xf32>, tensor<1xi64>) -> tensor<?x128xf32>
  %reps = kiln.constant dense<[1, 3]> : tensor<2xi64>
  %t = kiln.tile %sq, %reps : (tensor<?x128xf32>, tensor<2xi64>) -> tensor<?x384xf32>
  %k = kiln.constant dense<5> : tensor<1xi64>
  %v:2 = kiln.top_k %sq, %k : (tensor<?x128xf32>, tensor<1xi64>) -> (tensor<?x5xf32>, tensor<?x5xi64>)
  %sizes = kiln.constant dense<[100, 28]> : tensor<2xi64>
  %p:2 = kiln.split %sq, %sizes {axis = 1 : i64, num_outputs = 2 : i64} : (tensor<?x128xf32>, tensor<2xi64>) -> (tensor<?x100xf32>, tensor<?x28xf32>)
  return
}

// -----

// A shape held in a dense_resource blob (how large initializers import).
// CHECK-LABEL: func.func @resource_shape
// CHECK: kiln.reshape {{.*}} -> tensor<2x12xf32>
func.func @resource_shape(%x: tensor<2x3x4xf32>) -> tensor<2x12xf32> {
  %c = kiln.constant dense_resource<shape_2_12> : tensor<2xi64>
  %y = kiln.reshape %x, %c : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<2x12xf32>
  return %y : tensor<2x12xf32>
}

{-#
  dialect_resources: {
    builtin: {
      shape_2_12: "0x0800000002000000000000000C00000000000000"
    }
  }
#-}

// -----

// Attention's exported head split: the head dim is hidden / heads (kiln.div),
// the merged dim a product (kiln.mul), through kiln.cast and kiln.identity.
// CHECK-LABEL: func.func @attention_heads
// CHECK: kiln.reshape {{.*}} -> tensor<?x?x8x64xf32>
// CHECK: kiln.reshape {{.*}} -> tensor<?x?x512xf32>
// CANON-LABEL: func.func @attention_heads
// CANON-DAG: kiln.constant dense<64> : tensor<1xi64>
// CANON-DAG: kiln.constant dense<512> : tensor<1xi64>
func.func @attention_heads(%x: tensor<?x?x512xf32>) -> tensor<?x?x512xf32> {
  %s = kiln.shape %x : (tensor<?x?x512xf32>) -> tensor<3xi64>
  %i01 = kiln.constant dense<[0, 1]> : tensor<2xi64>
  %bs = kiln.gather %s, %i01 {axis = 0 : i64} : (tensor<3xi64>, tensor<2xi64>) -> tensor<2xi64>
  %i2 = kiln.constant dense<[2]> : tensor<1xi64>
  %hidden = kiln.gather %s, %i2 {axis = 0 : i64} : (tensor<3xi64>, tensor<1xi64>) -> tensor<1xi64>
  %heads = kiln.constant dense<[8]> : tensor<1xi64>
  %hd = kiln.div %hidden, %heads : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %hd32 = kiln.cast %hd {to = i32} : (tensor<1xi64>) -> tensor<1xi32>
  %hd64 = kiln.cast %hd32 {to = i64} : (tensor<1xi32>) -> tensor<1xi64>
  %split = kiln.concat %bs, %heads, %hd64 {axis = 0 : i64} : (tensor<2xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %y = kiln.reshape %x, %split : (tensor<?x?x512xf32>, tensor<4xi64>) -> tensor<?x?x8x64xf32>
  %merged = kiln.mul %heads, %hd64 : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %m = kiln.identity %merged : tensor<1xi64>
  %back = kiln.concat %bs, %m {axis = 0 : i64} : (tensor<2xi64>, tensor<1xi64>) -> tensor<3xi64>
  %z = kiln.reshape %y, %back : (tensor<?x?x8x64xf32>, tensor<3xi64>) -> tensor<?x?x512xf32>
  return %z : tensor<?x?x512xf32>
}

// -----

// PyTorch's expand(-1, ...) exports Where(Equal(shape, -1), ones, shape).
// CHECK-LABEL: func.func @expand_where_equal
// CHECK: kiln.expand {{.*}} -> tensor<4x3x5xf32>
func.func @expand_where_equal(%x: tensor<1x3x1xf32>) -> tensor<4x3x5xf32> {
  %shape = kiln.constant dense<[4, -1, 5]> : tensor<3xi64>
  %m1 = kiln.constant dense<-1> : tensor<i64>
  %is = kiln.equal %shape, %m1 : (tensor<3xi64>, tensor<i64>) -> tensor<3xi1>
  %ones = kiln.constant dense<1> : tensor<3xi64>
  %t = kiln.where %is, %ones, %shape : (tensor<3xi1>, tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
  %y = kiln.expand %x, %t : (tensor<1x3x1xf32>, tensor<3xi64>) -> tensor<4x3x5xf32>
  return %y : tensor<4x3x5xf32>
}

// -----

// The heads are merged back with reshape(b, s, -1), b and s taken from the
// shape of the layer's input: the -1 is inferred (8 * 64) because the dynamic
// dims of the transposed tensor are known to be b and s (canonicalDim).
// CHECK-LABEL: func.func @attention_merge
// CHECK: kiln.reshape {{.*}} -> tensor<?x?x8x64xf32>
// CHECK: kiln.reshape {{.*}} -> tensor<?x?x512xf32>
func.func @attention_merge(%x: tensor<?x?x512xf32>) -> tensor<?x?x512xf32> {
  %s = kiln.shape %x : (tensor<?x?x512xf32>) -> tensor<3xi64>
  %i01 = kiln.constant dense<[0, 1]> : tensor<2xi64>
  %bs = kiln.gather %s, %i01 {axis = 0 : i64} : (tensor<3xi64>, tensor<2xi64>) -> tensor<2xi64>
  %hd = kiln.constant dense<[8, 64]> : tensor<2xi64>
  %split = kiln.concat %bs, %hd {axis = 0 : i64} : (tensor<2xi64>, tensor<2xi64>) -> tensor<4xi64>
  %q = kiln.reshape %x, %split : (tensor<?x?x512xf32>, tensor<4xi64>) -> tensor<?x?x8x64xf32>
  %t = kiln.transpose %q {perm = array<i64: 0, 2, 1, 3>} : (tensor<?x?x8x64xf32>) -> tensor<?x8x?x64xf32>
  %a = kiln.relu %t : tensor<?x8x?x64xf32>
  %back = kiln.transpose %a {perm = array<i64: 0, 2, 1, 3>} : (tensor<?x8x?x64xf32>) -> tensor<?x?x8x64xf32>
  %m1 = kiln.constant dense<[-1]> : tensor<1xi64>
  %merged = kiln.concat %bs, %m1 {axis = 0 : i64} : (tensor<2xi64>, tensor<1xi64>) -> tensor<3xi64>
  %y = kiln.reshape %back, %merged : (tensor<?x?x8x64xf32>, tensor<3xi64>) -> tensor<?x?x512xf32>
  return %y : tensor<?x?x512xf32>
}
