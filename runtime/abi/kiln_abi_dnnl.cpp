//===- kiln_abi_dnnl.cpp - Convolutions, matmuls and pools through oneDNN -===//
//
// With `kiln-compile --kernels=auto` (the default), kiln-cpu-dnnl-calls
// (lib/Target/CPU/DnnlCalls.cpp) makes every float32 2-D channels-last
// convolution a call to kiln_abi_dnnl_conv2d_f32 (oneDNN's convolution on
// the NHWC activations as they are, with the bias and the fused epilogue:
// activation, residual add, in either order, as post-ops), every MatMul of
// 128+ rows by a weight a call to kiln_abi_dnnl_matmul_f32 and every static
// channels-last max or average pool a call to kiln_abi_dnnl_pool2d_f32.
// Measured on two AVX-512 cores, oneDNN's NHWC kernels ran the
// convolutions of a ResNet-50 at about 225 GFLOP/s, its depthwise ones at
// 100-120 GFLOP/s; the same convolutions on NCHW tensors took 1.6x as long
// (im2col + GEMM), the depthwise ones 15-20x.
//
// Each call site owns one zero-initialized 8-byte slot in the model's
// shared object (a memref.global). The first call creates the primitive for
// the shapes and the thread count and reorders the OHWI filter into the
// layout the primitive reads, once: ONNX Runtime's prepacking at session
// creation, done at the first run. The slot then points at the call site's
// states, one per batch size, image size and thread count seen (a model
// with run-time spatial sizes: one per size; they live as long as
// the process, even after the model is unloaded: a state may be running on
// another thread, and the ABI has no unload hook). A
// slot belongs to one loaded model: a model loaded again starts from zero,
// so a state is never taken for another model's weights at the same
// address. A call whose filter is computed at run time (`flags` bit 0
// clear) reorders it in every call.
//
// Threads: oneDNN runs its own OpenMP regions (libdnnl is built with
// OpenMP); its GOMP_* calls resolve to the libomp the model links (libomp
// implements GCC's entry points), so the thread count kiln-run sets is the
// one oneDNN uses.
//
// Errors: the kernel has no error channel (none of the ABI's calls do); a
// primitive oneDNN cannot create is reported on stderr with the shapes,
// and the process aborts rather than return uncomputed data. kiln-compile
// only emits calls for shapes oneDNN takes (a convolution of positive
// sizes with the padding and strides ONNX allows).
//
//===----------------------------------------------------------------------===//

#include <dnnl.hpp>

#include <omp.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#define KILN_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using dnnl::memory;
using Tag = dnnl::memory::format_tag;

/// What a primitive is made for; a call that differs makes a new state.
/// (A convolution's spatial sizes are run-time values when the model's
/// are: a new state for each size seen.)
struct Key {
  int64_t n, h, w, threads;
  bool operator==(const Key &o) const {
    return n == o.n && h == o.h && w == o.w && threads == o.threads;
  }
};

struct State {
  Key key;
  dnnl::engine engine;
  dnnl::stream stream;
  dnnl::primitive prim;
  /// The weights as Kiln stores them, and as the primitive reads them.
  memory::desc userWeights, weights;
  memory::desc src, dst, bias, residual, scratchpad;
  memory packedWeights;     // valid when the filter is constant
  const float *weightsFrom; // the filter `packedWeights` was made from
};

/// The CPU engine every state uses (one per process).
const dnnl::engine &cpuEngine() {
  static dnnl::engine *engine = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *engine;
}

/// What one thread reuses from call to call: a stream on the engine and a
/// scratchpad buffer that grows to the largest a primitive asked for (a
/// malloc and a stream per call cost more than a small depthwise
/// convolution's compute).
/// One thread's memory objects for one state's arguments, made at its
/// first call there: later calls only point them at the call's buffers
/// (set_data_handle), where making five memory objects and the argument
/// map on every call cost as much as a small convolution of a mobile
/// network at batch 1.
struct Bound {
  memory src, dst, bias, residual, scratchpad;
  std::unordered_map<int, memory> args;
};

struct ThreadContext {
  dnnl::stream stream{cpuEngine()};
  /// By state (states live as long as the process: never reused).
  std::unordered_map<const State *, Bound> bound;
  std::unique_ptr<char[]> scratch;
  size_t scratchBytes = 0;
  void *scratchpad(size_t bytes) {
    if (bytes > scratchBytes) {
      scratch.reset(new char[bytes + 64]);
      scratchBytes = bytes;
    }
    // 64-byte aligned.
    uintptr_t p = reinterpret_cast<uintptr_t>(scratch.get());
    return reinterpret_cast<void *>((p + 63) & ~uintptr_t(63));
  }
};
ThreadContext &threadContext() {
  thread_local ThreadContext context;
  return context;
}

/// A call site's states, one per key.
struct Site {
  std::vector<std::unique_ptr<State>> states;
};

/// The slots' states are made under this lock (they are few: one per
/// convolution of each loaded model).
std::mutex &stateLock() {
  static std::mutex lock;
  return lock;
}

dnnl::algorithm activationAlgorithm(int64_t activation, float &alpha,
                                    float &beta) {
  alpha = beta = 0.f;
  switch (activation) {
  case 1:
    return dnnl::algorithm::eltwise_relu;
  case 2:
    return dnnl::algorithm::eltwise_gelu_erf;
  case 3:
    return dnnl::algorithm::eltwise_gelu_tanh;
  case 4:
    alpha = 1.f;
    return dnnl::algorithm::eltwise_swish;
  case 5:
    return dnnl::algorithm::eltwise_logistic;
  case 6:
    return dnnl::algorithm::eltwise_tanh;
  case 7: // x * relu6(x + 3) / 6, ONNX HardSwish (oneDNN 2.x: no parameters)
    return dnnl::algorithm::eltwise_hardswish;
  case 8:
    beta = 6.f;
    return dnnl::algorithm::eltwise_clip_v2;
  default:
    return dnnl::algorithm::undef;
  }
}

struct Shape {
  int64_t n, h, w, c, oh, ow, m, kh, kw, group;
  int64_t strideH, strideW, dilationH, dilationW;
  int64_t padTop, padLeft, padBottom, padRight;
  int64_t activation, residualFirst, hasBias, hasResidual;
};

std::unique_ptr<State> makeState(const Shape &s, const Key &key) {
  auto state = std::make_unique<State>();
  state->key = key;
  state->engine = cpuEngine();
  state->stream = dnnl::stream(state->engine);
  memory::dims src{s.n, s.c, s.h, s.w}, dst{s.n, s.m, s.oh, s.ow};
  state->src = memory::desc(src, memory::data_type::f32, Tag::nhwc);
  state->dst = memory::desc(dst, memory::data_type::f32, Tag::nhwc);
  state->residual = state->dst;
  // Kiln's filter is OHWI: [M, KH, KW, C/group].
  memory::desc userWeights;
  if (s.group == 1)
    userWeights = memory::desc({s.m, s.c, s.kh, s.kw}, memory::data_type::f32,
                               Tag::ohwi);
  else
    userWeights = memory::desc({s.group, s.m / s.group, s.c / s.group, s.kh,
                                s.kw},
                               memory::data_type::f32, Tag::gohwi);
  state->bias = memory::desc({s.m}, memory::data_type::f32, Tag::a);
  memory::desc anyWeights(userWeights.dims(), memory::data_type::f32,
                          Tag::any);

  dnnl::post_ops ops;
  float alpha, beta;
  dnnl::algorithm act = activationAlgorithm(s.activation, alpha, beta);
  auto addResidual = [&] {
    if (s.hasResidual)
      ops.append_binary(dnnl::algorithm::binary_add, state->residual);
  };
  if (s.residualFirst)
    addResidual();
  if (act != dnnl::algorithm::undef)
    ops.append_eltwise(1.f, act, alpha, beta);
  if (!s.residualFirst)
    addResidual();
  dnnl::primitive_attr attr;
  attr.set_post_ops(ops);
  // Each call brings its own scratchpad: one session runs on many threads
  // at once, and the library's shared one gave wrong results then.
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  // oneDNN's dilation counts the gaps: ONNX's dilation minus one.
  auto desc = s.hasBias
                  ? dnnl::convolution_forward::desc(
                        dnnl::prop_kind::forward_inference,
                        dnnl::algorithm::convolution_direct, state->src,
                        anyWeights, state->bias, state->dst,
                        {s.strideH, s.strideW},
                        {s.dilationH - 1, s.dilationW - 1},
                        {s.padTop, s.padLeft}, {s.padBottom, s.padRight})
                  : dnnl::convolution_forward::desc(
                        dnnl::prop_kind::forward_inference,
                        dnnl::algorithm::convolution_direct, state->src,
                        anyWeights, state->dst, {s.strideH, s.strideW},
                        {s.dilationH - 1, s.dilationW - 1},
                        {s.padTop, s.padLeft}, {s.padBottom, s.padRight});
  dnnl::convolution_forward::primitive_desc pd(desc, attr, state->engine);
  state->prim = dnnl::convolution_forward(pd);
  state->userWeights = userWeights;
  state->weights = pd.weights_desc();
  state->scratchpad = pd.scratchpad_desc();
  state->weightsFrom = nullptr;
  return state;
}

/// The weights in the primitive's layout: the state's packed copy (made at
/// the first call) for constant weights, else a reorder into `scratch`.
memory packWeights(State &state, const float *weights, bool constant,
                   memory &scratch) {
  if (constant && state.weightsFrom == weights)
    return state.packedWeights;
  memory from(state.userWeights, state.engine, const_cast<float *>(weights));
  if (state.userWeights == state.weights) {
    if (constant) { // the caller's buffer as it is, from now on
      state.packedWeights = from;
      state.weightsFrom = weights;
    }
    return from;
  }
  memory to(state.weights, state.engine);
  dnnl::reorder(from, to).execute(state.stream, from, to);
  state.stream.wait();
  if (constant) {
    state.packedWeights = to;
    state.weightsFrom = weights;
    return to;
  }
  scratch = to;
  return to;
}

/// Runs the call site's primitive for `key` (made by `make` the first time):
/// src x, the weights w (packed once when constant), dst y, the bias and a
/// residual post-op operand where given.
template <typename Make>
void run(int64_t *slot, const Key &key, Make make, const float *x,
         const float *w, bool constant, const float *bias,
         const float *residual, int residualPostOp, float *y) {
  std::unique_lock<std::mutex> guard(stateLock());
  auto *site = reinterpret_cast<Site *>(*slot);
  if (!site) {
    site = new Site();
    *slot = reinterpret_cast<int64_t>(site);
  }
  State *state = nullptr;
  for (auto &candidate : site->states)
    if (candidate->key == key)
      state = candidate.get();
  if (!state) {
    std::unique_ptr<State> made = make();
    // Another batch or image size of the same constant filter: the packed
    // weights are the same bytes when the primitives read one layout
    // (a model run at many image sizes keeps one copy, not one per size).
    for (auto &sibling : site->states)
      if (constant && w && sibling->weightsFrom == w &&
          sibling->weights == made->weights) {
        made->packedWeights = sibling->packedWeights;
        made->weightsFrom = w;
        break;
      }
    site->states.push_back(std::move(made));
    state = site->states.back().get();
  }
  memory scratch, packed;
  if (w)
    packed = packWeights(*state, w, constant, scratch);
  guard.unlock();
  // Primitives are immutable: two threads may run one at a time, each on
  // its own stream and with its own scratchpad.
  ThreadContext &context = threadContext();
  auto [it, fresh] = context.bound.try_emplace(state);
  Bound &b = it->second;
  if (fresh) {
    b.src = memory(state->src, state->engine, const_cast<float *>(x));
    b.dst = memory(state->dst, state->engine, y);
    b.scratchpad = memory(state->scratchpad, state->engine,
                          context.scratchpad(state->scratchpad.get_size()));
    b.args = {{DNNL_ARG_SRC, b.src},
              {DNNL_ARG_DST, b.dst},
              {DNNL_ARG_SCRATCHPAD, b.scratchpad}};
    if (bias) {
      b.bias = memory(state->bias, state->engine, const_cast<float *>(bias));
      b.args.emplace(DNNL_ARG_BIAS, b.bias);
    }
    if (residual) {
      b.residual = memory(state->residual, state->engine,
                          const_cast<float *>(residual));
      b.args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(residualPostOp) |
                         DNNL_ARG_SRC_1,
                     b.residual);
    }
  }
  b.src.set_data_handle(const_cast<float *>(x));
  b.dst.set_data_handle(y);
  // The thread's scratchpad may have grown (moved) for another primitive.
  b.scratchpad.set_data_handle(
      context.scratchpad(state->scratchpad.get_size()));
  if (bias)
    b.bias.set_data_handle(const_cast<float *>(bias));
  if (residual)
    b.residual.set_data_handle(const_cast<float *>(residual));
  if (w)
    b.args[DNNL_ARG_WEIGHTS] = packed;
  std::unordered_map<int, memory> &args = b.args;
  state->prim.execute(context.stream, args);
  context.stream.wait();
}

std::unique_ptr<State> makeMatmulState(int64_t m, int64_t k, int64_t n,
                                       bool hasBias, const Key &key) {
  auto state = std::make_unique<State>();
  state->key = key;
  state->engine = cpuEngine();
  state->stream = dnnl::stream(state->engine);
  state->src = memory::desc({m, k}, memory::data_type::f32, Tag::ab);
  state->dst = memory::desc({m, n}, memory::data_type::f32, Tag::ab);
  state->bias = memory::desc({1, n}, memory::data_type::f32, Tag::ab);
  state->userWeights = memory::desc({k, n}, memory::data_type::f32, Tag::ab);
  memory::desc anyWeights({k, n}, memory::data_type::f32, Tag::any);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  auto desc = hasBias ? dnnl::matmul::desc(state->src, anyWeights,
                                           state->bias, state->dst)
                      : dnnl::matmul::desc(state->src, anyWeights, state->dst);
  dnnl::matmul::primitive_desc pd(desc, attr, state->engine);
  state->prim = dnnl::matmul(pd);
  state->weights = pd.weights_desc();
  state->scratchpad = pd.scratchpad_desc();
  state->weightsFrom = nullptr;
  return state;
}

std::unique_ptr<State> makePoolState(const int64_t *d, const Key &key) {
  // d: n, h, w, c, oh, ow, kh, kw, sh, sw, padTop, padLeft, padBottom,
  // padRight, kind.
  auto state = std::make_unique<State>();
  state->key = key;
  state->engine = cpuEngine();
  state->stream = dnnl::stream(state->engine);
  state->src = memory::desc({d[0], d[3], d[1], d[2]}, memory::data_type::f32,
                            Tag::nhwc);
  state->dst = memory::desc({d[0], d[3], d[4], d[5]}, memory::data_type::f32,
                            Tag::nhwc);
  dnnl::algorithm kind = d[14] == 0   ? dnnl::algorithm::pooling_max
                         : d[14] == 1 ? dnnl::algorithm::pooling_avg_include_padding
                                      : dnnl::algorithm::pooling_avg_exclude_padding;
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::pooling_forward::desc desc(dnnl::prop_kind::forward_inference, kind,
                                   state->src, state->dst, {d[8], d[9]},
                                   {d[6], d[7]}, {d[10], d[11]},
                                   {d[12], d[13]});
  dnnl::pooling_forward::primitive_desc pd(desc, attr, state->engine);
  state->prim = dnnl::pooling_forward(pd);
  state->scratchpad = pd.scratchpad_desc();
  state->weightsFrom = nullptr;
  return state;
}

} // namespace

/// y = epilogue(conv(x, w) + bias) for NHWC x [n, h, w, c], OHWI w
/// [m, kh, kw, c / group], y [n, oh, ow, m], with the residual (y's shape)
/// added before (residualFirst) or after the activation (1 relu, 2 gelu,
/// 3 gelu_tanh, 4 silu, 5 sigmoid, 6 tanh, 7 hard_swish, 8 relu6, 0 none). `slot` is the call
/// site's 8-byte state slot; flags bit 0: `w` is constant.
KILN_EXPORT void kiln_abi_dnnl_conv2d_f32(
    int64_t *slot, const float *x, const float *w, const float *bias,
    const float *residual, float *y, int64_t n, int64_t h, int64_t wd,
    int64_t c, int64_t oh, int64_t ow, int64_t m, int64_t kh, int64_t kw,
    int64_t group, int64_t strideH, int64_t strideW, int64_t dilationH,
    int64_t dilationW, int64_t padTop, int64_t padLeft, int64_t padBottom,
    int64_t padRight, int64_t activation, int64_t residualFirst,
    int64_t hasBias, int64_t hasResidual, int64_t flags) {
  Shape s{n,       h,         wd,       c,          oh,        ow,
          m,       kh,        kw,       group,      strideH,   strideW,
          dilationH, dilationW, padTop, padLeft,    padBottom, padRight,
          activation, residualFirst, hasBias, hasResidual};
  if (n == 0)
    return;
  Key key{n, h, wd, omp_get_max_threads()};
  try {
    run(slot, key, [&] { return makeState(s, key); }, x, w, flags & 1,
        hasBias ? bias : nullptr, hasResidual ? residual : nullptr,
        residualFirst || activation == 0 ? 0 : 1, y);
  } catch (const dnnl::error &e) {
    std::fprintf(stderr,
                 "kiln: oneDNN convolution failed (%s, status %d): input "
                 "%ldx%ldx%ldx%ld, filter %ldx%ldx%ldx%ld, group %ld\n",
                 e.what(), static_cast<int>(e.status), long(n), long(h),
                 long(wd), long(c), long(m), long(kh), long(kw),
                 long(c / group), long(group));
    std::abort();
  }
}

/// y [m, n] = x [m, k] * w [k, n] (+ bias [n]): a MatMul or Gemm whose
/// right-hand side is a weight, with enough rows that oneDNN's GEMM is the
/// faster one (kiln-cpu-dnnl-calls). flags bit 0: `w` is constant.
KILN_EXPORT void kiln_abi_dnnl_matmul_f32(int64_t *slot, const float *x,
                                          const float *w, const float *bias,
                                          float *y, int64_t m, int64_t k,
                                          int64_t n, int64_t hasBias,
                                          int64_t flags) {
  if (m == 0 || n == 0)
    return;
  Key key{m, 0, 0, omp_get_max_threads()};
  try {
    run(slot, key, [&] { return makeMatmulState(m, k, n, hasBias, key); }, x,
        w, flags & 1, hasBias ? bias : nullptr, nullptr, 0, y);
  } catch (const dnnl::error &e) {
    std::fprintf(stderr,
                 "kiln: oneDNN matmul failed (%s, status %d): %ldx%ld times "
                 "%ldx%ld\n",
                 e.what(), static_cast<int>(e.status), long(m), long(k),
                 long(k), long(n));
    std::abort();
  }
}

/// NHWC pooling of x [n, h, w, c] into y [n, oh, ow, c] with a kh x kw window,
/// strides (sh, sw) and padding (top, left, bottom, right; a ceil_mode
/// output's overhang is bottom/right padding): kind 0 max (padding never
/// wins), 1 average counting the padding, 2 average over the input only.
KILN_EXPORT void kiln_abi_dnnl_pool2d_f32(int64_t *slot, const float *x,
                                          float *y, int64_t n, int64_t h,
                                          int64_t w, int64_t c, int64_t oh,
                                          int64_t ow, int64_t kh, int64_t kw,
                                          int64_t sh, int64_t sw, int64_t padTop,
                                          int64_t padLeft, int64_t padBottom,
                                          int64_t padRight, int64_t kind) {
  if (n == 0 || c == 0)
    return;
  const int64_t d[] = {n,  h,  w,      c,       oh,        ow,       kh, kw,
                       sh, sw, padTop, padLeft, padBottom, padRight, kind};
  Key key{n, h, w, omp_get_max_threads()};
  try {
    run(slot, key, [&] { return makePoolState(d, key); }, x, nullptr, false,
        nullptr, nullptr, 0, y);
  } catch (const dnnl::error &e) {
    std::fprintf(stderr,
                 "kiln: oneDNN pooling failed (%s, status %d): input "
                 "%ldx%ldx%ldx%ld, window %ldx%ld\n",
                 e.what(), static_cast<int>(e.status), long(n), long(h),
                 long(w), long(c), long(kh), long(kw));
    std::abort();
  }
}
