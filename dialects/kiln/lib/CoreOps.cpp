//===- CoreOps.cpp - kiln.constant and kiln.none --------------------------===//

#include "kiln/Dialect/KilnOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace kiln;

#define GET_OP_CLASSES
#include "kiln/Dialect/KilnCoreOps.cpp.inc"

LogicalResult ConstantOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &results) {
  auto value = dyn_cast_or_null<ElementsAttr>(adaptor.getValueAttr());
  if (!value)
    return failure();
  results.push_back(value.getType());
  return success();
}

LogicalResult ConstantOp::verify() {
  if (!isa<RankedTensorType>(getValue().getType()))
    return emitOpError("value must be a ranked tensor, got ")
           << getValue().getType();
  return success();
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

OpFoldResult NoneOp::fold(FoldAdaptor) { return UnitAttr::get(getContext()); }
