//===- Pipelines.h - Kiln's named pass pipelines ----------------*- C++ -*-===//
#ifndef KILN_PIPELINES_PIPELINES_H
#define KILN_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace kiln {

struct GraphPipelineOptions
    : public mlir::PassPipelineOptions<GraphPipelineOptions> {};

/// The default graph-level pipeline on imported kiln IR (kiln-graph-pipeline
/// in kiln-opt): canonicalization with the kiln folders, CSE and removal of
/// dead ops.
void buildGraphPipeline(mlir::OpPassManager &pm,
                        const GraphPipelineOptions &options);

/// Registers Kiln's pipelines with the global pass registry.
void registerPipelines();

} // namespace kiln

#endif // KILN_PIPELINES_PIPELINES_H
