// REQUIRES: cuda-target, ptxas
// Views of device buffers stay on the host as descriptor arithmetic
// (expand-strided-metadata before gpu-to-llvm), and a buffer lives as long
// as any view of it: here the relu+exp kernel's buffer is read through two
// reshapes by the copy into the output, and freed only after that copy.
//
// RUN: kiln-opt %s --convert-kiln-to-linalg --kiln-cuda-pipeline-fatbin --kiln-cuda-device-memory | FileCheck %s
// RUN: kiln-compile %s -O0 --target=cuda:sm_80 --emit=llvm -o - 2>/dev/null | FileCheck %s --check-prefix=LL

func.func @main(%x: tensor<4x8xf32>) -> tensor<2x16xf32> {
  %r = kiln.relu %x : tensor<4x8xf32> loc("/a/Relu")
  %s = kiln.constant dense<[32]> : tensor<1xi64>
  %y = kiln.reshape %r, %s : (tensor<4x8xf32>, tensor<1xi64>) -> tensor<32xf32> loc("/a/Reshape")
  %e = kiln.exp %y : tensor<32xf32> loc("/a/Exp")
  %s2 = kiln.constant dense<[2, 16]> : tensor<2xi64>
  %z = kiln.reshape %e, %s2 : (tensor<32xf32>, tensor<2xi64>) -> tensor<2x16xf32> loc("/a/Reshape2")
  return %z : tensor<2x16xf32>
}

// CHECK: %[[T0:.+]] = gpu.wait async
// CHECK: %[[BUF:.+]], %[[T1:.+]] = gpu.alloc async [%[[T0]]] () : memref<4x8xf32>
// CHECK-NEXT: %[[T2:.+]] = gpu.launch_func async [%[[T1]]] @kiln_kernels::@k0_{{[a-z_]+}} {{.*}}%[[BUF]] : memref<4x8xf32>)
// CHECK-NEXT: %[[FLAT:.+]] = memref.collapse_shape %[[BUF]]
// CHECK-NEXT: %[[VIEW:.+]] = memref.expand_shape %[[FLAT]]
// CHECK-NEXT: %[[T3:.+]] = gpu.memcpy async [%[[T2]]] %{{.+}}, %[[VIEW]] : memref<2x16xf32>, memref<2x16xf32>
// CHECK-NEXT: %[[T4:.+]] = gpu.dealloc async [%[[T3]]] %[[BUF]] : memref<4x8xf32>
// CHECK-NEXT: gpu.wait [%[[T4]]]

// LL: call ptr @mgpuMemAlloc(i64 128,
// LL: call void @mgpuLaunchKernel(
// LL: call void @mgpuMemcpy(ptr %{{.+}}, ptr %{{.+}}, i64 128,
// LL-NEXT: call void @mgpuMemFree(
