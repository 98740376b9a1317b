// Symbolic shapes through control flow: the ops inside If, Loop and Scan
// regions get shapes too, over the graph's symbols and, inside a Loop, its
// iteration number.
// RUN: kiln-opt --kiln-test-symbolic-shapes %s -split-input-file | FileCheck %s

// If: a result has a shape when both branches give the same one.
// CHECK-LABEL: func.func @main
func.func @main(%c: tensor<i1>, %x: tensor<?x4xf32> {kiln.name = "x", kiln.dims = ["batch", ""]})
    -> (tensor<?x4xf32>, tensor<?x4xf32>) {
  // CHECK: kiln.relu {{.*}}kiln.symbolic_shape = ["[batch, 4]"]
  // CHECK: kiln.neg {{.*}}kiln.symbolic_shape = ["[batch, 4]"]
  // CHECK: } {kiln.symbolic_shape = ["[batch, 4]"]}
  %same = kiln.if %c : tensor<i1> -> (tensor<?x4xf32>) {
    %r = kiln.relu %x : tensor<?x4xf32>
    kiln.yield %r : tensor<?x4xf32>
  } else {
    %n = kiln.neg %x : tensor<?x4xf32>
    kiln.yield %n : tensor<?x4xf32>
  }
  // Branches of different lengths: data-dependent.
  // CHECK: } {kiln.symbolic_shape = ["unknown since kiln.if"]}
  %other = kiln.if %c : tensor<i1> -> (tensor<?x4xf32>) {
    kiln.yield %x : tensor<?x4xf32>
  } else {
    %xx = kiln.concat %x, %x {axis = 0 : i64} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    kiln.yield %xx : tensor<?x4xf32>
  }
  return %same, %other : tensor<?x4xf32>, tensor<?x4xf32>
}

// -----

// Loop: a carried value the body yields with its initial dims keeps them;
// one that grows has a loop symbol per dynamic dim inside the body (its
// size in the iteration at hand) and is unknown after the loop. The trip count is the batch (a loop without a
// condition runs exactly that often): the scan output's length. A slice
// [i, i + 1) in the body is one long.
// CHECK-LABEL: func.func @main
func.func @main(%x: tensor<?x4xf32> {kiln.name = "x", kiln.dims = ["batch", ""]}, %t: tensor<8xf32>)
    -> (tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x1xf32>) {
  %s = kiln.shape %x {end = 1 : i64} : (tensor<?x4xf32>) -> tensor<1xi64>
  %ax = kiln.constant dense<0> : tensor<1xi64>
  %m = kiln.squeeze %s, %ax : (tensor<1xi64>, tensor<1xi64>) -> tensor<i64>
  %none = kiln.none
  // CHECK: kiln.loop {{.*}}kiln.symbolic_shape = ["[batch, 4]", "unknown since kiln.loop", "[batch, 1]"]
  // CHECK: kiln.add {{.*}}kiln.symbolic_shape = ["[batch, 4]"]
  // CHECK: kiln.concat {{.*}}kiln.symbolic_shape = ["[batch + carried_dim0, 4]"]
  // CHECK: kiln.slice {{.*}}kiln.symbolic_shape = ["[1]"]
  %acc, %grown, %rows = kiln.loop %m, %none, %x, %x : (tensor<i64>, none, tensor<?x4xf32>, tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x1xf32>) {
  ^bb0(%i: tensor<i64>, %go: tensor<i1>, %a: tensor<?x4xf32>, %g: tensor<?x4xf32>):
    %next = kiln.add %a, %x : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    %more = kiln.concat %g, %x {axis = 0 : i64} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    %one = kiln.constant dense<1> : tensor<i64>
    %end = kiln.add %i, %one : (tensor<i64>, tensor<i64>) -> tensor<i64>
    %start1 = kiln.unsqueeze %i, %ax : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
    %end1 = kiln.unsqueeze %end, %ax : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
    %row = kiln.slice %t, %start1, %end1, %none, %none : (tensor<8xf32>, tensor<1xi64>, tensor<1xi64>, none, none) -> tensor<?xf32>
    kiln.yield %go, %next, %more, %row : tensor<i1>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?xf32>
  }
  return %acc, %grown, %rows : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x1xf32>
}

// -----

// Scan: the slices drop the scan axis; the scan output's length is the
// scan inputs'.
// CHECK-LABEL: func.func @main
func.func @main(%init: tensor<?xf32> {kiln.name = "init", kiln.dims = ["n"]}, %xs: tensor<?x?xf32> {kiln.name = "xs", kiln.dims = ["steps", "n"]})
    -> (tensor<?xf32>, tensor<?x?xf32>) {
  // CHECK: kiln.scan {{.*}}kiln.symbolic_shape = ["[n]", "[n, steps]"]
  // CHECK: kiln.add {{.*}}kiln.symbolic_shape = ["[n]"]
  %sum, %all = kiln.scan %init, %xs {num_scan_inputs = 1 : i64, scan_output_axes = array<i64: 1>} : (tensor<?xf32>, tensor<?x?xf32>) -> (tensor<?xf32>, tensor<?x?xf32>) {
  ^bb0(%acc: tensor<?xf32>, %x: tensor<?xf32>):
    %next = kiln.add %acc, %x : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
    kiln.yield %next, %next : tensor<?xf32>, tensor<?xf32>
  }
  return %sum, %all : tensor<?xf32>, tensor<?x?xf32>
}
