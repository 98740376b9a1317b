//===- Serve.cpp - In-flight batching over a decoder ----------------------===//
//
// kiln_serve (runtime.h, docs/generation.md "Serving"): requests arrive
// over time (all at once for an offline run, or at their arrival times); the
// scheduler admits arrived requests into the running batch between decode
// steps (up to max_batch sequences and max_tokens tokens per step), runs
// their prefill together, merges their state into the running batch, runs
// one decode step for every running sequence, and retires the sequences
// that are done. The running batch's state is the decoder's own (a KV cache
// [B, H, T, D] with one growing axis, or a recurrent state without one): a
// merge left-pads the caches to a common length under a mask of 0, a
// retirement keeps the other rows and drops the front columns no sequence
// needs any more. Greedy decoding.
//
//===----------------------------------------------------------------------===//

#include "Decoder.h"
#include "Errors.h"
#include "kiln/runtime.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using namespace kiln::decoder;
using kiln::setRuntimeError;

struct kiln_serving {
  std::vector<std::vector<int64_t>> tokens;
  std::vector<std::vector<double>> tokenMs;
  std::vector<int32_t> stepBatch;
  double elapsedMs = 0;
};

namespace {

// A state tensor of the running batch: the last step's output, or a buffer
// of the scheduler's own after a merge or a retirement.
struct Tensor {
  int32_t dtype = 0;
  std::vector<int64_t> dims;
  Owned owned;
  std::unique_ptr<unsigned char[]> mine;
  void *data = nullptr;

  kiln_tensor view() const {
    return {data, dtype, int32_t(dims.size()), dims.data()};
  }
  static Tensor fromOutput(Owned &&o) {
    Tensor t;
    t.dtype = o.t.dtype;
    t.dims.assign(o.t.dims, o.t.dims + o.t.rank);
    t.owned = std::move(o);
    t.data = t.owned.t.data;
    return t;
  }
  bool allocate(int32_t type, std::vector<int64_t> shape) {
    dtype = type;
    dims = std::move(shape);
    uint64_t bytes = elementsOf(dims.data(), int32_t(dims.size())) *
                     kiln_dtype_size(dtype);
    mine.reset(new (std::nothrow) unsigned char[bytes + 64]);
    if (!mine)
      return false;
    auto at = reinterpret_cast<uintptr_t>(mine.get());
    data = reinterpret_cast<void *>((at + 63) & ~uintptr_t(63));
    std::memset(data, 0, bytes);
    return true;
  }
};

// A state tensor seen as [batch][mid][T][inner] (T the growing axis, 1 when
// there is none).
struct Layout {
  size_t mid = 1, length = 1, inner = 1;
};

Layout layoutOf(const std::vector<int64_t> &dims, int32_t seqAxis,
                size_t elementSize) {
  Layout l;
  for (size_t a = 1; a < dims.size(); ++a) {
    if (int32_t(a) < seqAxis)
      l.mid *= size_t(dims[a]);
    else if (int32_t(a) == seqAxis)
      l.length = size_t(dims[a]);
    else
      l.inner *= size_t(dims[a]);
  }
  l.inner *= elementSize;
  return l;
}

// Rows `rows` of each source, right-aligned in a growing axis of length
// `length` (the front padded with zeros; `drop` columns of each source cut
// from the front first).
struct Part {
  const Tensor *t;
  std::vector<size_t> rows;
  size_t drop;
};

bool gather(const std::vector<Part> &parts, int32_t seqAxis, size_t length,
            Tensor &out) {
  const Tensor &first = *parts.front().t;
  size_t esize = kiln_dtype_size(first.dtype);
  std::vector<int64_t> dims = first.dims;
  size_t rows = 0;
  for (const Part &p : parts)
    rows += p.rows.size();
  dims[0] = int64_t(rows);
  if (seqAxis > 0)
    dims[size_t(seqAxis)] = int64_t(length);
  if (!out.allocate(first.dtype, dims))
    return false;
  Layout to = layoutOf(dims, seqAxis, esize);
  auto *dst = static_cast<unsigned char *>(out.data);
  size_t row = 0;
  for (const Part &p : parts) {
    Layout from = layoutOf(p.t->dims, seqAxis, esize);
    size_t keep = from.length - p.drop;
    const auto *src = static_cast<const unsigned char *>(p.t->data);
    for (size_t r : p.rows) {
      for (size_t m = 0; m < to.mid; ++m) {
        const unsigned char *s =
            src + ((r * from.mid + m) * from.length + p.drop) * from.inner;
        unsigned char *d = dst + ((row * to.mid + m) * to.length +
                                  (to.length - keep)) *
                                     to.inner;
        std::memcpy(d, s, keep * from.inner);
      }
      ++row;
    }
  }
  return true;
}

struct Running {
  size_t request;
  int64_t last;
  int32_t produced;
  std::vector<int64_t> mask; // one entry per column of the growing axis
};

} // namespace

extern "C" void kiln_serve_options_init(kiln_serve_options *o) {
  if (!o)
    return;
  std::memset(o, 0, sizeof(*o));
  o->max_batch = 8;
  o->max_tokens = 4096;
}

extern "C" kiln_status kiln_serve(kiln_session *session,
                                  const kiln_request *requests, size_t count,
                                  const kiln_serve_options *options,
                                  kiln_serving **result) {
  if (!session || !result || (count && !requests))
    return setRuntimeError(KILN_ERROR_INVALID_ARGUMENT,
                           "kiln_serve: a NULL argument");
  *result = nullptr;
  kiln_serve_options o;
  kiln_serve_options_init(&o);
  if (options)
    o = *options;
  if (o.max_batch < 1 || o.max_tokens < 1)
    return setRuntimeError(KILN_ERROR_INVALID_ARGUMENT,
                           "serving: max_batch and max_tokens must be >= 1");
  if (o.num_stop_ids && !o.stop_ids)
    return setRuntimeError(KILN_ERROR_INVALID_ARGUMENT,
                           "serving: stop_ids is NULL");
  const kiln_model *model = kiln_session_model(session);
  Signature sig;
  if (kiln_status st = readSignature(model, sig))
    return st;
  if (sig.staticBatch >= 0)
    return setRuntimeError(KILN_ERROR_TENSOR_MISMATCH,
                           "serving: the model's batch is static (" +
                               std::to_string(sig.staticBatch) +
                               "); in-flight batching needs a dynamic one");
  if (sig.cachePosition != SIZE_MAX)
    return setRuntimeError(
        KILN_ERROR_TENSOR_MISMATCH,
        "serving: a static cache (input 'cache_position') is not served yet "
        "(the scheduler grows each request's cache); kiln_generate runs it");
  // The growing axis of each state input: its one symbolic dim that is not
  // the batch (none for a recurrent state).
  std::vector<int32_t> seqAxis(sig.state.size(), -1);
  for (size_t k = 0; k < sig.state.size(); ++k) {
    const Signature::State &s = sig.state[k];
    for (int32_t a = 1; a < s.info.rank; ++a) {
      if (s.info.dims[a] >= 0)
        continue;
      if (seqAxis[k] >= 0)
        return setRuntimeError(
            KILN_ERROR_TENSOR_MISMATCH,
            std::string("serving: state input '") + s.info.name +
                "' has two dynamic dims besides the batch; the scheduler "
                "merges states along one growing axis");
      seqAxis[k] = a;
    }
  }
  for (size_t r = 0; r < count; ++r) {
    const kiln_request &q = requests[r];
    if (!q.prompt || q.prompt_length == 0)
      return setRuntimeError(KILN_ERROR_INVALID_ARGUMENT,
                             "serving: request " + std::to_string(r) +
                                 " has an empty prompt");
    if (q.max_new_tokens < 1)
      return setRuntimeError(KILN_ERROR_INVALID_ARGUMENT,
                             "serving: request " + std::to_string(r) +
                                 " asks for no new tokens");
    if (int64_t(q.prompt_length) > o.max_tokens)
      return setRuntimeError(
          KILN_ERROR_INVALID_ARGUMENT,
          "serving: request " + std::to_string(r) + "'s prompt of " +
              std::to_string(q.prompt_length) +
              " tokens exceeds max_tokens " + std::to_string(o.max_tokens));
    for (size_t i = 0; i < q.prompt_length; ++i)
      if (q.prompt[i] < 0 || (sig.vocab > 0 && q.prompt[i] >= sig.vocab))
        return setRuntimeError(
            KILN_ERROR_INVALID_ARGUMENT,
            "serving: request " + std::to_string(r) + " token " +
                std::to_string(i) + " is " + std::to_string(q.prompt[i]) +
                ", outside the vocab [0, " + std::to_string(sig.vocab) + ")");
  }

  auto out = std::make_unique<kiln_serving>();
  out->tokens.resize(count);
  out->tokenMs.resize(count);
  std::vector<size_t> pending(count);
  for (size_t r = 0; r < count; ++r)
    pending[r] = r;
  std::stable_sort(pending.begin(), pending.end(), [&](size_t a, size_t b) {
    return requests[a].arrival_ms < requests[b].arrival_ms;
  });
  size_t nextPending = 0;
  std::vector<int64_t> stops(o.stop_ids, o.stop_ids + o.num_stop_ids);
  auto start = std::chrono::steady_clock::now();
  auto nowMs = [&] {
    return std::chrono::duration<double, std::milli>(
               std::chrono::steady_clock::now() - start)
        .count();
  };

  std::vector<Running> running;
  std::vector<Tensor> state(sig.state.size());
  std::vector<float> row;
  Random unused{0};

  // Runs the model on token inputs `ids` [B, S] with `rows` (their masks)
  // and the state inputs `past`; returns the outputs.
  auto step = [&](std::vector<int64_t> &ids, size_t seq,
                  const std::vector<Running> &rows,
                  const std::vector<kiln_tensor> &past,
                  std::vector<Owned> &outputs) -> kiln_status {
    size_t batch = rows.size(), total = rows[0].mask.size();
    std::vector<int64_t> mask(batch * total), positions(batch * seq);
    for (size_t b = 0; b < batch; ++b) {
      std::copy(rows[b].mask.begin(), rows[b].mask.end(),
                mask.begin() + ptrdiff_t(b * total));
      int64_t seen = 0;
      for (size_t i = 0; i < total; ++i) {
        int64_t pos = rows[b].mask[i] ? seen++ : 0;
        if (i >= total - seq)
          positions[b * seq + (i - (total - seq))] = pos;
      }
    }
    int64_t idsDims[2] = {int64_t(batch), int64_t(seq)};
    int64_t maskDims[2] = {int64_t(batch), int64_t(total)};
    std::vector<kiln_tensor> inputs(sig.numInputs);
    inputs[sig.ids] = {ids.data(), KILN_DTYPE_INT64, 2, idsDims};
    if (sig.mask != SIZE_MAX)
      inputs[sig.mask] = {mask.data(), KILN_DTYPE_INT64, 2, maskDims};
    if (sig.positions != SIZE_MAX)
      inputs[sig.positions] = {positions.data(), KILN_DTYPE_INT64, 2, idsDims};
    for (size_t k = 0; k < sig.state.size(); ++k)
      inputs[sig.state[k].input] = past[k];
    std::vector<kiln_tensor> raw(sig.numOutputs, kiln_tensor{});
    kiln_status st = kiln_session_run(session, inputs.data(), inputs.size(),
                                      raw.data(), raw.size());
    outputs.clear();
    outputs.resize(sig.numOutputs);
    for (size_t i = 0; i < raw.size(); ++i)
      outputs[i].t = raw[i];
    return st;
  };

  // Records each row's new token; returns which rows are done.
  auto record = [&](std::vector<Running> &rows, const kiln_tensor &logits) {
    std::vector<bool> done(rows.size());
    double at = nowMs();
    for (size_t b = 0; b < rows.size(); ++b) {
      lastLogits(logits, sig.logitsDtype, b, row);
      int64_t next = choose(row, 0.0f, 0, 1.0f, unused);
      Running &r = rows[b];
      out->tokens[r.request].push_back(next);
      out->tokenMs[r.request].push_back(at);
      r.last = next;
      ++r.produced;
      done[b] = r.produced >= requests[r.request].max_new_tokens ||
                std::find(stops.begin(), stops.end(), next) != stops.end();
    }
    return done;
  };

  // Keeps the rows not done and drops the front columns every kept row
  // has masked (padding no sequence needs any more).
  auto retire = [&](const std::vector<bool> &done) -> kiln_status {
    std::vector<size_t> keep;
    for (size_t b = 0; b < running.size(); ++b)
      if (!done[b])
        keep.push_back(b);
    if (keep.size() == running.size())
      return KILN_OK;
    std::vector<Running> kept;
    for (size_t b : keep)
      kept.push_back(std::move(running[b]));
    size_t drop = 0;
    if (!kept.empty()) {
      size_t total = kept[0].mask.size();
      while (drop + 1 < total &&
             std::all_of(kept.begin(), kept.end(),
                         [&](const Running &r) { return !r.mask[drop]; }))
        ++drop;
      for (Running &r : kept)
        r.mask.erase(r.mask.begin(), r.mask.begin() + ptrdiff_t(drop));
    }
    for (size_t k = 0; k < state.size() && !kept.empty(); ++k) {
      Tensor next;
      size_t length = seqAxis[k] > 0
                          ? size_t(state[k].dims[size_t(seqAxis[k])]) - drop
                          : 1;
      if (!gather({{&state[k], keep, seqAxis[k] > 0 ? drop : 0}}, seqAxis[k],
                  length, next))
        return setRuntimeError(KILN_ERROR_OUT_OF_MEMORY,
                               "serving: cannot allocate the state");
      state[k] = std::move(next);
    }
    running = std::move(kept);
    return KILN_OK;
  };

  while (nextPending < count || !running.empty()) {
    // Admit the arrived requests the limits allow.
    double now = nowMs();
    std::vector<size_t> admit;
    int64_t budget = o.max_tokens - int64_t(running.size());
    size_t longest = 0;
    while (nextPending < count &&
           requests[pending[nextPending]].arrival_ms <= now &&
           running.size() + admit.size() < size_t(o.max_batch)) {
      const kiln_request &q = requests[pending[nextPending]];
      size_t grown = std::max(longest, q.prompt_length);
      if (int64_t(grown * (admit.size() + 1)) > budget && !admit.empty())
        break;
      longest = grown;
      admit.push_back(pending[nextPending++]);
    }
    if (!admit.empty()) {
      // Their prefill, left-padded, from an empty state.
      std::vector<Running> fresh;
      std::vector<int64_t> ids(admit.size() * longest, o.pad_id);
      for (size_t i = 0; i < admit.size(); ++i) {
        const kiln_request &q = requests[admit[i]];
        Running r{admit[i], 0, 0, std::vector<int64_t>(longest, 1)};
        size_t pad = longest - q.prompt_length;
        for (size_t j = 0; j < pad; ++j)
          r.mask[j] = 0;
        std::copy(q.prompt, q.prompt + q.prompt_length,
                  ids.begin() + ptrdiff_t(i * longest + pad));
        fresh.push_back(std::move(r));
      }
      std::vector<std::vector<int64_t>> emptyDims(sig.state.size());
      std::vector<std::unique_ptr<unsigned char[]>> zeros(sig.state.size());
      std::vector<kiln_tensor> past(sig.state.size());
      static const uint64_t kEmpty[8] = {};
      for (size_t k = 0; k < sig.state.size(); ++k) {
        const Signature::State &s = sig.state[k];
        for (int32_t a = 0; a < s.info.rank; ++a)
          emptyDims[k].push_back(a == 0 ? int64_t(admit.size())
                                 : s.info.dims[a] < 0 ? 0
                                                      : s.info.dims[a]);
        uint64_t bytes = elementsOf(emptyDims[k].data(), s.info.rank) *
                         kiln_dtype_size(s.info.dtype);
        void *data = const_cast<uint64_t *>(kEmpty);
        if (bytes) {
          zeros[k].reset(new (std::nothrow) unsigned char[bytes + 64]);
          if (!zeros[k])
            return setRuntimeError(KILN_ERROR_OUT_OF_MEMORY,
                                   "serving: cannot allocate the state");
          auto at = reinterpret_cast<uintptr_t>(zeros[k].get());
          data = reinterpret_cast<void *>((at + 63) & ~uintptr_t(63));
          std::memset(data, 0, bytes);
        }
        past[k] = {data, s.info.dtype, s.info.rank, emptyDims[k].data()};
      }
      std::vector<Owned> outputs;
      if (kiln_status st = step(ids, longest, fresh, past, outputs))
        return setRuntimeError(st, std::string("serving: prefill: ") +
                                       kiln_last_error());
      std::vector<bool> doneFresh = record(fresh, outputs[sig.logits].t);
      // Merge: the running rows, then the fresh ones, right-aligned in a
      // common length.
      size_t oldTotal = running.empty() ? 0 : running[0].mask.size();
      size_t total = std::max(oldTotal, longest);
      std::vector<Tensor> merged(sig.state.size());
      for (size_t k = 0; k < sig.state.size(); ++k) {
        Tensor freshState =
            Tensor::fromOutput(std::move(outputs[sig.state[k].output]));
        std::vector<size_t> oldRows(running.size()), newRows(fresh.size());
        for (size_t b = 0; b < oldRows.size(); ++b)
          oldRows[b] = b;
        for (size_t b = 0; b < newRows.size(); ++b)
          newRows[b] = b;
        std::vector<Part> parts;
        if (!running.empty())
          parts.push_back({&state[k], oldRows, 0});
        parts.push_back({&freshState, newRows, 0});
        if (!gather(parts, seqAxis[k], seqAxis[k] > 0 ? total : 1,
                    merged[k]))
          return setRuntimeError(KILN_ERROR_OUT_OF_MEMORY,
                                 "serving: cannot allocate the state");
      }
      state = std::move(merged);
      for (Running &r : running)
        r.mask.insert(r.mask.begin(), total - oldTotal, 0);
      for (Running &r : fresh) {
        r.mask.insert(r.mask.begin(), total - longest, 0);
        running.push_back(std::move(r));
      }
      std::vector<bool> done(running.size(), false);
      std::copy(doneFresh.begin(), doneFresh.end(),
                done.end() - ptrdiff_t(doneFresh.size()));
      if (kiln_status st = retire(done))
        return st;
      continue; // admit again before decoding
    }
    if (running.empty()) {
      // Wait for the next arrival.
      double wait = requests[pending[nextPending]].arrival_ms - nowMs();
      if (wait > 0)
        std::this_thread::sleep_for(
            std::chrono::duration<double, std::milli>(wait));
      continue;
    }
    // One decode step for every running sequence.
    std::vector<int64_t> ids;
    for (Running &r : running) {
      ids.push_back(r.last);
      r.mask.push_back(1);
    }
    std::vector<kiln_tensor> past;
    for (const Tensor &t : state)
      past.push_back(t.view());
    std::vector<Owned> outputs;
    if (kiln_status st = step(ids, 1, running, past, outputs))
      return setRuntimeError(st, std::string("serving: decode step: ") +
                                     kiln_last_error());
    out->stepBatch.push_back(int32_t(running.size()));
    std::vector<bool> done = record(running, outputs[sig.logits].t);
    for (size_t k = 0; k < state.size(); ++k)
      state[k] = Tensor::fromOutput(std::move(outputs[sig.state[k].output]));
    if (kiln_status st = retire(done))
      return st;
  }
  out->elapsedMs = nowMs();
  *result = out.release();
  return KILN_OK;
}

extern "C" void kiln_serving_free(kiln_serving *s) { delete s; }

extern "C" size_t kiln_serving_num_tokens(const kiln_serving *s,
                                          size_t request) {
  return s && request < s->tokens.size() ? s->tokens[request].size() : 0;
}

extern "C" const int64_t *kiln_serving_tokens(const kiln_serving *s,
                                              size_t request) {
  return s && request < s->tokens.size() ? s->tokens[request].data()
                                         : nullptr;
}

extern "C" const double *kiln_serving_token_ms(const kiln_serving *s,
                                               size_t request) {
  return s && request < s->tokenMs.size() ? s->tokenMs[request].data()
                                          : nullptr;
}

extern "C" size_t kiln_serving_num_steps(const kiln_serving *s) {
  return s ? s->stepBatch.size() : 0;
}

extern "C" const int32_t *kiln_serving_step_batch(const kiln_serving *s) {
  return s ? s->stepBatch.data() : nullptr;
}

extern "C" double kiln_serving_elapsed_ms(const kiln_serving *s) {
  return s ? s->elapsedMs : 0;
}
