// REQUIRES: cuda-target, ptxas
// A matmul with its bias add and relu: the fill, the matmul's loop nest and
// the epilogue's have one iteration space and fuse into ONE kernel, whose
// name and table entry say so. The reduction loop (k) stays in the thread.
//
// RUN: kiln-compile %s -O0 --target=cuda:sm_80 --emit=ptx -o - | FileCheck %s
// RUN: kiln-opt %s --convert-kiln-to-linalg --kiln-cuda-pipeline | FileCheck %s --check-prefix=IR
// RUN: kiln-opt %s --convert-kiln-to-linalg --kiln-cuda-pipeline-fatbin | FileCheck %s --check-prefix=FATBIN

func.func @main(%x: tensor<64x64xf32>, %w: tensor<64x32xf32>, %b: tensor<32xf32>) -> tensor<64x32xf32> {
  %m = kiln.matmul %x, %w : (tensor<64x64xf32>, tensor<64x32xf32>) -> tensor<64x32xf32> loc("/l0/MatMul")
  %a = kiln.add %m, %b : (tensor<64x32xf32>, tensor<32xf32>) -> tensor<64x32xf32> loc("/l0/Add")
  %r = kiln.relu %a : tensor<64x32xf32> loc("/l0/Relu")
  return %r : tensor<64x32xf32>
}

// CHECK: // kernel k0_matmul_add_relu <- ONNX nodes:
// CHECK-SAME: /l0/MatMul
// CHECK-NOT: // kernel
// CHECK: .visible .entry k0_matmul_add_relu(
// The k loop: a backward branch around the multiply-add.
// CHECK: $L__BB0_{{[0-9]+}}:
// CHECK: {{fma.rn.f32|mul.rn.f32}}
// CHECK: @%p{{[0-9]+}} bra 	$L__BB0_
// The epilogue after the loop: bias add, then relu.
// CHECK: add.rn.f32
// CHECK: max.NaN.f32
// CHECK-NOT: .entry

// The host side: one launch on a 2-D grid of 4x32-thread blocks; the table
// on the module.
// IR: module attributes {gpu.container_module, kiln.cuda.kernels = [{category = "gemm", kernel = "k0_matmul_{{(add_relu|relu_add)}}", nodes = [
// IR: gpu.launch_func  @kiln_kernels::@k0_matmul_{{[a-z_]+}} blocks in ({{.*}}) threads in (%{{.*}}, %{{.*}}, %{{.*}})
// IR-NOT: gpu.launch_func
// IR: gpu.binary @kiln_kernels  [#gpu.object<#nvvm.target<O = 3, chip = "sm_80", features = "+ptx80", link = ["{{.*}}libdevice.10.bc"]>, properties = {{.*}}, assembly = "

// FATBIN: gpu.binary @kiln_kernels  [#gpu.object<#nvvm.target<O = 3, chip = "sm_80", features = "+ptx80", link = ["{{.*}}libdevice.10.bc"]>, properties = {ISAToBinaryTimeInMs
// FATBIN-NOT: assembly =
