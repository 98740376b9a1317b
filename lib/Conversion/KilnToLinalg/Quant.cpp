//===- Quant.cpp - Lowering of the Quant kiln ops to linalg -------------===//

#include "Common.h"

#include "kiln/Conversion/KilnToLinalg.h"
#include "kiln/Dialect/KilnOps.h"

using namespace mlir;
using namespace kiln::lowering;

namespace {
} // namespace

void kiln::populateQuantToLinalgPatterns(const TypeConverter &converter,
                                   RewritePatternSet &patterns) {
  (void)converter;
  (void)patterns;
}
