//===- Measurement.h - kiln-run's measurement of one artifact ---*- C++ -*-===//
//
// What `kiln-run MODEL.kiln ...` does, as a library: load the artifact, take
// the inputs (an ONNX test data folder, .npy/.pb files, seeded random
// numbers), the expected outputs (files, or another artifact run on the
// same inputs), run once cold, warm up, time the runs (Measure.h's
// timeRuns), check that further runs are bit-identical, compare the outputs
// and judge their quality, profile the kernels; then print the result or
// write it as JSON (schema kiln.run-result v2, docs/kiln-run.md).
// tools/kiln-run is the command line over it.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUN_MEASUREMENT_H
#define KILN_RUN_MEASUREMENT_H

#include "kiln/Run/Measure.h"
#include "kiln/Run/Profile.h"
#include "kiln/Run/TensorIO.h"
#include "kiln/runtime.h"

#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace kiln {
namespace run {

/// A copy of a session's output `tensor`: its dtype, dims and data (not its
/// name; `tensor` stays the caller's to release).
HostTensor copyOutput(const kiln_tensor &tensor);

struct RunOptions {
  std::string model;
  /// Inputs: an ONNX test data folder, NAME=FILE pairs, a seed.
  std::string inputsDir;
  std::vector<std::pair<std::string, std::string>> inputFiles;
  bool haveSeed = false;
  uint64_t seed = 0;
  /// Values of the model's symbolic dims for random inputs (--dims
  /// name=N,...); a symbol neither given here nor bound by an input file
  /// is 1.
  std::vector<std::pair<std::string, int64_t>> dims;
  /// Expected outputs: a folder (default: inputsDir), or a reference
  /// artifact run on the same inputs.
  std::string expectedDir, referenceModel;
  double rtol = 1e-3, atol = 1e-7;
  int threads = 0;
  std::string device; ///< "": the artifact's target
  bool cudaGraphs = true;
  long warmup = 0, iterations = 0;
  double duration = 0;
  long batch = -1; ///< samples per run; -1: the first input's dim 0
  long consistencyRuns = 3;
  bool profile = false;
  /// Called once between the warmup and the timed runs with the function
  /// that runs the model once (e.g. a barrier of the ranks and a run of
  /// rank 0 alone, kiln-run under mpirun); false stops the measurement.
  std::function<bool(const std::function<bool(double &ms)> &runOnce)>
      beforeTimed;
};

struct RunResult {
  uint64_t contentHash = 0;
  std::string source; ///< "dir", "files", "files+seed" or "seed"
  bool useSeed = false;
  /// A model with symbolic dims: each symbol's value in this measurement
  /// (in the model's order), and those that took the default 1.
  std::vector<std::pair<std::string, int64_t>> symbols;
  std::vector<std::string> defaultedSymbols;
  std::vector<HostTensor> inputs, outputs, expected; ///< the real shapes
  std::vector<bool> haveExpected;
  std::vector<Comparison> comparisons;
  std::vector<Quality> quality;
  size_t compared = 0;
  bool allPass = true;
  std::string device, cudaGraphs;
  bool onCuda = false;
  int threads = 0;
  double loadMs = 0, sessionMs = 0, coldMs = 0;
  TimedRuns timed;
  TimingSummary timing;
  kiln_session_stats stats = {};
  uint64_t rssBytes = 0;
  long batch = 1;
  std::string batchFrom;
  long consistencyChecked = 0;
  bool bitIdentical = true;
  std::vector<std::string> inconsistent;
  ProfileReport profile;
};

/// Loads, runs, times, compares and profiles as `options` say. False with
/// `error` set (the reason, naming the file, input or output) on anything
/// that stops the measurement; a comparison that fails is a result, not an
/// error.
bool measure(const RunOptions &options, RunResult &result, std::string &error);

/// The human-readable result, as kiln-run prints it.
void printResult(FILE *out, const RunOptions &options, const RunResult &result);

/// The result as JSON (schema kiln.run-result v2).
std::string resultJson(const RunOptions &options, const RunResult &result);

/// The artifact's metadata as `kiln-run --info` prints it (symbolic dims
/// by name: "[batch, 784]"); false with `error` when it cannot be loaded.
bool printArtifactInfo(FILE *out, const std::string &path, std::string &error);

/// The symbols of a model's symbolic dims, in its header's order (empty
/// for a static model).
std::vector<std::string> modelSymbols(const kiln_model *model);

/// An input's or output's shape with symbolic dims by name: "[batch, 784]".
std::string modelShapeString(const kiln_model *model, bool output,
                             size_t index);

/// A command-line integer of `flag` in [min, max] ("--threads wants
/// 0..4096, got 'x'" otherwise).
bool parseCountOption(const std::string &flag, const char *text, long long min,
                      long long max, long long &out, std::string &error);
/// A command-line number >= 0 (> 0 when `positive`).
bool parseRealOption(const std::string &flag, const char *text, bool positive,
                     double &out, std::string &error);

/// Parses --dims "name=N[,name=N...]" (N >= 1) and appends to `dims`.
bool parseDimsOption(const std::string &text,
                     std::vector<std::pair<std::string, int64_t>> &dims,
                     std::string &error);

/// --save-outputs: DIR/output_N.npy, created as needed, with the outputs'
/// real shapes.
bool saveOutputs(const std::string &dir, const RunResult &result,
                 std::string &error);

/// --json FILE: resultJson written to `path`.
bool writeResultJson(const std::string &path, const RunOptions &options,
                     const RunResult &result, std::string &error);

/// --list-devices: "cpu", then the CUDA devices or why there are none.
void printDevices(FILE *out);

} // namespace run
} // namespace kiln

#endif // KILN_RUN_MEASUREMENT_H
