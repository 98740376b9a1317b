// REQUIRES: cuda-target, ptxas
// Copies on the device: a concat's inserts into strided views of its output
// are one copy kernel (kiln-cuda-copies-to-kernels), writing straight into
// the out-parameter; an output that is an input is one contiguous block,
// a gpu.memcpy on the stream (mgpuMemcpy).
//
// RUN: kiln-opt %s --convert-kiln-to-linalg --kiln-cuda-pipeline-fatbin --kiln-cuda-device-memory | FileCheck %s
// RUN: kiln-opt %s --convert-kiln-to-linalg --kiln-cuda-pipeline-fatbin --kiln-cuda-host-pipeline | FileCheck %s --check-prefix=LOW

func.func @main(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x16xf32>) {
  %c = kiln.concat %x, %y {axis = -1 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x16xf32> loc("/cat/Concat")
  return %x, %c : tensor<4x8xf32>, tensor<4x16xf32>
}

// CHECK: kiln.cuda.kernels = [{category = "copy", kernel = "k0_concat", nodes = ["/cat/Concat"]}]
// CHECK: func.func @main(%[[X:.+]]: memref<4x8xf32>, %[[Y:.+]]: memref<4x8xf32>, %[[OUT0:.+]]: memref<4x8xf32>, %[[OUT1:.+]]: memref<4x16xf32>) {
// CHECK-NOT: alloc
// CHECK: %[[LEFT:.+]] = memref.subview %[[OUT1]][0, 0] [4, 8] [1, 1]
// CHECK: %[[RIGHT:.+]] = memref.subview %[[OUT1]][0, 8] [4, 8] [1, 1]
// CHECK: %[[T1:.+]] = gpu.launch_func async [%{{.+}}] @kiln_kernels::@k0_concat {{.*}}%[[X]] : memref<4x8xf32>, %[[LEFT]] : {{.*}}, %[[Y]] : memref<4x8xf32>, %[[RIGHT]] :
// CHECK: %[[T2:.+]] = gpu.memcpy async [%[[T1]]] %[[OUT0]], %[[X]] : memref<4x8xf32>, memref<4x8xf32>
// CHECK-NEXT: gpu.wait [%[[T2]]]
// CHECK-NOT: memref.copy

// LOW: gpu.launch_func <%[[S:.+]] : !llvm.ptr> @kiln_kernels::@k0_concat
// LOW: llvm.call @mgpuMemcpy(%{{.+}}, %{{.+}}, %{{.+}}, %[[S]]) : (!llvm.ptr, !llvm.ptr, i64, !llvm.ptr) -> ()
// LOW-NOT: mgpuMemAlloc
