//===- Measure.h - kiln-run's measurements: statistics, quality, energy -*- C++ -*-===//
//
// What kiln-run reports besides pass/fail, in a library so the unit tests
// reach it with synthetic inputs whose answers are known:
//  * summary statistics of run times (min, median, mean, p90, p99, max,
//    sample standard deviation; percentiles interpolate linearly between
//    order statistics, numpy's default method);
//  * output quality against a reference: max abs/rel error, cosine
//    similarity, top-1 agreement along the last axis (for outputs that are
//    distributions, e.g. logits);
//  * the process's peak resident set size (VmHWM);
//  * CPU package energy from Linux RAPL (powercap), when readable, else a
//    reason why not: never an invented number.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUN_MEASURE_H
#define KILN_RUN_MEASURE_H

#include "kiln/Run/TensorIO.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kiln {
namespace run {

struct TimingSummary {
  size_t count = 0;
  double min = 0, median = 0, mean = 0, p90 = 0, p99 = 0, max = 0;
  /// Sample standard deviation (n - 1 in the denominator); 0 for n < 2.
  double stddev = 0;
};

/// The q-th percentile (0..100) of sorted samples, linear interpolation
/// between the closest ranks: rank = q/100 * (n - 1) (numpy.percentile's
/// default). Requires a non-empty, ascending vector.
double percentileSorted(const std::vector<double> &sorted, double q);

/// Summary statistics of samples (any order); all zero when empty.
TimingSummary summarize(std::vector<double> samples);

/// Output quality of `actual` against `reference`. Both are read as doubles,
/// so a float16 output can be judged against a float32 reference; the
/// shapes must match (`comparable` false otherwise). Non-finite pairs are
/// left out of the errors and the cosine (and counted in `nonFinite`).
struct Quality {
  bool comparable = false;
  uint64_t count = 0;
  uint64_t nonFinite = 0; ///< pairs where either value is NaN or infinite
  double maxAbsError = 0;
  double maxRelError = 0;     ///< over pairs with reference != 0
  double cosineSimilarity = 0; ///< 1 when both are all-zero
  /// Top-1 agreement: rows along the last axis (when it has at least 2
  /// elements) whose argmax (first maximum) is the same in both.
  uint64_t top1Rows = 0;
  uint64_t top1Agree = 0;
  double top1Agreement() const {
    return top1Rows ? double(top1Agree) / double(top1Rows) : 0;
  }
};

Quality assessQuality(const HostTensor &actual, const HostTensor &reference);

/// Peak resident set size of this process so far (VmHWM of
/// /proc/self/status, else getrusage), in bytes.
uint64_t peakRssBytes();

/// Cumulative CPU energy from Linux RAPL (/sys/class/powercap/intel-rapl:N,
/// the package domains). `open` says whether it can be read and, if not,
/// why; `readMicrojoules` sums the packages, handling counter wrap-around
/// between two readings with `elapsedMicrojoules`.
class RaplEnergy {
public:
  /// `root` is the powercap folder (a parameter for tests).
  bool open(const std::string &root = "/sys/class/powercap");
  bool available() const { return !domains.empty(); }
  const std::string &reason() const { return why; }
  /// The package domains' names (e.g. "package-0").
  std::vector<std::string> domainNames() const;
  /// A reading of every domain's counter, in microjoules.
  std::vector<uint64_t> read() const;
  /// Energy between two readings, summed over the domains, in joules.
  double joulesBetween(const std::vector<uint64_t> &before,
                       const std::vector<uint64_t> &after) const;

private:
  struct Domain {
    std::string name, energyPath;
    uint64_t maxRange = 0;
  };
  std::vector<Domain> domains;
  std::string why;
};

/// The timed runs of a measurement, as kiln-run and
/// kiln.InferenceSession.benchmark take them: `warmup` untimed runs, then
/// `iterations` timed runs and/or timed runs until `durationSeconds` have
/// passed (at least one when a duration is given), with the CPU package
/// energy of the timed runs read from RAPL where it can be.
struct TimedRuns {
  std::vector<double> milliseconds; ///< one per timed run
  double elapsedMs = 0;             ///< wall time of the timed runs
  bool energyAvailable = false;
  double joules = 0;
  std::string energyReason; ///< why there is no energy reading
  std::vector<std::string> energyDomains; ///< RAPL package domains read
};

/// `runOnce(ms)` runs the model once and sets its time (false: it failed;
/// the measurement stops and returns false). `beforeTimed` (may be empty)
/// runs between the warmup and the timed runs (e.g. to start profiling).
bool timeRuns(const std::function<bool(double &ms)> &runOnce, long warmup,
              long iterations, double durationSeconds,
              const std::function<bool()> &beforeTimed, TimedRuns &out);

} // namespace run
} // namespace kiln

#endif
