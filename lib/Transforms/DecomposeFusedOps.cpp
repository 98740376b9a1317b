//===- DecomposeFusedOps.cpp - Norms, activations, epilogues to plain ops -===//
//
// Skeleton: filled in with the fused ops.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/KilnOps.h"
#include "kiln/Transforms/Passes.h"

using namespace mlir;

void kiln::populateDecomposeFusedOpPatterns(RewritePatternSet &) {}
