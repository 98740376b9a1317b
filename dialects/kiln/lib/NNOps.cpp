//===- NNOps.cpp - Linear algebra and NN ops: inference and verifiers -----===//

#include "kiln/Dialect/KilnOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace kiln;

#define GET_OP_CLASSES
#include "kiln/Dialect/KilnNNOps.cpp.inc"

LogicalResult MatMulOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  // Placeholder until the NN family lands.
  results.push_back(adaptor.getA().getType());
  return success();
}
