//===- ModelStats.cpp - Op and parameter counts of a kiln module ----------===//

#include "kiln/Analysis/ModelStats.h"
#include "kiln/Dialect/KilnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/Format.h"

#include <set>

using namespace mlir;

kiln::ModelStats kiln::collectModelStats(ModuleOp module) {
  ModelStats stats;
  module.walk([&](Operation *op) {
    if (isa<ModuleOp, func::FuncOp, func::ReturnOp>(op))
      return;
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
}
