//===- DecomposeFused.cpp - kiln-decompose-fused --------------------------===//
//
// Rewrites Kiln's fused ops back into plain kiln ops, so that a backend
// without a kernel for a fused op still compiles the graph. The patterns
// live beside the ops' families (DecomposeAttention.cpp,
// DecomposeFusedOps.cpp); `ops=` restricts which ops are decomposed.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/KilnOps.h"
#include "kiln/Dialect/ShapeInference.h"
#include "kiln/Transforms/Origin.h"
#include "kiln/Transforms/Passes.h"
#include "kiln/Transforms/Statistics.h"

#include "kiln/Dialect/NNShapes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/ADT/StringSet.h"

using namespace mlir;

bool kiln::isLibraryConvolution(Operation *op) {
  if (!isa<ConvNhwcOp, FusedConvNhwcOp>(op))
    return false;
  auto x = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
  auto w = dyn_cast<RankedTensorType>(op->getOperand(1).getType());
  auto y = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!x || !w || !y || x.getRank() != 4 || w.getRank() != 4 ||
      y.getRank() != 4 || !x.getElementType().isF32() ||
      !w.getElementType().isF32() || !y.getElementType().isF32() ||
      !w.hasStaticShape())
    return false;
  // Run-time image sizes are the call's arguments (oneDNN makes a
  // primitive for each size seen; SAME's pads are computed from them).
  // The channels are static.
  if (x.isDynamicDim(3) || y.isDynamicDim(3))
    return false;
  int64_t channels = x.getDimSize(3), filters = w.getDimSize(0);
  int64_t group = 1;
  StringRef autoPad;
  Value bias, residual;
  if (auto conv = dyn_cast<ConvNhwcOp>(op)) {
    group = conv.getGroup();
    autoPad = conv.getAutoPad();
    bias = conv.getB();
  } else {
    auto fused = cast<FusedConvNhwcOp>(op);
    group = fused.getGroup();
    autoPad = fused.getAutoPad();
    bias = fused.getB();
    residual = fused.getResidual();
  }
  if (group < 1 || channels % group != 0 || filters % group != 0 ||
      w.getDimSize(3) != channels / group || y.getDimSize(3) != filters ||
      !llvm::is_contained({"NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"},
                          autoPad))
    return false;
  if (bias && !kiln::isNone(bias)) {
    auto b = dyn_cast<RankedTensorType>(bias.getType());
    if (!b || b.getRank() != 1 || b.getDimSize(0) != filters ||
        !b.getElementType().isF32())
      return false;
  }
  if (residual && !kiln::isNone(residual) &&
      residual.getType() != y)
    return false;
  // A 1x1 filter over a 1x1 image (a squeeze-and-excitation block's
  // fully-connected layers) is a matrix-vector product per image: Kiln's
  // generated kernel streams the weight as fast as the memory allows, where
  // oneDNN's convolution took 1.3-2x as long (MobileNetV3 at batch 1).
  if (w.getDimSize(1) == 1 && w.getDimSize(2) == 1 && y.getDimSize(1) == 1 &&
      y.getDimSize(2) == 1)
    return false;
  return true;
}

bool kiln::isDynamicLibraryPool(Operation *op) {
  if (!isa<MaxPoolNhwcOp, AveragePoolNhwcOp>(op))
    return false;
  auto x = cast<RankedTensorType>(op->getOperand(0).getType());
  auto y = cast<RankedTensorType>(op->getResult(0).getType());
  if (x.getRank() != 4 || y.getRank() != 4 || !x.getElementType().isF32() ||
      !y.getElementType().isF32() || x.isDynamicDim(3) || y.isDynamicDim(3) ||
      (x.hasStaticShape() && y.hasStaticShape()))
    return false;
  kiln::WindowAttrs attrs =
      isa<MaxPoolNhwcOp>(op)
          ? kiln::getPoolWindowAttrs(cast<MaxPoolNhwcOp>(op))
          : kiln::getPoolWindowAttrs(cast<AveragePoolNhwcOp>(op));
  if ((attrs.autoPad != "NOTSET" && attrs.autoPad != "VALID") ||
      !attrs.kernelShape || attrs.kernelShape->size() != 2)
    return false;
  // ceil_mode: without a window to drop (stride <= kernel - end padding)
  // and not for an average counting its padding (ONNX does not count the
  // overhang); its run-time end padding is then at least the model's.
  auto avg = dyn_cast<AveragePoolNhwcOp>(op);
  if (attrs.ceilMode && avg && avg.getCountIncludePad())
    return false;
  for (int i = 0; i < 2; ++i) {
    int64_t stride = attrs.strides ? (*attrs.strides)[i] : 1;
    int64_t dilation = attrs.dilations ? (*attrs.dilations)[i] : 1;
    int64_t kernel = (*attrs.kernelShape)[i];
    int64_t padEnd =
        attrs.pads && attrs.autoPad == "NOTSET" ? (*attrs.pads)[2 + i] : 0;
    if (dilation != 1 || stride < 1 ||
        (attrs.ceilMode ? stride > kernel - padEnd : padEnd < stride - 1))
      return false;
  }
  return true;
}

namespace kiln {
#define GEN_PASS_DEF_KILNDECOMPOSEFUSED
#include "kiln/Transforms/Passes.h.inc"
} // namespace kiln

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

    // keep-library-convs: the convolutions a library kernel runs and the
    // channels-last pools between them (static shapes: their lowering needs
    // them) are not roots.
    auto kept = [&](Operation *op) {
      if (!keepLibraryConvs)
        return false;
      if (kiln::isLibraryConvolution(op))
        return true;
      return (isa<kiln::MaxPoolNhwcOp, kiln::AveragePoolNhwcOp,
                  kiln::GlobalAveragePoolNhwcOp>(op) &&
              cast<RankedTensorType>(op->getOperand(0).getType())
                  .hasStaticShape() &&
              cast<RankedTensorType>(op->getResult(0).getType())
                  .hasStaticShape()) ||
             kiln::isDynamicLibraryPool(op);
    };
    auto countRoots = [&]() {
      int64_t n = 0;
      getOperation().walk([&](Operation *op) {
        n += roots.contains(op->getName().getStringRef()) && !kept(op);
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
    SmallVector<Operation *> candidates;
    getOperation().walk([&](Operation *op) {
      if (roots.contains(op->getName().getStringRef()) && !kept(op)) {
        kiln::tagOrigin(op);
        candidates.push_back(op);
      }
    });
    // With kept ops, only the candidates and what their rewrites create are
    // rewritten (the ops a fused one decomposes into are new).
    LogicalResult converged = success();
    if (keepLibraryConvs) {
      GreedyRewriteConfig config;
      config.setStrictness(GreedyRewriteStrictness::ExistingAndNewOps);
      converged =
          applyOpPatternsGreedily(candidates, std::move(patterns), config);
    } else {
      converged = applyPatternsGreedily(getOperation(), std::move(patterns));
    }
    if (failed(converged)) {
      getOperation().emitError("kiln-decompose-fused did not converge");
      return signalPassFailure();
    }
    numDecomposed += before - countRoots();
  }
};
} // namespace
