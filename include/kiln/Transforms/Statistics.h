//===- Statistics.h - Pass statistics that count in release builds -*- C++ -*-===//
//
// MLIR's Pass::Statistic derives from llvm::Statistic, which is
// llvm::NoopStatistic unless LLVM was built with assertions or
// LLVM_FORCE_ENABLE_STATS: with Debian's release LLVM every MLIR pass
// statistic reads 0 and -mlir-pass-statistics prints nothing. Kiln's passes
// therefore count with kiln::Statistic, which has the same interface and
// keeps its values in a table keyed by (pass flag, statistic name): the
// table current on the thread that constructs the pass (a StatisticsScope
// makes one current: each compile invocation has its own, so two compiles
// in one process count apart), else a process-wide default.
// kiln-opt --kiln-pass-statistics and kiln-compile --pass-statistics print
// the table; kiln-compile --report reads per-pass differences from it.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_TRANSFORMS_STATISTICS_H
#define KILN_TRANSFORMS_STATISTICS_H

#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kiln {

class StatisticsTable;

/// A counter of one pass, declared as a member of the pass:
///   kiln::Statistic numFolded{this, "ops-folded", "Ops replaced by constants"};
/// Copies of a pass (the pass manager clones passes per thread) share the
/// counter.
class Statistic {
public:
  Statistic(mlir::Pass *owner, const char *name, const char *description);

  Statistic &operator+=(uint64_t value) {
    counter->fetch_add(value, std::memory_order_relaxed);
    return *this;
  }
  Statistic &operator++() { return *this += 1; }
  uint64_t getValue() const { return counter->load(std::memory_order_relaxed); }
  operator uint64_t() const { return getValue(); }

private:
  std::atomic<uint64_t> *counter;
};

/// One statistic's current value.
struct StatisticValue {
  std::string pass;        ///< the pass's flag, e.g. kiln-constant-fold
  std::string name;        ///< e.g. ops-folded
  std::string description;
  uint64_t value = 0;
};

/// The counters of the passes constructed while it was current.
class StatisticsTable {
public:
  StatisticsTable();
  ~StatisticsTable();
  StatisticsTable(const StatisticsTable &) = delete;
  StatisticsTable &operator=(const StatisticsTable &) = delete;

  /// The table on this thread: the innermost StatisticsScope's, else the
  /// process-wide one.
  static StatisticsTable &current();

  /// Every statistic of `pass` (its flag), or of every pass when empty, in
  /// the order they were declared.
  std::vector<StatisticValue> get(llvm::StringRef pass = "") const;

  /// Makes `pm` note in this table which passes ran, so print lists those
  /// (and not passes that were only constructed, e.g. to register their
  /// options).
  void trackPassesThatRan(mlir::PassManager &pm);

  /// Prints the statistics of every pass that ran under a tracked pass
  /// manager and declared statistics, as -mlir-pass-statistics would with a
  /// statistics-enabled LLVM.
  void print(llvm::raw_ostream &os) const;

private:
  friend class Statistic;
  struct Impl;
  std::unique_ptr<Impl> impl;
};

/// Makes `table` current on this thread for its lifetime.
class StatisticsScope {
public:
  explicit StatisticsScope(StatisticsTable &table);
  ~StatisticsScope();
  StatisticsScope(const StatisticsScope &) = delete;
  StatisticsScope &operator=(const StatisticsScope &) = delete;

private:
  StatisticsTable *previous;
};

/// StatisticsTable::current()'s statistics, tracking and printing.
std::vector<StatisticValue> getStatistics(llvm::StringRef pass = "");
void trackPassesThatRan(mlir::PassManager &pm);
void printStatistics(llvm::raw_ostream &os);

} // namespace kiln

#endif // KILN_TRANSFORMS_STATISTICS_H
