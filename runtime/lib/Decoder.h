//===- Decoder.h - A decoder's signature and token choice --------*- C++ -*-===//
//
// What the runtime's generation loops (Generate.cpp: one static batch;
// Serve.cpp: in-flight batching) share: the roles of a decoder's inputs and
// outputs (docs/generation.md), runtime-allocated outputs that release
// themselves, and choosing a token from a row of logits.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_DECODER_H
#define KILN_RUNTIME_DECODER_H

#include "kiln/runtime.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {
namespace decoder {

/// A runtime-allocated output, released when it goes out of scope.
struct Owned {
  kiln_tensor t{};
  Owned() = default;
  Owned(const Owned &) = delete;
  Owned &operator=(const Owned &) = delete;
  Owned(Owned &&o) noexcept : t(o.t) { o.t = {}; }
  Owned &operator=(Owned &&o) noexcept;
  ~Owned() { release(); }
  void release();
};

uint64_t elementsOf(const int64_t *dims, int32_t rank);

/// The output a state input pairs with: past_key_values.X -> present.X,
/// pastX -> presentX.
std::string present(const std::string &past);

/// The decoder's signature: where each role sits among the model's inputs
/// and outputs.
struct Signature {
  size_t numInputs = 0, numOutputs = 0;
  size_t ids = SIZE_MAX, mask = SIZE_MAX, positions = SIZE_MAX;
  /// cache_position int64 [batch]: a static cache (ONNX Runtime GenAI's
  /// shared buffer), whose symbolic non-batch dims are the cache length.
  size_t cachePosition = SIZE_MAX;
  int64_t staticMaskLength = -1; // attention_mask's dim 1 when static
  size_t logits = SIZE_MAX;
  struct State {
    size_t input, output;
    kiln_tensor_info info;
    std::vector<bool> batchAxis; // the axes sized by the batch
    /// The model writes the output in the input's buffer
    /// (kiln_model_output_alias): one buffer serves every step.
    bool inPlace = false;
  };
  std::vector<State> state;
  int32_t logitsDtype = 0;
  int64_t staticBatch = -1; // input_ids' dim 0 when static
  int64_t vocab = -1;       // logits' dim 2 when static
};

/// Fills `sig`; an error (the runtime's last error set) naming what does not
/// fit a decoder.
kiln_status readSignature(const kiln_model *model, Signature &sig);

/// splitmix64: a seeded stream of uniform doubles in [0, 1).
struct Random {
  uint64_t state;
  double next();
};

/// Row `row` of `logits` [B, S, V] (float32 or float16) at its last
/// position, as floats.
void lastLogits(const kiln_tensor &logits, int32_t dtype, size_t row,
                std::vector<float> &out);

/// The next token from one row of logits: greedy (the lowest id on ties)
/// when temperature <= 0, else sampled with top-k / top-p.
int64_t choose(const std::vector<float> &row, float temperature, int32_t topK,
               float topP, Random &random);

} // namespace decoder
} // namespace kiln

#endif // KILN_RUNTIME_DECODER_H
