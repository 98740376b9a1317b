// REQUIRES: cuda-target, ptxas
// A f32 matmul with its bias add and relu: one kernel (kiln-cuda-matmul-
// kernels: 64x64 block tiles of A and B staged in shared memory, vector<4>
// FMAs per thread; the fill folded, the add and relu applied to the
// accumulators before the store), whose name and table entry say so.
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
// The shared tiles: A 64x(32+4), B 32x(64+4) floats.
// CHECK-DAG: .shared .align 16 .b8 {{.*}}[9216];
// CHECK-DAG: .shared .align 16 .b8 {{.*}}[8704];
// CHECK: bar.sync
// CHECK: ld.shared.v4
// CHECK: fma.rn.f32
// CHECK: bar.sync
// The epilogue after the loop: bias add, then relu.
// CHECK: add.rn.f32
// CHECK: max.NaN.f32
// CHECK-NOT: .entry

// The host side: one launch of one 128-thread block (M = 64, N = 32); the
// table on the module.
// IR: module attributes {gpu.container_module, kiln.cuda.kernels = [{category = "gemm", kernel = "k0_matmul_{{(add_relu|relu_add)}}", nodes = [
// IR: gpu.launch_func  @kiln_kernels::@k0_matmul_{{[a-z_]+}} blocks in (%c1, %c1, %c1) threads in (%c128, %c1, %c1)
// IR-NOT: gpu.launch_func
// IR: gpu.binary @kiln_kernels  [#gpu.object<#nvvm.target<O = 3, chip = "sm_80", features = "+ptx80", link = ["{{.*}}libdevice.10.bc"]>, properties = {{.*}}, assembly = "

// FATBIN: gpu.binary @kiln_kernels  [#gpu.object<#nvvm.target<O = 3, chip = "sm_80", features = "+ptx80", link = ["{{.*}}libdevice.10.bc"]>, properties = {ISAToBinaryTimeInMs
// FATBIN-NOT: assembly =
