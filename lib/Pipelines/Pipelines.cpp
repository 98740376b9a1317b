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
// With decompose-fused (the CPU backend), the fused ops are rewritten into
// plain ops at the end, and the transposes that leaves are sunk and folded
// once more; keep-library-convs keeps the channels-last convolutions a
// library kernel runs (and the channels-last pools) as they are.
//
// With precision=fp16|bf16, kiln-convert-precision runs once the graph is
// folded and its norms, activations and attention are fused (so the keep
// rules see them whole), and before the epilogue fusion (so a residual add
// kept in fp32 is not folded into a half-precision matmul); at -O0 and -O1 it
// is the last pass. When the fused ops are decomposed for the backend,
// kiln.attention is decomposed before it, so that only its softmax stays in
// fp32.
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
      : module(module), options(options), seen(seen) {}

  /// Adds a function pass.
  void add(std::unique_ptr<Pass> pass) {
    if (!isEnabled(*pass))
      return;
    if (!fn)
      fn = &module.nest<func::FuncOp>();
    fn->addPass(std::move(pass));
  }

  /// Adds a module pass, after the function passes added so far; function
  /// passes added later run after it.
  void addToModule(std::unique_ptr<Pass> pass) {
    if (!isEnabled(*pass))
      return;
    module.addPass(std::move(pass));
    fn = nullptr;
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
  /// The function passes' manager, nested when the first is added (after
  /// a module pass, a new one).
  OpPassManager *fn = nullptr;
  const kiln::GraphPipelineOptions &options;
  std::vector<std::string> *seen;
};
} // namespace

static std::unique_ptr<Pass>
createPrecisionPass(const kiln::GraphPipelineOptions &options) {
  kiln::KilnConvertPrecisionOptions precision;
  precision.precision = options.precision;
  precision.keepClasses = options.keepClasses;
  precision.keepOps.assign(options.keepOps.begin(),
                          options.keepOps.end());
  precision.keepNodes.assign(options.keepNodes.begin(),
                          options.keepNodes.end());
  precision.onlyNodes.assign(options.onlyNodes.begin(),
                          options.onlyNodes.end());
  precision.convertIO = options.precisionIO;
  return kiln::createKilnConvertPrecision(precision);
}

/// kiln-shard-tensor-parallel, when the model is split over ranks: after
/// the fusions (it splits fused matmuls, attention and rotary embeddings)
/// and the precision conversion, before the fused ops are decomposed.
template <typename Builder>
static void addTensorParallel(Builder &b,
                              const kiln::GraphPipelineOptions &options) {
  if (options.tensorParallelRanks < 1)
    return;
  kiln::KilnShardTensorParallelOptions tp;
  tp.ranks = options.tensorParallelRanks;
  tp.rank = options.tensorParallelRank;
  tp.annotate = options.tensorParallelAnnotations;
  b.addToModule(kiln::createKilnShardTensorParallel(tp));
}

static void buildPipeline(OpPassManager &pm,
                          const kiln::GraphPipelineOptions &options,
                          std::vector<std::string> *seen) {
  using namespace kiln;
  bool mixed = options.precision != "fp32";
  if (options.optLevel == 0) {
    PipelineBuilder b(pm, options, seen);
    if (mixed)
      b.add(createPrecisionPass(options));
    addTensorParallel(b, options);
    return;
  }
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
    if (mixed) {
      b.add(createPrecisionPass(options));
      b.add(createKilnDCE());
    }
    addTensorParallel(b, options);
    b.addToModule(createSymbolDCEPass());
    return;
  }

  b.add(createKilnFuseRotaryEmbedding());
  b.add(createKilnFuseAttention());
  b.add(createKilnFuseLinearAttention());
  b.add(createKilnFuseNormalization());
  b.add(createKilnFuseActivations());
  // GQA that kiln-fuse-attention left (dynamic shapes): its matmuls read the
  // KV heads instead of repeat_kv's copies. Before the layout pass, which
  // folds the transpose of K into the matmul.
  b.add(createKilnFoldRepeatKV());
  KilnOptimizeLayoutOptions layout;
  // A backend that runs channels-last convolutions in a library wants them
  // at -O2 too.
  layout.preferNHWC = options.preferNHWC || options.optLevel >= 3 ||
                      (options.decomposeFused && options.keepLibraryConvs);
  layout.matmulWeightLayout = options.matmulWeightLayout;
  b.add(createKilnOptimizeLayout(layout));
  // Layout rewrites fold weight transposes; fold them before the epilogues
  // look for constant biases.
  b.add(createKilnConstantFold(fold));
  if (mixed) {
    if (options.decomposeFused) {
      KilnDecomposeFusedOptions attention;
      attention.ops = {"attention"};
      b.add(createKilnDecomposeFused(attention));
    }
    b.add(createPrecisionPass(options));
  }
  b.add(createKilnFuseEpilogues());
  addTensorParallel(b, options);
  b.cleanup();
  if (options.decomposeFused) {
    KilnDecomposeFusedOptions decompose;
    decompose.keepLibraryConvs = options.keepLibraryConvs;
    b.add(createKilnDecomposeFused(decompose));
    // kiln.attention decomposes into repeat_kv (Unsqueeze/Expand/Reshape):
    // fold it as above.
    b.add(createKilnFoldRepeatKV());
    // A channels-last convolution decomposes into Transpose, Conv (NCHW),
    // Transpose: between two convolutions the pair meets again through the
    // epilogue (Relu, the residual Add) and cancels, and the weights'
    // transposes fold, instead of four copies of every activation and one of
    // every weight on each run. Channels-first stays preferred here: the
    // decomposed ops are the NCHW ones.
    KilnOptimizeLayoutOptions sink = layout;
    sink.preferNHWC = false;
    b.add(createKilnOptimizeLayout(sink));
    b.add(createKilnConstantFold(fold));
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
  all.precision = "fp16";
  all.tensorParallelRanks = 2;
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
