//===- Calibrate.h - Activation range observers for int8 PTQ ----*- C++ -*-===//
//
// The observers of kiln-compile --precision=int8 --calibration=DIR: the
// range of one activation tensor from its values over every calibration
// set (the float graph run in-process by AutoKeep's runner), by min/max,
// a percentile of |x|, or the entropy (KL divergence) threshold search of
// TensorRT. Plain C++ on kiln-run's tensors, no MLIR; deterministic (no
// sampling, fixed summation order). docs/quantization.md gives the
// formulas; test/E2E/ptq.py checks them against numpy.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_QUANTIZATION_CALIBRATE_H
#define KILN_QUANTIZATION_CALIBRATE_H

#include "kiln/Run/TensorIO.h"

#include <string>
#include <vector>

namespace kiln {
namespace calib {

enum class Method { MinMax, Percentile, Entropy };

/// Parses minmax, percentile or entropy.
bool parseMethod(const std::string &name, Method &method);

/// The number of histogram bins of the entropy method, and the number of
/// quantized bins its candidate distributions are merged into.
constexpr int kEntropyBins = 2048;
constexpr int kEntropyQuantizedBins = 128;

struct Range {
  float min = 0, max = 0;      ///< observed over all values
  float lo = 0, hi = 0;        ///< the range quantized (clipped by threshold)
  double threshold = 0;        ///< percentile/entropy: the |x| threshold
};

/// The range of the float32 tensors `values` (one per calibration set):
///  minmax      lo, hi = min, max
///  percentile  t = numpy.percentile(|x| as float64, percentile) (linear),
///              lo, hi = max(min, -t), min(max, t)
///  entropy     t = TensorRT's KL threshold on a 2048-bin histogram of |x|
///              over [0, max|x|], lo, hi as for percentile
/// Fails (naming nothing: the caller names the tensor) on a non-finite
/// value or an empty tensor.
bool observe(const std::vector<const run::HostTensor *> &values, Method method,
             double percentile, Range &range, std::string &error);

/// The entropy threshold's bin count i (the threshold is i * max|x| / 2048)
/// for a histogram of kEntropyBins counts; exposed for tests.
int entropyThresholdBins(const std::vector<int64_t> &histogram);

} // namespace calib
} // namespace kiln

#endif // KILN_QUANTIZATION_CALIBRATE_H
