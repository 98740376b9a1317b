//===- ModelStats.h - Op and parameter counts of a kiln module --*- C++ -*-===//
#ifndef KILN_ANALYSIS_MODELSTATS_H
#define KILN_ANALYSIS_MODELSTATS_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <map>
#include <optional>
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
  /// Floating-point (or integer) operations of one run, by estimateFlops.
  int64_t flops = 0;
  /// Ops whose FLOPs are unknown (dynamic shapes): `flops` is then a lower
  /// bound.
  int64_t opsWithUnknownFlops = 0;
};

/// Counts the ops nested in `root` (a module or a function) and the
/// constants' sizes.
ModelStats collectModelStats(mlir::Operation *root);

/// The operations one execution of `op` performs: 2·M·N·K for matrix
/// products (MatMul, Gemm, fused and integer forms), 2 per multiply-add of
/// convolutions, 2·B·H·Sq·Skv·(D+Dv) plus the softmax for attention, one
/// per element of the largest operand or result for elementwise,
/// reduction, normalization and activation ops, and zero for data movement
/// (reshape, transpose, gather, ...) and constants. std::nullopt when a
/// shape the count needs is dynamic.
std::optional<int64_t> estimateFlops(mlir::Operation *op);

/// Prints a table of op counts before and after a pipeline, then both
/// stages' parameter counts.
void printStatsComparison(llvm::raw_ostream &os, const ModelStats &before,
                          const ModelStats &after);

/// The bytes of a weight's value (a non-splat dense or a dense_resource of
/// a byte-sized element type, `width` bytes each), empty when they cannot
/// be read. kiln-hoist-weights, kiln-cpu-pack-weights and
/// kiln-convert-precision rewrite them.
llvm::ArrayRef<char> weightBytes(mlir::ElementsAttr attr, int64_t width);

} // namespace kiln

#endif // KILN_ANALYSIS_MODELSTATS_H
