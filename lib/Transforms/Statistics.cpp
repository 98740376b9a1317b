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
} // namespace

/// Entries live in a deque so their addresses stay valid as it grows.
struct StatisticsTable::Impl {
  mutable std::mutex mutex;
  std::deque<Entry> entries;
  std::map<std::pair<std::string, std::string>, Entry *> index;
  std::set<std::string> ran;
};

StatisticsTable::StatisticsTable() : impl(std::make_unique<Impl>()) {}
StatisticsTable::~StatisticsTable() = default;

static thread_local StatisticsTable *currentTable = nullptr;

StatisticsTable &StatisticsTable::current() {
  if (currentTable)
    return *currentTable;
  static StatisticsTable *process = new StatisticsTable();
  return *process;
}

StatisticsScope::StatisticsScope(StatisticsTable &table)
    : previous(currentTable) {
  currentTable = &table;
}
StatisticsScope::~StatisticsScope() { currentTable = previous; }

kiln::Statistic::Statistic(mlir::Pass *owner, const char *name,
                           const char *description) {
  StatisticsTable::Impl &table = *StatisticsTable::current().impl;
  std::lock_guard<std::mutex> lock(table.mutex);
  std::string pass = owner->getArgument().str();
  Entry *&entry = table.index[{pass, name}];
  if (!entry) {
    Entry &created = table.entries.emplace_back();
    created.pass = pass;
    created.name = name;
    created.description = description;
    entry = &created;
  }
  counter = &entry->value;
}

std::vector<StatisticValue>
StatisticsTable::get(llvm::StringRef pass) const {
  std::lock_guard<std::mutex> lock(impl->mutex);
  std::vector<StatisticValue> values;
  for (const Entry &entry : impl->entries)
    if (pass.empty() || entry.pass == pass)
      values.push_back({entry.pass, entry.name, entry.description,
                        entry.value.load(std::memory_order_relaxed)});
  return values;
}

namespace {
struct RanInstrumentation : mlir::PassInstrumentation {
  RanInstrumentation(std::mutex &mutex, std::set<std::string> &ran)
      : mutex(mutex), ran(ran) {}
  void runBeforePass(mlir::Pass *pass, mlir::Operation *) override {
    std::lock_guard<std::mutex> lock(mutex);
    ran.insert(pass->getArgument().str());
  }
  std::mutex &mutex;
  std::set<std::string> &ran;
};
} // namespace

void StatisticsTable::trackPassesThatRan(mlir::PassManager &pm) {
  pm.addInstrumentation(
      std::make_unique<RanInstrumentation>(impl->mutex, impl->ran));
}

void StatisticsTable::print(llvm::raw_ostream &os) const {
  std::vector<StatisticValue> values;
  {
    std::set<std::string> ran;
    {
      std::lock_guard<std::mutex> lock(impl->mutex);
      ran = impl->ran;
    }
    for (StatisticValue &v : get())
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

std::vector<StatisticValue> kiln::getStatistics(llvm::StringRef pass) {
  return StatisticsTable::current().get(pass);
}
void kiln::trackPassesThatRan(mlir::PassManager &pm) {
  StatisticsTable::current().trackPassesThatRan(pm);
}
void kiln::printStatistics(llvm::raw_ostream &os) {
  StatisticsTable::current().print(os);
}
