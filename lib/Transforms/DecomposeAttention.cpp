//===- DecomposeAttention.cpp - kiln.attention family to plain ops --------===//
//
// Skeleton: filled in with the attention ops.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/KilnOps.h"
#include "kiln/Transforms/Passes.h"

using namespace mlir;

void kiln::populateDecomposeAttentionPatterns(RewritePatternSet &) {}
