// Two different sizes aligned by a broadcasting op must be equal at run
// time (the compiled code never broadcasts a dynamic dim): the analysis
// states it as a constraint the runtime checks. Here an attention mask whose
// length is its own symbol (optimum names it "past + seq") meets scores over
// a cache grown by Concat.
// RUN: kiln-opt --kiln-test-symbolic-shapes %s | FileCheck %s

// CHECK: kiln.constraints = ["seq + past == total (kiln.add)"]
// CHECK: kiln.add {{.*}}kiln.symbolic_shape = ["[batch, 4, seq, seq + past]"]
// A scalar-like operand (a constant dim) adds nothing.
// CHECK: kiln.mul {{.*}}kiln.symbolic_shape = ["[batch, 4, seq, seq + past]"]
func.func @main(%q: tensor<?x4x?x16xf32> {kiln.name = "q", kiln.dims = ["batch", "", "seq", ""]},
                %cache: tensor<?x4x?x16xf32> {kiln.name = "cache", kiln.dims = ["batch", "", "past", ""]},
                %mask: tensor<?x1x1x?xf32> {kiln.name = "mask", kiln.dims = ["batch", "", "", "total"]})
    -> tensor<?x4x?x?xf32> {
  %k = kiln.concat %cache, %q {axis = 2 : i64} : (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32>
  %kt = kiln.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<?x4x?x16xf32>) -> tensor<?x4x16x?xf32>
  %s = kiln.matmul %q, %kt : (tensor<?x4x?x16xf32>, tensor<?x4x16x?xf32>) -> tensor<?x4x?x?xf32>
  %m = kiln.add %s, %mask : (tensor<?x4x?x?xf32>, tensor<?x1x1x?xf32>) -> tensor<?x4x?x?xf32>
  %c = kiln.constant dense<0.5> : tensor<1xf32>
  %y = kiln.mul %m, %c : (tensor<?x4x?x?xf32>, tensor<1xf32>) -> tensor<?x4x?x?xf32>
  return %y : tensor<?x4x?x?xf32>
}
