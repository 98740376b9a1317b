// Symbolic shape propagation (kiln/Analysis/SymbolicShapes.h): every dim of
// every value as an expression over the graph inputs' dynamic dims.
// RUN: kiln-opt --kiln-test-symbolic-shapes %s | FileCheck %s

// Inputs naming the same dim_param share its symbol; an unnamed dynamic dim
// is named after its input.
// CHECK: kiln.constraints = ["seq <= 8 (kiln.slice)"]
// CHECK-SAME: kiln.symbols = ["batch = dim 0 of arg 0", "seq = dim 1 of arg 0", "past = dim 2 of arg 1", "mask_dim1 = dim 1 of arg 2"]
func.func @main(%x: tensor<?x?x64xf32> {kiln.name = "x", kiln.dims = ["batch", "seq", ""]},
                %cache: tensor<?x4x?x16xf32> {kiln.name = "cache", kiln.dims = ["batch", "", "past", ""]},
                %mask: tensor<?x?xi64> {kiln.name = "mask", kiln.dims = ["batch", ""]},
                %w: tensor<64x64xf32> {kiln.name = "w"})
    -> (tensor<?x4x?x16xf32>, tensor<?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>) {
  // Broadcast and matmul keep the symbols.
  // CHECK: kiln.matmul {{.*}}kiln.symbolic_shape = ["[batch, seq, 64]"]
  %h = kiln.matmul %x, %w : (tensor<?x?x64xf32>, tensor<64x64xf32>) -> tensor<?x?x64xf32>
  // PyTorch's shape arithmetic: Shape -> Gather -> Unsqueeze -> Concat.
  // CHECK: kiln.shape {{.*}}kiln.symbolic_shape = ["[3] = [batch, seq, 64]"]
  %s = kiln.shape %h : (tensor<?x?x64xf32>) -> tensor<3xi64>
  %i0 = kiln.constant dense<0> : tensor<i64>
  %i1 = kiln.constant dense<1> : tensor<i64>
  %b = kiln.gather %s, %i0 : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %t = kiln.gather %s, %i1 : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %ax = kiln.constant dense<0> : tensor<1xi64>
  %b1 = kiln.unsqueeze %b, %ax : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %t1 = kiln.unsqueeze %t, %ax : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %heads = kiln.constant dense<[4, 16]> : tensor<2xi64>
  // CHECK: kiln.concat {{.*}}kiln.symbolic_shape = ["[4] = [batch, seq, 4, 16]"]
  %shape = kiln.concat %b1, %t1, %heads {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<2xi64>) -> tensor<4xi64>
  // CHECK: kiln.reshape {{.*}}kiln.symbolic_shape = ["[batch, seq, 4, 16]"]
  %q = kiln.reshape %h, %shape : (tensor<?x?x64xf32>, tensor<4xi64>) -> tensor<?x?x4x16xf32>
  // CHECK: kiln.transpose {{.*}}kiln.symbolic_shape = ["[batch, 4, seq, 16]"]
  %qt = kiln.transpose %q {perm = array<i64: 0, 2, 1, 3>} : (tensor<?x?x4x16xf32>) -> tensor<?x4x?x16xf32>
  // A KV cache grown by Concat: past + seq.
  // CHECK: kiln.concat {{.*}}kiln.symbolic_shape = ["[batch, 4, seq + past, 16]"]
  %grown = kiln.concat %cache, %qt {axis = 2 : i64} : (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32>
  // Reshape with -1: batch * seq rows.
  %flat = kiln.constant dense<[-1, 64]> : tensor<2xi64>
  // CHECK: kiln.reshape {{.*}}kiln.symbolic_shape = ["[batch * seq, 64]"]
  %rows = kiln.reshape %h, %flat : (tensor<?x?x64xf32>, tensor<2xi64>) -> tensor<?x64xf32>
  %s1 = kiln.constant dense<1> : tensor<1xi64>
  // A reduction over seq keeps batch.
  // CHECK: kiln.reduce_mean {{.*}}kiln.symbolic_shape = ["[batch, 1, 64]"]
  %m = kiln.reduce_mean %h, %s1 {keepdims = 1 : i64} : (tensor<?x?x64xf32>, tensor<1xi64>) -> tensor<?x1x64xf32>
  // CHECK: kiln.sub {{.*}}kiln.symbolic_shape = ["[batch, seq, 64]"]
  %c = kiln.sub %h, %m : (tensor<?x?x64xf32>, tensor<?x1x64xf32>) -> tensor<?x?x64xf32>
  // PyTorch's Where(Equal(shape, -1), 1, shape) before an Expand: sizes
  // are never -1, so the shape stays symbolic.
  %minus = kiln.constant dense<-1> : tensor<4xi64>
  %ones = kiln.constant dense<1> : tensor<4xi64>
  %isneg = kiln.equal %shape, %minus : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi1>
  // CHECK: kiln.where {{.*}}kiln.symbolic_shape = ["[4] = [batch, seq, 4, 16]"]
  %fixed = kiln.where %isneg, %ones, %shape : (tensor<4xi1>, tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  // CHECK: kiln.expand {{.*}}kiln.symbolic_shape = ["[batch, seq, 4, 16]"]
  %ex = kiln.expand %q, %fixed : (tensor<?x?x4x16xf32>, tensor<4xi64>) -> tensor<?x?x4x16xf32>
  // A slice to a run-time end: [:seq] rows of a position table, assumed
  // within the table (ONNX would clamp), a constraint the runtime checks.
  %table = kiln.constant dense<1.0> : tensor<8x4xf32>
  // CHECK: kiln.slice {{.*}}kiln.symbolic_shape = ["[seq, 4]"]
  %pos = kiln.slice %table, %ax, %t1, %ax, %s1 : (tensor<8x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x4xf32>
  // A step of 2 over a dynamic dim is not expressed: the value is unknown,
  // and so is what uses it.
  %two = kiln.constant dense<2> : tensor<1xi64>
  %end = kiln.constant dense<9223372036854775807> : tensor<1xi64>
  // CHECK: kiln.slice {{.*}}kiln.symbolic_shape = ["unknown since kiln.slice"]
  %sl = kiln.slice %h, %ax, %end, %ax, %two : (tensor<?x?x64xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x?x64xf32>
  // CHECK: kiln.relu {{.*}}kiln.symbolic_shape = ["unknown since kiln.slice"]
  %r = kiln.relu %sl : tensor<?x?x64xf32>
  return %grown, %rows, %c, %r : tensor<?x4x?x16xf32>, tensor<?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>
}
