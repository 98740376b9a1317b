// REQUIRES: cuda-target, ptxas
// The host side of a CUDA model (HostCode.cpp): intermediates are device
// allocations on the one stream, allocated before their first use and freed
// after their last, the launches are async on that stream and bracketed by
// the profiling hooks, and the lowered code calls MLIR's mgpu* functions
// from an exported kiln_entry(void **buffers) of device pointers.
//
// RUN: kiln-opt %s --convert-kiln-to-linalg --kiln-cuda-pipeline-fatbin --kiln-cuda-device-memory | FileCheck %s --check-prefix=DEV
// RUN: kiln-opt %s --convert-kiln-to-linalg --kiln-cuda-pipeline-fatbin --kiln-cuda-host-pipeline | FileCheck %s --check-prefix=LOW
// RUN: kiln-compile %s -O0 --target=cuda:sm_80 --emit=llvm -o - 2>/dev/null | FileCheck %s --check-prefix=LL
// RUN: kiln-compile %s -O0 --target=cuda:sm_80 --emit=llvm --profile-hooks=false -o - 2>/dev/null | FileCheck %s --check-prefix=NOHOOKS

func.func @main(%x: tensor<64x64xf32>, %w: tensor<64x32xf32>, %b: tensor<32xf32>) -> tensor<32x64xf32> {
  %m = kiln.matmul %x, %w : (tensor<64x64xf32>, tensor<64x32xf32>) -> tensor<64x32xf32> loc("/l0/MatMul")
  %a = kiln.add %m, %b : (tensor<64x32xf32>, tensor<32xf32>) -> tensor<64x32xf32> loc("/l0/Add")
  %r = kiln.relu %a : tensor<64x32xf32> loc("/l0/Relu")
  %t = kiln.transpose %r {perm = array<i64: 1, 0>} : (tensor<64x32xf32>) -> tensor<32x64xf32> loc("/l1/Transpose")
  return %t : tensor<32x64xf32>
}

// The tiled matmul kernel (kiln-cuda-matmul-kernels) writes its bias + relu
// epilogue straight into the result: one device allocation, freed once the
// transpose has read it. The output is an out-parameter the transpose
// writes directly.
// DEV: kiln.cuda.entry_types = [memref<64x64xf32>, memref<64x32xf32>, memref<32xf32>, memref<32x64xf32>]
// DEV: func.func @main(%[[X:.+]]: memref<64x64xf32>, %{{.+}}: memref<64x32xf32>, %{{.+}}: memref<32xf32>, %[[OUT:.+]]: memref<32x64xf32>) {
// DEV-NEXT: %[[T0:.+]] = gpu.wait async
// DEV-NOT: memref.alloc
// DEV: %[[RES:.+]], %[[T1:.+]] = gpu.alloc async [%[[T0]]] () : memref<64x32xf32>
// DEV: %[[T2:.+]] = gpu.launch_func async [%[[T1]]] @kiln_kernels::@k0_matmul_{{[a-z_]+}} {{.*}}%[[X]] : memref<64x64xf32>{{.*}}%[[RES]] : memref<64x32xf32>)
// DEV: %[[T3:.+]] = gpu.launch_func async [%[[T2]]] @kiln_kernels::@k1_transpose {{.*}}%[[RES]] : memref<64x32xf32>, %[[OUT]] : memref<32x64xf32>)
// DEV: %[[T4:.+]] = gpu.dealloc async [%[[T3]]] %[[RES]] : memref<64x32xf32>
// DEV-NEXT: gpu.wait [%[[T4]]]
// DEV-NEXT: return
// DEV-NOT: memref.dealloc

// LOW: kiln.kernels = [{category = "gemm", id = 0 : i32, name = "k0_matmul_{{[a-z_]+}}", onnx_nodes = [{{.*}}"/l0/MatMul"{{.*}}]}, {category = "copy", id = 1 : i32, name = "k1_transpose", onnx_nodes = ["/l1/Transpose"]}]
// LOW: llvm.func internal @kiln_main(
// LOW: %[[S:.+]] = llvm.call @mgpuStreamCreate() : () -> !llvm.ptr
// LOW: llvm.call @mgpuMemAlloc(%{{.+}}, %[[S]], %{{.+}}) : (i64, !llvm.ptr, i8) -> !llvm.ptr
// LOW: llvm.call @kiln_abi_prof_begin(%[[ID0:.+]]) : (i32) -> ()
// LOW-NOT: llvm.call
// LOW: gpu.launch_func <%[[S]] : !llvm.ptr> @kiln_kernels::@k0_matmul
// LOW-NEXT: llvm.call @kiln_abi_prof_end(%[[ID0]]) : (i32) -> ()
// LOW: gpu.launch_func <%[[S]] : !llvm.ptr> @kiln_kernels::@k1_transpose
// LOW: llvm.call @mgpuMemFree(%{{.+}}, %[[S]])
// LOW-NEXT: llvm.call @mgpuStreamSynchronize(%[[S]]) : (!llvm.ptr) -> ()
// LOW-NEXT: llvm.call @mgpuStreamDestroy(%[[S]]) : (!llvm.ptr) -> ()
// LOW-NEXT: llvm.return
// Four buffers (inputs, weights: none, outputs), each one descriptor.
// LOW: llvm.func @kiln_entry(%[[BUF:.+]]: !llvm.ptr) {
// LOW-COUNT-4: llvm.load %{{.+}} : !llvm.ptr -> !llvm.ptr
// LOW: llvm.call @kiln_main(

// The LLVM IR: the fatbin loaded by a global constructor, each launch
// resolving its kernel by the kernel table's name.
// LL: @kiln_kernels_binary = internal constant [{{[0-9]+}} x i8] c"P\ED
// LL: @llvm.global_ctors = appending global {{.*}} @kiln_kernels_load
// LL: @kiln_kernels_k0_matmul_add_relu_name = private unnamed_addr constant {{.*}} c"k0_matmul_add_relu\00"
// LL: @kiln_kernels_k1_transpose_name = private unnamed_addr constant {{.*}} c"k1_transpose\00"
// LL: define void @kiln_entry(ptr
// LL: %[[STREAM:.+]] = tail call ptr @mgpuStreamCreate()
// LL: call ptr @mgpuMemAlloc(i64 8192, ptr %[[STREAM]], i8 0)
// LL: call void @kiln_abi_prof_begin(i32 0)
// LL: call ptr @mgpuModuleGetFunction(ptr %{{.+}}, ptr nonnull @kiln_kernels_k0_matmul_add_relu_name)
// LL-NEXT: call void @mgpuLaunchKernel(ptr %{{.+}}, i64 {{[0-9]+}}, i64 {{[0-9]+}}, i64 1, i64 {{[0-9]+}}, i64 {{[0-9]+}}, i64 1, i32 {{[0-9]+}}, ptr %[[STREAM]],
// LL-NEXT: call void @kiln_abi_prof_end(i32 0)
// LL: call void @kiln_abi_prof_begin(i32 1)
// LL: call void @mgpuLaunchKernel(
// LL: call void @mgpuMemFree(ptr %{{.+}}, ptr %[[STREAM]])
// LL: call void @mgpuStreamSynchronize(ptr %[[STREAM]])
// LL: define internal void @kiln_kernels_load()
// LL-NEXT: entry:
// LL-NEXT: call ptr @mgpuModuleLoad(ptr nonnull @kiln_kernels_binary, i64 {{[0-9]+}})

// NOHOOKS-NOT: kiln_abi_prof_begin
// NOHOOKS: call void @mgpuLaunchKernel(
// NOHOOKS-NOT: kiln_abi_prof
