//===- Artifact.h - Reading and checking a model artifact -------*- C++ -*-===//
//
// The runtime's reader of docs/artifact.md, separate from the loader so the
// unit tests can check each rejection on its own.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_LIB_ARTIFACT_H
#define KILN_RUNTIME_LIB_ARTIFACT_H

#include "kiln/Json.h"
#include "kiln/ShapeExpr.h"
#include "kiln/runtime.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

struct TensorDesc {
  std::string name;
  int32_t dtype = 0;
  std::vector<int64_t> shape; ///< -1 for a symbolic dim
  /// Symbolic dims (inputs and outputs of a dynamic artifact): empty for a
  /// static tensor, else one per dim, an empty expression for a static one.
  /// An input's are single symbols, an output's expressions.
  std::vector<ShapeExpr> dimExprs;
  uint64_t bytes = 0; ///< product(shape) * element size; 0 when symbolic
  bool isSymbolic() const { return !dimExprs.empty(); }
  /// The symbol or expression text of dim `axis` ("" for a static dim).
  const std::string &dimName(size_t axis) const;
};

struct WeightDesc : TensorDesc {
  uint64_t offset = 0; ///< in the weights section
};

/// A kernel of the code's profiling hooks (the header's "kernels").
struct KernelDesc {
  std::string name;     ///< e.g. "matmul_0", "add+relu_3"
  std::string category; ///< gemm, attention, quantize, reduction, ...
  std::vector<std::string> onnxNodes;
  /// CUDA: a library call (cuBLASLt), not a function of the fatbin
  /// (optional "library": true).
  bool library = false;
};

struct ArtifactHeader {
  uint32_t version = 0;
  uint64_t headerSize = 0;
  uint64_t dataOffset = 0;
  uint64_t hash = 0;
  std::string json;
  json::Value root;
  std::string targetKind, triple, cpu;
  std::string chip; ///< target kind "cuda": e.g. "sm_80" (cpu may be empty)
  std::vector<std::string> features;
  std::string entry;
  /// A tensor-parallel shard (the header's options tensor_parallel_ranks
  /// and tensor_parallel_rank; 1 and 0 otherwise): it runs only as that
  /// rank of a world of that size.
  /// 0: not a shard.
  int64_t tensorParallelRanks = 0, tensorParallelRank = 0;
  /// The header's "symbols" (empty: a static artifact). kiln_entry then
  /// gets their values as one more buffer (docs/artifact.md).
  std::vector<std::string> symbols;
  /// The header's "constraints" over the symbols, checked on every run.
  std::vector<ShapeConstraint> constraints;
  std::vector<TensorDesc> inputs, outputs;
  /// The header's "aliases": per output, the index of the input whose
  /// buffer it is written in (-1: none). The caller passes one buffer for
  /// both.
  std::vector<int64_t> outputAliases;
  std::vector<WeightDesc> weights;
  std::vector<KernelDesc> kernels; ///< index = the hooks' kernel id
  uint64_t codeOffset = 0, codeSize = 0;
  uint64_t weightsOffset = 0, weightsSize = 0;
  std::string weightsFile; ///< empty: in this file
  /// The "cuda-fatbin" section (target kind "cuda"; required there).
  bool haveFatbin = false;
  uint64_t fatbinOffset = 0, fatbinSize = 0;
};

/// Parses and checks an artifact held in memory (`size` bytes at `data`):
/// prefix, sizes, content hash, header JSON and its consistency. Does not
/// check the host (checkHost does). On failure returns the status and sets
/// `error`.
kiln_status parseArtifact(const unsigned char *data, uint64_t size,
                          ArtifactHeader &out, std::string &error);

/// Whether this host can run the artifact's target: its kind, architecture
/// and CPU features.
kiln_status checkHost(const ArtifactHeader &header, std::string &error);

/// Whether the host CPU has `feature` (LLVM/GCC spelling: "avx2",
/// "avx512vnni", "sse4.2", a leading '+' allowed). LLVM's tuning flags
/// ("fast-gather", "prefer-256-bit") count as present. Sets `known` to false
/// for a name it cannot check: one it does not know, or one the kernel's
/// flag list does not show (absent features look the same there).
bool hostHasCpuFeature(const std::string &feature, bool &known);

} // namespace kiln

#endif // KILN_RUNTIME_LIB_ARTIFACT_H
