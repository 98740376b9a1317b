//===- Pipelines.h - Kiln's named pass pipelines ----------------*- C++ -*-===//
#ifndef KILN_PIPELINES_PIPELINES_H
#define KILN_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

#include <string>
#include <vector>

namespace kiln {

/// Options of Kiln's graph pipeline. Every `kiln-compile -O<n>` run is
/// `kiln-graph-pipeline` with these options, so
///   kiln-opt --pass-pipeline='builtin.module(kiln-graph-pipeline{opt-level=2})'
/// replays it (and `kiln-compile --print-pipeline` prints the pass-by-pass
/// form).
struct GraphPipelineOptions
    : public mlir::PassPipelineOptions<GraphPipelineOptions> {
  Option<unsigned> optLevel{
      *this, "opt-level",
      llvm::cl::desc("0: none; 1: canonicalize, constant folding, CSE, "
                     "constant dedup, DCE; 2: 1 plus fusion and transpose "
                     "sinking; 3: 2 plus NHWC convolutions"),
      llvm::cl::init(2)};
  ListOption<std::string> disabledPasses{
      *this, "disable-passes",
      llvm::cl::desc("Pass names (their kiln-opt flags, e.g. "
                     "kiln-fuse-attention, cse) left out of the pipeline")};
  Option<int64_t> foldSizeLimit{
      *this, "fold-size-limit",
      llvm::cl::desc("kiln-constant-fold's size-limit in bytes"),
      llvm::cl::init(1 << 22)};
  Option<bool> preferNHWC{
      *this, "prefer-nhwc",
      llvm::cl::desc("Channels-last convolution and pooling (on at -O3)"),
      llvm::cl::init(false)};
  Option<std::string> matmulWeightLayout{
      *this, "matmul-weight-layout",
      llvm::cl::desc("Constant matmul weights stored as kn (ONNX) or nk"),
      llvm::cl::init("kn")};
  Option<bool> decomposeFused{
      *this, "decompose-fused",
      llvm::cl::desc("Decompose the fused ops again at the end (for a "
                     "backend without their kernels)"),
      llvm::cl::init(false)};
  Option<bool> keepLibraryConvs{
      *this, "keep-library-convs",
      llvm::cl::desc("With decompose-fused: keep the channels-last "
                     "convolutions a library kernel runs (oneDNN, "
                     "--kernels=auto) and the channels-last pools"),
      llvm::cl::init(false)};
  Option<int64_t> tensorParallelRanks{
      *this, "tensor-parallel",
      llvm::cl::desc("kiln-shard-tensor-parallel's ranks (0: not run; 1: a "
                     "one-rank shard, its all-reduces the identity)"),
      llvm::cl::init(0)};
  Option<int64_t> tensorParallelRank{
      *this, "tensor-parallel-rank",
      llvm::cl::desc("kiln-shard-tensor-parallel's rank"), llvm::cl::init(0)};
  Option<bool> tensorParallelAnnotations{
      *this, "tensor-parallel-annotations",
      llvm::cl::desc("kiln-shard-tensor-parallel follows the model's ONNX "
                     "sharding annotations when it has them"),
      llvm::cl::init(true)};
  // Mixed precision (kiln-convert-precision); fp32 leaves the graph as is.
  Option<std::string> precision{
      *this, "precision",
      llvm::cl::desc("fp32 (default), fp16 or bf16: the type float32 "
                     "computation and weights are converted to"),
      llvm::cl::init("fp32")};
  Option<std::string> keepClasses{
      *this, "keep-classes",
      llvm::cl::desc("Op classes kept in fp32 (softmax, normalization, "
                     "reduction, residual-add, or none)"),
      llvm::cl::init("softmax,normalization,reduction,residual-add")};
  ListOption<std::string> keepOps{
      *this, "keep-ops",
      llvm::cl::desc("Op types (ONNX or kiln names) kept in fp32")};
  ListOption<std::string> keepNodes{
      *this, "keep-nodes",
      llvm::cl::desc("ONNX node names kept in fp32")};
  ListOption<std::string> onlyNodes{
      *this, "only-nodes",
      llvm::cl::desc("Convert only these ONNX nodes (sensitivity analysis)")};
  Option<bool> precisionIO{
      *this, "precision-io",
      llvm::cl::desc("Give the model's float32 inputs and outputs the half "
                     "type too"),
      llvm::cl::init(false)};
};

/// Builds the graph pipeline for `options` into `pm` (a module pass
/// manager). Passes named in `options.disabledPasses` are left out.
void buildGraphPipeline(mlir::OpPassManager &pm,
                        const GraphPipelineOptions &options);

/// The names (kiln-opt flags) of every pass the graph pipeline can contain
/// at any level: what `--disable-pass` accepts.
std::vector<std::string> getGraphPipelinePassNames();

/// Registers Kiln's passes and pipelines with the global registry.
void registerPipelines();

} // namespace kiln

#endif // KILN_PIPELINES_PIPELINES_H
