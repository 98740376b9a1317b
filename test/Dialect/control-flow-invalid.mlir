// RUN: kiln-opt %s -split-input-file -verify-diagnostics

func.func @if_condition_not_scalar(%c: tensor<2xi1>, %x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{the condition must have one element, got 'tensor<2xi1>'}}
  %r = kiln.if %c : tensor<2xi1> -> (tensor<4xf32>) {
    kiln.yield %x : tensor<4xf32>
  } else {
    kiln.yield %x : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @if_branch_ranks_differ(%c: tensor<i1>, %x: tensor<4xf32>, %y: tensor<2x2xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{the else branch yields 'tensor<2x2xf32>' for result 0 of type 'tensor<4xf32>'}}
  %r = kiln.if %c : tensor<i1> -> (tensor<4xf32>) {
    kiln.yield %x : tensor<4xf32>
  } else {
    kiln.yield %y : tensor<2x2xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @if_yield_count(%c: tensor<i1>, %x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{the then branch yields 2 values for 1 results}}
  %r = kiln.if %c : tensor<i1> -> (tensor<4xf32>) {
    kiln.yield %x, %x : tensor<4xf32>, tensor<4xf32>
  } else {
    kiln.yield %x : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @loop_carried_rank(%m: tensor<i64>, %x: tensor<2xf32>, %y: tensor<2x2xf32>) -> tensor<2xf32> {
  %none = kiln.none
  // expected-error @+1 {{loop-carried value 0: the initial value 'tensor<2xf32>', the body's 'tensor<2xf32>', the yielded 'tensor<2x2xf32>' and the result 'tensor<2xf32>' must agree in element type, rank and static dims}}
  %r = kiln.loop %m, %none, %x : (tensor<i64>, none, tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%i: tensor<i64>, %go: tensor<i1>, %acc: tensor<2xf32>):
    kiln.yield %go, %y : tensor<i1>, tensor<2x2xf32>
  }
  return %r : tensor<2xf32>
}

// -----

func.func @loop_iteration_number_type(%m: tensor<i64>, %x: tensor<2xf32>) -> tensor<2xf32> {
  %none = kiln.none
  // expected-error @+1 {{the iteration number (body argument 0) must be a one-element i64 tensor, got 'tensor<i32>'}}
  %r = kiln.loop %m, %none, %x : (tensor<i64>, none, tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%i: tensor<i32>, %go: tensor<i1>, %acc: tensor<2xf32>):
    kiln.yield %go, %acc : tensor<i1>, tensor<2xf32>
  }
  return %r : tensor<2xf32>
}

// -----

func.func @loop_condition_out(%m: tensor<i64>, %x: tensor<2xf32>) -> tensor<2xf32> {
  %none = kiln.none
  // expected-error @+1 {{the body must yield a one-element i1 condition first, got 'tensor<2xf32>'}}
  %r = kiln.loop %m, %none, %x : (tensor<i64>, none, tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%i: tensor<i64>, %go: tensor<i1>, %acc: tensor<2xf32>):
    kiln.yield %acc, %acc : tensor<2xf32>, tensor<2xf32>
  }
  return %r : tensor<2xf32>
}

// -----

func.func @scan_lengths_differ(%init: tensor<2xf32>, %a: tensor<3x2xf32>, %b: tensor<4x2xf32>) -> tensor<2xf32> {
  // expected-error @+2 {{the scan inputs have lengths 3 and 4 along their scan axes}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = kiln.scan %init, %a, %b {num_scan_inputs = 2 : i64} : (tensor<2xf32>, tensor<3x2xf32>, tensor<4x2xf32>) -> tensor<2xf32> {
  ^bb0(%acc: tensor<2xf32>, %x: tensor<2xf32>, %y: tensor<2xf32>):
    kiln.yield %acc : tensor<2xf32>
  }
  return %r : tensor<2xf32>
}

// -----

func.func @scan_slice_type(%init: tensor<2xf32>, %xs: tensor<3x2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{scan input 0 of type 'tensor<3x2xf32>' has slices of type 'tensor<3xf32>', the body takes 'tensor<2xf32>'}}
  %r = kiln.scan %init, %xs {num_scan_inputs = 1 : i64, scan_input_axes = array<i64: 1>} : (tensor<2xf32>, tensor<3x2xf32>) -> tensor<2xf32> {
  ^bb0(%acc: tensor<2xf32>, %x: tensor<2xf32>):
    kiln.yield %acc : tensor<2xf32>
  }
  return %r : tensor<2xf32>
}

// -----

func.func @yield_outside(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'kiln.yield' op expects parent op to be one of 'kiln.if, kiln.loop, kiln.scan'}}
  kiln.yield %x : tensor<2xf32>
}
