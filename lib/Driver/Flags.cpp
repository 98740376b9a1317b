//===- Flags.cpp - The compile flags' table and its two front ends --------===//

#include "kiln/Driver/Flags.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

using namespace kiln;
using llvm::StringRef;
namespace cl = llvm::cl;

namespace {
std::string parseBool(const std::string &value, bool &out,
                      const char *name) {
  StringRef v(value);
  if (v.empty() || v == "true" || v == "1" || v == "TRUE" || v == "True")
    out = true;
  else if (v == "false" || v == "0" || v == "FALSE" || v == "False")
    out = false;
  else
    return std::string("--") + name + ": expected true or false, got '" +
           value + "'";
  return "";
}
template <typename T>
std::string parseNumber(const std::string &value, T &out, const char *name) {
  StringRef v(value);
  if constexpr (std::is_floating_point_v<T>) {
    double d;
    if (v.getAsDouble(d))
      return std::string("--") + name + ": expected a number, got '" +
             value + "'";
    out = T(d);
  } else {
    if (v.getAsInteger(10, out))
      return std::string("--") + name + ": expected an integer, got '" +
             value + "'";
  }
  return "";
}

/// name:d0xd1x... (--input-shapes).
std::string parseInputShape(CompileOptions &o, const std::string &spec) {
  auto [name, dims] = StringRef(spec).rsplit(':');
  std::vector<int64_t> shape;
  llvm::SmallVector<StringRef> parts;
  dims.split(parts, 'x');
  bool ok = !name.empty() && !dims.empty() && name != spec;
  for (StringRef part : parts) {
    int64_t d;
    if (!ok || part.getAsInteger(10, d)) {
      ok = false;
      break;
    }
    shape.push_back(d);
  }
  if (!ok)
    return "--input-shapes: expected name:d0xd1x..., got '" + spec + "'";
  o.inputShapes[name.str()] = std::move(shape);
  return "";
}

/// name:min..opt..max, each a size (a symbol) or d0xd1x... (an input's
/// dims) (--shape-hints).
std::string parseShapeHint(CompileOptions &o, const std::string &spec) {
  auto [name, range] = StringRef(spec).rsplit(':');
  std::string usage = "--shape-hints: expected name:min..opt..max (a "
                      "symbol's sizes, or an input's d0xd1x... shapes), got '" +
                      spec + "'";
  if (name.empty() || range.empty() || name == spec)
    return usage;
  llvm::SmallVector<StringRef> bounds;
  range.split(bounds, "..");
  if (bounds.size() != 3)
    return usage;
  ShapeHint hint;
  std::vector<int64_t> *fields[] = {&hint.min, &hint.opt, &hint.max};
  for (int i = 0; i < 3; ++i) {
    llvm::SmallVector<StringRef> parts;
    bounds[i].split(parts, 'x');
    for (StringRef part : parts) {
      int64_t d;
      if (part.getAsInteger(10, d) || d < 1)
        return usage + " (sizes are integers >= 1)";
      fields[i]->push_back(d);
    }
  }
  if (hint.min.size() != hint.opt.size() ||
      hint.min.size() != hint.max.size())
    return "--shape-hints: '" + spec +
           "': min, opt and max must have as many dims";
  for (size_t d = 0; d < hint.min.size(); ++d)
    if (hint.min[d] > hint.opt[d] || hint.opt[d] > hint.max[d])
      return "--shape-hints: '" + spec + "': min <= opt <= max does not hold";
  o.shapeHints[name.str()] = std::move(hint);
  return "";
}

#define BOOL_FLAG(NAME, FIELD, HELP)                                           \
  {CompileFlag::Bool, NAME, "", HELP,                                          \
   [](CompileOptions &o, const std::string &v) {                               \
     return parseBool(v, o.FIELD, NAME);                                       \
   }}

const CompileFlag kFlags[] = {
    {CompileFlag::Value, "target", "",
     "Code generation target: cpu, or cuda:sm_80|sm_89|sm_90 (the host "
     "code for this machine, the kernels for the chip)",
     [](CompileOptions &o, const std::string &v) {
       o.target = v;
       return std::string();
     }},
    {CompileFlag::Value, "cpu", "",
     "CPU to compile for: native (the host, its AVX2/AVX-512), generic (any "
     "x86-64) or an LLVM CPU name",
     [](CompileOptions &o, const std::string &v) {
       o.cpu = v;
       return std::string();
     }},
    {CompileFlag::Value, "kernels", "",
     "auto (default: codegen, with the float32 convolutions through oneDNN "
     "where Kiln is built with it), codegen (MLIR-generated loops) or "
     "library (OpenBLAS GEMM for matmuls and convolutions; with "
     "--target=cuda, cuBLASLt GEMMs through kiln_rt_cuda_gemm; auto is "
     "codegen there)",
     [](CompileOptions &o, const std::string &v) {
       if (!parseKernelStrategy(v, o.kernels))
         return "--kernels must be auto, codegen or library, got '" + v + "'";
       return std::string();
     }},
    BOOL_FLAG("embed-weights", embedWeights,
              "Compile the weights into the code as constants instead of "
              "the artifact's weights section (small models, --emit=so)"),
    {CompileFlag::Bool, "no-parallel", "", "Do not run loops on OpenMP threads",
     [](CompileOptions &o, const std::string &v) {
       bool off = false;
       std::string error = parseBool(v, off, "no-parallel");
       o.parallel = !off;
       return error;
     }},
    BOOL_FLAG("profile-hooks", profileHooks,
              "Bracket each kernel with the profiling hooks kiln-run "
              "--profile reads, and record the kernel table in the artifact "
              "(on by default; --profile-hooks=false leaves them out)"),
    BOOL_FLAG("outline-kernels", outlineKernels,
              "CPU: compile each kernel as a function of its own and the "
              "kernels that are the same code (every layer's copy) once (on "
              "by default; --outline-kernels=false keeps them in one function, "
              "for compile-time and code studies)"),
    BOOL_FLAG("summary", summary,
              "Print ops by type before and after the graph pipeline, "
              "parameter counts, and where the IR was written"),
    BOOL_FLAG("keep-constants", keepConstants,
              "Print large constants in full (by default blobs over 1 KiB "
              "are elided in textual output)"),
    BOOL_FLAG("print-locations", printLocations,
              "Print op locations (the ONNX node names) in textual output"),
    BOOL_FLAG("emit-bytecode", emitBytecode,
              "Write MLIR bytecode (constants in full)"),
    {CompileFlag::Bool, "no-onnx-check", "", "Skip libonnx's model checker",
     [](CompileOptions &o, const std::string &v) {
       bool off = false;
       std::string error = parseBool(v, off, "no-onnx-check");
       o.onnxCheck = !off;
       return error;
     }},
    {CompileFlag::Bool, "no-onnx-convert", "",
     "Do not upgrade opsets below 17 with libonnx's version converter (the "
     "importer normalizes older forms itself)",
     [](CompileOptions &o, const std::string &v) {
       bool off = false;
       std::string error = parseBool(v, off, "no-onnx-convert");
       o.onnxConvert = !off;
       return error;
     }},
    {CompileFlag::Prefix, "O", "",
     "Graph optimization level for --emit=graph (-O0 none, -O1 "
     "folding/CSE/DCE, -O2 (default) plus fusion and layout, -O3 plus NHWC "
     "convolutions)",
     [](CompileOptions &o, const std::string &v) {
       std::string error = parseNumber(v, o.optLevel, "O");
       if (error.empty() && o.optLevel > 3)
         error = "-O" + v + ": the levels are -O0 to -O3";
       return error;
     }},
    {CompileFlag::List, "disable-pass", "name",
     "Leave this pass (its kiln-opt flag) out of the pipeline; repeatable or "
     "comma-separated",
     [](CompileOptions &o, const std::string &v) {
       o.disabledPasses.push_back(v);
       return std::string();
     }},
    BOOL_FLAG("prefer-nhwc", preferNHWC,
              "Channels-last convolution and pooling (on at -O3)"),
    {CompileFlag::Value, "matmul-weight-layout", "",
     "How constant matmul weights are stored: kn (as in ONNX) or nk",
     [](CompileOptions &o, const std::string &v) {
       if (v == "kn")
         o.matmulWeightLayout = WeightLayout::KN;
       else if (v == "nk")
         o.matmulWeightLayout = WeightLayout::NK;
       else
         return "--matmul-weight-layout must be kn or nk, got '" + v + "'";
       return std::string();
     }},
    {CompileFlag::Value, "fold-size-limit", "",
     "Largest constant kiln-constant-fold creates, in bytes",
     [](CompileOptions &o, const std::string &v) {
       return parseNumber(v, o.foldSizeLimit, "fold-size-limit");
     }},
    {CompileFlag::Value, "tensor-parallel", "",
     "Split the model's transformer blocks over N ranks (Megatron-style: "
     "column-parallel QKV/up/gate, row-parallel output/down, an "
     "all-reduce after each; docs/cluster.md): one artifact per rank, "
     "run under mpirun -n N. Without --tensor-parallel-rank every rank is "
     "compiled and -o must contain {rank}",
     [](CompileOptions &o, const std::string &v) {
       return parseNumber(v, o.tensorParallel, "tensor-parallel");
     }},
    {CompileFlag::Value, "tensor-parallel-rank", "",
     "With --tensor-parallel=N: compile only this rank's artifact (0 .. N-1)",
     [](CompileOptions &o, const std::string &v) {
       o.tensorParallelRankGiven = true;
       return parseNumber(v, o.tensorParallelRank, "tensor-parallel-rank");
     }},
    {CompileFlag::Value, "tensor-parallel-plan", "",
     "auto (default): split as the model's ONNX sharding annotations say "
     "(IR version 11, the configuration of N devices) when it has them, "
     "else as Kiln infers from the graph; inferred: ignore the "
     "annotations",
     [](CompileOptions &o, const std::string &v) -> std::string {
       if (v != "auto" && v != "inferred")
         return "--tensor-parallel-plan: '" + v +
                "' is not one of auto, inferred";
       o.tensorParallelAnnotations = v == "auto";
       return "";
     }},
    BOOL_FLAG("decompose-fused", decomposeFused,
              "Decompose Kiln's fused ops back into plain ops at the end"),
    BOOL_FLAG("print-pipeline", printPipeline,
              "Print the pass pipeline (replayable with kiln-opt "
              "--pass-pipeline=...) to stderr"),
    BOOL_FLAG("print-ir-after-all", printIRAfterAll,
              "Print the IR after every pass (stderr)"),
    BOOL_FLAG("mlir-timing", timing, "Print the time each pass took (stderr)"),
    BOOL_FLAG("pass-statistics", passStatistics,
              "Print every pass's statistics (stderr)"),
    {CompileFlag::List, "input-shapes", "name:d0xd1x...",
     "Static shapes for graph inputs, e.g. hidden_states:2x16x256 "
     "(comma-separated for several)",
     parseInputShape},
    {CompileFlag::List, "shape-hints", "name:min..opt..max",
     "Sizes the dynamic dims take, like TensorRT's optimization profiles: by "
     "symbol (batch:1..1..8,seq:1..128..512) or by input, one shape each "
     "(img:1x3x224x224..4x3x224x224..8x3x224x224). The runtime rejects a "
     "run outside min..max (artifact constraints); CPU contractions and "
     "convolutions get static kernels for opt, or for every size when "
     "min..max holds at most 4 (the other sizes run the dynamic code)",
     parseShapeHint},
    {CompileFlag::Value, "precision", "",
     "fp32 (default: unchanged), fp16 or bf16: convert float32 weights and "
     "computation to the half type, keeping softmax, normalizations, "
     "accumulating reductions and residual adds in fp32 "
     "(kiln-convert-precision; docs/passes/kiln-convert-precision.md); int8: "
     "post-training quantization calibrated on --calibration=DIR "
     "(docs/quantization.md)",
     [](CompileOptions &o, const std::string &v) {
       if (!parsePrecision(v, o.precision))
         return "--precision must be fp32, fp16, bf16 or int8, got '" + v +
                "'";
       return std::string();
     }},
    {CompileFlag::List, "keep-fp32", "op",
     "With --precision: more op types kept in fp32, ONNX op types (Softmax, "
     "LayerNormalization, MatMul) or kiln op names (rms_norm, swiglu); "
     "comma-separated",
     [](CompileOptions &o, const std::string &v) {
       o.keepFp32.push_back(v);
       return std::string();
     }},
    {CompileFlag::List, "keep-fp32-nodes", "node",
     "With --precision: ONNX node names kept in fp32 (e.g. "
     "/layers.0/mlp/MatMul); comma-separated",
     [](CompileOptions &o, const std::string &v) {
       o.keepFp32Nodes.push_back(v);
       return std::string();
     }},
    {CompileFlag::Value, "keep-fp32-classes", "",
     "With --precision: the default keep classes, any of softmax, "
     "normalization, reduction, residual-add, or none",
     [](CompileOptions &o, const std::string &v) {
       o.keepFp32Classes = v;
       o.keepFp32ClassesGiven = true;
       return std::string();
     }},
    BOOL_FLAG("precision-io", precisionIO,
              "With --precision: the model's float32 inputs and outputs take "
              "the half type too (by default they keep their declared types "
              "and are cast at the boundary)"),
    {CompileFlag::Value, "auto-keep", "threshold",
     "With --precision: sensitivity analysis. Each layer (ONNX MatMul, Gemm, "
     "Conv, ConvTranspose, Einsum node) is demoted alone, compiled and run "
     "on the CPU; a layer whose outputs' max abs error against fp32, "
     "relative to the largest |fp32 output|, is above THRESHOLD stays fp32. "
     "Prints the table of layers, errors and decisions, then compiles the "
     "model with them. With --precision=int8: each quantized layer is "
     "quantized alone, after calibration",
     [](CompileOptions &o, const std::string &v) {
       double t;
       std::string error = parseNumber(v, t, "auto-keep");
       o.autoKeep = t;
       return error;
     }},
    {CompileFlag::Value, "calibration", "dir",
     "Representative inputs for --precision=int8 (required), --auto-keep "
     "and --accuracy-report: DIR/input_N.npy or .pb, or DIR/<input "
     "name>.npy (one set), or subfolders of DIR holding them, e.g. "
     "test_data_set_N (one set each); default for --auto-keep and "
     "--accuracy-report: --auto-keep-sets sets of seeded random inputs",
     [](CompileOptions &o, const std::string &v) {
       o.calibrationDir = v;
       return std::string();
     }},
    {CompileFlag::Value, "calibration-method", "",
     "--precision=int8: how an activation's range is taken from its "
     "calibration values: minmax (default), percentile (of |x|, "
     "--percentile) or entropy (TensorRT's KL-divergence threshold, 2048 "
     "bins)",
     [](CompileOptions &o, const std::string &v) {
       CalibrationMethod method;
       if (!parseCalibrationMethod(v, method))
         return "--calibration-method must be minmax, percentile or "
                "entropy, got '" +
                v + "'";
       o.calibrationMethod = method;
       return std::string();
     }},
    {CompileFlag::Value, "percentile", "",
     "--calibration-method=percentile: the percentile of |x| that clips the "
     "range (default 99.99)",
     [](CompileOptions &o, const std::string &v) {
       double p;
       std::string error = parseNumber(v, p, "percentile");
       o.percentile = p;
       return error;
     }},
    {CompileFlag::Value, "activation-type", "",
     "--precision=int8: int8 (default, asymmetric, as onnxruntime's QDQ "
     "quantize_static) or uint8 activations",
     [](CompileOptions &o, const std::string &v) {
       if (v == "int8")
         o.activationType = ActivationType::Int8;
       else if (v == "uint8")
         o.activationType = ActivationType::UInt8;
       else
         return "--activation-type must be int8 or uint8, got '" + v + "'";
       return std::string();
     }},
    BOOL_FLAG("activation-symmetric", activationSymmetric,
              "--precision=int8: symmetric activation ranges (int8: zero "
              "point 0 in [-127, 127]; uint8: zero point 128)"),
    {CompileFlag::List, "quantize-ops", "op",
     "--precision=int8: the ONNX op types quantized (default MatMul,Gemm; "
     "Conv: integer convolutions for group 1, grouped ones int8 numerics at "
     "float speed)",
     [](CompileOptions &o, const std::string &v) {
       o.quantizeOps.push_back(v);
       return std::string();
     }},
    {CompileFlag::Value, "emit-qdq-onnx", "file.onnx",
     "--precision=int8: also write the quantized graph as a QDQ ONNX model "
     "(QuantizeLinear/DequantizeLinear, opset 21) that another runtime can "
     "run",
     [](CompileOptions &o, const std::string &v) {
       o.emitQdqOnnx = v;
       return std::string();
     }},
    {CompileFlag::Value, "accuracy-report", "file.json",
     "With --precision other than fp32: compare against fp32 per output and "
     "per layer (max abs error, cosine similarity, top-1 agreement) on the "
     "calibration inputs and --holdout; print the table and write it as "
     "JSON",
     [](CompileOptions &o, const std::string &v) {
       o.accuracyReport = v;
       return std::string();
     }},
    {CompileFlag::Value, "holdout", "dir",
     "--accuracy-report: held-out inputs, laid out as --calibration",
     [](CompileOptions &o, const std::string &v) {
       o.holdoutDir = v;
       return std::string();
     }},
    {CompileFlag::Value, "auto-keep-seed", "",
     "Seed of --auto-keep's random inputs (kiln-run --seed's generator; set "
     "s uses seed + s)",
     [](CompileOptions &o, const std::string &v) {
       return parseNumber(v, o.autoKeepSeed, "auto-keep-seed");
     }},
    {CompileFlag::Value, "auto-keep-sets", "",
     "Number of random input sets for --auto-keep without --calibration",
     [](CompileOptions &o, const std::string &v) {
       return parseNumber(v, o.autoKeepSets, "auto-keep-sets");
     }},
    {CompileFlag::Value, "resource-threshold", "",
     "Initializers of at least this many bytes are held as dense_resource "
     "blobs",
     [](CompileOptions &o, const std::string &v) {
       return parseNumber(v, o.resourceThreshold, "resource-threshold");
     }},
};
#undef BOOL_FLAG

const CompileFlag *findFlag(StringRef name) {
  for (const CompileFlag &flag : kFlags)
    if (name == flag.name)
      return &flag;
  return nullptr;
}

std::string applyValue(const CompileFlag &flag, CompileOptions &options,
                       StringRef value) {
  if (flag.kind != CompileFlag::List)
    return flag.apply(options, value.str());
  llvm::SmallVector<StringRef> items;
  value.split(items, ',', -1, /*KeepEmpty=*/false);
  for (StringRef item : items)
    if (std::string error = flag.apply(options, item.str()); !error.empty())
      return error;
  return "";
}
} // namespace

llvm::ArrayRef<CompileFlag> kiln::getCompileFlags() { return kFlags; }

std::string kiln::parseCompileFlags(llvm::ArrayRef<std::string> args,
                                    CompileOptions &options) {
  for (size_t i = 0; i < args.size(); ++i) {
    StringRef arg(args[i]);
    if (!arg.consume_front("-"))
      return "unexpected argument '" + args[i] + "' (flags start with --)";
    arg.consume_front("-");
    if (arg.starts_with("O") && arg.size() > 1 && !arg.contains('=')) {
      if (std::string e = findFlag("O")->apply(options, arg.drop_front().str());
          !e.empty())
        return e;
      continue;
    }
    auto [name, value] = arg.split('=');
    bool hasValue = arg.contains('=');
    const CompileFlag *flag = findFlag(name);
    if (!flag || flag->kind == CompileFlag::Prefix)
      return "unknown flag '" + args[i] + "'";
    if (!hasValue && flag->kind != CompileFlag::Bool) {
      if (i + 1 >= args.size())
        return "--" + name.str() + " needs a value";
      value = args[++i];
    }
    if (std::string e = applyValue(*flag, options, value); !e.empty())
      return e;
  }
  return "";
}

struct CompileFlagsRegistration::Impl {
  std::vector<std::pair<const CompileFlag *, std::unique_ptr<cl::Option>>>
      options;
};

CompileFlagsRegistration::CompileFlagsRegistration(
    cl::OptionCategory &category)
    : impl(std::make_unique<Impl>()) {
  for (const CompileFlag &flag : kFlags) {
    std::unique_ptr<cl::Option> option;
    switch (flag.kind) {
    case CompileFlag::Bool:
      option = std::make_unique<cl::opt<bool>>(llvm::StringRef(flag.name),
                                               cl::desc(flag.help),
                                               cl::cat(category));
      break;
    case CompileFlag::Value:
      option = std::make_unique<cl::opt<std::string>>(
          llvm::StringRef(flag.name), cl::desc(flag.help), cl::cat(category));
      break;
    case CompileFlag::Prefix:
      option = std::make_unique<cl::opt<std::string>>(
          llvm::StringRef(flag.name), cl::Prefix, cl::desc(flag.help),
          cl::cat(category));
      break;
    case CompileFlag::List:
      option = std::make_unique<cl::list<std::string>>(
          llvm::StringRef(flag.name), cl::desc(flag.help), cl::CommaSeparated,
          cl::cat(category));
      break;
    }
    if (*flag.valueDesc)
      option->setValueStr(flag.valueDesc);
    impl->options.emplace_back(&flag, std::move(option));
  }
}

CompileFlagsRegistration::~CompileFlagsRegistration() = default;

std::string CompileFlagsRegistration::apply(CompileOptions &options) const {
  for (const auto &[flag, option] : impl->options) {
    if (!option->getNumOccurrences())
      continue;
    std::string error;
    switch (flag->kind) {
    case CompileFlag::Bool:
      error = flag->apply(
          options, static_cast<cl::opt<bool> &>(*option) ? "true" : "false");
      break;
    case CompileFlag::Value:
    case CompileFlag::Prefix:
      error = flag->apply(options,
                          static_cast<cl::opt<std::string> &>(*option));
      break;
    case CompileFlag::List:
      for (const std::string &item :
           static_cast<cl::list<std::string> &>(*option))
        if (error.empty())
          error = flag->apply(options, item);
      break;
    }
    if (!error.empty())
      return error;
  }
  return "";
}
