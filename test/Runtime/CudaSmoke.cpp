//===- CudaSmoke.cpp - The CUDA runtime's device check, no dependencies ---===//
//
// kiln-cuda-smoke MODEL.kiln [BAD.kiln] [--runs N] [--json FILE]
// kiln-cuda-smoke --list-devices
// kiln-cuda-smoke --record MODEL.kiln OUT.bin
// kiln-cuda-smoke --compare MODEL.kiln OUT.bin [--rtol R] [--atol A]
//                 [--runs N] [--json FILE]
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
// --record runs any artifact (a CPU build of a model, on the build machine)
// on generated inputs (input k: splitmix64 seeded with k; floats uniform in
// [-1, 1), integers 0..9) and writes its outputs; --compare runs a CUDA
// build of the same model on the same inputs, with graphs (several runs:
// capture, then replays) and without, and checks every output against the
// recording (floats: |a - e| <= atol + rtol * |e|; others exactly).
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
#include <iterator>
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

//===----------------------------------------------------------------------===//
// --record / --compare
//===----------------------------------------------------------------------===//

uint64_t splitmix(uint64_t &s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint16_t toHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000, e = (x >> 23) & 0xff, m = x & 0x7fffff;
  int32_t exp = int32_t(e) - 127 + 15;
  if (e == 0xff)
    return uint16_t(sign | 0x7c00 | (m ? 0x200 : 0));
  if (exp >= 31)
    return uint16_t(sign | 0x7c00);
  if (exp <= 0) {
    if (exp < -10)
      return uint16_t(sign);
    m |= 0x800000;
    uint32_t shift = uint32_t(14 - exp);
    uint32_t h = m >> shift, rem = m & ((1u << shift) - 1),
             half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1)))
      ++h;
    return uint16_t(sign | h);
  }
  uint32_t h = sign | (uint32_t(exp) << 10) | (m >> 13);
  uint32_t rem = m & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1)))
    ++h;
  return uint16_t(h);
}

float fromHalf(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16, e = (h >> 10) & 0x1f,
           m = h & 0x3ff, x;
  if (e == 0) {
    if (!m) {
      x = sign;
    } else {
      int32_t exp = -1;
      do {
        ++exp;
        m <<= 1;
      } while (!(m & 0x400));
      x = sign | (uint32_t(127 - 15 - exp) << 23) | ((m & 0x3ff) << 13);
    }
  } else if (e == 31) {
    x = sign | 0x7f800000 | (m << 13);
  } else {
    x = sign | ((e + 127 - 15) << 23) | (m << 13);
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

struct Tensors {
  std::vector<std::vector<unsigned char>> data;
  std::vector<kiln_tensor> views;
  std::vector<std::vector<int64_t>> dims;
};

// Buffers for the model's inputs (generated) or outputs (zeroed).
bool makeTensors(kiln_model *m, bool outputs, Tensors &t, std::string &why) {
  size_t n = outputs ? kiln_model_num_outputs(m) : kiln_model_num_inputs(m);
  t.data.resize(n);
  t.dims.resize(n);
  for (size_t i = 0; i < n; ++i) {
    kiln_tensor_info info;
    if ((outputs ? kiln_model_output_info(m, i, &info)
                 : kiln_model_input_info(m, i, &info)) != KILN_OK) {
      why = kiln_last_error();
      return false;
    }
    uint64_t count = 1;
    for (int32_t d = 0; d < info.rank; ++d)
      count *= uint64_t(info.dims[d]);
    size_t elem = kiln_dtype_size(info.dtype);
    t.data[i].assign(count * elem + 1, 0);
    t.dims[i].assign(info.dims, info.dims + info.rank);
    uint64_t state = i;
    for (uint64_t e = 0; !outputs && e < count; ++e) {
      uint64_t r = splitmix(state);
      float f = float(double(r >> 11) * (2.0 / 9007199254740992.0) - 1.0);
      unsigned char *p = t.data[i].data() + e * elem;
      switch (info.dtype) {
      case KILN_DTYPE_FLOAT32: std::memcpy(p, &f, 4); break;
      case KILN_DTYPE_FLOAT64: {
        double v = f;
        std::memcpy(p, &v, 8);
        break;
      }
      case KILN_DTYPE_FLOAT16: {
        uint16_t h = toHalf(f);
        std::memcpy(p, &h, 2);
        break;
      }
      case KILN_DTYPE_BFLOAT16: {
        uint32_t x;
        std::memcpy(&x, &f, 4);
        uint16_t b = uint16_t((x + 0x7fff + ((x >> 16) & 1)) >> 16);
        std::memcpy(p, &b, 2);
        break;
      }
      case KILN_DTYPE_BOOL: *p = (unsigned char)(r & 1); break;
      default: {
        int64_t v = int64_t(r % 10);
        std::memcpy(p, &v, elem); // little-endian: the low bytes
        break;
      }
      }
    }
    t.views.push_back({t.data[i].data(), info.dtype, info.rank,
                       t.dims[i].data()});
  }
  return true;
}

double elementAsDouble(int32_t dtype, const unsigned char *p) {
  switch (dtype) {
  case KILN_DTYPE_FLOAT32: {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  case KILN_DTYPE_FLOAT64: {
    double d;
    std::memcpy(&d, p, 8);
    return d;
  }
  case KILN_DTYPE_FLOAT16: {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return fromHalf(h);
  }
  case KILN_DTYPE_BFLOAT16: {
    uint16_t b;
    std::memcpy(&b, p, 2);
    uint32_t x = uint32_t(b) << 16;
    float f;
    std::memcpy(&f, &x, 4);
    return f;
  }
  default: return 0;
  }
}

bool isFloat(int32_t d) {
  return d == KILN_DTYPE_FLOAT32 || d == KILN_DTYPE_FLOAT64 ||
         d == KILN_DTYPE_FLOAT16 || d == KILN_DTYPE_BFLOAT16;
}

int record(const std::string &model, const std::string &outPath) {
  kiln_model *m = nullptr;
  kiln_session *s = nullptr;
  Tensors in, out;
  std::string why;
  if (kiln_model_load(model.c_str(), &m) != KILN_OK ||
      kiln_session_create(m, nullptr, &s) != KILN_OK) {
    std::printf("FAIL record: %s\n", kiln_last_error());
    return 2;
  }
  if (!makeTensors(m, false, in, why) || !makeTensors(m, true, out, why) ||
      kiln_session_run(s, in.views.data(), in.views.size(), out.views.data(),
                       out.views.size()) != KILN_OK) {
    std::printf("FAIL record: %s\n", why.empty() ? kiln_last_error()
                                                 : why.c_str());
    return 2;
  }
  std::ofstream f(outPath, std::ios::binary | std::ios::trunc);
  for (const auto &d : out.data)
    f.write(reinterpret_cast<const char *>(d.data()),
            std::streamsize(d.size() - 1));
  kiln_session_free(s);
  kiln_model_free(m);
  std::printf("recorded %zu outputs of %s on %s\n", out.data.size(),
              model.c_str(), "its target");
  return f ? 0 : 2;
}

// Compares a run's outputs with the recording; "" or the first mismatch.
std::string compareOutputs(const Tensors &out, const std::vector<char> &want,
                           double rtol, double atol, double &maxAbs) {
  size_t at = 0;
  for (size_t i = 0; i < out.data.size(); ++i) {
    const kiln_tensor &t = out.views[i];
    size_t bytes = out.data[i].size() - 1, elem = kiln_dtype_size(t.dtype);
    if (at + bytes > want.size())
      return "the recording is shorter than the outputs";
    const unsigned char *got = out.data[i].data();
    const unsigned char *exp =
        reinterpret_cast<const unsigned char *>(want.data()) + at;
    for (size_t e = 0; e < bytes / elem; ++e) {
      if (!isFloat(t.dtype)) {
        if (std::memcmp(got + e * elem, exp + e * elem, elem) != 0)
          return "output " + std::to_string(i) + " element " +
                 std::to_string(e) + " differs";
        continue;
      }
      double g = elementAsDouble(t.dtype, got + e * elem);
      double x = elementAsDouble(t.dtype, exp + e * elem);
      if (std::isnan(g) && std::isnan(x))
        continue;
      double err = std::fabs(g - x);
      if (!(err <= atol + rtol * std::fabs(x)))
        return "output " + std::to_string(i) + " element " +
               std::to_string(e) + ": " + std::to_string(g) + ", expected " +
               std::to_string(x);
      maxAbs = std::max(maxAbs, err);
    }
    at += bytes;
  }
  return at == want.size() ? "" : "the recording is longer than the outputs";
}

int compare(const std::string &model, const std::string &recording,
            double rtol, double atol, int runs, const std::string &jsonPath) {
  std::ifstream f(recording, std::ios::binary);
  std::vector<char> want((std::istreambuf_iterator<char>(f)),
                         std::istreambuf_iterator<char>());
  kiln_model *m = nullptr;
  if (kiln_model_load(model.c_str(), &m) != KILN_OK) {
    std::printf("FAIL load: %s\n", kiln_last_error());
    return 2;
  }
  std::string device;
  double graphMs = -1, eagerMs = -1;
  for (bool graphs : {true, false}) {
    std::string mode = graphs ? "graphs" : "eager";
    kiln_session *s = open(m, graphs);
    if (!s) {
      report(false, mode + " session", kiln_last_error());
      continue;
    }
    device = kiln_session_device(s);
    Tensors in, out;
    std::string why;
    double maxAbs = 0;
    bool ok = makeTensors(m, false, in, why) && makeTensors(m, true, out, why);
    std::vector<double> ms;
    for (int r = 0; ok && r < (graphs ? runs : std::min(runs, 20)); ++r) {
      auto t0 = std::chrono::steady_clock::now();
      if (kiln_session_run(s, in.views.data(), in.views.size(),
                           out.views.data(), out.views.size()) != KILN_OK) {
        why = kiln_last_error();
        ok = false;
        break;
      }
      ms.push_back(std::chrono::duration<double, std::milli>(
                       std::chrono::steady_clock::now() - t0)
                       .count());
      // The first run (captured) and the last (a replay) are checked.
      if (r == 0 || r + 1 == (graphs ? runs : std::min(runs, 20))) {
        why = compareOutputs(out, want, rtol, atol, maxAbs);
        ok = why.empty();
      }
    }
    std::sort(ms.begin(), ms.end());
    if (!ms.empty())
      (graphs ? graphMs : eagerMs) = ms[ms.size() / 2];
    report(ok, mode + " outputs match the recording",
           ok ? "max abs error " + std::to_string(maxAbs) + ", " +
                    std::to_string(ms.size()) + " runs, graphs " +
                    kiln_session_cuda_graphs(s)
              : why);
    kiln_session_free(s);
  }
  kiln_model_free(m);
  std::printf("median run: graphs %.4f ms, eager %.4f ms\n", graphMs, eagerMs);
  if (!jsonPath.empty()) {
    std::ofstream j(jsonPath, std::ios::trunc);
    j << "{\"schema\": \"kiln.cuda-smoke\", \"version\": 1,\n \"model\": \""
      << model << "\",\n \"device\": \"" << device
      << "\",\n \"median_run_ms\": {\"graphs\": " << graphMs
      << ", \"eager\": " << eagerMs << "},\n \"checks\": [\n  ";
    for (size_t i = 0; i < results.size(); ++i)
      j << (i ? ",\n  " : "") << results[i];
    j << "\n ],\n \"pass\": " << (failures ? "false" : "true") << "}\n";
  }
  std::printf("%s\n", failures ? "result: FAIL" : "result: PASS");
  return failures ? 1 : 0;
}

} // namespace

int main(int argc, char **argv) {
  std::string model, bad, jsonPath, mode;
  int runs = 200;
  double rtol = 1e-3, atol = 1e-5;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--runs" && i + 1 < argc)
      runs = std::max(1, std::atoi(argv[++i]));
    else if (a == "--json" && i + 1 < argc)
      jsonPath = argv[++i];
    else if (a == "--rtol" && i + 1 < argc)
      rtol = std::atof(argv[++i]);
    else if (a == "--atol" && i + 1 < argc)
      atol = std::atof(argv[++i]);
    else if (a == "--record" || a == "--compare" || a == "--list-devices")
      mode = a;
    else if (model.empty())
      model = a;
    else
      bad = a;
  }
  if (mode == "--list-devices") {
    const char *text = nullptr;
    if (kiln_list_cuda_devices(&text) != KILN_OK) {
      std::printf("%s\n", kiln_last_error());
      return 2;
    }
    std::fputs(text, stdout);
    return 0;
  }
  if (model.empty()) {
    std::fprintf(stderr,
                 "usage: kiln-cuda-smoke MODEL.kiln [BAD.kiln] [--runs N] "
                 "[--json FILE]\n"
                 "       kiln-cuda-smoke --list-devices\n"
                 "       kiln-cuda-smoke --record MODEL.kiln OUT.bin\n"
                 "       kiln-cuda-smoke --compare MODEL.kiln OUT.bin "
                 "[--rtol R] [--atol A] [--runs N] [--json FILE]\n");
    return 2;
  }
  if (mode == "--record")
    return bad.empty() ? 2 : record(model, bad);
  const char *devices = nullptr;
  if (kiln_list_cuda_devices(&devices) != KILN_OK) {
    std::printf("%s\n", kiln_last_error());
    return 2;
  }
  std::printf("devices:\n%s", devices);
  if (mode == "--compare")
    return bad.empty() ? 2 : compare(model, bad, rtol, atol, runs, jsonPath);
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
    why.clear();
    double ms = medianRunMs(s, runs, why);
    report(ms >= 0, mode + " timed runs", why);
    (graphs ? graphMs : eagerMs) = ms;

    if (!graphs) {
      kiln_session_set_profiling(s, 1);
      why.clear();
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
