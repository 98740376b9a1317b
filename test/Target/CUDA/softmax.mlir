// REQUIRES: cuda-target, ptxas
// A softmax over rows: reduction kernels (one thread per row loops over the
// row: max, then exp/sum, then the division), named after the softmax.
//
// RUN: kiln-compile %s -O0 --target=cuda:sm_80 --emit=ptx -o %t.ptx
// RUN: FileCheck %s < %t.ptx
// RUN: %ptxas -arch=sm_80 %t.ptx -o %t.cubin

func.func @main(%x: tensor<8x128xf32>) -> tensor<8x128xf32> {
  %r = kiln.softmax %x {axis = -1 : i64} : (tensor<8x128xf32>) -> tensor<8x128xf32> loc("/attn/Softmax")
  return %r : tensor<8x128xf32>
}

// CHECK: // kernel k0_softmax <- ONNX nodes: /attn/Softmax
// CHECK: .entry k0_softmax(
// CHECK: max.NaN.f32
// CHECK: ex2.approx
// CHECK: .entry k1_softmax(
// CHECK: div.rn.f32
