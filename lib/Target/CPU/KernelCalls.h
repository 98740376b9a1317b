//===- KernelCalls.h - Calls to libkiln_abi kernels --------------*- C++ -*-===//
//
// What kiln-cpu-library-calls, kiln-cpu-int8-calls and
// kiln-cpu-amx-bf16-calls share: a memref operand passed to a C kernel as
// (aligned pointer, offset, sizes, strides) index values, and the kernel's
// private declaration taking index arguments only.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LIB_TARGET_CPU_KERNELCALLS_H
#define KILN_LIB_TARGET_CPU_KERNELCALLS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace kiln::cpu {

/// A memref as the kernels take it: its aligned base pointer and offset (in
/// elements), and its sizes and strides (in elements), all `index`.
struct StridedOperand {
  mlir::Value pointer, offset;
  llvm::SmallVector<mlir::Value> sizes, strides;
};

inline StridedOperand decompose(mlir::OpBuilder &b, mlir::Location loc,
                                mlir::Value memref) {
  auto metadata =
      mlir::memref::ExtractStridedMetadataOp::create(b, loc, memref);
  StridedOperand result;
  result.pointer =
      mlir::memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
  result.offset = metadata.getOffset();
  result.sizes.assign(metadata.getSizes().begin(), metadata.getSizes().end());
  result.strides.assign(metadata.getStrides().begin(),
                        metadata.getStrides().end());
  return result;
}

/// A memref whose innermost dimension is contiguous (stride 1): its rows
/// can be handed to a kernel with a row stride.
inline bool hasContiguousRows(mlir::Value v) {
  auto type = llvm::dyn_cast<mlir::MemRefType>(v.getType());
  if (!type)
    return false;
  llvm::SmallVector<int64_t> strides;
  int64_t offset;
  if (mlir::failed(type.getStridesAndOffset(strides, offset)))
    return false;
  return !strides.empty() && strides.back() == 1;
}

/// The private declaration of kernel `name` taking `numArgs` index values
/// (created at the start of the module the first time).
inline mlir::func::FuncOp declareKernel(mlir::ModuleOp module,
                                        llvm::StringRef name,
                                        unsigned numArgs) {
  if (auto fn = module.lookupSymbol<mlir::func::FuncOp>(name))
    return fn;
  mlir::OpBuilder b(module.getBodyRegion());
  b.setInsertionPointToStart(module.getBody());
  llvm::SmallVector<mlir::Type> types(numArgs, b.getIndexType());
  auto fn = mlir::func::FuncOp::create(b, module.getLoc(), name,
                                       b.getFunctionType(types, {}));
  fn.setPrivate();
  return fn;
}

} // namespace kiln::cpu

#endif // KILN_LIB_TARGET_CPU_KERNELCALLS_H
