//===- DeduplicateFunctions.h - Outlined functions that are the same code -===//
//
// Kiln's outlining passes (kiln-cpu-outline-kernels on bufferized IR,
// kiln-cpu-outline-parallel-regions on the LLVM dialect) move kernels into
// functions of their own whose parameters are everything the kernel reads
// from outside. The same kernel of every layer of a deep model is then the
// same function up to its name: this keeps the first of each and points the
// calls to the others at it.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_TARGET_CPU_DEDUPLICATEFUNCTIONS_H
#define KILN_LIB_TARGET_CPU_DEDUPLICATEFUNCTIONS_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

namespace kiln::cpu {

/// Of `functions` (all of them only called, by symbol, from `module`),
/// those whose type and body print the same (no locations, values numbered
/// within the function, argument attributes aside) are replaced by the
/// first: calls are redirected, the copies erased, and the first keeps only
/// the argument attributes (llvm.noalias) that every copy had. Returns how
/// many were erased.
unsigned
deduplicateFunctions(mlir::ModuleOp module,
                     llvm::ArrayRef<mlir::FunctionOpInterface> functions);

} // namespace kiln::cpu

#endif // KILN_LIB_TARGET_CPU_DEDUPLICATEFUNCTIONS_H
