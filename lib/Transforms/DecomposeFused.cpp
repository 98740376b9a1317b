//===- DecomposeFused.cpp - kiln-decompose-fused --------------------------===//
//
// Rewrites Kiln's fused ops back into plain kiln ops, so that a backend
// without a kernel for a fused op still compiles the graph. The patterns
// live beside the ops' families (DecomposeAttention.cpp,
// DecomposeFusedOps.cpp); `ops=` restricts which ops are decomposed.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/KilnOps.h"
#include "kiln/Transforms/Origin.h"
#include "kiln/Transforms/Passes.h"
#include "kiln/Transforms/Statistics.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/ADT/StringSet.h"

namespace kiln {
#define GEN_PASS_DEF_KILNDECOMPOSEFUSED
#include "kiln/Transforms/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {
struct DecomposeFusedPass
    : kiln::impl::KilnDecomposeFusedBase<DecomposeFusedPass> {
  using Base::Base;

  kiln::Statistic numDecomposed{this, "ops-decomposed", "Fused ops decomposed"};

  void runOnOperation() override {
    RewritePatternSet all(&getContext());
    kiln::populateDecomposeAttentionPatterns(all);
    kiln::populateDecomposeFusedOpPatterns(all);
    kiln::populateDecomposeRotaryEmbeddingPatterns(all);
    kiln::populateDecomposeLayoutOpPatterns(all);

    // Keep the patterns whose root is a requested op (all when none named);
    // the roots are also what the statistic counts.
    llvm::StringSet<> wanted;
    for (const std::string &name : ops)
      wanted.insert(StringRef(name).starts_with("kiln.") ? name
                                                         : "kiln." + name);
    RewritePatternSet patterns(&getContext());
    llvm::StringSet<> roots;
    for (auto &pattern : all.getNativePatterns()) {
      std::optional<OperationName> root = pattern->getRootKind();
      if (!root)
        continue;
      if (!wanted.empty() && !wanted.contains(root->getStringRef()))
        continue;
      roots.insert(root->getStringRef());
      patterns.add(std::move(pattern));
    }
    for (const auto &name : wanted)
      if (!roots.contains(name.getKey())) {
        getOperation().emitError("kiln-decompose-fused: no decomposition for '")
            << name.getKey() << "'";
        return signalPassFailure();
      }

    auto countRoots = [&]() {
      int64_t n = 0;
      getOperation().walk([&](Operation *op) {
        n += roots.contains(op->getName().getStringRef());
      });
      return n;
    };
    int64_t before = countRoots();
    if (before == 0) {
      markAllAnalysesPreserved();
      return;
    }
    // The plain ops a fused op decomposes into keep its location: wrapped
    // with the fused op's name, it tells the CPU kernel profiler that a
    // matmul came from an attention (kiln/Transforms/Origin.h).
    getOperation().walk([&](Operation *op) {
      if (roots.contains(op->getName().getStringRef()))
        kiln::tagOrigin(op);
    });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns)))) {
      getOperation().emitError("kiln-decompose-fused did not converge");
      return signalPassFailure();
    }
    numDecomposed += before - countRoots();
  }
};
} // namespace
