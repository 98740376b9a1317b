//===- AttentionOps.cpp - kiln.attention and kiln.linear_attention ---===//

#include "kiln/Dialect/KilnOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace kiln;

#define GET_OP_CLASSES
#include "kiln/Dialect/KilnAttentionOps.cpp.inc"
