//===- Generate.cpp - Autoregressive decoding over a session --------------===//
//
// kiln_generate (runtime.h, docs/generation.md): finds the roles of a
// decoder's inputs and outputs, runs the prefill over the left-padded
// prompts and then one decode step per token, feeding each step's present
// outputs to the next step as its past inputs (the runtime-allocated output
// buffers are handed over, never copied), and chooses each token greedily or
// by seeded sampling. Only the public C API of the session is used.
//
//===----------------------------------------------------------------------===//

#include "Decoder.h"
#include "Errors.h"
#include "kiln/runtime.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <unordered_map>
#include <vector>

using kiln::setRuntimeError;

struct kiln_generation {
  std::vector<std::vector<int64_t>> tokens;
  std::vector<uint64_t> stepNs;
  std::vector<uint64_t> stepCopiedBytes; // state carried to a new buffer
  uint64_t stateBytes = 0;
  uint64_t peakStateBytes = 0;
  size_t promptLength = 0;
  size_t vocab = 0;
};

using namespace kiln::decoder;

extern "C" void kiln_generate_options_init(kiln_generate_options *o) {
  if (!o)
    return;
  std::memset(o, 0, sizeof(*o));
  o->max_new_tokens = 64;
  o->top_p = 1.0f;
}

extern "C" kiln_status kiln_generate(kiln_session *session,
                                     const int64_t *const *prompts,
                                     const size_t *promptLengths, size_t batch,
                                     const kiln_generate_options *options,
                                     kiln_generation **result) {
  if (!session || !result || (batch && (!prompts || !promptLengths)))
    return setRuntimeError(KILN_ERROR_INVALID_ARGUMENT,
                           "kiln_generate: a NULL argument");
  *result = nullptr;
  kiln_generate_options o;
  kiln_generate_options_init(&o);
  if (options)
    o = *options;
  if (batch == 0)
    return setRuntimeError(KILN_ERROR_INVALID_ARGUMENT,
                           "kiln_generate: no prompts");
  if (o.max_new_tokens < 1)
    return setRuntimeError(KILN_ERROR_INVALID_ARGUMENT,
                           "kiln_generate: max_new_tokens must be >= 1");
  if (o.num_stop_ids && !o.stop_ids)
    return setRuntimeError(KILN_ERROR_INVALID_ARGUMENT,
                           "kiln_generate: stop_ids is NULL");

  const kiln_model *model = kiln_session_model(session);
  Signature sig;
  if (kiln_status st = readSignature(model, sig))
    return st;
  if (sig.staticBatch >= 0 && int64_t(batch) != sig.staticBatch)
    return setRuntimeError(
        KILN_ERROR_TENSOR_MISMATCH,
        "generation: " + std::to_string(batch) +
            " prompts, but the model's batch is static: " +
            std::to_string(sig.staticBatch));
  size_t longest = 0;
  for (size_t b = 0; b < batch; ++b) {
    if (promptLengths[b] == 0 || !prompts[b])
      return setRuntimeError(KILN_ERROR_INVALID_ARGUMENT,
                             "generation: prompt " + std::to_string(b) +
                                 " is empty");
    for (size_t i = 0; i < promptLengths[b]; ++i)
      if (prompts[b][i] < 0 || (sig.vocab > 0 && prompts[b][i] >= sig.vocab))
        return setRuntimeError(
            KILN_ERROR_INVALID_ARGUMENT,
            "generation: prompt " + std::to_string(b) + " token " +
                std::to_string(i) + " is " + std::to_string(prompts[b][i]) +
                ", outside the vocab [0, " + std::to_string(sig.vocab) + ")");
    longest = std::max(longest, promptLengths[b]);
  }
  if (o.max_length > 0 &&
      int64_t(longest) + int64_t(o.max_new_tokens) > o.max_length)
    return setRuntimeError(
        KILN_ERROR_INVALID_ARGUMENT,
        "generation: a prompt of " + std::to_string(longest) + " tokens + " +
            std::to_string(o.max_new_tokens) +
            " new tokens exceeds max_length " + std::to_string(o.max_length));

  // A static cache has one length for the whole generation.
  int64_t cacheLength = 0;
  if (sig.cachePosition != SIZE_MAX) {
    cacheLength = sig.staticMaskLength >= 0 ? sig.staticMaskLength
                  : o.max_length > 0        ? o.max_length
                                     : int64_t(longest) + o.max_new_tokens;
    if (int64_t(longest) + int64_t(o.max_new_tokens) > cacheLength)
      return setRuntimeError(
          KILN_ERROR_INVALID_ARGUMENT,
          "generation: a prompt of " + std::to_string(longest) +
              " tokens + " + std::to_string(o.max_new_tokens) +
              " new tokens exceeds the static cache's length " +
              std::to_string(cacheLength));
  }

  auto out = std::make_unique<kiln_generation>();
  out->tokens.resize(batch);
  out->promptLength = longest;
  auto start = std::chrono::steady_clock::now();

  // Token inputs of the step: ids [B, S], mask [B, past + S], positions.
  std::vector<int64_t> ids(batch * longest, o.pad_id), mask;
  std::vector<int64_t> realTokens(batch, 0); // per sequence, for positions
  std::vector<std::vector<int64_t>> maskRows(batch);
  for (size_t b = 0; b < batch; ++b) {
    size_t pad = longest - promptLengths[b];
    maskRows[b].assign(longest, 1);
    for (size_t i = 0; i < longest; ++i) {
      if (i < pad)
        maskRows[b][i] = 0;
      else
        ids[b * longest + i] = prompts[b][i - pad];
    }
  }

  // The state before the prompt: static dims as they are, the batch, and
  // every other symbolic dim 0 (an empty cache; a static cache's length).
  // Zero-filled.
  std::vector<std::vector<int64_t>> stateDims(sig.state.size());
  std::vector<std::unique_ptr<unsigned char[]>> initial(sig.state.size());
  std::vector<Owned> state(sig.state.size());
  std::vector<kiln_tensor> stateInputs(sig.state.size());
  static const uint64_t kEmpty[8] = {};
  for (size_t k = 0; k < sig.state.size(); ++k) {
    const Signature::State &s = sig.state[k];
    for (int32_t axis = 0; axis < s.info.rank; ++axis)
      stateDims[k].push_back(s.batchAxis[size_t(axis)] ? int64_t(batch)
                             : s.info.dims[axis] < 0 ? cacheLength
                                                      : s.info.dims[axis]);
    uint64_t bytes = elementsOf(stateDims[k].data(), s.info.rank) *
                     kiln_dtype_size(s.info.dtype);
    void *data = const_cast<uint64_t *>(kEmpty);
    if (bytes) {
      // 64-byte aligned, zeroed.
      initial[k].reset(new (std::nothrow) unsigned char[bytes + 64]);
      if (!initial[k])
        return setRuntimeError(KILN_ERROR_OUT_OF_MEMORY,
                               "generation: cannot allocate the state");
      auto at = reinterpret_cast<uintptr_t>(initial[k].get());
      data = reinterpret_cast<void *>((at + 63) & ~uintptr_t(63));
      std::memset(data, 0, bytes);
    }
    stateInputs[k] = {data, s.info.dtype, s.info.rank, stateDims[k].data()};
  }

  std::vector<int64_t> stops(o.stop_ids, o.stop_ids + o.num_stop_ids);
  std::vector<bool> done(batch, false);
  Random random{o.seed};
  std::vector<float> row;
  size_t seq = longest;
  int64_t idsDims[2], maskDims[2], posDims[2], cacheDims[1];
  std::vector<int64_t> positions, cachePosition;
  for (int32_t step = 0; step < o.max_new_tokens; ++step) {
    size_t total = maskRows[0].size();
    // A static cache's mask covers the whole cache (0 past the tokens).
    size_t width = cacheLength ? size_t(cacheLength) : total;
    mask.assign(batch * width, 0);
    positions.assign(batch * seq, 0);
    for (size_t b = 0; b < batch; ++b) {
      std::copy(maskRows[b].begin(), maskRows[b].end(),
                mask.begin() + ptrdiff_t(b * width));
      // A token's index among its sequence's real tokens (optimum's
      // position_ids = cumsum(mask) - 1, 0 under padding).
      int64_t seen = 0;
      for (size_t i = 0; i < total; ++i) {
        int64_t pos = maskRows[b][i] ? seen++ : 0;
        if (i >= total - seq)
          positions[b * seq + (i - (total - seq))] = pos;
      }
    }
    idsDims[0] = maskDims[0] = posDims[0] = int64_t(batch);
    idsDims[1] = posDims[1] = int64_t(seq);
    maskDims[1] = int64_t(width);
    std::vector<kiln_tensor> inputs(sig.numInputs);
    inputs[sig.ids] = {ids.data(), KILN_DTYPE_INT64, 2, idsDims};
    if (sig.mask != SIZE_MAX)
      inputs[sig.mask] = {mask.data(), KILN_DTYPE_INT64, 2, maskDims};
    if (sig.positions != SIZE_MAX)
      inputs[sig.positions] = {positions.data(), KILN_DTYPE_INT64, 2,
                               posDims};
    if (sig.cachePosition != SIZE_MAX) {
      cachePosition.assign(batch, int64_t(total - seq));
      cacheDims[0] = int64_t(batch);
      inputs[sig.cachePosition] = {cachePosition.data(), KILN_DTYPE_INT64, 1,
                                   cacheDims};
    }
    for (size_t k = 0; k < sig.state.size(); ++k)
      inputs[sig.state[k].input] = stateInputs[k];

    std::vector<kiln_tensor> outputs(sig.numOutputs, kiln_tensor{});
    // A state written in place: its buffer is the output too.
    for (size_t k = 0; k < sig.state.size(); ++k)
      if (sig.state[k].inPlace)
        outputs[sig.state[k].output] = stateInputs[k];
    kiln_status st = kiln_session_run(session, inputs.data(), inputs.size(),
                                      outputs.data(), outputs.size());
    std::vector<Owned> owned(sig.numOutputs);
    for (size_t i = 0; i < outputs.size(); ++i)
      owned[i].t = outputs[i];
    for (const Signature::State &s : sig.state)
      if (s.inPlace)
        owned[s.output].t = {}; // the loop's buffer, not the runtime's
    if (st != KILN_OK)
      return setRuntimeError(st, "generation: step " + std::to_string(step) +
                                     ": " + kiln_last_error());

    // The next token of each sequence from its last position's logits.
    const kiln_tensor &logits = owned[sig.logits].t;
    size_t vocab = size_t(logits.dims[2]);
    out->vocab = vocab;
    row.resize(vocab);
    std::vector<int64_t> next(batch);
    for (size_t b = 0; b < batch; ++b) {
      lastLogits(logits, sig.logitsDtype, b, row);
      next[b] = choose(row, o.temperature, o.top_k, o.top_p, random);
    }
    out->stepNs.push_back(uint64_t(
        std::chrono::duration_cast<std::chrono::nanoseconds>(
            std::chrono::steady_clock::now() - start)
            .count()));
    bool allDone = true;
    for (size_t b = 0; b < batch; ++b) {
      if (!done[b]) {
        out->tokens[b].push_back(next[b]);
        done[b] = std::find(stops.begin(), stops.end(), next[b]) != stops.end();
      }
      allDone = allDone && done[b];
    }

    // present -> past: the outputs become the next step's inputs. A state
    // in a new buffer had its past copied into it (by the model: Concat);
    // one written in place copied nothing.
    uint64_t bytes = 0, copied = 0;
    for (size_t k = 0; k < sig.state.size(); ++k) {
      const kiln_tensor &past = stateInputs[k];
      if (sig.state[k].inPlace) {
        bytes += elementsOf(past.dims, past.rank) * kiln_dtype_size(past.dtype);
        continue;
      }
      copied += elementsOf(past.dims, past.rank) * kiln_dtype_size(past.dtype);
      state[k] = std::move(owned[sig.state[k].output]);
      const kiln_tensor &t = state[k].t;
      bytes += elementsOf(t.dims, t.rank) * kiln_dtype_size(t.dtype);
      stateInputs[k] = t;
      initial[k].reset();
    }
    out->stepCopiedBytes.push_back(copied);
    out->stateBytes = bytes;
    out->peakStateBytes = std::max(out->peakStateBytes, bytes);
    if (allDone)
      break;
    seq = 1;
    ids.assign(next.begin(), next.end());
    for (size_t b = 0; b < batch; ++b)
      maskRows[b].push_back(1);
  }
  *result = out.release();
  return KILN_OK;
}

extern "C" void kiln_generation_free(kiln_generation *g) { delete g; }

extern "C" size_t kiln_generation_num_tokens(const kiln_generation *g,
                                             size_t sequence) {
  return g && sequence < g->tokens.size() ? g->tokens[sequence].size() : 0;
}

extern "C" const int64_t *kiln_generation_tokens(const kiln_generation *g,
                                                 size_t sequence) {
  return g && sequence < g->tokens.size() ? g->tokens[sequence].data()
                                          : nullptr;
}

extern "C" size_t kiln_generation_num_steps(const kiln_generation *g) {
  return g ? g->stepNs.size() : 0;
}

extern "C" const uint64_t *kiln_generation_step_ns(const kiln_generation *g) {
  return g ? g->stepNs.data() : nullptr;
}

extern "C" uint64_t kiln_generation_state_bytes(const kiln_generation *g) {
  return g ? g->stateBytes : 0;
}

extern "C" uint64_t kiln_generation_peak_state_bytes(const kiln_generation *g) {
  return g ? g->peakStateBytes : 0;
}

extern "C" const uint64_t *
kiln_generation_step_copied_bytes(const kiln_generation *g) {
  return g ? g->stepCopiedBytes.data() : nullptr;
}

extern "C" uint64_t kiln_generation_copied_bytes(const kiln_generation *g) {
  if (!g || g->stepCopiedBytes.size() < 2)
    return 0;
  return *std::max_element(g->stepCopiedBytes.begin() + 1,
                           g->stepCopiedBytes.end());
}

extern "C" size_t kiln_generation_prompt_length(const kiln_generation *g) {
  return g ? g->promptLength : 0;
}

extern "C" size_t kiln_generation_vocab(const kiln_generation *g) {
  return g ? g->vocab : 0;
}
