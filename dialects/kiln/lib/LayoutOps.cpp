//===- LayoutOps.cpp - Channels-last (NHWC) convolution and pooling ---===//

#include "kiln/Dialect/KilnOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace kiln;

#define GET_OP_CLASSES
#include "kiln/Dialect/KilnLayoutOps.cpp.inc"
