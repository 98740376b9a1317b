//===- ReductionOps.cpp - Reductions: inference and verifiers -------------===//

#include "kiln/Dialect/KilnOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace kiln;

#define GET_OP_CLASSES
#include "kiln/Dialect/KilnReductionOps.cpp.inc"

LogicalResult ReduceSumOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  // Placeholder until the reduction family lands: rank-preserving only.
  results.push_back(adaptor.getData().getType());
  return success();
}
