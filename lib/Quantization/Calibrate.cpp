//===- Calibrate.cpp - Activation range observers for int8 PTQ ------------===//

#include "kiln/Quantization/Calibrate.h"

#include "kiln/Run/Measure.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kiln {
namespace calib {

bool parseMethod(const std::string &name, Method &method) {
  if (name == "minmax")
    method = Method::MinMax;
  else if (name == "percentile")
    method = Method::Percentile;
  else if (name == "entropy")
    method = Method::Entropy;
  else
    return false;
  return true;
}

int entropyThresholdBins(const std::vector<int64_t> &hist) {
  const int nBins = int(hist.size()), nQ = kEntropyQuantizedBins;
  // suffix[i] = sum of hist[i..]: the outliers clipped into bin i - 1.
  std::vector<int64_t> suffix(nBins + 1, 0);
  for (int i = nBins - 1; i >= 0; --i)
    suffix[i] = suffix[i + 1] + hist[i];
  int best = nBins;
  double bestKl = std::numeric_limits<double>::infinity();
  std::vector<double> p, q;
  for (int i = nQ; i <= nBins; ++i) {
    // P: the first i bins, the outliers added to the last of them.
    p.assign(hist.begin(), hist.begin() + i);
    p[i - 1] += double(suffix[i]);
    // Q: the first i bins (without the outliers) merged into nQ groups (the
    // last one takes the remainder), each group's count spread evenly over
    // the bins where P is not empty (MXNet's and TVM's version of the
    // search).
    q.assign(i, 0.0);
    int merged = i / nQ;
    for (int j = 0; j < nQ; ++j) {
      int start = j * merged, stop = j == nQ - 1 ? i : start + merged;
      double total = 0;
      int nonZero = 0;
      for (int k = start; k < stop; ++k) {
        total += double(hist[k]);
        nonZero += p[k] != 0;
      }
      if (nonZero)
        for (int k = start; k < stop; ++k)
          if (p[k] != 0)
            q[k] = total / double(nonZero);
    }
    double pSum = 0, qSum = 0;
    for (int k = 0; k < i; ++k) {
      pSum += p[k];
      qSum += q[k];
    }
    double kl = 0;
    for (int k = 0; k < i; ++k) {
      if (p[k] == 0)
        continue;
      if (q[k] == 0) { // outliers after an empty last group: Q cannot
                       // express P
        kl = std::numeric_limits<double>::infinity();
        break;
      }
      double pk = p[k] / pSum, qk = q[k] / qSum;
      kl += pk * std::log(pk / qk);
    }
    if (kl < bestKl) {
      bestKl = kl;
      best = i;
    }
  }
  return best;
}

bool observe(const std::vector<const run::HostTensor *> &values, Method method,
             double percentile, Range &range, std::string &error) {
  uint64_t count = 0;
  float mn = std::numeric_limits<float>::infinity(), mx = -mn;
  for (const run::HostTensor *t : values) {
    for (uint64_t i = 0, n = t->numElements(); i < n; ++i) {
      double v = t->at(i);
      if (!std::isfinite(v)) {
        error = "a non-finite value (" + std::to_string(v) + ")";
        return false;
      }
      mn = std::min(mn, float(v));
      mx = std::max(mx, float(v));
    }
    count += t->numElements();
  }
  if (count == 0) {
    error = "no values";
    return false;
  }
  range.min = range.lo = mn;
  range.max = range.hi = mx;
  if (method == Method::MinMax)
    return true;

  double t = 0;
  if (method == Method::Percentile) {
    std::vector<double> abs;
    abs.reserve(count);
    for (const run::HostTensor *v : values)
      for (uint64_t i = 0, n = v->numElements(); i < n; ++i)
        abs.push_back(std::fabs(v->at(i)));
    std::sort(abs.begin(), abs.end());
    t = run::percentileSorted(abs, percentile);
  } else {
    double amax = std::max(std::fabs(double(mn)), std::fabs(double(mx)));
    if (amax > 0) {
      std::vector<int64_t> hist(kEntropyBins, 0);
      double perBin = double(kEntropyBins) / amax;
      for (const run::HostTensor *v : values)
        for (uint64_t i = 0, n = v->numElements(); i < n; ++i) {
          int64_t bin = int64_t(std::fabs(v->at(i)) * perBin);
          ++hist[std::min<int64_t>(bin, kEntropyBins - 1)];
        }
      int bins = entropyThresholdBins(hist);
      t = double(bins) * (amax / double(kEntropyBins));
    }
  }
  range.threshold = t;
  range.lo = float(std::max(double(mn), -t));
  range.hi = float(std::min(double(mx), t));
  return true;
}

} // namespace calib
} // namespace kiln
