//===- KernelCategory.h - The profiler's kernel categories ------*- C++ -*-===//
//
// Every target's kernel table (docs/artifact.md, "kernels") gives each
// kernel one of these categories, from the kiln ops it was lowered from.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_TARGET_KERNELCATEGORY_H
#define KILN_TARGET_KERNELCATEGORY_H

#include "llvm/ADT/StringRef.h"

#include <optional>

namespace kiln {

/// The kernel categories of the profiler, most important first (a kernel
/// mixing origins takes the first).
enum class KernelCategory {
  Attention,
  GEMM,
  Quantize,
  Reduction,
  Elementwise,
  Copy,
  Other
};
/// "attention", "gemm", "quantize", "reduction", "elementwise", "copy",
/// "other" (the names in the artifact's kernel table).
const char *kernelCategoryName(KernelCategory category);
/// The category of the kernels lowered from kiln op `name` ("kiln.matmul" or
/// "matmul").
std::optional<KernelCategory> categoryOfKilnOp(llvm::StringRef name);
} // namespace kiln

#endif // KILN_TARGET_KERNELCATEGORY_H
