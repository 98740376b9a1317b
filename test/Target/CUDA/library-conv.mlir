// REQUIRES: cuda-target, ptxas
// --kernels=library: 2-D NCHW convolutions become host calls to
// kiln_rt_cuda_conv2d (cuda_abi.h; cuDNN in the runtime, CudnnCalls.cpp)
// with their bias, symmetric zero padding and relu folded in, bracketed by
// the stream calls gpu-to-llvm emits around a launch. No convolution kernel
// is left in the PTX except where the call cannot be made; the calls are in
// the kernel table (category gemm, library), numbered with the kernels.
//
// RUN: kiln-compile %s -O0 --target=cuda:sm_80 --kernels=library --emit=ptx -o %t.ptx 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: %ptxas -arch=sm_80 %t.ptx -o %t.cubin
// RUN: kiln-opt %s --convert-kiln-to-linalg --kiln-cuda-pipeline-library 2>/dev/null | FileCheck %s
// RUN: kiln-compile %s -O0 --target=cuda:sm_80 --kernels=library --emit=llvm -o - 2>/dev/null | FileCheck %s --check-prefix=LLVM
// Codegen mode is unchanged: no call.
// RUN: kiln-compile %s -O0 --target=cuda:sm_80 --emit=ptx -o - 2>&1 | FileCheck %s --check-prefix=CODEGEN

func.func @main(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>,
                %w2: tensor<6x4x3x3xf32>, %wd: tensor<6x1x3x3xf32>,
                %h: tensor<1x4x8x8xf16>, %hw: tensor<4x4x1x1xf16>, %hb: tensor<4xf16>)
    -> (tensor<2x6x4x4xf32>, tensor<2x4x5x5xf32>, tensor<1x4x8x8xf16>, tensor<1x4x8x8xf16>) {
  // f32 conv (pads 1) + bias + relu: one call, the pad absorbed (x itself
  // is passed), epilogue RELU (1) with the bias.
  %c = kiln.conv %x, %w, %b {pads = array<i64: 1, 1, 1, 1>} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<2x4x8x8xf32> loc("/n/Conv")
  %r = kiln.relu %c : tensor<2x4x8x8xf32> loc("/n/Relu")
  %none = kiln.none
  // Strides 2, no bias (a null pointer).
  %c2 = kiln.conv %r, %w2, %none {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>, none) -> tensor<2x6x4x4xf32> loc("/n/Conv2")
  // Depthwise (linalg.depthwise_conv_2d_nchw_chw): groups 6.
  %d = kiln.conv %c2, %wd, %none {pads = array<i64: 1, 1, 1, 1>, group = 6 : i64} : (tensor<2x6x4x4xf32>, tensor<6x1x3x3xf32>, none) -> tensor<2x6x4x4xf32> loc("/n/Depthwise")
  // Asymmetric pads (0 before, 1 after), dilations 2: cuDNN pads
  // symmetrically, so the padded input stays (two copy kernels) and the
  // call reads it with pads 0.
  %a = kiln.conv %x, %w, %b {pads = array<i64: 0, 0, 1, 1>, dilations = array<i64: 2, 2>} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<2x4x5x5xf32> loc("/n/ConvAsym")
  // f16 conv + f16 bias + relu: dtype FLOAT16 (10), the f32 accumulator's
  // truncation folded.
  %hr = kiln.conv %h, %hw, %hb : (tensor<1x4x8x8xf16>, tensor<4x4x1x1xf16>, tensor<4xf16>) -> tensor<1x4x8x8xf16> loc("/n/ConvHR")
  %hrr = kiln.relu %hr : tensor<1x4x8x8xf16> loc("/n/ReluH")
  // f16 conv + sigmoid: no consumer the call can compute writes the f16
  // result: a remark, and the generated kernel with the sigmoid fused.
  %hc = kiln.conv %h, %hw, %none : (tensor<1x4x8x8xf16>, tensor<4x4x1x1xf16>, none) -> tensor<1x4x8x8xf16> loc("/n/ConvH")
  %hs = kiln.sigmoid %hc : tensor<1x4x8x8xf16> loc("/n/Sigmoid")
  return %d, %a, %hrr, %hs : tensor<2x6x4x4xf32>, tensor<2x4x5x5xf32>, tensor<1x4x8x8xf16>, tensor<1x4x8x8xf16>
}

// REMARK-NOT: '/n/Conv'
// REMARK: remark: CUDA library mode: the convolution of ONNX node '/n/ConvAsym' has asymmetric pads (cuDNN pads symmetrically): its padded input stays a copy kernel, the call gets pads 0
// REMARK-NOT: '/n/ConvHR'
// REMARK: remark: CUDA library mode: the convolution of ONNX node '/n/ConvH' is not called (no elementwise consumer (a cast, relu) writing the f16 result: the call writes the input type); it stays a generated kernel

// PTX: // kernel k0_cudnn_conv_bias_relu <- ONNX nodes: /n/Conv /n/Relu
// PTX-NEXT: // kernel k1_cudnn_conv <- ONNX nodes: /n/Conv2
// PTX-NEXT: // kernel k2_cudnn_conv <- ONNX nodes: /n/Depthwise
// PTX-NEXT: // kernel k3_conv <- ONNX nodes: /n/ConvAsym
// PTX-NEXT: // kernel k4_conv <- ONNX nodes: /n/ConvAsym
// PTX-NEXT: // kernel k5_cudnn_conv_bias <- ONNX nodes: /n/ConvAsym
// PTX-NEXT: // kernel k6_cudnn_conv_bias_relu <- ONNX nodes: /n/ConvHR /n/ReluH
// PTX-NEXT: // kernel k7_conv_sigmoid <- ONNX nodes: /n/ConvH /n/Sigmoid
// PTX-NOT: // kernel
// The kernels: the asymmetric pad's zero fill and copy, the sigmoid conv.
// PTX-NOT: .entry k0
// PTX-NOT: .entry k1
// PTX-NOT: .entry k2
// PTX: .visible .entry k3_conv(
// PTX: .visible .entry k4_conv(
// PTX-NOT: .entry k5
// PTX-NOT: .entry k6
// PTX: .visible .entry k7_conv_sigmoid(
// PTX-NOT: .entry

// CHECK: kiln.cuda.kernels = [{category = "gemm", kernel = "k0_cudnn_conv_bias_relu", library = true, nodes = ["/n/Conv", "/n/Relu"]}, {category = "gemm", kernel = "k1_cudnn_conv", library = true, nodes = ["/n/Conv2"]}, {category = "gemm", kernel = "k2_cudnn_conv", library = true, nodes = ["/n/Depthwise"]}, {category = "copy", kernel = "k3_conv", nodes = ["/n/ConvAsym"]}, {category = "copy", kernel = "k4_conv", nodes = ["/n/ConvAsym"]}, {category = "gemm", kernel = "k5_cudnn_conv_bias", library = true, nodes = ["/n/ConvAsym"]}, {category = "gemm", kernel = "k6_cudnn_conv_bias_relu", library = true, nodes = ["/n/ConvHR", "/n/ReluH"]}, {category = "gemm", kernel = "k7_conv_sigmoid", nodes = [{{.*}}]}]
// CHECK-DAG: llvm.func @mgpuStreamCreate() -> !llvm.ptr
// CHECK-DAG: llvm.func @mgpuStreamSynchronize(!llvm.ptr)
// CHECK-DAG: llvm.func @mgpuStreamDestroy(!llvm.ptr)
// CHECK-DAG: func.func private @kiln_rt_cuda_conv2d(!llvm.ptr, i32, i32, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr)
// CHECK: func.func @main(%[[X:.*]]: memref<2x3x8x8xf32>, %[[W:.*]]: memref<4x3x3x3xf32>, %[[B:.*]]: memref<4xf32>, %[[W2:.*]]: memref<6x4x3x3xf32>, %[[WD:.*]]: memref<6x1x3x3xf32>, %[[H:.*]]: memref<1x4x8x8xf16>, %[[HW:.*]]: memref<4x4x1x1xf16>, %[[HB:.*]]: memref<4xf16>
// CHECK: %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// stream, dtype 1, epilogue 1, n 2, c 3, h 8, w 8, k 4, r 3, s 3, p 8,
// q 8, pads 1 1 1 1, strides 1 1, dilations 1 1, groups 1, x (the
// unpadded input), weight, bias, y.
// CHECK: %[[S0:.*]] = llvm.call @mgpuStreamCreate()
// CHECK-NEXT: memref.extract_aligned_pointer_as_index %[[B]]
// CHECK: memref.extract_aligned_pointer_as_index %[[X]]
// CHECK: memref.extract_aligned_pointer_as_index %[[W]]
// CHECK: call @kiln_rt_cuda_conv2d(%[[S0]], %c1_i32, %c1_i32, %c2_i64, %c3_i64, %c8_i64, %c8_i64, %c4_i64, %c3_i64, %c3_i64, %c8_i64, %c8_i64, %c1_i64, %c1_i64, %c1_i64, %c1_i64, %c1_i64, %c1_i64, %c1_i64, %c1_i64, %c1_i64, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {kiln.cuda.library = "k0_cudnn_conv_bias_relu"}
// CHECK-NEXT: llvm.call @mgpuStreamSynchronize(%[[S0]])
// CHECK-NEXT: llvm.call @mgpuStreamDestroy(%[[S0]])
// Strides 2: p = q = 4, epilogue NONE (0), no bias.
// CHECK: call @kiln_rt_cuda_conv2d(%{{.*}}, %c1_i32, %c0_i32, %c2_i64, %c4_i64, %c8_i64, %c8_i64, %c6_i64, %c3_i64, %c3_i64, %c4_i64, %c4_i64, %c1_i64, %c1_i64, %c1_i64, %c1_i64, %c2_i64, %c2_i64, %c1_i64, %c1_i64, %c1_i64, %{{.*}}, %{{.*}}, %[[NULL]], %{{.*}}) {kiln.cuda.library = "k1_cudnn_conv"}
// Depthwise: k = c = groups = 6, the [6, 3, 3] filter is cuDNN's [6, 1, 3, 3].
// CHECK: call @kiln_rt_cuda_conv2d(%{{.*}}, %c1_i32, %c0_i32, %c2_i64, %c6_i64, %c4_i64, %c4_i64, %c6_i64, %c3_i64, %c3_i64, %c4_i64, %c4_i64, %c1_i64, %c1_i64, %c1_i64, %c1_i64, %c1_i64, %c1_i64, %c1_i64, %c1_i64, %c6_i64, %{{.*}}, %{{.*}}, %[[NULL]], %{{.*}}) {kiln.cuda.library = "k2_cudnn_conv"}
// Asymmetric: the padded 9x9 buffer filled and copied by kernels, then the
// call on it with pads 0, dilations 2.
// CHECK: gpu.launch_func @kiln_kernels::@k3_conv
// CHECK: gpu.launch_func @kiln_kernels::@k4_conv
// CHECK: memref.extract_aligned_pointer_as_index %{{.*}} : memref<2x3x9x9xf32>
// CHECK: call @kiln_rt_cuda_conv2d(%{{.*}}, %c1_i32, %c0_i32, %c2_i64, %c3_i64, %c9_i64, %c9_i64, %c4_i64, %c3_i64, %c3_i64, %c5_i64, %c5_i64, %c0_i64, %c0_i64, %c0_i64, %c0_i64, %c1_i64, %c1_i64, %c2_i64, %c2_i64, %c1_i64, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {kiln.cuda.library = "k5_cudnn_conv_bias"}
// f16: dtype 10, epilogue RELU with the f16 bias.
// CHECK: memref.extract_aligned_pointer_as_index %[[HB]]
// CHECK: call @kiln_rt_cuda_conv2d(%{{.*}}, %c10_i32, %c1_i32, %c1_i64, %c4_i64, %c8_i64, %c8_i64, %c4_i64, %c1_i64, %c1_i64, %c8_i64, %c8_i64, %c0_i64, %c0_i64, %c0_i64, %c0_i64, %c1_i64, %c1_i64, %c1_i64, %c1_i64, %c1_i64, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {kiln.cuda.library = "k6_cudnn_conv_bias_relu"}
// CHECK: gpu.launch_func @kiln_kernels::@k7_conv_sigmoid
// CHECK-NOT: gpu.launch_func
// No convolution is left on the host.
// CHECK-NOT: linalg.

// The host code: each call inside its profiling hooks; the buffers it
// reads are freed after it, not after their pointers were taken.
// LLVM: call void @kiln_abi_prof_begin(i32 0)
// LLVM-NEXT: call void @kiln_rt_cuda_conv2d(ptr %{{.*}}, i32 1, i32 1, i64 2, i64 3, i64 8, i64 8, i64 4, i64 3, i64 3, i64 8, i64 8, i64 1, i64 1, i64 1, i64 1, i64 1, i64 1, i64 1, i64 1, i64 1,
// LLVM-NEXT: call void @kiln_abi_prof_end(i32 0)
// LLVM: call void @kiln_abi_prof_begin(i32 5)
// LLVM-NEXT: call void @kiln_rt_cuda_conv2d(
// LLVM-NEXT: call void @kiln_abi_prof_end(i32 5)
// LLVM: call void @mgpuMemFree

// CODEGEN-NOT: cudnn
// CODEGEN: // kernel k0_conv
