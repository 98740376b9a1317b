// RUN: kiln-opt %s --kiln-cpu-collective-calls | FileCheck %s
// RUN: kiln-opt %s --kiln-cuda-collective-calls | FileCheck %s --check-prefix=CUDA

// For the CUDA target the same call goes to the CUDA shim (NCCL).
// CUDA-DAG: func.func private @kiln_rt_cuda_all_reduce_f32(memref<1xf32>, memref<1xf32>, index)
// CUDA-DAG: func.func private @kiln_rt_cuda_all_reduce_bf16(memref<1xbf16>, memref<1xbf16>, index)
// CUDA: call @kiln_rt_cuda_all_reduce_f32(

// kiln.all_reduce becomes a call to the runtime's sum over the ranks: the
// input's buffer read, a new buffer of its run-time shape written, the
// element count computed from the dynamic dims; one kernel per element
// type (f16 and bf16 are summed in f32 by the runtime).
// CHECK-DAG: func.func private @kiln_abi_all_reduce_sum_f32(memref<1xf32>, memref<1xf32>, index)
// CHECK-DAG: func.func private @kiln_abi_all_reduce_sum_bf16(memref<1xbf16>, memref<1xbf16>, index)
// CHECK-LABEL: func.func @main
//  CHECK-SAME: (%[[X:.+]]: tensor<?x4x8xf32>, %[[H:.+]]: tensor<2x8xbf16>)
//       CHECK:   %[[ONE:.+]] = arith.constant 1 : index
//       CHECK:   %[[C0:.+]] = arith.constant 0 : index
//       CHECK:   %[[B:.+]] = tensor.dim %[[X]], %[[C0]]
//       CHECK:   %[[N0:.+]] = arith.muli %[[ONE]], %[[B]]
//       CHECK:   %[[S:.+]] = arith.constant 32 : index
//       CHECK:   %[[N:.+]] = arith.muli %[[N0]], %[[S]]
//       CHECK:   %[[IN:.+]] = bufferization.to_buffer %[[X]] read_only : tensor<?x4x8xf32> to memref<?x4x8xf32>
//       CHECK:   %[[INV:.+]] = memref.reinterpret_cast %[[IN]] to offset: [0], sizes: [1], strides: [1]
//       CHECK:   %[[OUT:.+]] = memref.alloc(%[[B]]) {alignment = 64 : i64} : memref<?x4x8xf32>
//       CHECK:   %[[OUTV:.+]] = memref.reinterpret_cast %[[OUT]] to offset: [0], sizes: [1], strides: [1]
//       CHECK:   call @kiln_abi_all_reduce_sum_f32(%[[INV]], %[[OUTV]], %[[N]])
//       CHECK:   %[[Y:.+]] = bufferization.to_tensor %[[OUT]] restrict writable
//       CHECK:   call @kiln_abi_all_reduce_sum_bf16
//       CHECK:   return %[[Y]]
//   CHECK-NOT:   kiln.all_reduce
func.func @main(%x: tensor<?x4x8xf32>, %h: tensor<2x8xbf16>) -> (tensor<?x4x8xf32>, tensor<2x8xbf16>) {
  %y = kiln.all_reduce %x : tensor<?x4x8xf32>
  %z = kiln.all_reduce %h : tensor<2x8xbf16>
  return %y, %z : tensor<?x4x8xf32>, tensor<2x8xbf16>
}
