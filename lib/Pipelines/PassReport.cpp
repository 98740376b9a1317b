//===- PassReport.cpp - Per-pass effects of a pipeline, as JSON -----------===//

#include "kiln/Pipelines/PassReport.h"
#include "kiln/Transforms/Statistics.h"

#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/JSON.h"

#include <chrono>

using namespace mlir;

namespace {
class RecordingInstrumentation : public PassInstrumentation {
public:
  explicit RecordingInstrumentation(std::vector<kiln::PassRecord> &records)
      : records(records) {}

  void runBeforePass(Pass *pass, Operation *op) override {
    if (!isRecorded(pass))
      return;
    Pending &p = pending[{pass, op}];
    p.before = kiln::collectModelStats(op);
    p.statistics = kiln::getStatistics(pass->getArgument());
    p.start = std::chrono::steady_clock::now();
  }

  void runAfterPass(Pass *pass, Operation *op) override {
    finish(pass, op, /*failed=*/false);
  }
  void runAfterPassFailed(Pass *pass, Operation *op) override {
    finish(pass, op, /*failed=*/true);
  }

private:
  struct Pending {
    kiln::ModelStats before;
    std::vector<kiln::StatisticValue> statistics;
    std::chrono::steady_clock::time_point start;
  };

  /// Pass managers' adaptors (nesting) have no flag; only real passes count.
  static bool isRecorded(Pass *pass) { return !pass->getArgument().empty(); }

  void finish(Pass *pass, Operation *op, bool failed) {
    auto it = pending.find({pass, op});
    if (it == pending.end())
      return;
    auto end = std::chrono::steady_clock::now();
    kiln::PassRecord record;
    record.pass = pass->getArgument().str();
    if (auto name = op->getAttrOfType<StringAttr>(
            SymbolTable::getSymbolAttrName()))
      record.function = name.str();
    record.before = std::move(it->second.before);
    record.after = kiln::collectModelStats(op);
    // Statistics are per pass flag: the difference is what this run
    // counted (a pass declares its statistics before it first runs).
    std::vector<kiln::StatisticValue> after =
        kiln::getStatistics(pass->getArgument());
    for (const kiln::StatisticValue &stat : after) {
      uint64_t before = 0;
      for (const kiln::StatisticValue &old : it->second.statistics)
        if (old.name == stat.name)
          before = old.value;
      record.statistics.emplace_back(stat.name, stat.value - before);
    }
    record.milliseconds =
        std::chrono::duration<double, std::milli>(end - it->second.start)
            .count();
    record.failed = failed;
    records.push_back(std::move(record));
    pending.erase(it);
  }

  std::vector<kiln::PassRecord> &records;
  llvm::DenseMap<std::pair<Pass *, Operation *>, Pending> pending;
};

void writeStats(llvm::json::OStream &j, const kiln::ModelStats &s) {
  j.attribute("num_ops", s.numOps);
  j.attributeObject("ops", [&] {
    for (const auto &[name, count] : s.opCounts)
      j.attribute(name, count);
  });
  j.attribute("flops", s.flops);
  j.attribute("ops_with_unknown_flops", s.opsWithUnknownFlops);
  j.attribute("num_constants", s.numConstants);
  j.attribute("weight_elements", s.constantElements);
  j.attribute("weight_bytes", s.constantBytes);
}
} // namespace

void kiln::PassReport::attach(PassManager &pm) {
  pm.addInstrumentation(std::make_unique<RecordingInstrumentation>(records));
}

void kiln::PassReport::writeJson(llvm::raw_ostream &os, StringRef model,
                                 StringRef pipeline, unsigned optLevel,
                                 const ModelStats &initial,
                                 const ModelStats &final) const {
  llvm::json::OStream j(os, /*IndentSize=*/2);
  j.object([&] {
    j.attribute("schema", "kiln.pass-report");
    j.attribute("schema_version", 1);
    j.attribute("model", model);
    j.attribute("opt_level", optLevel);
    j.attribute("pipeline", pipeline);
    j.attributeObject("input", [&] { writeStats(j, initial); });
    j.attributeObject("output", [&] { writeStats(j, final); });
    j.attributeArray("passes", [&] {
      for (const PassRecord &r : records) {
        j.object([&] {
          j.attribute("pass", r.pass);
          j.attribute("function", r.function);
          j.attribute("failed", r.failed);
          j.attribute("milliseconds", r.milliseconds);
          j.attributeObject("statistics", [&] {
            for (const auto &[name, value] : r.statistics)
              j.attribute(name, int64_t(value));
          });
          j.attributeObject("before", [&] { writeStats(j, r.before); });
          j.attributeObject("after", [&] { writeStats(j, r.after); });
        });
      }
    });
  });
  os << "\n";
}
