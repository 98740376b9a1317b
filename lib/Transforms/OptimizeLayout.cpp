//===- OptimizeLayout.cpp - Transpose sinking and NHWC ---===//
//
// Skeleton: the pass is declared and registered; its rewrites land with the
// work item that owns this file.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/KilnOps.h"
#include "kiln/Transforms/Passes.h"

namespace kiln {
#define GEN_PASS_DEF_KILNOPTIMIZELAYOUT
#include "kiln/Transforms/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {
struct OptimizeLayoutPass : kiln::impl::KilnOptimizeLayoutBase<OptimizeLayoutPass> {
  using Base::Base;
  void runOnOperation() override {}
};
} // namespace

void kiln::populateTransposeSinkingPatterns(RewritePatternSet &) {}
