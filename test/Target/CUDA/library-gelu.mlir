// REQUIRES: cuda-target, ptxas
// --kernels=library: a Gelu with approximate="tanh" after the bias add is
// cuBLASLt's GELU epilogue (KILN_CUDA_EPILOGUE_GELU = 2), recognized by
// evaluating the fused body (f32, and f16 through its casts); the default
// erf-based Gelu is another function: its matmul is called without an
// epilogue and the Gelu stays a kernel.
//
// RUN: kiln-compile %s -O0 --target=cuda:sm_80 --kernels=library --emit=ptx -o %t.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: %ptxas -arch=sm_80 %t.ptx -o %t.cubin
// RUN: kiln-opt %s --convert-kiln-to-linalg --kiln-cuda-pipeline-library | FileCheck %s

func.func @main(%x: tensor<64x64xf32>, %w: tensor<64x32xf32>, %b: tensor<32xf32>,
                %h: tensor<64x64xf16>, %hw: tensor<64x32xf16>, %hb: tensor<32xf16>,
                %y: tensor<64x64xf32>, %v: tensor<64x32xf32>)
    -> (tensor<64x32xf32>, tensor<64x32xf16>, tensor<64x32xf32>) {
  %m = kiln.matmul %x, %w : (tensor<64x64xf32>, tensor<64x32xf32>) -> tensor<64x32xf32> loc("/q/MatMul")
  %a = kiln.add %m, %b : (tensor<64x32xf32>, tensor<32xf32>) -> tensor<64x32xf32> loc("/q/Add")
  %g = kiln.gelu %a {approximate = "tanh"} : tensor<64x32xf32> loc("/q/Gelu")
  %hm = kiln.matmul %h, %hw : (tensor<64x64xf16>, tensor<64x32xf16>) -> tensor<64x32xf16> loc("/q/MatMulH")
  %ha = kiln.add %hm, %hb : (tensor<64x32xf16>, tensor<32xf16>) -> tensor<64x32xf16> loc("/q/AddH")
  %hg = kiln.gelu %ha {approximate = "tanh"} : tensor<64x32xf16> loc("/q/GeluH")
  %e = kiln.matmul %y, %v : (tensor<64x64xf32>, tensor<64x32xf32>) -> tensor<64x32xf32> loc("/q/MatMulE")
  %eg = kiln.gelu %e : tensor<64x32xf32> loc("/q/GeluE")
  return %g, %hg, %eg : tensor<64x32xf32>, tensor<64x32xf16>, tensor<64x32xf32>
}

// PTX: // kernel k0_cublaslt_matmul_bias_gelu <- ONNX nodes: /q/MatMul /q/Add /q/Gelu
// PTX-NEXT: // kernel k1_cublaslt_matmul_bias_gelu <- ONNX nodes: /q/MatMulH /q/AddH /q/GeluH
// PTX-NEXT: // kernel k2_cublaslt_matmul <- ONNX nodes: /q/MatMulE
// PTX-NEXT: // kernel k3_gelu <- ONNX nodes: /q/GeluE
// PTX-NOT: // kernel
// PTX-NOT: .entry k{{[0-2]}}_
// PTX: .visible .entry k3_gelu(

// CHECK: call @kiln_rt_cuda_gemm(%{{.*}}, %c1_i32, %c2_i32, %c1_i64, %c1_i64, %c64_i64, %c32_i64, %c64_i64, {{.*}}) {kiln.cuda.library = "k0_cublaslt_matmul_bias_gelu"}
// CHECK: call @kiln_rt_cuda_gemm(%{{.*}}, %c10_i32, %c2_i32, %c1_i64, %c1_i64, %c64_i64, %c32_i64, %c64_i64, {{.*}}) {kiln.cuda.library = "k1_cublaslt_matmul_bias_gelu"}
// CHECK: call @kiln_rt_cuda_gemm(%{{.*}}, %c1_i32, %c0_i32, %c1_i64, %c1_i64, %c64_i64, %c32_i64, %c64_i64, {{.*}}) {kiln.cuda.library = "k2_cublaslt_matmul"}
// CHECK: gpu.launch_func {{ *}}@kiln_kernels::@k3_gelu
