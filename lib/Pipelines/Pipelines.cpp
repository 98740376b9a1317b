//===- Pipelines.cpp - Kiln's named pass pipelines ------------------------===//

#include "kiln/Pipelines/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void kiln::buildGraphPipeline(OpPassManager &pm, const GraphPipelineOptions &) {
  OpPassManager &fn = pm.nest<func::FuncOp>();
  fn.addPass(createCanonicalizerPass());
  fn.addPass(createCSEPass());
  pm.addPass(createSymbolDCEPass());
}

void kiln::registerPipelines() {
  PassPipelineRegistration<GraphPipelineOptions>(
      "kiln-graph-pipeline",
      "Kiln's default graph-level pipeline: canonicalize, CSE, DCE",
      buildGraphPipeline);
}
