// REQUIRES: cuda-target, ptxas
// fp16/bf16 matmuls (f32 accumulation) on tensor cores, sm_80+: one kernel
// per matmul with its elementwise epilogue, 64x64 block tiles staged in
// shared memory (16-byte global loads and shared stores, rows padded),
// fragments read with ldmatrix and multiplied with mma.sync m16n8k16. ptxas
// assembles the kernels for sm_80, sm_89 and sm_90.
//
// RUN: kiln-compile %s -O0 --target=cuda:sm_80 --emit=ptx -o %t80.ptx
// RUN: FileCheck %s < %t80.ptx
// RUN: FileCheck %s --check-prefix=VEC < %t80.ptx
// RUN: FileCheck %s --check-prefix=EPI < %t80.ptx
// RUN: %ptxas -arch=sm_80 %t80.ptx -o %t80.cubin
// RUN: kiln-compile %s -O0 --target=cuda:sm_89 --emit=ptx -o %t89.ptx
// RUN: %ptxas -arch=sm_89 %t89.ptx -o %t89.cubin
// RUN: kiln-compile %s -O0 --target=cuda:sm_90 --emit=ptx -o %t90.ptx
// RUN: FileCheck %s < %t90.ptx
// RUN: %ptxas -arch=sm_90 %t90.ptx -o %t90.cubin --verbose 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: kiln-opt %s --convert-kiln-to-linalg --kiln-cuda-pipeline | FileCheck %s --check-prefix=HOST

// [2, 64, 64] x [64, 32] + bias, relu: the rows of the batch fold into
// M = 128 (a generic contraction with two m loops after reshape
// propagation); a bf16 batch matmul with M = 100, not a multiple of the
// 64-row tile (guarded loads and stores).
func.func @main(%x: tensor<2x64x64xf16>, %w: tensor<64x32xf16>, %b: tensor<32xf16>,
                %y: tensor<3x100x64xbf16>, %v: tensor<3x64x48xbf16>)
    -> (tensor<2x64x32xf16>, tensor<3x100x48xbf16>) {
  %m = kiln.matmul %x, %w : (tensor<2x64x64xf16>, tensor<64x32xf16>) -> tensor<2x64x32xf16> loc("/t/MatMul")
  %a = kiln.add %m, %b : (tensor<2x64x32xf16>, tensor<32xf16>) -> tensor<2x64x32xf16> loc("/t/Add")
  %r = kiln.relu %a : tensor<2x64x32xf16> loc("/t/Relu")
  %n = kiln.matmul %y, %v : (tensor<3x100x64xbf16>, tensor<3x64x48xbf16>) -> tensor<3x100x48xbf16> loc("/t/BatchMatMul")
  return %r, %n : tensor<2x64x32xf16>, tensor<3x100x48xbf16>
}

// CHECK: // kernel k0_matmul_add_relu <- ONNX nodes: /t/MatMul /t/Add /t/Relu
// CHECK-NEXT: // kernel k1_matmul <- ONNX nodes: /t/BatchMatMul
// CHECK-NOT: // kernel

// CHECK-LABEL: .visible .entry k0_matmul_add_relu(
// The two shared tiles, 16-byte aligned: A 64x(32+8), B 32x(64+8) halves.
// CHECK-DAG: .shared .align 16 .b8 {{.*}}[5120];
// CHECK-DAG: .shared .align 16 .b8 {{.*}}[4608];
// The k loop: tiles staged, a barrier, per k16 step the fragments and
// 2 x 4 mma tiles per warp, a barrier before the next tiles (LLVM may
// unroll the k loop: K = 64 is two steps).
// CHECK: bar.sync
// CHECK: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK: ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16
// CHECK-COUNT-8: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// CHECK: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK: ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16
// CHECK-COUNT-8: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// CHECK: bar.sync
// CHECK-LABEL: .visible .entry k1_matmul(
// CHECK: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK-COUNT-8: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK-NOT: .entry

// Staging: two A and two B chunks of 16 bytes per thread and k step (LLVM
// places these blocks anywhere in the kernel). The epilogue: the bias read,
// relu, the f16 store of each accumulator.
// VEC-LABEL: .visible .entry k0_matmul_add_relu(
// VEC-COUNT-4: ld.global.v4.b32
// VEC-LABEL: .visible .entry k1_matmul(
// EPI-LABEL: .visible .entry k0_matmul_add_relu(
// EPI: ld.global.b16
// EPI: max.NaN.f32
// EPI: st.global.b16
// EPI-LABEL: .visible .entry k1_matmul(

// PTXAS-DAG: Compiling entry function 'k0_matmul_add_relu' for 'sm_90'
// PTXAS-DAG: Compiling entry function 'k1_matmul' for 'sm_90'
// PTXAS-DAG: 0 bytes spill stores

// The host: 128 threads per block, grid N/64 x M/64 x batch (1 x 2 x 1 for
// the first, 1 x 2 x 3 for the batch matmul); no scalar matmul nest left.
// HOST: gpu.launch_func {{ *}}@kiln_kernels::@k0_matmul_{{(add_relu|relu_add)}} blocks in (%[[ONE:.*]], %[[TWO:.*]], %[[ONE]]) threads in (%[[T:.*]], %[[ONE]], %[[ONE]])
// HOST: gpu.launch_func {{ *}}@kiln_kernels::@k1_matmul blocks in (%[[ONE]], %[[TWO]], %[[THREE:.*]]) threads in (%[[T]], %[[ONE]], %[[ONE]])
// HOST-NOT: gpu.launch_func
