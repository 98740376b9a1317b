// Range over a run-time length (torch.arange(seq), and the causal mask that
// kiln-decompose-fused builds for kiln.attention with dynamic lengths):
// ceil((limit - start) / delta) elements for a positive constant delta,
// start <= limit checked at run time (nothing to check from 0 to a dim).
// RUN: kiln-opt --kiln-test-symbolic-shapes %s | FileCheck %s

// CHECK: kiln.constraints = ["2 <= seq (kiln.range)"]
func.func @main(%x: tensor<?x?x8xf32> {kiln.name = "x", kiln.dims = ["batch", "seq", ""]})
    -> (tensor<?xi64>, tensor<?xi64>, tensor<?x?xi1>) {
  %s = kiln.shape %x {start = 1 : i64, end = 2 : i64} : (tensor<?x?x8xf32>) -> tensor<1xi64>
  %empty = kiln.constant dense<> : tensor<0xi64>
  %len = kiln.reshape %s, %empty : (tensor<1xi64>, tensor<0xi64>) -> tensor<i64>
  %zero = kiln.constant dense<0> : tensor<i64>
  %one = kiln.constant dense<1> : tensor<i64>
  %two = kiln.constant dense<2> : tensor<i64>
  %three = kiln.constant dense<3> : tensor<i64>
  // CHECK: kiln.range {{.*}}kiln.symbolic_shape = ["[seq]"]
  %rows = kiln.range %zero, %len, %one : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  // CHECK: kiln.range {{.*}}kiln.symbolic_shape = ["[seq / 3]"]
  %strided = kiln.range %two, %len, %three : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %ax = kiln.constant dense<1> : tensor<1xi64>
  %col = kiln.unsqueeze %rows, %ax : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  // CHECK: kiln.less_or_equal {{.*}}kiln.symbolic_shape = ["[seq, seq]"]
  %keep = kiln.less_or_equal %rows, %col : (tensor<?xi64>, tensor<?x1xi64>) -> tensor<?x?xi1>
  return %rows, %strided, %keep : tensor<?xi64>, tensor<?xi64>, tensor<?x?xi1>
}
