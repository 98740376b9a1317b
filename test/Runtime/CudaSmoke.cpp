//===- CudaSmoke.cpp - The CUDA runtime's device check, no dependencies ---===//
//
// kiln-cuda-smoke MODEL.kiln [BAD.kiln] [--runs N] [--json FILE]
//
// Runs TestCudaModel.c's artifact (kiln-test-artifact --cuda, with real
// kernels from TestCudaKernels.cu on a GPU, or the fake fatbin on the fake
// driver) through the runtime's C API and checks: the device list, outputs
// against y = relu(x + w) with graphs on and off, one capture then replays
// (same results on fresh inputs), the device memory statistics, per-kernel
// event timing, and (BAD.kiln, an artifact whose fatbin the device cannot
// load) the error naming the chip. Prints one line per check and the
// median run times with and without graphs, writes them as JSON with
// --json, and exits 0 when every check passed, 1 otherwise, 2 when it
// could not start (no device: the "no CUDA device: ..." line).
//
// Links only the runtime (no protobuf, no MLIR), so it can be copied to a
// GPU host with the artifacts (scripts/cuda-runtime-check.sh).
//
//===----------------------------------------------------------------------===//
#include "kiln/runtime.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {

int failures = 0;
std::vector<std::string> results; // JSON objects

void report(bool ok, const std::string &what, const std::string &detail = "") {
  std::printf("%s %s%s%s\n", ok ? "PASS" : "FAIL", what.c_str(),
              detail.empty() ? "" : ": ", detail.c_str());
  std::string d;
  for (char c : detail)
    d += c == '"' || c == '\\' ? std::string("\\") + c : std::string(1, c);
  results.push_back("{\"check\": \"" + what + "\", \"pass\": " +
                    (ok ? "true" : "false") + ", \"detail\": \"" + d + "\"}");
  if (!ok)
    ++failures;
}

const float kWeight[4] = {0.5f, -1.0f, 2.0f, -3.0f}; // TestArtifact.cpp's
const int64_t kDims[2] = {2, 4};

void inputs(float seed, float *x) {
  for (int i = 0; i < 8; ++i)
    x[i] = std::sin(seed * float(i + 1)) * 3.0f;
}

bool runAndCheck(kiln_session *s, float seed, std::string &why) {
  float x[8], y[8];
  inputs(seed, x);
  std::fill(y, y + 8, -1.0f);
  kiln_tensor in = {x, KILN_DTYPE_FLOAT32, 2, kDims};
  kiln_tensor out = {y, KILN_DTYPE_FLOAT32, 2, kDims};
  if (kiln_session_run(s, &in, 1, &out, 1) != KILN_OK) {
    why = kiln_last_error();
    return false;
  }
  for (int i = 0; i < 8; ++i) {
    float want = std::max(x[i] + kWeight[i % 4], 0.0f);
    if (y[i] != want) {
      why = "y[" + std::to_string(i) + "] = " + std::to_string(y[i]) +
            ", expected " + std::to_string(want);
      return false;
    }
  }
  return true;
}

double medianRunMs(kiln_session *s, int runs, std::string &why) {
  std::vector<double> ms;
  float x[8], y[8];
  inputs(1.0f, x);
  kiln_tensor in = {x, KILN_DTYPE_FLOAT32, 2, kDims};
  kiln_tensor out = {y, KILN_DTYPE_FLOAT32, 2, kDims};
  for (int r = 0; r < runs; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    if (kiln_session_run(s, &in, 1, &out, 1) != KILN_OK) {
      why = kiln_last_error();
      return -1;
    }
    ms.push_back(std::chrono::duration<double, std::milli>(
                     std::chrono::steady_clock::now() - t0)
                     .count());
  }
  std::sort(ms.begin(), ms.end());
  return ms.empty() ? 0 : ms[ms.size() / 2];
}

kiln_session *open(kiln_model *m, bool graphs) {
  kiln_session_options o;
  kiln_session_options_init(&o);
  o.cuda_graphs = graphs ? 1 : 0;
  kiln_session *s = nullptr;
  if (kiln_session_create(m, &o, &s) != KILN_OK)
    return nullptr;
  return s;
}

} // namespace

int main(int argc, char **argv) {
  std::string model, bad, jsonPath;
  int runs = 200;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--runs" && i + 1 < argc)
      runs = std::max(1, std::atoi(argv[++i]));
    else if (a == "--json" && i + 1 < argc)
      jsonPath = argv[++i];
    else if (model.empty())
      model = a;
    else
      bad = a;
  }
  if (model.empty()) {
    std::fprintf(stderr, "usage: kiln-cuda-smoke MODEL.kiln [BAD.kiln] "
                         "[--runs N] [--json FILE]\n");
    return 2;
  }
  const char *devices = nullptr;
  if (kiln_list_cuda_devices(&devices) != KILN_OK) {
    std::printf("%s\n", kiln_last_error());
    return 2;
  }
  std::printf("devices:\n%s", devices);
  kiln_model *m = nullptr;
  if (kiln_model_load(model.c_str(), &m) != KILN_OK) {
    std::printf("FAIL load: %s\n", kiln_last_error());
    return 2;
  }

  double graphMs = -1, eagerMs = -1;
  std::string device;
  for (bool graphs : {true, false}) {
    std::string mode = graphs ? "graphs" : "eager";
    kiln_session *s = open(m, graphs);
    if (!s) {
      report(false, mode + " session", kiln_last_error());
      continue;
    }
    device = kiln_session_device(s);
    std::string why;
    bool ok = true;
    for (int r = 0; r < 5 && ok; ++r)
      ok = runAndCheck(s, 0.3f + float(r), why);
    report(ok, mode + " outputs (5 runs, fresh inputs each)", why);
    kiln_session_stats st;
    kiln_session_get_stats(s, &st);
    // w 16 + x 32 + y 32 resident, the intermediate 32 from the pool.
    report(st.device_peak_bytes == 112 && st.device_pool_peak_bytes == 32 &&
               st.device_current_bytes == 80,
           mode + " device memory",
           "peak " + std::to_string(st.device_peak_bytes) + ", pool peak " +
               std::to_string(st.device_pool_peak_bytes) + ", current " +
               std::to_string(st.device_current_bytes));
    double ms = medianRunMs(s, runs, why);
    report(ms >= 0, mode + " timed runs", why);
    (graphs ? graphMs : eagerMs) = ms;

    if (!graphs) {
      kiln_session_set_profiling(s, 1);
      bool pok = runAndCheck(s, 2.0f, why) && runAndCheck(s, 3.0f, why);
      std::string detail = why;
      for (size_t k = 0; pok && k < 2; ++k) {
        kiln_kernel_stats ks;
        kiln_session_kernel_stats(s, k, &ks);
        detail += (k ? ", " : "") + std::string("kernel ") +
                  std::to_string(k) + ": " + std::to_string(ks.launches) +
                  " launches, min " + std::to_string(ks.min_ns) + " ns";
        pok = ks.launches == 2 && ks.min_ns > 0 && ks.min_ns < 100000000u;
      }
      report(pok, "event timing per kernel", detail);
    }
    kiln_session_free(s);
  }
  std::printf("median run: graphs %.4f ms, eager %.4f ms (%d runs each)\n",
              graphMs, eagerMs, runs);

  if (!bad.empty()) {
    kiln_model *b = nullptr;
    kiln_session *s = nullptr;
    std::string err;
    if (kiln_model_load(bad.c_str(), &b) != KILN_OK)
      err = kiln_last_error();
    else if (kiln_session_create(b, nullptr, &s) != KILN_OK)
      err = kiln_last_error();
    report(!s && err.find("cuModuleLoadData failed: the cuda-fatbin section "
                          "(chip ") != std::string::npos,
           "unloadable fatbin refused at session creation", err);
    kiln_session_free(s);
    kiln_model_free(b);
  }
  kiln_model_free(m);

  if (!jsonPath.empty()) {
    std::ofstream f(jsonPath, std::ios::trunc);
    f << "{\"schema\": \"kiln.cuda-smoke\", \"version\": 1,\n \"device\": \""
      << device << "\",\n \"median_run_ms\": {\"graphs\": " << graphMs
      << ", \"eager\": " << eagerMs << ", \"runs\": " << runs
      << "},\n \"checks\": [\n  ";
    for (size_t i = 0; i < results.size(); ++i)
      f << (i ? ",\n  " : "") << results[i];
    f << "\n ],\n \"pass\": " << (failures ? "false" : "true") << "}\n";
  }
  std::printf("%s\n", failures ? "result: FAIL" : "result: PASS");
  return failures ? 1 : 0;
}
