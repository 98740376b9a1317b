// REQUIRES: cuda-target, ptxas
// Codegen mode: the int8 GEMM of kiln.quantized_matmul runs on tensor cores
// (IMMA). kiln-cuda-int8-prepare makes it the signed linalg.matmul
// s8 x s8 -> s32 (W [n, k] read transposed by its map; the 128 * rowsum(W)
// correction is a reduction over W, folded with the requantization into
// the epilogue), and kiln-cuda-matmul-kernels stages A [m][k] and W [n][k]
// in shared memory with 16-byte loads, reads the fragments with ldmatrix
// (no .trans) and multiplies with mma.sync m16n8k32 into i32 accumulators;
// the epilogue is applied to the accumulators before the (i8) store. No
// cuBLASLt call. M = 40, N = 48 are no multiples of the 64x64 tile (bounds
// guards). /h/MatMul's result is reshaped into heads: reshape propagation
// splits its n loop (W read as [2, 24, 64]), still one [n, k] GEMM.
// K = 8 is no multiple of the 16-byte chunk: that GEMM keeps the
// scalar kernel, with a remark.
//
// RUN: kiln-compile %s -O0 --target=cuda:sm_80 --emit=ptx -o %t80.ptx 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: FileCheck %s < %t80.ptx
// RUN: %ptxas -arch=sm_80 %t80.ptx -o /dev/null
// RUN: kiln-compile %s -O0 --target=cuda:sm_90 --emit=ptx -o %t90.ptx
// RUN: FileCheck %s < %t90.ptx
// RUN: %ptxas -arch=sm_90 %t90.ptx -o /dev/null
// RUN: kiln-opt %s --convert-kiln-to-linalg --kiln-cuda-pipeline | FileCheck %s --check-prefix=HOST

func.func @main(%x: tensor<40x64xf32>, %w: tensor<48x64xi8>, %y: tensor<40x8xf32>, %v: tensor<48x8xi8>, %wh: tensor<48x64xi8>) -> (tensor<40x48xi8>, tensor<40x48xf32>, tensor<40x2x24xf32>) {
  %xs = kiln.constant dense<0.05> : tensor<f32>
  %xzp = kiln.constant dense<3> : tensor<i8>
  %none = kiln.none
  %sums = kiln.constant dense<7> : tensor<48xi32>
  %scale = kiln.constant dense<0.001> : tensor<48xf32>
  %bias = kiln.constant dense<5> : tensor<48xi32>
  %ys = kiln.constant dense<0.1> : tensor<f32>
  %yzp = kiln.constant dense<-2> : tensor<i8>
  %q = kiln.quantize_linear %x, %xs, %xzp : (tensor<40x64xf32>, tensor<f32>, tensor<i8>) -> tensor<40x64xi8> loc("/l0/QuantizeLinear")
  %r = kiln.quantized_matmul %q, %xzp, %w, %none, %sums, %scale, %bias, %ys, %yzp {activation = "relu"}
      : (tensor<40x64xi8>, tensor<i8>, tensor<48x64xi8>, none, tensor<48xi32>, tensor<48xf32>, tensor<48xi32>, tensor<f32>, tensor<i8>) -> tensor<40x48xi8> loc("/l0/MatMul")
  %q8 = kiln.quantize_linear %y, %xs, %xzp : (tensor<40x8xf32>, tensor<f32>, tensor<i8>) -> tensor<40x8xi8> loc("/k8/QuantizeLinear")
  %r8 = kiln.quantized_matmul %q8, %xzp, %v, %none, %sums, %scale, %none, %none, %none
      : (tensor<40x8xi8>, tensor<i8>, tensor<48x8xi8>, none, tensor<48xi32>, tensor<48xf32>, none, none, none) -> tensor<40x48xf32> loc("/k8/MatMul")
  %rh = kiln.quantized_matmul %q, %xzp, %wh, %none, %sums, %scale, %none, %none, %none
      : (tensor<40x64xi8>, tensor<i8>, tensor<48x64xi8>, none, tensor<48xi32>, tensor<48xf32>, none, none, none) -> tensor<40x48xf32> loc("/h/MatMul")
  %hs = kiln.constant dense<[40, 2, 24]> : tensor<3xi64>
  %h = kiln.reshape %rh, %hs : (tensor<40x48xf32>, tensor<3xi64>) -> tensor<40x2x24xf32> loc("/h/Reshape")
  return %r, %r8, %h : tensor<40x48xi8>, tensor<40x48xf32>, tensor<40x2x24xf32>
}

// REMARK: remark: {{.*}}CUDA: the contraction of ONNX node '/k8/MatMul' is not on tensor cores (K must be a multiple of 16 (K = 8)); it keeps the scalar kernel
// REMARK-NOT: remark

// k1 is the row sums of W; k2 the GEMM with its epilogue; /k8 keeps
// three scalar kernels; k7, k8 are /h's row sums and GEMM.
// CHECK: // kernel k1_quantized_matmul <- ONNX nodes: /l0/MatMul
// CHECK-NEXT: // kernel k2_quantized_matmul <- ONNX nodes: /l0/MatMul
// CHECK: // kernel k7_quantized_matmul <- ONNX nodes: /h/MatMul
// CHECK-NEXT: // kernel k8_quantized_matmul <- ONNX nodes: /h/MatMul
// CHECK-NOT: // kernel
// CHECK-NOT: qgemm
// CHECK-NOT: .trans
// CHECK: .visible .entry k2_quantized_matmul(
// A's fragments (x4) and W's from its [n][k] tile (x2), both without .trans;
// the plain (wrapping) s8 mma, no .satfinite.
// CHECK-NOT: .entry
// CHECK: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK-NOT: .entry
// CHECK: ldmatrix.sync.aligned.m8n8.x2.shared.b16
// CHECK-NOT: .entry
// CHECK: mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32
// The requantized result: an i8 store in the same kernel.
// CHECK-NOT: .entry
// CHECK: st.global.b8
// CHECK: .visible .entry k3_quantize_linear(
// CHECK-NOT: mma.sync
// CHECK: .visible .entry k8_quantized_matmul(
// CHECK-NOT: .entry
// CHECK: ldmatrix.sync.aligned.m8n8.x2.shared.b16
// CHECK-NOT: .entry
// CHECK: mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32
// CHECK-NOT: qgemm

// HOST-NOT: kiln_rt_cuda_qgemm
// HOST: kiln.cuda.kernels =
// HOST-NOT: library = true
// HOST: func.func @main
// HOST-NOT: kiln_rt_cuda_qgemm
// HOST: return
