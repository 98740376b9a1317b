//===- Measure.cpp - kiln-run's measurements: statistics, quality, energy -===//
//
// See Measure.h.
//
//===----------------------------------------------------------------------===//
#include "kiln/Run/Measure.h"

#include <chrono>

#include <algorithm>
#include <cstdlib>
#include <cmath>
#include <dirent.h>
#include <fstream>
#include <sys/resource.h>

namespace kiln {
namespace run {

double percentileSorted(const std::vector<double> &sorted, double q) {
  size_t n = sorted.size();
  if (n == 1)
    return sorted[0];
  double rank = q / 100.0 * double(n - 1);
  size_t lo = size_t(std::floor(rank));
  if (lo >= n - 1)
    return sorted[n - 1];
  double frac = rank - double(lo);
  // numpy's _lerp, to the bit: from the upper neighbour when frac >= 0.5.
  double a = sorted[lo], b = sorted[lo + 1], diff = b - a;
  return frac >= 0.5 ? b - diff * (1 - frac) : a + diff * frac;
}

TimingSummary summarize(std::vector<double> samples) {
  TimingSummary s;
  s.count = samples.size();
  if (samples.empty())
    return s;
  std::sort(samples.begin(), samples.end());
  s.min = samples.front();
  s.max = samples.back();
  s.median = percentileSorted(samples, 50);
  s.p90 = percentileSorted(samples, 90);
  s.p99 = percentileSorted(samples, 99);
  double sum = 0;
  for (double v : samples)
    sum += v;
  s.mean = sum / double(samples.size());
  if (samples.size() > 1) {
    double ss = 0;
    for (double v : samples)
      ss += (v - s.mean) * (v - s.mean);
    s.stddev = std::sqrt(ss / double(samples.size() - 1));
  }
  return s;
}

Quality assessQuality(const HostTensor &actual, const HostTensor &reference) {
  Quality q;
  if (actual.dims != reference.dims)
    return q;
  q.comparable = true;
  q.count = actual.numElements();
  double dot = 0, na = 0, nr = 0;
  for (uint64_t i = 0; i < q.count; ++i) {
    double a = actual.at(i), r = reference.at(i);
    if (!std::isfinite(a) || !std::isfinite(r)) {
      ++q.nonFinite;
      continue;
    }
    double diff = std::fabs(a - r);
    q.maxAbsError = std::max(q.maxAbsError, diff);
    if (r != 0)
      q.maxRelError = std::max(q.maxRelError, diff / std::fabs(r));
    dot += a * r;
    na += a * a;
    nr += r * r;
  }
  if (na == 0 && nr == 0)
    q.cosineSimilarity = 1;
  else if (na == 0 || nr == 0)
    q.cosineSimilarity = 0;
  else
    q.cosineSimilarity = dot / (std::sqrt(na) * std::sqrt(nr));

  int64_t last = actual.dims.empty() ? 0 : actual.dims.back();
  if (last >= 2) {
    uint64_t rows = q.count / uint64_t(last);
    q.top1Rows = rows;
    for (uint64_t row = 0; row < rows; ++row) {
      uint64_t base = row * uint64_t(last);
      auto argmax = [&](const HostTensor &t) {
        uint64_t best = 0;
        double bestValue = t.at(base);
        for (int64_t k = 1; k < last; ++k) {
          double v = t.at(base + uint64_t(k));
          // NaN never wins; the first maximum wins ties (numpy.argmax).
          if (v > bestValue || (std::isnan(bestValue) && !std::isnan(v))) {
            bestValue = v;
            best = uint64_t(k);
          }
        }
        return best;
      };
      if (argmax(actual) == argmax(reference))
        ++q.top1Agree;
    }
  }
  return q;
}

uint64_t peakRssBytes() {
  // VmHWM is this process image's high-water mark. getrusage's ru_maxrss
  // is not used first: Linux keeps it across execve, so a child of a large
  // parent (a Python benchmark driver) would report the parent's peak.
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0)
      return std::strtoull(line.c_str() + 6, nullptr, 10) * 1024; // kB
  struct rusage usage;
  if (getrusage(RUSAGE_SELF, &usage) != 0)
    return 0;
  return uint64_t(usage.ru_maxrss) * 1024; // Linux reports KiB
}

namespace {
bool readFirstLine(const std::string &path, std::string &line) {
  std::ifstream f(path);
  return f && std::getline(f, line);
}
bool readU64(const std::string &path, uint64_t &value) {
  std::string line;
  if (!readFirstLine(path, line))
    return false;
  char *end;
  value = std::strtoull(line.c_str(), &end, 10);
  return end != line.c_str();
}
} // namespace

bool RaplEnergy::open(const std::string &root) {
  domains.clear();
  DIR *dir = opendir(root.c_str());
  if (!dir) {
    why = root + " does not exist (no RAPL powercap driver here)";
    return false;
  }
  std::vector<std::string> names;
  while (struct dirent *e = readdir(dir)) {
    std::string n = e->d_name;
    // Top-level package zones are intel-rapl:N (subzones have a second
    // colon: intel-rapl:0:0 is a core/uncore/dram part of package 0).
    if (n.rfind("intel-rapl:", 0) == 0 &&
        n.find(':', sizeof("intel-rapl:") - 1) == std::string::npos)
      names.push_back(n);
  }
  closedir(dir);
  std::sort(names.begin(), names.end());
  if (names.empty()) {
    why = "no intel-rapl package domain under " + root;
    return false;
  }
  for (const std::string &n : names) {
    Domain d;
    std::string base = root + "/" + n;
    if (!readFirstLine(base + "/name", d.name))
      d.name = n;
    d.energyPath = base + "/energy_uj";
    uint64_t probe;
    if (!readU64(d.energyPath, probe)) {
      domains.clear();
      why = d.energyPath + " is not readable (it needs root on most kernels)";
      return false;
    }
    if (!readU64(base + "/max_energy_range_uj", d.maxRange))
      d.maxRange = 0;
    domains.push_back(d);
  }
  why.clear();
  return true;
}

std::vector<std::string> RaplEnergy::domainNames() const {
  std::vector<std::string> out;
  for (const Domain &d : domains)
    out.push_back(d.name);
  return out;
}

std::vector<uint64_t> RaplEnergy::read() const {
  std::vector<uint64_t> out;
  for (const Domain &d : domains) {
    uint64_t v = 0;
    readU64(d.energyPath, v);
    out.push_back(v);
  }
  return out;
}

double RaplEnergy::joulesBetween(const std::vector<uint64_t> &before,
                                 const std::vector<uint64_t> &after) const {
  double uj = 0;
  for (size_t i = 0; i < domains.size() && i < before.size() &&
                     i < after.size();
       ++i) {
    if (after[i] >= before[i])
      uj += double(after[i] - before[i]);
    else if (domains[i].maxRange) // the counter wrapped once
      uj += double(domains[i].maxRange - before[i] + after[i]);
  }
  return uj * 1e-6;
}

} // namespace run
} // namespace kiln

bool kiln::run::timeRuns(const std::function<bool(double &)> &runOnce,
                         long warmup, long iterations, double durationSeconds,
                         const std::function<bool()> &beforeTimed,
                         TimedRuns &out) {
  out = TimedRuns();
  for (long w = 0; w < warmup; ++w) {
    double ms;
    if (!runOnce(ms))
      return false;
  }
  RaplEnergy rapl;
  rapl.open();
  std::vector<uint64_t> energyBefore = rapl.read();
  if (beforeTimed && !beforeTimed())
    return false;
  auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double, std::milli>(
               std::chrono::steady_clock::now() - start)
        .count();
  };
  while (long(out.milliseconds.size()) < iterations ||
         (durationSeconds > 0 &&
          (out.milliseconds.empty() || out.elapsedMs < durationSeconds * 1e3))) {
    double ms;
    if (!runOnce(ms))
      return false;
    out.milliseconds.push_back(ms);
    out.elapsedMs = elapsed();
  }
  std::vector<uint64_t> energyAfter = rapl.read();
  out.energyAvailable = rapl.available();
  if (out.energyAvailable) {
    out.joules = rapl.joulesBetween(energyBefore, energyAfter);
    out.energyDomains = rapl.domainNames();
  }
  else
    out.energyReason = rapl.reason();
  return true;
}
