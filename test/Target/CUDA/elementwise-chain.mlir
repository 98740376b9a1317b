// REQUIRES: cuda-target
// An elementwise chain (add, mul, relu, exp) becomes ONE kernel: one .entry
// in the PTX, named after the ops it fuses, listed with its ONNX nodes.
//
// RUN: kiln-compile %s -O0 --target=cuda:sm_80 --emit=ptx -o %t.ptx
// RUN: FileCheck %s < %t.ptx
// RUN: kiln-compile %s -O0 --target=cuda:sm_90 --emit=ptx -o - | FileCheck %s --check-prefix=SM90

func.func @main(%x: tensor<256x128xf32>, %y: tensor<256x128xf32>) -> tensor<256x128xf32> {
  %a = kiln.add %x, %y : (tensor<256x128xf32>, tensor<256x128xf32>) -> tensor<256x128xf32> loc("/ew/Add")
  %m = kiln.mul %a, %x : (tensor<256x128xf32>, tensor<256x128xf32>) -> tensor<256x128xf32> loc("/ew/Mul")
  %r = kiln.relu %m : tensor<256x128xf32> loc("/ew/Relu")
  %e = kiln.exp %r : tensor<256x128xf32> loc("/ew/Exp")
  return %e : tensor<256x128xf32>
}

// CHECK: // Kiln CUDA kernels for sm_80
// CHECK-NEXT: // kernel k0_{{[a-z_]+}} <- ONNX nodes:
// CHECK-SAME: /ew/Add
// CHECK-NOT: // kernel
// CHECK: .target sm_80
// CHECK: .visible .entry k0_
// CHECK-DAG: add.rn.f32
// CHECK-DAG: mul.rn.f32
// CHECK-DAG: max.NaN.f32
// CHECK-DAG: ex2.approx
// CHECK-NOT: __nv_expf
// CHECK-NOT: .entry

// SM90: .target sm_90
// SM90: .entry k0_
// SM90-NOT: .entry
