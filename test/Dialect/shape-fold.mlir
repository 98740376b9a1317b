// RUN: kiln-opt %s -split-input-file -canonicalize | FileCheck %s
// The local folders of the shape ops.

// CHECK-LABEL: func.func @shape_and_size_of_static
// CHECK-DAG: %[[S:.+]] = kiln.constant dense<[2, 3, 4]> : tensor<3xi64>
// CHECK-DAG: %[[T:.+]] = kiln.constant dense<3> : tensor<1xi64>
// CHECK-DAG: %[[N:.+]] = kiln.constant dense<24> : tensor<i64>
// CHECK-NOT: kiln.shape
// CHECK-NOT: kiln.size
// CHECK: return %[[S]], %[[T]], %[[N]]
func.func @shape_and_size_of_static(%x: tensor<2x3x4xf32>) -> (tensor<3xi64>, tensor<1xi64>, tensor<i64>) {
  %s = kiln.shape %x : (tensor<2x3x4xf32>) -> tensor<3xi64>
  %t = kiln.shape %x {start = -2 : i64, end = 2 : i64} : (tensor<2x3x4xf32>) -> tensor<1xi64>
  %n = kiln.size %x : (tensor<2x3x4xf32>) -> tensor<i64>
  return %s, %t, %n : tensor<3xi64>, tensor<1xi64>, tensor<i64>
}

// -----

// CHECK-LABEL: func.func @shape_of_dynamic_stays
// CHECK: kiln.shape
// CHECK: kiln.size
func.func @shape_of_dynamic_stays(%x: tensor<?x3xf32>) -> (tensor<2xi64>, tensor<i64>) {
  %s = kiln.shape %x : (tensor<?x3xf32>) -> tensor<2xi64>
  %n = kiln.size %x : (tensor<?x3xf32>) -> tensor<i64>
  return %s, %n : tensor<2xi64>, tensor<i64>
}

// -----

// A known dim of a dynamic tensor folds through gather.
// CHECK-LABEL: func.func @gather_known_dim
// CHECK: %[[C:.+]] = kiln.constant dense<3> : tensor<i64>
// CHECK-NEXT: return %[[C]]
func.func @gather_known_dim(%x: tensor<?x3xf32>) -> tensor<i64> {
  %s = kiln.shape %x : (tensor<?x3xf32>) -> tensor<2xi64>
  %i = kiln.constant dense<-1> : tensor<i64>
  %d = kiln.gather %s, %i {axis = 0 : i64} : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
  return %d : tensor<i64>
}

// -----

// CHECK-LABEL: func.func @same_type_is_input
// CHECK-SAME: (%[[X:.+]]: tensor<2x3xf32>
// CHECK-NOT: kiln.reshape
// CHECK-NOT: kiln.expand
// CHECK-NOT: kiln.squeeze
// CHECK-NOT: kiln.unsqueeze
// CHECK-NOT: kiln.flatten
// CHECK-NOT: kiln.transpose
// CHECK-NOT: kiln.tile
// CHECK: return %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[X]]
func.func @same_type_is_input(%x: tensor<2x3xf32>, %s: tensor<2xi64>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %none = kiln.none
  %c = kiln.constant dense<[2, 3]> : tensor<2xi64>
  %0 = kiln.reshape %x, %c : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  %one = kiln.constant dense<1> : tensor<1xi64>
  %1 = kiln.expand %x, %one : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<2x3xf32>
  %2 = kiln.squeeze %x, %none : (tensor<2x3xf32>, none) -> tensor<2x3xf32>
  %3 = kiln.flatten %x {axis = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %4 = kiln.transpose %x {perm = array<i64: 0, 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %ones = kiln.constant dense<1> : tensor<2xi64>
  %5 = kiln.tile %x, %ones : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  %start = kiln.constant dense<0> : tensor<1xi64>
  %end = kiln.constant dense<9223372036854775807> : tensor<1xi64>
  %6 = kiln.slice %x, %start, %end, %none, %none : (tensor<2x3xf32>, tensor<1xi64>, tensor<1xi64>, none, none) -> tensor<2x3xf32>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @transpose_not_identity
// CHECK: kiln.transpose
func.func @transpose_not_identity(%x: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %y = kiln.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  return %y : tensor<2x2xf32>
}

// -----

// Data movement of small integer constants folds to constants.
// CHECK-LABEL: func.func @constant_data_movement
// CHECK-DAG: %[[G:.+]] = kiln.constant dense<[30, 10]> : tensor<2xi32>
// CHECK-DAG: %[[C:.+]] = kiln.constant dense<[10, 20, 30, 7]> : tensor<4xi32>
// CHECK-DAG: %[[S:.+]] = kiln.constant dense<[30, 20]> : tensor<2xi32>
// CHECK-DAG: %[[U:.+]] = kiln.constant dense<{{\[}}[10, 20, 30]]> : tensor<1x3xi32>
// CHECK-DAG: %[[Q:.+]] = kiln.constant dense<7> : tensor<i32>
// CHECK-DAG: %[[R:.+]] = kiln.constant dense<{{\[}}[10], [20], [30]]> : tensor<3x1xi32>
// CHECK-NOT: kiln.gather
// CHECK-NOT: kiln.concat
// CHECK-NOT: kiln.slice
// CHECK: return %[[G]], %[[C]], %[[S]], %[[U]], %[[Q]], %[[R]]
func.func @constant_data_movement() -> (tensor<2xi32>, tensor<4xi32>, tensor<2xi32>, tensor<1x3xi32>, tensor<i32>, tensor<3x1xi32>) {
  %none = kiln.none
  %v = kiln.constant dense<[10, 20, 30]> : tensor<3xi32>
  %i = kiln.constant dense<[-1, 0]> : tensor<2xi64>
  %g = kiln.gather %v, %i {axis = 0 : i64} : (tensor<3xi32>, tensor<2xi64>) -> tensor<2xi32>
  %seven = kiln.constant dense<7> : tensor<1xi32>
  %c = kiln.concat %v, %seven {axis = 0 : i64} : (tensor<3xi32>, tensor<1xi32>) -> tensor<4xi32>
  %st = kiln.constant dense<-1> : tensor<1xi64>
  %en = kiln.constant dense<0> : tensor<1xi64>
  %step = kiln.constant dense<-1> : tensor<1xi64>
  %s = kiln.slice %v, %st, %en, %none, %step : (tensor<3xi32>, tensor<1xi64>, tensor<1xi64>, none, tensor<1xi64>) -> tensor<2xi32>
  %ax = kiln.constant dense<0> : tensor<1xi64>
  %u = kiln.unsqueeze %v, %ax : (tensor<3xi32>, tensor<1xi64>) -> tensor<1x3xi32>
  %q = kiln.squeeze %seven, %ax : (tensor<1xi32>, tensor<1xi64>) -> tensor<i32>
  %shape = kiln.constant dense<[3, 1]> : tensor<2xi64>
  %r = kiln.reshape %v, %shape : (tensor<3xi32>, tensor<2xi64>) -> tensor<3x1xi32>
  return %g, %c, %s, %u, %q, %r : tensor<2xi32>, tensor<4xi32>, tensor<2xi32>, tensor<1x3xi32>, tensor<i32>, tensor<3x1xi32>
}

// -----

// Float data and large results are left to the constant-folding pass.
// CHECK-LABEL: func.func @not_folded
// CHECK: kiln.gather
// CHECK: kiln.concat
func.func @not_folded() -> (tensor<1xf32>, tensor<101xi64>) {
  %big = kiln.constant dense<1> : tensor<100xi64>
  %v = kiln.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %i = kiln.constant dense<[1]> : tensor<1xi64>
  %g = kiln.gather %v, %i {axis = 0 : i64} : (tensor<2xf32>, tensor<1xi64>) -> tensor<1xf32>
  %c = kiln.concat %big, %i {axis = 0 : i64} : (tensor<100xi64>, tensor<1xi64>) -> tensor<101xi64>
  return %g, %c : tensor<1xf32>, tensor<101xi64>
}
