//===- kiln-compile.cpp - ONNX model to kiln IR (and, later, artifacts) ---===//
//
//   kiln-compile model.onnx --emit=kiln -o -          the imported IR
//   kiln-compile model.onnx --emit=graph -o f.mlir    after the graph pipeline
//   kiln-compile model.onnx --emit=graph --summary -o f.mlir
//
// Output is written only when every step succeeded: a failed import leaves no
// half-written file behind.
//
//===----------------------------------------------------------------------===//

#include "kiln/Analysis/ModelStats.h"
#include "kiln/Dialect/KilnDialect.h"
#include "kiln/Import/OnnxImporter.h"
#include "kiln/Pipelines/Pipelines.h"

#include "mlir/Bytecode/BytecodeWriter.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;
namespace cl = llvm::cl;

namespace {
enum class Emit { Kiln, Graph };

cl::OptionCategory category("kiln-compile options");
cl::opt<std::string> inputPath(cl::Positional, cl::Required,
                               cl::desc("<model.onnx | input.mlir>"),
                               cl::cat(category));
cl::opt<std::string> outputPath("o", cl::desc("Output file ('-' for stdout)"),
                                cl::value_desc("file"), cl::init("-"),
                                cl::cat(category));
cl::opt<Emit> emit(
    "emit", cl::desc("What to write"), cl::init(Emit::Kiln),
    cl::values(clEnumValN(Emit::Kiln, "kiln", "the imported kiln IR"),
               clEnumValN(Emit::Graph, "graph",
                          "kiln IR after the default graph pipeline")),
    cl::cat(category));
cl::opt<bool> summary("summary",
                      cl::desc("Print ops by type before and after the graph "
                               "pipeline, parameter counts, and where the IR "
                               "was written"),
                      cl::cat(category));
cl::opt<bool> keepConstants(
    "keep-constants",
    cl::desc("Print large constants in full (by default blobs over 1 KiB are "
             "elided in textual output)"),
    cl::cat(category));
cl::opt<bool> printLocations(
    "print-locations",
    cl::desc("Print op locations (the ONNX node names) in textual output"),
    cl::cat(category));
cl::opt<bool> emitBytecode("emit-bytecode",
                           cl::desc("Write MLIR bytecode (constants in full)"),
                           cl::cat(category));
cl::opt<bool> noCheck("no-onnx-check",
                      cl::desc("Skip libonnx's model checker"),
                      cl::cat(category));
cl::opt<int64_t> resourceThreshold(
    "resource-threshold",
    cl::desc("Initializers of at least this many bytes are held as "
             "dense_resource blobs"),
    cl::init(1024), cl::cat(category));
} // namespace

static OwningOpRef<ModuleOp> loadInput(MLIRContext &context) {
  if (llvm::sys::path::extension(inputPath) == ".mlir" ||
      llvm::sys::path::extension(inputPath) == ".mlirbc") {
    llvm::SourceMgr sourceMgr;
    std::string error;
    auto file = openInputFile(inputPath, &error);
    if (!file) {
      llvm::errs() << "kiln-compile: " << error << "\n";
      return nullptr;
    }
    sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
    SourceMgrDiagnosticHandler handler(sourceMgr, &context);
    return parseSourceFile<ModuleOp>(sourceMgr, &context);
  }
  kiln::ImportOptions options;
  options.runChecker = !noCheck;
  options.resourceThresholdBytes = resourceThreshold;
  return kiln::importOnnxFile(inputPath, context, options);
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv, "Kiln model compiler\n");

  DialectRegistry registry;
  kiln::registerImportDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();

  OwningOpRef<ModuleOp> module = loadInput(context);
  if (!module)
    return 1;
  if (failed(verify(*module)))
    return 1;

  kiln::ModelStats before = kiln::collectModelStats(*module);
  if (emit == Emit::Graph || summary) {
    PassManager pm(&context);
    kiln::buildGraphPipeline(pm, kiln::GraphPipelineOptions());
    // --summary with --emit=kiln runs the pipeline on a copy, so the output
    // stays the imported IR.
    OwningOpRef<ModuleOp> optimized =
        emit == Emit::Graph ? OwningOpRef<ModuleOp>() : module->clone();
    ModuleOp target = optimized ? *optimized : *module;
    if (failed(pm.run(target)))
      return 1;
    if (summary) {
      llvm::raw_ostream &os = outputPath == "-" ? llvm::errs() : llvm::outs();
      os << "model: " << inputPath << "\n";
      kiln::printStatsComparison(os, before, kiln::collectModelStats(target));
      os << "  IR (" << (emit == Emit::Kiln ? "kiln" : "graph")
         << ") written to: " << (outputPath == "-" ? std::string("<stdout>") : outputPath.getValue())
         << "\n";
    }
  }

  std::string error;
  auto output = openOutputFile(outputPath, &error);
  if (!output) {
    llvm::errs() << "kiln-compile: " << error << "\n";
    return 1;
  }
  if (emitBytecode) {
    if (failed(writeBytecodeToFile(*module, output->os())))
      return 1;
  } else {
    OpPrintingFlags flags;
    if (!keepConstants)
      flags.elideLargeResourceString(1024).elideLargeElementsAttrs(1024);
    if (printLocations)
      flags.enableDebugInfo();
    module->print(output->os(), flags);
  }
  output->keep();
  return 0;
}
