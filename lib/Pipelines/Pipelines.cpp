//===- Pipelines.cpp - Kiln's named pass pipelines ------------------------===//
//
// The -O levels, in order:
//   O0  nothing: the graph as imported.
//   O1  kiln-canonicalize, kiln-constant-fold, kiln-canonicalize, cse,
//       kiln-dedup-constants, kiln-dce; then symbol-dce on the module
//       (private functions no one calls).
//   O2  O1 (with kiln-fuse-qdq before the first constant folding), then
//       the fusions (attention before the epilogues, so a mask add
//       is never mistaken for a residual add), transpose sinking, and a
//       final clean-up (kiln-canonicalize, cse, kiln-dce).
//   O3  O2 with channels-last convolution and pooling.
//
//===----------------------------------------------------------------------===//

#include "kiln/Pipelines/Pipelines.h"
#include "kiln/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;

namespace {
/// Adds function passes to `fn` unless their name is disabled.
class PipelineBuilder {
public:
  PipelineBuilder(OpPassManager &module, const kiln::GraphPipelineOptions &options,
                  std::vector<std::string> *seen)
      : module(module), fn(module.nest<func::FuncOp>()), options(options),
        seen(seen) {}

  /// Adds a function pass.
  void add(std::unique_ptr<Pass> pass) {
    if (isEnabled(*pass))
      fn.addPass(std::move(pass));
  }

  /// Adds a module pass, after the function passes added so far.
  void addToModule(std::unique_ptr<Pass> pass) {
    if (isEnabled(*pass))
      module.addPass(std::move(pass));
  }

  void cleanup() {
    add(kiln::createKilnCanonicalize());
    add(createCSEPass());
    add(kiln::createKilnDCE());
  }

private:
  bool isEnabled(Pass &pass) {
    std::string name = pass.getArgument().str();
    if (seen && !llvm::is_contained(*seen, name))
      seen->push_back(name);
    return !llvm::is_contained(options.disabledPasses, name);
  }

  OpPassManager &module;
  OpPassManager &fn;
  const kiln::GraphPipelineOptions &options;
  std::vector<std::string> *seen;
};
} // namespace

static void buildPipeline(OpPassManager &pm,
                          const kiln::GraphPipelineOptions &options,
                          std::vector<std::string> *seen) {
  using namespace kiln;
  if (options.optLevel == 0)
    return;
  PipelineBuilder b(pm, options, seen);

  KilnConstantFoldOptions fold;
  fold.sizeLimit = options.foldSizeLimit;
  b.add(createKilnCanonicalize());
  // Before constant folding, which would dequantize constant weights into
  // f32: kiln-fuse-qdq keeps them int8.
  if (options.optLevel >= 2)
    b.add(createKilnFuseQDQ());
  b.add(createKilnConstantFold(fold));
  b.add(createKilnCanonicalize());
  b.add(createCSEPass());
  b.add(createKilnDedupConstants());
  b.add(createKilnDCE());
  if (options.optLevel == 1) {
    b.addToModule(createSymbolDCEPass());
    return;
  }

  b.add(createKilnFuseRotaryEmbedding());
  b.add(createKilnFuseAttention());
  b.add(createKilnFuseLinearAttention());
  b.add(createKilnFuseNormalization());
  b.add(createKilnFuseActivations());
  KilnOptimizeLayoutOptions layout;
  layout.preferNHWC = options.preferNHWC || options.optLevel >= 3;
  layout.matmulWeightLayout = options.matmulWeightLayout;
  b.add(createKilnOptimizeLayout(layout));
  // Layout rewrites fold weight transposes; fold them before the epilogues
  // look for constant biases.
  b.add(createKilnConstantFold(fold));
  b.add(createKilnFuseEpilogues());
  b.cleanup();
  if (options.decomposeFused) {
    b.add(createKilnDecomposeFused());
    b.cleanup();
  }
  b.addToModule(createSymbolDCEPass());
}

void kiln::buildGraphPipeline(OpPassManager &pm,
                              const GraphPipelineOptions &options) {
  buildPipeline(pm, options, nullptr);
}

std::vector<std::string> kiln::getGraphPipelinePassNames() {
  GraphPipelineOptions all;
  all.optLevel = 3;
  all.decomposeFused = true;
  OpPassManager pm("builtin.module");
  std::vector<std::string> names;
  buildPipeline(pm, all, &names);
  return names;
}

void kiln::registerPipelines() {
  registerKilnPasses();
  PassPipelineRegistration<GraphPipelineOptions>(
      "kiln-graph-pipeline",
      "Kiln's graph-level pipeline (opt-level=0..3, as kiln-compile -O<n>)",
      buildGraphPipeline);
}
