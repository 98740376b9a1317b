//===- Invocation.h - One compile, as a library call ------------*- C++ -*-===//
//
// kiln::Invocation is what kiln-compile, the C API (kiln-c/Compiler.h) and
// the Python package compile with: import a model (an ONNX file or its
// bytes, or MLIR text), run it to a Stage, take the output's bytes or write
// them. Everything a compile accumulates is the invocation's own: its
// MLIRContext, the pass statistics (a StatisticsTable made current while it
// runs), the layers --auto-keep keeps, the calibration table, the
// diagnostics (collected, not printed). Two invocations in one process, on
// one thread or two, give what two processes give.
//
//   kiln::CompileOptions options;
//   options.precision = kiln::Precision::FP16;
//   kiln::Invocation inv(options);
//   if (!inv.importFile("model.onnx") || !inv.run(kiln::Stage::Artifact))
//     for (const kiln::Diagnostic &d : inv.getDiagnostics()) ...;
//   inv.writeOutput("model.kiln");
//
//===----------------------------------------------------------------------===//
#ifndef KILN_DRIVER_INVOCATION_H
#define KILN_DRIVER_INVOCATION_H

#include "kiln/Driver/CompileOptions.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace mlir {
class ModuleOp;
} // namespace mlir

namespace kiln {

class PassReport;
class StatisticsTable;

/// One message of a compile.
struct Diagnostic {
  enum class Severity { Note, Warning, Error, Remark };
  Severity severity = Severity::Error;
  /// The location as MLIR prints it ("" when unknown or from the driver).
  std::string location;
  /// The ONNX node the location names ("" when none).
  std::string node;
  std::string message;
  /// From the driver itself (kiln-compile prints "kiln-compile: message"),
  /// not from MLIR (printed "location: severity: message").
  bool fromDriver = false;
  /// The whole text when the source printed it itself (the MLIR parser
  /// quotes the source line).
  std::string formatted;

  /// One line as kiln-compile prints it; `tool` prefixes driver messages.
  std::string format(llvm::StringRef tool = "kiln-compile") const;
};

/// Progress of a long compile: the stage ("import", "graph passes",
/// "lowering", "code generation", "linking", "calibration", ...), a detail
/// (a pass or a layer name, may be empty) and, where known, the step and
/// the number of steps (0 when unknown).
struct Progress {
  std::string stage;
  std::string detail;
  unsigned step = 0, steps = 0;
};

class Invocation {
public:
  explicit Invocation(CompileOptions options);
  ~Invocation();
  Invocation(const Invocation &) = delete;
  Invocation &operator=(const Invocation &) = delete;

  const CompileOptions &getOptions() const;
  /// The options, to change before the next run().
  CompileOptions &getOptions();

  /// Tables and summaries (--auto-keep, --precision=int8, --summary,
  /// --accuracy-report) go here; none when null (the default).
  void setMessageStream(llvm::raw_ostream *os);
  /// --print-pipeline, --print-ir-after-all, --mlir-timing and
  /// --pass-statistics print here (default: llvm::errs()).
  void setDebugStream(llvm::raw_ostream *os);
  /// Called with each diagnostic as it is made (they are collected too).
  void setDiagnosticCallback(std::function<void(const Diagnostic &)> callback);
  /// Called at each stage and step of a long compile.
  void setProgressCallback(std::function<void(const Progress &)> callback);

  /// The source: an ONNX file (a .mlir/.mlirbc path parses MLIR), ONNX
  /// bytes (`baseDir` resolves external data; `name` names it in messages),
  /// or MLIR text/bytecode. False with diagnostics on failure.
  bool importFile(llvm::StringRef path);
  bool importOnnxBytes(llvm::StringRef bytes, llvm::StringRef name = "<bytes>",
                       llvm::StringRef baseDir = "");
  bool parseMLIR(llvm::StringRef source, llvm::StringRef name = "<string>");

  /// Compiles the source to `stage` (validating the options for it first).
  /// On success output() holds the stage's bytes; false with diagnostics.
  bool run(Stage stage);

  /// The output of the last successful run: IR text (or bytecode), ONNX
  /// bytes, LLVM IR, assembly, an object, a shared object, PTX, a fatbin,
  /// or the artifact's bytes.
  const std::string &getOutput() const;
  /// Writes the output to `path` ("-": stdout) through a temporary file
  /// renamed into place (an artifact's weights side file as the artifact
  /// writer lays it out). False with a diagnostic on failure.
  bool writeOutput(llvm::StringRef path);

  /// The module as the last run left it (null before a source).
  mlir::ModuleOp getModule();

  const std::vector<Diagnostic> &getDiagnostics() const;
  /// Every diagnostic, one formatted line each.
  std::string getDiagnosticsText(llvm::StringRef tool = "kiln-compile") const;
  bool hasErrors() const;
  /// Adds an error of the caller's (a front end's) to the diagnostics.
  void reportError(const std::string &message);

  StatisticsTable &getStatistics();
  /// The per-pass report of the graph pipeline (CompileOptions::
  /// collectPassReport), as `kiln-compile --report` writes it.
  const std::string &getPassReportJson() const;
  /// The graph pipeline and the backend pipeline as textual pipelines.
  const std::string &getGraphPipeline() const;
  const std::string &getBackendPipeline() const;

  /// The ONNX node names kept in fp32/float by --auto-keep.
  const std::vector<std::string> &getAutoKeptNodes() const;

  /// The source's name as given (a path, or the bytes' name).
  const std::string &getSourceName() const;

  struct Impl;

private:
  std::unique_ptr<Impl> impl;
};

} // namespace kiln

#endif // KILN_DRIVER_INVOCATION_H
