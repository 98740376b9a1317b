//===- RuntimeCalls.h - Calls into Kiln's CUDA runtime ----------*- C++ -*-===//
//
// What the passes that replace ops with calls into the runtime's libraries
// (cuBLASLt GEMMs in LibraryCalls.cpp, cuDNN convolutions in CudnnCalls.cpp,
// int8 GEMMs in Int8Calls.cpp) share: the cuda_abi.h codes, the
// declarations of the calls and of the MLIR GPU runtime functions, the
// stream around a call, and the checks on the ops a call replaces.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_TARGET_CUDA_RUNTIMECALLS_H
#define KILN_LIB_TARGET_CUDA_RUNTIMECALLS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace kiln::cuda {

// cuda_abi.h: kiln_cuda_epilogue, and the kiln_dtype (ONNX) codes.
enum Epilogue : int32_t { kNone = 0, kRelu = 1, kGelu = 2 };
constexpr int32_t kFloat = 1, kFloat16 = 10, kBFloat16 = 16;

/// The kiln_dtype of an f32, f16 or bf16 element type.
int32_t dtypeOf(mlir::Type type);

/// `v` without the extf/truncf around it.
mlir::Value skipCasts(mlir::Value v);
/// True for a float constant zero (casts aside).
bool isZeroConstant(mlir::Value v);

/// True when `v` is (a view of) a constant of the host module
/// (`memref.get_global`: a weight under kiln-hoist-weights' threshold).
/// Kernels read such constants as their own device globals
/// (kiln-cuda-sink-globals), but the host has no device pointer of them
/// to pass to a library call.
bool isHostConstant(mlir::Value v);

/// The private declaration of the runtime function `name` (no results,
/// `params`), added to `module` once.
mlir::func::FuncOp declareCall(mlir::ModuleOp module, llvm::StringRef name,
                               llvm::ArrayRef<mlir::Type> params);
/// The declaration of an MLIR GPU runtime function (CudaRuntimeWrappers,
/// implemented by Kiln's runtime) as upstream's gpu-to-llvm declares it, so
/// that its own calls (launches, streams) reuse it.
mlir::LLVM::LLVMFuncOp declareRuntime(mlir::ModuleOp module,
                                      llvm::StringRef name, mlir::Type result,
                                      llvm::ArrayRef<mlir::Type> params);

/// The aligned pointer of `memref` as an LLVM pointer (a call argument).
mlir::Value pointerOf(mlir::OpBuilder &b, mlir::Location loc,
                      mlir::Value memref);

/// mgpuStreamCreate(): the stream a call runs on (the session's, in Kiln's
/// runtime).
mlir::Value createStream(mlir::OpBuilder &b, mlir::Location loc,
                         mlir::ModuleOp module);
/// mgpuStreamSynchronize(stream) and mgpuStreamDestroy(stream).
void synchronizeAndDestroyStream(mlir::OpBuilder &b, mlir::Location loc,
                                 mlir::ModuleOp module, mlir::Value stream);

} // namespace kiln::cuda

#endif // KILN_LIB_TARGET_CUDA_RUNTIMECALLS_H
