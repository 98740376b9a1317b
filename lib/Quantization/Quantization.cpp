//===- Quantization.cpp - Calibration, auto-keep, accuracy reports --------===//

#include "kiln/Quantization/Quantization.h"
#include "kiln/Quantization/Runner.h"

#include "kiln/Export/OnnxExporter.h"
#include "kiln/Pipelines/Pipelines.h"
#include "kiln/Transforms/Statistics.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Location.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"

#include <cmath>
#include <map>

using namespace mlir;
using namespace kiln;
using namespace kiln::quantization;

namespace {

/// A temporary directory whose files are removed with it.
struct TempDir {
  SmallString<128> path;
  std::vector<std::string> files;
  bool create(Context &ctx, StringRef prefix) {
    if (std::error_code ec =
            llvm::sys::fs::createUniqueDirectory(prefix, path)) {
      ctx.error("cannot create a temporary directory: " + ec.message());
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

std::string formatNumber(double v, const char *format) {
  if (std::isnan(v))
    return "nan";
  if (std::isinf(v))
    return "inf";
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::format(format, v);
  return s;
}

/// A threshold or percentile as the reports print it (raw_ostream's
/// double: %e).
std::string thresholdText(double t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t;
  return s;
}

bool isLayerOp(Operation *op) {
  StringRef name = op->getName().getStringRef();
  return name == "kiln.matmul" || name == "kiln.gemm" || name == "kiln.conv" ||
         name == "kiln.conv_transpose" || name == "kiln.einsum";
}

/// The layers --auto-keep demotes one at a time: the ONNX node names of the
/// imported graph's MatMul, Gemm, Conv, ConvTranspose and Einsum ops, in
/// graph order. Each is converted alone with kiln-convert-precision's
/// only-nodes, so the ops fused with it later convert with it only when
/// they come from the same node; bias adds and activations around it follow
/// the default rules in the final model only.
std::vector<std::string> findLayers(ModuleOp module) {
  std::vector<std::string> layers;
  module.walk([&](Operation *op) {
    if (!isLayerOp(op))
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

/// kiln-convert-precision's ops-converted so far (all its runs).
uint64_t opsConvertedSoFar(Context &ctx) {
  for (const StatisticValue &v : ctx.statistics.get("kiln-convert-precision"))
    if (v.name == "ops-converted")
      return v.value;
  return 0;
}

func::FuncOp mainFunction(ModuleOp module) {
  return findEntryFunction(module);
}

/// Appends `values` to `fn`'s results, named prefix + index: the tensors a
/// calibration or report run reads besides the model's outputs.
void addOutputs(func::FuncOp fn, ArrayRef<Value> values, StringRef prefix) {
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

/// The pipeline options of the variants the analyses compile: the
/// compile's own, fused ops decomposed (every variant runs on the CPU),
/// in fp32 unless `precision` says otherwise.
void variantOptions(Context &ctx, bool convert,
                    GraphPipelineOptions &options) {
  ctx.pipelineOptions(options);
  options.decomposeFused = true;
  if (!convert)
    options.precision = "fp32";
}

void printLayerRow(llvm::raw_ostream &os, const std::string &layer,
                   const autokeep::Error &e, const std::string &decision) {
  os << llvm::format("  %-40s %12s %12s %10s  %s\n", layer.c_str(),
                     formatNumber(e.maxAbs, "%.3e").c_str(),
                     formatNumber(e.relative, "%.3e").c_str(),
                     formatNumber(e.cosine, "%.6f").c_str(),
                     decision.c_str());
}

void printFinal(llvm::raw_ostream &os, const std::string &what,
                size_t kept, size_t total, const char *keptAs,
                const autokeep::Error &e,
                const std::vector<std::string> &keptNodes) {
  os << "  final model (" << what << ", " << kept << " of " << total
     << " layers kept in " << keptAs << "): max abs err "
     << formatNumber(e.maxAbs, "%.3e") << ", rel err "
     << formatNumber(e.relative, "%.3e") << ", cosine "
     << formatNumber(e.cosine, "%.6f") << "\n";
  if (!keptNodes.empty()) {
    os << "  kept: --keep-fp32-nodes=";
    for (size_t i = 0; i < keptNodes.size(); ++i)
      os << (i ? "," : "") << keptNodes[i];
    os << "\n";
  }
}

/// The fp32 reference of an analysis: `module` compiled as it is (fp32)
/// into `dir`, the input sets (the calibration folder, else `randomSets`
/// seeded random sets) and the reference's outputs on them.
bool fp32Reference(Context &ctx, ModuleOp module, TempDir &dir,
                   uint64_t seed, unsigned randomSets,
                   std::vector<autokeep::InputSet> &sets,
                   autokeep::Outputs &reference) {
  GraphPipelineOptions options;
  variantOptions(ctx, /*convert=*/false, options);
  std::string refPath = dir.file("fp32.kiln");
  if (!ctx.compileVariant(module, options, refPath))
    return false;
  std::string error;
  if (!autokeep::loadInputSets(refPath, ctx.options.calibrationDir, seed,
                               randomSets, sets, error)) {
    ctx.error("--auto-keep: --calibration: " + error);
    return false;
  }
  if (!autokeep::runArtifact(refPath, sets, reference, error)) {
    ctx.error("--auto-keep: " + error);
    return false;
  }
  return true;
}

/// Runs the variant compiled to `path` on `sets`, removes it and sets `e`
/// to the error of its outputs against `reference`.
bool measureVariant(Context &ctx, const std::string &path,
                    const std::vector<autokeep::InputSet> &sets,
                    const autokeep::Outputs &reference, autokeep::Error &e) {
  std::string error;
  autokeep::Outputs outputs;
  if (!autokeep::runArtifact(path, sets, outputs, error)) {
    ctx.error("--auto-keep: " + error);
    return false;
  }
  llvm::sys::fs::remove(path);
  e = autokeep::measure(reference, outputs);
  return true;
}

calib::Method toCalibMethod(CalibrationMethod method) {
  switch (method) {
  case CalibrationMethod::MinMax:
    return calib::Method::MinMax;
  case CalibrationMethod::Percentile:
    return calib::Method::Percentile;
  case CalibrationMethod::Entropy:
    return calib::Method::Entropy;
  }
  return calib::Method::MinMax;
}

const char *activationTypeName(ActivationType type) {
  return type == ActivationType::UInt8 ? "uint8" : "int8";
}

} // namespace

//===----------------------------------------------------------------------===//
// --auto-keep (fp16/bf16): the sensitivity analysis of mixed precision
//===----------------------------------------------------------------------===//

bool kiln::quantization::runAutoKeep(Context &ctx, ModuleOp imported) {
  const CompileOptions &o = ctx.options;
  std::string precision = precisionName(o.precision);
  llvm::raw_ostream &os = ctx.out();
  TempDir dir;
  if (!dir.create(ctx, "kiln-auto-keep"))
    return false;

  std::vector<std::string> layers = findLayers(imported);
  unsigned steps = layers.size() + 2, step = 0;
  if (ctx.progress)
    ctx.progress("auto-keep", "fp32 reference", ++step, steps);
  std::vector<autokeep::InputSet> sets;
  autokeep::Outputs reference;
  if (!fp32Reference(ctx, imported, dir, o.autoKeepSeed, o.autoKeepSets, sets,
                     reference))
    return false;
  GraphPipelineOptions options;
  variantOptions(ctx, /*convert=*/false, options);
  std::string error;

  os << "kiln-compile: --auto-keep=" << thresholdText(*o.autoKeep) << ": "
     << layers.size() << " layers demoted to " << precision
     << " one at a time, on " << sets.size() << " input set"
     << (sets.size() == 1 ? "" : "s")
     << (o.calibrationDir.empty()
             ? " (random, seed " + std::to_string(o.autoKeepSeed) + ")"
             : " from " + o.calibrationDir)
     << "; error of the outputs against fp32 (rel = max abs error / max "
        "|fp32 output|)\n";
  os << llvm::format("  %-40s %12s %12s %10s  %s\n", "layer", "max abs err",
                     "rel err", "cosine", "decision");
  options.precision = precision;
  for (const std::string &layer : layers) {
    std::string decision;
    autokeep::Error e;
    if (ctx.progress)
      ctx.progress("auto-keep", layer, ++step, steps);
    if (llvm::is_contained(o.keepFp32Nodes, layer)) {
      decision = "fp32 (--keep-fp32-nodes)";
    } else {
      options.onlyNodes = {layer};
      std::string path =
          dir.file("layer" + std::to_string(&layer - &layers[0]) + ".kiln");
      uint64_t convertedBefore = opsConvertedSoFar(ctx);
      if (!ctx.compileVariant(imported, options, path) ||
          !measureVariant(ctx, path, sets, reference, e))
        return false;
      if (opsConvertedSoFar(ctx) == convertedBefore) {
        // Fusion gave the node's op another node's name (kiln.attention
        // takes the names of its softmax and second matmul): demoting that
        // node demotes this one too.
        decision = "- (no op of its own after fusion)";
      } else {
        bool keep = !(e.relative <= *o.autoKeep);
        if (keep)
          ctx.autoKeptNodes.push_back(layer);
        decision = keep ? "fp32 (kept)" : precision;
      }
    }
    printLayerRow(os, layer, e, decision);
  }
  options.onlyNodes.clear();
  for (const std::string &node : ctx.autoKeptNodes)
    options.keepNodes.push_back(node);
  std::string finalPath = dir.file("final.kiln");
  autokeep::Outputs outputs;
  if (ctx.progress)
    ctx.progress("auto-keep", "final model", ++step, steps);
  if (!ctx.compileVariant(imported, options, finalPath))
    return false;
  if (!autokeep::runArtifact(finalPath, sets, outputs, error)) {
    ctx.error("--auto-keep: " + error);
    return false;
  }
  printFinal(os, precision, ctx.autoKeptNodes.size(), layers.size(), "fp32",
             autokeep::measure(reference, outputs), ctx.autoKeptNodes);
  return true;
}

//===----------------------------------------------------------------------===//
// --precision=int8: post-training quantization
//===----------------------------------------------------------------------===//

static QDQOptions qdqOptions(const CompileOptions &o) {
  QDQOptions options;
  if (!o.quantizeOps.empty())
    options.opTypes.assign(o.quantizeOps.begin(), o.quantizeOps.end());
  // --keep-fp32 by op type takes those types out of quantization.
  llvm::erase_if(options.opTypes, [&](const std::string &type) {
    return llvm::any_of(o.keepFp32, [&](const std::string &keep) {
      return StringRef(keep).equals_insensitive(type);
    });
  });
  options.keepNodes.assign(o.keepFp32Nodes.begin(), o.keepFp32Nodes.end());
  options.activation.isUnsigned =
      o.getActivationType() == ActivationType::UInt8;
  options.activation.symmetric = o.activationSymmetric;
  return options;
}

/// --precision=int8 --auto-keep=THRESHOLD: each layer quantized alone (the
/// others kept float), compiled and run on the calibration sets; a layer
/// whose outputs' max abs error against fp32, relative to the largest
/// |fp32 output|, is above THRESHOLD stays float (added to qdq.keepNodes
/// and the kept nodes). Prints the table, as for fp16/bf16.
static bool runInt8AutoKeep(Context &ctx, ModuleOp module, QDQOptions &qdq,
                            const std::map<std::string, Range> &ranges,
                            const std::vector<QuantLayer> &layers) {
  const CompileOptions &o = ctx.options;
  llvm::raw_ostream &os = ctx.out();
  TempDir dir;
  if (!dir.create(ctx, "kiln-auto-keep"))
    return false;
  std::vector<autokeep::InputSet> sets;
  autokeep::Outputs reference;
  if (!fp32Reference(ctx, module, dir, 0, 0, sets, reference))
    return false;
  GraphPipelineOptions options;
  variantOptions(ctx, /*convert=*/false, options);
  std::vector<std::string> quantizable;
  for (const QuantLayer &layer : layers)
    if (layer.skipReason.empty())
      quantizable.push_back(layer.node);
  unsigned steps = quantizable.size() + 1, step = 0;
  // Compiles `module` with the layers of `keep` in float and measures it.
  auto measureWith = [&](const std::vector<std::string> &keep,
                         const std::string &name, autokeep::Error &e) {
    OwningOpRef<ModuleOp> copy = module.clone();
    QDQOptions q = qdq;
    q.keepNodes.insert(q.keepNodes.end(), keep.begin(), keep.end());
    std::string path = dir.file(name + ".kiln");
    return succeeded(insertQDQ(mainFunction(*copy), q, ranges)) &&
           ctx.compileVariant(*copy, options, path) &&
           measureVariant(ctx, path, sets, reference, e);
  };
  os << "kiln-compile: --auto-keep=" << thresholdText(*o.autoKeep) << ": "
     << quantizable.size() << " layers quantized to int8 one at a time, on "
     << sets.size() << " input set" << (sets.size() == 1 ? "" : "s")
     << " from " << o.calibrationDir
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
    autokeep::Error e;
    if (ctx.progress)
      ctx.progress("auto-keep", quantizable[i], ++step, steps);
    if (!measureWith(others, "layer" + std::to_string(i), e))
      return false;
    bool keep = !(e.relative <= *o.autoKeep);
    if (keep)
      kept.push_back(quantizable[i]);
    printLayerRow(os, quantizable[i], e, keep ? "float (kept)" : "int8");
  }
  autokeep::Error e;
  if (ctx.progress)
    ctx.progress("auto-keep", "final model", ++step, steps);
  if (!measureWith(kept, "final", e))
    return false;
  printFinal(os, "int8", kept.size(), quantizable.size(), "float", e, kept);
  qdq.keepNodes.insert(qdq.keepNodes.end(), kept.begin(), kept.end());
  ctx.autoKeptNodes.insert(ctx.autoKeptNodes.end(), kept.begin(), kept.end());
  return true;
}

/// Runs the float graph on the calibration inputs with every quantized
/// layer's input as an extra output, takes each input's range with the
/// chosen observer, and inserts the Q/DQ pairs into `module`
/// (kiln::insertQDQ). Prints the table of layers, ranges, scales and zero
/// points.
bool kiln::quantization::quantizeToInt8(Context &ctx, ModuleOp module) {
  const CompileOptions &o = ctx.options;
  calib::Method method = toCalibMethod(o.getCalibrationMethod());
  QDQOptions qdq = qdqOptions(o);
  func::FuncOp fn = mainFunction(module);
  if (!fn) {
    ctx.error("--precision=int8: no public function");
    return false;
  }
  std::vector<QuantLayer> layers = findQuantLayers(fn, qdq);
  // A keep list naming no layer is a typo, not a no-op.
  for (const std::string &node : o.keepFp32Nodes)
    if (llvm::none_of(layers,
                      [&](const QuantLayer &l) { return l.node == node; })) {
      ctx.error("--keep-fp32-nodes: no MatMul, Gemm or Conv node is named '" +
                node + "'");
      return false;
    }

  // The calibration graph: a copy that also returns every observed tensor
  // (the graph inputs among them are read from the input sets).
  OwningOpRef<ModuleOp> calibrated = module.clone();
  func::FuncOp cfn = mainFunction(*calibrated);
  std::vector<QuantLayer> clayers = findQuantLayers(cfn, qdq);
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

  llvm::raw_ostream &os = ctx.out();
  std::map<std::string, Range> ranges;
  ctx.quantRows.clear();
  std::vector<autokeep::InputSet> sets;
  if (!sources.empty()) {
    TempDir dir;
    if (!dir.create(ctx, "kiln-ptq"))
      return false;
    GraphPipelineOptions options;
  variantOptions(ctx, /*convert=*/false, options);
    std::string path = dir.file("calibration.kiln");
    if (ctx.progress)
      ctx.progress("calibration", "", 0, 0);
    if (!ctx.compileVariant(*calibrated, options, path))
      return false;
    std::string error;
    autokeep::Outputs outputs;
    if (!autokeep::loadInputSets(path, o.calibrationDir, 0, 0, sets, error) ||
        !autokeep::runArtifact(path, sets, outputs, error)) {
      ctx.error("--calibration: " + error);
      return false;
    }
    std::vector<calib::Range> sourceRanges(sources.size());
    for (size_t k = 0; k < sources.size(); ++k) {
      std::vector<const run::HostTensor *> values;
      for (size_t s = 0; s < sets.size(); ++s)
        values.push_back(sources[k].isInput
                             ? &sets[s].tensors[sources[k].index]
                             : &outputs[s][sources[k].index]);
      if (!calib::observe(values, method, o.getPercentile(), sourceRanges[k],
                          error)) {
        std::string node;
        for (size_t i = 0; i < layers.size(); ++i)
          if (sourceOf[i] == int(k)) {
            node = layers[i].node;
            break;
          }
        ctx.error("--calibration: the input of ONNX node '" + node +
                  "': " + error);
        return false;
      }
    }
    for (size_t i = 0; i < layers.size(); ++i)
      if (sourceOf[i] >= 0) {
        const calib::Range &r = sourceRanges[sourceOf[i]];
        ranges[layers[i].node] = {r.lo, r.hi};
      }
  }
  if (o.autoKeep) {
    if (!runInt8AutoKeep(ctx, module, qdq, ranges, layers))
      return false;
    layers = findQuantLayers(fn, qdq);
  }
  for (size_t i = 0; i < layers.size(); ++i) {
    QuantRow row;
    row.node = layers[i].node;
    row.opType = layers[i].opType;
    row.skipReason = layers[i].skipReason;
    if (!row.skipReason.empty() &&
        llvm::is_contained(ctx.autoKeptNodes, row.node))
      row.skipReason = "kept in float (--auto-keep)";
    if (row.skipReason.empty()) {
      const Range &r = ranges[row.node];
      row.range.lo = r.min;
      row.range.hi = r.max;
      row.params = quant::activationParams(r.min, r.max, qdq.activation);
    }
    ctx.quantRows.push_back(row);
  }

  os << "kiln-compile: --precision=int8: " << layers.size() << " layer"
     << (layers.size() == 1 ? "" : "s") << ", calibrated on " << sets.size()
     << " input set" << (sets.size() == 1 ? "" : "s") << " from "
     << o.calibrationDir << " ("
     << calibrationMethodName(o.getCalibrationMethod());
  if (method == calib::Method::Percentile)
    os << " " << thresholdText(o.getPercentile());
  os << "; activations " << activationTypeName(o.getActivationType())
     << (o.activationSymmetric ? " symmetric" : " asymmetric")
     << " per tensor, weights int8 symmetric per output channel)\n";
  os << llvm::format("  %-32s %-7s %12s %12s %12s %5s  %s\n", "layer", "op",
                     "range lo", "range hi", "scale", "zp", "precision");
  for (const QuantRow &row : ctx.quantRows) {
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
  if (failed(insertQDQ(fn, qdq, ranges)))
    return false;

  if (!o.emitQdqOnnx.empty()) {
    std::string bytes;
    llvm::raw_string_ostream bytesOs(bytes);
    if (failed(exportOnnxModel(module, bytesOs)))
      return false;
    std::string error;
    auto file = openOutputFile(o.emitQdqOnnx, &error);
    if (!file) {
      ctx.error(error);
      return false;
    }
    file->os() << bytes;
    file->keep();
  }
  return true;
}

//===----------------------------------------------------------------------===//
// --accuracy-report
//===----------------------------------------------------------------------===//

/// The layers an accuracy report measures: int8, every MatMul/Gemm/Conv
/// of the quantization table; fp16/bf16, those --auto-keep demotes.
static std::vector<std::pair<std::string, std::string>>
reportLayers(Context &ctx, ModuleOp fp32) {
  const CompileOptions &o = ctx.options;
  std::vector<std::pair<std::string, std::string>> layers; // node, status
  if (o.precision == Precision::Int8) {
    for (const QuantRow &row : ctx.quantRows)
      layers.push_back({row.node, row.skipReason.empty()
                                      ? std::string("int8")
                                      : "float (" + row.skipReason + ")"});
    return layers;
  }
  for (const std::string &node : findLayers(fp32)) {
    bool kept = llvm::is_contained(o.keepFp32Nodes, node) ||
                llvm::is_contained(ctx.autoKeptNodes, node);
    layers.push_back({node, kept ? std::string("fp32 (kept)")
                                 : std::string(precisionName(o.precision))});
  }
  return layers;
}

/// The result of the layer op named `node` (a MatMul, Gemm, Conv,
/// ConvTranspose or Einsum), or null.
static Value layerOutput(ModuleOp module, StringRef node) {
  Value result;
  module.walk([&](Operation *op) {
    if (result || op->getNumResults() != 1 || !isLayerOp(op))
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

static llvm::json::Object qualityJson(const run::Quality &q) {
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

/// `fp32` (the imported graph) and `variant` (int8: the QDQ graph;
/// fp16/bf16: the imported graph, converted by the pipeline) compiled twice
/// each: once as they are (the outputs) and once also returning every
/// layer's output (the layers; an extra use keeps some epilogues out of the
/// layer's op, the arithmetic is the same), and run on the calibration sets
/// and the held-out sets.
bool kiln::quantization::writeAccuracyReport(Context &ctx, ModuleOp fp32,
                                             ModuleOp variant) {
  const CompileOptions &o = ctx.options;
  std::string precision = precisionName(o.precision);
  TempDir dir;
  if (!dir.create(ctx, "kiln-accuracy"))
    return false;
  std::vector<std::pair<std::string, std::string>> layers =
      reportLayers(ctx, fp32);
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

  GraphPipelineOptions refOptions;
  variantOptions(ctx, /*convert=*/false, refOptions);
  GraphPipelineOptions varOptions;
  variantOptions(ctx, /*convert=*/true, varOptions);
  std::string refPath = dir.file("fp32.kiln");
  std::string varProbedPath = dir.file("variant-layers.kiln");
  std::string varPath = dir.file("variant.kiln");
  if (ctx.progress)
    ctx.progress("accuracy report", "", 0, 0);
  if (!ctx.compileVariant(*refProbed, refOptions, refPath) ||
      !ctx.compileVariant(*varProbed, varOptions, varProbedPath) ||
      !ctx.compileVariant(variant, varOptions, varPath))
    return false;

  struct Group {
    std::string name, source;
    std::vector<autokeep::InputSet> sets;
    autokeep::Outputs ref, probedOut, out;
  };
  std::vector<Group> groups(1);
  groups[0].name = "calibration";
  groups[0].source =
      o.calibrationDir.empty()
          ? "random (seed " + std::to_string(o.autoKeepSeed) + ")"
          : o.calibrationDir;
  if (!o.holdoutDir.empty()) {
    groups.emplace_back();
    groups.back().name = "holdout";
    groups.back().source = o.holdoutDir;
  }
  std::string error;
  for (Group &g : groups) {
    const std::string &dirName =
        g.name == "holdout" ? o.holdoutDir : o.calibrationDir;
    if (!autokeep::loadInputSets(refPath, dirName, o.autoKeepSeed,
                                 o.autoKeepSets, g.sets, error) ||
        !autokeep::runArtifact(refPath, g.sets, g.ref, error) ||
        !autokeep::runArtifact(varProbedPath, g.sets, g.probedOut, error) ||
        !autokeep::runArtifact(varPath, g.sets, g.out, error)) {
      ctx.error(std::string("--accuracy-report (") +
                (g.name == "holdout" ? "--holdout" : "--calibration") +
                "): " + error);
      return false;
    }
  }

  llvm::raw_ostream &os = ctx.out();
  os << "kiln-compile: --accuracy-report: " << precision << " against fp32 on";
  for (const Group &g : groups)
    os << (&g == &groups[0] ? " " : " and ") << g.name << " ("
       << g.sets.size() << " set" << (g.sets.size() == 1 ? "" : "s")
       << " from " << g.source << ")";
  os << "\n";
  os << llvm::format("  %-32s %-12s %-11s %12s %10s %8s  %s\n",
                     "output / layer", "precision", "inputs", "max abs err",
                     "cosine", "top-1", "");
  auto printRow = [&](const std::string &name, const std::string &status,
                      const std::string &group, const run::Quality &q) {
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
  root["model"] = ctx.sourceName;
  root["precision"] = precision;
  root["reference"] = "fp32";
  llvm::json::Array setsJson;
  for (const Group &g : groups)
    setsJson.push_back(llvm::json::Object{{"name", g.name},
                                          {"source", g.source},
                                          {"sets", int64_t(g.sets.size())}});
  root["input_sets"] = std::move(setsJson);
  if (o.precision == Precision::Int8) {
    llvm::json::Object q;
    q["method"] = calibrationMethodName(o.getCalibrationMethod());
    if (o.getCalibrationMethod() == CalibrationMethod::Percentile)
      q["percentile"] = o.getPercentile();
    q["activation_type"] = activationTypeName(o.getActivationType());
    q["activation_symmetric"] = o.activationSymmetric;
    llvm::json::Array rows;
    for (const QuantRow &row : ctx.quantRows) {
      llvm::json::Object r{{"node", row.node}, {"op", row.opType}};
      if (row.skipReason.empty()) {
        r["range"] =
            llvm::json::Array{double(row.range.lo), double(row.range.hi)};
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
    llvm::json::Object out{{"name", name}};
    for (const Group &g : groups) {
      run::Quality q = autokeep::compareOutput(g.ref, g.out, i);
      printRow(&g == &groups[0] ? name : "", &g == &groups[0] ? "output" : "",
               g.name, q);
      out[g.name] = qualityJson(q);
    }
    outputsJson.push_back(std::move(out));
  }
  root["outputs"] = std::move(outputsJson);

  llvm::json::Array layersJson;
  for (const auto &[node, status] : layers) {
    auto r = llvm::find(refLayers, node), v = llvm::find(varLayers, node);
    llvm::json::Object entry{{"node", node}, {"precision", status}};
    if (r == refLayers.end() || v == varLayers.end()) {
      entry["comparable"] = false;
      layersJson.push_back(std::move(entry));
      continue;
    }
    size_t ri = numOutputs + (r - refLayers.begin());
    size_t vi = numOutputs + (v - varLayers.begin());
    for (const Group &g : groups) {
      // Reference and variant hold the layer at their own index; compare
      // through one-output views.
      autokeep::Outputs a(g.sets.size()), b(g.sets.size());
      for (size_t s = 0; s < g.sets.size(); ++s) {
        a[s].push_back(g.ref[s][ri]);
        b[s].push_back(g.probedOut[s][vi]);
      }
      run::Quality q = autokeep::compareOutput(a, b, 0);
      std::string shown = status.size() > 12 ? status.substr(0, 5) : status;
      printRow(&g == &groups[0] ? node : "", &g == &groups[0] ? shown : "",
               g.name, q);
      entry[g.name] = qualityJson(q);
    }
    layersJson.push_back(std::move(entry));
  }
  root["layers"] = std::move(layersJson);

  std::string text;
  llvm::raw_string_ostream textOs(text);
  textOs << llvm::formatv("{0:2}", llvm::json::Value(std::move(root)))
         << "\n";
  auto file = openOutputFile(o.accuracyReport, &error);
  if (!file) {
    ctx.error(error);
    return false;
  }
  file->os() << text;
  file->keep();
  os << "  written to " << o.accuracyReport << "\n";
  return true;
}
