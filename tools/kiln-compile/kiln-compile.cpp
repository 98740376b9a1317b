//===- kiln-compile.cpp - ONNX model to a runnable artifact ---------------===//
//
//   kiln-compile model.onnx -o model.kiln              the artifact (the default
//                                                      emit for a -o other than
//                                                      '-' and *.mlir)
//   kiln-compile model.onnx --emit=linalg|llvm|asm|obj -o f   a backend stage
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

#include "AutoKeep.h"

#include "kiln/Analysis/ModelStats.h"
#include "kiln/Dialect/KilnDialect.h"
#include "kiln/Export/OnnxExporter.h"
#include "kiln/Import/OnnxImporter.h"
#include "kiln/Pipelines/PassReport.h"
#include "kiln/Pipelines/Pipelines.h"
#include "kiln/Conversion/Passes.h"
#include "kiln/Target/CPU/CpuBackend.h"
#include "kiln/Target/ModelSignature.h"
#include "kiln/ArtifactWriter.h"
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
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/ADT/ScopeExit.h"

#include <cmath>
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#ifdef KILN_HAVE_CUDA_TARGET
#include "kiln/Target/CUDA/CudaBackend.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#endif

using namespace mlir;
namespace cl = llvm::cl;

namespace {
enum class Emit {
  Kiln,
  Graph,
  Onnx,
  Linalg,
  LLVMDialect,
  LLVMIR,
  Ptx,
  Asm,
  Obj,
  SharedObject,
  Artifact
};

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
                          "(use --decompose-fused when it has fused ops)"),
               clEnumValN(Emit::Linalg, "linalg",
                          "linalg/tensor IR: the graph lowered for the CPU"),
               clEnumValN(Emit::LLVMDialect, "llvm-dialect",
                          "the MLIR LLVM dialect, kiln_entry included"),
               clEnumValN(Emit::LLVMIR, "llvm", "optimized LLVM IR"),
               clEnumValN(Emit::Ptx, "ptx",
                          "--target=cuda:sm_XX: the kernels' PTX, with the "
                          "kernel table as comments"),
               clEnumValN(Emit::Asm, "asm", "assembly for the target CPU"),
               clEnumValN(Emit::Obj, "obj", "an object file"),
               clEnumValN(Emit::SharedObject, "so",
                          "the linked shared object alone (the artifact's "
                          "code section; buffers as in docs/artifact.md)"),
               clEnumValN(Emit::Artifact, "artifact",
                          "the model artifact (model.kiln) kiln-run and the "
                          "runtime load; the default for -o FILE other than "
                          "*.mlir")),
    cl::cat(category));
cl::opt<std::string> targetName(
    "target",
    cl::desc("Code generation target: cpu, or cuda:sm_80|sm_89|sm_90 "
             "(--emit=ptx only so far)"),
    cl::init("cpu"), cl::cat(category));
cl::opt<std::string> cpuName(
    "cpu",
    cl::desc("CPU to compile for: native (the host, its AVX2/AVX-512), "
             "generic (any x86-64) or an LLVM CPU name"),
    cl::init("native"), cl::cat(category));
cl::opt<std::string> kernelStrategy(
    "kernels",
    cl::desc("codegen (MLIR-generated loops) or library (OpenBLAS GEMM for "
             "matmuls and convolutions; with --target=cuda, cuBLASLt GEMMs "
             "through kiln_rt_cuda_gemm)"),
    cl::init("codegen"), cl::cat(category));
cl::opt<bool> embedWeights(
    "embed-weights",
    cl::desc("Compile the weights into the code as constants instead of the "
             "artifact's weights section (small models, --emit=so)"),
    cl::cat(category));
cl::opt<bool> noParallel("no-parallel",
                         cl::desc("Do not run loops on OpenMP threads"),
                         cl::cat(category));
cl::opt<bool> profileHooks(
    "profile-hooks",
    cl::desc("Bracket each kernel with the profiling hooks kiln-run "
             "--profile reads, and record the kernel table in the artifact "
             "(on by default; --profile-hooks=false leaves them out)"),
    cl::init(true), cl::cat(category));
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
cl::opt<std::string> precision(
    "precision",
    cl::desc("fp32 (default: unchanged), fp16 or bf16: convert float32 "
             "weights and computation to the half type, keeping softmax, "
             "normalizations, accumulating reductions and residual adds in "
             "fp32 (kiln-convert-precision; docs/passes/"
             "kiln-convert-precision.md)"),
    cl::init("fp32"), cl::cat(category));
cl::list<std::string> keepFp32(
    "keep-fp32",
    cl::desc("With --precision: more op types kept in fp32, ONNX op types "
             "(Softmax, LayerNormalization, MatMul) or kiln op names "
             "(rms_norm, swiglu); comma-separated"),
    cl::CommaSeparated, cl::value_desc("op"), cl::cat(category));
cl::list<std::string> keepFp32Nodes(
    "keep-fp32-nodes",
    cl::desc("With --precision: ONNX node names kept in fp32 (e.g. "
             "/layers.0/mlp/MatMul); comma-separated"),
    cl::CommaSeparated, cl::value_desc("node"), cl::cat(category));
cl::opt<std::string> keepFp32Classes(
    "keep-fp32-classes",
    cl::desc("With --precision: the default keep classes, any of softmax, "
             "normalization, reduction, residual-add, or none"),
    cl::init("softmax,normalization,reduction,residual-add"),
    cl::cat(category));
cl::opt<bool> precisionIO(
    "precision-io",
    cl::desc("With --precision: the model's float32 inputs and outputs take "
             "the half type too (by default they keep their declared types "
             "and are cast at the boundary)"),
    cl::cat(category));
cl::opt<double> autoKeep(
    "auto-keep",
    cl::desc("With --precision: sensitivity analysis. Each layer (ONNX "
             "MatMul, Gemm, Conv, ConvTranspose, Einsum node) is demoted "
             "alone, compiled and run on the CPU; a layer whose outputs' max "
             "abs error against fp32, relative to the largest |fp32 output|, "
             "is above THRESHOLD stays fp32. Prints the table of layers, "
             "errors and decisions, then compiles the model with them"),
    cl::value_desc("threshold"), cl::init(-1.0), cl::cat(category));
cl::opt<std::string> calibration(
    "calibration",
    cl::desc("--auto-keep's inputs: DIR/input_N.npy or .pb (one set), or "
             "subfolders of DIR holding them (one set each); default: "
             "--auto-keep-sets sets of seeded random inputs"),
    cl::value_desc("dir"), cl::cat(category));
cl::opt<uint64_t> autoKeepSeed(
    "auto-keep-seed",
    cl::desc("Seed of --auto-keep's random inputs (kiln-run --seed's "
             "generator; set s uses seed + s)"),
    cl::init(0), cl::cat(category));
cl::opt<unsigned> autoKeepSets(
    "auto-keep-sets",
    cl::desc("Number of random input sets for --auto-keep without "
             "--calibration"),
    cl::init(2), cl::cat(category));
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

/// Node names --auto-keep decided to keep in fp32.
static std::vector<std::string> autoKeptNodes;

static void setPipelineOptions(kiln::GraphPipelineOptions &options) {
  options.optLevel = optLevel;
  options.disabledPasses =
      std::vector<std::string>(disabledPasses.begin(), disabledPasses.end());
  options.preferNHWC = preferNHWC;
  options.matmulWeightLayout = matmulWeightLayout;
  options.foldSizeLimit = foldSizeLimit;
  options.decomposeFused = decomposeFused;
  options.precision = precision;
  options.keepClasses = keepFp32Classes;
  options.keepOps = std::vector<std::string>(keepFp32.begin(), keepFp32.end());
  options.keepNodes =
      std::vector<std::string>(keepFp32Nodes.begin(), keepFp32Nodes.end());
  for (const std::string &node : autoKeptNodes)
    options.keepNodes.push_back(node);
  options.precisionIO = precisionIO;
}

static bool writeOutput(StringRef bytes) {
  std::string error;
  auto output = openOutputFile(outputPath, &error);
  if (!output) {
    llvm::errs() << "kiln-compile: " << error << "\n";
    return false;
  }
  output->os() << bytes;
  output->keep();
  return true;
}

static bool writeIR(ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  OpPrintingFlags flags;
  if (!keepConstants)
    flags.elideLargeResourceString(1024).elideLargeElementsAttrs(1024);
  module->print(os, flags);
  return writeOutput(text);
}

#ifdef KILN_HAVE_CUDA_TARGET
/// --target=cuda:sm_XX --emit=ptx: linalg -> kernels -> PTX; writes each
/// kernel module's PTX after a comment naming the kernel and its ONNX nodes.
static bool compileCuda(ModuleOp module, StringRef chip,
                        const kiln::cpu::CpuOptions &options) {
  auto pm = PassManager::on<ModuleOp>(module->getContext());
  kiln::cpu::buildLinalgPipeline(pm, options, /*hoistWeights=*/false);
  kiln::cuda::CudaOptions cudaOptions;
  cudaOptions.chip = chip.str();
  cudaOptions.format = "isa";
  cudaOptions.kernels = options.kernels;
  // The CUDA passes say with remarks what stays off the fast paths (a
  // matmul not on tensor cores, not a library call): print them; errors go
  // on to the default handler.
  ScopedDiagnosticHandler remarks(module->getContext(), [](Diagnostic &diag) {
    if (diag.getSeverity() != DiagnosticSeverity::Remark)
      return failure();
    llvm::errs() << diag.getLocation() << ": remark: " << diag.str() << "\n";
    return success();
  });
  if (failed(kiln::cuda::buildCudaPipeline(pm, cudaOptions)))
    return false;
  if (printPipeline) {
    llvm::errs() << "kiln-compile: backend pipeline: ";
    pm.printAsTextualPipeline(llvm::errs());
    llvm::errs() << "\n";
  }
  if (failed(pm.run(module)))
    return false;
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "// Kiln CUDA kernels for " << chip << "\n";
  if (auto table = module->getAttrOfType<ArrayAttr>("kiln.cuda.kernels"))
    for (auto entry : table.getAsRange<DictionaryAttr>()) {
      os << "// kernel " << cast<StringAttr>(entry.get("kernel")).getValue()
         << " <- ONNX nodes:";
      for (auto node : cast<ArrayAttr>(entry.get("nodes")))
        os << " " << cast<StringAttr>(node).getValue();
      os << "\n";
    }
  for (auto binary : module.getOps<gpu::BinaryOp>())
    for (auto object : binary.getObjects().getAsRange<gpu::ObjectAttr>()) {
      os << "\n// ---- gpu.binary @" << binary.getSymName() << "\n";
      os << object.getObject().getValue();
    }
  return writeOutput(text);
}
#endif

/// The graph (optimized, weights hoisted) down to the requested stage.
static bool compileBackend(ModuleOp module, Emit mode,
                           const kiln::cpu::CpuOptions &options,
                           const std::string &graphPipeline,
                           const std::string &artifactPath,
                           bool quiet = false) {
  FailureOr<kiln::ModelSignature> signature = kiln::collectSignature(module);
  if (failed(signature))
    return false;
  auto pm = PassManager::on<ModuleOp>(module->getContext());
  kiln::cpu::buildLinalgPipeline(pm, options, /*hoistWeights=*/false);
  if (mode != Emit::Linalg)
    kiln::cpu::buildLLVMPipeline(pm, options);
  if (printPipeline && !quiet) {
    llvm::errs() << "kiln-compile: backend pipeline: ";
    pm.printAsTextualPipeline(llvm::errs());
    llvm::errs() << "\n";
  }
  if (printIRAfterAll && !quiet) {
    module->getContext()->disableMultithreading();
    pm.enableIRPrinting(
        /*shouldPrintBeforePass=*/[](Pass *, Operation *) { return false; },
        /*shouldPrintAfterPass=*/[](Pass *, Operation *) { return true; },
        /*printModuleScope=*/true, /*printAfterOnlyOnChange=*/false);
  }
  if (failed(pm.run(module)))
    return false;
  if (mode == Emit::Linalg || mode == Emit::LLVMDialect)
    return writeIR(module);

  std::string error;
  kiln::cpu::TargetInfo target;
  if (!kiln::cpu::resolveTarget(options, target, error)) {
    llvm::errs() << "kiln-compile: --cpu=" << options.cpu << ": " << error
                 << "\n";
    return false;
  }
  std::unique_ptr<llvm::TargetMachine> machine =
      kiln::cpu::createTargetMachine(target, options.llvmOptLevel, error);
  if (!machine) {
    llvm::errs() << "kiln-compile: " << error << "\n";
    return false;
  }
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      kiln::cpu::translateToLLVMIR(module, llvmContext, *machine);
  if (!llvmModule) {
    llvm::errs() << "kiln-compile: translation to LLVM IR failed\n";
    return false;
  }
  if (!kiln::cpu::optimizeLLVMModule(*llvmModule, *machine,
                                     options.llvmOptLevel, error)) {
    llvm::errs() << "kiln-compile: LLVM optimization failed: " << error
                 << "\n";
    return false;
  }
  if (mode == Emit::LLVMIR) {
    std::string text;
    llvm::raw_string_ostream os(text);
    llvmModule->print(os, nullptr);
    return writeOutput(text);
  }
  std::string code;
  if (!kiln::cpu::emitMachineCode(*llvmModule, *machine, mode == Emit::Asm,
                                  code, error)) {
    llvm::errs() << "kiln-compile: " << error << "\n";
    return false;
  }
  if (mode == Emit::Asm || mode == Emit::Obj)
    return writeOutput(code);
  std::string sharedObject;
  if (!kiln::cpu::linkSharedObject(code, options, sharedObject, error)) {
    llvm::errs() << "kiln-compile: " << error << "\n";
    return false;
  }
  if (mode == Emit::SharedObject)
    return writeOutput(sharedObject);

  if (artifactPath == "-") {
    llvm::errs() << "kiln-compile: an artifact is not written to stdout; "
                    "give -o model.kiln\n";
    return false;
  }
  kiln::ArtifactSpec spec;
  spec.compilerVersion = KILN_VERSION;
  spec.source = inputPath;
  spec.target = {"cpu", target.triple, target.cpu, target.features};
  spec.setOption("opt_level", int64_t(optLevel));
  spec.setOption("kernels", options.kernels);
  spec.setOption("cpu", options.cpu);
  spec.setOption("parallel", options.parallel);
  spec.setOption("embed_weights", bool(embedWeights));
  spec.setOption("precision", precision);
  if (autoKeep >= 0)
    spec.setOption("auto_keep", std::to_string(autoKeep.getValue()));
  std::string backendPipeline;
  llvm::raw_string_ostream pipelineOs(backendPipeline);
  pm.printAsTextualPipeline(pipelineOs);
  spec.pipeline = graphPipeline + " ; " + backendPipeline;
  for (const kiln::TensorSpec &t : signature->inputs)
    spec.inputs.push_back({t.name, t.dtype, t.shape});
  for (const kiln::TensorSpec &t : signature->outputs)
    spec.outputs.push_back({t.name, t.dtype, t.shape});
  for (const kiln::WeightSpec &w : signature->weights)
    spec.weights.push_back(
        {w.name, w.dtype, w.shape, w.bytes.data(), uint64_t(w.bytes.size())});
  spec.kernelsJson = kiln::cpu::kernelTableJson(module);
  spec.code = sharedObject.data();
  spec.codeSize = sharedObject.size();
  std::string writeError = kiln::writeArtifact(artifactPath, spec);
  if (!writeError.empty()) {
    llvm::errs() << "kiln-compile: " << writeError << "\n";
    return false;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// --auto-keep: the sensitivity analysis of mixed precision
//===----------------------------------------------------------------------===//

/// The layers --auto-keep demotes one at a time: the ONNX node names of the
/// imported graph's MatMul, Gemm, Conv, ConvTranspose and Einsum ops, in
/// graph order. Each is converted alone with kiln-convert-precision's
/// only-nodes, so the ops fused with it later convert with it only when
/// they come from the same node; bias adds and activations around it follow
/// the default rules in the final model only.
static std::vector<std::string> findLayers(ModuleOp module) {
  std::vector<std::string> layers;
  module.walk([&](Operation *op) {
    StringRef name = op->getName().getStringRef();
    if (name != "kiln.matmul" && name != "kiln.gemm" && name != "kiln.conv" &&
        name != "kiln.conv_transpose" && name != "kiln.einsum")
      return;
    auto loc = op->getLoc()->findInstanceOf<NameLoc>();
    if (!loc)
      return;
    std::string node = loc.getName().str();
    if (!llvm::is_contained(layers, node))
      layers.push_back(node);
  });
  return layers;
}

/// `imported` through the graph pipeline with `options`, then the backend,
/// written as an artifact at `path`.
static bool compileVariant(ModuleOp imported,
                           const kiln::GraphPipelineOptions &options,
                           const kiln::cpu::CpuOptions &cpuOptions,
                           const std::string &path) {
  OwningOpRef<ModuleOp> module = imported.clone();
  auto pm = PassManager::on<ModuleOp>(imported->getContext());
  kiln::buildGraphPipeline(pm, options);
  if (!embedWeights)
    pm.addPass(kiln::createKilnHoistWeights());
  if (failed(pm.run(*module)))
    return false;
  return compileBackend(*module, Emit::Artifact, cpuOptions, "", path,
                        /*quiet=*/true);
}

/// kiln-convert-precision's ops-converted so far (all its runs).
static uint64_t opsConvertedSoFar() {
  for (const kiln::StatisticValue &v :
       kiln::getStatistics("kiln-convert-precision"))
    if (v.name == "ops-converted")
      return v.value;
  return 0;
}

static std::string formatNumber(double v, const char *format) {
  if (std::isnan(v))
    return "nan";
  if (std::isinf(v))
    return "inf";
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::format(format, v);
  return s;
}

/// Runs the analysis and appends the layers to keep to autoKeptNodes.
static bool runAutoKeep(ModuleOp imported,
                        const kiln::cpu::CpuOptions &cpuOptions) {
  llvm::raw_ostream &os = outputPath == "-" ? llvm::errs() : llvm::outs();
  SmallString<128> dir;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory("kiln-auto-keep", dir)) {
    llvm::errs() << "kiln-compile: --auto-keep: cannot create a temporary "
                    "directory: "
                 << ec.message() << "\n";
    return false;
  }
  std::vector<std::string> files;
  auto cleanup = llvm::make_scope_exit([&] {
    for (const std::string &f : files)
      llvm::sys::fs::remove(f);
    llvm::sys::fs::remove(dir);
  });
  auto artifact = [&](const std::string &name) {
    SmallString<128> path(dir);
    llvm::sys::path::append(path, name + ".kiln");
    files.push_back(std::string(path));
    return std::string(path);
  };

  kiln::GraphPipelineOptions options;
  setPipelineOptions(options);
  options.decomposeFused = true;
  options.precision = "fp32";
  std::string refPath = artifact("fp32");
  if (!compileVariant(imported, options, cpuOptions, refPath))
    return false;
  std::vector<kiln::autokeep::InputSet> sets;
  std::string error;
  if (!kiln::autokeep::loadInputSets(refPath, calibration, autoKeepSeed,
                                     autoKeepSets, sets, error)) {
    llvm::errs() << "kiln-compile: --auto-keep: " << error << "\n";
    return false;
  }
  kiln::autokeep::Outputs reference;
  if (!kiln::autokeep::runArtifact(refPath, sets, reference, error)) {
    llvm::errs() << "kiln-compile: --auto-keep: " << error << "\n";
    return false;
  }

  std::vector<std::string> layers = findLayers(imported);
  os << "kiln-compile: --auto-keep=" << autoKeep << ": " << layers.size()
     << " layers demoted to " << precision << " one at a time, on "
     << sets.size() << " input set" << (sets.size() == 1 ? "" : "s")
     << (calibration.empty() ? " (random, seed " +
                                   std::to_string(autoKeepSeed) + ")"
                             : " from " + calibration)
     << "; error of the outputs against fp32 (rel = max abs error / max "
        "|fp32 output|)\n";
  os << llvm::format("  %-40s %12s %12s %10s  %s\n", "layer", "max abs err",
                     "rel err", "cosine", "decision");
  options.precision = precision;
  for (const std::string &layer : layers) {
    std::string decision;
    kiln::autokeep::Error e;
    if (llvm::is_contained(keepFp32Nodes, layer)) {
      decision = "fp32 (--keep-fp32-nodes)";
    } else {
      options.onlyNodes = {layer};
      std::string path =
          artifact("layer" + std::to_string(&layer - &layers[0]));
      kiln::autokeep::Outputs outputs;
      uint64_t convertedBefore = opsConvertedSoFar();
      if (!compileVariant(imported, options, cpuOptions, path) ||
          !kiln::autokeep::runArtifact(path, sets, outputs, error)) {
        if (!error.empty())
          llvm::errs() << "kiln-compile: --auto-keep: " << error << "\n";
        return false;
      }
      llvm::sys::fs::remove(path);
      e = kiln::autokeep::measure(reference, outputs);
      if (opsConvertedSoFar() == convertedBefore) {
        // Fusion gave the node's op another node's name (kiln.attention
        // takes the names of its softmax and second matmul): demoting that
        // node demotes this one too.
        decision = "- (no op of its own after fusion)";
      } else {
        bool keep = !(e.relative <= autoKeep);
        if (keep)
          autoKeptNodes.push_back(layer);
        decision = keep ? "fp32 (kept)" : std::string(precision);
      }
    }
    os << llvm::format("  %-40s %12s %12s %10s  %s\n", layer.c_str(),
                       formatNumber(e.maxAbs, "%.3e").c_str(),
                       formatNumber(e.relative, "%.3e").c_str(),
                       formatNumber(e.cosine, "%.6f").c_str(),
                       decision.c_str());
  }
  options.onlyNodes.clear();
  for (const std::string &node : autoKeptNodes)
    options.keepNodes.push_back(node);
  std::string finalPath = artifact("final");
  kiln::autokeep::Outputs outputs;
  if (!compileVariant(imported, options, cpuOptions, finalPath) ||
      !kiln::autokeep::runArtifact(finalPath, sets, outputs, error)) {
    if (!error.empty())
      llvm::errs() << "kiln-compile: --auto-keep: " << error << "\n";
    return false;
  }
  kiln::autokeep::Error e = kiln::autokeep::measure(reference, outputs);
  os << "  final model (" << precision << ", " << autoKeptNodes.size()
     << " of " << layers.size() << " layers kept in fp32): max abs err "
     << formatNumber(e.maxAbs, "%.3e") << ", rel err "
     << formatNumber(e.relative, "%.3e") << ", cosine "
     << formatNumber(e.cosine, "%.6f") << "\n";
  if (!autoKeptNodes.empty()) {
    os << "  kept: --keep-fp32-nodes=";
    for (size_t i = 0; i < autoKeptNodes.size(); ++i)
      os << (i ? "," : "") << autoKeptNodes[i];
    os << "\n";
  }
  return true;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  // --version names Kiln first (tools and reports read that line), then the
  // LLVM it was built against.
  cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "kiln-compile (Kiln) " << KILN_VERSION << "\n  built against LLVM "
       << LLVM_VERSION_STRING << "\n";
  });
  cl::ParseCommandLineOptions(argc, argv, "Kiln model compiler\n");

  DialectRegistry registry;
  kiln::registerImportDialects(registry);
  kiln::cpu::registerCpuBackendDialects(registry);
#ifdef KILN_HAVE_CUDA_TARGET
  kiln::cuda::registerCudaBackendDialects(registry);
  kiln::cuda::registerCudaBackendPasses();
#endif
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
  if (precision != "fp32" && precision != "fp16" && precision != "bf16") {
    llvm::errs() << "kiln-compile: --precision must be fp32, fp16 or bf16, "
                    "got '"
                 << precision << "'\n";
    return 1;
  }
  if (precision == "fp32" &&
      (!keepFp32.empty() || !keepFp32Nodes.empty() || precisionIO ||
       keepFp32Classes.getNumOccurrences() || autoKeep.getNumOccurrences())) {
    llvm::errs() << "kiln-compile: --keep-fp32, --keep-fp32-nodes, "
                    "--keep-fp32-classes, --precision-io and --auto-keep "
                    "need --precision=fp16 or bf16\n";
    return 1;
  }
  if (autoKeep.getNumOccurrences() && (autoKeep < 0 || precisionIO)) {
    llvm::errs() << "kiln-compile: --auto-keep takes a threshold >= 0 and "
                    "compares outputs in their declared types (no "
                    "--precision-io)\n";
    return 1;
  }
  if (calibration.getNumOccurrences() && autoKeep < 0) {
    llvm::errs() << "kiln-compile: --calibration is for --auto-keep\n";
    return 1;
  }
  // `-o model.kiln` compiles all the way; '-' and *.mlir keep the IR.
  Emit mode = emit;
  StringRef outExt = llvm::sys::path::extension(outputPath);
  if (emit.getNumOccurrences() == 0 && outputPath != "-" && outExt != ".mlir" &&
      outExt != ".mlirbc")
    mode = Emit::Artifact;
  bool backend = mode == Emit::Linalg || mode == Emit::LLVMDialect ||
                 mode == Emit::LLVMIR || mode == Emit::Asm ||
                 mode == Emit::Obj || mode == Emit::SharedObject ||
                 mode == Emit::Artifact || mode == Emit::Ptx;
  StringRef cudaChip;
  if (StringRef(targetName).starts_with("cuda:")) {
#ifdef KILN_HAVE_CUDA_TARGET
    cudaChip = StringRef(targetName).drop_front(5);
    if (cudaChip != "sm_80" && cudaChip != "sm_89" && cudaChip != "sm_90") {
      llvm::errs() << "kiln-compile: --target=" << targetName
                   << ": unknown chip (cuda:sm_80, cuda:sm_89, cuda:sm_90)\n";
      return 1;
    }
    if (mode != Emit::Ptx) {
      llvm::errs() << "kiln-compile: --target=" << targetName
                   << ": only --emit=ptx is implemented for CUDA so far\n";
      return 1;
    }
#else
    llvm::errs() << "kiln-compile: --target=" << targetName
                 << ": this build has no CUDA target (CUDA toolkit or "
                    "MLIR's NVVM target missing at configure time)\n";
    return 1;
#endif
  } else if (mode == Emit::Ptx) {
    llvm::errs() << "kiln-compile: --emit=ptx needs --target=cuda:sm_XX\n";
    return 1;
  }
  if (backend && targetName != "cpu" && cudaChip.empty()) {
    llvm::errs() << "kiln-compile: --target=" << targetName
                 << ": unknown target (this build has: cpu)\n";
    return 1;
  }
  if (kernelStrategy != "codegen" && kernelStrategy != "library") {
    llvm::errs() << "kiln-compile: --kernels must be codegen or library, got '"
                 << kernelStrategy << "'\n";
    return 1;
  }
  kiln::cpu::CpuOptions cpuOptions;
  cpuOptions.cpu = cpuName;
  cpuOptions.kernels = kernelStrategy;
  cpuOptions.parallel = !noParallel;
  cpuOptions.profileHooks = profileHooks;

  OwningOpRef<ModuleOp> module = loadInput(context);
  if (!module)
    return 1;
  if (failed(verify(*module)))
    return 1;
  if (autoKeep >= 0 && !runAutoKeep(*module, cpuOptions))
    return 1;

  kiln::ModelStats before = kiln::collectModelStats(*module);
  bool runPipeline = mode != Emit::Kiln || summary || !reportPath.empty();
  // Declared before the pass manager: it prints the timing report when
  // destroyed, after the pipeline ran.
  DefaultTimingManager timing;
  TimingScope timingRoot;
  kiln::PassReport report;
  std::string graphPipeline;
  if (runPipeline) {
    auto pm = PassManager::on<ModuleOp>(&context);
    kiln::GraphPipelineOptions pipelineOptions;
    setPipelineOptions(pipelineOptions);
    // Kiln's fused ops are decomposed at the end of the graph pipeline for
    // the CPU: most have direct lowerings (lib/Conversion/KilnToLinalg/NN.cpp)
    // but kiln.linear_attention has none yet, and the channels-last
    // convolutions are not tiled by kiln-cpu-tile-and-vectorize nor called
    // in library mode: measured, the decomposed small CNN ran 5x faster.
    if (backend)
      pipelineOptions.decomposeFused = true;
    kiln::buildGraphPipeline(pm, pipelineOptions);
    if (backend && !embedWeights)
      pm.addPass(kiln::createKilnHoistWeights());
    {
      llvm::raw_string_ostream os(graphPipeline);
      pm.printAsTextualPipeline(os);
    }
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
        mode != Emit::Kiln ? OwningOpRef<ModuleOp>() : module->clone();
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
      os << "  IR (" << (mode == Emit::Kiln ? "kiln" : "graph")
         << ") written to: " << (outputPath == "-" ? std::string("<stdout>") : outputPath.getValue())
         << "\n";
    }
  }

#ifdef KILN_HAVE_CUDA_TARGET
  if (!cudaChip.empty())
    return compileCuda(*module, cudaChip, cpuOptions) ? 0 : 1;
#endif
  if (backend)
    return compileBackend(*module, mode, cpuOptions, graphPipeline,
                          outputPath)
               ? 0
               : 1;

  std::string error;
  auto output = openOutputFile(outputPath, &error);
  if (!output) {
    llvm::errs() << "kiln-compile: " << error << "\n";
    return 1;
  }
  if (mode == Emit::Onnx) {
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
