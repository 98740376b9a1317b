//===- kiln-cuda-bench.cpp - The GPU check's references: copy and cuBLASLt ===//
//
// What Kiln's CUDA kernels are measured against (scripts/gpu-check.sh):
//
//   kiln-cuda-bench copy BYTES         device-to-device copy of BYTES: the
//                                      device's copy bandwidth, counted as
//                                      read + write (2 x BYTES per copy)
//   kiln-cuda-bench gemm M N K DTYPE   one row-major GEMM through cuBLASLt
//                                      alone (the library Kiln's library
//                                      mode calls), DTYPE float16, bfloat16
//                                      or float32, fp32 accumulation
//
// Options: --device N (default 0), --warmup N (5), --iterations N (50),
// --json FILE. Timing: CUDA events around each repetition on one stream,
// median. Uses the runtime's own driver loader and cuBLASLt wrapper
// (runtime/cuda/), so it needs no CUDA toolkit to build and, without a
// driver or device, says "no CUDA device: <reason>" and exits 2.
//
//===----------------------------------------------------------------------===//

#include "CublasLt.h"
#include "CudaDriver.h"

#include "kiln/artifact_format.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

using namespace kiln::cuda;

namespace {

[[noreturn]] void fail(const std::string &message, int code = 2) {
  std::fprintf(stderr, "kiln-cuda-bench: %s\n", message.c_str());
  std::exit(code);
}

void check(const Driver *d, CUresult r, const char *what) {
  if (r != CUDA_SUCCESS)
    fail(std::string(what) + " failed: " + d->errorText(r));
}

void usage() {
  std::printf(
      "usage: kiln-cuda-bench copy BYTES [options]\n"
      "       kiln-cuda-bench gemm M N K float16|bfloat16|float32 [options]\n"
      "options: --device N  --warmup N (5)  --iterations N (50)  "
      "--json FILE\n");
}

double median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

long long parseCount(const char *text, const char *what) {
  char *end = nullptr;
  long long v = std::strtoll(text, &end, 10);
  if (!end || *end || v <= 0)
    fail(std::string("bad ") + what + " '" + text + "'");
  return v;
}

} // namespace

int main(int argc, char **argv) {
  std::vector<std::string> positional;
  int deviceIndex = 0, warmup = 5, iterations = 50;
  std::string jsonPath;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> const char * {
      if (i + 1 >= argc)
        fail("missing value after " + arg);
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      usage();
      return 0;
    } else if (arg == "--device")
      deviceIndex = int(std::strtol(value(), nullptr, 10));
    else if (arg == "--warmup")
      warmup = int(std::strtol(value(), nullptr, 10));
    else if (arg == "--iterations")
      iterations = int(parseCount(value(), "iteration count"));
    else if (arg == "--json")
      jsonPath = value();
    else if (!arg.empty() && arg[0] == '-')
      fail("unknown option " + arg);
    else
      positional.push_back(arg);
  }
  if (positional.empty() ||
      !((positional[0] == "copy" && positional.size() == 2) ||
        (positional[0] == "gemm" && positional.size() == 5))) {
    usage();
    return 2;
  }
  // The arguments are checked before the device, so that a mistake shows
  // on a machine without one too.
  const std::string mode = positional[0];
  long long bytes = 0, m = 0, n = 0, k = 0;
  int32_t dtype = KILN_DTYPE_UNDEFINED;
  if (mode == "copy") {
    bytes = parseCount(positional[1].c_str(), "byte count");
  } else {
    m = parseCount(positional[1].c_str(), "M");
    n = parseCount(positional[2].c_str(), "N");
    k = parseCount(positional[3].c_str(), "K");
    dtype = kiln_dtype_from_name(positional[4].c_str());
    if (dtype != KILN_DTYPE_FLOAT16 && dtype != KILN_DTYPE_BFLOAT16 &&
        dtype != KILN_DTYPE_FLOAT32)
      fail("dtype '" + positional[4] +
           "' (the cuBLASLt GEMM takes float16, bfloat16, float32)");
  }

  std::string error;
  const Driver *d = loadDriver(error);
  if (!d)
    fail("no CUDA device: " + error);
  int count = 0;
  check(d, d->cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (count == 0)
    fail("no CUDA device: the driver reports none");
  if (deviceIndex < 0 || deviceIndex >= count)
    fail("no CUDA device " + std::to_string(deviceIndex) + " (" +
         std::to_string(count) + " present)");
  CUdevice device;
  check(d, d->cuDeviceGet(&device, deviceIndex), "cuDeviceGet");
  char name[256] = {0};
  check(d, d->cuDeviceGetName(name, sizeof(name) - 1, device),
        "cuDeviceGetName");
  CUcontext context;
  check(d, d->cuDevicePrimaryCtxRetain(&context, device),
        "cuDevicePrimaryCtxRetain");
  check(d, d->cuCtxSetCurrent(context), "cuCtxSetCurrent");
  CUstream stream;
  check(d, d->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING),
        "cuStreamCreate");
  CUevent start, stop;
  check(d, d->cuEventCreate(&start, CU_EVENT_DEFAULT), "cuEventCreate");
  check(d, d->cuEventCreate(&stop, CU_EVENT_DEFAULT), "cuEventCreate");

  // Times `body` (enqueued on the stream) warmup + iterations times.
  auto timeIt = [&](auto body) {
    for (int i = 0; i < warmup; ++i)
      body();
    check(d, d->cuStreamSynchronize(stream), "cuStreamSynchronize");
    std::vector<float> samples;
    for (int i = 0; i < iterations; ++i) {
      check(d, d->cuEventRecord(start, stream), "cuEventRecord");
      body();
      check(d, d->cuEventRecord(stop, stream), "cuEventRecord");
      check(d, d->cuEventSynchronize(stop), "cuEventSynchronize");
      float ms = 0;
      check(d, d->cuEventElapsedTime(&ms, start, stop), "cuEventElapsedTime");
      samples.push_back(ms);
    }
    return median(samples);
  };

  std::string json;
  char buffer[512];
  if (mode == "copy") {
    CUdeviceptr src, dst;
    check(d, d->cuMemAlloc(&src, size_t(bytes)), "cuMemAlloc");
    check(d, d->cuMemAlloc(&dst, size_t(bytes)), "cuMemAlloc");
    check(d, d->cuMemsetD32Async(src, 0x3f800000u, size_t(bytes) / 4, stream),
          "cuMemsetD32Async");
    double ms = timeIt([&] {
      check(d, d->cuMemcpyAsync(dst, src, size_t(bytes), stream),
            "cuMemcpyAsync");
    });
    double gbps = 2.0 * double(bytes) / (ms * 1e-3) / 1e9;
    std::printf("copy %lld bytes on %s: median %.4f ms, %.1f GB/s (read + "
                "write)\n",
                bytes, name, ms, gbps);
    std::snprintf(buffer, sizeof(buffer),
                  "{\"tool\": \"kiln-cuda-bench\", \"mode\": \"copy\", "
                  "\"device\": \"%s\", \"bytes\": %lld, \"iterations\": %d, "
                  "\"median_ms\": %.6f, \"gb_per_s\": %.3f}\n",
                  name, bytes, iterations, ms, gbps);
    json = buffer;
    d->cuMemFree(src);
    d->cuMemFree(dst);
  } else {
    CublasLt *lt = nullptr;
    if (std::string e = CublasLt::load(lt); !e.empty())
      fail("cuBLASLt: " + e);
    size_t element = kiln_dtype_size(dtype);
    CUdeviceptr a, b, c, workspace;
    const uint64_t workspaceBytes = 32ull << 20;
    check(d, d->cuMemAlloc(&a, size_t(m * k) * element), "cuMemAlloc");
    check(d, d->cuMemAlloc(&b, size_t(k * n) * element), "cuMemAlloc");
    check(d, d->cuMemAlloc(&c, size_t(m * n) * element), "cuMemAlloc");
    check(d, d->cuMemAlloc(&workspace, workspaceBytes), "cuMemAlloc");
    // Ones (1.0 in the element type): finite values, no denormals.
    if (element == 2) {
      unsigned short one = dtype == KILN_DTYPE_FLOAT16 ? 0x3c00 : 0x3f80;
      check(d, d->cuMemsetD16Async(a, one, size_t(m * k), stream), "memset");
      check(d, d->cuMemsetD16Async(b, one, size_t(k * n), stream), "memset");
    } else {
      check(d, d->cuMemsetD32Async(a, 0x3f800000u, size_t(m * k), stream),
            "memset");
      check(d, d->cuMemsetD32Async(b, 0x3f800000u, size_t(k * n), stream),
            "memset");
    }
    GemmArgs args{};
    args.dtype = dtype;
    args.epilogue = 0;
    args.batch = 1;
    args.bBatch = 1;
    args.m = m;
    args.n = n;
    args.k = k;
    args.a = reinterpret_cast<const void *>(a);
    args.b = reinterpret_cast<const void *>(b);
    args.bias = nullptr;
    args.c = reinterpret_cast<void *>(c);
    GemmPlan plan;
    if (std::string e = planGemm(args, plan); !e.empty())
      fail(e);
    double ms = timeIt([&] {
      if (std::string e = lt->run(args, plan, stream,
                                  reinterpret_cast<void *>(workspace),
                                  workspaceBytes);
          !e.empty())
        fail(e);
    });
    double tflops = 2.0 * double(m) * double(n) * double(k) / (ms * 1e-3) /
                    1e12;
    std::printf("gemm %lldx%lldx%lld %s (cuBLASLt) on %s: median %.4f ms, "
                "%.1f TFLOP/s\n",
                m, n, k, positional[4].c_str(), name, ms, tflops);
    std::snprintf(buffer, sizeof(buffer),
                  "{\"tool\": \"kiln-cuda-bench\", \"mode\": \"gemm\", "
                  "\"device\": \"%s\", \"m\": %lld, \"n\": %lld, \"k\": %lld, "
                  "\"dtype\": \"%s\", \"iterations\": %d, \"median_ms\": "
                  "%.6f, \"tflops\": %.3f}\n",
                  name, m, n, k, positional[4].c_str(), iterations, ms,
                  tflops);
    json = buffer;
    d->cuMemFree(a);
    d->cuMemFree(b);
    d->cuMemFree(c);
    d->cuMemFree(workspace);
  }
  d->cuEventDestroy(start);
  d->cuEventDestroy(stop);
  d->cuStreamDestroy(stream);
  d->cuDevicePrimaryCtxRelease(device);
  if (!jsonPath.empty()) {
    std::ofstream out(jsonPath);
    out << json;
    if (!out)
      fail("cannot write " + jsonPath);
  }
  return 0;
}
