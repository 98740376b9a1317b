//===- DedupConstants.cpp - Merge identical constants ---===//
//
// Skeleton: the pass is declared and registered; its rewrites land with the
// work item that owns this file.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/KilnOps.h"
#include "kiln/Transforms/Passes.h"

namespace kiln {
#define GEN_PASS_DEF_KILNDEDUPCONSTANTS
#include "kiln/Transforms/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {
struct DedupConstantsPass : kiln::impl::KilnDedupConstantsBase<DedupConstantsPass> {
  using Base::Base;
  void runOnOperation() override {}
};
} // namespace
