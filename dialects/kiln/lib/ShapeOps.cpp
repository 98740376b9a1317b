//===- ShapeOps.cpp - Shape and data-movement ops -------------------------===//

#include "kiln/Dialect/KilnOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace kiln;

#define GET_OP_CLASSES
#include "kiln/Dialect/KilnShapeOps.cpp.inc"

LogicalResult ShapeOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location>,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &results) {
  int64_t rank = cast<RankedTensorType>(adaptor.getData().getType()).getRank();
  results.push_back(tensorOf({rank}, IntegerType::get(ctx, 64)));
  return success();
}

namespace kiln {
std::optional<SmallVector<int64_t>> getKnownIntValues(Value v) {
  if (!v || isNone(v))
    return std::nullopt;
  DenseElementsAttr dense;
  if (matchPattern(v, m_Constant(&dense)) &&
      isa<IntegerType>(dense.getElementType())) {
    SmallVector<int64_t> values;
    for (APInt i : dense.getValues<APInt>())
      values.push_back(i.getSExtValue());
    return values;
  }
  return std::nullopt;
}
} // namespace kiln
