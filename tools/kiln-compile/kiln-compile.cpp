//===- kiln-compile.cpp - ONNX model to a runnable artifact ---------------===//
//
//   kiln-compile model.onnx -o model.kiln              the artifact (the default
//                                                      emit for a -o other than
//                                                      '-' and *.mlir)
//   kiln-compile model.onnx --emit=linalg|llvm|asm|obj -o f   a backend stage
//   kiln-compile model.onnx --target=cuda:sm_80 -o model.kiln   a CUDA
//       artifact (host .so + fatbin + kernel table); --emit=ptx|fatbin|llvm
//       for its stages (docs/cuda-backend.md)
//   kiln-compile model.onnx --emit=kiln -o -          the imported IR
//   kiln-compile model.onnx --emit=graph -o f.mlir    after the graph pipeline
//   kiln-compile model.onnx --emit=graph --summary -o f.mlir
//   kiln-compile model.onnx --emit=graph -O3 --disable-pass=kiln-fuse-attention
//       --report=passes.json --print-pipeline -o f.mlir
//   kiln-compile model.onnx --precision=fp16 [--auto-keep=T] -o model.kiln
//   kiln-compile model.onnx --precision=int8 --calibration=DIR
//       [--calibration-method=minmax|percentile|entropy]
//       [--emit-qdq-onnx=q.onnx] -o model.kiln    post-training quantization
//   kiln-compile model.onnx --precision=int8|fp16|bf16 ...
//       --accuracy-report=r.json [--holdout=DIR2]  against fp32, per output
//                                                   and per layer
//
// Output is written only when every step succeeded: a failed import leaves no
// half-written file behind.
//
//===----------------------------------------------------------------------===//

#include "AutoKeep.h"
#include "Calibrate.h"

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
#include "kiln/Transforms/Quantize.h"
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
#include "llvm/Support/JSON.h"
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
  Fatbin,
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
               clEnumValN(Emit::Fatbin, "fatbin",
                          "--target=cuda:sm_XX: the kernels' fatbin (the "
                          "artifact's cuda-fatbin section)"),
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
             "(the host code for this machine, the kernels for the chip)"),
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
             "kiln-convert-precision.md); int8: post-training quantization "
             "calibrated on --calibration=DIR (docs/quantization.md)"),
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
             "errors and decisions, then compiles the model with them. With "
             "--precision=int8: each quantized layer is quantized alone, "
             "after calibration"),
    cl::value_desc("threshold"), cl::init(-1.0), cl::cat(category));
cl::opt<std::string> calibration(
    "calibration",
    cl::desc("Representative inputs for --precision=int8 (required), "
             "--auto-keep and --accuracy-report: DIR/input_N.npy or .pb, or "
             "DIR/<input name>.npy (one set), or subfolders of DIR holding "
             "them, e.g. test_data_set_N (one set each); default for "
             "--auto-keep and --accuracy-report: --auto-keep-sets sets of "
             "seeded random inputs"),
    cl::value_desc("dir"), cl::cat(category));
cl::opt<std::string> calibrationMethod(
    "calibration-method",
    cl::desc("--precision=int8: how an activation's range is taken from its "
             "calibration values: minmax (default), percentile (of |x|, "
             "--percentile) or entropy (TensorRT's KL-divergence threshold, "
             "2048 bins)"),
    cl::init("minmax"), cl::cat(category));
cl::opt<double> percentileValue(
    "percentile",
    cl::desc("--calibration-method=percentile: the percentile of |x| that "
             "clips the range (default 99.99)"),
    cl::init(99.99), cl::cat(category));
cl::opt<std::string> activationType(
    "activation-type",
    cl::desc("--precision=int8: int8 (default, asymmetric, as "
             "onnxruntime's QDQ quantize_static) or uint8 activations"),
    cl::init("int8"), cl::cat(category));
cl::opt<bool> activationSymmetric(
    "activation-symmetric",
    cl::desc("--precision=int8: symmetric activation ranges (int8: zero "
             "point 0 in [-127, 127]; uint8: zero point 128)"),
    cl::cat(category));
cl::list<std::string> quantizeOps(
    "quantize-ops",
    cl::desc("--precision=int8: the ONNX op types quantized (default "
             "MatMul,Gemm; Conv: integer convolutions for group 1, "
             "grouped ones int8 numerics at float speed)"),
    cl::CommaSeparated, cl::value_desc("op"), cl::cat(category));
cl::opt<std::string> emitQdqOnnx(
    "emit-qdq-onnx",
    cl::desc("--precision=int8: also write the quantized graph as a QDQ "
             "ONNX model (QuantizeLinear/DequantizeLinear, opset 21) that "
             "another runtime can run"),
    cl::value_desc("file.onnx"), cl::cat(category));
cl::opt<std::string> accuracyReport(
    "accuracy-report",
    cl::desc("With --precision other than fp32: compare against fp32 per "
             "output and per layer (max abs error, cosine similarity, top-1 "
             "agreement) on the calibration inputs and --holdout; print the "
             "table and write it as JSON"),
    cl::value_desc("file.json"), cl::cat(category));
cl::opt<std::string> holdout(
    "holdout",
    cl::desc("--accuracy-report: held-out inputs, laid out as --calibration"),
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
  // int8 is quantized before the pipeline (Q/DQ pairs that kiln-fuse-qdq
  // makes integer ops); the pipeline itself runs in fp32.
  options.precision = precision == "int8" ? "fp32" : precision.getValue();
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

/// The LLVM-dialect `module` as machine code for `options`' CPU: LLVM IR,
/// LLVM's optimizations, then an object file. For --emit=llvm|asm|obj the
/// output is written here (`written` set); false after an error (printed).
/// `what` names the code in errors ("--cpu=native", "the host code");
/// `target` is the resolved target (triple, CPU, features).
static bool compileMachineCode(ModuleOp module,
                               const kiln::cpu::CpuOptions &options,
                               Emit mode, StringRef what,
                               kiln::cpu::TargetInfo &target,
                               std::string &object, bool &written) {
  written = false;
  std::string error;
  if (!kiln::cpu::resolveTarget(options, target, error)) {
    llvm::errs() << "kiln-compile: " << what << ": " << error << "\n";
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
    written = true;
    return writeOutput(text);
  }
  if (!kiln::cpu::emitMachineCode(*llvmModule, *machine, mode == Emit::Asm,
                                  object, error)) {
    llvm::errs() << "kiln-compile: " << error << "\n";
    return false;
  }
  if (mode == Emit::Asm || mode == Emit::Obj) {
    written = true;
    return writeOutput(object);
  }
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
/// The bytes of the gpu.binary @kiln_kernels (PTX text or fatbin).
static std::string kernelBinary(ModuleOp module) {
  std::string bytes;
  for (auto binary : module.getOps<gpu::BinaryOp>())
    for (auto object : binary.getObjects().getAsRange<gpu::ObjectAttr>())
      bytes += object.getObject().getValue().str();
  return bytes;
}

static std::string formatNumber(double v, const char *format);

/// What every artifact records the same way, CPU or CUDA: the compiler,
/// the source, the precision options, both pipelines, the signature (with
/// the weights' bytes), the kernel table and the code.
static void describeArtifact(kiln::ArtifactSpec &spec, ModuleOp module,
                             const kiln::ModelSignature &signature,
                             PassManager &pm, const std::string &graphPipeline,
                             const std::string &code) {
  spec.compilerVersion = KILN_VERSION;
  spec.source = inputPath;
  spec.setOption("opt_level", int64_t(optLevel));
  spec.setOption("embed_weights", bool(embedWeights));
  spec.setOption("precision", precision);
  if (autoKeep >= 0)
    spec.setOption("auto_keep", std::to_string(autoKeep.getValue()));
  if (precision == "int8") {
    spec.setOption("calibration_method", calibrationMethod);
    if (calibrationMethod == "percentile")
      spec.setOption("percentile", formatNumber(percentileValue, "%g"));
    spec.setOption("activation_type", activationType);
  }
  std::string backendPipeline;
  llvm::raw_string_ostream pipelineOs(backendPipeline);
  pm.printAsTextualPipeline(pipelineOs);
  spec.pipeline = graphPipeline + " ; " + backendPipeline;
  for (const kiln::TensorSpec &t : signature.inputs)
    spec.inputs.push_back({t.name, t.dtype, t.shape});
  for (const kiln::TensorSpec &t : signature.outputs)
    spec.outputs.push_back({t.name, t.dtype, t.shape});
  for (const kiln::WeightSpec &w : signature.weights)
    spec.weights.push_back(
        {w.name, w.dtype, w.shape, w.bytes.data(), uint64_t(w.bytes.size())});
  // The runtime resolves the table's kernels at session creation (CUDA: in
  // the fatbin): the table is written with or without the profiling hooks.
  spec.kernelsJson = kiln::cpu::kernelTableJson(module);
  spec.code = code.data();
  spec.codeSize = code.size();
}

/// --target=cuda:sm_XX: linalg -> kernels (PTX or fatbin) and, past
/// --emit=ptx|fatbin, the host code on device memory (HostCode.cpp) down to
/// the artifact: the host .so, the fatbin and the kernel table
/// (docs/cuda-backend.md).
static bool compileCuda(ModuleOp module, Emit mode, StringRef chip,
                        const kiln::cpu::CpuOptions &options,
                        const std::string &graphPipeline,
                        const std::string &artifactPath) {
  FailureOr<kiln::ModelSignature> signature;
  if (mode == Emit::Artifact) {
    signature = kiln::collectSignature(module);
    if (failed(signature))
      return false;
  }
  auto pm = PassManager::on<ModuleOp>(module->getContext());
  kiln::cpu::buildLinalgPipeline(pm, options, /*hoistWeights=*/false);
  kiln::cuda::CudaOptions cudaOptions;
  cudaOptions.chip = chip.str();
  cudaOptions.format = mode == Emit::Ptx ? "isa" : "fatbin";
  cudaOptions.profileHooks = options.profileHooks;
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
  bool host = mode != Emit::Ptx && mode != Emit::Fatbin;
  if (host)
    kiln::cuda::buildCudaHostPipeline(pm, cudaOptions);
  if (printPipeline) {
    llvm::errs() << "kiln-compile: backend pipeline: ";
    pm.printAsTextualPipeline(llvm::errs());
    llvm::errs() << "\n";
  }
  if (printIRAfterAll) {
    module->getContext()->disableMultithreading();
    pm.enableIRPrinting(
        /*shouldPrintBeforePass=*/[](Pass *, Operation *) { return false; },
        /*shouldPrintAfterPass=*/[](Pass *, Operation *) { return true; },
        /*printModuleScope=*/true, /*printAfterOnlyOnChange=*/false);
  }
  // The kernel table of kiln-cuda-name-kernels, read before the host
  // lowering (which keeps it as kiln.kernels).
  if (failed(pm.run(module)))
    return false;
  if (mode == Emit::Ptx) {
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
  std::string fatbin = kernelBinary(module);
  // No binary is right only when every op became a library call (a lone
  // MatMul in --kernels=library): the artifact then has no fatbin section.
  bool allLibrary = false;
  if (auto table = module->getAttrOfType<ArrayAttr>("kiln.cuda.kernels"))
    allLibrary = !table.empty() &&
                 llvm::all_of(table.getAsRange<DictionaryAttr>(),
                              [](DictionaryAttr entry) {
                                auto lib = entry.getAs<BoolAttr>("library");
                                return lib && lib.getValue();
                              });
  if (fatbin.empty() && (!allLibrary || mode == Emit::Fatbin)) {
    llvm::errs() << "kiln-compile: the CUDA pipeline produced no kernel "
                 << (allLibrary ? "(every op is a library call)"
                                : "binary")
                 << "\n";
    return false;
  }
  if (mode == Emit::Fatbin)
    return writeOutput(fatbin);
  if (mode == Emit::LLVMDialect)
    return writeIR(module);

  // The host code runs on any x86-64 host: baseline features. The
  // gpu.binary becomes a global holding the fatbin and a constructor
  // calling mgpuModuleLoad; each launch mgpuModuleGetFunction(module, the
  // kernel table's name) and mgpuLaunchKernel (upstream's SelectObject).
  kiln::cpu::CpuOptions hostOptions = options;
  hostOptions.cpu = "generic";
  std::string code, error;
  bool written = false;
  kiln::cpu::TargetInfo target;
  if (!compileMachineCode(module, hostOptions, mode, "the host code", target,
                          code, written))
    return false;
  if (written)
    return true;
  std::string sharedObject, warning;
  if (!kiln::cuda::linkHostSharedObject(code, sharedObject, error, warning)) {
    llvm::errs() << "kiln-compile: " << error << "\n";
    return false;
  }
  if (!warning.empty())
    llvm::errs() << "kiln-compile: warning: " << warning << "\n";
  if (mode == Emit::SharedObject)
    return writeOutput(sharedObject);

  if (artifactPath == "-") {
    llvm::errs() << "kiln-compile: an artifact is not written to stdout; "
                    "give -o model.kiln\n";
    return false;
  }
  kiln::ArtifactSpec spec;
  describeArtifact(spec, module, *signature, pm, graphPipeline, sharedObject);
  spec.target.kind = "cuda";
  spec.target.chip = chip.str();
  spec.target.triple = target.triple;
  spec.setOption("target", std::string(targetName));
  spec.setOption("kernels", options.kernels);
  spec.setOption("profile_hooks", options.profileHooks);
  if (!fatbin.empty())
    spec.sections.push_back({"cuda-fatbin", "cuda-fatbin", fatbin.data(),
                             uint64_t(fatbin.size())});
  std::string writeError = kiln::writeArtifact(artifactPath, spec);
  if (!writeError.empty()) {
    llvm::errs() << "kiln-compile: " << writeError << "\n";
    return false;
  }
  return true;
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

  std::string code, error;
  bool written = false;
  kiln::cpu::TargetInfo target;
  if (!compileMachineCode(module, options, mode, "--cpu=" + options.cpu,
                          target, code, written))
    return false;
  if (written)
    return true;
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
  describeArtifact(spec, module, *signature, pm, graphPipeline, sharedObject);
  spec.target = {"cpu", target.triple, target.cpu, target.features};
  spec.setOption("kernels", options.kernels);
  spec.setOption("cpu", options.cpu);
  spec.setOption("parallel", options.parallel);
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
    llvm::errs() << "kiln-compile: --auto-keep: --calibration: " << error
                 << "\n";
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

//===----------------------------------------------------------------------===//
// --precision=int8: post-training quantization, and --accuracy-report
//===----------------------------------------------------------------------===//

static func::FuncOp mainFunction(ModuleOp module) {
  func::FuncOp entry;
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (fn.isPrivate() || fn.isExternal())
      continue;
    if (fn.getName() == "main")
      return fn;
    if (!entry)
      entry = fn;
  }
  return entry;
}

/// Appends `values` to `fn`'s results, named prefix + index: the tensors a
/// calibration or report run reads besides the model's outputs.
static void addOutputs(func::FuncOp fn, ArrayRef<Value> values,
                       StringRef prefix) {
  MLIRContext *context = fn.getContext();
  auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
  SmallVector<Attribute> resultAttrs;
  for (unsigned i = 0; i < fn.getNumResults(); ++i) {
    DictionaryAttr dict = fn.getResultAttrDict(i);
    resultAttrs.push_back(dict ? dict : DictionaryAttr::get(context));
  }
  SmallVector<Value> operands(ret.getOperands());
  SmallVector<Type> types(fn.getResultTypes());
  for (auto [i, v] : llvm::enumerate(values)) {
    operands.push_back(v);
    types.push_back(v.getType());
    NamedAttribute name(StringAttr::get(context, "kiln.name"),
                        StringAttr::get(context, prefix + Twine(i)));
    resultAttrs.push_back(DictionaryAttr::get(context, {name}));
  }
  ret->setOperands(operands);
  fn.setType(FunctionType::get(context, fn.getArgumentTypes(), types));
  fn.setAllResultAttrs(resultAttrs);
}

/// A temporary directory whose files are removed with it.
struct TempDir {
  SmallString<128> path;
  std::vector<std::string> files;
  bool create(StringRef prefix) {
    if (std::error_code ec =
            llvm::sys::fs::createUniqueDirectory(prefix, path)) {
      llvm::errs() << "kiln-compile: cannot create a temporary directory: "
                   << ec.message() << "\n";
      return false;
    }
    return true;
  }
  std::string file(const std::string &name) {
    SmallString<128> p(path);
    llvm::sys::path::append(p, name);
    files.push_back(std::string(p));
    return std::string(p);
  }
  ~TempDir() {
    for (const std::string &f : files)
      llvm::sys::fs::remove(f);
    if (!path.empty())
      llvm::sys::fs::remove(path);
  }
};

static kiln::QDQOptions qdqOptions() {
  kiln::QDQOptions options;
  if (!quantizeOps.empty())
    options.opTypes.assign(quantizeOps.begin(), quantizeOps.end());
  // --keep-fp32 by op type takes those types out of quantization.
  llvm::erase_if(options.opTypes, [](const std::string &type) {
    return llvm::any_of(keepFp32, [&](const std::string &keep) {
      return StringRef(keep).equals_insensitive(type);
    });
  });
  options.keepNodes.assign(keepFp32Nodes.begin(), keepFp32Nodes.end());
  options.activation.isUnsigned = activationType == "uint8";
  options.activation.symmetric = activationSymmetric;
  return options;
}

/// One layer of the quantization table.
struct QuantRow {
  std::string node, opType, skipReason;
  kiln::calib::Range range;
  kiln::quant::Params params;
};
static std::vector<QuantRow> quantRows;
static unsigned numCalibrationSets = 0;

static llvm::raw_ostream &reportStream() {
  return outputPath == "-" ? llvm::errs() : llvm::outs();
}

/// --precision=int8 --auto-keep=THRESHOLD: each layer quantized alone (the
/// others kept float), compiled and run on the calibration sets; a layer
/// whose outputs' max abs error against fp32, relative to the largest
/// |fp32 output|, is above THRESHOLD stays float (added to qdq.keepNodes
/// and autoKeptNodes). Prints the table, as for fp16/bf16.
static bool runInt8AutoKeep(ModuleOp module, kiln::QDQOptions &qdq,
                            const std::map<std::string, kiln::Range> &ranges,
                            const std::vector<kiln::QuantLayer> &layers,
                            const kiln::cpu::CpuOptions &cpuOptions) {
  llvm::raw_ostream &os = reportStream();
  TempDir dir;
  if (!dir.create("kiln-auto-keep"))
    return false;
  kiln::GraphPipelineOptions options;
  setPipelineOptions(options);
  options.decomposeFused = true;
  options.precision = "fp32";
  std::string refPath = dir.file("fp32.kiln");
  if (!compileVariant(module, options, cpuOptions, refPath))
    return false;
  std::vector<kiln::autokeep::InputSet> sets;
  kiln::autokeep::Outputs reference;
  std::string error;
  if (!kiln::autokeep::loadInputSets(refPath, calibration, 0, 0, sets,
                                     error) ||
      !kiln::autokeep::runArtifact(refPath, sets, reference, error)) {
    llvm::errs() << "kiln-compile: --auto-keep: " << error << "\n";
    return false;
  }
  std::vector<std::string> quantizable;
  for (const kiln::QuantLayer &layer : layers)
    if (layer.skipReason.empty())
      quantizable.push_back(layer.node);
  // Compiles `module` with the layers of `keep` in float and measures it.
  auto measureWith = [&](const std::vector<std::string> &keep,
                         const std::string &name,
                         kiln::autokeep::Error &e) {
    OwningOpRef<ModuleOp> copy = module.clone();
    kiln::QDQOptions o = qdq;
    o.keepNodes.insert(o.keepNodes.end(), keep.begin(), keep.end());
    std::string path = dir.file(name + ".kiln");
    kiln::autokeep::Outputs outputs;
    if (failed(kiln::insertQDQ(mainFunction(*copy), o, ranges)) ||
        !compileVariant(*copy, options, cpuOptions, path))
      return false;
    if (!kiln::autokeep::runArtifact(path, sets, outputs, error)) {
      llvm::errs() << "kiln-compile: --auto-keep: " << error << "\n";
      return false;
    }
    llvm::sys::fs::remove(path);
    e = kiln::autokeep::measure(reference, outputs);
    return true;
  };
  os << "kiln-compile: --auto-keep=" << autoKeep << ": " << quantizable.size()
     << " layers quantized to int8 one at a time, on " << sets.size()
     << " input set" << (sets.size() == 1 ? "" : "s") << " from "
     << calibration
     << "; error of the outputs against fp32 (rel = max abs error / max "
        "|fp32 output|)\n";
  os << llvm::format("  %-40s %12s %12s %10s  %s\n", "layer", "max abs err",
                     "rel err", "cosine", "decision");
  std::vector<std::string> kept;
  for (size_t i = 0; i < quantizable.size(); ++i) {
    std::vector<std::string> others;
    for (const std::string &n : quantizable)
      if (n != quantizable[i])
        others.push_back(n);
    kiln::autokeep::Error e;
    if (!measureWith(others, "layer" + std::to_string(i), e))
      return false;
    bool keep = !(e.relative <= autoKeep);
    if (keep)
      kept.push_back(quantizable[i]);
    os << llvm::format("  %-40s %12s %12s %10s  %s\n",
                       quantizable[i].c_str(),
                       formatNumber(e.maxAbs, "%.3e").c_str(),
                       formatNumber(e.relative, "%.3e").c_str(),
                       formatNumber(e.cosine, "%.6f").c_str(),
                       keep ? "float (kept)" : "int8");
  }
  kiln::autokeep::Error e;
  if (!measureWith(kept, "final", e))
    return false;
  os << "  final model (int8, " << kept.size() << " of " << quantizable.size()
     << " layers kept in float): max abs err "
     << formatNumber(e.maxAbs, "%.3e") << ", rel err "
     << formatNumber(e.relative, "%.3e") << ", cosine "
     << formatNumber(e.cosine, "%.6f") << "\n";
  if (!kept.empty()) {
    os << "  kept: --keep-fp32-nodes=";
    for (size_t i = 0; i < kept.size(); ++i)
      os << (i ? "," : "") << kept[i];
    os << "\n";
  }
  qdq.keepNodes.insert(qdq.keepNodes.end(), kept.begin(), kept.end());
  autoKeptNodes.insert(autoKeptNodes.end(), kept.begin(), kept.end());
  return true;
}

/// --precision=int8: runs the float graph on the calibration inputs with
/// every quantized layer's input as an extra output, takes each input's
/// range with the chosen observer, and inserts the Q/DQ pairs into
/// `module` (kiln::insertQDQ). Prints the table of layers, ranges, scales
/// and zero points.
static bool quantizeToInt8(ModuleOp module,
                           const kiln::cpu::CpuOptions &cpuOptions) {
  kiln::calib::Method method;
  kiln::calib::parseMethod(calibrationMethod, method);
  kiln::QDQOptions qdq = qdqOptions();
  func::FuncOp fn = mainFunction(module);
  if (!fn) {
    llvm::errs() << "kiln-compile: --precision=int8: no public function\n";
    return false;
  }
  std::vector<kiln::QuantLayer> layers = kiln::findQuantLayers(fn, qdq);
  // A keep list naming no layer is a typo, not a no-op.
  for (const std::string &node : keepFp32Nodes)
    if (llvm::none_of(layers, [&](const kiln::QuantLayer &l) {
          return l.node == node;
        })) {
      llvm::errs() << "kiln-compile: --keep-fp32-nodes: no MatMul, Gemm or "
                      "Conv node is named '"
                   << node << "'\n";
      return false;
    }

  // The calibration graph: a copy that also returns every observed tensor
  // (the graph inputs among them are read from the input sets).
  OwningOpRef<ModuleOp> calibrated = module.clone();
  func::FuncOp cfn = mainFunction(*calibrated);
  std::vector<kiln::QuantLayer> clayers = kiln::findQuantLayers(cfn, qdq);
  struct Source {
    bool isInput;
    unsigned index;
  };
  std::vector<int> sourceOf(layers.size(), -1);
  std::vector<Source> sources;
  std::vector<Value> observed;
  llvm::DenseMap<Value, int> seen;
  unsigned numOutputs = cfn.getNumResults();
  for (size_t i = 0; i < clayers.size(); ++i) {
    if (!clayers[i].skipReason.empty())
      continue;
    Value v = clayers[i].activation;
    auto it = seen.find(v);
    if (it != seen.end()) {
      sourceOf[i] = it->second;
      continue;
    }
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      sources.push_back({true, arg.getArgNumber()});
    } else {
      sources.push_back({false, numOutputs + unsigned(observed.size())});
      observed.push_back(v);
    }
    sourceOf[i] = int(sources.size()) - 1;
    seen[v] = sourceOf[i];
  }
  addOutputs(cfn, observed, "kiln.calibration.");

  llvm::raw_ostream &os = reportStream();
  std::map<std::string, kiln::Range> ranges;
  quantRows.clear();
  std::vector<kiln::autokeep::InputSet> sets;
  if (!sources.empty()) {
    TempDir dir;
    if (!dir.create("kiln-ptq"))
      return false;
    kiln::GraphPipelineOptions options;
    setPipelineOptions(options);
    options.decomposeFused = true;
    options.precision = "fp32";
    std::string path = dir.file("calibration.kiln");
    if (!compileVariant(*calibrated, options, cpuOptions, path))
      return false;
    std::string error;
    kiln::autokeep::Outputs outputs;
    if (!kiln::autokeep::loadInputSets(path, calibration, 0, 0, sets,
                                       error)) {
      llvm::errs() << "kiln-compile: --calibration: " << error << "\n";
      return false;
    }
    if (!kiln::autokeep::runArtifact(path, sets, outputs, error)) {
      llvm::errs() << "kiln-compile: --calibration: " << error << "\n";
      return false;
    }
    numCalibrationSets = sets.size();
    std::vector<kiln::calib::Range> sourceRanges(sources.size());
    for (size_t k = 0; k < sources.size(); ++k) {
      std::vector<const kiln::run::HostTensor *> values;
      for (size_t s = 0; s < sets.size(); ++s)
        values.push_back(sources[k].isInput
                             ? &sets[s].tensors[sources[k].index]
                             : &outputs[s][sources[k].index]);
      if (!kiln::calib::observe(values, method, percentileValue,
                                sourceRanges[k], error)) {
        std::string node;
        for (size_t i = 0; i < layers.size(); ++i)
          if (sourceOf[i] == int(k)) {
            node = layers[i].node;
            break;
          }
        llvm::errs() << "kiln-compile: --calibration: the input of ONNX "
                        "node '"
                     << node << "': " << error << "\n";
        return false;
      }
    }
    for (size_t i = 0; i < layers.size(); ++i)
      if (sourceOf[i] >= 0) {
        const kiln::calib::Range &r = sourceRanges[sourceOf[i]];
        ranges[layers[i].node] = {r.lo, r.hi};
      }
  }
  if (autoKeep >= 0) {
    if (!runInt8AutoKeep(module, qdq, ranges, layers, cpuOptions))
      return false;
    layers = kiln::findQuantLayers(fn, qdq);
  }
  for (size_t i = 0; i < layers.size(); ++i) {
    QuantRow row;
    row.node = layers[i].node;
    row.opType = layers[i].opType;
    row.skipReason = layers[i].skipReason;
    if (!row.skipReason.empty() &&
        llvm::is_contained(autoKeptNodes, row.node))
      row.skipReason = "kept in float (--auto-keep)";
    if (row.skipReason.empty()) {
      const kiln::Range &r = ranges[row.node];
      row.range.lo = r.min;
      row.range.hi = r.max;
      row.params = kiln::quant::activationParams(r.min, r.max, qdq.activation);
    }
    quantRows.push_back(row);
  }

  os << "kiln-compile: --precision=int8: " << layers.size() << " layer"
     << (layers.size() == 1 ? "" : "s") << ", calibrated on " << sets.size()
     << " input set" << (sets.size() == 1 ? "" : "s") << " from "
     << calibration << " (" << calibrationMethod;
  if (method == kiln::calib::Method::Percentile)
    os << " " << percentileValue;
  os << "; activations " << activationType
     << (activationSymmetric ? " symmetric" : " asymmetric")
     << " per tensor, weights int8 symmetric per output channel)\n";
  os << llvm::format("  %-32s %-7s %12s %12s %12s %5s  %s\n", "layer", "op",
                     "range lo", "range hi", "scale", "zp", "precision");
  for (const QuantRow &row : quantRows) {
    if (!row.skipReason.empty()) {
      os << llvm::format("  %-32s %-7s %12s %12s %12s %5s  float (%s)\n",
                         row.node.c_str(), row.opType.c_str(), "-", "-", "-",
                         "-", row.skipReason.c_str());
      continue;
    }
    os << llvm::format("  %-32s %-7s %12.5g %12.5g %12.5g %5lld  int8\n",
                       row.node.c_str(), row.opType.c_str(), row.range.lo,
                       row.range.hi, row.params.scale,
                       (long long)row.params.zeroPoint);
  }
  if (failed(kiln::insertQDQ(fn, qdq, ranges)))
    return false;

  if (!emitQdqOnnx.empty()) {
    std::string bytes;
    llvm::raw_string_ostream bytesOs(bytes);
    if (failed(kiln::exportOnnxModel(module, bytesOs)))
      return false;
    std::string error;
    auto file = openOutputFile(emitQdqOnnx, &error);
    if (!file) {
      llvm::errs() << "kiln-compile: " << error << "\n";
      return false;
    }
    file->os() << bytes;
    file->keep();
  }
  return true;
}

/// The layers an accuracy report measures: int8, every MatMul/Gemm/Conv
/// of the quantization table; fp16/bf16, those --auto-keep demotes.
static std::vector<std::pair<std::string, std::string>>
reportLayers(ModuleOp fp32) {
  std::vector<std::pair<std::string, std::string>> layers; // node, status
  if (precision == "int8") {
    for (const QuantRow &row : quantRows)
      layers.push_back({row.node, row.skipReason.empty()
                                      ? std::string("int8")
                                      : "float (" + row.skipReason + ")"});
    return layers;
  }
  for (const std::string &node : findLayers(fp32)) {
    bool kept = llvm::is_contained(keepFp32Nodes, node) ||
                llvm::is_contained(autoKeptNodes, node);
    layers.push_back({node, kept ? std::string("fp32 (kept)")
                                 : std::string(precision)});
  }
  return layers;
}

/// The result of the layer op named `node` (a MatMul, Gemm, Conv,
/// ConvTranspose or Einsum), or null.
static Value layerOutput(ModuleOp module, StringRef node) {
  Value result;
  module.walk([&](Operation *op) {
    StringRef name = op->getName().getStringRef();
    if (result || op->getNumResults() != 1 ||
        (name != "kiln.matmul" && name != "kiln.gemm" && name != "kiln.conv" &&
         name != "kiln.conv_transpose" && name != "kiln.einsum"))
      return;
    auto loc = op->getLoc()->findInstanceOf<NameLoc>();
    if (loc && loc.getName() == node)
      result = op->getResult(0);
  });
  return result;
}

static llvm::json::Value jsonNumber(double v) {
  if (!std::isfinite(v))
    return nullptr;
  return v;
}

static llvm::json::Object qualityJson(const kiln::run::Quality &q) {
  llvm::json::Object o;
  if (!q.comparable) {
    o["comparable"] = false;
    return o;
  }
  o["max_abs_error"] = jsonNumber(q.maxAbsError);
  o["max_rel_error"] = jsonNumber(q.maxRelError);
  o["cosine_similarity"] = jsonNumber(q.cosineSimilarity);
  o["elements"] = int64_t(q.count);
  o["non_finite"] = int64_t(q.nonFinite);
  if (q.top1Rows) {
    o["top1_agreement"] = jsonNumber(q.top1Agreement());
    o["top1_rows"] = int64_t(q.top1Rows);
  } else {
    o["top1_agreement"] = nullptr;
  }
  return o;
}

/// --accuracy-report: `fp32` (the imported graph) and `variant` (int8: the
/// QDQ graph; fp16/bf16: the imported graph, converted by the pipeline)
/// compiled twice each: once as they are (the outputs) and once also
/// returning every layer's output (the layers; an extra use keeps some
/// epilogues out of the layer's op, the arithmetic is the same), and run
/// on the calibration sets and the held-out sets.
static bool writeAccuracyReport(ModuleOp fp32, ModuleOp variant,
                                const kiln::cpu::CpuOptions &cpuOptions) {
  TempDir dir;
  if (!dir.create("kiln-accuracy"))
    return false;
  std::vector<std::pair<std::string, std::string>> layers = reportLayers(fp32);
  // Probed copies: the layers' outputs appended to the results.
  auto probed = [&](ModuleOp m, std::vector<std::string> &found) {
    OwningOpRef<ModuleOp> copy = m.clone();
    std::vector<Value> values;
    for (const auto &layer : layers) {
      Value v = layerOutput(*copy, layer.first);
      if (!v)
        continue;
      values.push_back(v);
      found.push_back(layer.first);
    }
    addOutputs(mainFunction(*copy), values, "kiln.layer.");
    return copy;
  };
  std::vector<std::string> refLayers, varLayers;
  OwningOpRef<ModuleOp> refProbed = probed(fp32, refLayers);
  OwningOpRef<ModuleOp> varProbed = probed(variant, varLayers);
  unsigned numOutputs = mainFunction(fp32).getNumResults();

  kiln::GraphPipelineOptions refOptions, varOptions;
  setPipelineOptions(refOptions);
  refOptions.decomposeFused = true;
  refOptions.precision = "fp32";
  setPipelineOptions(varOptions);
  varOptions.decomposeFused = true;
  std::string refPath = dir.file("fp32.kiln");
  std::string varProbedPath = dir.file("variant-layers.kiln");
  std::string varPath = dir.file("variant.kiln");
  if (!compileVariant(*refProbed, refOptions, cpuOptions, refPath) ||
      !compileVariant(*varProbed, varOptions, cpuOptions, varProbedPath) ||
      !compileVariant(variant, varOptions, cpuOptions, varPath))
    return false;

  struct Group {
    std::string name, source;
    std::vector<kiln::autokeep::InputSet> sets;
    kiln::autokeep::Outputs ref, probedOut, out;
  };
  std::vector<Group> groups(1);
  groups[0].name = "calibration";
  groups[0].source = calibration.empty() ? "random (seed " +
                                               std::to_string(autoKeepSeed) +
                                               ")"
                                         : calibration.getValue();
  if (!holdout.empty()) {
    groups.emplace_back();
    groups.back().name = "holdout";
    groups.back().source = holdout;
  }
  std::string error;
  for (Group &g : groups) {
    std::string dirName = g.name == "holdout" ? holdout.getValue()
                                              : calibration.getValue();
    if (!kiln::autokeep::loadInputSets(refPath, dirName, autoKeepSeed,
                                       autoKeepSets, g.sets, error) ||
        !kiln::autokeep::runArtifact(refPath, g.sets, g.ref, error) ||
        !kiln::autokeep::runArtifact(varProbedPath, g.sets, g.probedOut,
                                     error) ||
        !kiln::autokeep::runArtifact(varPath, g.sets, g.out, error)) {
      llvm::errs() << "kiln-compile: --accuracy-report ("
                   << (g.name == "holdout" ? "--holdout" : "--calibration")
                   << "): " << error << "\n";
      return false;
    }
  }

  llvm::raw_ostream &os = reportStream();
  os << "kiln-compile: --accuracy-report: " << precision
     << " against fp32 on";
  for (const Group &g : groups)
    os << (&g == &groups[0] ? " " : " and ") << g.name << " ("
       << g.sets.size() << " set" << (g.sets.size() == 1 ? "" : "s")
       << " from " << g.source << ")";
  os << "\n";
  os << llvm::format("  %-32s %-12s %-11s %12s %10s %8s  %s\n",
                     "output / layer", "precision", "inputs", "max abs err",
                     "cosine", "top-1", "");
  auto printRow = [&](const std::string &name, const std::string &status,
                      const std::string &group, const kiln::run::Quality &q) {
    os << llvm::format("  %-32s %-12s %-11s %12s %10s %8s\n", name.c_str(),
                       status.c_str(), group.c_str(),
                       q.comparable
                           ? formatNumber(q.maxAbsError, "%.3e").c_str()
                           : "-",
                       q.comparable
                           ? formatNumber(q.cosineSimilarity, "%.6f").c_str()
                           : "-",
                       q.top1Rows
                           ? formatNumber(q.top1Agreement(), "%.4f").c_str()
                           : "-");
  };

  llvm::json::Object root;
  root["model"] = inputPath.getValue();
  root["precision"] = precision.getValue();
  root["reference"] = "fp32";
  llvm::json::Array setsJson;
  for (const Group &g : groups)
    setsJson.push_back(llvm::json::Object{
        {"name", g.name}, {"source", g.source},
        {"sets", int64_t(g.sets.size())}});
  root["input_sets"] = std::move(setsJson);
  if (precision == "int8") {
    llvm::json::Object q;
    q["method"] = calibrationMethod.getValue();
    if (calibrationMethod == "percentile")
      q["percentile"] = percentileValue.getValue();
    q["activation_type"] = activationType.getValue();
    q["activation_symmetric"] = bool(activationSymmetric);
    llvm::json::Array rows;
    for (const QuantRow &row : quantRows) {
      llvm::json::Object r{{"node", row.node}, {"op", row.opType}};
      if (row.skipReason.empty()) {
        r["range"] = llvm::json::Array{double(row.range.lo),
                                       double(row.range.hi)};
        r["scale"] = double(row.params.scale);
        r["zero_point"] = row.params.zeroPoint;
      } else {
        r["skipped"] = row.skipReason;
      }
      rows.push_back(std::move(r));
    }
    q["layers"] = std::move(rows);
    root["quantization"] = std::move(q);
  }

  func::FuncOp fn = mainFunction(fp32);
  llvm::json::Array outputsJson;
  for (unsigned i = 0; i < numOutputs; ++i) {
    auto nameAttr = fn.getResultAttrOfType<StringAttr>(i, "kiln.name");
    std::string name =
        nameAttr ? nameAttr.str() : "output_" + std::to_string(i);
    llvm::json::Object o{{"name", name}};
    for (const Group &g : groups) {
      kiln::run::Quality q = kiln::autokeep::compareOutput(g.ref, g.out, i);
      printRow(&g == &groups[0] ? name : "", &g == &groups[0] ? "output" : "",
               g.name, q);
      o[g.name] = qualityJson(q);
    }
    outputsJson.push_back(std::move(o));
  }
  root["outputs"] = std::move(outputsJson);

  llvm::json::Array layersJson;
  for (const auto &[node, status] : layers) {
    auto r = llvm::find(refLayers, node), v = llvm::find(varLayers, node);
    llvm::json::Object o{{"node", node}, {"precision", status}};
    if (r == refLayers.end() || v == varLayers.end()) {
      o["comparable"] = false;
      layersJson.push_back(std::move(o));
      continue;
    }
    size_t ri = numOutputs + (r - refLayers.begin());
    size_t vi = numOutputs + (v - varLayers.begin());
    for (const Group &g : groups) {
      // Reference and variant hold the layer at their own index; compare
      // through one-output views.
      kiln::autokeep::Outputs a(g.sets.size()), b(g.sets.size());
      for (size_t s = 0; s < g.sets.size(); ++s) {
        a[s].push_back(g.ref[s][ri]);
        b[s].push_back(g.probedOut[s][vi]);
      }
      kiln::run::Quality q = kiln::autokeep::compareOutput(a, b, 0);
      std::string shown = status.size() > 12 ? status.substr(0, 5) : status;
      printRow(&g == &groups[0] ? node : "", &g == &groups[0] ? shown : "",
               g.name, q);
      o[g.name] = qualityJson(q);
    }
    layersJson.push_back(std::move(o));
  }
  root["layers"] = std::move(layersJson);

  std::string text;
  llvm::raw_string_ostream textOs(text);
  textOs << llvm::formatv("{0:2}", llvm::json::Value(std::move(root)))
         << "\n";
  auto file = openOutputFile(accuracyReport, &error);
  if (!file) {
    llvm::errs() << "kiln-compile: " << error << "\n";
    return false;
  }
  file->os() << text;
  file->keep();
  os << "  written to " << accuracyReport << "\n";
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
  if (precision != "fp32" && precision != "fp16" && precision != "bf16" &&
      precision != "int8") {
    llvm::errs() << "kiln-compile: --precision must be fp32, fp16, bf16 or "
                    "int8, got '"
                 << precision << "'\n";
    return 1;
  }
  bool int8 = precision == "int8";
  kiln::calib::Method method;
  if (!kiln::calib::parseMethod(calibrationMethod, method)) {
    llvm::errs() << "kiln-compile: --calibration-method must be minmax, "
                    "percentile or entropy, got '"
                 << calibrationMethod << "'\n";
    return 1;
  }
  if (activationType != "int8" && activationType != "uint8") {
    llvm::errs() << "kiln-compile: --activation-type must be int8 or uint8, "
                    "got '"
                 << activationType << "'\n";
    return 1;
  }
  if (!(percentileValue > 0 && percentileValue <= 100)) {
    llvm::errs() << "kiln-compile: --percentile must be in (0, 100]\n";
    return 1;
  }
  for (const std::string &op : quantizeOps)
    if (!StringRef(op).equals_insensitive("MatMul") &&
        !StringRef(op).equals_insensitive("Gemm") &&
        !StringRef(op).equals_insensitive("Conv")) {
      llvm::errs() << "kiln-compile: --quantize-ops: '" << op
                   << "' is not quantized (MatMul, Gemm, Conv)\n";
      return 1;
    }
  for (const std::string &op : keepFp32)
    if (int8 && !StringRef(op).equals_insensitive("MatMul") &&
        !StringRef(op).equals_insensitive("Gemm") &&
        !StringRef(op).equals_insensitive("Conv")) {
      llvm::errs() << "kiln-compile: --keep-fp32=" << op
                   << ": with --precision=int8 only MatMul, Gemm and Conv "
                      "are quantized (every other op stays float)\n";
      return 1;
    }
  if (int8 && calibration.empty()) {
    llvm::errs() << "kiln-compile: --precision=int8 needs --calibration=DIR "
                    "(representative inputs; docs/quantization.md)\n";
    return 1;
  }
  if (!int8 && (calibrationMethod.getNumOccurrences() ||
                percentileValue.getNumOccurrences() ||
                activationType.getNumOccurrences() ||
                activationSymmetric.getNumOccurrences() ||
                !quantizeOps.empty() || !emitQdqOnnx.empty())) {
    llvm::errs() << "kiln-compile: --calibration-method, --percentile, "
                    "--activation-type, --activation-symmetric, "
                    "--quantize-ops and --emit-qdq-onnx need "
                    "--precision=int8\n";
    return 1;
  }
  if (int8 && (keepFp32Classes.getNumOccurrences() || precisionIO)) {
    llvm::errs() << "kiln-compile: --keep-fp32-classes and --precision-io "
                    "are for --precision=fp16 or bf16 (int8 takes "
                    "--keep-fp32, --keep-fp32-nodes and --auto-keep)\n";
    return 1;
  }
  if (!accuracyReport.empty() && precision == "fp32") {
    llvm::errs() << "kiln-compile: --accuracy-report compares a "
                    "--precision (fp16, bf16, int8) against fp32\n";
    return 1;
  }
  if (!holdout.empty() && accuracyReport.empty()) {
    llvm::errs() << "kiln-compile: --holdout is for --accuracy-report\n";
    return 1;
  }
  if (precision == "fp32" &&
      (!keepFp32.empty() || !keepFp32Nodes.empty() || precisionIO ||
       keepFp32Classes.getNumOccurrences() || autoKeep.getNumOccurrences())) {
    llvm::errs() << "kiln-compile: --keep-fp32, --keep-fp32-nodes, "
                    "--keep-fp32-classes, --precision-io and --auto-keep "
                    "need --precision=fp16 or bf16 (--keep-fp32, "
                    "--keep-fp32-nodes and --auto-keep also "
                    "--precision=int8)\n";
    return 1;
  }
  if (autoKeep.getNumOccurrences() && (autoKeep < 0 || precisionIO)) {
    llvm::errs() << "kiln-compile: --auto-keep takes a threshold >= 0 and "
                    "compares outputs in their declared types (no "
                    "--precision-io)\n";
    return 1;
  }
  if (calibration.getNumOccurrences() && autoKeep < 0 && !int8 &&
      accuracyReport.empty()) {
    llvm::errs() << "kiln-compile: --calibration is for --precision=int8, "
                    "--auto-keep and --accuracy-report\n";
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
                 mode == Emit::Artifact || mode == Emit::Ptx ||
                 mode == Emit::Fatbin;
  StringRef cudaChip;
  if (StringRef(targetName).starts_with("cuda:")) {
#ifdef KILN_HAVE_CUDA_TARGET
    cudaChip = StringRef(targetName).drop_front(5);
    if (cudaChip != "sm_80" && cudaChip != "sm_89" && cudaChip != "sm_90") {
      llvm::errs() << "kiln-compile: --target=" << targetName
                   << ": unknown chip (cuda:sm_80, cuda:sm_89, cuda:sm_90)\n";
      return 1;
    }
    if (mode == Emit::Linalg) {
      llvm::errs() << "kiln-compile: --target=" << targetName
                   << ": --emit=linalg is the CPU lowering; the CUDA target "
                      "writes ptx, fatbin, llvm-dialect, llvm, asm, obj, so "
                      "or artifact\n";
      return 1;
    }
#else
    llvm::errs() << "kiln-compile: --target=" << targetName
                 << ": this build has no CUDA target (CUDA toolkit or "
                    "MLIR's NVVM target missing at configure time)\n";
    return 1;
#endif
  } else if (mode == Emit::Ptx || mode == Emit::Fatbin) {
    llvm::errs() << "kiln-compile: --emit="
                 << (mode == Emit::Ptx ? "ptx" : "fatbin")
                 << " needs --target=cuda:sm_XX\n";
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
  if (autoKeep >= 0 && !int8 && !runAutoKeep(*module, cpuOptions))
    return 1;
  // The float graph, for --accuracy-report.
  OwningOpRef<ModuleOp> fp32Module;
  if (!accuracyReport.empty())
    fp32Module = module->clone();
  if (int8 && !quantizeToInt8(*module, cpuOptions))
    return 1;
  if (!accuracyReport.empty() &&
      !writeAccuracyReport(*fp32Module, *module, cpuOptions))
    return 1;
  // --emit=onnx with --precision=int8: the QDQ graph, as --emit-qdq-onnx
  // writes it (the pipeline's integer ops have no ONNX form).
  if (int8 && mode == Emit::Onnx) {
    std::string bytes;
    llvm::raw_string_ostream bytesOs(bytes);
    if (failed(kiln::exportOnnxModel(*module, bytesOs)))
      return 1;
    return writeOutput(bytes) ? 0 : 1;
  }

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
    return compileCuda(*module, mode, cudaChip, cpuOptions, graphPipeline,
                       outputPath)
               ? 0
               : 1;
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
