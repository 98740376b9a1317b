//===- InPlaceOutputs.h - Outputs written in their input's buffer -*- C++ -*-===//
//
// The passes of InPlaceOutputs.cpp: a static KV cache written in place.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LIB_TARGET_CPU_INPLACEOUTPUTS_H
#define KILN_LIB_TARGET_CPU_INPLACEOUTPUTS_H

#include "mlir/Pass/Pass.h"

#include <memory>

namespace kiln::cpu {

/// kiln-cpu-mark-in-place-outputs: before bufferization, makes writable
/// each input of @main that a result is written from through destinations
/// only.
std::unique_ptr<mlir::Pass> createMarkInPlaceOutputsPass();

/// kiln-cpu-elide-aliased-copies: after the results became out-params,
/// drops the copy of such an input into its output (the runtime passes one
/// buffer for both) and records the pair in the module's `kiln.aliases`.
std::unique_ptr<mlir::Pass> createElideAliasedCopiesPass();

} // namespace kiln::cpu

#endif // KILN_LIB_TARGET_CPU_INPLACEOUTPUTS_H
