//===- ElementwiseOps.cpp - Elementwise ops: inference and verifiers ------===//

#include "kiln/Dialect/KilnOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace kiln;

#define GET_OP_CLASSES
#include "kiln/Dialect/KilnElementwiseOps.cpp.inc"

/// Result of a broadcasting op: the broadcast shape of all operands, with
/// the element type of the first.
static LogicalResult inferBroadcast(std::optional<Location> loc,
                                    ValueRange operands,
                                    SmallVectorImpl<Type> &results) {
  SmallVector<ArrayRef<int64_t>> shapes;
  for (Value v : operands)
    shapes.push_back(cast<RankedTensorType>(v.getType()).getShape());
  FailureOr<SmallVector<int64_t>> shape = broadcastShapes(loc, shapes);
  if (failed(shape))
    return failure();
  results.push_back(tensorOf(*shape, getElementTypeOrSelf(operands.front())));
  return success();
}

LogicalResult AddOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &results) {
  return inferBroadcast(loc, adaptor.getOperands(), results);
}
