//===- CompileOptions.h - Everything a Kiln compile is asked ----*- C++ -*-===//
//
// The options of one compile (kiln::Invocation), as a plain struct: enums,
// numbers and strings, no llvm::cl. kiln-compile maps its command line onto
// it (kiln/Driver/Flags.h); the C API and the Python package set it from
// flag strings or keyword arguments. validate() checks the combinations the
// command line used to check itself, with the same messages.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_DRIVER_COMPILEOPTIONS_H
#define KILN_DRIVER_COMPILEOPTIONS_H

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

/// How far a compile goes, and what Invocation::output() then holds.
enum class Stage {
  Kiln,        ///< the imported kiln IR (text or bytecode)
  Graph,       ///< kiln IR after the graph pipeline
  Onnx,        ///< an ONNX model of the graph after the pipeline
  Linalg,      ///< linalg/tensor IR (CPU)
  LLVMDialect, ///< the MLIR LLVM dialect, kiln_entry included
  LLVMIR,      ///< optimized LLVM IR
  Ptx,         ///< CUDA: the kernels' PTX, the kernel table as comments
  Fatbin,      ///< CUDA: the kernels' fatbin
  Asm,         ///< assembly for the target CPU (CUDA: the host code's)
  Obj,         ///< an object file
  SharedObject,///< the linked shared object (the artifact's code section)
  Artifact     ///< the model artifact the runtime loads
};

enum class Precision { FP32, FP16, BF16, Int8 };
enum class KernelStrategy { Auto, Codegen, Library };
enum class WeightLayout { KN, NK };
enum class CalibrationMethod { MinMax, Percentile, Entropy };
enum class ActivationType { Int8, UInt8 };

/// The spelling kiln-compile's flags use for each enum value ("graph",
/// "fp16", "library", ...), and the reverse (false for an unknown name).
const char *stageName(Stage stage);
bool parseStage(const std::string &name, Stage &stage);
const char *precisionName(Precision precision);
bool parsePrecision(const std::string &name, Precision &precision);
const char *kernelStrategyName(KernelStrategy kernels);
bool parseKernelStrategy(const std::string &name, KernelStrategy &kernels);
const char *calibrationMethodName(CalibrationMethod method);
bool parseCalibrationMethod(const std::string &name,
                            CalibrationMethod &method);

/// Whether `stage` runs the backend (lowering past the graph).
bool isBackendStage(Stage stage);

/// One --shape-hints entry (TensorRT's optimization profile): the smallest,
/// the typical and the largest size of a symbol (one value each), or of
/// every dim of an input (one value per dim, static dims as declared).
struct ShapeHint {
  std::vector<int64_t> min, opt, max;
};

struct CompileOptions {
  // --- Import ------------------------------------------------------------
  /// libonnx's checker (--no-onnx-check turns it off).
  bool onnxCheck = true;
  /// libonnx's version converter for opsets below 17 (--no-onnx-convert).
  bool onnxConvert = true;
  /// Initializers of at least this many bytes become dense_resource blobs.
  int64_t resourceThreshold = 1024;
  /// Static shapes for graph inputs by name (--input-shapes=name:2x16x256).
  std::map<std::string, std::vector<int64_t>> inputShapes;
  /// Ranges of the dynamic dims, by symbol or input name
  /// (--shape-hints=batch:1..1..8 or img:1x3x8x8..4x3x8x8..8x3x8x8): min
  /// and max become artifact constraints the runtime checks; opt (and a
  /// small max) pick the CPU kernels' tiling (kiln-cpu-specialize-shapes).
  std::map<std::string, ShapeHint> shapeHints;

  // --- Target ------------------------------------------------------------
  /// "cpu", or "cuda:sm_80" / "cuda:sm_89" / "cuda:sm_90".
  std::string target = "cpu";
  /// CPU to compile for: native, generic, or an LLVM CPU name.
  std::string cpu = "native";
  /// auto: codegen, with the float32 convolutions through oneDNN where
  /// Kiln was built with it.
  KernelStrategy kernels = KernelStrategy::Auto;
  /// Weights compiled into the code as constants (small models, --emit=so).
  bool embedWeights = false;
  /// Parallel loops on OpenMP threads.
  bool parallel = true;
  /// Profiling hooks around each kernel and the kernel table.
  bool profileHooks = true;
  /// Each kernel of @main in a function of its own, the same ones merged
  /// (cpu::CpuOptions::outlineKernels).
  bool outlineKernels = true;

  // --- Graph pipeline ----------------------------------------------------
  unsigned optLevel = 2;
  std::vector<std::string> disabledPasses;
  bool preferNHWC = false;
  WeightLayout matmulWeightLayout = WeightLayout::KN;
  int64_t foldSizeLimit = 1 << 22;
  bool decomposeFused = false;

  /// Tensor parallelism (kiln-shard-tensor-parallel): the group's size and
  /// the rank whose shard this compile makes (docs/cluster.md).
  int64_t tensorParallel = 0; ///< 0: not sharded; 1: a one-rank shard
  int64_t tensorParallelRank = 0;
  bool tensorParallelRankGiven = false;
  /// Follow the model's ONNX sharding annotations (IR version 11) when it
  /// has them (--tensor-parallel-plan=auto); false: infer the split from
  /// the graph alone (=inferred).
  bool tensorParallelAnnotations = true;

  // --- Precision ---------------------------------------------------------
  Precision precision = Precision::FP32;
  /// Op types kept in fp32 (ONNX or kiln names).
  std::vector<std::string> keepFp32;
  /// ONNX node names kept in fp32.
  std::vector<std::string> keepFp32Nodes;
  /// The default keep classes (comma-separated), fp16/bf16.
  std::string keepFp32Classes = "softmax,normalization,reduction,residual-add";
  /// Whether keepFp32Classes was given (int8 rejects it).
  bool keepFp32ClassesGiven = false;
  /// The model's float32 inputs and outputs take the half type too.
  bool precisionIO = false;
  /// Sensitivity analysis threshold (--auto-keep).
  std::optional<double> autoKeep;
  /// Representative inputs (int8 calibration, --auto-keep, reports).
  std::string calibrationDir;
  std::optional<CalibrationMethod> calibrationMethod;
  std::optional<double> percentile;
  std::optional<ActivationType> activationType;
  bool activationSymmetric = false;
  std::vector<std::string> quantizeOps;
  /// Also write the QDQ ONNX model here (int8).
  std::string emitQdqOnnx;
  /// Compare against fp32 per output and per layer; write JSON here.
  std::string accuracyReport;
  std::string holdoutDir;
  uint64_t autoKeepSeed = 0;
  unsigned autoKeepSets = 2;

  // --- Output and inspection --------------------------------------------
  /// Textual IR: large constants in full; op locations.
  bool keepConstants = false;
  bool printLocations = false;
  /// MLIR stages as bytecode.
  bool emitBytecode = false;
  /// The per-pass report (JSON) is collected (Invocation::passReport()).
  bool collectPassReport = false;
  /// Print the pipelines, the IR after every pass, pass timings or the
  /// statistics table to the invocation's debug stream.
  bool printPipeline = false;
  bool printIRAfterAll = false;
  bool timing = false;
  bool passStatistics = false;
  /// Ops by type before and after the graph pipeline, to the message stream.
  bool summary = false;

  // --- Derived ----------------------------------------------------------
  CalibrationMethod getCalibrationMethod() const {
    return calibrationMethod.value_or(CalibrationMethod::MinMax);
  }
  double getPercentile() const { return percentile.value_or(99.99); }
  ActivationType getActivationType() const {
    return activationType.value_or(ActivationType::Int8);
  }
  bool isCuda() const { return target.rfind("cuda:", 0) == 0; }
  std::string cudaChip() const { return isCuda() ? target.substr(5) : ""; }

  /// The combinations that make no sense, for a compile to `stage`: ""
  /// when the options are consistent, else the message (naming the flags
  /// as kiln-compile spells them).
  std::string validate(Stage stage) const;
};

} // namespace kiln

#endif // KILN_DRIVER_COMPILEOPTIONS_H
