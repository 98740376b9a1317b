//===- Invocation.cpp - One compile: import, pipelines, targets, artifact -===//
//
// The orchestration kiln-compile used to hold: the graph pipeline with the
// options of the compile, the precision analyses (lib/Quantization), the
// CPU and CUDA backends down to machine code, the link and the artifact.
//
//===----------------------------------------------------------------------===//

#include "kiln/Driver/Invocation.h"

#include "kiln/Analysis/ModelStats.h"
#include "kiln/ArtifactWriter.h"
#include "kiln/Conversion/Passes.h"
#include "kiln/Dialect/KilnDialect.h"
#include "kiln/Export/OnnxExporter.h"
#include "kiln/Import/OnnxImporter.h"
#include "kiln/Pipelines/PassReport.h"
#include "kiln/Pipelines/Pipelines.h"
#include "kiln/Quantization/Quantization.h"
#include "kiln/Target/CPU/CpuBackend.h"
#include "kiln/Target/Host/HostCodegen.h"
#include "kiln/Target/ModelSignature.h"
#include "kiln/Transforms/Passes.h"
#include "kiln/Transforms/Statistics.h"

#include "mlir/Bytecode/BytecodeWriter.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Target/TargetMachine.h"

#ifdef KILN_HAVE_CUDA_TARGET
#include "kiln/Target/CUDA/CudaBackend.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#endif

#include <array>
#include <map>
#include <mutex>
#include <unistd.h>

using namespace mlir;
using namespace kiln;

#ifndef KILN_VERSION
#define KILN_VERSION "unknown"
#endif

//===----------------------------------------------------------------------===//
// Diagnostics
//===----------------------------------------------------------------------===//

static const char *severityName(kiln::Diagnostic::Severity severity) {
  switch (severity) {
  case kiln::Diagnostic::Severity::Note:
    return "note";
  case kiln::Diagnostic::Severity::Warning:
    return "warning";
  case kiln::Diagnostic::Severity::Error:
    return "error";
  case kiln::Diagnostic::Severity::Remark:
    return "remark";
  }
  return "error";
}

std::string kiln::Diagnostic::format(StringRef tool) const {
  if (fromDriver)
    return (tool.empty() ? "" : tool.str() + ": ") + message;
  if (!formatted.empty())
    return formatted;
  std::string text;
  if (!location.empty())
    text += location + ": ";
  return text + severityName(severity) + ": " + message;
}

//===----------------------------------------------------------------------===//
// Impl
//===----------------------------------------------------------------------===//

namespace {
/// Reports each pass as a step of the stage that runs it.
class ProgressInstrumentation : public PassInstrumentation {
public:
  ProgressInstrumentation(std::function<void(const Progress &)> callback,
                          std::string stage)
      : callback(std::move(callback)), stage(std::move(stage)) {}
  void runBeforePass(Pass *pass, Operation *) override {
    if (pass->getArgument().empty())
      return;
    std::lock_guard<std::mutex> lock(mutex);
    callback({stage, pass->getArgument().str(), ++step, 0});
  }

private:
  std::function<void(const Progress &)> callback;
  std::string stage;
  std::mutex mutex;
  unsigned step = 0;
};
} // namespace

struct Invocation::Impl {
  explicit Impl(CompileOptions o) : options(std::move(o)) {
    DialectRegistry registry;
    registerImportDialects(registry);
    cpu::registerCpuBackendDialects(registry);
#ifdef KILN_HAVE_CUDA_TARGET
    cuda::registerCudaBackendDialects(registry);
    // The CUDA pipeline is built from its textual form: its passes must be
    // in the (process-wide) registry, once.
    static std::once_flag registered;
    std::call_once(registered, [] { cuda::registerCudaBackendPasses(); });
#endif
    context = std::make_unique<MLIRContext>(registry);
    context->loadAllAvailableDialects();
    handler = std::make_unique<ScopedDiagnosticHandler>(
        context.get(), [this](mlir::Diagnostic &diag) {
          record(diag);
          return success();
        });
  }

  CompileOptions options;
  std::unique_ptr<MLIRContext> context;
  std::unique_ptr<ScopedDiagnosticHandler> handler;
  OwningOpRef<ModuleOp> module;
  std::string sourceName;

  std::vector<kiln::Diagnostic> diagnostics;
  std::function<void(const kiln::Diagnostic &)> diagnosticCallback;
  llvm::raw_ostream *messages = nullptr;
  llvm::raw_ostream *debug = &llvm::errs();
  std::function<void(const Progress &)> progress;

  StatisticsTable statistics;
  std::string reportJson;
  std::string graphPipeline, backendPipeline;
  std::vector<std::string> autoKeptNodes;

  Stage stage = Stage::Kiln;
  std::string output;
  /// A run to Stage::Artifact keeps the spec and what it points to; the
  /// bytes are made on demand.
  std::unique_ptr<ArtifactSpec> artifact;
  FailureOr<ModelSignature> signature = failure();
  /// --shape-hints per symbol, as the artifact's options record them.
  std::string shapeHintsText;
  std::string code, fatbin;
  bool outputReady = false;
  /// With --mlir-timing, the scope the CPU backend's stages are timed in
  /// (its pass pipeline, translation to LLVM IR, LLVM's optimizations,
  /// object emission, the link); an inactive scope otherwise.
  TimingScope backendTiming;

  void record(mlir::Diagnostic &diag) {
    kiln::Diagnostic d;
    switch (diag.getSeverity()) {
    case DiagnosticSeverity::Note:
      d.severity = kiln::Diagnostic::Severity::Note;
      break;
    case DiagnosticSeverity::Warning:
      d.severity = kiln::Diagnostic::Severity::Warning;
      break;
    case DiagnosticSeverity::Error:
      d.severity = kiln::Diagnostic::Severity::Error;
      break;
    case DiagnosticSeverity::Remark:
      d.severity = kiln::Diagnostic::Severity::Remark;
      break;
    }
    Location loc = diag.getLocation();
    if (!isa<UnknownLoc>(loc)) {
      llvm::raw_string_ostream os(d.location);
      os << loc;
    }
    if (auto name = loc->findInstanceOf<NameLoc>())
      d.node = name.getName().str();
    d.message = diag.str();
    add(std::move(d));
    for (mlir::Diagnostic &note : diag.getNotes())
      record(note);
  }

  void add(kiln::Diagnostic d) {
    diagnostics.push_back(std::move(d));
    if (diagnosticCallback)
      diagnosticCallback(diagnostics.back());
  }

  bool error(const std::string &message) {
    kiln::Diagnostic d;
    d.message = message;
    d.fromDriver = true;
    add(std::move(d));
    return false;
  }

  void notify(const std::string &stageName, const std::string &detail = "",
              unsigned step = 0, unsigned steps = 0) {
    if (progress)
      progress({stageName, detail, step, steps});
  }

  void instrument(PassManager &pm, const std::string &stageName) {
    if (progress)
      pm.addInstrumentation(
          std::make_unique<ProgressInstrumentation>(progress, stageName));
  }

  void setPipelineOptions(GraphPipelineOptions &p) const;

  /// The weight transforms left to run time (kiln-cpu-find-weight-
  /// transforms' `kiln.weight_transforms`): a message naming them when
  /// there are any, the count for the artifact, the list for --report.
  int64_t weightTransforms = -1; // -1: not looked for (not the CPU)
  std::string weightTransformsJson = "[]";
  void reportWeightTransforms(ModuleOp m) {
    auto list = m->getAttrOfType<ArrayAttr>("kiln.weight_transforms");
    if (!list)
      return;
    weightTransforms = list.size();
    std::string text;
    llvm::raw_string_ostream json(weightTransformsJson);
    weightTransformsJson.clear();
    json << "[";
    int64_t bytes = 0;
    auto strings = [](ArrayAttr a) {
      std::vector<std::string> out;
      for (Attribute e : a)
        out.push_back(cast<StringAttr>(e).str());
      return out;
    };
    for (auto [i, entry] : llvm::enumerate(list)) {
      auto d = cast<DictionaryAttr>(entry);
      std::string op = d.getAs<StringAttr>("op").str();
      std::vector<std::string> weights = strings(d.getAs<ArrayAttr>("weights"));
      std::vector<std::string> nodes =
          strings(d.getAs<ArrayAttr>("onnx_nodes"));
      int64_t size = d.getAs<IntegerAttr>("bytes").getInt();
      bytes += size;
      llvm::json::Array w(weights), n(nodes);
      json << (i ? ", " : "")
           << llvm::formatv("{0}", llvm::json::Value(llvm::json::Object{
                                       {"op", op},
                                       {"weights", std::move(w)},
                                       {"onnx_nodes", std::move(n)},
                                       {"bytes", size}}));
      if (i < 4) {
        text += (i ? "; " : "") + op + " of " + llvm::join(weights, ", ");
        if (!nodes.empty())
          text += " (ONNX " + llvm::join(nodes, ", ") + ")";
      }
    }
    json << "]";
    if (list.empty())
      return;
    kiln::Diagnostic d;
    d.fromDriver = true;
    d.severity = kiln::Diagnostic::Severity::Remark;
    d.message = std::to_string(list.size()) +
                " weight transform(s) run on every call, " +
                std::to_string(bytes) + " bytes per run: " + text +
                (list.size() > 4 ? "; ..." : "");
    add(std::move(d));
  }
  bool runGraphPipeline(Stage target);
  bool compileMachineCode(ModuleOp m, const cpu::CpuOptions &cpuOptions,
                          Stage target, StringRef what, host::TargetInfo &info,
                          std::vector<std::string> &objects, bool &done,
                          bool split);
  bool compileCpu(ModuleOp m, Stage target, bool quiet);
  bool applyShapeHints(ModuleOp m);
  bool compileCuda(ModuleOp m, Stage target);
  void describeArtifact(ArtifactSpec &spec, ModuleOp m, PassManager &pm);
  bool compileVariant(ModuleOp imported, const GraphPipelineOptions &graph,
                      const std::string &path);
  bool printModule(ModuleOp m);
  cpu::CpuOptions cpuOptions() const;
};

cpu::CpuOptions Invocation::Impl::cpuOptions() const {
  cpu::CpuOptions c;
  c.cpu = options.cpu;
  c.kernels = kernelStrategyName(options.kernels);
  c.parallel = options.parallel;
  c.profileHooks = options.profileHooks;
  c.outlineKernels = options.outlineKernels;
  return c;
}

void Invocation::Impl::setPipelineOptions(GraphPipelineOptions &p) const {
  p.optLevel = options.optLevel;
  p.disabledPasses = options.disabledPasses;
  p.preferNHWC = options.preferNHWC;
  p.matmulWeightLayout =
      options.matmulWeightLayout == WeightLayout::NK ? "nk" : "kn";
  p.foldSizeLimit = options.foldSizeLimit;
  p.decomposeFused = options.decomposeFused;
  p.tensorParallelRanks = options.tensorParallel;
  p.tensorParallelRank = options.tensorParallelRank;
  p.tensorParallelAnnotations = options.tensorParallelAnnotations;
  // int8 is quantized before the pipeline (Q/DQ pairs that kiln-fuse-qdq
  // makes integer ops); the pipeline itself runs in fp32.
  p.precision = options.precision == Precision::Int8
                    ? std::string("fp32")
                    : std::string(precisionName(options.precision));
  p.keepClasses = options.keepFp32Classes;
  p.keepOps = options.keepFp32;
  p.keepNodes = options.keepFp32Nodes;
  for (const std::string &node : autoKeptNodes)
    p.keepNodes.push_back(node);
  p.precisionIO = options.precisionIO;
}

bool Invocation::Impl::printModule(ModuleOp m) {
  output.clear();
  llvm::raw_string_ostream os(output);
  if (options.emitBytecode) {
    if (failed(writeBytecodeToFile(m, os)))
      return error("cannot write the module as bytecode");
    return true;
  }
  OpPrintingFlags flags;
  if (!options.keepConstants)
    flags.elideLargeResourceString(1024).elideLargeElementsAttrs(1024);
  if (options.printLocations)
    flags.enableDebugInfo();
  m->print(os, flags);
  return true;
}

/// The LLVM-dialect module as machine code for `cpuOptions`' CPU: LLVM IR,
/// LLVM's optimizations, then object files (one, or, with `split` and a
/// large module, one per partition: host::emitObjects). For Stage::LLVMIR,
/// Asm and Obj the output is set here (`done`).
bool Invocation::Impl::compileMachineCode(ModuleOp m,
                                          const cpu::CpuOptions &cpuOptions,
                                          Stage target, StringRef what,
                                          host::TargetInfo &info,
                                          std::vector<std::string> &objects,
                                          bool &done, bool split) {
  done = false;
  std::string message;
  if (!host::resolveTarget(cpuOptions.cpu, info, message))
    return error(what.str() + ": " + message);
  std::unique_ptr<llvm::TargetMachine> machine =
      host::createTargetMachine(info, cpuOptions.llvmOptLevel, message);
  if (!machine)
    return error(message);
  notify("code generation", what.str());
  llvm::LLVMContext llvmContext;
  TimingScope translating = backendTiming.nest("Translation to LLVM IR");
  std::unique_ptr<llvm::Module> llvmModule =
      host::translateToLLVMIR(m, llvmContext, *machine);
  translating.stop();
  if (!llvmModule)
    return error("translation to LLVM IR failed");
  if (split && target != Stage::LLVMIR && target != Stage::Asm &&
      target != Stage::Obj) {
    unsigned partitions = host::codegenPartitions(*llvmModule);
    TimingScope emitting = backendTiming.nest(
        "LLVM optimization and machine code emission (" +
        std::to_string(partitions) +
        (partitions == 1 ? " partition)" : " partitions, in parallel)"));
    if (!host::emitObjects(std::move(llvmModule), info, cpuOptions.llvmOptLevel,
                           partitions, objects, message))
      return error("LLVM code generation failed: " + message);
    return true;
  }
  TimingScope optimizing = backendTiming.nest("LLVM optimization");
  if (!host::optimizeLLVMModule(*llvmModule, *machine, cpuOptions.llvmOptLevel,
                                message))
    return error("LLVM optimization failed: " + message);
  optimizing.stop();
  if (target == Stage::LLVMIR) {
    output.clear();
    llvm::raw_string_ostream os(output);
    llvmModule->print(os, nullptr);
    done = true;
    return true;
  }
  TimingScope emitting = backendTiming.nest("Machine code emission");
  objects.assign(1, std::string());
  if (!host::emitMachineCode(*llvmModule, *machine, target == Stage::Asm,
                             objects[0], message))
    return error(message);
  emitting.stop();
  if (target == Stage::Asm || target == Stage::Obj) {
    output = objects[0];
    done = true;
  }
  return true;
}

/// What every artifact records the same way, CPU or CUDA: the compiler,
/// the source, the precision options, both pipelines, the signature (with
/// the weights' bytes), the kernel table and the code.
void Invocation::Impl::describeArtifact(ArtifactSpec &spec, ModuleOp m,
                                        PassManager &pm) {
  spec.compilerVersion = KILN_VERSION;
  spec.source = sourceName;
  spec.setOption("opt_level", int64_t(options.optLevel));
  spec.setOption("embed_weights", options.embedWeights);
  spec.setOption("precision", precisionName(options.precision));
  if (options.autoKeep)
    spec.setOption("auto_keep", std::to_string(*options.autoKeep));
  if (options.precision == Precision::Int8) {
    spec.setOption("calibration_method",
                   calibrationMethodName(options.getCalibrationMethod()));
    if (options.getCalibrationMethod() == CalibrationMethod::Percentile) {
      char text[32];
      snprintf(text, sizeof text, "%g", options.getPercentile());
      spec.setOption("percentile", text);
    }
    spec.setOption("activation_type",
                   options.getActivationType() == ActivationType::UInt8
                       ? "uint8"
                       : "int8");
  }
  backendPipeline.clear();
  llvm::raw_string_ostream pipelineOs(backendPipeline);
  pm.printAsTextualPipeline(pipelineOs);
  spec.pipeline = graphPipeline + " ; " + backendPipeline;
  if (!shapeHintsText.empty())
    spec.setOption("shape_hints", shapeHintsText);
  spec.symbols = signature->symbols;
  spec.constraints = signature->constraints;
  for (const TensorSpec &t : signature->inputs)
    spec.inputs.push_back({t.name, t.dtype, t.shape, t.dimNames});
  for (const TensorSpec &t : signature->outputs)
    spec.outputs.push_back({t.name, t.dtype, t.shape, t.dimNames});
  // Outputs the code writes in their input's buffer (kiln-cpu-elide-
  // aliased-copies): [output, input] name pairs.
  if (auto aliases = m->getAttrOfType<ArrayAttr>("kiln.aliases"))
    for (Attribute pair : aliases) {
      auto names = cast<ArrayAttr>(pair);
      spec.aliases.emplace_back(cast<StringAttr>(names[0]).str(),
                                cast<StringAttr>(names[1]).str());
    }
  for (const WeightSpec &w : signature->weights)
    spec.weights.push_back(
        {w.name, w.dtype, w.shape, w.bytes.data(), uint64_t(w.bytes.size())});
  // The runtime resolves the table's kernels at session creation (CUDA: in
  // the fatbin): the table is written with or without the profiling hooks.
  spec.kernelsJson = cpu::kernelTableJson(m);
  spec.code = code.data();
  spec.codeSize = code.size();
}

/// --shape-hints resolved to the model's symbols: (min, opt, max) per
/// symbol, from a hint naming the symbol or an input (one size per dim: its
/// static dims must be the declared ones). "" or the error.
static std::string
resolveShapeHints(const std::map<std::string, ShapeHint> &hints,
                  const ModelSignature &signature,
                  std::map<std::string, std::array<int64_t, 3>> &resolved) {
  auto text = [](const std::array<int64_t, 3> &r) {
    return std::to_string(r[0]) + ".." + std::to_string(r[1]) + ".." +
           std::to_string(r[2]);
  };
  std::map<std::string, std::string> from;
  auto set = [&](const std::string &symbol, std::array<int64_t, 3> range,
                 const std::string &hint) -> std::string {
    auto [it, inserted] = resolved.emplace(symbol, range);
    if (!inserted && it->second != range)
      return "--shape-hints: symbol '" + symbol + "' gets " +
             text(it->second) + " from '" + from[symbol] + "' and " +
             text(range) + " from '" + hint + "'";
    from.emplace(symbol, hint);
    return "";
  };
  for (const auto &[name, hint] : hints) {
    if (hint.min.size() == 1 &&
        llvm::is_contained(signature.symbols, name)) {
      if (std::string e =
              set(name, {hint.min[0], hint.opt[0], hint.max[0]}, name);
          !e.empty())
        return e;
      continue;
    }
    auto input = llvm::find_if(signature.inputs, [&](const TensorSpec &t) {
      return t.name == name;
    });
    if (input == signature.inputs.end()) {
      std::string known;
      for (const std::string &symbol : signature.symbols)
        known += (known.empty() ? "" : ", ") + symbol;
      return "--shape-hints: '" + name +
             "' is neither a symbol nor an input of the model (" +
             (known.empty() ? std::string("it has no dynamic dims")
                            : "its symbols: " + known) +
             ")";
    }
    if (hint.min.size() != input->shape.size())
      return "--shape-hints: input '" + name + "' has " +
             std::to_string(input->shape.size()) + " dims, the hint " +
             std::to_string(hint.min.size());
    for (size_t d = 0; d < input->shape.size(); ++d) {
      std::array<int64_t, 3> range = {hint.min[d], hint.opt[d], hint.max[d]};
      if (input->shape[d] >= 0) {
        if (range[0] != input->shape[d] || range[2] != input->shape[d])
          return "--shape-hints: input '" + name + "' dim " +
                 std::to_string(d) + " is " +
                 std::to_string(input->shape[d]) + ", not " + text(range);
        continue;
      }
      if (d >= input->dimNames.size() || input->dimNames[d].empty())
        continue;
      if (std::string e = set(input->dimNames[d], range, name); !e.empty())
        return e;
    }
  }
  return "";
}

bool Invocation::Impl::applyShapeHints(ModuleOp m) {
  if (options.shapeHints.empty())
    return true;
  std::map<std::string, std::array<int64_t, 3>> resolved;
  if (std::string e =
          resolveShapeHints(options.shapeHints, *signature, resolved);
      !e.empty())
    return error(e);
  // The runtime checks min and max on every call (symbols are >= 1
  // anyway); kiln-cpu-specialize-shapes reads the ranges off the module.
  Builder b(context.get());
  SmallVector<NamedAttribute> ranges;
  for (const auto &[symbol, range] : resolved) {
    if (range[0] > 1)
      signature->constraints.push_back(std::to_string(range[0]) +
                                       " <= " + symbol);
    signature->constraints.push_back(symbol + " <= " +
                                     std::to_string(range[2]));
    ranges.push_back(b.getNamedAttr(symbol, b.getDenseI64ArrayAttr(range)));
    shapeHintsText += (shapeHintsText.empty() ? "" : ",") + symbol + ":" +
                      std::to_string(range[0]) + ".." +
                      std::to_string(range[1]) + ".." +
                      std::to_string(range[2]);
  }
  m->setAttr("kiln.shape_hints", b.getDictionaryAttr(ranges));
  return true;
}

/// A tensor-parallel shard (kiln-shard-tensor-parallel's module attribute):
/// the runtime runs it only as that rank of a world of that size.
static void recordTensorParallel(ArtifactSpec &artifact, ModuleOp m) {
  if (auto tp = m->getAttrOfType<DictionaryAttr>("kiln.tensor_parallel")) {
    artifact.setOption("tensor_parallel_ranks",
                       tp.getAs<IntegerAttr>("ranks").getInt());
    artifact.setOption("tensor_parallel_rank",
                       tp.getAs<IntegerAttr>("rank").getInt());
    // How the split was chosen: as the model's ONNX sharding annotations
    // say (and which configuration of them), or inferred from the graph.
    if (auto plan = tp.getAs<StringAttr>("plan")) {
      std::string text = plan.str();
      if (auto config = tp.getAs<StringAttr>("configuration"))
        text += " (configuration '" + config.str() + "')";
      artifact.setOption("tensor_parallel_plan", text);
    }
  }
}

/// The graph (optimized, weights hoisted) down to `target` on the CPU.
bool Invocation::Impl::compileCpu(ModuleOp m, Stage target, bool quiet) {
  // The weights' layout is the artifact's: pack them before the signature
  // records their bytes.
  std::string packPipeline;
  {
    auto pack = PassManager::on<ModuleOp>(context.get());
    cpu::buildPackWeightsPipeline(pack, cpuOptions());
    if (failed(pack.run(m)))
      return false;
    if (!pack.getPasses().empty()) {
      llvm::raw_string_ostream os(packPipeline);
      pack.printAsTextualPipeline(os);
    }
  }
  signature = collectSignature(m);
  if (failed(signature) || !applyShapeHints(m))
    return false;
  cpu::CpuOptions c = cpuOptions();
  // --mlir-timing: the backend gets a report of its own, printed when this
  // returns (the graph pipeline's was printed after it ran).
  DefaultTimingManager timing;
  timing.setOutput(
      createOutputStrategy(DefaultTimingManager::OutputFormat::Text, *debug));
  if (options.timing) {
    timing.setEnabled(true);
    backendTiming = timing.getRootScope();
  }
  auto resetTiming = llvm::make_scope_exit([&] { backendTiming = {}; });
  auto pm = PassManager::on<ModuleOp>(context.get());
  TimingScope pipelineTiming = backendTiming.nest("Backend pipeline");
  if (options.timing)
    pm.enableTiming(pipelineTiming);
  cpu::buildLinalgPipeline(pm, c, /*hoistWeights=*/false);
  if (target != Stage::Linalg)
    cpu::buildLLVMPipeline(pm, c);
  if (options.printPipeline && !quiet) {
    *debug << "kiln-compile: backend pipeline: "
           << (packPipeline.empty() ? "" : packPipeline + " ; ");
    pm.printAsTextualPipeline(*debug);
    *debug << "\n";
  }
  if (options.printIRAfterAll && !quiet) {
    context->disableMultithreading();
    pm.enableIRPrinting(
        /*shouldPrintBeforePass=*/[](Pass *, Operation *) { return false; },
        /*shouldPrintAfterPass=*/[](Pass *, Operation *) { return true; },
        /*printModuleScope=*/true, /*printAfterOnlyOnChange=*/false,
        /*printAfterOnlyOnFailure=*/false, *debug);
  }
  if (!quiet)
    instrument(pm, "lowering");
  if (failed(pm.run(m)))
    return false;
  pipelineTiming.stop();
  if (!quiet) {
    reportWeightTransforms(m);
    // --report: the backend's finding joins the graph passes' report.
    size_t end = reportJson.rfind('}');
    if (options.collectPassReport && end != std::string::npos)
      reportJson.insert(end, ",\n  \"runtime_weight_transforms\": " +
                                 weightTransformsJson + "\n");
  }
  {
    backendPipeline = packPipeline.empty() ? "" : packPipeline + " ; ";
    llvm::raw_string_ostream os(backendPipeline);
    pm.printAsTextualPipeline(os);
  }
  if (target == Stage::Linalg || target == Stage::LLVMDialect)
    return printModule(m);

  host::TargetInfo info;
  std::vector<std::string> objects;
  bool done = false;
  if (!compileMachineCode(m, c, target, "--cpu=" + c.cpu, info, objects, done,
                          /*split=*/true))
    return false;
  if (done)
    return true;
  std::string message;
  notify("linking");
  TimingScope linking = backendTiming.nest("Link");
  if (!cpu::linkSharedObject(objects, c, code, message))
    return error(message);
  linking.stop();
  if (target == Stage::SharedObject) {
    output = code;
    return true;
  }
  artifact = std::make_unique<ArtifactSpec>();
  describeArtifact(*artifact, m, pm);
  artifact->target = {"cpu", info.triple, info.cpu, info.features};
  artifact->setOption("kernels", c.kernels);
  artifact->setOption("cpu", c.cpu);
  artifact->setOption("parallel", c.parallel);
  if (weightTransforms >= 0)
    artifact->setOption("runtime_weight_transforms", weightTransforms);
  recordTensorParallel(*artifact, m);
  return true;
}

#ifdef KILN_HAVE_CUDA_TARGET
/// The bytes of the gpu.binary @kiln_kernels (PTX text or fatbin).
static std::string kernelBinary(ModuleOp module) {
  std::string bytes;
  for (auto binary : module.getOps<gpu::BinaryOp>())
    for (auto object : binary.getObjects().getAsRange<gpu::ObjectAttr>())
      bytes += object.getObject().getValue().str();
  return bytes;
}
#endif

/// --target=cuda:sm_XX: linalg -> kernels (PTX or fatbin) and, past
/// ptx/fatbin, the host code on device memory (HostCode.cpp) down to the
/// artifact: the host .so, the fatbin and the kernel table
/// (docs/cuda-backend.md).
bool Invocation::Impl::compileCuda(ModuleOp m, Stage target) {
#ifndef KILN_HAVE_CUDA_TARGET
  (void)m;
  (void)target;
  return error("--target=" + options.target +
               ": this build has no CUDA target");
#else
  std::string chip = options.cudaChip();
  // ONNX If/Loop/Scan lower to scf branches and loops around kernels, which
  // the CUDA pipeline does not map onto the GPU yet: say so, naming the
  // node, rather than fail on the ops they become.
  Operation *controlFlow = nullptr;
  m.walk([&](Operation *op) {
    StringRef name = op->getName().getStringRef();
    if (name == "kiln.if" || name == "kiln.loop" || name == "kiln.scan") {
      controlFlow = op;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (controlFlow) {
    StringRef kind = controlFlow->getName().getStringRef().drop_front(5);
    std::string onnxType = kind == "if" ? "If" : kind == "loop" ? "Loop" : "Scan";
    std::string node = onnxType;
    Location loc = controlFlow->getLoc();
    while (auto fused = dyn_cast<FusedLoc>(loc)) {
      if (fused.getLocations().empty())
        break;
      loc = fused.getLocations().front();
    }
    if (auto nameLoc = dyn_cast<NameLoc>(loc))
      node = nameLoc.getName().str();
    controlFlow->emitError()
        << "--target=" << options.target << ": ONNX node '" << node << "' ("
        << onnxType
        << ") is control flow, which the CUDA target does not compile yet "
           "(the CPU target does)";
    return false;
  }
  if (target == Stage::Artifact) {
    signature = collectSignature(m);
    if (failed(signature))
      return false;
    for (const TensorSpec &input : signature->inputs)
      if (!input.dimNames.empty())
        return error("--target=" + options.target + ": input '" +
                     input.name +
                     "' has dynamic dims; the CUDA target compiles static "
                     "shapes only (give them with --input-shapes=name:AxBxC)");
  }
  cpu::CpuOptions c = cpuOptions();
  auto pm = PassManager::on<ModuleOp>(context.get());
  // Tensor parallelism's all-reduces: calls to the CUDA shim (NCCL).
  pm.addPass(cpu::createCollectiveCallsPass(/*cuda=*/true));
  cpu::buildLinalgPipeline(pm, c, /*hoistWeights=*/false);
  cuda::CudaOptions cudaOptions;
  cudaOptions.chip = chip;
  cudaOptions.format = target == Stage::Ptx ? "isa" : "fatbin";
  cudaOptions.profileHooks = c.profileHooks;
  cudaOptions.kernels = c.kernels;
  if (failed(cuda::buildCudaPipeline(pm, cudaOptions)))
    return false;
  bool host = target != Stage::Ptx && target != Stage::Fatbin;
  if (host)
    cuda::buildCudaHostPipeline(pm, cudaOptions);
  if (options.printPipeline) {
    *debug << "kiln-compile: backend pipeline: ";
    pm.printAsTextualPipeline(*debug);
    *debug << "\n";
  }
  if (options.printIRAfterAll) {
    context->disableMultithreading();
    pm.enableIRPrinting(
        /*shouldPrintBeforePass=*/[](Pass *, Operation *) { return false; },
        /*shouldPrintAfterPass=*/[](Pass *, Operation *) { return true; },
        /*printModuleScope=*/true, /*printAfterOnlyOnChange=*/false,
        /*printAfterOnlyOnFailure=*/false, *debug);
  }
  instrument(pm, "lowering");
  if (failed(pm.run(m)))
    return false;
  if (target == Stage::Ptx) {
    output.clear();
    llvm::raw_string_ostream os(output);
    os << "// Kiln CUDA kernels for " << chip << "\n";
    if (auto table = m->getAttrOfType<ArrayAttr>("kiln.cuda.kernels"))
      for (auto entry : table.getAsRange<DictionaryAttr>()) {
        os << "// kernel " << cast<StringAttr>(entry.get("kernel")).getValue()
           << " <- ONNX nodes:";
        for (auto node : cast<ArrayAttr>(entry.get("nodes")))
          os << " " << cast<StringAttr>(node).getValue();
        os << "\n";
      }
    for (auto binary : m.getOps<gpu::BinaryOp>())
      for (auto object : binary.getObjects().getAsRange<gpu::ObjectAttr>()) {
        os << "\n// ---- gpu.binary @" << binary.getSymName() << "\n";
        os << object.getObject().getValue();
      }
    return true;
  }
  fatbin = kernelBinary(m);
  // No binary is right only when every op became a library call (a lone
  // MatMul in --kernels=library): the artifact then has no fatbin section.
  bool allLibrary = false;
  if (auto table = m->getAttrOfType<ArrayAttr>("kiln.cuda.kernels"))
    allLibrary = !table.empty() &&
                 llvm::all_of(table.getAsRange<DictionaryAttr>(),
                              [](DictionaryAttr entry) {
                                auto lib = entry.getAs<BoolAttr>("library");
                                return lib && lib.getValue();
                              });
  if (fatbin.empty() && (!allLibrary || target == Stage::Fatbin))
    return error(std::string("the CUDA pipeline produced no kernel ") +
                 (allLibrary ? "(every op is a library call)" : "binary"));
  if (target == Stage::Fatbin) {
    output = fatbin;
    return true;
  }
  if (target == Stage::LLVMDialect)
    return printModule(m);

  // The host code runs on any x86-64 host: baseline features. The
  // gpu.binary becomes a global holding the fatbin and a constructor
  // calling mgpuModuleLoad; each launch mgpuModuleGetFunction(module, the
  // kernel table's name) and mgpuLaunchKernel (upstream's SelectObject).
  cpu::CpuOptions hostOptions = c;
  hostOptions.cpu = "generic";
  host::TargetInfo info;
  std::vector<std::string> objects;
  std::string message, warning;
  bool done = false;
  // One object: the CUDA host code is small, and its link takes one.
  if (!compileMachineCode(m, hostOptions, target, "the host code", info,
                          objects, done, /*split=*/false))
    return false;
  if (done)
    return true;
  notify("linking");
  if (!cuda::linkHostSharedObject(objects[0], code, message, warning))
    return error(message);
  if (!warning.empty()) {
    kiln::Diagnostic d;
    d.fromDriver = true;
    d.severity = kiln::Diagnostic::Severity::Warning;
    d.message = "warning: " + warning;
    add(std::move(d));
  }
  if (target == Stage::SharedObject) {
    output = code;
    return true;
  }
  artifact = std::make_unique<ArtifactSpec>();
  describeArtifact(*artifact, m, pm);
  artifact->target.kind = "cuda";
  artifact->target.chip = chip;
  artifact->target.triple = info.triple;
  artifact->setOption("target", options.target);
  artifact->setOption("kernels", c.kernels);
  artifact->setOption("profile_hooks", c.profileHooks);
  recordTensorParallel(*artifact, m);
  if (!fatbin.empty())
    artifact->sections.push_back(
        {"cuda-fatbin", "cuda-fatbin", fatbin.data(), uint64_t(fatbin.size())});
  return true;
#endif
}

/// `imported` through the graph pipeline with `graph`, then the CPU
/// backend, written as an artifact at `path` (the variants of
/// lib/Quantization). A separate Impl state is not needed: the variant's
/// spec is written and dropped here.
bool Invocation::Impl::compileVariant(ModuleOp imported,
                                      const GraphPipelineOptions &graph,
                                      const std::string &path) {
  OwningOpRef<ModuleOp> m = imported.clone();
  auto pm = PassManager::on<ModuleOp>(context.get());
  buildGraphPipeline(pm, graph);
  if (!options.embedWeights)
    pm.addPass(createKilnHoistWeights());
  if (failed(pm.run(*m)))
    return false;
  // Keep the compile's own results: the variant reuses the members.
  std::unique_ptr<ArtifactSpec> savedArtifact = std::move(artifact);
  FailureOr<ModelSignature> savedSignature = std::move(signature);
  std::string savedCode = std::move(code), savedBackend = backendPipeline;
  std::string savedGraph = std::move(graphPipeline);
  graphPipeline.clear();
  bool ok = compileCpu(*m, Stage::Artifact, /*quiet=*/true);
  if (ok) {
    std::string message = writeArtifact(path, *artifact);
    if (!message.empty())
      ok = error(message);
  }
  artifact = std::move(savedArtifact);
  signature = std::move(savedSignature);
  code = std::move(savedCode);
  backendPipeline = std::move(savedBackend);
  graphPipeline = std::move(savedGraph);
  return ok;
}

bool Invocation::Impl::runGraphPipeline(Stage target) {
  bool backend = isBackendStage(target);
  ModelStats before = collectModelStats(*module);
  // Declared before the pass manager: it prints the timing report when
  // destroyed, after the pipeline ran.
  DefaultTimingManager timing;
  timing.setOutput(
      createOutputStrategy(DefaultTimingManager::OutputFormat::Text, *debug));
  TimingScope timingRoot;
  auto pm = PassManager::on<ModuleOp>(context.get());
  GraphPipelineOptions pipelineOptions;
  setPipelineOptions(pipelineOptions);
  // Kiln's fused ops are decomposed at the end of the graph pipeline for
  // the CPU: most have direct lowerings (lib/Conversion/KilnToLinalg) but
  // kiln.linear_attention has none yet, and the channels-last convolutions
  // are not tiled by kiln-cpu-tile-and-vectorize nor called in library
  // mode: measured, the decomposed small CNN ran 5x faster.
  // --kernels=auto on the CPU: the convolutions oneDNN runs stay
  // channels-last (kiln-cpu-dnnl-calls calls it on NHWC tensors).
  if (backend) {
    pipelineOptions.decomposeFused = true;
    pipelineOptions.keepLibraryConvs =
        options.target == "cpu" && options.kernels == KernelStrategy::Auto &&
        cpu::CpuOptions::haveDnnl();
  }
  buildGraphPipeline(pm, pipelineOptions);
  if (backend && !options.embedWeights)
    pm.addPass(createKilnHoistWeights());
  graphPipeline.clear();
  {
    llvm::raw_string_ostream os(graphPipeline);
    pm.printAsTextualPipeline(os);
  }
  if (options.printPipeline) {
    *debug << "kiln-compile: pipeline: " << graphPipeline << "\n";
  }
  if (options.printIRAfterAll) {
    context->disableMultithreading();
    pm.enableIRPrinting(
        /*shouldPrintBeforePass=*/[](Pass *, Operation *) { return false; },
        /*shouldPrintAfterPass=*/[](Pass *, Operation *) { return true; },
        /*printModuleScope=*/true, /*printAfterOnlyOnChange=*/false,
        /*printAfterOnlyOnFailure=*/false, *debug);
  }
  if (options.timing) {
    timing.setEnabled(true);
    timingRoot = timing.getRootScope();
    pm.enableTiming(timingRoot);
  }
  PassReport passReport;
  if (options.collectPassReport)
    passReport.attach(pm);
  if (options.passStatistics)
    statistics.trackPassesThatRan(pm);
  instrument(pm, "graph passes");
  // --summary or a report with the kiln stage runs the pipeline on a copy,
  // so the output stays the imported IR.
  OwningOpRef<ModuleOp> optimized =
      target != Stage::Kiln ? OwningOpRef<ModuleOp>() : module->clone();
  ModuleOp ran = optimized ? *optimized : *module;
  if (failed(pm.run(ran)))
    return false;
  if (options.passStatistics)
    statistics.print(*debug);
  if (options.collectPassReport) {
    reportJson.clear();
    llvm::raw_string_ostream os(reportJson);
    passReport.writeJson(os, sourceName, graphPipeline, options.optLevel,
                         before, collectModelStats(ran));
  }
  if (options.summary && messages) {
    *messages << "model: " << sourceName << "\n";
    printStatsComparison(*messages, before, collectModelStats(ran));
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Invocation
//===----------------------------------------------------------------------===//

Invocation::Invocation(CompileOptions options)
    : impl(std::make_unique<Impl>(std::move(options))) {}
Invocation::~Invocation() = default;

const CompileOptions &Invocation::getOptions() const { return impl->options; }
CompileOptions &Invocation::getOptions() { return impl->options; }
void Invocation::setMessageStream(llvm::raw_ostream *os) {
  impl->messages = os;
}
void Invocation::setDebugStream(llvm::raw_ostream *os) {
  impl->debug = os ? os : &llvm::nulls();
}
void Invocation::setProgressCallback(
    std::function<void(const Progress &)> callback) {
  impl->progress = std::move(callback);
}
void Invocation::setDiagnosticCallback(
    std::function<void(const kiln::Diagnostic &)> callback) {
  impl->diagnosticCallback = std::move(callback);
}

bool Invocation::importFile(StringRef path) {
  impl->sourceName = path.str();
  StringRef ext = llvm::sys::path::extension(path);
  if (ext == ".mlir" || ext == ".mlirbc") {
    std::string message;
    auto file = openInputFile(path, &message);
    if (!file)
      return impl->error(message);
    return parseMLIR(file->getBuffer(), path);
  }
  ImportOptions importOptions;
  importOptions.runChecker = impl->options.onnxCheck;
  importOptions.convertVersion = impl->options.onnxConvert;
  importOptions.resourceThresholdBytes = impl->options.resourceThreshold;
  importOptions.inputShapes = impl->options.inputShapes;
  impl->notify("import", path.str());
  impl->module = importOnnxFile(path, *impl->context, importOptions);
  return bool(impl->module);
}

bool Invocation::importOnnxBytes(StringRef bytes, StringRef name,
                                 StringRef baseDir) {
  impl->sourceName = name.str();
  ImportOptions importOptions;
  importOptions.runChecker = impl->options.onnxCheck;
  importOptions.convertVersion = impl->options.onnxConvert;
  importOptions.resourceThresholdBytes = impl->options.resourceThreshold;
  importOptions.inputShapes = impl->options.inputShapes;
  impl->notify("import", name.str());
  impl->module = kiln::importOnnxBytes(bytes, name, baseDir, *impl->context,
                                       importOptions);
  return bool(impl->module);
}

bool Invocation::parseMLIR(StringRef source, StringRef name) {
  if (impl->sourceName.empty())
    impl->sourceName = name.str();
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(source, name), llvm::SMLoc());
  // The parser's messages quote the source line: keep its formatting.
  std::string text;
  llvm::raw_string_ostream os(text);
  {
    SourceMgrDiagnosticHandler handler(sourceMgr, impl->context.get(), os);
    impl->module = parseSourceFile<ModuleOp>(sourceMgr, impl->context.get());
  }
  if (!text.empty()) {
    kiln::Diagnostic d;
    d.severity = impl->module ? kiln::Diagnostic::Severity::Warning
                              : kiln::Diagnostic::Severity::Error;
    d.message = text;
    d.formatted = StringRef(text).rtrim("\n").str();
    impl->add(std::move(d));
  }
  return bool(impl->module);
}

bool Invocation::run(Stage stage) {
  Impl &s = *impl;
  s.outputReady = false;
  s.output.clear();
  s.artifact.reset();
  if (!s.module)
    return s.error("no source: import a model or parse MLIR first");
  std::string invalid = s.options.validate(stage);
  if (!invalid.empty())
    return s.error(invalid);
  s.stage = stage;
  StatisticsScope scope(s.statistics);
  if (failed(verify(*s.module)))
    return false;
  const CompileOptions &o = s.options;
  bool int8 = o.precision == Precision::Int8;
  quantization::Context q(o, s.statistics);
  q.sourceName = s.sourceName;
  q.pipelineOptions = [&](GraphPipelineOptions &p) {
    s.setPipelineOptions(p);
  };
  q.compileVariant = [&](ModuleOp m, const GraphPipelineOptions &graph,
                         const std::string &path) {
    return s.compileVariant(m, graph, path);
  };
  q.error = [&](const std::string &message) { s.error(message); };
  q.messages = s.messages;
  q.progress = [&](const std::string &stageName, const std::string &detail,
                   unsigned step, unsigned steps) {
    s.notify(stageName, detail, step, steps);
  };
  if (o.autoKeep && !int8) {
    if (!quantization::runAutoKeep(q, *s.module))
      return false;
    s.autoKeptNodes = q.autoKeptNodes;
  }
  // The float graph, for --accuracy-report.
  OwningOpRef<ModuleOp> fp32Module;
  if (!o.accuracyReport.empty())
    fp32Module = s.module->clone();
  if (int8) {
    if (!quantization::quantizeToInt8(q, *s.module))
      return false;
    s.autoKeptNodes = q.autoKeptNodes;
  }
  if (!o.accuracyReport.empty() &&
      !quantization::writeAccuracyReport(q, *fp32Module, *s.module))
    return false;
  // Stage::Onnx with int8: the QDQ graph, as --emit-qdq-onnx writes it (the
  // pipeline's integer ops have no ONNX form).
  if (int8 && stage == Stage::Onnx) {
    llvm::raw_string_ostream os(s.output);
    if (failed(exportOnnxModel(*s.module, os)))
      return false;
    s.outputReady = true;
    return true;
  }

  if (stage != Stage::Kiln || o.summary || o.collectPassReport)
    if (!s.runGraphPipeline(stage))
      return false;

  bool ok;
  if (o.isCuda() && isBackendStage(stage))
    ok = s.compileCuda(*s.module, stage);
  else if (isBackendStage(stage))
    ok = s.compileCpu(*s.module, stage, /*quiet=*/false);
  else if (stage == Stage::Onnx) {
    // Serialize first: a graph that has no ONNX form writes nothing.
    llvm::raw_string_ostream os(s.output);
    ok = succeeded(exportOnnxModel(*s.module, os));
  } else {
    ok = s.printModule(*s.module);
  }
  s.outputReady = ok && stage != Stage::Artifact;
  return ok;
}

const std::string &Invocation::getOutput() const {
  Impl &s = *impl;
  if (s.outputReady || !s.artifact)
    return s.output;
  // The artifact's bytes: written to a temporary file (the writer's one
  // code path), weights inline, and read back.
  SmallString<128> path;
  int fd;
  if (llvm::sys::fs::createTemporaryFile("kiln-artifact", "kiln", fd, path)) {
    s.error("cannot create a temporary file for the artifact");
    return s.output;
  }
  ::close(fd);
  ArtifactSpec spec = *s.artifact;
  spec.sideWeightsThreshold = ~uint64_t(0);
  std::string message = writeArtifact(std::string(path), spec);
  if (message.empty()) {
    auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                              /*RequiresNullTerminator=*/false);
    if (buffer) {
      s.output = (*buffer)->getBuffer().str();
      s.outputReady = true;
    } else {
      s.error("cannot read the artifact back: " + buffer.getError().message());
    }
  } else {
    s.error(message);
  }
  llvm::sys::fs::remove(path);
  return s.output;
}

bool Invocation::writeOutput(StringRef path) {
  Impl &s = *impl;
  if (s.artifact) {
    if (path == "-")
      return s.error("an artifact is not written to stdout; give -o "
                     "model.kiln");
    std::string message = writeArtifact(path.str(), *s.artifact);
    return message.empty() || s.error(message);
  }
  std::string message;
  auto output = openOutputFile(path, &message);
  if (!output)
    return s.error(message);
  output->os() << s.output;
  output->keep();
  return true;
}

ModuleOp Invocation::getModule() {
  return impl->module ? *impl->module : ModuleOp();
}
const std::vector<kiln::Diagnostic> &Invocation::getDiagnostics() const {
  return impl->diagnostics;
}
std::string Invocation::getDiagnosticsText(StringRef tool) const {
  std::string text;
  for (const kiln::Diagnostic &d : impl->diagnostics)
    text += d.format(tool) + "\n";
  return text;
}
bool Invocation::hasErrors() const {
  return llvm::any_of(impl->diagnostics, [](const kiln::Diagnostic &d) {
    return d.severity == kiln::Diagnostic::Severity::Error;
  });
}
void Invocation::reportError(const std::string &message) {
  impl->error(message);
}
StatisticsTable &Invocation::getStatistics() { return impl->statistics; }
const std::string &Invocation::getPassReportJson() const {
  return impl->reportJson;
}
const std::string &Invocation::getGraphPipeline() const {
  return impl->graphPipeline;
}
const std::string &Invocation::getBackendPipeline() const {
  return impl->backendPipeline;
}
const std::vector<std::string> &Invocation::getAutoKeptNodes() const {
  return impl->autoKeptNodes;
}
const std::string &Invocation::getSourceName() const {
  return impl->sourceName;
}
