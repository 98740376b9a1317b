//===- QuantOps.cpp - Quantization ops: inference and verifiers -----------===//

#include "kiln/Dialect/KilnOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace kiln;

#define GET_OP_CLASSES
#include "kiln/Dialect/KilnQuantOps.cpp.inc"

LogicalResult DequantizeLinearOp::inferReturnTypes(
    MLIRContext *, std::optional<Location>, Adaptor adaptor,
    SmallVectorImpl<Type> &results) {
  auto x = cast<RankedTensorType>(adaptor.getX().getType());
  results.push_back(
      tensorOf(x.getShape(), getElementTypeOrSelf(adaptor.getXScale())));
  return success();
}
