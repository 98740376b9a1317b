//===- CudaRuntimeTest.cpp - Tests of the CUDA runtime without a GPU ------===//
//
// runtime/cuda/ on a machine without a GPU: the device memory bookkeeping,
// the cuBLASLt GEMM and cuDNN convolution planning, the library calls on
// host stand-ins (FakeCublasLt.c, FakeCudnn.c), a "cuda" artifact's
// metadata, the messages
// without a driver ($KILN_LIBCUDA at a missing file, a cuInit error, zero
// devices), and whole sessions and runs against the fake driver of
// test/Runtime/FakeCuda.c: outputs, graph capture and replay, profiling with
// events, device memory statistics, and errors naming the failing call and
// kernel.
//
//===----------------------------------------------------------------------===//
#include "Artifact.h"
#include "CublasLt.h"
#include "Cudnn.h"
#include "DeviceMemory.h"
#include "TestArtifact.h"
#include "kiln/cuda_abi.h"
#include "kiln/runtime.h"
#include "kiln/runtime.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <string>
#include <unistd.h>
#include <vector>

using namespace kiln;

namespace {

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

std::string tempPath(const std::string &name) {
  static std::string dir = [] {
    char tmpl[] = "/tmp/kiln-cuda-test-XXXXXX";
    const char *d = mkdtemp(tmpl);
    return std::string(d ? d : "/tmp");
  }();
  return dir + "/" + name;
}

// FakeCuda.c's state (same layout).
struct FakeCudaState {
  int deviceCount;
  int poolsSupported;
  int initError;
  char failCall[64];
  char failKernel[64];
  int failCode;
  int initialized;
  int kernelsExecuted;
  int launchesCaptured;
  int graphsInstantiated;
  int graphLaunches;
  int captures;
  int moduleLoads, moduleUnloads;
  int liveAllocations;
  int poolAllocations;
  int plainAllocations;
  int eventsRecorded;
  int contextsRetained;
  char lastKernel[64];
  int functionsLoaded;
};

FakeCudaState &fake() {
  static FakeCudaState *state = [] {
    void *h = dlopen(test::kFakeCudaSo, RTLD_NOW | RTLD_LOCAL);
    EXPECT_NE(h, nullptr) << dlerror();
    return static_cast<FakeCudaState *>(
        h ? dlsym(h, "fake_cuda_state") : nullptr);
  }();
  return *state;
}

// Points the runtime at the fake driver and resets its knobs and counters
// (the counters of earlier tests' leftovers are not kept).
void useFakeDriver() {
  setenv("KILN_LIBCUDA", test::kFakeCudaSo, 1);
  FakeCudaState &s = fake();
  int live = s.liveAllocations, contexts = s.contextsRetained;
  std::memset(&s, 0, sizeof(s));
  s.deviceCount = 1;
  s.poolsSupported = 1;
  s.liveAllocations = live;
  s.contextsRetained = contexts;
}

std::string cudaArtifact(const std::string &name,
                         const std::string &fatbin = test::kFakeFatbin,
                         const std::string &so = test::kTestCudaModelSo,
                         bool gemm = false, bool conv = false) {
  std::string path = tempPath(name);
  std::string err =
      test::writeTestCudaArtifact(path, so, fatbin, "sm_80", gemm, conv);
  EXPECT_EQ(err, "");
  return path;
}

struct Loaded {
  kiln_model *model = nullptr;
  kiln_session *session = nullptr;
  ~Loaded() {
    kiln_session_free(session);
    kiln_model_free(model);
  }
};

// Loads `path` and opens a session with `graphs`; the status of the
// session's creation (its message in `error`).
kiln_status open(const std::string &path, Loaded &l, bool graphs = true,
                 const char *device = nullptr,
                 std::string *error = nullptr) {
  kiln_status st = kiln_model_load(path.c_str(), &l.model);
  EXPECT_EQ(st, KILN_OK) << kiln_last_error();
  if (st != KILN_OK)
    return st;
  kiln_session_options o;
  kiln_session_options_init(&o);
  o.device = device;
  o.cuda_graphs = graphs ? 1 : 0;
  st = kiln_session_create(l.model, &o, &l.session);
  if (error)
    *error = st == KILN_OK ? "" : kiln_last_error();
  return st;
}

const int64_t kDims[2] = {2, 4};

// Runs once on x = seed-dependent values and checks y against the
// reference; the run's status (message in `error`).
kiln_status runOnce(kiln_session *s, float seed, std::string *error = nullptr,
                    bool checkValues = true) {
  float x[8], y[8], want[8];
  for (int i = 0; i < 8; ++i)
    x[i] = seed * float(i) - 2.0f;
  std::memset(y, 0, sizeof(y));
  kiln_tensor in = {x, KILN_DTYPE_FLOAT32, 2, kDims};
  kiln_tensor out = {y, KILN_DTYPE_FLOAT32, 2, kDims};
  kiln_status st = kiln_session_run(s, &in, 1, &out, 1);
  if (error)
    *error = st == KILN_OK ? "" : kiln_last_error();
  if (st == KILN_OK && checkValues) {
    test::testCudaModelReference(x, want);
    for (int i = 0; i < 8; ++i)
      EXPECT_EQ(y[i], want[i]) << "element " << i << " seed " << seed;
  }
  return st;
}

bool contains(const std::string &s, const std::string &part) {
  return s.find(part) != std::string::npos;
}

//===----------------------------------------------------------------------===//
// Device memory bookkeeping
//===----------------------------------------------------------------------===//

TEST(CudaDeviceMemory, CurrentAndPeak) {
  cuda::DeviceMemory m;
  EXPECT_TRUE(m.add(0x1000, 100, /*resident=*/true));
  EXPECT_TRUE(m.add(0x2000, 50));
  EXPECT_TRUE(m.add(0x3000, 30));
  EXPECT_EQ(m.current(), 180u);
  EXPECT_EQ(m.peak(), 180u);
  EXPECT_EQ(m.residentBytes(), 100u);
  EXPECT_EQ(m.poolBytes(), 80u);
  EXPECT_EQ(m.remove(0x2000), 50);
  EXPECT_EQ(m.current(), 130u);
  EXPECT_EQ(m.peak(), 180u);
  EXPECT_TRUE(m.add(0x4000, 20));
  EXPECT_EQ(m.peak(), 180u); // 150 now
  EXPECT_TRUE(m.add(0x5000, 60));
  EXPECT_EQ(m.peak(), 210u);
  EXPECT_EQ(m.poolPeak(), 110u);
  EXPECT_EQ(m.allocations(), 5u);
}

TEST(CudaDeviceMemory, RejectsBadPointers) {
  cuda::DeviceMemory m;
  EXPECT_FALSE(m.add(0, 10));
  EXPECT_TRUE(m.add(0x10, 10));
  EXPECT_FALSE(m.add(0x10, 20)); // live already
  EXPECT_EQ(m.current(), 10u);
  EXPECT_EQ(m.remove(0x20), -1); // never allocated
  EXPECT_EQ(m.remove(0x10), 10);
  EXPECT_EQ(m.remove(0x10), -1); // double free
  EXPECT_EQ(m.current(), 0u);
  EXPECT_FALSE(m.isLive(0x10));
}

TEST(CudaDeviceMemory, LivePoolBlocks) {
  cuda::DeviceMemory m;
  m.add(0x100, 8, true);
  m.add(0x200, 8);
  m.add(0x300, 8);
  m.remove(0x300);
  std::vector<uint64_t> live = m.livePoolBlocks();
  ASSERT_EQ(live.size(), 1u);
  EXPECT_EQ(live[0], 0x200u);
}

//===----------------------------------------------------------------------===//
// cuBLASLt planning
//===----------------------------------------------------------------------===//

TEST(CudaGemmPlan, RowMajorAsTransposedColumnMajor) {
  char a, b, c, bias;
  cuda::GemmArgs g{KILN_DTYPE_FLOAT16, KILN_CUDA_EPILOGUE_RELU, 3, 1, 5, 7, 11,
                   &a, &b, &bias, &c};
  cuda::GemmPlan p;
  ASSERT_EQ(cuda::planGemm(g, p), "");
  EXPECT_EQ(p.dataType, cuda::CUDA_R_16F);
  EXPECT_EQ(p.epilogue, cuda::CUBLASLT_EPILOGUE_RELU_BIAS);
  // cuBLASLt's A is our B^T: n x k, ld n; shared across the batch.
  EXPECT_EQ(p.aRows, 7u);
  EXPECT_EQ(p.aCols, 11u);
  EXPECT_EQ(p.lda, 7);
  EXPECT_EQ(p.strideA, 0);
  // Its B is our A^T: k x m, ld k.
  EXPECT_EQ(p.bRows, 11u);
  EXPECT_EQ(p.bCols, 5u);
  EXPECT_EQ(p.ldb, 11);
  EXPECT_EQ(p.strideB, 55);
  // D = C^T: n x m.
  EXPECT_EQ(p.dRows, 7u);
  EXPECT_EQ(p.dCols, 5u);
  EXPECT_EQ(p.ldd, 7);
  EXPECT_EQ(p.strideD, 35);
  EXPECT_EQ(p.batch, 3);

  g.bBatch = 3;
  g.bias = nullptr;
  g.epilogue = KILN_CUDA_EPILOGUE_GELU;
  g.dtype = KILN_DTYPE_BFLOAT16;
  ASSERT_EQ(cuda::planGemm(g, p), "");
  EXPECT_EQ(p.strideA, 77);
  EXPECT_EQ(p.epilogue, cuda::CUBLASLT_EPILOGUE_GELU);
  EXPECT_EQ(p.dataType, cuda::CUDA_R_16BF);
  g.bias = &bias;
  ASSERT_EQ(cuda::planGemm(g, p), "");
  EXPECT_EQ(p.epilogue, cuda::CUBLASLT_EPILOGUE_GELU_BIAS);
  g.epilogue = KILN_CUDA_EPILOGUE_NONE;
  g.dtype = KILN_DTYPE_FLOAT32;
  ASSERT_EQ(cuda::planGemm(g, p), "");
  EXPECT_EQ(p.epilogue, cuda::CUBLASLT_EPILOGUE_BIAS);
  EXPECT_EQ(p.dataType, cuda::CUDA_R_32F);
  g.bias = nullptr;
  ASSERT_EQ(cuda::planGemm(g, p), "");
  EXPECT_EQ(p.epilogue, cuda::CUBLASLT_EPILOGUE_DEFAULT);
}

TEST(CudaGemmPlan, Errors) {
  char a, b, c;
  cuda::GemmArgs g{KILN_DTYPE_INT8, 0, 1, 1, 2, 2, 2, &a, &b, nullptr, &c};
  cuda::GemmPlan p;
  EXPECT_TRUE(contains(cuda::planGemm(g, p), "dtype int8 is not supported"));
  g.dtype = KILN_DTYPE_FLOAT32;
  g.bBatch = 2;
  g.batch = 3;
  EXPECT_TRUE(contains(cuda::planGemm(g, p), "B's batch 2"));
  g.bBatch = 1;
  g.k = 0;
  EXPECT_TRUE(contains(cuda::planGemm(g, p), "must be positive"));
  g.k = 2;
  g.epilogue = 9;
  EXPECT_TRUE(contains(cuda::planGemm(g, p), "unknown epilogue 9"));
}

// The runtime's cuBLASLt call on FakeCublasLt.c (which computes what
// cuBLASLt would, column-major, on the host) against a row-major loop: the
// transposition trick, the bias, the epilogues, shared and batched B.
TEST(CudaGemm, RowMajorThroughCublasLt) {
  setenv("KILN_LIBCUBLASLT", test::kFakeCublasLtSo, 1);
  cuda::CublasLt *lt = nullptr;
  ASSERT_EQ(cuda::CublasLt::load(lt), "");
  ASSERT_NE(lt, nullptr);
  const int64_t batch = 2, m = 3, n = 5, k = 4;
  std::vector<float> a(batch * m * k), b(batch * k * n), bias(n);
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = float(int(i * 7 % 11) - 5) * 0.25f;
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = float(int(i * 5 % 13) - 6) * 0.5f;
  for (int64_t j = 0; j < n; ++j)
    bias[j] = float(j) - 2.0f;
  for (int64_t bBatch : {int64_t(1), batch})
    for (int32_t epi : {KILN_CUDA_EPILOGUE_NONE, KILN_CUDA_EPILOGUE_RELU,
                        KILN_CUDA_EPILOGUE_GELU})
      for (bool withBias : {false, true}) {
        SCOPED_TRACE("bBatch " + std::to_string(bBatch) + " epilogue " +
                     std::to_string(epi) + (withBias ? " bias" : ""));
        std::vector<float> c(batch * m * n, 12345.0f), want(c.size());
        for (int64_t bi = 0; bi < batch; ++bi)
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) {
              float acc = 0;
              const float *bb = b.data() + (bBatch == 1 ? 0 : bi * k * n);
              for (int64_t p = 0; p < k; ++p)
                acc += a[(bi * m + i) * k + p] * bb[p * n + j];
              if (withBias)
                acc += bias[j];
              if (epi == KILN_CUDA_EPILOGUE_RELU)
                acc = acc > 0 ? acc : 0;
              if (epi == KILN_CUDA_EPILOGUE_GELU)
                acc = 0.5f * acc *
                      (1 + std::tanh(0.7978845608f *
                                     (acc + 0.044715f * acc * acc * acc)));
              want[(bi * m + i) * n + j] = acc;
            }
        cuda::GemmArgs g{KILN_DTYPE_FLOAT32, epi, batch, bBatch, m, n, k,
                         a.data(), b.data(), withBias ? bias.data() : nullptr,
                         c.data()};
        cuda::GemmPlan plan;
        ASSERT_EQ(cuda::planGemm(g, plan), "");
        ASSERT_EQ(lt->run(g, plan, nullptr, nullptr, 0), "");
        for (size_t i = 0; i < c.size(); ++i)
          EXPECT_NEAR(c[i], want[i], 1e-5f) << "element " << i;
      }
  // The stand-in does float32 only: its refusal comes back with the call.
  std::vector<uint16_t> h(16);
  cuda::GemmArgs g{KILN_DTYPE_FLOAT16, 0, 1, 1, 2, 2, 2, h.data(), h.data(),
                   nullptr, h.data()};
  cuda::GemmPlan plan;
  ASSERT_EQ(cuda::planGemm(g, plan), "");
  EXPECT_EQ(lt->run(g, plan, nullptr, nullptr, 0),
            "cublasLtMatmul failed: CUBLAS_STATUS_NOT_SUPPORTED");
}

// kiln_rt_cuda_qgemm's cuBLASLt call (int8 x int8 -> int32, "TN") on
// FakeCublasLt.c against a plain loop; and the compiler's contract around
// it (lib/Target/CUDA/Int8Calls.cpp): the CPU kernel's sum of u(A) * W
// (runtime/abi/kiln_abi_qgemm.c: A read as u8, or an i8 A xor 0x80) is the
// signed GEMM of A' (u8: A xor 0x80; i8: A itself) plus 128 * rowsum(W).
TEST(CudaQGemm, Int8ThroughCublasLt) {
  setenv("KILN_LIBCUBLASLT", test::kFakeCublasLtSo, 1);
  cuda::CublasLt *lt = nullptr;
  ASSERT_EQ(cuda::CublasLt::load(lt), "");
  ASSERT_NE(lt, nullptr);
  const int64_t m = 5, n = 8, k = 12;
  std::vector<uint8_t> act(m * k);
  std::vector<int8_t> w(n * k);
  for (size_t i = 0; i < act.size(); ++i)
    act[i] = uint8_t(i * 37 % 256); // every range: 0, 128+, 255
  act[0] = 255;
  act[1] = 128;
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = int8_t(int(i * 53 % 256) - 128);
  w[0] = -128;
  w[1] = 127;
  std::vector<int32_t> rowsum(n, 0);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t p = 0; p < k; ++p)
      rowsum[j] += w[j * k + p];
  // The bytes as a signed activation (the i8 case) and as an unsigned one.
  for (bool unsignedA : {false, true}) {
    SCOPED_TRACE(unsignedA ? "u8 activation" : "i8 activation");
    std::vector<int8_t> a(m * k);
    for (size_t i = 0; i < a.size(); ++i)
      a[i] = int8_t(unsignedA ? act[i] ^ 0x80 : act[i]);
    std::vector<int32_t> c(m * n, 12345);
    cuda::QGemmArgs g{m, n, k, a.data(), KILN_CUDA_QGEMM_A_INT8, w.data(),
                      c.data()};
    ASSERT_EQ(cuda::checkQGemm(g), "");
    ASSERT_EQ(lt->runQGemm(g, nullptr, nullptr, 0), "");
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        int32_t signedSum = 0, cpuSum = 0;
        for (int64_t p = 0; p < k; ++p) {
          signedSum += int32_t(a[i * k + p]) * w[j * k + p];
          // kiln_abi_qgemm.c: u8 as it is, a shifted i8 xor 0x80.
          uint8_t byte = act[i * k + p];
          int32_t u = unsignedA ? byte : uint8_t(byte ^ 0x80);
          cpuSum += u * w[j * k + p];
        }
        EXPECT_EQ(c[i * n + j], signedSum) << i << "," << j;
        EXPECT_EQ(c[i * n + j] + 128 * rowsum[j], cpuSum) << i << "," << j;
      }
  }
  // IMMA's requirements, checked before cuBLASLt is called.
  std::vector<int32_t> c(64);
  cuda::QGemmArgs g{2, 6, 4, w.data(), 0, w.data(), c.data()};
  EXPECT_TRUE(contains(cuda::checkQGemm(g), "n and k multiples of 4 (n 6"));
  g.n = 4;
  g.k = 3;
  EXPECT_TRUE(contains(cuda::checkQGemm(g), "(n 4, k 3)"));
  g.k = 4;
  g.aFlags = 1;
  EXPECT_TRUE(contains(cuda::checkQGemm(g), "a_flags 1 is not supported"));
  g.aFlags = 0;
  g.a = w.data() + 1;
  EXPECT_TRUE(contains(cuda::checkQGemm(g), "not 4-byte aligned"));
  g.a = nullptr;
  EXPECT_TRUE(contains(cuda::checkQGemm(g), "a NULL operand"));
  g.a = w.data();
  g.m = 0;
  EXPECT_TRUE(contains(cuda::checkQGemm(g), "must be positive"));
}

//===----------------------------------------------------------------------===//
// Artifacts
//===----------------------------------------------------------------------===//

TEST(CudaArtifact, MetadataAndFatbinSection) {
  std::string path = cudaArtifact("meta.kiln", test::kFakeFatbin,
                                  test::kTestCudaModelSo, /*gemm=*/true);
  std::vector<char> bytes = test::readFile(path);
  ArtifactHeader h;
  std::string err;
  ASSERT_EQ(parseArtifact(reinterpret_cast<const unsigned char *>(bytes.data()),
                          bytes.size(), h, err),
            KILN_OK)
      << err;
  EXPECT_EQ(h.targetKind, "cuda");
  EXPECT_EQ(h.chip, "sm_80");
  EXPECT_EQ(h.cpu, "");
  ASSERT_TRUE(h.haveFatbin);
  EXPECT_EQ(h.fatbinOffset % KILN_ARTIFACT_ALIGNMENT, 0u);
  EXPECT_GE(h.fatbinOffset, h.codeOffset + h.codeSize);
  EXPECT_EQ(h.fatbinSize, std::strlen(test::kFakeFatbin) + 1);
  EXPECT_STREQ(bytes.data() + h.dataOffset + h.fatbinOffset,
               test::kFakeFatbin);
  EXPECT_GE(h.weightsOffset, h.fatbinOffset + h.fatbinSize);
  const float *w = reinterpret_cast<const float *>(
      bytes.data() + h.dataOffset + h.weightsOffset + h.weights[0].offset);
  EXPECT_EQ(w[0], 0.5f);
  EXPECT_EQ(w[3], -3.0f);
  ASSERT_EQ(h.kernels.size(), 3u);
  EXPECT_EQ(h.kernels[0].name, "k0_add");
  EXPECT_FALSE(h.kernels[0].library);
  EXPECT_EQ(h.kernels[2].name, "gemm_0");
  EXPECT_TRUE(h.kernels[2].library);
  EXPECT_EQ(checkHost(h, err), KILN_OK) << err;
}

TEST(CudaArtifact, LoadsWithoutADriver) {
  setenv("KILN_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
  kiln_model *m = nullptr;
  ASSERT_EQ(kiln_model_load(cudaArtifact("nodriver.kiln").c_str(), &m),
            KILN_OK)
      << kiln_last_error();
  EXPECT_EQ(kiln_model_num_inputs(m), 1u);
  EXPECT_EQ(kiln_model_num_kernels(m), 2u);
  EXPECT_TRUE(contains(kiln_model_metadata_json(m), "\"chip\": \"sm_80\""));
  // A CUDA artifact does not run on the CPU.
  kiln_session_options o;
  kiln_session_options_init(&o);
  o.device = "cpu";
  kiln_session *s = nullptr;
  EXPECT_EQ(kiln_session_create(m, &o, &s), KILN_ERROR_UNSUPPORTED_TARGET);
  EXPECT_TRUE(contains(kiln_last_error(), "compiled for target \"cuda\""))
      << kiln_last_error();
  kiln_model_free(m);
}

//===----------------------------------------------------------------------===//
// No driver, no device
//===----------------------------------------------------------------------===//

TEST(CudaNoDevice, MissingLibcuda) {
  setenv("KILN_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
  Loaded l;
  std::string error;
  EXPECT_EQ(open(cudaArtifact("missing.kiln"), l, true, nullptr, &error),
            KILN_ERROR_DEVICE);
  EXPECT_EQ(error.rfind("no CUDA device: /nonexistent/libcuda.so.1 not found",
                        0),
            0u)
      << error;
  EXPECT_EQ(l.session, nullptr);
}

TEST(CudaNoDevice, InitFails) {
  useFakeDriver();
  // Another name for the fake (a fresh load: cuInit runs again).
  std::string link = tempPath("libcuda-initfails.so");
  unlink(link.c_str());
  ASSERT_EQ(symlink(test::kFakeCudaSo, link.c_str()), 0);
  setenv("KILN_LIBCUDA", link.c_str(), 1);
  fake().initError = 100;
  Loaded l;
  std::string error;
  EXPECT_EQ(open(cudaArtifact("initfails.kiln"), l, true, nullptr, &error),
            KILN_ERROR_DEVICE);
  EXPECT_EQ(error, "no CUDA device: cuInit failed: CUDA_ERROR_NO_DEVICE: no "
                   "CUDA-capable device is detected");
  fake().initError = 0;
}

TEST(CudaNoDevice, ZeroDevicesAndBadIndex) {
  useFakeDriver();
  fake().deviceCount = 0;
  std::string error;
  {
    Loaded l;
    EXPECT_EQ(open(cudaArtifact("zero.kiln"), l, true, nullptr, &error),
              KILN_ERROR_DEVICE);
    EXPECT_EQ(error, "no CUDA device: the driver reports zero devices");
  }
  fake().deviceCount = 1;
  {
    Loaded l;
    EXPECT_EQ(open(cudaArtifact("index.kiln"), l, true, "cuda:1", &error),
              KILN_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(error, "device cuda:1 does not exist (this machine has 1 CUDA "
                     "device)");
  }
}

//===----------------------------------------------------------------------===//
// Sessions and runs on the fake driver
//===----------------------------------------------------------------------===//

TEST(CudaFakeDriver, GraphCapturedOnceThenReplayed) {
  useFakeDriver();
  int liveBefore = fake().liveAllocations;
  {
    Loaded l;
    ASSERT_EQ(open(cudaArtifact("graph.kiln"), l), KILN_OK)
        << kiln_last_error();
    EXPECT_EQ(fake().moduleLoads, 1);
    EXPECT_EQ(fake().functionsLoaded, 2); // before any capture
    for (int run = 0; run < 3; ++run)
      ASSERT_EQ(runOnce(l.session, 0.5f + float(run)), KILN_OK)
          << kiln_last_error();
    // One capture (two launches recorded), three replays.
    EXPECT_EQ(fake().captures, 1);
    EXPECT_EQ(fake().launchesCaptured, 2);
    EXPECT_EQ(fake().graphsInstantiated, 1);
    EXPECT_EQ(fake().graphLaunches, 3);
    EXPECT_EQ(fake().kernelsExecuted, 6);
    EXPECT_EQ(fake().poolAllocations, 1); // the intermediate, at capture
    kiln_session_stats st;
    ASSERT_EQ(kiln_session_get_stats(l.session, &st), KILN_OK);
    EXPECT_EQ(st.num_runs, 3u);
    // Weights 16 + input 32 + output 32 resident, the intermediate 32.
    EXPECT_EQ(st.device_peak_bytes, 112u);
    EXPECT_EQ(st.device_pool_peak_bytes, 32u);
    EXPECT_EQ(st.device_current_bytes, 80u);
  }
  // Everything the session allocated is freed with it (the graph's
  // allocation with the graph).
  EXPECT_EQ(fake().liveAllocations, liveBefore);
  EXPECT_EQ(fake().moduleUnloads, 1);
  EXPECT_EQ(fake().contextsRetained, 0);
}

TEST(CudaFakeDriver, EagerWithoutGraphs) {
  useFakeDriver();
  Loaded l;
  ASSERT_EQ(open(cudaArtifact("eager.kiln"), l, /*graphs=*/false), KILN_OK)
      << kiln_last_error();
  for (int run = 0; run < 2; ++run)
    ASSERT_EQ(runOnce(l.session, 1.5f - float(run)), KILN_OK)
        << kiln_last_error();
  EXPECT_EQ(fake().captures, 0);
  EXPECT_EQ(fake().graphLaunches, 0);
  EXPECT_EQ(fake().kernelsExecuted, 4);
  EXPECT_EQ(fake().poolAllocations, 2);
  kiln_session_stats st;
  ASSERT_EQ(kiln_session_get_stats(l.session, &st), KILN_OK);
  EXPECT_EQ(st.device_peak_bytes, 112u);
  EXPECT_EQ(st.device_current_bytes, 80u);
}

TEST(CudaFakeDriver, NoPoolsMeansCuMemAllocAndNoGraphs) {
  useFakeDriver();
  fake().poolsSupported = 0;
  Loaded l;
  ASSERT_EQ(open(cudaArtifact("nopool.kiln"), l), KILN_OK)
      << kiln_last_error();
  ASSERT_EQ(runOnce(l.session, 2.0f), KILN_OK) << kiln_last_error();
  EXPECT_EQ(fake().captures, 0);
  EXPECT_EQ(fake().poolAllocations, 0);
  EXPECT_EQ(fake().plainAllocations, 4); // w, x, y, then the intermediate
  EXPECT_EQ(fake().kernelsExecuted, 2);
}

TEST(CudaFakeDriver, ProfilingTimesKernelsWithEvents) {
  useFakeDriver();
  Loaded l;
  ASSERT_EQ(open(cudaArtifact("profile.kiln"), l), KILN_OK)
      << kiln_last_error();
  ASSERT_EQ(kiln_session_set_profiling(l.session, 1), KILN_OK);
  ASSERT_EQ(runOnce(l.session, 1.0f), KILN_OK) << kiln_last_error();
  ASSERT_EQ(runOnce(l.session, 3.0f), KILN_OK) << kiln_last_error();
  // Profiled runs are not captured: every kernel is launched and timed.
  EXPECT_EQ(fake().captures, 0);
  EXPECT_EQ(fake().kernelsExecuted, 4);
  for (size_t k = 0; k < 2; ++k) {
    kiln_kernel_stats ks;
    ASSERT_EQ(kiln_session_kernel_stats(l.session, k, &ks), KILN_OK);
    EXPECT_EQ(ks.launches, 2u) << "kernel " << k;
    // The fake clock advances 1 ms per event: begin to end is 1 ms.
    EXPECT_EQ(ks.min_ns, 1000000u) << "kernel " << k;
    EXPECT_EQ(ks.max_ns, 1000000u) << "kernel " << k;
  }
  kiln_profile_summary sum;
  ASSERT_EQ(kiln_session_profile_summary(l.session, &sum), KILN_OK);
  EXPECT_EQ(sum.runs, 2u);
  EXPECT_EQ(sum.kernel_ns, 4000000u);
  // The timeline: kernel 1 starts after kernel 0 ends.
  kiln_profile_event ev[8];
  size_t n = 0;
  ASSERT_EQ(kiln_session_profile_events(l.session, 0, 8, ev, &n), KILN_OK);
  ASSERT_EQ(n, 6u); // per run: the run, then its two kernels
  EXPECT_EQ(ev[0].kernel, -1);
  EXPECT_EQ(ev[1].kernel, 0);
  EXPECT_EQ(ev[2].kernel, 1);
  EXPECT_GE(ev[2].start_ns, ev[1].end_ns);

  // Profiling off: the next run is captured and replayed.
  ASSERT_EQ(kiln_session_set_profiling(l.session, 0), KILN_OK);
  int recorded = fake().eventsRecorded;
  ASSERT_EQ(runOnce(l.session, 2.0f), KILN_OK) << kiln_last_error();
  EXPECT_EQ(fake().captures, 1);
  EXPECT_EQ(fake().graphLaunches, 1);
  EXPECT_EQ(fake().eventsRecorded, recorded);
}

TEST(CudaFakeDriver, LaunchErrorNamesCallAndKernel) {
  for (bool graphs : {false, true}) {
    SCOPED_TRACE(graphs ? "graphs on" : "graphs off");
    useFakeDriver();
    std::strcpy(fake().failCall, "cuLaunchKernel");
    std::strcpy(fake().failKernel, "k1_relu");
    Loaded l;
    ASSERT_EQ(open(cudaArtifact("launchfail.kiln"), l, graphs), KILN_OK)
        << kiln_last_error();
    std::string error;
    EXPECT_EQ(runOnce(l.session, 1.0f, &error), KILN_ERROR_DEVICE);
    EXPECT_TRUE(contains(error, "cuLaunchKernel failed in kernel k1_relu: "
                                "CUDA_ERROR_LAUNCH_FAILED: unspecified launch "
                                "failure"))
        << error;
    // The run's intermediate is given back; the session runs again once
    // the fault is gone (eagerly: the failed capture turned graphs off).
    fake().failCall[0] = 0;
    ASSERT_EQ(runOnce(l.session, 1.0f), KILN_OK) << kiln_last_error();
    kiln_session_stats st;
    ASSERT_EQ(kiln_session_get_stats(l.session, &st), KILN_OK);
    EXPECT_EQ(st.device_current_bytes, 80u);
    EXPECT_EQ(st.num_runs, 1u);
    EXPECT_EQ(fake().graphLaunches, 0);
  }
}

TEST(CudaFakeDriver, CopyErrorNamesCall) {
  useFakeDriver();
  std::strcpy(fake().failCall, "cuMemcpyHtoDAsync");
  Loaded l;
  ASSERT_EQ(open(cudaArtifact("copyfail.kiln"), l), KILN_OK)
      << kiln_last_error();
  std::string error;
  EXPECT_EQ(runOnce(l.session, 1.0f, &error), KILN_ERROR_DEVICE);
  EXPECT_TRUE(contains(error, "cuMemcpyHtoDAsync (input) failed before the "
                              "first kernel: CUDA_ERROR_LAUNCH_FAILED"))
      << error;
  EXPECT_EQ(fake().kernelsExecuted, 0);
}

TEST(CudaFakeDriver, MissingKernelFailsAtSessionCreation) {
  useFakeDriver();
  Loaded l;
  std::string error;
  EXPECT_EQ(open(cudaArtifact("nokernel.kiln", "FAKEBIN:k0_add"), l, true,
                 nullptr, &error),
            KILN_ERROR_DEVICE);
  EXPECT_TRUE(contains(error, "kernel 'k1_relu' of the kernel table is not in "
                              "the cuda-fatbin section (chip sm_80, device "
                              "cuda:0 Fake GPU 0 (sm_80)): "
                              "cuModuleGetFunction: CUDA_ERROR_NOT_FOUND"))
      << error;
  // Nothing is left behind.
  EXPECT_EQ(fake().contextsRetained, 0);
  EXPECT_EQ(fake().moduleUnloads, fake().moduleLoads);
}

TEST(CudaFakeDriver, FatbinForAnotherChip) {
  useFakeDriver();
  Loaded l;
  std::string error;
  EXPECT_EQ(open(cudaArtifact("nobinary.kiln", "SM90BIN:k0_add,k1_relu"), l,
                 true, nullptr, &error),
            KILN_ERROR_DEVICE);
  EXPECT_TRUE(contains(error, "cuModuleLoadData failed: the cuda-fatbin "
                              "section (chip sm_80) cannot be loaded on "
                              "device cuda:0 Fake GPU 0 (sm_80): "
                              "CUDA_ERROR_NO_BINARY_FOR_GPU"))
      << error;
}

TEST(CudaFakeDriver, LibraryGemmErrorNamesKernel) {
  useFakeDriver();
  setenv("KILN_LIBCUBLASLT", test::kFakeCublasLtSo, 1);
  Loaded l;
  ASSERT_EQ(open(cudaArtifact("gemm.kiln", test::kFakeFatbin,
                              test::kTestCudaModelGemmSo, /*gemm=*/true),
                 l, /*graphs=*/false),
            KILN_OK)
      << kiln_last_error();
  // The library entry of the table is not looked up in the fatbin; the
  // profiling hooks name the kernel the GEMM belongs to, profiled or not.
  std::string error;
  EXPECT_EQ(runOnce(l.session, 1.0f, &error), KILN_ERROR_DEVICE);
  EXPECT_TRUE(contains(error, "cublasLtMatmul failed in kernel gemm_0: "
                              "CUBLAS_STATUS_NOT_SUPPORTED"))
      << error;
  // The session's cuBLASLt workspace (32 MiB) is resident from then on.
  kiln_session_stats st;
  ASSERT_EQ(kiln_session_get_stats(l.session, &st), KILN_OK);
  EXPECT_EQ(st.device_current_bytes, 80u + (32u << 20));
  ASSERT_EQ(kiln_session_set_profiling(l.session, 1), KILN_OK);
  EXPECT_EQ(runOnce(l.session, 1.0f, &error), KILN_ERROR_DEVICE);
  EXPECT_TRUE(contains(error, "cublasLtMatmul failed in kernel gemm_0: "))
      << error;
}

// kiln_rt_cuda_qgemm through the shim, the session's table entry and
// cuBLASLt (the fake, computing on the host), with numbers: the model
// overwrites y with the int32 product of x's and w's bytes as int8
// (TestCudaModel.c). Eager runs: the stand-in cuBLASLt computes when
// called, it does not record into a captured graph.
TEST(CudaFakeDriver, LibraryQGemmComputes) {
  useFakeDriver();
  setenv("KILN_LIBCUBLASLT", test::kFakeCublasLtSo, 1);
  Loaded l;
  ASSERT_EQ(open(cudaArtifact("qgemm.kiln", test::kFakeFatbin,
                              test::kTestCudaModelQGemmSo, /*gemm=*/true),
                 l, /*graphs=*/false),
            KILN_OK)
      << kiln_last_error();
  const int8_t a[8] = {-128, 127, -1, 5, 64, -64, 3, -7};
  float x[8] = {}, y[8] = {};
  std::memcpy(x, a, sizeof(a));
  const float w[4] = {0.5f, -1.0f, 2.0f, -3.0f}; // the artifact's weight
  int8_t wb[16];
  std::memcpy(wb, w, sizeof(wb));
  kiln_tensor in = {x, KILN_DTYPE_FLOAT32, 2, kDims};
  kiln_tensor out = {y, KILN_DTYPE_FLOAT32, 2, kDims};
  for (int run = 0; run < 2; ++run) {
    ASSERT_EQ(kiln_session_run(l.session, &in, 1, &out, 1), KILN_OK)
        << kiln_last_error();
    int32_t c[8];
    std::memcpy(c, y, sizeof(c));
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 4; ++j) {
        int32_t want = 0;
        for (int p = 0; p < 4; ++p)
          want += int32_t(a[i * 4 + p]) * int32_t(wb[j * 4 + p]);
        EXPECT_EQ(c[i * 4 + j], want) << i << "," << j << " run " << run;
      }
  }
  // Profiled, the call is timed as the table's kernel 2 (gemm_0) between
  // its hooks (the fake clock: 1 ms from event to event).
  ASSERT_EQ(kiln_session_set_profiling(l.session, 1), KILN_OK);
  ASSERT_EQ(kiln_session_run(l.session, &in, 1, &out, 1), KILN_OK)
      << kiln_last_error();
  kiln_kernel_stats ks;
  ASSERT_EQ(kiln_session_kernel_stats(l.session, 2, &ks), KILN_OK);
  EXPECT_EQ(ks.launches, 1u);
  EXPECT_EQ(ks.min_ns, 1000000u);
}

TEST(CudaFakeDriver, ConcurrentSessionsOfOneModel) {
  useFakeDriver();
  kiln_model *m = nullptr;
  ASSERT_EQ(kiln_model_load(cudaArtifact("two.kiln").c_str(), &m), KILN_OK);
  kiln_session *a = nullptr, *b = nullptr;
  ASSERT_EQ(kiln_session_create(m, nullptr, &a), KILN_OK) << kiln_last_error();
  ASSERT_EQ(kiln_session_create(m, nullptr, &b), KILN_OK) << kiln_last_error();
  kiln_model_free(m); // the sessions keep it
  EXPECT_EQ(runOnce(a, 1.0f), KILN_OK) << kiln_last_error();
  EXPECT_EQ(runOnce(b, -1.0f), KILN_OK) << kiln_last_error();
  EXPECT_EQ(runOnce(a, 2.0f), KILN_OK) << kiln_last_error();
  EXPECT_EQ(fake().captures, 2);
  kiln_session_free(a);
  kiln_session_free(b);
}

// The C++ wrapper with options; its errors are kiln::Error exceptions.
TEST(CudaFakeDriver, CppWrapperWithOptions) {
  useFakeDriver();
  kiln::Model model(cudaArtifact("cpp.kiln"));
  kiln_session_options o;
  kiln_session_options_init(&o);
  o.device = "cuda:0";
  o.cuda_graphs = 0;
  kiln::Session session(model, o);
  EXPECT_EQ(runOnce(session.get(), 0.75f), KILN_OK) << kiln_last_error();
  EXPECT_EQ(fake().captures, 0);
  EXPECT_STREQ(kiln_session_cuda_graphs(session.get()),
               "off: turned off by the session options");
  EXPECT_STREQ(kiln_session_device(session.get()),
               "cuda:0 Fake GPU 0 (sm_80, 81920 MiB, CUDA 13.0)");
  o.device = "cuda:7";
  EXPECT_THROW(kiln::Session(model, o), kiln::Error);
}

//===----------------------------------------------------------------------===//
// cuDNN convolutions (kiln_rt_cuda_conv2d)
//===----------------------------------------------------------------------===//

// FakeCudnn.c's state (same layout).
struct FakeCudnnState {
  char failCall[64];
  int handlesCreated, handlesDestroyed;
  int convolutions, biasAdds, activations;
  int heuristicsCalls;
  void *lastStream;
  int lastAlgo, lastMathType, lastComputeType, lastMode, lastGroups;
  int lastNanOpt;
  size_t lastWorkspaceBytes;
  int liveDescriptors;
};

FakeCudnnState &fakeDnn() {
  static FakeCudnnState *state = [] {
    void *h = dlopen(test::kFakeCudnnSo, RTLD_NOW | RTLD_LOCAL);
    EXPECT_NE(h, nullptr) << dlerror();
    return static_cast<FakeCudnnState *>(
        h ? dlsym(h, "fake_cudnn_state") : nullptr);
  }();
  return *state;
}

void useFakeCudnn() {
  setenv("KILN_LIBCUDNN", test::kFakeCudnnSo, 1);
  FakeCudnnState &s = fakeDnn();
  int created = s.handlesCreated, destroyed = s.handlesDestroyed;
  std::memset(&s, 0, sizeof(s));
  s.handlesCreated = created;
  s.handlesDestroyed = destroyed;
}

cuda::ConvArgs convArgs(int64_t n, int64_t c, int64_t h, int64_t w,
                        int64_t k, int64_t r, int64_t s, int64_t pad,
                        int64_t stride, int64_t dilation, int64_t groups) {
  cuda::ConvArgs a{};
  a.dtype = KILN_DTYPE_FLOAT32;
  a.epilogue = KILN_CUDA_EPILOGUE_NONE;
  a.n = n, a.c = c, a.h = h, a.w = w, a.k = k, a.r = r, a.s = s;
  a.padTop = a.padLeft = a.padBottom = a.padRight = pad;
  a.strideH = a.strideW = stride;
  a.dilationH = a.dilationW = dilation;
  a.groups = groups;
  a.p = (h + 2 * pad - dilation * (r - 1) - 1) / stride + 1;
  a.q = (w + 2 * pad - dilation * (s - 1) - 1) / stride + 1;
  return a;
}

// ONNX Conv as a plain loop: NCHW x, OIHW weight, bias, ReLU.
std::vector<float> referenceConv(const cuda::ConvArgs &a, const float *x,
                                 const float *w, const float *bias) {
  std::vector<float> y(size_t(a.n * a.k * a.p * a.q));
  int64_t cg = a.c / a.groups, kg = a.k / a.groups;
  for (int64_t n = 0; n < a.n; ++n)
    for (int64_t k = 0; k < a.k; ++k)
      for (int64_t p = 0; p < a.p; ++p)
        for (int64_t q = 0; q < a.q; ++q) {
          float acc = bias ? bias[k] : 0.0f;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t r = 0; r < a.r; ++r)
              for (int64_t s = 0; s < a.s; ++s) {
                int64_t ih = p * a.strideH - a.padTop + r * a.dilationH;
                int64_t iw = q * a.strideW - a.padLeft + s * a.dilationW;
                if (ih < 0 || ih >= a.h || iw < 0 || iw >= a.w)
                  continue;
                int64_t cin = (k / kg) * cg + ci;
                acc += x[((n * a.c + cin) * a.h + ih) * a.w + iw] *
                       w[((k * cg + ci) * a.r + r) * a.s + s];
              }
          if (a.epilogue == KILN_CUDA_EPILOGUE_RELU)
            acc = acc > 0 ? acc : 0;
          y[size_t(((n * a.k + k) * a.p + p) * a.q + q)] = acc;
        }
  return y;
}

TEST(CudaConvPlan, Descriptors) {
  char x, w, y;
  cuda::ConvArgs a = convArgs(2, 8, 9, 7, 6, 3, 2, 1, 2, 2, 2);
  a.dtype = KILN_DTYPE_BFLOAT16;
  a.epilogue = KILN_CUDA_EPILOGUE_RELU;
  a.x = &x, a.weight = &w, a.y = &y;
  cuda::ConvPlan p;
  ASSERT_EQ(cuda::planConv(a, p), "");
  EXPECT_EQ(p.dataType, cuda::CUDNN_DATA_BFLOAT16);
  EXPECT_EQ(p.mathType, cuda::CUDNN_TENSOR_OP_MATH);
  EXPECT_EQ(p.cPerGroup, 4);
  EXPECT_EQ(p.groups, 2);
  // (9 + 2 - 2 * 2 - 1) / 2 + 1 = 4, (7 + 2 - 2 * 1 - 1) / 2 + 1 = 4
  EXPECT_EQ(p.p, 4);
  EXPECT_EQ(p.q, 4);
  EXPECT_EQ(p.padH, 1);
  EXPECT_EQ(p.dilationW, 2);
  EXPECT_TRUE(p.relu);
  EXPECT_FALSE(p.bias);
  a.dtype = KILN_DTYPE_FLOAT32;
  ASSERT_EQ(cuda::planConv(a, p), "");
  EXPECT_EQ(p.dataType, cuda::CUDNN_DATA_FLOAT);
  EXPECT_EQ(p.mathType, cuda::CUDNN_FMA_MATH); // no TF32 for float32
  a.dtype = KILN_DTYPE_FLOAT16;
  ASSERT_EQ(cuda::planConv(a, p), "");
  EXPECT_EQ(p.dataType, cuda::CUDNN_DATA_HALF);
}

TEST(CudaConvPlan, Errors) {
  char x, w, y;
  cuda::ConvArgs base = convArgs(1, 4, 8, 8, 4, 3, 3, 1, 1, 1, 1);
  base.x = &x, base.weight = &w, base.y = &y;
  cuda::ConvPlan p;
  cuda::ConvArgs a = base;
  a.dtype = KILN_DTYPE_INT8;
  EXPECT_TRUE(contains(cuda::planConv(a, p), "dtype int8 is not supported "
                                             "by the cuDNN convolution"));
  a = base;
  a.padBottom = 0;
  EXPECT_EQ(cuda::planConv(a, p),
            "asymmetric pads (top 1, left 1, bottom 0, right 1) are not "
            "supported by cuDNN");
  a = base;
  a.groups = 3;
  EXPECT_TRUE(contains(cuda::planConv(a, p), "groups 3 must divide"));
  a = base;
  a.p = 7;
  EXPECT_TRUE(contains(cuda::planConv(a, p),
                       "the output is 7x8 but the sizes give 8x8"));
  a = base;
  a.epilogue = KILN_CUDA_EPILOGUE_GELU;
  EXPECT_TRUE(contains(cuda::planConv(a, p), "epilogue 2 is not supported"));
  a = base;
  a.c = 0;
  EXPECT_TRUE(contains(cuda::planConv(a, p), "must be positive"));
  a = base;
  a.strideW = 0;
  EXPECT_TRUE(contains(cuda::planConv(a, p), "strides and dilations"));
  a = base;
  a.y = nullptr;
  EXPECT_TRUE(contains(cuda::planConv(a, p), "a NULL operand"));
}

// The runtime's cuDNN call on FakeCudnn.c (a float32 cuDNN on the host)
// against the plain loop: pads, strides, dilations, groups, bias, ReLU.
TEST(CudaConv, NchwThroughCudnn) {
  useFakeCudnn();
  cuda::Cudnn *dnn = nullptr;
  ASSERT_EQ(cuda::Cudnn::load(dnn), "");
  ASSERT_NE(dnn, nullptr);
  static char stream;
  void *handle = nullptr;
  ASSERT_EQ(dnn->createHandle(&stream, handle), "");
  EXPECT_EQ(fakeDnn().lastStream, &stream);
  struct Case {
    int64_t n, c, h, w, k, r, s, pad, stride, dilation, groups;
  };
  for (Case t : {Case{1, 1, 5, 5, 1, 3, 3, 0, 1, 1, 1},
                 Case{2, 3, 6, 5, 4, 3, 3, 1, 1, 1, 1},
                 Case{2, 4, 7, 7, 6, 3, 2, 1, 2, 1, 2},
                 Case{1, 2, 9, 8, 3, 3, 3, 2, 1, 2, 1},
                 Case{1, 4, 4, 4, 4, 3, 3, 1, 1, 1, 4}}) // depthwise
    for (int32_t epi : {KILN_CUDA_EPILOGUE_NONE, KILN_CUDA_EPILOGUE_RELU})
      for (bool withBias : {false, true}) {
        cuda::ConvArgs a = convArgs(t.n, t.c, t.h, t.w, t.k, t.r, t.s, t.pad,
                                    t.stride, t.dilation, t.groups);
        SCOPED_TRACE("x [" + std::to_string(t.n) + "," + std::to_string(t.c) +
                     "," + std::to_string(t.h) + "," + std::to_string(t.w) +
                     "] k " + std::to_string(t.k) + " groups " +
                     std::to_string(t.groups) + " epilogue " +
                     std::to_string(epi) + (withBias ? " bias" : ""));
        std::vector<float> x(size_t(a.n * a.c * a.h * a.w));
        std::vector<float> w(size_t(a.k * (a.c / a.groups) * a.r * a.s));
        std::vector<float> bias(size_t(a.k));
        for (size_t i = 0; i < x.size(); ++i)
          x[i] = float(int(i * 7 % 11) - 5) * 0.25f;
        for (size_t i = 0; i < w.size(); ++i)
          w[i] = float(int(i * 5 % 13) - 6) * 0.5f;
        for (size_t i = 0; i < bias.size(); ++i)
          bias[i] = float(i) - 1.5f;
        std::vector<float> y(size_t(a.n * a.k * a.p * a.q), 12345.0f);
        a.epilogue = epi;
        a.x = x.data(), a.weight = w.data(), a.y = y.data();
        a.bias = withBias ? bias.data() : nullptr;
        cuda::ConvPlan plan;
        ASSERT_EQ(cuda::planConv(a, plan), "");
        int algo = -1;
        uint64_t wsBytes = 0;
        ASSERT_EQ(dnn->selectAlgorithm(handle, plan, 1 << 20, algo, wsBytes),
                  "");
        // The stand-in's first choice wants 64 KiB.
        EXPECT_EQ(algo, 1);
        EXPECT_EQ(wsBytes, 64u << 10);
        std::vector<char> ws(wsBytes);
        ASSERT_EQ(dnn->run(handle, a, plan, algo, ws.data(), wsBytes), "");
        EXPECT_EQ(fakeDnn().lastMode, cuda::CUDNN_CROSS_CORRELATION);
        EXPECT_EQ(fakeDnn().lastComputeType, cuda::CUDNN_DATA_FLOAT);
        EXPECT_EQ(fakeDnn().lastMathType, cuda::CUDNN_FMA_MATH);
        EXPECT_EQ(fakeDnn().lastGroups, int(t.groups));
        std::vector<float> want = referenceConv(
            a, x.data(), w.data(), a.bias ? bias.data() : nullptr);
        for (size_t i = 0; i < y.size(); ++i)
          EXPECT_NEAR(y[i], want[i], 1e-4f) << "element " << i;
      }
  EXPECT_EQ(fakeDnn().liveDescriptors, 0);
  // A workspace cap below the first choice: the heuristics' second.
  cuda::ConvArgs a = convArgs(1, 1, 4, 4, 1, 3, 3, 1, 1, 1, 1);
  char x, w, y;
  a.x = &x, a.weight = &w, a.y = &y;
  cuda::ConvPlan plan;
  ASSERT_EQ(cuda::planConv(a, plan), "");
  int algo = -1;
  uint64_t wsBytes = 1;
  ASSERT_EQ(dnn->selectAlgorithm(handle, plan, 1024, algo, wsBytes), "");
  EXPECT_EQ(algo, 0);
  EXPECT_EQ(wsBytes, 0u);
  // A failing call comes back with its status.
  std::strcpy(fakeDnn().failCall, "cudnnAddTensor");
  std::vector<float> fx(16), fw(9), fb(1), fy(16);
  a.x = fx.data(), a.weight = fw.data(), a.bias = fb.data(), a.y = fy.data();
  ASSERT_EQ(cuda::planConv(a, plan), "");
  EXPECT_EQ(dnn->run(handle, a, plan, 0, nullptr, 0),
            "cudnnAddTensor failed: CUDNN_STATUS_EXECUTION_FAILED");
  fakeDnn().failCall[0] = 0;
  dnn->destroyHandle(handle);
  EXPECT_EQ(fakeDnn().liveDescriptors, 0);
}

// TestCudaModel.c's convolution variant: y = conv(relu(x + w)) with the
// filter w (2x2), bias w[0], pads 1, strides 2, ReLU.
std::vector<float> convModelReference(const float *x) {
  float tmp[8];
  test::testCudaModelReference(x, tmp);
  cuda::ConvArgs a = convArgs(2, 1, 2, 2, 1, 2, 2, 1, 2, 1, 1);
  a.epilogue = KILN_CUDA_EPILOGUE_RELU;
  const float w[4] = {0.5f, -1.0f, 2.0f, -3.0f};
  return referenceConv(a, tmp, w, w);
}

kiln_status runConv(kiln_session *s, float seed, std::string *error,
                    bool checkValues) {
  float x[8], y[8];
  for (int i = 0; i < 8; ++i)
    x[i] = seed * float(i) - 2.0f;
  std::memset(y, 0, sizeof(y));
  kiln_tensor in = {x, KILN_DTYPE_FLOAT32, 2, kDims};
  kiln_tensor out = {y, KILN_DTYPE_FLOAT32, 2, kDims};
  kiln_status st = kiln_session_run(s, &in, 1, &out, 1);
  if (error)
    *error = st == KILN_OK ? "" : kiln_last_error();
  if (st == KILN_OK && checkValues) {
    std::vector<float> want = convModelReference(x);
    for (int i = 0; i < 8; ++i)
      EXPECT_NEAR(y[i], want[i], 1e-5f) << "element " << i << " seed " << seed;
  }
  return st;
}

// A session whose code calls kiln_rt_cuda_conv2d, on the fake driver and
// the fake cuDNN: the library entry is not looked up in the fatbin, the
// handle is made at session creation on the session's stream, the
// workspace comes from the pool and goes back, the heuristics run once.
TEST(CudaFakeDriver, LibraryConvEager) {
  useFakeDriver();
  useFakeCudnn();
  int handlesBefore = fakeDnn().handlesCreated;
  {
    Loaded l;
    ASSERT_EQ(open(cudaArtifact("conv.kiln", test::kFakeFatbin,
                                test::kTestCudaModelConvSo, false, true),
                   l, /*graphs=*/false),
              KILN_OK)
        << kiln_last_error();
    EXPECT_EQ(fakeDnn().handlesCreated, handlesBefore + 1);
    EXPECT_NE(fakeDnn().lastStream, nullptr);
    for (int run = 0; run < 3; ++run)
      ASSERT_EQ(runConv(l.session, 0.75f + float(run), nullptr, true),
                KILN_OK)
          << kiln_last_error();
    EXPECT_EQ(fakeDnn().convolutions, 3);
    EXPECT_EQ(fakeDnn().biasAdds, 3);
    EXPECT_EQ(fakeDnn().activations, 3);
    EXPECT_EQ(fakeDnn().heuristicsCalls, 1);
    EXPECT_EQ(fakeDnn().lastWorkspaceBytes, 64u << 10);
    EXPECT_EQ(fakeDnn().lastNanOpt, cuda::CUDNN_PROPAGATE_NAN);
    // Per run: the intermediate and the workspace from the pool.
    EXPECT_EQ(fake().poolAllocations, 6);
    kiln_session_stats st;
    ASSERT_EQ(kiln_session_get_stats(l.session, &st), KILN_OK);
    EXPECT_EQ(st.device_current_bytes, 80u);
    EXPECT_EQ(st.device_pool_peak_bytes, 32u + (64u << 10));
  }
  EXPECT_EQ(fakeDnn().handlesDestroyed, fakeDnn().handlesCreated);
  EXPECT_EQ(fakeDnn().liveDescriptors, 0);
}

// With graphs the convolution is enqueued once, during the capture (the
// stand-in computes on the host at the call, so replays are not compared),
// its workspace allocated and freed inside the graph.
TEST(CudaFakeDriver, LibraryConvCaptured) {
  useFakeDriver();
  useFakeCudnn();
  Loaded l;
  ASSERT_EQ(open(cudaArtifact("convg.kiln", test::kFakeFatbin,
                              test::kTestCudaModelConvSo, false, true),
                 l),
            KILN_OK)
      << kiln_last_error();
  for (int run = 0; run < 3; ++run)
    ASSERT_EQ(runConv(l.session, 1.0f, nullptr, false), KILN_OK)
        << kiln_last_error();
  EXPECT_EQ(fake().captures, 1);
  EXPECT_EQ(fake().graphLaunches, 3);
  EXPECT_EQ(fakeDnn().convolutions, 1);
  EXPECT_EQ(fake().poolAllocations, 2); // intermediate + workspace
  EXPECT_TRUE(contains(kiln_session_cuda_graphs(l.session), "on (1 capture"))
      << kiln_session_cuda_graphs(l.session);
}

TEST(CudaFakeDriver, LibraryConvErrorNamesCallAndKernel) {
  useFakeDriver();
  useFakeCudnn();
  Loaded l;
  ASSERT_EQ(open(cudaArtifact("conve.kiln", test::kFakeFatbin,
                              test::kTestCudaModelConvSo, false, true),
                 l, /*graphs=*/false),
            KILN_OK)
      << kiln_last_error();
  std::strcpy(fakeDnn().failCall, "cudnnConvolutionForward");
  std::string error;
  EXPECT_EQ(runConv(l.session, 1.0f, &error, false), KILN_ERROR_DEVICE);
  EXPECT_TRUE(contains(error, "cudnnConvolutionForward failed in kernel "
                              "k2_cudnn_conv_relu: "
                              "CUDNN_STATUS_EXECUTION_FAILED"))
      << error;
  // The run's leftovers (the workspace) went back: the session goes on.
  fakeDnn().failCall[0] = 0;
  EXPECT_EQ(runConv(l.session, 1.0f, &error, true), KILN_OK) << error;
  kiln_session_stats st;
  ASSERT_EQ(kiln_session_get_stats(l.session, &st), KILN_OK);
  EXPECT_EQ(st.device_current_bytes, 80u);
}

// Without cuDNN the run fails naming the kernel and what to do. In a fresh
// process (the library is loaded once per process).
TEST(CudaFakeDriver, LibraryConvWithoutCudnn) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        useFakeDriver();
        setenv("KILN_LIBCUDNN", "/nonexistent/libcudnn.so.9", 1);
        Loaded l;
        if (open(cudaArtifact("conv0.kiln", test::kFakeFatbin,
                              test::kTestCudaModelConvSo, false, true),
                 l, /*graphs=*/false) != KILN_OK)
          _exit(2);
        std::string error;
        kiln_status st = runConv(l.session, 1.0f, &error, false);
        fprintf(stderr, "%s\n", error.c_str());
        _exit(st == KILN_ERROR_DEVICE ? 0 : 1);
      },
      ::testing::ExitedWithCode(0),
      "kiln_rt_cuda_conv2d failed in kernel k2_cudnn_conv_relu: cuDNN not "
      "found \\(tried /nonexistent/libcudnn.so.9\\): the model uses library "
      "convolutions \\(--kernels=library\\); install cuDNN 9 or compile with "
      "--kernels=codegen");
}

} // namespace
