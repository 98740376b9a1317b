// RUN: kiln-opt %s -split-input-file | kiln-opt | FileCheck %s
// Round trip of every shape and data-movement op.

// CHECK-LABEL: func.func @queries
func.func @queries(%x: tensor<?x4x5xf32>) -> (tensor<3xi64>, tensor<1xi64>, tensor<i64>) {
  // CHECK: kiln.shape %{{.*}} : (tensor<?x4x5xf32>) -> tensor<3xi64>
  %s = kiln.shape %x {start = 0 : i64} : (tensor<?x4x5xf32>) -> tensor<3xi64>
  // CHECK: kiln.shape %{{.*}} {end = -1 : i64, start = 1 : i64} : (tensor<?x4x5xf32>) -> tensor<1xi64>
  %t = kiln.shape %x {start = 1 : i64, end = -1 : i64} : (tensor<?x4x5xf32>) -> tensor<1xi64>
  // CHECK: kiln.size %{{.*}} : (tensor<?x4x5xf32>) -> tensor<i64>
  %n = kiln.size %x : (tensor<?x4x5xf32>) -> tensor<i64>
  return %s, %t, %n : tensor<3xi64>, tensor<1xi64>, tensor<i64>
}

// -----

// CHECK-LABEL: func.func @reshaping
func.func @reshaping(%x: tensor<2x3x4xf32>, %shape: tensor<2xi64>, %axes: tensor<1xi64>) {
  %none = kiln.none
  // CHECK: kiln.reshape %{{.*}}, %{{.*}} {allowzero = 1 : i64} : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  %0 = kiln.reshape %x, %shape {allowzero = 1 : i64} : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  // CHECK: kiln.flatten %{{.*}} {axis = 2 : i64} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %1 = kiln.flatten %x {axis = 2 : i64} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  // CHECK: kiln.unsqueeze %{{.*}}, %{{.*}} {axes = array<i64: 0, 4>} : (tensor<2x3x4xf32>, none) -> tensor<1x2x3x4x1xf32>
  %2 = kiln.unsqueeze %x, %none {axes = array<i64: 0, 4>} : (tensor<2x3x4xf32>, none) -> tensor<1x2x3x4x1xf32>
  // CHECK: kiln.squeeze %{{.*}}, %{{.*}} : (tensor<1x2x3x4x1xf32>, none) -> tensor<2x3x4xf32>
  %3 = kiln.squeeze %2, %none : (tensor<1x2x3x4x1xf32>, none) -> tensor<2x3x4xf32>
  // CHECK: kiln.transpose %{{.*}} {perm = array<i64: 1, 0, 2>} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  %4 = kiln.transpose %x {perm = array<i64: 1, 0, 2>} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  // CHECK: kiln.transpose %{{.*}} : (tensor<2x3x4xf32>) -> tensor<4x3x2xf32>
  %5 = kiln.transpose %x : (tensor<2x3x4xf32>) -> tensor<4x3x2xf32>
  // CHECK: kiln.expand %{{.*}}, %{{.*}} : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<2x3x4xf32>
  %6 = kiln.expand %x, %shape : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<2x3x4xf32>
  return
}

// -----

// CHECK-LABEL: func.func @tile_concat_split
func.func @tile_concat_split(%x: tensor<2x5xf32>, %r: tensor<2xi64>, %s: tensor<2xi64>) {
  %none = kiln.none
  // CHECK: kiln.tile %{{.*}}, %{{.*}} : (tensor<2x5xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  %0 = kiln.tile %x, %r : (tensor<2x5xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  // CHECK: kiln.concat %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x10xf32>
  %1 = kiln.concat %x, %x {axis = 1 : i64} : (tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x10xf32>
  // CHECK: kiln.split %{{.*}}, %{{.*}} {axis = 1 : i64, num_outputs = 2 : i64} : (tensor<2x5xf32>, none) -> (tensor<2x3xf32>, tensor<2x2xf32>)
  %2:2 = kiln.split %x, %none {axis = 1 : i64, num_outputs = 2 : i64} : (tensor<2x5xf32>, none) -> (tensor<2x3xf32>, tensor<2x2xf32>)
  // CHECK: kiln.split %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<2x5xf32>, tensor<2xi64>) -> (tensor<2x?xf32>, tensor<2x?xf32>)
  %3:2 = kiln.split %x, %s {axis = 1 : i64} : (tensor<2x5xf32>, tensor<2xi64>) -> (tensor<2x?xf32>, tensor<2x?xf32>)
  // CHECK: kiln.split %{{.*}}, %{{.*}} {split = array<i64: 1, 1>} : (tensor<2x5xf32>, none) -> (tensor<1x5xf32>, tensor<1x5xf32>)
  %4:2 = kiln.split %x, %none {axis = 0 : i64, split = array<i64: 1, 1>} : (tensor<2x5xf32>, none) -> (tensor<1x5xf32>, tensor<1x5xf32>)
  return
}

// -----

// CHECK-LABEL: func.func @slice_gather_scatter
func.func @slice_gather_scatter(%x: tensor<8x6xf32>, %i: tensor<3x2xi64>, %j: tensor<2x6xi64>, %u: tensor<2x6xf32>) {
  %none = kiln.none
  %start = kiln.constant dense<1> : tensor<1xi32>
  %end = kiln.constant dense<7> : tensor<1xi32>
  %axis = kiln.constant dense<1> : tensor<1xi32>
  %step = kiln.constant dense<2> : tensor<1xi32>
  // CHECK: kiln.slice %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : (tensor<8x6xf32>, tensor<1xi32>, tensor<1xi32>, tensor<1xi32>, tensor<1xi32>) -> tensor<8x3xf32>
  %0 = kiln.slice %x, %start, %end, %axis, %step : (tensor<8x6xf32>, tensor<1xi32>, tensor<1xi32>, tensor<1xi32>, tensor<1xi32>) -> tensor<8x3xf32>
  // CHECK: kiln.slice %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : (tensor<8x6xf32>, tensor<1xi32>, tensor<1xi32>, none, none) -> tensor<6x6xf32>
  %1 = kiln.slice %x, %start, %end, %none, %none : (tensor<8x6xf32>, tensor<1xi32>, tensor<1xi32>, none, none) -> tensor<6x6xf32>
  // CHECK: kiln.gather %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<8x6xf32>, tensor<3x2xi64>) -> tensor<8x3x2xf32>
  %2 = kiln.gather %x, %i {axis = 1 : i64} : (tensor<8x6xf32>, tensor<3x2xi64>) -> tensor<8x3x2xf32>
  // CHECK: kiln.gather_elements %{{.*}}, %{{.*}} : (tensor<8x6xf32>, tensor<2x6xi64>) -> tensor<2x6xf32>
  %3 = kiln.gather_elements %x, %j {axis = 0 : i64} : (tensor<8x6xf32>, tensor<2x6xi64>) -> tensor<2x6xf32>
  // CHECK: kiln.gather_nd %{{.*}}, %{{.*}} : (tensor<8x6xf32>, tensor<3x2xi64>) -> tensor<3xf32>
  %4 = kiln.gather_nd %x, %i {batch_dims = 0 : i64} : (tensor<8x6xf32>, tensor<3x2xi64>) -> tensor<3xf32>
  // CHECK: kiln.scatter_elements %{{.*}}, %{{.*}}, %{{.*}} {reduction = "add"} : (tensor<8x6xf32>, tensor<2x6xi64>, tensor<2x6xf32>) -> tensor<8x6xf32>
  %5 = kiln.scatter_elements %x, %j, %u {axis = 0 : i64, reduction = "add"} : (tensor<8x6xf32>, tensor<2x6xi64>, tensor<2x6xf32>) -> tensor<8x6xf32>
  // CHECK: kiln.scatter_nd %{{.*}}, %{{.*}}, %{{.*}} : (tensor<8x6xf32>, tensor<3x2xi64>, tensor<3xf32>) -> tensor<8x6xf32>
  %v = kiln.gather_nd %x, %i : (tensor<8x6xf32>, tensor<3x2xi64>) -> tensor<3xf32>
  %6 = kiln.scatter_nd %x, %i, %v {reduction = "none"} : (tensor<8x6xf32>, tensor<3x2xi64>, tensor<3xf32>) -> tensor<8x6xf32>
  return
}

// -----

// CHECK-LABEL: func.func @generators
func.func @generators(%s: tensor<2xi64>, %a: tensor<i64>, %b: tensor<f32>, %m: tensor<3x4xi64>, %idx: tensor<4xi64>) {
  // CHECK: kiln.constant_of_shape %{{.*}} : (tensor<2xi64>) -> tensor<?x?xf32>
  %0 = kiln.constant_of_shape %s : (tensor<2xi64>) -> tensor<?x?xf32>
  // CHECK: kiln.constant_of_shape %{{.*}} {value = dense<1> : tensor<1xi64>} : (tensor<2xi64>) -> tensor<?x?xi64>
  %1 = kiln.constant_of_shape %s {value = dense<1> : tensor<1xi64>} : (tensor<2xi64>) -> tensor<?x?xi64>
  // CHECK: kiln.range %{{.*}}, %{{.*}}, %{{.*}} : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %2 = kiln.range %a, %a, %a : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  // CHECK: kiln.range %{{.*}}, %{{.*}}, %{{.*}} : (tensor<f32>, tensor<f32>, tensor<f32>) -> tensor<?xf32>
  %3 = kiln.range %b, %b, %b : (tensor<f32>, tensor<f32>, tensor<f32>) -> tensor<?xf32>
  // CHECK: kiln.eye_like %{{.*}} {dtype = f32, k = 1 : i64} : (tensor<3x4xi64>) -> tensor<3x4xf32>
  %4 = kiln.eye_like %m {dtype = f32, k = 1 : i64} : (tensor<3x4xi64>) -> tensor<3x4xf32>
  %depth = kiln.constant dense<10> : tensor<i64>
  %values = kiln.constant dense<[0.0, 1.0]> : tensor<2xf32>
  // CHECK: kiln.one_hot %{{.*}}, %{{.*}}, %{{.*}} : (tensor<4xi64>, tensor<i64>, tensor<2xf32>) -> tensor<4x10xf32>
  %5 = kiln.one_hot %idx, %depth, %values {axis = -1 : i64} : (tensor<4xi64>, tensor<i64>, tensor<2xf32>) -> tensor<4x10xf32>
  // CHECK: kiln.one_hot %{{.*}}, %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<4xi64>, tensor<i64>, tensor<2xf32>) -> tensor<10x4xf32>
  %6 = kiln.one_hot %idx, %depth, %values {axis = 0 : i64} : (tensor<4xi64>, tensor<i64>, tensor<2xf32>) -> tensor<10x4xf32>
  return
}

// -----

// CHECK-LABEL: func.func @same_shape
func.func @same_shape(%x: tensor<4x4xf32>, %k: tensor<i64>, %seq: tensor<4x2x3xf32>, %lens: tensor<2xi64>) {
  %none = kiln.none
  // CHECK: kiln.trilu %{{.*}}, %{{.*}} {upper = 0 : i64} : (tensor<4x4xf32>, none) -> tensor<4x4xf32>
  %0 = kiln.trilu %x, %none {upper = 0 : i64} : (tensor<4x4xf32>, none) -> tensor<4x4xf32>
  // CHECK: kiln.trilu %{{.*}}, %{{.*}} : (tensor<4x4xf32>, tensor<i64>) -> tensor<4x4xf32>
  %1 = kiln.trilu %x, %k : (tensor<4x4xf32>, tensor<i64>) -> tensor<4x4xf32>
  // CHECK: kiln.cum_sum %{{.*}}, %{{.*}} {exclusive = 1 : i64, reverse = 1 : i64} : (tensor<4x4xf32>, tensor<i64>) -> tensor<4x4xf32>
  %2 = kiln.cum_sum %x, %k {exclusive = 1 : i64, reverse = 1 : i64} : (tensor<4x4xf32>, tensor<i64>) -> tensor<4x4xf32>
  // CHECK: kiln.reverse_sequence %{{.*}}, %{{.*}} : (tensor<4x2x3xf32>, tensor<2xi64>) -> tensor<4x2x3xf32>
  %3 = kiln.reverse_sequence %seq, %lens {batch_axis = 1 : i64, time_axis = 0 : i64} : (tensor<4x2x3xf32>, tensor<2xi64>) -> tensor<4x2x3xf32>
  return
}

// -----

// CHECK-LABEL: func.func @blocks_and_data_dependent
func.func @blocks_and_data_dependent(%x: tensor<1x8x2x3xf32>, %v: tensor<2x10xf32>) {
  // CHECK: kiln.depth_to_space %{{.*}} {blocksize = 2 : i64, mode = "CRD"} : (tensor<1x8x2x3xf32>) -> tensor<1x2x4x6xf32>
  %0 = kiln.depth_to_space %x {blocksize = 2 : i64, mode = "CRD"} : (tensor<1x8x2x3xf32>) -> tensor<1x2x4x6xf32>
  // CHECK: kiln.space_to_depth %{{.*}} {blocksize = 2 : i64} : (tensor<1x2x4x6xf32>) -> tensor<1x8x2x3xf32>
  %1 = kiln.space_to_depth %0 {blocksize = 2 : i64} : (tensor<1x2x4x6xf32>) -> tensor<1x8x2x3xf32>
  %k = kiln.constant dense<3> : tensor<1xi64>
  // CHECK: kiln.top_k %{{.*}}, %{{.*}} {largest = 0 : i64} : (tensor<2x10xf32>, tensor<1xi64>) -> (tensor<2x3xf32>, tensor<2x3xi64>)
  %2:2 = kiln.top_k %v, %k {axis = -1 : i64, largest = 0 : i64, sorted = 1 : i64} : (tensor<2x10xf32>, tensor<1xi64>) -> (tensor<2x3xf32>, tensor<2x3xi64>)
  // CHECK: kiln.non_zero %{{.*}} : (tensor<2x10xf32>) -> tensor<2x?xi64>
  %3 = kiln.non_zero %v : (tensor<2x10xf32>) -> tensor<2x?xi64>
  return
}
