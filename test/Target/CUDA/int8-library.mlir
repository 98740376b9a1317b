// REQUIRES: cuda-target, ptxas
// --kernels=library: the int8 GEMM of kiln.quantized_matmul (its
// linalg.generic marked kiln.int8_matmul) becomes a host call to
// kiln_rt_cuda_qgemm (cuBLASLt IMMA, int8 x int8 -> int32), numbered with
// the kernels (k1_cublaslt_qgemm, category gemm, "library": true in the
// table) and bracketed by the profiling hooks; no kernel of the fatbin
// computes the contraction. An i8 activation goes as it is (the CPU's
// xor 0x80 shift is undone), a u8 one is shifted to i8 by an elementwise op
// fused into its QuantizeLinear's kernel; the 128 * rowsum(W) correction
// is a reduction over the weight (an entry buffer, as kiln-hoist-weights
// makes it; one per weight) whose sum is added in the epilogue's kernel.
// Codegen mode runs the same signed GEMMs as tensor-core kernels; both
// assemble with ptxas.
//
// RUN: kiln-opt %s --convert-kiln-to-linalg --kiln-cuda-pipeline-library | FileCheck %s --check-prefix=IR
// RUN: kiln-compile %s -O0 --target=cuda:sm_80 --kernels=library --emit=ptx -o %t.lib.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t.lib.ptx
// RUN: %ptxas -arch=sm_80 %t.lib.ptx -o /dev/null
// RUN: kiln-compile %s -O0 --target=cuda:sm_80 --kernels=library --emit=llvm-dialect -o - | FileCheck %s --check-prefix=HOST
// RUN: kiln-compile %s -O0 --target=cuda:sm_80 --emit=ptx -o %t.gen.ptx
// RUN: FileCheck %s --check-prefix=CODEGEN < %t.gen.ptx
// RUN: %ptxas -arch=sm_80 %t.gen.ptx -o /dev/null

func.func @main(%x: tensor<16x64xf32>, %w: tensor<32x64xi8>, %xu: tensor<16x64xf32>) -> (tensor<16x32xi8>, tensor<16x32xf32>) {
  %xs = kiln.constant dense<0.05> : tensor<f32>
  %xzp = kiln.constant dense<3> : tensor<i8>
  %none = kiln.none
  %sums = kiln.constant dense<7> : tensor<32xi32>
  %scale = kiln.constant dense<0.001> : tensor<32xf32>
  %bias = kiln.constant dense<5> : tensor<32xi32>
  %ys = kiln.constant dense<0.1> : tensor<f32>
  %yzp = kiln.constant dense<-2> : tensor<i8>
  %q = kiln.quantize_linear %x, %xs, %xzp : (tensor<16x64xf32>, tensor<f32>, tensor<i8>) -> tensor<16x64xi8> loc("/l0/QuantizeLinear")
  %y = kiln.quantized_matmul %q, %xzp, %w, %none, %sums, %scale, %bias, %ys, %yzp {activation = "relu"}
      : (tensor<16x64xi8>, tensor<i8>, tensor<32x64xi8>, none, tensor<32xi32>, tensor<32xf32>, tensor<32xi32>, tensor<f32>, tensor<i8>) -> tensor<16x32xi8> loc("/l0/MatMul")
  %uzp = kiln.constant dense<128> : tensor<ui8>
  %qu = kiln.quantize_linear %xu, %xs, %uzp : (tensor<16x64xf32>, tensor<f32>, tensor<ui8>) -> tensor<16x64xui8> loc("/l1/QuantizeLinear")
  %yu = kiln.quantized_matmul %qu, %uzp, %w, %none, %sums, %scale, %none, %none, %none
      : (tensor<16x64xui8>, tensor<ui8>, tensor<32x64xi8>, none, tensor<32xi32>, tensor<32xf32>, none, none, none) -> tensor<16x32xf32> loc("/l1/MatMul")
  return %y, %yu : tensor<16x32xi8>, tensor<16x32xf32>
}

// The contraction of each layer is a call between two launches on the
// session's stream: A (i8, or u8 xor 0x80), W and the i32 accumulator.
// IR: kiln.cuda.kernels = [{{.*}}{category = "gemm", kernel = "k1_cublaslt_qgemm", library = true, nodes = ["/l0/MatMul"]}
// IR-SAME: {category = "gemm", kernel = "k5_cublaslt_qgemm", library = true, nodes = ["/l1/MatMul"]}
// IR: func.func @main
// IR: gpu.launch_func  @kiln_kernels::@k0_quantize_linear
// IR: %[[S:.+]] = llvm.call @mgpuStreamCreate()
// IR: call @kiln_rt_cuda_qgemm(%[[S]], %c16_i64, %c32_i64, %c64_i64, %{{.+}}, %c0_i32, %{{.+}}, %{{.+}}) {kiln.cuda.library = "k1_cublaslt_qgemm"}
// IR: llvm.call @mgpuStreamDestroy(%[[S]])
// The reduction 128 * rowsum(W) needs, then the epilogue adding it.
// IR: gpu.launch_func  @kiln_kernels::@k2_quantized_matmul {{.+}} %arg1 : memref<32x64xi8>
// (The constants 128 and -128 are sunk into the kernels by
// gpu-launch-sink-index-computations, so they are no launch arguments.)
// IR: gpu.launch_func  @kiln_kernels::@k3_quantized_matmul {{.+}} : memref<32xi32>
// The u8 layer's shift (xor 0x80 = -128) is in its quantize kernel.
// IR: gpu.launch_func  @kiln_kernels::@k4_quantized_matmul_quantize_linear
// IR: call @kiln_rt_cuda_qgemm({{.+}}) {kiln.cuda.library = "k5_cublaslt_qgemm"}
// The second layer reads the same weight: its correction reuses k2's sums.
// IR-NEXT: llvm.call @mgpuStreamDestroy
// IR-NEXT: gpu.launch_func  @kiln_kernels::@k6_quantized_matmul {{.+}} : memref<32xi32>
// IR-NOT: gpu.launch_func
// IR: return
// IR-NOT: linalg.

// PTX: // kernel k0_quantize_linear <- ONNX nodes: /l0/QuantizeLinear
// PTX-NEXT: // kernel k1_cublaslt_qgemm <- ONNX nodes: /l0/MatMul
// PTX-NOT: .entry k1_
// PTX-NOT: .entry k5_
// PTX: .visible .entry k0_quantize_linear(

// Host: the call inside its hooks; A, W and C freed after it, not before.
// HOST: kiln.kernels = [{{.*}}{category = "gemm", id = 1 : i32, library = true, name = "k1_cublaslt_qgemm", onnx_nodes = ["/l0/MatMul"]}
// HOST: llvm.call @kiln_abi_prof_begin(%[[ID:[0-9]+]]) : (i32) -> (){{[[:space:]]+}}llvm.call @kiln_rt_cuda_qgemm({{.+}}) {kiln.cuda.library = "k1_cublaslt_qgemm"}
// HOST-NEXT: llvm.call @kiln_abi_prof_end(%[[ID]]) :
// HOST-NEXT: llvm.extractvalue
// HOST-NEXT: llvm.call @mgpuMemFree(

// Codegen mode: the same signed int8 GEMMs as tensor-core kernels of
// their own (IMMA, int8-tensorcore.mlir) with the epilogues folded, after
// the quantizations, and the row sums of W once.
// CODEGEN: // kernel k0_quantize_linear <- ONNX nodes: /l0/QuantizeLinear
// CODEGEN-NEXT: // kernel k1_quantized_matmul <- ONNX nodes: /l0/MatMul
// CODEGEN-NEXT: // kernel k2_quantized_matmul <- ONNX nodes: /l0/MatMul
// CODEGEN-NEXT: // kernel k3_quantized_matmul_quantize_linear <- ONNX nodes: /l1/MatMul /l1/QuantizeLinear
// CODEGEN-NEXT: // kernel k4_quantized_matmul <- ONNX nodes: /l1/MatMul
// CODEGEN-NOT: cublaslt
// CODEGEN: .visible .entry k2_quantized_matmul(
// CODEGEN: mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32
// CODEGEN: .visible .entry k4_quantized_matmul(
// CODEGEN: mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32
