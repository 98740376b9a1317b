//===- Quantization.h - Calibration, auto-keep, accuracy reports -*- C++ -*-===//
//
// The analyses of a compile that run the model: post-training int8
// quantization (calibrate on representative inputs, insert Q/DQ pairs),
// --auto-keep's sensitivity analysis (fp16/bf16 or int8: each layer
// converted alone, compiled, run and compared with fp32) and the accuracy
// report (the variant against fp32, per output and per layer). Each
// compiles its variants through the driver's graph pipeline and CPU target
// (Context::compileVariant) and runs them in-process with the runtime
// (Runner.h); the results (kept layers, the quantization table) are the
// Context's own, not process-wide.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_QUANTIZATION_QUANTIZATION_H
#define KILN_QUANTIZATION_QUANTIZATION_H

#include "kiln/Driver/CompileOptions.h"
#include "kiln/Quantization/Calibrate.h"
#include "kiln/Transforms/Quantize.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <string>
#include <vector>

namespace kiln {
struct GraphPipelineOptions;
class StatisticsTable;

namespace quantization {

/// One layer of the int8 quantization table.
struct QuantRow {
  std::string node, opType, skipReason;
  calib::Range range;
  quant::Params params;
};

struct Context {
  Context(const CompileOptions &options, StatisticsTable &statistics)
      : options(options), statistics(statistics) {}

  const CompileOptions &options;
  /// The model as named in reports.
  std::string sourceName;
  /// The statistics of the invocation's passes (kiln-convert-precision's
  /// ops-converted tells whether a layer kept an op of its own).
  StatisticsTable &statistics;
  /// Fills the graph pipeline options of the compile (with the kept nodes
  /// so far).
  std::function<void(GraphPipelineOptions &)> pipelineOptions;
  /// Compiles `module` (imported kiln IR) with `graph` to a CPU artifact at
  /// `path`; false after reporting why.
  std::function<bool(mlir::ModuleOp module, const GraphPipelineOptions &graph,
                     const std::string &path)>
      compileVariant;
  /// Reports an error of the analysis (the driver makes it a diagnostic).
  std::function<void(const std::string &message)> error;
  /// Where the tables go.
  llvm::raw_ostream *messages = nullptr;
  /// Called before each variant is compiled (stage, layer, step, steps).
  std::function<void(const std::string &stage, const std::string &detail,
                     unsigned step, unsigned steps)>
      progress;

  /// Node names kept in fp32/float by --auto-keep.
  std::vector<std::string> autoKeptNodes;
  /// The int8 table (quantizeToInt8).
  std::vector<QuantRow> quantRows;

  llvm::raw_ostream &out() { return messages ? *messages : llvm::nulls(); }
};

/// fp16/bf16 --auto-keep: demotes each layer of `imported` alone and keeps
/// those above the threshold (appended to ctx.autoKeptNodes).
bool runAutoKeep(Context &ctx, mlir::ModuleOp imported);

/// --precision=int8: calibrates (and with --auto-keep, chooses the layers
/// kept in float), then inserts the Q/DQ pairs into `module`; writes
/// --emit-qdq-onnx.
bool quantizeToInt8(Context &ctx, mlir::ModuleOp module);

/// --accuracy-report: `variant` against `fp32`, per output and per layer,
/// printed and written as JSON to options.accuracyReport.
bool writeAccuracyReport(Context &ctx, mlir::ModuleOp fp32,
                         mlir::ModuleOp variant);

} // namespace quantization
} // namespace kiln

#endif // KILN_QUANTIZATION_QUANTIZATION_H
