//===- ModelStats.h - Op and parameter counts of a kiln module --*- C++ -*-===//
#ifndef KILN_ANALYSIS_MODELSTATS_H
#define KILN_ANALYSIS_MODELSTATS_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <map>
#include <string>

namespace kiln {

/// What `kiln-compile --summary` reports about one stage of a model.
struct ModelStats {
  /// Ops by name (`kiln.conv`, ...), constants and `kiln.none` included.
  std::map<std::string, int64_t> opCounts;
  int64_t numOps = 0;
  /// Constant tensors (initializers and folded constants).
  int64_t numConstants = 0;
  int64_t constantElements = 0;
  int64_t constantBytes = 0;
};

/// Counts the ops inside the module's functions and the constants' sizes.
ModelStats collectModelStats(mlir::ModuleOp module);

/// Prints a table of op counts before and after a pipeline, then both
/// stages' parameter counts.
void printStatsComparison(llvm::raw_ostream &os, const ModelStats &before,
                          const ModelStats &after);

} // namespace kiln

#endif // KILN_ANALYSIS_MODELSTATS_H
