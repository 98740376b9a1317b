// REQUIRES: cuda-target, ptxas
// --kernels=library: GEMMs become host calls to kiln_rt_cuda_gemm
// (cuda_abi.h; cuBLASLt in the runtime) with their bias and relu folded
// into the call's epilogue, bracketed by the stream calls gpu-to-llvm emits
// around a launch. No matmul kernel is left in the PTX; the calls are in the
// kernel table (category gemm), numbered with the kernels.
//
// RUN: kiln-compile %s -O0 --target=cuda:sm_80 --kernels=library --emit=ptx -o %t.ptx 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: %ptxas -arch=sm_80 %t.ptx -o %t.cubin
// RUN: kiln-opt %s --convert-kiln-to-linalg --kiln-cuda-pipeline-library | FileCheck %s

func.func @main(%x: tensor<64x64xf32>, %w: tensor<64x32xf32>, %b: tensor<32xf32>,
                %h: tensor<2x64x64xf16>, %hw: tensor<64x32xf16>, %hb: tensor<32xf16>,
                %y: tensor<4x64x64xbf16>, %v: tensor<4x64x32xbf16>,
                %z: tensor<64x64xf16>, %u: tensor<64x32xf16>)
    -> (tensor<64x32xf32>, tensor<2x64x32xf16>, tensor<4x64x32xbf16>, tensor<64x32xf16>) {
  // f32 matmul + bias + relu: one call, epilogue RELU (1) with the bias.
  %m = kiln.matmul %x, %w : (tensor<64x64xf32>, tensor<64x32xf32>) -> tensor<64x32xf32> loc("/g/MatMul")
  %a = kiln.add %m, %b : (tensor<64x32xf32>, tensor<32xf32>) -> tensor<64x32xf32> loc("/g/Add")
  %r = kiln.relu %a : tensor<64x32xf32> loc("/g/Relu")
  // f16 [2, 64, 64] x [64, 32] + bias: M = 128, dtype FLOAT16 (10), the
  // f32 accumulator's truncation folded.
  %hm = kiln.matmul %h, %hw : (tensor<2x64x64xf16>, tensor<64x32xf16>) -> tensor<2x64x32xf16> loc("/g/MatMulH")
  %ha = kiln.add %hm, %hb : (tensor<2x64x32xf16>, tensor<32xf16>) -> tensor<2x64x32xf16> loc("/g/AddH")
  // bf16 batch matmul: batch 4 = b_batch, dtype BFLOAT16 (16), no bias.
  %n = kiln.matmul %y, %v : (tensor<4x64x64xbf16>, tensor<4x64x32xbf16>) -> tensor<4x64x32xbf16> loc("/g/BatchMatMul")
  // f16 matmul + sigmoid: no cuBLASLt epilogue and no f16 result to call
  // with: a remark, and the tensor-core kernel with the sigmoid fused.
  %o = kiln.matmul %z, %u : (tensor<64x64xf16>, tensor<64x32xf16>) -> tensor<64x32xf16> loc("/g/MatMulS")
  %s = kiln.sigmoid %o : tensor<64x32xf16> loc("/g/Sigmoid")
  return %r, %ha, %n, %s : tensor<64x32xf32>, tensor<2x64x32xf16>, tensor<4x64x32xbf16>, tensor<64x32xf16>
}

// The f32 and the sigmoid matmul share one zero tensor (CSE), so the f32
// one's accumulator is a copy of a zero-filled buffer: still a zero start.
// REMARK-NOT: '/g/MatMul'
// REMARK: remark: CUDA library mode: the matmul of ONNX node '/g/MatMulS' is not called (no elementwise consumer that is a cuBLASLt epilogue (bias, relu, tanh GELU) writing the f16 result); it stays a generated kernel

// PTX: // kernel k0_cublaslt_matmul_bias_relu <- ONNX nodes: /g/MatMul /g/Add /g/Relu
// PTX-NEXT: // kernel k1_cublaslt_matmul_bias <- ONNX nodes: /g/MatMulH /g/AddH
// PTX-NEXT: // kernel k2_cublaslt_matmul <- ONNX nodes: /g/BatchMatMul
// PTX-NEXT: // kernel k3_matmul_sigmoid <- ONNX nodes: /g/MatMulS /g/Sigmoid
// PTX-NOT: // kernel
// The only kernel: the sigmoid matmul on tensor cores.
// PTX-NOT: .entry k0
// PTX-NOT: .entry k1
// PTX-NOT: .entry k2
// PTX: .visible .entry k3_matmul_sigmoid(
// PTX: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// PTX-NOT: .entry

// The host IR (kiln-opt: the add and relu are fused in the other order).
// CHECK: kiln.cuda.kernels = [{category = "gemm", kernel = "k0_cublaslt_matmul_bias_relu", library = true, nodes = ["/g/MatMul", {{.*}}]}, {category = "gemm", kernel = "k1_cublaslt_matmul_bias", library = true, nodes = ["/g/MatMulH", "/g/AddH"]}, {category = "gemm", kernel = "k2_cublaslt_matmul", library = true, nodes = ["/g/BatchMatMul"]}, {category = "gemm", kernel = "k3_matmul_sigmoid", nodes = ["/g/MatMulS", "/g/Sigmoid"]}]
// CHECK-DAG: llvm.func @mgpuStreamCreate() -> !llvm.ptr
// CHECK-DAG: llvm.func @mgpuStreamSynchronize(!llvm.ptr)
// CHECK-DAG: llvm.func @mgpuStreamDestroy(!llvm.ptr)
// CHECK-DAG: func.func private @kiln_rt_cuda_gemm(!llvm.ptr, i32, i32, i64, i64, i64, i64, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr)
// CHECK: func.func @main(%[[X:.*]]: memref<64x64xf32>, %[[W:.*]]: memref<64x32xf32>, %[[B:.*]]: memref<32xf32>, %[[H:.*]]: memref<2x64x64xf16>, %[[HW:.*]]: memref<64x32xf16>, %[[HB:.*]]: memref<32xf16>, %[[Y:.*]]: memref<4x64x64xbf16>, %[[V:.*]]: memref<4x64x32xbf16>
// The null bias pointer (hoisted by the canonicalizer).
// CHECK: %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// f32: stream, dtype 1, epilogue 1, batch 1, b_batch 1, m 64, n 32, k 64,
// a, b, bias, c (a fresh result buffer, not the accumulator).
// CHECK: %[[S0:.*]] = llvm.call @mgpuStreamCreate()
// CHECK: %[[PB:.*]] = memref.extract_aligned_pointer_as_index %[[B]]
// CHECK: %[[PX:.*]] = memref.extract_aligned_pointer_as_index %[[X]]
// CHECK: call @kiln_rt_cuda_gemm(%[[S0]], %c1_i32, %c1_i32, %c1_i64, %c1_i64, %c64_i64, %c32_i64, %c64_i64, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {kiln.cuda.library = "k0_cublaslt_matmul_bias_relu"}
// CHECK-NEXT: llvm.call @mgpuStreamSynchronize(%[[S0]])
// CHECK-NEXT: llvm.call @mgpuStreamDestroy(%[[S0]])
// f16: dtype 10, epilogue NONE (0) with the bias, m = 2 * 64.
// CHECK: %[[S1:.*]] = llvm.call @mgpuStreamCreate()
// CHECK: call @kiln_rt_cuda_gemm(%[[S1]], %c10_i32, %c0_i32, %c1_i64, %c1_i64, %c128_i64, %c32_i64, %c64_i64, {{.*}}) {kiln.cuda.library = "k1_cublaslt_matmul_bias"}
// bf16: dtype 16, no bias (a null pointer), batch 4.
// CHECK: call @kiln_rt_cuda_gemm(%{{.*}}, %c16_i32, %c0_i32, %c4_i64, %c4_i64, %c64_i64, %c32_i64, %c64_i64, %{{.*}}, %{{.*}}, %[[NULL]], %{{.*}}) {kiln.cuda.library = "k2_cublaslt_matmul"}
// CHECK: gpu.launch_func {{ *}}@kiln_kernels::@k3_matmul_sigmoid
// CHECK-NOT: gpu.launch_func
// No contraction is left on the host.
// CHECK-NOT: linalg.
