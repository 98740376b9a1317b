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
};

/// linalg on tensors (after convert-kiln-to-linalg) -> host func with
/// gpu.launch_func + gpu.binary holding PTX or a fatbin.
mlir::LogicalResult buildCudaPipeline(mlir::OpPassManager &pm,
                                      const CudaOptions &options);

void registerCudaBackendDialects(mlir::DialectRegistry &registry);
void registerCudaBackendPasses();

} // namespace kiln::cuda

#endif // KILN_TARGET_CUDA_CUDABACKEND_H
