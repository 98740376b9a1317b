//===- Runner.h - Running artifacts for the precision analyses --*- C++ -*-===//
//
// The measuring half of --auto-keep (the sensitivity analysis
// of mixed precision): input sets from a calibration folder or seeded random
// numbers, running a compiled artifact in-process through the Kiln runtime
// (KilnRuntime, no MLIR), and the error of one run's outputs against
// another's. The compiling half is Quantization.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_QUANTIZATION_RUNNER_H
#define KILN_QUANTIZATION_RUNNER_H

#include "kiln/Run/Measure.h"
#include "kiln/Run/TensorIO.h"

#include <string>
#include <vector>

namespace kiln {
namespace autokeep {

/// One set of model inputs, in the model's input order.
struct InputSet {
  std::string label; ///< the folder it came from, or "seed N"
  std::vector<run::HostTensor> tensors;
};

/// Every output of a run per input set: outputs[set][output].
using Outputs = std::vector<std::vector<run::HostTensor>>;

/// The input sets for the artifact at `artifactPath` (for the inputs' names,
/// dtypes and static shapes): with `calibrationDir`, DIR/input_N.{npy,pb}
/// or DIR/<input name>.npy as one set, or else every subfolder of DIR
/// holding its first input so (sorted by name, e.g. test_data_set_N) as one
/// set each; an input missing from a set, or of another dtype or shape, is
/// an error naming it; without it, `numRandomSets` sets of seeded
/// random numbers (kiln-run --seed's generator: set s uses seed + s).
bool loadInputSets(const std::string &artifactPath,
                   const std::string &calibrationDir, uint64_t seed,
                   unsigned numRandomSets, std::vector<InputSet> &sets,
                   std::string &error);

/// Runs the artifact on every set, on one thread (deterministic).
bool runArtifact(const std::string &artifactPath,
                 const std::vector<InputSet> &sets, Outputs &outputs,
                 std::string &error);

/// The error of `actual` against `reference` over all float outputs of all
/// sets: the largest |actual - reference|, relative to the largest
/// |reference|, and the cosine similarity of all outputs taken as one
/// vector. An output that is NaN or infinite where the reference is finite
/// makes the relative error infinite.
struct Error {
  double maxAbs = 0;
  double maxRef = 0;
  double relative = 0;
  double cosine = 1;
};
Error measure(const Outputs &reference, const Outputs &actual);

/// Output `index` of every set against the reference's, the sets taken
/// together (kiln-run's assessQuality: max abs/rel error, cosine, top-1
/// agreement along the last axis); not comparable when the shapes or
/// dtypes differ or it is not a float output.
run::Quality compareOutput(const Outputs &reference, const Outputs &actual,
                           size_t index);

} // namespace autokeep
} // namespace kiln

#endif // KILN_QUANTIZATION_RUNNER_H
