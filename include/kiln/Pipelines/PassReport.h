//===- PassReport.h - Per-pass effects of a pipeline, as JSON ---*- C++ -*-===//
//
// What `kiln-compile --report=FILE.json` writes: for every pass the pipeline
// ran, the op counts by type before and after, FLOPs, weight bytes, the
// pass's statistics (what it changed) and its wall time. kiln-bench reads
// these files; the schema is documented in docs/passes.md.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_PIPELINES_PASSREPORT_H
#define KILN_PIPELINES_PASSREPORT_H

#include "kiln/Analysis/ModelStats.h"

#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <string>
#include <vector>

namespace kiln {

/// One execution of one pass on one function.
struct PassRecord {
  std::string pass;     ///< the pass's flag, e.g. kiln-constant-fold
  std::string function; ///< the function it ran on
  ModelStats before, after;
  /// The pass's statistics incremented by this run: (name, delta).
  std::vector<std::pair<std::string, uint64_t>> statistics;
  double milliseconds = 0;
  bool failed = false;
};

/// Records PassRecords while a pass manager runs.
class PassReport {
public:
  /// Adds the recording instrumentation to `pm` (before it runs).
  void attach(mlir::PassManager &pm);

  const std::vector<PassRecord> &getRecords() const { return records; }

  /// Writes the report: schema version, the model, options, the pipeline,
  /// the whole-pipeline summary and one entry per pass.
  void writeJson(llvm::raw_ostream &os, llvm::StringRef model,
                 llvm::StringRef pipeline, unsigned optLevel,
                 const ModelStats &initial, const ModelStats &final) const;

  std::vector<PassRecord> records;
};

} // namespace kiln

#endif // KILN_PIPELINES_PASSREPORT_H
