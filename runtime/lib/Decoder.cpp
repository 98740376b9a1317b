//===- Decoder.cpp - A decoder's signature and token choice ---------------===//
//
// See Decoder.h.
//
//===----------------------------------------------------------------------===//

#include "Decoder.h"
#include "Errors.h"
#include "kiln/half.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <unordered_map>

using kiln::setRuntimeError;

namespace kiln {
namespace decoder {

Owned &Owned::operator=(Owned &&o) noexcept {
  if (this != &o) {
    release();
    t = o.t;
    o.t = {};
  }
  return *this;
}

void Owned::release() {
  if (t.data)
    kiln_tensor_release(&t);
}

uint64_t elementsOf(const int64_t *dims, int32_t rank) {
  uint64_t n = 1;
  for (int32_t i = 0; i < rank; ++i)
    n *= uint64_t(dims[i]);
  return n;
}

std::string present(const std::string &past) {
  static const std::string optimum = "past_key_values.";
  if (past.compare(0, optimum.size(), optimum) == 0)
    return "present." + past.substr(optimum.size());
  return "present" + past.substr(4);
}

bool same(const char *a, const char *b) {
  return a && b && std::strcmp(a, b) == 0;
}

kiln_status readSignature(const kiln_model *model, Signature &sig) {
  sig.numInputs = kiln_model_num_inputs(model);
  sig.numOutputs = kiln_model_num_outputs(model);
  std::unordered_map<std::string, size_t> outputs;
  for (size_t o = 0; o < sig.numOutputs; ++o) {
    kiln_tensor_info info;
    kiln_model_output_info(model, o, &info);
    outputs[info.name] = o;
    if (same(info.name, "logits")) {
      sig.logits = o;
      sig.logitsDtype = info.dtype;
      if (info.rank != 3)
        return setRuntimeError(KILN_ERROR_TENSOR_MISMATCH,
                               "generation: output 'logits' has rank " +
                                   std::to_string(info.rank) +
                                   ", not 3 ([batch, seq, vocab])");
      if (info.dtype != KILN_DTYPE_FLOAT32 && info.dtype != KILN_DTYPE_FLOAT16)
        return setRuntimeError(
            KILN_ERROR_TENSOR_MISMATCH,
            std::string("generation: output 'logits' is ") +
                kiln_dtype_name(info.dtype) + ", not float32 or float16");
      sig.vocab = info.dims[2];
    }
  }
  if (sig.logits == SIZE_MAX)
    return setRuntimeError(KILN_ERROR_TENSOR_MISMATCH,
                           "generation: the model has no output 'logits' "
                           "(not a decoder)");
  const char *batchName = nullptr;
  for (size_t i = 0; i < sig.numInputs; ++i) {
    kiln_tensor_info info;
    kiln_model_input_info(model, i, &info);
    std::string name = info.name;
    if (name == "cache_position") {
      if (info.dtype != KILN_DTYPE_INT64 || info.rank != 1)
        return setRuntimeError(KILN_ERROR_TENSOR_MISMATCH,
                               "generation: input 'cache_position' must be "
                               "int64 [batch]");
      sig.cachePosition = i;
      continue;
    }
    bool tokenInput = name == "input_ids" || name == "attention_mask" ||
                      name == "position_ids";
    if (tokenInput) {
      if (info.dtype != KILN_DTYPE_INT64 || info.rank != 2)
        return setRuntimeError(KILN_ERROR_TENSOR_MISMATCH,
                               "generation: input '" + name +
                                   "' must be int64 [batch, seq]");
      if (name == "input_ids") {
        sig.ids = i;
        batchName = kiln_model_input_dim_name(model, i, 0);
        if (!batchName)
          sig.staticBatch = info.dims[0];
      } else if (name == "attention_mask") {
        sig.mask = i;
        sig.staticMaskLength = info.dims[1];
      } else {
        sig.positions = i;
      }
      continue;
    }
    if (name.compare(0, 4, "past") != 0)
      return setRuntimeError(
          KILN_ERROR_TENSOR_MISMATCH,
          "generation: input '" + name +
              "' is neither a token input (input_ids, attention_mask, "
              "position_ids) nor a state input (past...)");
    auto it = outputs.find(present(name));
    if (it == outputs.end())
      return setRuntimeError(KILN_ERROR_TENSOR_MISMATCH,
                             "generation: state input '" + name +
                                 "' has no output '" + present(name) + "'");
    kiln_tensor_info out;
    kiln_model_output_info(model, it->second, &out);
    if (out.dtype != info.dtype || out.rank != info.rank)
      return setRuntimeError(
          KILN_ERROR_TENSOR_MISMATCH,
          "generation: state input '" + name + "' and output '" +
              present(name) + "' differ in dtype or rank");
    if (kiln_dtype_size(info.dtype) == 0)
      return setRuntimeError(KILN_ERROR_TENSOR_MISMATCH,
                             "generation: state input '" + name +
                                 "' has an unknown dtype");
    sig.state.push_back({i, it->second, info, {},
                         kiln_model_output_alias(model, it->second) ==
                             int64_t(i)});
  }
  if (sig.ids == SIZE_MAX)
    return setRuntimeError(KILN_ERROR_TENSOR_MISMATCH,
                           "generation: the model has no input 'input_ids' "
                           "(not a decoder)");
  if (sig.cachePosition != SIZE_MAX && sig.mask == SIZE_MAX)
    return setRuntimeError(KILN_ERROR_TENSOR_MISMATCH,
                           "generation: a static cache (input "
                           "'cache_position') needs an 'attention_mask'");
  for (Signature::State &s : sig.state)
    for (int32_t axis = 0; axis < s.info.rank; ++axis)
      s.batchAxis.push_back(
          axis == 0 &&
          (batchName ? same(kiln_model_input_dim_name(model, s.input, axis),
                            batchName)
                     : s.info.dims[0] == sig.staticBatch));
  return KILN_OK;
}

double Random::next() {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return double(z >> 11) * 0x1.0p-53;
}

namespace {

float halfToFloat(uint16_t h) { return kiln::halfBitsToFloat(h); }

} // namespace

void lastLogits(const kiln_tensor &logits, int32_t dtype, size_t row,
                std::vector<float> &out) {
  size_t seq = size_t(logits.dims[1]), vocab = size_t(logits.dims[2]);
  size_t at = (row * seq + (seq - 1)) * vocab;
  out.resize(vocab);
  if (dtype == KILN_DTYPE_FLOAT32) {
    const float *p = static_cast<const float *>(logits.data) + at;
    std::copy(p, p + vocab, out.begin());
  } else {
    const uint16_t *p = static_cast<const uint16_t *>(logits.data) + at;
    for (size_t v = 0; v < vocab; ++v)
      out[v] = halfToFloat(p[v]);
  }
}

int64_t choose(const std::vector<float> &row, float temperature, int32_t topK,
               float topP, Random &random) {
  size_t vocab = row.size();
  if (temperature <= 0.0f) {
    size_t best = 0;
    for (size_t v = 1; v < vocab; ++v)
      if (row[v] > row[best])
        best = v;
    return int64_t(best);
  }
  std::vector<size_t> order(vocab);
  std::iota(order.begin(), order.end(), 0);
  size_t keep = vocab;
  if (topK > 0 && size_t(topK) < vocab)
    keep = size_t(topK);
  std::partial_sort(order.begin(), order.begin() + keep, order.end(),
                    [&](size_t a, size_t b) {
                      return row[a] > row[b] || (row[a] == row[b] && a < b);
                    });
  order.resize(keep);
  double top = row[order[0]];
  std::vector<double> p(keep);
  double sum = 0;
  for (size_t i = 0; i < keep; ++i)
    sum += p[i] = std::exp((double(row[order[i]]) - top) / temperature);
  if (topP > 0.0f && topP < 1.0f) {
    double acc = 0;
    size_t cut = keep;
    for (size_t i = 0; i < keep; ++i) {
      acc += p[i] / sum;
      if (acc >= topP) {
        cut = i + 1;
        break;
      }
    }
    keep = cut;
    sum = std::accumulate(p.begin(), p.begin() + keep, 0.0);
  }
  double u = random.next() * sum;
  for (size_t i = 0; i < keep; ++i) {
    u -= p[i];
    if (u < 0)
      return int64_t(order[i]);
  }
  return int64_t(order[keep - 1]);
}

} // namespace decoder
} // namespace kiln
