//===- Statistics.cpp - Pass statistics that count in release builds ------===//

#include "kiln/Transforms/Statistics.h"

#include "mlir/Pass/PassInstrumentation.h"
#include "llvm/Support/Format.h"

#include <deque>
#include <map>
#include <mutex>
#include <set>

using namespace kiln;

namespace {
struct Entry {
  std::string pass, name, description;
  std::atomic<uint64_t> value{0};
};

/// Entries live in a deque so their addresses stay valid as it grows.
struct Registry {
  std::mutex mutex;
  std::deque<Entry> entries;
  std::map<std::pair<std::string, std::string>, Entry *> index;
  std::set<std::string> ran;
};

Registry &getRegistry() {
  static Registry registry;
  return registry;
}
} // namespace

kiln::Statistic::Statistic(mlir::Pass *owner, const char *name,
                           const char *description) {
  Registry &registry = getRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  std::string pass = owner->getArgument().str();
  Entry *&entry = registry.index[{pass, name}];
  if (!entry) {
    Entry &created = registry.entries.emplace_back();
    created.pass = pass;
    created.name = name;
    created.description = description;
    entry = &created;
  }
  counter = &entry->value;
}

std::vector<StatisticValue> kiln::getStatistics(llvm::StringRef pass) {
  Registry &registry = getRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  std::vector<StatisticValue> values;
  for (const Entry &entry : registry.entries)
    if (pass.empty() || entry.pass == pass)
      values.push_back({entry.pass, entry.name, entry.description,
                        entry.value.load(std::memory_order_relaxed)});
  return values;
}

namespace {
struct RanInstrumentation : mlir::PassInstrumentation {
  void runBeforePass(mlir::Pass *pass, mlir::Operation *) override {
    Registry &registry = getRegistry();
    std::lock_guard<std::mutex> lock(registry.mutex);
    registry.ran.insert(pass->getArgument().str());
  }
};
} // namespace

void kiln::trackPassesThatRan(mlir::PassManager &pm) {
  pm.addInstrumentation(std::make_unique<RanInstrumentation>());
}

void kiln::printStatistics(llvm::raw_ostream &os) {
  std::vector<StatisticValue> values;
  {
    std::set<std::string> ran;
    {
      Registry &registry = getRegistry();
      std::lock_guard<std::mutex> lock(registry.mutex);
      ran = registry.ran;
    }
    for (StatisticValue &v : getStatistics())
      if (ran.count(v.pass))
        values.push_back(std::move(v));
  }
  os << "===" << std::string(73, '-') << "===\n"
     << "                         ... Kiln pass statistics ...\n"
     << "===" << std::string(73, '-') << "===\n";
  std::string current;
  for (const StatisticValue &v : values) {
    if (v.pass != current) {
      os << v.pass << "\n";
      current = v.pass;
    }
    os << llvm::format("  (%s) %llu : %s\n", v.name.c_str(),
                       (unsigned long long)v.value, v.description.c_str());
  }
}
