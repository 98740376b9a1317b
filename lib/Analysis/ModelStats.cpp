//===- ModelStats.cpp - Op and parameter counts of a kiln module ----------===//

#include "kiln/Analysis/ModelStats.h"
#include "kiln/Dialect/KilnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Format.h"

#include <set>

using namespace mlir;

/// The static element count of a value's tensor type.
static std::optional<int64_t> numElements(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || !type.hasStaticShape())
    return std::nullopt;
  return type.getNumElements();
}

static std::optional<int64_t> dimOf(Value v, int64_t index) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || type.getRank() == 0)
    return std::nullopt;
  if (index < 0)
    index += type.getRank();
  if (index < 0 || index >= type.getRank() || type.isDynamicDim(index))
    return std::nullopt;
  return type.getDimSize(index);
}

/// Ops that move or reinterpret data without arithmetic.
static bool isDataMovement(StringRef name) {
  return llvm::StringSwitch<bool>(name)
      .Cases({"kiln.reshape", "kiln.transpose", "kiln.flatten", "kiln.squeeze",
              "kiln.unsqueeze", "kiln.expand", "kiln.tile", "kiln.concat"},
             true)
      .Cases({"kiln.split", "kiln.slice", "kiln.gather", "kiln.gather_elements",
              "kiln.gather_nd", "kiln.scatter_elements", "kiln.shape",
              "kiln.size"},
             true)
      .Cases({"kiln.identity", "kiln.constant_of_shape", "kiln.pad",
              "kiln.dropout", "kiln.range", "kiln.trilu"},
             true)
      .Default(false);
}

std::optional<int64_t> kiln::estimateFlops(Operation *op) {
  StringRef name = op->getName().getStringRef();
  if (op->hasTrait<OpTrait::ConstantLike>() || isDataMovement(name) ||
      op->getNumResults() == 0)
    return 0;
  Value result = op->getResult(0);

  // Matrix products: 2 * elements of the result * contraction length.
  if (name == "kiln.matmul" || name == "kiln.fused_matmul" ||
      name == "kiln.matmul_integer" || name == "kiln.qlinear_matmul") {
    auto out = numElements(result);
    auto k = dimOf(op->getOperand(0), -1);
    if (!out || !k)
      return std::nullopt;
    return 2 * *out * *k;
  }
  if (name == "kiln.gemm") {
    auto out = numElements(result);
    auto transA = op->getAttrOfType<IntegerAttr>("transA");
    auto k = dimOf(op->getOperand(0), transA && transA.getInt() ? 0 : 1);
    if (!out || !k)
      return std::nullopt;
    return 2 * *out * *k;
  }
  // Convolutions: each output element is a dot product of length
  // |W| / Cout, Cout being W's outer dim (OIHW) or, channels-last, the
  // result's last dim.
  if (name.contains("conv")) {
    if (op->getNumOperands() < 2)
      return std::nullopt;
    Value weight = op->getOperand(name.starts_with("kiln.qlinear") ? 3 : 1);
    auto out = numElements(result);
    auto w = numElements(weight);
    bool channelsLast = name.contains("nhwc");
    auto cout = channelsLast ? dimOf(result, -1) : dimOf(result, 1);
    if (!out || !w || !cout || *cout == 0)
      return std::nullopt;
    if (name == "kiln.conv_transpose") {
      // W is [Cin, Cout/group, k...]: each input element feeds |W|/Cin
      // multiply-adds.
      auto in = numElements(op->getOperand(0));
      auto cin = dimOf(weight, 0);
      if (!in || !cin || *cin == 0)
        return std::nullopt;
      return 2 * *in * (*w / *cin);
    }
    return 2 * *out * (*w / *cout);
  }
  if (name == "kiln.attention") {
    // Q [B, H, Sq, D], K [B, Hkv, Skv, D], V [B, Hkv, Skv, Dv]; with
    // layout = "bshd" the head and sequence dims are swapped.
    auto layout = op->getAttrOfType<StringAttr>("layout");
    bool bshd = layout && layout.getValue() == "bshd";
    unsigned headPos = bshd ? 2 : 1, seqPos = bshd ? 1 : 2;
    auto b = dimOf(op->getOperand(0), 0),
         h = dimOf(op->getOperand(0), headPos),
         sq = dimOf(op->getOperand(0), seqPos),
         d = dimOf(op->getOperand(0), 3),
         skv = dimOf(op->getOperand(1), seqPos),
         dv = dimOf(op->getOperand(2), 3);
    if (!b || !h || !sq || !d || !skv || !dv)
      return std::nullopt;
    int64_t scores = *b * *h * *sq * *skv;
    // Q·Kᵀ, P·V, and about five operations per score for scale, mask,
    // max, exp, sum and divide.
    return 2 * scores * (*d + *dv) + 5 * scores;
  }
  if (name == "kiln.linear_attention") {
    auto b = dimOf(op->getOperand(0), 0), h = dimOf(op->getOperand(0), 1),
         s = dimOf(op->getOperand(0), 2), d = dimOf(op->getOperand(0), 3),
         skv = dimOf(op->getOperand(1), 2), dv = dimOf(op->getOperand(2), 3);
    if (!b || !h || !s || !d || !skv || !dv)
      return std::nullopt;
    // φ(K)ᵀ·V over the keys, φ(Q)·(that) and the normaliser per query.
    return 2 * *b * *h * (*skv * *d * *dv + *s * *d * *dv + *s * *d) +
           2 * *b * *h * (*s + *skv) * *d;
  }
  // Everything else: one operation per element of the largest tensor.
  int64_t largest = 0;
  for (Value v : llvm::concat<Value>(op->getOperands(), op->getResults())) {
    if (isa<NoneType>(v.getType()))
      continue;
    auto n = numElements(v);
    if (!n)
      return std::nullopt;
    largest = std::max(largest, *n);
  }
  return largest;
}

kiln::ModelStats kiln::collectModelStats(Operation *root) {
  ModelStats stats;
  root->walk([&](Operation *op) {
    if (isa<ModuleOp, func::FuncOp, func::ReturnOp>(op))
      return;
    if (std::optional<int64_t> flops = estimateFlops(op))
      stats.flops += *flops;
    else
      ++stats.opsWithUnknownFlops;
    ++stats.numOps;
    ++stats.opCounts[op->getName().getStringRef().str()];
    if (auto constant = dyn_cast<ConstantOp>(op)) {
      auto type = cast<ShapedType>(constant.getValue().getType());
      int64_t elements = type.getNumElements();
      unsigned bits = type.getElementType().getIntOrFloatBitWidth();
      ++stats.numConstants;
      stats.constantElements += elements;
      stats.constantBytes += elements * ((bits + 7) / 8);
    }
  });
  return stats;
}

static std::string withSeparators(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0)
      out += ',';
    out += digits[i];
  }
  return out;
}

void kiln::printStatsComparison(llvm::raw_ostream &os, const ModelStats &before,
                                const ModelStats &after) {
  std::set<std::string> names;
  for (auto &[name, count] : before.opCounts)
    names.insert(name);
  for (auto &[name, count] : after.opCounts)
    names.insert(name);
  auto countOf = [](const ModelStats &s, const std::string &name) -> int64_t {
    auto it = s.opCounts.find(name);
    return it == s.opCounts.end() ? 0 : it->second;
  };
  os << llvm::format("  %-30s %8s %8s\n", "op", "import", "graph");
  for (const std::string &name : names)
    os << llvm::format("  %-30s %8lld %8lld\n", name.c_str(),
                       (long long)countOf(before, name),
                       (long long)countOf(after, name));
  os << llvm::format("  %-30s %8lld %8lld\n", "total", (long long)before.numOps,
                     (long long)after.numOps);
  auto params = [&](const char *stage, const ModelStats &s) {
    os << "  parameters (" << stage << "): " << s.numConstants
       << " constant tensors, " << withSeparators(s.constantElements)
       << " elements, " << withSeparators(s.constantBytes) << " bytes\n";
  };
  params("import", before);
  params("graph", after);
  auto flops = [&](const char *stage, const ModelStats &s) {
    os << "  FLOPs (" << stage << "): " << withSeparators(s.flops);
    if (s.opsWithUnknownFlops)
      os << " (lower bound: " << s.opsWithUnknownFlops
         << " ops with dynamic shapes)";
    os << "\n";
  };
  flops("import", before);
  flops("graph", after);
}

/// The bytes of `attr` (a non-splat dense or a dense_resource of a
/// byte-sized element type), empty when they cannot be read.
llvm::ArrayRef<char> kiln::weightBytes(mlir::ElementsAttr attr,
                                      int64_t width) {
  llvm::ArrayRef<char> data;
  if (auto dense = mlir::dyn_cast<mlir::DenseElementsAttr>(attr)) {
    if (dense.isSplat())
      return {};
    data = dense.getRawData();
  } else if (auto resource =
                 mlir::dyn_cast<mlir::DenseResourceElementsAttr>(attr)) {
    if (mlir::AsmResourceBlob *blob = resource.getRawHandle().getBlob())
      data = blob->getData();
  }
  if (int64_t(data.size()) != attr.getNumElements() * width)
    return {};
  return data;
}
