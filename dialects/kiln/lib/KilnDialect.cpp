//===- KilnDialect.cpp - The kiln graph dialect ---------------------------===//

#include "kiln/Dialect/KilnDialect.h"
#include "kiln/Dialect/KilnOps.h"
#include "kiln/Dialect/KilnQuantConvOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/IR/DialectImplementation.h"

using namespace mlir;
using namespace kiln;

#include "kiln/Dialect/KilnDialect.cpp.inc"

void KilnDialect::initialize() {
  // One call per op family: a family may be empty while it grows.
  addOperations<
#define GET_OP_LIST
#include "kiln/Dialect/KilnCoreOps.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "kiln/Dialect/KilnElementwiseOps.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "kiln/Dialect/KilnReductionOps.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "kiln/Dialect/KilnNNOps.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "kiln/Dialect/KilnShapeOps.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "kiln/Dialect/KilnQuantOps.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "kiln/Dialect/KilnQuantConvOps.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "kiln/Dialect/KilnAttentionOps.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "kiln/Dialect/KilnFusedOps.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "kiln/Dialect/KilnLayoutOps.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "kiln/Dialect/KilnEmbeddingOps.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "kiln/Dialect/KilnControlFlowOps.cpp.inc"
      >();
}

Operation *KilnDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                            Type type, Location loc) {
  if (isa<NoneType>(type))
    return NoneOp::create(builder, loc);
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, type, elements);
}
