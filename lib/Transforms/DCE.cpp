//===- DCE.cpp - Erase dead, effect-free ops ------------------------------===//

#include "kiln/Transforms/Passes.h"
#include "kiln/Transforms/Statistics.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"

namespace kiln {
#define GEN_PASS_DEF_KILNDCE
#include "kiln/Transforms/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {
struct DCEPass : kiln::impl::KilnDCEBase<DCEPass> {
  using Base::Base;

  kiln::Statistic numErased{this, "ops-erased", "Dead ops erased"};

  void runOnOperation() override {
    // Walk each block backwards so a chain of dead ops goes in one sweep:
    // erasing a user makes its producer dead before the walk reaches it.
    int64_t erased = 0;
    getOperation().walk([&](Block *block) {
      for (Operation &op :
           llvm::make_early_inc_range(llvm::reverse(block->getOperations()))) {
        if (op.use_empty() && isOpTriviallyDead(&op)) {
          op.erase();
          ++erased;
        }
      }
    });
    numErased += erased;
    if (erased == 0)
      markAllAnalysesPreserved();
  }
};
} // namespace
