//===- KilnModule.cpp - kiln._kiln: the compiler and runtime for Python ---===//
//
// The native half of the `kiln` package (python/kiln): compiling through the
// compiler's C API (libkiln-compiler.so, include/kiln-c/Compiler.h) and
// running through the runtime's (kiln/runtime.h), with kiln-run's
// measurement core (kiln/Run/Measure.h) timing runs in C++. The GIL is
// released while a compile or a run works. The Python half (kiln/__init__.py)
// shapes these into kiln.compile, kiln.ir and kiln.InferenceSession.
//
//===----------------------------------------------------------------------===//

#include "kiln-c/Compiler.h"
#include "kiln/Run/Measure.h"
#include "kiln/distributed.hpp"
#include "kiln/runtime.h"

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace nb = nanobind;
using namespace nb::literals;

namespace {

//===----------------------------------------------------------------------===//
// Compiling
//===----------------------------------------------------------------------===//

struct CompileResult {
  bool ok = false;
  nb::bytes output;
  /// (severity, location, node, message, text) per diagnostic.
  std::vector<std::tuple<std::string, std::string, std::string, std::string,
                         std::string>>
      diagnostics;
  std::string messages, passReport, graphPipeline, backendPipeline;
};

const char *severityName(kiln_compiler_severity_t s) {
  switch (s) {
  case KILN_COMPILER_NOTE:
    return "note";
  case KILN_COMPILER_WARNING:
    return "warning";
  case KILN_COMPILER_ERROR:
    return "error";
  case KILN_COMPILER_REMARK:
    return "remark";
  }
  return "error";
}

struct ProgressState {
  std::function<void(std::string, std::string, unsigned, unsigned)> callback;
  bool failed = false;
};

void progressTrampoline(void *user, const char *stage, const char *detail,
                        unsigned step, unsigned steps) {
  auto *state = static_cast<ProgressState *>(user);
  if (state->failed)
    return;
  nb::gil_scoped_acquire gil;
  try {
    state->callback(stage, detail, step, steps);
  } catch (nb::python_error &e) {
    // A callback that raises stops reporting; the compile goes on.
    e.discard_as_unraisable("kiln progress callback");
    state->failed = true;
  }
}

/// kind: "file", "onnx" (bytes) or "mlir" (text).
CompileResult compile(const std::string &kind, nb::bytes source,
                      const std::string &name, const std::string &baseDir,
                      const std::vector<std::string> &flags,
                      const std::string &stage, bool passReport,
                      std::function<void(std::string, std::string, unsigned,
                                         unsigned)>
                          progress) {
  CompileResult result;
  std::unique_ptr<kiln_compiler_session_t,
                  decltype(&kiln_compiler_session_destroy)>
      session(kiln_compiler_session_create(), kiln_compiler_session_destroy);
  std::vector<const char *> argv;
  for (const std::string &f : flags)
    argv.push_back(f.c_str());
  if (kiln_compiler_session_set_flags(session.get(), int(argv.size()),
                                      argv.data()) != 0) {
    std::string error = kiln_compiler_session_error(session.get());
    result.diagnostics.emplace_back("error", "", "", error,
                                    "kiln: " + error);
    return result;
  }
  std::unique_ptr<kiln_compiler_invocation_t,
                  decltype(&kiln_compiler_invocation_destroy)>
      inv(kiln_compiler_invocation_create(session.get()),
          kiln_compiler_invocation_destroy);
  ProgressState state;
  if (progress) {
    state.callback = std::move(progress);
    kiln_compiler_invocation_set_progress(inv.get(), progressTrampoline,
                                          &state);
  }
  if (passReport)
    kiln_compiler_invocation_enable_pass_report(inv.get());
  std::string bytes(source.c_str(), source.size());
  const void *data = nullptr;
  size_t size = 0;
  {
    nb::gil_scoped_release release;
    int status;
    if (kind == "file")
      status = kiln_compiler_invocation_parse_file(inv.get(), bytes.c_str());
    else if (kind == "onnx")
      status = kiln_compiler_invocation_parse_onnx_bytes(
          inv.get(), bytes.data(), bytes.size(), name.c_str(),
          baseDir.empty() ? nullptr : baseDir.c_str());
    else
      status = kiln_compiler_invocation_parse_mlir(
          inv.get(), bytes.data(), bytes.size(), name.c_str());
    if (status == 0)
      status = kiln_compiler_invocation_run(inv.get(), stage.c_str());
    if (status == 0)
      status = kiln_compiler_invocation_output(inv.get(), &data, &size);
    result.ok = status == 0;
  }
  if (result.ok)
    result.output = nb::bytes(static_cast<const char *>(data), size);
  size_t count = kiln_compiler_invocation_diagnostic_count(inv.get());
  for (size_t i = 0; i < count; ++i) {
    kiln_compiler_diagnostic_t d;
    if (kiln_compiler_invocation_diagnostic(inv.get(), i, &d) == 0)
      result.diagnostics.emplace_back(severityName(d.severity), d.location,
                                      d.node, d.message, d.text);
  }
  result.messages = kiln_compiler_invocation_messages(inv.get());
  result.passReport = kiln_compiler_invocation_pass_report(inv.get());
  result.graphPipeline = kiln_compiler_invocation_pipeline(inv.get(), 0);
  result.backendPipeline = kiln_compiler_invocation_pipeline(inv.get(), 1);
  return result;
}

std::vector<std::tuple<std::string, std::string, std::string>> compileFlags() {
  std::vector<std::tuple<std::string, std::string, std::string>> flags;
  for (size_t i = 0; i < kiln_compiler_flag_count(); ++i)
    flags.emplace_back(kiln_compiler_flag_name(i), kiln_compiler_flag_kind(i),
                       kiln_compiler_flag_help(i));
  return flags;
}

//===----------------------------------------------------------------------===//
// Running
//===----------------------------------------------------------------------===//

[[noreturn]] void raiseRuntime(kiln_status status) {
  std::string message = kiln_last_error();
  if (message.empty())
    message = kiln_status_string(status);
  if (status == KILN_ERROR_TENSOR_MISMATCH ||
      status == KILN_ERROR_INVALID_ARGUMENT)
    throw nb::value_error(message.c_str());
  throw std::runtime_error(message);
}

/// An input: the array (kept alive by the caller for the run) and the
/// dtype code the Python side read off it.
using Feed =
    std::tuple<nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>, int32_t>;

class Session {
public:
  Session(const std::string &path, int32_t threads, const std::string &device,
          bool cudaGraphs) {
    kiln_status s = kiln_model_load(path.c_str(), &model);
    if (s != KILN_OK)
      raiseRuntime(s);
    kiln_session_options options;
    kiln_session_options_init(&options);
    options.num_threads = threads;
    options.device = device.empty() ? nullptr : device.c_str();
    options.cuda_graphs = cudaGraphs;
    s = kiln_session_create(model, &options, &session);
    if (s != KILN_OK) {
      kiln_model_free(model);
      model = nullptr;
      raiseRuntime(s);
    }
  }
  ~Session() {
    if (session)
      kiln_session_free(session);
    if (model)
      kiln_model_free(model);
  }

  /// (name, dtype code, dims, dim names) of each input or output: a
  /// symbolic dim is -1 in dims and its symbol (input) or expression
  /// (output) in dim names, "" for a static dim.
  using TensorDescription = std::tuple<std::string, int32_t,
                                       std::vector<int64_t>,
                                       std::vector<std::string>>;
  std::vector<TensorDescription> tensors(bool inputs) const {
    std::vector<TensorDescription> out;
    size_t n = inputs ? kiln_model_num_inputs(model)
                      : kiln_model_num_outputs(model);
    for (size_t i = 0; i < n; ++i) {
      kiln_tensor_info info;
      if (inputs)
        kiln_model_input_info(model, i, &info);
      else
        kiln_model_output_info(model, i, &info);
      std::vector<std::string> names;
      for (int32_t axis = 0; axis < info.rank; ++axis) {
        const char *name = inputs ? kiln_model_input_dim_name(model, i, axis)
                                  : kiln_model_output_dim_name(model, i, axis);
        names.push_back(name ? name : "");
      }
      out.emplace_back(info.name, info.dtype,
                       std::vector<int64_t>(info.dims, info.dims + info.rank),
                       std::move(names));
    }
    return out;
  }

  std::string metadata() const { return kiln_model_metadata_json(model); }
  std::string device() const { return kiln_session_device(session); }
  int32_t numThreads() const { return kiln_session_num_threads(session); }

  /// Runs once; every output as an array that owns the runtime's buffer
  /// (freed by kiln_tensor_release when the array goes), of this run's
  /// shape (computed from the inputs' when the model has symbolic dims).
  nb::list run(const std::vector<Feed> &feeds) {
    std::vector<kiln_tensor> in = inputs(feeds);
    size_t numOutputs = kiln_model_num_outputs(model);
    std::vector<kiln_tensor> out(numOutputs, kiln_tensor{nullptr, 0, 0,
                                                         nullptr});
    kiln_status s;
    {
      nb::gil_scoped_release release;
      s = kiln_session_run(session, in.data(), in.size(), out.data(),
                           out.size());
    }
    if (s != KILN_OK)
      raiseRuntime(s);
    nb::list results;
    for (kiln_tensor &t : out) {
      auto *owned = new kiln_tensor(t);
      nb::capsule owner(owned, [](void *p) noexcept {
        auto *tensor = static_cast<kiln_tensor *>(p);
        kiln_tensor_release(tensor);
        delete tensor;
      });
      std::vector<size_t> shape(t.dims, t.dims + t.rank);
      results.append(nb::make_tuple(
          nb::ndarray<nb::numpy, nb::c_contig>(
              t.data ? t.data : static_cast<void *>(&owned->data),
              shape.size(), shape.data(), owner, nullptr, dtypeOf(t.dtype)),
          t.dtype));
    }
    return results;
  }

  /// The runtime's generation loop (kiln_generate) over `prompts` (lists
  /// of ids); the GIL is released while it runs.
  nb::dict generate(const std::vector<std::vector<int64_t>> &prompts,
                    int32_t maxNewTokens, const std::vector<int64_t> &stopIds,
                    float temperature, int32_t topK, float topP, uint64_t seed,
                    int64_t padId, int64_t maxLength) {
    kiln_generate_options o;
    kiln_generate_options_init(&o);
    o.max_new_tokens = maxNewTokens;
    o.stop_ids = stopIds.data();
    o.num_stop_ids = stopIds.size();
    o.temperature = temperature;
    o.top_k = topK;
    o.top_p = topP;
    o.seed = seed;
    o.pad_id = padId;
    o.max_length = maxLength;
    std::vector<const int64_t *> starts;
    std::vector<size_t> lengths;
    for (const auto &p : prompts) {
      starts.push_back(p.data());
      lengths.push_back(p.size());
    }
    kiln_generation *g = nullptr;
    kiln_status st;
    std::string error;
    {
      nb::gil_scoped_release unlocked;
      st = kiln_generate(session, starts.data(), lengths.data(),
                         prompts.size(), &o, &g);
      if (st != KILN_OK)
        error = kiln_last_error();
    }
    if (st != KILN_OK)
      throw std::invalid_argument(error);
    std::unique_ptr<kiln_generation, void (*)(kiln_generation *)> owned(
        g, kiln_generation_free);
    std::vector<std::vector<int64_t>> tokens;
    for (size_t b = 0; b < prompts.size(); ++b) {
      const int64_t *t = kiln_generation_tokens(g, b);
      tokens.emplace_back(t, t + kiln_generation_num_tokens(g, b));
    }
    const uint64_t *ns = kiln_generation_step_ns(g);
    std::vector<double> stepMs;
    for (size_t k = 0; k < kiln_generation_num_steps(g); ++k)
      stepMs.push_back(double(ns[k]) * 1e-6);
    nb::dict result;
    result["tokens"] = tokens;
    result["step_ms"] = stepMs;
    result["prompt_length"] = kiln_generation_prompt_length(g);
    result["vocab"] = kiln_generation_vocab(g);
    result["state_bytes"] = kiln_generation_state_bytes(g);
    result["peak_state_bytes"] = kiln_generation_peak_state_bytes(g);
    const uint64_t *copied = kiln_generation_step_copied_bytes(g);
    result["step_copied_bytes"] = std::vector<uint64_t>(
        copied, copied + kiln_generation_num_steps(g));
    return result;
  }

  /// kiln-run's measurement on these inputs: a cold run, `warmup` runs,
  /// then `iterations` and/or `duration` seconds of timed runs, all in C++
  /// (Python is not in the timings); profiling per kernel when asked.
  nb::dict benchmark(const std::vector<Feed> &feeds, long warmup,
                     long iterations, double duration, bool profile) {
    std::vector<kiln_tensor> in = inputs(feeds);
    size_t numOutputs = kiln_model_num_outputs(model);
    std::vector<kiln_tensor> out(numOutputs, kiln_tensor{nullptr, 0, 0,
                                                         nullptr});
    struct Release {
      std::vector<kiln_tensor> &out;
      ~Release() {
        for (kiln_tensor &t : out)
          kiln_tensor_release(&t);
      }
    } release{out};
    auto runOnce = [&](double &ms) {
      auto t0 = std::chrono::steady_clock::now();
      kiln_status s =
          kiln_session_run(session, in.data(), in.size(), out.data(),
                           out.size());
      ms = std::chrono::duration<double, std::milli>(
               std::chrono::steady_clock::now() - t0)
               .count();
      return s == KILN_OK;
    };
    kiln::run::TimedRuns timed;
    double coldMs = 0;
    bool ok;
    std::string error;
    {
      nb::gil_scoped_release unlocked;
      if (profile)
        kiln_session_reset_profile(session);
      ok = runOnce(coldMs) &&
           kiln::run::timeRuns(runOnce, warmup, iterations, duration,
                               [&] {
                                 return !profile ||
                                        kiln_session_set_profiling(
                                            session, 1) == KILN_OK;
                               },
                               timed);
      if (!ok)
        error = kiln_last_error();
      if (profile)
        kiln_session_set_profiling(session, 0);
    }
    if (!ok)
      throw std::runtime_error(error);
    kiln::run::TimingSummary ts = kiln::run::summarize(timed.milliseconds);
    nb::dict result;
    result["cold_ms"] = coldMs;
    result["warmup"] = warmup;
    result["iterations"] = timed.milliseconds.size();
    result["elapsed_s"] = timed.elapsedMs / 1e3;
    result["times_ms"] = timed.milliseconds;
    nb::dict summary;
    summary["min"] = ts.min;
    summary["median"] = ts.median;
    summary["mean"] = ts.mean;
    summary["p90"] = ts.p90;
    summary["p99"] = ts.p99;
    summary["max"] = ts.max;
    summary["stddev"] = ts.stddev;
    result["time_ms"] = summary;
    kiln_session_stats stats;
    if (kiln_session_get_stats(session, &stats) == KILN_OK) {
      result["peak_bytes"] = stats.peak_bytes;
      result["process_peak_bytes"] = stats.process_peak_bytes;
    }
    result["peak_rss_bytes"] = kiln::run::peakRssBytes();
    if (timed.energyAvailable && !timed.milliseconds.empty()) {
      nb::dict energy;
      energy["joules"] = timed.joules;
      energy["joules_per_run"] =
          timed.joules / double(timed.milliseconds.size());
      energy["domains"] = timed.energyDomains;
      result["energy"] = energy;
    } else {
      result["energy"] = nb::none();
      result["energy_unavailable"] =
          timed.energyAvailable ? std::string("no timed runs")
                                : timed.energyReason;
    }
    if (profile) {
      nb::list kernels;
      for (size_t k = 0; k < kiln_model_num_kernels(model); ++k) {
        kiln_kernel_info info;
        kiln_kernel_stats ks;
        if (kiln_model_kernel_info(model, k, &info) != KILN_OK ||
            kiln_session_kernel_stats(session, k, &ks) != KILN_OK)
          continue;
        nb::dict entry;
        entry["name"] = info.name;
        entry["category"] = info.category;
        std::vector<std::string> nodes(info.onnx_nodes,
                                       info.onnx_nodes + info.num_onnx_nodes);
        entry["onnx_nodes"] = nodes;
        entry["launches"] = ks.launches;
        entry["total_ms"] = double(ks.total_ns) / 1e6;
        entry["mean_ms"] =
            ks.launches ? double(ks.total_ns) / 1e6 / double(ks.launches) : 0.0;
        entry["min_ms"] = double(ks.min_ns) / 1e6;
        entry["max_ms"] = double(ks.max_ns) / 1e6;
        kernels.append(entry);
      }
      result["kernels"] = kernels;
    }
    return result;
  }

private:
  std::vector<kiln_tensor> inputs(const std::vector<Feed> &feeds) {
    std::vector<kiln_tensor> in;
    for (const Feed &feed : feeds) {
      const auto &array = std::get<0>(feed);
      // The runtime reads dims as int64: the array's shape is int64 already.
      in.push_back({const_cast<void *>(array.data()), std::get<1>(feed),
                    int32_t(array.ndim()),
                    reinterpret_cast<const int64_t *>(array.shape_ptr())});
    }
    return in;
  }

  static nb::dlpack::dtype dtypeOf(int32_t code) {
    using nb::dlpack::dtype_code;
    auto make = [](dtype_code c, uint8_t bits) {
      return nb::dlpack::dtype{uint8_t(c), bits, 1};
    };
    switch (code) {
    case KILN_DTYPE_FLOAT32:
      return make(dtype_code::Float, 32);
    case KILN_DTYPE_FLOAT64:
      return make(dtype_code::Float, 64);
    case KILN_DTYPE_FLOAT16:
      return make(dtype_code::Float, 16);
    case KILN_DTYPE_BFLOAT16: // viewed as ml_dtypes.bfloat16 in Python
      return make(dtype_code::UInt, 16);
    case KILN_DTYPE_INT8:
      return make(dtype_code::Int, 8);
    case KILN_DTYPE_INT16:
      return make(dtype_code::Int, 16);
    case KILN_DTYPE_INT32:
      return make(dtype_code::Int, 32);
    case KILN_DTYPE_INT64:
      return make(dtype_code::Int, 64);
    case KILN_DTYPE_UINT8:
      return make(dtype_code::UInt, 8);
    case KILN_DTYPE_UINT16:
      return make(dtype_code::UInt, 16);
    case KILN_DTYPE_UINT32:
      return make(dtype_code::UInt, 32);
    case KILN_DTYPE_UINT64:
      return make(dtype_code::UInt, 64);
    case KILN_DTYPE_BOOL:
      return make(dtype_code::Bool, 8);
    }
    throw std::runtime_error("an output of dtype " + std::to_string(code) +
                             " has no numpy type");
  }

  kiln_model *model = nullptr;
  kiln_session *session = nullptr;
};

} // namespace

NB_MODULE(_kiln, m) {
  m.doc() = "Kiln's compiler and runtime (the native half of the kiln "
            "package)";
  m.def("version", [] { return std::string(kiln_compiler_version()); });
  m.def("compile_flags", &compileFlags,
        "The compile flags: (name, kind, help) each");

  // kiln.distributed: the process's MPI world (include/kiln/distributed.hpp).
  nb::module_ d = m.def_submodule(
      "distributed", "The MPI world of a process started by mpirun or srun");
  auto world = [] { return &kiln::dist::World::get(); };
  d.def("init", [] {
    std::string error;
    if (!kiln::dist::World::get().init(error))
      throw std::runtime_error(error);
  }, "Joins the launcher's world (a world of one without a launcher)");
  d.def("uses_mpi", [=] { return world()->usesMpi(); });
  d.def("rank", [=] { return world()->rank(); });
  d.def("size", [=] { return world()->size(); });
  d.def("local_rank", [=] { return world()->localRank(); });
  d.def("local_size", [=] { return world()->localSize(); });
  d.def("nodes", [=] { return world()->numNodes(); });
  d.def("hostname", [=] { return world()->hostname(); });
  d.def("launcher", [=] { return world()->launcher(); });
  d.def("library", [=] { return world()->launcherVersion(); });
  d.def("barrier", [=](bool idle) {
    nb::gil_scoped_release release;
    if (idle)
      world()->idleBarrier();
    else
      world()->barrier();
  }, "idle"_a = false,
        "idle: wait without spinning (while another rank works alone)");
  d.def("gather", [=](const std::string &mine, int root) {
    std::vector<std::string> all;
    {
      nb::gil_scoped_release release;
      all = world()->gather(mine, root);
    }
    return all;
  }, "mine"_a, "root"_a = 0,
        "Every rank's string, in rank order, on root (empty elsewhere)");
  d.def("broadcast", [=](const std::string &value, int root) {
    nb::gil_scoped_release release;
    return world()->broadcast(value, root);
  }, "value"_a, "root"_a = 0);
  d.def("abort", [=](const std::string &tool, const std::string &message,
                     int code) { world()->abortJob(tool, message, code); },
        "tool"_a, "message"_a, "code"_a = 2,
        "Prints the rank, its host and the message and ends the whole job");

  nb::class_<CompileResult>(m, "CompileResult")
      .def_ro("ok", &CompileResult::ok)
      .def_ro("output", &CompileResult::output)
      .def_ro("diagnostics", &CompileResult::diagnostics)
      .def_ro("messages", &CompileResult::messages)
      .def_ro("pass_report", &CompileResult::passReport)
      .def_ro("graph_pipeline", &CompileResult::graphPipeline)
      .def_ro("backend_pipeline", &CompileResult::backendPipeline);
  m.def("compile", &compile, "kind"_a, "source"_a, "name"_a, "base_dir"_a,
        "flags"_a, "stage"_a, "pass_report"_a = false,
        "progress"_a = nb::none(),
        "Compiles a source (kind file|onnx|mlir) with kiln-compile flags to "
        "a stage; the GIL is released while it works");

  nb::class_<Session>(m, "Session")
      .def(nb::init<const std::string &, int32_t, const std::string &, bool>(),
           "path"_a, "threads"_a = 0, "device"_a = "", "cuda_graphs"_a = true)
      .def("inputs", [](const Session &s) { return s.tensors(true); })
      .def("outputs", [](const Session &s) { return s.tensors(false); })
      .def("metadata", &Session::metadata)
      .def("device", &Session::device)
      .def("num_threads", &Session::numThreads)
      .def("run", &Session::run, "feeds"_a)
      .def("generate", &Session::generate, "prompts"_a, "max_new_tokens"_a,
           "stop_ids"_a, "temperature"_a, "top_k"_a, "top_p"_a, "seed"_a,
           "pad_id"_a, "max_length"_a)
      .def("benchmark", &Session::benchmark, "feeds"_a, "warmup"_a,
           "iterations"_a, "duration"_a, "profile"_a);
}
