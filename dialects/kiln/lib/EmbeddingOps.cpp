//===- EmbeddingOps.cpp - Position embeddings -----------------------------===//

#include "kiln/Dialect/KilnOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace kiln;

#define GET_OP_CLASSES
#include "kiln/Dialect/KilnEmbeddingOps.cpp.inc"

LogicalResult RotaryEmbeddingOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &results) {
  auto x = cast<RankedTensorType>(adaptor.getX().getType());
  for (Value table : {adaptor.getCos(), adaptor.getSin()}) {
    auto type = cast<RankedTensorType>(table.getType());
    if (type.getElementType() != x.getElementType())
      return emitOptionalError(loc, "cos and sin must have X's element type ",
                               x.getElementType(), ", got ", type);
    FailureOr<SmallVector<int64_t>> shape =
        broadcastShapes(loc, {x.getShape(), type.getShape()});
    if (failed(shape))
      return failure();
    // The tables broadcast to X without enlarging it.
    if (shape->size() != size_t(x.getRank()) ||
        !llvm::equal(*shape, x.getShape(), [](int64_t b, int64_t d) {
          return b == d || ShapedType::isDynamic(d);
        }))
      return emitOptionalError(loc, "cos/sin of type ", type,
                               " broadcast beyond X's shape ", x);
  }
  results.push_back(x);
  return success();
}

LogicalResult RotaryEmbeddingOp::verify() {
  RankedTensorType x = getX().getType();
  if (x.getRank() < 1)
    return emitOpError("X must have at least one dim (the rotated features)");
  int64_t d = x.getDimSize(x.getRank() - 1);
  if (!ShapedType::isDynamic(d) && d % 2 != 0)
    return emitOpError("the rotated dim has odd size ") << d;
  for (Value table : {getCos(), getSin()}) {
    auto type = cast<RankedTensorType>(table.getType());
    int64_t last = type.getRank() ? type.getDimSize(type.getRank() - 1) : 1;
    if (!ShapedType::isDynamic(last) && !ShapedType::isDynamic(d) &&
        last != d)
      return emitOpError("cos/sin must cover the whole rotated dim (")
             << d << "), got " << type;
  }
  return success();
}
