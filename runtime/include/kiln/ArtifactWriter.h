//===- ArtifactWriter.h - Writes a model.kiln artifact ----------*- C++ -*-===//
//
// The writer of docs/artifact.md. kiln-compile fills an ArtifactSpec with the
// model's metadata, its compiled shared object and its weights, and calls
// writeArtifact. Plain C++17, no MLIR or LLVM, no exceptions thrown at the
// caller (the compiler is built without them): errors come back as a string.
//
// Example:
//
//   kiln::ArtifactSpec spec;
//   spec.compilerVersion = "0.4.0";
//   spec.source = "models/mlp.onnx";
//   spec.target = {"cpu", "x86_64-pc-linux-gnu", "znver3", {"avx2", "fma"}};
//   spec.setOption("opt_level", int64_t(3));
//   spec.setOption("kernels", "codegen");
//   spec.pipeline = pipelineString;
//   spec.inputs.push_back({"x", "float32", {1, 64}});
//   spec.outputs.push_back({"y", "float32", {1, 10}});
//   // or with a symbolic batch:
//   //   spec.symbols = {"batch"};
//   //   spec.inputs.push_back({"x", "float32", {-1, 64}, {"batch", ""}});
//   //   spec.outputs.push_back({"y", "float32", {-1, 10}, {"batch", ""}});
//   spec.weights.push_back({"fc1.weight", "float32", {64, 64}, ptr, 16384});
//   spec.code = soBytes.data();
//   spec.codeSize = soBytes.size();
//   std::string err = kiln::writeArtifact("model.kiln", spec);
//   if (!err.empty()) ... report err ...
//
// The weights are passed in the order the code's kiln_entry expects them
// (buffers: inputs, weights, outputs). They are copied straight from the
// given pointers to the file, so no second copy is held in memory.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_ARTIFACTWRITER_H
#define KILN_RUNTIME_ARTIFACTWRITER_H

#include "kiln/artifact_format.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kiln {

/// An input or output of the entry function.
struct ArtifactTensor {
  std::string name;
  std::string dtype;          ///< "float32", "int64", ... (docs/artifact.md)
  std::vector<int64_t> shape; ///< sizes; a symbolic dim's entry is ignored
  /// Symbolic dims: empty (all static), or one entry per dim: "" for a
  /// static dim, else (an input) the symbol's name or (an output) the
  /// expression over the symbols, e.g. "batch * seq" (docs/artifact.md,
  /// "Symbolic dims"). Written as the string in "shape".
  std::vector<std::string> dimNames;
};

/// A weight: its bytes are dense row-major `dtype` of `shape`, `size` bytes
/// (= product(shape) * element size; checked).
struct ArtifactWeight {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  const void *data = nullptr;
  uint64_t size = 0;
};

struct ArtifactTarget {
  std::string kind = "cpu";
  std::string triple;                ///< e.g. "x86_64-pc-linux-gnu"
  std::string cpu;                   ///< e.g. "znver3", "x86-64-v3"
  std::vector<std::string> features; ///< e.g. {"avx2", "fma"}: all needed
  /// kind "cuda": the GPU architecture of the kernels ("sm_80"); the header
  /// then has {"kind", "chip", "triple"} (the triple of the host code) and
  /// no cpu/features.
  std::string chip;
};

/// A section beside the code and the weights (e.g. "cuda-fatbin"), stored
/// in the artifact after the code, 64-byte aligned.
struct ArtifactSection {
  std::string name;
  std::string kind;
  const void *data = nullptr;
  uint64_t size = 0;
};

struct ArtifactSpec {
  std::string compilerName = "kiln-compile";
  std::string compilerVersion;
  std::string source; ///< the ONNX model's path as given
  ArtifactTarget target;
  /// The compile options as a JSON object. When `optionsJson` is non-empty it
  /// is used verbatim (it must parse as a JSON object); otherwise the
  /// `options` pairs (key, value already rendered as JSON) are written in
  /// order. setOption renders values for you.
  std::string optionsJson;
  std::vector<std::pair<std::string, std::string>> options;
  std::string pipeline; ///< the pass pipeline as text
  std::string entry = "kiln_entry";
  /// The symbols of the symbolic dims, in the order kiln_entry gets their
  /// values (its buffer after the outputs); empty: a static artifact. Each
  /// must be the dim of some input.
  std::vector<std::string> symbols;
  /// "lhs <= rhs" over the symbols, checked by the runtime on every call
  /// (the model's shapes assume them; ShapeExpr.h).
  std::vector<std::string> constraints;
  std::vector<ArtifactTensor> inputs;
  std::vector<ArtifactTensor> outputs;
  /// (output, input) names: the code writes the output in the input's
  /// buffer, and the caller passes the same buffer for both (a static KV
  /// cache updated in place; docs/artifact.md, "aliases"). Each name once;
  /// the two have the same dtype and shape.
  std::vector<std::pair<std::string, std::string>> aliases;
  std::vector<ArtifactWeight> weights;
  /// The kernel table of the profiling hooks as a JSON array
  /// ([{"id", "name", "category", "onnx_nodes"}], docs/artifact.md); empty:
  /// the code has no hooks and the header no "kernels" key.
  std::string kernelsJson;
  /// The code section: the ELF shared object's bytes.
  const void *code = nullptr;
  uint64_t codeSize = 0;
  /// More sections, written after the code in this order (names other than
  /// "code" and "weights", each once).
  std::vector<ArtifactSection> sections;
  /// Weights of more than this many bytes in total go to the side file
  /// "<path>.weights" (docs/artifact.md); a parameter so tests can use a
  /// small value.
  uint64_t sideWeightsThreshold = KILN_ARTIFACT_SIDE_WEIGHTS_THRESHOLD;

  void setOption(const std::string &key, const std::string &value);
  void setOption(const std::string &key, const char *value);
  void setOption(const std::string &key, int64_t value);
  void setOption(const std::string &key, bool value);
};

/// Writes the artifact to `path` (and "<path>.weights" when the weights go to
/// a side file; a stale side file of an earlier artifact at `path` is
/// removed otherwise). The file is written to a temporary name and renamed,
/// so a failed write leaves no half artifact at `path`. Returns "" on
/// success, otherwise a message.
std::string writeArtifact(const std::string &path, const ArtifactSpec &spec);

/// The header JSON writeArtifact would write for `spec` with the given
/// section layout (exposed for tests and tools).
std::string renderArtifactHeader(const ArtifactSpec &spec,
                                 uint64_t codeOffset, uint64_t weightsOffset,
                                 uint64_t weightsSize,
                                 const std::string &weightsFile);

/// The offsets (relative to the data area) of spec.sections, laid out
/// after the code section at `codeOffset`; `end` gets the end of the last.
std::vector<uint64_t> artifactSectionOffsets(const ArtifactSpec &spec,
                                             uint64_t codeOffset,
                                             uint64_t &end);

} // namespace kiln

#endif // KILN_RUNTIME_ARTIFACTWRITER_H
