//===- runtime.hpp - RAII C++ wrapper of the Kiln runtime -------*- C++ -*-===//
//
// Header-only: kiln::Model and kiln::Session own their C handles, and every
// failing call throws kiln::Error (status + the runtime's message). Needs
// exceptions; code built without them uses runtime.h directly.
//
//   kiln::Model model("model.kiln");
//   kiln::Session session(model, /*numThreads=*/4);
//   std::vector<float> x(64), y(10);
//   session.run({kiln::Tensor::of(x.data(), {1, 64})},
//               {kiln::Tensor::of(y.data(), {1, 10})});
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_HPP
#define KILN_RUNTIME_HPP

#include "kiln/runtime.h"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace kiln {

class Error : public std::runtime_error {
public:
  Error(kiln_status status, const std::string &message)
      : std::runtime_error(message), status_(status) {}
  kiln_status status() const { return status_; }

private:
  kiln_status status_;
};

inline void check(kiln_status status) {
  if (status != KILN_OK)
    throw Error(status, kiln_last_error());
}

template <typename T> struct DtypeOf;
template <> struct DtypeOf<float> { static constexpr int32_t value = KILN_DTYPE_FLOAT32; };
template <> struct DtypeOf<double> { static constexpr int32_t value = KILN_DTYPE_FLOAT64; };
template <> struct DtypeOf<int8_t> { static constexpr int32_t value = KILN_DTYPE_INT8; };
template <> struct DtypeOf<int16_t> { static constexpr int32_t value = KILN_DTYPE_INT16; };
template <> struct DtypeOf<int32_t> { static constexpr int32_t value = KILN_DTYPE_INT32; };
template <> struct DtypeOf<int64_t> { static constexpr int32_t value = KILN_DTYPE_INT64; };
template <> struct DtypeOf<uint8_t> { static constexpr int32_t value = KILN_DTYPE_UINT8; };
template <> struct DtypeOf<uint16_t> { static constexpr int32_t value = KILN_DTYPE_UINT16; };
template <> struct DtypeOf<uint32_t> { static constexpr int32_t value = KILN_DTYPE_UINT32; };
template <> struct DtypeOf<uint64_t> { static constexpr int32_t value = KILN_DTYPE_UINT64; };
template <> struct DtypeOf<bool> { static constexpr int32_t value = KILN_DTYPE_BOOL; };

/// A tensor view: the data pointer, dtype and its own copy of the dims.
struct Tensor {
  void *data = nullptr;
  int32_t dtype = KILN_DTYPE_UNDEFINED;
  std::vector<int64_t> dims;

  template <typename T>
  static Tensor of(T *data, std::vector<int64_t> dims) {
    return Tensor{const_cast<void *>(static_cast<const void *>(data)),
                  DtypeOf<typename std::remove_const<T>::type>::value,
                  std::move(dims)};
  }
  kiln_tensor view() const {
    return kiln_tensor{data, dtype, int32_t(dims.size()), dims.data()};
  }
};

struct TensorInfo {
  std::string name;
  int32_t dtype;
  std::vector<int64_t> dims; ///< -1 for a symbolic dim
  /// Per dim: "" (static), the symbol ("batch", an input) or the expression
  /// ("batch * seq", an output).
  std::vector<std::string> dimNames;
  bool isSymbolic() const {
    for (const std::string &n : dimNames)
      if (!n.empty())
        return true;
    return false;
  }
};

/// A kernel of the model's profiling table (kiln_kernel_info).
struct KernelInfo {
  std::string name;
  std::string category;
  std::vector<std::string> onnxNodes;
};

class Model {
public:
  explicit Model(const std::string &path) {
    check(kiln_model_load(path.c_str(), &model_));
  }
  Model(const Model &) = delete;
  Model &operator=(const Model &) = delete;
  Model(Model &&other) noexcept : model_(other.model_) {
    other.model_ = nullptr;
  }
  Model &operator=(Model &&other) noexcept {
    std::swap(model_, other.model_);
    return *this;
  }
  ~Model() { kiln_model_free(model_); }

  kiln_model *get() const { return model_; }
  std::vector<TensorInfo> inputs() const { return infos(false); }
  std::vector<TensorInfo> outputs() const { return infos(true); }
  /// The symbol or expression of a symbolic dim; "" for a static one.
  std::string inputDimName(size_t index, int32_t axis) const {
    const char *n = kiln_model_input_dim_name(model_, index, axis);
    return n ? n : "";
  }
  std::string outputDimName(size_t index, int32_t axis) const {
    const char *n = kiln_model_output_dim_name(model_, index, axis);
    return n ? n : "";
  }
  std::string metadataJson() const { return kiln_model_metadata_json(model_); }
  uint64_t contentHash() const { return kiln_model_content_hash(model_); }
  /// The kernel table (empty for a model compiled without the hooks).
  std::vector<KernelInfo> kernels() const {
    std::vector<KernelInfo> result;
    for (size_t i = 0, n = kiln_model_num_kernels(model_); i < n; ++i) {
      kiln_kernel_info info;
      check(kiln_model_kernel_info(model_, i, &info));
      result.push_back({info.name, info.category,
                        std::vector<std::string>(
                            info.onnx_nodes,
                            info.onnx_nodes + info.num_onnx_nodes)});
    }
    return result;
  }

private:
  kiln_model *model_ = nullptr;

  std::vector<TensorInfo> infos(bool outputs) const {
    std::vector<TensorInfo> result;
    size_t n = outputs ? kiln_model_num_outputs(model_)
                       : kiln_model_num_inputs(model_);
    for (size_t i = 0; i < n; ++i) {
      kiln_tensor_info info;
      check(outputs ? kiln_model_output_info(model_, i, &info)
                    : kiln_model_input_info(model_, i, &info));
      std::vector<std::string> names;
      for (int32_t axis = 0; axis < info.rank; ++axis)
        names.push_back(outputs ? outputDimName(i, axis)
                                : inputDimName(i, axis));
      result.push_back({info.name, info.dtype,
                        std::vector<int64_t>(info.dims,
                                             info.dims + info.rank),
                        std::move(names)});
    }
    return result;
  }
};

/// An output buffer the runtime allocated; freed with the object.
class OwnedTensor {
public:
  explicit OwnedTensor(kiln_tensor t) : t_(t) {}
  OwnedTensor(const OwnedTensor &) = delete;
  OwnedTensor &operator=(const OwnedTensor &) = delete;
  OwnedTensor(OwnedTensor &&o) noexcept : t_(o.t_) { o.t_.data = nullptr; }
  OwnedTensor &operator=(OwnedTensor &&o) noexcept {
    std::swap(t_, o.t_);
    return *this;
  }
  ~OwnedTensor() { kiln_tensor_release(&t_); }
  void *data() const { return t_.data; }
  template <typename T> T *as() const { return static_cast<T *>(t_.data); }
  int32_t dtype() const { return t_.dtype; }
  std::vector<int64_t> dims() const {
    return std::vector<int64_t>(t_.dims, t_.dims + t_.rank);
  }

private:
  kiln_tensor t_;
};

class Session {
public:
  /// numThreads 0: the hardware concurrency.
  explicit Session(const Model &model, int32_t numThreads = 0) {
    kiln_session_options options;
    kiln_session_options_init(&options);
    options.num_threads = numThreads;
    check(kiln_session_create(model.get(), &options, &session_));
  }
  /// Any options (device "cuda:1", cuda_graphs 0, ...): fill them with
  /// kiln_session_options_init first.
  Session(const Model &model, const kiln_session_options &options) {
    check(kiln_session_create(model.get(), &options, &session_));
  }
  Session(const Session &) = delete;
  Session &operator=(const Session &) = delete;
  Session(Session &&o) noexcept : session_(o.session_) { o.session_ = nullptr; }
  Session &operator=(Session &&o) noexcept {
    std::swap(session_, o.session_);
    return *this;
  }
  ~Session() { kiln_session_free(session_); }

  kiln_session *get() const { return session_; }

  /// Runs with caller-provided outputs. Thread-safe (runtime.h).
  void run(const std::vector<Tensor> &inputs,
           const std::vector<Tensor> &outputs) const {
    std::vector<kiln_tensor> in, out;
    for (const Tensor &t : inputs)
      in.push_back(t.view());
    for (const Tensor &t : outputs)
      out.push_back(t.view());
    check(kiln_session_run(session_, in.data(), in.size(), out.data(),
                           out.size()));
  }

  /// Runs and returns runtime-allocated outputs.
  std::vector<OwnedTensor> run(const std::vector<Tensor> &inputs) const {
    std::vector<kiln_tensor> in;
    for (const Tensor &t : inputs)
      in.push_back(t.view());
    size_t n = kiln_model_num_outputs(modelOf());
    std::vector<kiln_tensor> out(n, kiln_tensor{nullptr, 0, 0, nullptr});
    check(kiln_session_run(session_, in.data(), in.size(), out.data(), n));
    std::vector<OwnedTensor> result;
    result.reserve(n);
    for (const kiln_tensor &t : out)
      result.emplace_back(t);
    return result;
  }

  kiln_session_stats stats() const {
    kiln_session_stats s;
    check(kiln_session_get_stats(session_, &s));
    return s;
  }

  /// Kernel profiling (runtime.h): on/off between runs, and what it saw.
  void setProfiling(bool enabled) {
    check(kiln_session_set_profiling(session_, enabled ? 1 : 0));
  }
  void resetProfile() { check(kiln_session_reset_profile(session_)); }
  kiln_profile_summary profileSummary() const {
    kiln_profile_summary s;
    check(kiln_session_profile_summary(session_, &s));
    return s;
  }
  /// Per kernel, indexed like Model::kernels().
  std::vector<kiln_kernel_stats> kernelStats() const {
    std::vector<kiln_kernel_stats> result(kiln_model_num_kernels(modelOf()));
    for (size_t i = 0; i < result.size(); ++i)
      check(kiln_session_kernel_stats(session_, i, &result[i]));
    return result;
  }
  std::vector<kiln_profile_event> profileEvents() const {
    std::vector<kiln_profile_event> result(profileSummary().num_events);
    size_t n = 0;
    check(kiln_session_profile_events(session_, 0, result.size(),
                                      result.data(), &n));
    result.resize(n);
    return result;
  }

private:
  kiln_session *session_ = nullptr;
  const kiln_model *modelOf() const { return kiln_session_model(session_); }
};

} // namespace kiln

#endif // KILN_RUNTIME_HPP
