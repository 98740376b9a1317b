// RUN: kiln-opt %s -split-input-file -verify-diagnostics
// Pins the inferred types of shape-inference.mlir's key cases exactly: a
// declared type may be more static than the inferred one, so there a too weak
// inference would pass; here each declares a contradicting type and checks
// the inferred type in the diagnostic.

func.func @exported_view(%x: tensor<?x128x8xf32>) {
  %s = kiln.shape %x : (tensor<?x128x8xf32>) -> tensor<3xi64>
  %zero = kiln.constant dense<0> : tensor<i64>
  %d0 = kiln.gather %s, %zero {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %ax = kiln.constant dense<0> : tensor<1xi64>
  %u = kiln.unsqueeze %d0, %ax : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %c = kiln.constant dense<[-1, 64]> : tensor<2xi64>
  %shape = kiln.concat %u, %c {axis = 0 : i64} : (tensor<1xi64>, tensor<2xi64>) -> tensor<3xi64>
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{inferred type(s) 'tensor<?x16x64xf32>' are incompatible with return type(s) of operation 'tensor<?x16x65xf32>'}}
  %y = kiln.reshape %x, %shape : (tensor<?x128x8xf32>, tensor<3xi64>) -> tensor<?x16x65xf32>
  return
}

// -----

func.func @shape_arithmetic(%x: tensor<?x128x8xf32>) {
  %s = kiln.shape %x {start = 1 : i64} : (tensor<?x128x8xf32>) -> tensor<2xi64>
  %i0 = kiln.constant dense<[0]> : tensor<1xi64>
  %i1 = kiln.constant dense<[1]> : tensor<1xi64>
  %a = kiln.gather %s, %i0 {axis = 0 : i64} : (tensor<2xi64>, tensor<1xi64>) -> tensor<1xi64>
  %b = kiln.gather %s, %i1 {axis = 0 : i64} : (tensor<2xi64>, tensor<1xi64>) -> tensor<1xi64>
  %sum = kiln.add %a, %b : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %prod = kiln.mul %sum, %b : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %q = kiln.div %prod, %i1 : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %fill = kiln.constant_of_shape %q : (tensor<1xi64>) -> tensor<1088xf32>
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{inferred type(s) 'tensor<1088xf32>' are incompatible with return type(s) of operation 'tensor<1089xf32>'}}
  %bad = kiln.constant_of_shape %q : (tensor<1xi64>) -> tensor<1089xf32>
  return
}

// -----

func.func @reshape_partial(%x: tensor<?x?xf32>, %n: tensor<1xi64>) {
  %c = kiln.constant dense<[64]> : tensor<1xi64>
  %shape = kiln.concat %n, %c {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{inferred type(s) 'tensor<?x64xf32>' are incompatible with return type(s) of operation 'tensor<?x63xf32>'}}
  %y = kiln.reshape %x, %shape : (tensor<?x?xf32>, tensor<2xi64>) -> tensor<?x63xf32>
  return
}

// -----

func.func @slice_and_expand(%x: tensor<3xf32>, %y: tensor<?x5x7xf32>) {
  %s = kiln.shape %y : (tensor<?x5x7xf32>) -> tensor<3xi64>
  %start = kiln.constant dense<0> : tensor<1xi64>
  %end = kiln.constant dense<2> : tensor<1xi64>
  %none = kiln.none
  %head = kiln.slice %s, %start, %end, %none, %none : (tensor<3xi64>, tensor<1xi64>, tensor<1xi64>, none, none) -> tensor<2xi64>
  %one = kiln.constant dense<1> : tensor<1xi64>
  %shape = kiln.concat %head, %one {axis = 0 : i64} : (tensor<2xi64>, tensor<1xi64>) -> tensor<3xi64>
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{inferred type(s) 'tensor<?x5x3xf32>' are incompatible with return type(s) of operation 'tensor<?x4x3xf32>'}}
  %z = kiln.expand %x, %shape : (tensor<3xf32>, tensor<3xi64>) -> tensor<?x4x3xf32>
  return
}

// -----

func.func @slice_negative_step(%x: tensor<10x6xf32>) {
  %m1 = kiln.constant dense<-1> : tensor<1xi64>
  %rev = kiln.constant dense<-9223372036854775807> : tensor<1xi64>
  %ax1 = kiln.constant dense<1> : tensor<1xi64>
  %st = kiln.constant dense<-2> : tensor<1xi64>
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{inferred type(s) 'tensor<10x3xf32>' are incompatible with return type(s) of operation 'tensor<10x2xf32>'}}
  %b = kiln.slice %x, %m1, %rev, %ax1, %st : (tensor<10x6xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<10x2xf32>
  return
}

// -----

func.func @expand_where_equal(%x: tensor<1x3x1xf32>) {
  %shape = kiln.constant dense<[4, -1, 5]> : tensor<3xi64>
  %m1 = kiln.constant dense<-1> : tensor<i64>
  %is = kiln.equal %shape, %m1 : (tensor<3xi64>, tensor<i64>) -> tensor<3xi1>
  %ones = kiln.constant dense<1> : tensor<3xi64>
  %t = kiln.where %is, %ones, %shape : (tensor<3xi1>, tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{inferred type(s) 'tensor<4x3x5xf32>' are incompatible with return type(s) of operation 'tensor<4x3x6xf32>'}}
  %y = kiln.expand %x, %t : (tensor<1x3x1xf32>, tensor<3xi64>) -> tensor<4x3x6xf32>
  return
}

// -----

func.func @attention_merge(%x: tensor<?x?x512xf32>) {
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
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{inferred type(s) 'tensor<?x?x512xf32>' are incompatible with return type(s) of operation 'tensor<?x?x511xf32>'}}
  %y = kiln.reshape %back, %merged : (tensor<?x?x8x64xf32>, tensor<3xi64>) -> tensor<?x?x511xf32>
  return
}

// -----

func.func @split_known_sizes(%x: tensor<?x128xf32>) {
  %sizes = kiln.constant dense<[100, 28]> : tensor<2xi64>
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{inferred type(s) 'tensor<?x100xf32>', 'tensor<?x28xf32>' are incompatible}}
  %p:2 = kiln.split %x, %sizes {axis = 1 : i64, num_outputs = 2 : i64} : (tensor<?x128xf32>, tensor<2xi64>) -> (tensor<?x100xf32>, tensor<?x27xf32>)
  return
}
