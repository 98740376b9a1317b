//===- CudaBackend.h - Kiln's CUDA backend: linalg -> PTX/fatbin -*- C++ -*-===//
//
// See docs/cuda-backend.md for the design.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TARGET_CUDA_CUDABACKEND_H
#define KILN_TARGET_CUDA_CUDABACKEND_H

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"

#include <string>

namespace kiln::cuda {

struct CudaOptions {
  std::string chip = "sm_80";
  /// "isa" (PTX text in the gpu.binary) or "fatbin".
  std::string format = "isa";
  /// "codegen" (every op a generated kernel; matmuls tiled, fp16/bf16 on
  /// tensor cores) or "library" (GEMMs as kiln_rt_cuda_gemm calls,
  /// cuBLASLt).
  std::string kernels = "codegen";
  /// Bracket each launch with the profiling hooks (kiln_abi_prof_begin/end).
  bool profileHooks = true;
};

/// linalg on tensors (after convert-kiln-to-linalg) -> host func with
/// gpu.launch_func + gpu.binary holding PTX or a fatbin.
mlir::LogicalResult buildCudaPipeline(mlir::OpPassManager &pm,
                                      const CudaOptions &options);

/// After buildCudaPipeline (format "fatbin"): the host @main on device
/// memory (gpu.alloc/dealloc/memcpy and async launches on one stream), the
/// kernel table `kiln.kernels`, the profiling hooks, gpu-to-llvm and the
/// LLVM lowering, and the exported kiln_entry(void **buffers) taking device
/// pointers (runtime/include/kiln/cuda_abi.h). HostCode.cpp.
void buildCudaHostPipeline(mlir::OpPassManager &pm, const CudaOptions &options);

/// Before the loops are mapped: memref.copy ops that are not one contiguous
/// device-to-device block become linalg.copy (a copy kernel).
std::unique_ptr<mlir::Pass> createCopiesToKernelsPass();
/// Before outlining: memref.get_global ops move into the gpu.launch bodies
/// that read them (the constants become device globals of the kernels).
std::unique_ptr<mlir::Pass> createSinkGlobalsPass();

/// Links the host code's object into a shared object with libkiln_abi.a and
/// the CUDA shim libkiln_abi_cuda.a (beside the tools, or
/// $KILN_ABI_ARCHIVE / $KILN_ABI_CUDA_ARCHIVE). Without the shim the mgpu*
/// symbols stay undefined and `warning` says so.
bool linkHostSharedObject(const std::string &object,
                          std::string &sharedObject, std::string &error,
                          std::string &warning);

void registerCudaBackendDialects(mlir::DialectRegistry &registry);
void registerCudaBackendPasses();
/// The passes of HostCode.cpp (called by registerCudaBackendPasses).
void registerHostCodePasses();
/// The passes of Int8Calls.cpp: int8 GEMMs as kiln_rt_cuda_qgemm calls.
void registerInt8CallsPasses();

} // namespace kiln::cuda

#endif // KILN_TARGET_CUDA_CUDABACKEND_H
