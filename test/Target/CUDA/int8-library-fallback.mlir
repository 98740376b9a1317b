// REQUIRES: cuda-target
// --kernels=library: int8 GEMMs cuBLASLt's IMMA kernels cannot take keep
// Kiln's generated kernel, with a remark naming the ONNX node and why: N
// or K not a multiple of 4, a weight that is a constant of the module (not
// a device buffer the host can pass), a uint8 weight. Integer GEMMs get
// no second remark from the float library calls. Codegen mode has no
// cuBLASLt limits: its tensor-core (IMMA) kernel needs K a multiple of 16,
// and a uint8 weight keeps the scalar kernel there too.
//
// RUN: kiln-opt %s --convert-kiln-to-linalg --kiln-cuda-pipeline-library 2>&1 | FileCheck %s
// RUN: kiln-opt %s --convert-kiln-to-linalg --kiln-cuda-pipeline 2>&1 | FileCheck %s --check-prefix=CODEGEN

func.func @main(%a: tensor<4x8xi8>, %w6: tensor<6x8xi8>, %wu: tensor<8x8xui8>) -> (tensor<4x6xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %azp = kiln.constant dense<0> : tensor<i8>
  %none = kiln.none
  %sums6 = kiln.constant dense<1> : tensor<6xi32>
  %sums = kiln.constant dense<1> : tensor<8xi32>
  %scale = kiln.constant dense<1.0> : tensor<f32>
  %wc = kiln.constant dense<2> : tensor<8x8xi8>
  %y0 = kiln.quantized_matmul %a, %azp, %w6, %none, %sums6, %scale, %none, %none, %none
      : (tensor<4x8xi8>, tensor<i8>, tensor<6x8xi8>, none, tensor<6xi32>, tensor<f32>, none, none, none) -> tensor<4x6xf32> loc("/n6/MatMul")
  %y1 = kiln.quantized_matmul %a, %azp, %wc, %none, %sums, %scale, %none, %none, %none
      : (tensor<4x8xi8>, tensor<i8>, tensor<8x8xi8>, none, tensor<8xi32>, tensor<f32>, none, none, none) -> tensor<4x8xf32> loc("/const/MatMul")
  %y2 = kiln.quantized_matmul %a, %azp, %wu, %none, %sums, %scale, %none, %none, %none
      : (tensor<4x8xi8>, tensor<i8>, tensor<8x8xui8>, none, tensor<8xi32>, tensor<f32>, none, none, none) -> tensor<4x8xf32> loc("/u8w/MatMul")
  return %y0, %y1, %y2 : tensor<4x6xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// CHECK-DAG: remark: {{.*}}CUDA library mode: the int8 GEMM of ONNX node '/n6/MatMul' stays a generated kernel: cuBLASLt's int8 GEMM needs N and K multiples of 4 (N 6, K 8)
// CHECK-DAG: remark: {{.*}}CUDA library mode: the int8 GEMM of ONNX node '/u8w/MatMul' stays a generated kernel: a uint8 weight (cuBLASLt's IMMA GEMM is int8 x int8)
// CHECK-DAG: remark: {{.*}}CUDA library mode: the int8 GEMM of ONNX node '/const/MatMul' stays a generated kernel: an operand is a constant of the module, not a device buffer
// CHECK-NOT: is not called
// CHECK-NOT: kiln_rt_cuda_qgemm
// CHECK: kiln.cuda.kernels
// CHECK-NOT: cublaslt
// CHECK: func.func @main

// CODEGEN-DAG: remark: {{.*}}CUDA: the int8 GEMM of ONNX node '/u8w/MatMul' stays a generated kernel (no IMMA): a uint8 weight
// CODEGEN-DAG: remark: {{.*}}CUDA: the contraction of ONNX node '/n6/MatMul' is not on tensor cores (K must be a multiple of 16 (K = 8)); it keeps the scalar kernel
// CODEGEN-DAG: remark: {{.*}}CUDA: the contraction of ONNX node '/const/MatMul' is not on tensor cores (K must be a multiple of 16 (K = 8)); it keeps the scalar kernel
// CODEGEN-NOT: remark
// CODEGEN-NOT: qgemm
// CODEGEN: kiln.cuda.kernels
