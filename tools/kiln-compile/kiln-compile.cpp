//===- kiln-compile.cpp - ONNX model to kiln IR (and, later, artifacts) ---===//
//
//   kiln-compile model.onnx --emit=kiln -o -          the imported IR
//   kiln-compile model.onnx --emit=graph -o f.mlir    after the graph pipeline
//   kiln-compile model.onnx --emit=graph --summary -o f.mlir
//   kiln-compile model.onnx --emit=graph -O3 --disable-pass=kiln-fuse-attention
//       --report=passes.json --print-pipeline -o f.mlir
//
// Output is written only when every step succeeded: a failed import leaves no
// half-written file behind.
//
//===----------------------------------------------------------------------===//

#include "kiln/Analysis/ModelStats.h"
#include "kiln/Dialect/KilnDialect.h"
#include "kiln/Export/OnnxExporter.h"
#include "kiln/Import/OnnxImporter.h"
#include "kiln/Pipelines/PassReport.h"
#include "kiln/Pipelines/Pipelines.h"
#include "kiln/Transforms/Statistics.h"

#include "mlir/Bytecode/BytecodeWriter.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;
namespace cl = llvm::cl;

namespace {
enum class Emit { Kiln, Graph, Onnx };

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
                          "kiln IR after the graph pipeline (-O<n>)"),
               clEnumValN(Emit::Onnx, "onnx",
                          "an ONNX model of the graph after the pipeline "
                          "(use --decompose-fused when it has fused ops)")),
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
cl::opt<bool> noConvert(
    "no-onnx-convert",
    cl::desc("Do not upgrade opsets below 17 with libonnx's version "
             "converter (the importer normalizes older forms itself)"),
    cl::cat(category));
cl::opt<unsigned> optLevel(
    "O", cl::Prefix,
    cl::desc("Graph optimization level for --emit=graph (-O0 none, -O1 "
             "folding/CSE/DCE, -O2 (default) plus fusion and layout, -O3 "
             "plus NHWC convolutions)"),
    cl::init(2), cl::cat(category));
cl::list<std::string> disabledPasses(
    "disable-pass",
    cl::desc("Leave this pass (its kiln-opt flag) out of the pipeline; "
             "repeatable or comma-separated"),
    cl::CommaSeparated, cl::value_desc("name"), cl::cat(category));
cl::opt<bool> preferNHWC("prefer-nhwc",
                         cl::desc("Channels-last convolution and pooling "
                                  "(on at -O3)"),
                         cl::cat(category));
cl::opt<std::string> matmulWeightLayout(
    "matmul-weight-layout",
    cl::desc("How constant matmul weights are stored: kn (as in ONNX) or nk"),
    cl::init("kn"), cl::cat(category));
cl::opt<int64_t> foldSizeLimit(
    "fold-size-limit",
    cl::desc("Largest constant kiln-constant-fold creates, in bytes"),
    cl::init(1 << 22), cl::cat(category));
cl::opt<bool> decomposeFused(
    "decompose-fused",
    cl::desc("Decompose Kiln's fused ops back into plain ops at the end"),
    cl::cat(category));
cl::opt<std::string> reportPath(
    "report",
    cl::desc("Write per-pass op counts, FLOPs, weight bytes and statistics "
             "as JSON"),
    cl::value_desc("file.json"), cl::cat(category));
cl::opt<bool> printPipeline(
    "print-pipeline",
    cl::desc("Print the pass pipeline (replayable with kiln-opt "
             "--pass-pipeline=...) to stderr"),
    cl::cat(category));
cl::opt<bool> printIRAfterAll("print-ir-after-all",
                              cl::desc("Print the IR after every pass (stderr)"),
                              cl::cat(category));
cl::opt<bool> mlirTiming("mlir-timing",
                         cl::desc("Print the time each pass took (stderr)"),
                         cl::cat(category));
cl::opt<bool> passStatistics(
    "pass-statistics", cl::desc("Print every pass's statistics (stderr)"),
    cl::cat(category));
cl::list<std::string> inputShapes(
    "input-shapes",
    cl::desc("Static shapes for graph inputs, e.g. "
             "hidden_states:2x16x256 (comma-separated for several)"),
    cl::CommaSeparated, cl::value_desc("name:d0xd1x..."), cl::cat(category));
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
  options.convertVersion = !noConvert;
  options.resourceThresholdBytes = resourceThreshold;
  for (const std::string &spec : inputShapes) {
    auto [name, dims] = StringRef(spec).rsplit(':');
    std::vector<int64_t> shape;
    SmallVector<StringRef> parts;
    dims.split(parts, 'x');
    bool ok = !name.empty() && !dims.empty();
    for (StringRef part : parts) {
      int64_t d;
      if (part.getAsInteger(10, d)) {
        ok = false;
        break;
      }
      shape.push_back(d);
    }
    if (!ok) {
      llvm::errs() << "kiln-compile: --input-shapes: expected name:d0xd1x..., "
                      "got '"
                   << spec << "'\n";
      return nullptr;
    }
    options.inputShapes[name.str()] = std::move(shape);
  }
  return kiln::importOnnxFile(inputPath, context, options);
}

/// Checks --disable-pass names against the passes the pipeline can hold.
static bool checkDisabledPasses() {
  std::vector<std::string> known = kiln::getGraphPipelinePassNames();
  for (const std::string &name : disabledPasses) {
    if (llvm::is_contained(known, name))
      continue;
    llvm::errs() << "kiln-compile: --disable-pass: unknown pass '" << name
                 << "'; the graph pipeline's passes are:";
    for (const std::string &k : known)
      llvm::errs() << " " << k;
    llvm::errs() << "\n";
    return false;
  }
  return true;
}

static void setPipelineOptions(kiln::GraphPipelineOptions &options) {
  options.optLevel = optLevel;
  options.disabledPasses =
      std::vector<std::string>(disabledPasses.begin(), disabledPasses.end());
  options.preferNHWC = preferNHWC;
  options.matmulWeightLayout = matmulWeightLayout;
  options.foldSizeLimit = foldSizeLimit;
  options.decomposeFused = decomposeFused;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv, "Kiln model compiler\n");

  DialectRegistry registry;
  kiln::registerImportDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();

  if (optLevel > 3) {
    llvm::errs() << "kiln-compile: -O" << optLevel
                 << ": the levels are -O0 to -O3\n";
    return 1;
  }
  if (matmulWeightLayout != "kn" && matmulWeightLayout != "nk") {
    llvm::errs() << "kiln-compile: --matmul-weight-layout must be kn or nk, "
                    "got '"
                 << matmulWeightLayout << "'\n";
    return 1;
  }
  if (!checkDisabledPasses())
    return 1;

  OwningOpRef<ModuleOp> module = loadInput(context);
  if (!module)
    return 1;
  if (failed(verify(*module)))
    return 1;

  kiln::ModelStats before = kiln::collectModelStats(*module);
  bool runPipeline = emit != Emit::Kiln || summary || !reportPath.empty();
  // Declared before the pass manager: it prints the timing report when
  // destroyed, after the pipeline ran.
  DefaultTimingManager timing;
  TimingScope timingRoot;
  kiln::PassReport report;
  if (runPipeline) {
    auto pm = PassManager::on<ModuleOp>(&context);
    kiln::GraphPipelineOptions pipelineOptions;
    setPipelineOptions(pipelineOptions);
    kiln::buildGraphPipeline(pm, pipelineOptions);
    if (printPipeline) {
      llvm::errs() << "kiln-compile: pipeline: ";
      pm.printAsTextualPipeline(llvm::errs());
      llvm::errs() << "\n";
    }
    if (printIRAfterAll) {
      context.disableMultithreading();
      pm.enableIRPrinting(
          /*shouldPrintBeforePass=*/[](Pass *, Operation *) { return false; },
          /*shouldPrintAfterPass=*/[](Pass *, Operation *) { return true; },
          /*printModuleScope=*/true, /*printAfterOnlyOnChange=*/false);
    }
    if (mlirTiming) {
      timing.setEnabled(true);
      timingRoot = timing.getRootScope();
      pm.enableTiming(timingRoot);
    }
    if (!reportPath.empty())
      report.attach(pm);
    if (passStatistics)
      kiln::trackPassesThatRan(pm);
    // --summary with --emit=kiln runs the pipeline on a copy, so the output
    // stays the imported IR.
    OwningOpRef<ModuleOp> optimized =
        emit != Emit::Kiln ? OwningOpRef<ModuleOp>() : module->clone();
    ModuleOp target = optimized ? *optimized : *module;
    if (failed(pm.run(target)))
      return 1;
    if (passStatistics)
      kiln::printStatistics(llvm::errs());
    if (!reportPath.empty()) {
      std::string pipeline;
      llvm::raw_string_ostream pipelineOs(pipeline);
      pm.printAsTextualPipeline(pipelineOs);
      std::string error;
      auto file = openOutputFile(reportPath, &error);
      if (!file) {
        llvm::errs() << "kiln-compile: " << error << "\n";
        return 1;
      }
      report.writeJson(file->os(), inputPath, pipeline, optLevel, before,
                       kiln::collectModelStats(target));
      file->keep();
    }
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
  if (emit == Emit::Onnx) {
    // Serialize first: a graph that has no ONNX form writes nothing.
    std::string bytes;
    llvm::raw_string_ostream bytesOs(bytes);
    if (failed(kiln::exportOnnxModel(*module, bytesOs)))
      return 1;
    output->os() << bytes;
  } else if (emitBytecode) {
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
