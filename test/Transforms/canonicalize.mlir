// RUN: kiln-opt %s -split-input-file -kiln-canonicalize | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-canonicalize -kiln-pass-statistics -o /dev/null 2>&1 | FileCheck %s --check-prefix=STATS
// kiln-canonicalize: the kiln ops' folders and Kiln's canonicalization
// patterns; what they must leave alone.

// Identity and inference Dropout are their input; the mask is all true.
// CHECK-LABEL: func.func @identity_dropout
// CHECK-SAME: (%[[X:.+]]: tensor<2x3xf32>)
// CHECK: %[[T:.+]] = kiln.constant dense<true> : tensor<2x3xi1>
// CHECK-NOT: kiln.identity
// CHECK-NOT: kiln.dropout
// CHECK: return %[[X]], %[[X]], %[[T]]
func.func @identity_dropout(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xi1>) {
  %none = kiln.none
  %0 = kiln.identity %x : tensor<2x3xf32>
  %1, %m1 = kiln.dropout %0, %none, %none : (tensor<2x3xf32>, none, none) -> (tensor<2x3xf32>, tensor<2x3xi1>)
  %ratio = kiln.constant dense<0.5> : tensor<f32>
  %false = kiln.constant dense<false> : tensor<i1>
  %2, %m2 = kiln.dropout %x, %ratio, %false : (tensor<2x3xf32>, tensor<f32>, tensor<i1>) -> (tensor<2x3xf32>, tensor<2x3xi1>)
  return %1, %2, %m2 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xi1>
}

// -----

// A training_mode not known at compile time keeps the Dropout.
// CHECK-LABEL: func.func @dropout_unknown_mode_stays
// CHECK: kiln.dropout
func.func @dropout_unknown_mode_stays(%x: tensor<2x3xf32>, %t: tensor<i1>) -> tensor<2x3xf32> {
  %none = kiln.none
  %0, %m = kiln.dropout %x, %none, %t : (tensor<2x3xf32>, none, tensor<i1>) -> (tensor<2x3xf32>, tensor<2x3xi1>)
  return %0 : tensor<2x3xf32>
}

// -----

// Reshape/Flatten/Squeeze/Unsqueeze chains become one Reshape to the final
// static shape; a Reshape back to the input type disappears.
// CHECK-LABEL: func.func @reshape_chains
// CHECK-SAME: (%[[X:.+]]: tensor<2x3x4xf32>
// CHECK-DAG: %[[S:.+]] = kiln.constant dense<[6, 4]> : tensor<2xi64>
// CHECK: %[[R:.+]] = kiln.reshape %[[X]], %[[S]] : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<6x4xf32>
// CHECK-NOT: kiln.unsqueeze
// CHECK-NOT: kiln.flatten
// CHECK: return %[[R]], %[[X]]
func.func @reshape_chains(%x: tensor<2x3x4xf32>) -> (tensor<6x4xf32>, tensor<2x3x4xf32>) {
  %ax = kiln.constant dense<0> : tensor<1xi64>
  %0 = kiln.unsqueeze %x, %ax : (tensor<2x3x4xf32>, tensor<1xi64>) -> tensor<1x2x3x4xf32>
  %1 = kiln.flatten %0 {axis = 3 : i64} : (tensor<1x2x3x4xf32>) -> tensor<6x4xf32>
  %s = kiln.constant dense<[24]> : tensor<1xi64>
  %2 = kiln.reshape %x, %s : (tensor<2x3x4xf32>, tensor<1xi64>) -> tensor<24xf32>
  %back = kiln.constant dense<[2, 3, 4]> : tensor<3xi64>
  %3 = kiln.reshape %2, %back : (tensor<24xf32>, tensor<3xi64>) -> tensor<2x3x4xf32>
  return %1, %3 : tensor<6x4xf32>, tensor<2x3x4xf32>
}

// -----

// Dynamic shapes: the last Reshape of a chain reads the chain's input when
// its constant shape copies no dim; a 0 (copy the dim) keeps the chain.
// CHECK-LABEL: func.func @dynamic_reshape_chain
// CHECK-SAME: (%[[X:.+]]: tensor<?x4xf32>)
// CHECK-DAG: %[[U:.+]] = kiln.unsqueeze %[[X]]
// CHECK-DAG: %[[R:.+]] = kiln.reshape %[[X]], %{{.+}} : (tensor<?x4xf32>, tensor<2xi64>) -> tensor<?x2xf32>
// CHECK-DAG: %[[Z:.+]] = kiln.reshape %[[U]], %{{.+}} : (tensor<1x?x4xf32>, tensor<2xi64>) -> tensor<1x?xf32>
// CHECK: return %[[R]], %[[Z]]
func.func @dynamic_reshape_chain(%x: tensor<?x4xf32>) -> (tensor<?x2xf32>, tensor<1x?xf32>) {
  %ax = kiln.constant dense<0> : tensor<1xi64>
  %u = kiln.unsqueeze %x, %ax : (tensor<?x4xf32>, tensor<1xi64>) -> tensor<1x?x4xf32>
  %s = kiln.constant dense<[-1, 2]> : tensor<2xi64>
  %0 = kiln.reshape %u, %s : (tensor<1x?x4xf32>, tensor<2xi64>) -> tensor<?x2xf32>
  %z = kiln.constant dense<[0, -1]> : tensor<2xi64>
  %1 = kiln.reshape %u, %z : (tensor<1x?x4xf32>, tensor<2xi64>) -> tensor<1x?xf32>
  return %0, %1 : tensor<?x2xf32>, tensor<1x?xf32>
}

// -----

// A Reshape with a static result gets a constant shape; a dynamic one keeps
// its computed shape, and a single Unsqueeze is not rewritten.
// CHECK-LABEL: func.func @constant_reshape_shape
// CHECK-DAG: %[[C:.+]] = kiln.constant dense<[3, 8]> : tensor<2xi64>
// CHECK: kiln.reshape %{{.+}}, %[[C]] : (tensor<2x12xf32>, tensor<2xi64>) -> tensor<3x8xf32>
// CHECK: kiln.reshape %{{.+}}, %{{.+}} : (tensor<?x12xf32>, tensor<2xi64>) -> tensor<?x4xf32>
// CHECK: kiln.unsqueeze
func.func @constant_reshape_shape(%x: tensor<2x12xf32>, %s: tensor<2xi64>, %y: tensor<?x12xf32>) -> (tensor<3x8xf32>, tensor<?x4xf32>, tensor<1x2x12xf32>) {
  %0 = kiln.reshape %x, %s : (tensor<2x12xf32>, tensor<2xi64>) -> tensor<3x8xf32>
  %1 = kiln.reshape %y, %s : (tensor<?x12xf32>, tensor<2xi64>) -> tensor<?x4xf32>
  %ax = kiln.constant dense<0> : tensor<1xi64>
  %2 = kiln.unsqueeze %x, %ax : (tensor<2x12xf32>, tensor<1xi64>) -> tensor<1x2x12xf32>
  return %0, %1, %2 : tensor<3x8xf32>, tensor<?x4xf32>, tensor<1x2x12xf32>
}

// -----

// Transposes compose; inverse ones cancel.
// CHECK-LABEL: func.func @transposes
// CHECK-SAME: (%[[X:.+]]: tensor<2x3x4xf32>)
// CHECK: %[[T:.+]] = kiln.transpose %[[X]] {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT: return %[[X]], %[[T]]
func.func @transposes(%x: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<4x2x3xf32>) {
  %0 = kiln.transpose %x {perm = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  %1 = kiln.transpose %0 {perm = array<i64: 0, 2, 1>} : (tensor<2x4x3xf32>) -> tensor<2x3x4xf32>
  %2 = kiln.transpose %0 {perm = array<i64: 1, 0, 2>} : (tensor<2x4x3xf32>) -> tensor<4x2x3xf32>
  return %1, %2 : tensor<2x3x4xf32>, tensor<4x2x3xf32>
}

// -----

// x * 1, 1 * x, x / 1, x - 0, x + (-0.0), i + 0 are x.
// CHECK-LABEL: func.func @neutral_operands
// CHECK-SAME: (%[[X:.+]]: tensor<2x3xf32>, %[[I:.+]]: tensor<3xi32>)
// CHECK-NOT: kiln.mul
// CHECK-NOT: kiln.div
// CHECK-NOT: kiln.sub
// CHECK-NOT: kiln.add
// CHECK: return %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[I]]
func.func @neutral_operands(%x: tensor<2x3xf32>, %i: tensor<3xi32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<3xi32>) {
  %one = kiln.constant dense<1.0> : tensor<3xf32>
  %zero = kiln.constant dense<0.0> : tensor<f32>
  %nzero = kiln.constant dense<-0.0> : tensor<1x1xf32>
  %izero = kiln.constant dense<0> : tensor<i32>
  %0 = kiln.mul %x, %one : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = kiln.mul %one, %x : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = kiln.div %x, %one : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %3 = kiln.sub %x, %zero : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %4 = kiln.add %nzero, %x : (tensor<1x1xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %5 = kiln.add %i, %izero : (tensor<3xi32>, tensor<i32>) -> tensor<3xi32>
  return %0, %1, %2, %3, %4, %5 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<3xi32>
}

// -----

// Kept: x * 1 that broadcasts x to a larger type; 1 / x and 0 - x; a float
// x + (+0.0), which turns -0 into +0.
// CHECK-LABEL: func.func @neutral_operands_stay
// CHECK: kiln.mul
// CHECK: kiln.div
// CHECK: kiln.sub
// CHECK: kiln.add
func.func @neutral_operands_stay(%x: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) {
  %one = kiln.constant dense<1.0> : tensor<2x3xf32>
  %0 = kiln.mul %x, %one : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %s = kiln.constant dense<1.0> : tensor<f32>
  %1 = kiln.div %s, %x : (tensor<f32>, tensor<3xf32>) -> tensor<3xf32>
  %zero = kiln.constant dense<0.0> : tensor<f32>
  %2 = kiln.sub %zero, %x : (tensor<f32>, tensor<3xf32>) -> tensor<3xf32>
  %3 = kiln.add %x, %zero : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  return %0, %1, %2, %3 : tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
}

// -----

// Same-type Cast and Expand, Concat of one operand, full Slice, zero Pad.
// CHECK-LABEL: func.func @same_type_ops
// CHECK-SAME: (%[[X:.+]]: tensor<2x3xf32>)
// CHECK-NOT: kiln.cast
// CHECK-NOT: kiln.expand
// CHECK-NOT: kiln.concat
// CHECK-NOT: kiln.slice
// CHECK-NOT: kiln.pad
// CHECK: return %[[X]], %[[X]], %[[X]], %[[X]], %[[X]]
func.func @same_type_ops(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %none = kiln.none
  %0 = kiln.cast %x {to = f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %s = kiln.constant dense<[2, 3]> : tensor<2xi64>
  %1 = kiln.expand %x, %s : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  %2 = kiln.concat %x {axis = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %st = kiln.constant dense<0> : tensor<1xi64>
  %en = kiln.constant dense<9223372036854775807> : tensor<1xi64>
  %ax = kiln.constant dense<1> : tensor<1xi64>
  %3 = kiln.slice %x, %st, %en, %ax, %none : (tensor<2x3xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<2x3xf32>
  %pads = kiln.constant dense<0> : tensor<4xi64>
  %4 = kiln.pad %x, %pads, %none, %none {mode = "reflect"} : (tensor<2x3xf32>, tensor<4xi64>, none, none) -> tensor<2x3xf32>
  return %0, %1, %2, %3, %4 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// Kept: a reversing Slice of the same type, a Slice of a dynamic dim, and a
// Pad that crops one side and pads the other.
// CHECK-LABEL: func.func @same_type_ops_stay
// CHECK: kiln.slice
// CHECK: kiln.slice
// CHECK: kiln.pad
func.func @same_type_ops_stay(%x: tensor<2x3xf32>, %y: tensor<?x3xf32>) -> (tensor<2x3xf32>, tensor<?x3xf32>, tensor<2x3xf32>) {
  %none = kiln.none
  %st = kiln.constant dense<-1> : tensor<1xi64>
  %en = kiln.constant dense<-9223372036854775807> : tensor<1xi64>
  %ax = kiln.constant dense<1> : tensor<1xi64>
  %step = kiln.constant dense<-1> : tensor<1xi64>
  %0 = kiln.slice %x, %st, %en, %ax, %step : (tensor<2x3xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x3xf32>
  %one = kiln.constant dense<1> : tensor<1xi64>
  %big = kiln.constant dense<9223372036854775807> : tensor<1xi64>
  %zero = kiln.constant dense<0> : tensor<1xi64>
  %1 = kiln.slice %y, %one, %big, %zero, %none : (tensor<?x3xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<?x3xf32>
  %pads = kiln.constant dense<[0, 1, 0, -1]> : tensor<4xi64>
  %2 = kiln.pad %x, %pads, %none, %none : (tensor<2x3xf32>, tensor<4xi64>, none, none) -> tensor<2x3xf32>
  return %0, %1, %2 : tensor<2x3xf32>, tensor<?x3xf32>, tensor<2x3xf32>
}

// Net ops removed over every case above (a new constant counts against).
// STATS-LABEL: kiln-canonicalize
// STATS-NEXT: (ops-removed) 35 :
