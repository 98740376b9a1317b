//===- CompileOptions.cpp - Names of the options and their checks ---------===//

#include "kiln/Driver/CompileOptions.h"
#include "kiln/Pipelines/Pipelines.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"

using namespace kiln;
using llvm::StringRef;

namespace {
template <typename E> struct NamedValue {
  E value;
  const char *name;
};
constexpr NamedValue<Stage> kStages[] = {
    {Stage::Kiln, "kiln"},          {Stage::Graph, "graph"},
    {Stage::Onnx, "onnx"},          {Stage::Linalg, "linalg"},
    {Stage::LLVMDialect, "llvm-dialect"}, {Stage::LLVMIR, "llvm"},
    {Stage::Ptx, "ptx"},            {Stage::Fatbin, "fatbin"},
    {Stage::Asm, "asm"},            {Stage::Obj, "obj"},
    {Stage::SharedObject, "so"},    {Stage::Artifact, "artifact"}};
constexpr NamedValue<Precision> kPrecisions[] = {{Precision::FP32, "fp32"},
                                                 {Precision::FP16, "fp16"},
                                                 {Precision::BF16, "bf16"},
                                                 {Precision::Int8, "int8"}};
constexpr NamedValue<KernelStrategy> kKernels[] = {
    {KernelStrategy::Auto, "auto"},
    {KernelStrategy::Codegen, "codegen"},
    {KernelStrategy::Library, "library"}};
constexpr NamedValue<CalibrationMethod> kMethods[] = {
    {CalibrationMethod::MinMax, "minmax"},
    {CalibrationMethod::Percentile, "percentile"},
    {CalibrationMethod::Entropy, "entropy"}};

template <typename E, size_t N>
const char *nameOf(const NamedValue<E> (&table)[N], E value) {
  for (const NamedValue<E> &entry : table)
    if (entry.value == value)
      return entry.name;
  return "?";
}
template <typename E, size_t N>
bool parse(const NamedValue<E> (&table)[N], const std::string &name,
           E &value) {
  for (const NamedValue<E> &entry : table)
    if (name == entry.name) {
      value = entry.value;
      return true;
    }
  return false;
}
} // namespace

const char *kiln::stageName(Stage stage) { return nameOf(kStages, stage); }
bool kiln::parseStage(const std::string &name, Stage &stage) {
  return parse(kStages, name, stage);
}
const char *kiln::precisionName(Precision precision) {
  return nameOf(kPrecisions, precision);
}
bool kiln::parsePrecision(const std::string &name, Precision &precision) {
  return parse(kPrecisions, name, precision);
}
const char *kiln::kernelStrategyName(KernelStrategy kernels) {
  return nameOf(kKernels, kernels);
}
bool kiln::parseKernelStrategy(const std::string &name,
                               KernelStrategy &kernels) {
  return parse(kKernels, name, kernels);
}
const char *kiln::calibrationMethodName(CalibrationMethod method) {
  return nameOf(kMethods, method);
}
bool kiln::parseCalibrationMethod(const std::string &name,
                                  CalibrationMethod &method) {
  return parse(kMethods, name, method);
}

bool kiln::isBackendStage(Stage stage) {
  return stage != Stage::Kiln && stage != Stage::Graph &&
         stage != Stage::Onnx;
}

static bool isQuantizedOpType(StringRef op) {
  return op.equals_insensitive("MatMul") || op.equals_insensitive("Gemm") ||
         op.equals_insensitive("Conv");
}

std::string CompileOptions::validate(Stage stage) const {
  if (optLevel > 3)
    return "-O" + std::to_string(optLevel) + ": the levels are -O0 to -O3";
  if (tensorParallel < 0 || tensorParallelRank < 0 ||
      tensorParallelRank >= std::max<int64_t>(tensorParallel, 1))
    return "--tensor-parallel-rank=" + std::to_string(tensorParallelRank) +
           " is not a rank of --tensor-parallel=" +
           std::to_string(tensorParallel) + " (0 .. " +
           std::to_string(tensorParallel - 1) + ")";

  std::vector<std::string> known = getGraphPipelinePassNames();
  for (const std::string &name : disabledPasses) {
    if (llvm::is_contained(known, name))
      continue;
    std::string message = "--disable-pass: unknown pass '" + name +
                          "'; the graph pipeline's passes are:";
    for (const std::string &k : known)
      message += " " + k;
    return message;
  }
  bool int8 = precision == Precision::Int8;
  if (percentile && !(*percentile > 0 && *percentile <= 100))
    return "--percentile must be in (0, 100]";
  for (const std::string &op : quantizeOps)
    if (!isQuantizedOpType(op))
      return "--quantize-ops: '" + op +
             "' is not quantized (MatMul, Gemm, Conv)";
  for (const std::string &op : keepFp32)
    if (int8 && !isQuantizedOpType(op))
      return "--keep-fp32=" + op +
             ": with --precision=int8 only MatMul, Gemm and Conv are "
             "quantized (every other op stays float)";
  if (int8 && calibrationDir.empty())
    return "--precision=int8 needs --calibration=DIR (representative "
           "inputs; docs/quantization.md)";
  if (!int8 && (calibrationMethod || percentile || activationType ||
                activationSymmetric || !quantizeOps.empty() ||
                !emitQdqOnnx.empty()))
    return "--calibration-method, --percentile, --activation-type, "
           "--activation-symmetric, --quantize-ops and --emit-qdq-onnx need "
           "--precision=int8";
  if (int8 && (keepFp32ClassesGiven || precisionIO))
    return "--keep-fp32-classes and --precision-io are for --precision=fp16 "
           "or bf16 (int8 takes --keep-fp32, --keep-fp32-nodes and "
           "--auto-keep)";
  if (!accuracyReport.empty() && precision == Precision::FP32)
    return "--accuracy-report compares a --precision (fp16, bf16, int8) "
           "against fp32";
  if (!holdoutDir.empty() && accuracyReport.empty())
    return "--holdout is for --accuracy-report";
  if (precision == Precision::FP32 &&
      (!keepFp32.empty() || !keepFp32Nodes.empty() || precisionIO ||
       keepFp32ClassesGiven || autoKeep))
    return "--keep-fp32, --keep-fp32-nodes, --keep-fp32-classes, "
           "--precision-io and --auto-keep need --precision=fp16 or bf16 "
           "(--keep-fp32, --keep-fp32-nodes and --auto-keep also "
           "--precision=int8)";
  if (autoKeep && (*autoKeep < 0 || precisionIO))
    return "--auto-keep takes a threshold >= 0 and compares outputs in their "
           "declared types (no --precision-io)";
  if (!calibrationDir.empty() && !autoKeep && !int8 && accuracyReport.empty())
    return "--calibration is for --precision=int8, --auto-keep and "
           "--accuracy-report";

  for (const auto &[name, hint] : shapeHints)
    if (inputShapes.count(name))
      return "--shape-hints: input '" + name +
             "' has static shapes from --input-shapes";
  bool backend = isBackendStage(stage);
  if (isCuda() && !shapeHints.empty())
    return "--shape-hints: the CUDA target compiles static shapes only";
  if (isCuda()) {
#ifdef KILN_HAVE_CUDA_TARGET
    std::string chip = cudaChip();
    if (chip != "sm_80" && chip != "sm_89" && chip != "sm_90")
      return "--target=" + target +
             ": unknown chip (cuda:sm_80, cuda:sm_89, cuda:sm_90)";
    if (stage == Stage::Linalg)
      return "--target=" + target +
             ": --emit=linalg is the CPU lowering; the CUDA target writes "
             "ptx, fatbin, llvm-dialect, llvm, asm, obj, so or artifact";
#else
    return "--target=" + target +
           ": this build has no CUDA target (CUDA toolkit or MLIR's NVVM "
           "target missing at configure time)";
#endif
  } else if (stage == Stage::Ptx || stage == Stage::Fatbin) {
    return std::string("--emit=") + stageName(stage) +
           " needs --target=cuda:sm_XX";
  }
  if (backend && target != "cpu" && !isCuda())
    return "--target=" + target + ": unknown target (this build has: cpu)";
  return "";
}
